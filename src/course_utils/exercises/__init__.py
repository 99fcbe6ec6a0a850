"""Check functions a learner calls on an answer; they say what is right or exactly what is wrong.

>>> from course_utils.exercises import check_weights
>>> print(check_weights([[0.5, 0.5], [0.9, 0.47]]))
✗ weights: not yet right
  - row 1 sums to 1.37, expected 1

Every checker returns a :class:`Feedback` (``.passed``, ``.messages``, ``.hints``; truthy when
passed), never a bare ``False``. It displays as plain text and as HTML, both deterministic, so
notebooks that show feedback pass nbval.

Generic checkers (in ``_checks.py``)
------------------------------------
- :func:`check_array` ``(name, answer, expected, *, rtol, atol, mistakes=(), nan_hint=None)``:
  shape, then the first entry that differs, then the hint of any :class:`Mistake` whose value equals
  the answer.
- :func:`check_scores` ``(answer, q, k, *, scaled=True, scale=None)``
- :func:`check_weights` ``(answer, q=None, k=None, *, mask=None, scale=None)``
- :func:`check_attention_output` ``(answer, q, k, v, mask=None, *, scale=None)``
- :func:`check_softmax` ``(answer, x, axis=-1, temperature=1.0)``
- :func:`check_causal_mask` ``(answer, t_q, t_k=None, *, align="top_left")``

All accept lists, numpy arrays and torch tensors (converted with ``.detach().cpu().numpy()``).

Adding a chapter's exercises
----------------------------
Write ``course_utils/exercises/chNN.py`` (e.g. ``ch01.py``) with one function per exercise, named
after it, that builds the expected answer with the package (never a pasted copy) and delegates to a
generic
checker, adding chapter-specific :class:`Mistake` values when a typical error is known::

    from ..data import by_hand_example
    from ._checks import Mistake, check_array, check_scores
    from ._feedback import Feedback

    def exercise_1_1(scores) -> Feedback:
        \"\"\"Raw scores Q·Kᵀ of "the cat sat down".\"\"\"
        ex = by_hand_example()
        return check_scores(scores, ex.Q, ex.K, scaled=False, name="scores")

In the notebook: ``from course_utils.exercises import ch01`` then ``ch01.exercise_1_1(my_scores)``.
Import the chapter module explicitly (this package does not import chapter modules, so adding one
never slows down or breaks the others). Add its tests to ``tests/test_exercises_chNN.py``: the
worked solution passes and each typical wrong answer gets its specific message. Use :func:`merge` to
combine several checks into one :class:`Feedback`.
"""

from ._checks import (
    Mistake,
    as_answer_array,
    check_array,
    check_attention_output,
    check_causal_mask,
    check_scores,
    check_softmax,
    check_weights,
    format_index,
    format_pair,
)
from ._feedback import Feedback, merge

__all__ = [
    "Feedback",
    "Mistake",
    "as_answer_array",
    "check_array",
    "check_attention_output",
    "check_causal_mask",
    "check_scores",
    "check_softmax",
    "check_weights",
    "format_index",
    "format_pair",
    "merge",
]
