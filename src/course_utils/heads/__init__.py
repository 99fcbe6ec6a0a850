"""What the heads of a pretrained model attend to (chapter 4).

* :mod:`course_utils.heads.measure` scores what every head of all-MiniLM-L6-v2 attends to
  (previous token, ``[CLS]``, punctuation, ...), averaged over a corpus of sentences
  (``head_corpus.json``).

The chapter's training experiment ("one head or several?") is
:mod:`course_utils.experiments.neighbours`, beside the course's other experiments.
Import the submodule you use (``from course_utils.heads.measure import measure_heads``), so that
``import course_utils.heads`` stays light.
"""
