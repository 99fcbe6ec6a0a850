"""What attention heads do, in one place (chapter 4).

* :mod:`course_utils.heads.patterns` measures what every head of the pretrained model attends to
  (previous token, ``[CLS]``, punctuation, ...), averaged over a corpus of sentences
  (``head_corpus.json``);
* :mod:`course_utils.heads.experiment` trains a small model, seeded, on a task that needs two
  relations at once: one head or several?

Both need torch; import the submodule you use (``from course_utils.heads.patterns import
measure_heads``), so that ``import course_utils.heads`` stays light.
"""
