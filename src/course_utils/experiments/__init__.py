"""Small, seeded training experiments that the chapters call (each runs in about a minute).

One module per task, named after the task:

* :mod:`.neighbours`: one head or several? (chapter 4);
* :mod:`.previous_token`: does the model need positions? (chapter 5);
* :mod:`.counting` and :mod:`.reversal`: the tiny models of chapters 6 and 8.
"""
