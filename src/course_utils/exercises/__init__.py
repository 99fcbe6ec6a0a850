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
- :func:`check_number` ``(name, answer, expected, mistakes, wrong, *, atol=0.0)``: one number
  (float, numpy or torch scalar); ``mistakes`` are ``(value, hint)`` pairs;
- :func:`check_scores` ``(answer, q, k, *, scaled=True, scale=None)``
- :func:`check_weights` ``(answer, q=None, k=None, *, mask=None, scale=None)``
- :func:`check_attention_output` ``(answer, q, k, v, mask=None, *, scale=None)``
- :func:`check_softmax` ``(answer, x, axis=-1, temperature=1.0)``
- :func:`check_causal_mask` ``(answer, t_q, t_k=None, *, align="top_left")``

All accept lists, numpy arrays and torch tensors (converted with ``.detach().cpu().numpy()``,
:func:`to_numpy`).

Chapter checkers (one module per chapter)
-----------------------------------------
- ``ch01``: ``ch01.check_dot_product``, ``ch01.check_all_scores``, ``ch01.check_attend_one``,
  ``ch01.check_shapes``;
- ``ch02``: ``ch02.check_score_variance``, ``ch02.check_jacobian``,
  ``ch02.check_saturation_threshold``;
- ``ch03``: ``ch03.check_stable_softmax``, ``ch03.check_temperature_limits``,
  ``ch03.check_attention``;
- ``ch04``: ``ch04.check_split_heads``, ``ch04.check_parameter_count``,
  ``ch04.check_head_weights``, ``ch04.check_torch_mask``;
- ``appendix`` (the appendix pages): ``appendix.check_rotate``, ``appendix.check_loglog_slope``,
  ``appendix.check_intensity``.

Running a learner's function
----------------------------
Most exercises ask for a *function*. :func:`run_cases` (in ``_learner.py``) is the one loop every
chapter checker uses: it says so if the answer is still the starter ``...``, calls the function on
copies of each test case, stops it after :data:`TIME_LIMIT` seconds (a loop that never ends gets
feedback, not a hung notebook), turns a crash or a ``None`` into feedback, compares the result,
and reports the first test case that fails.

Adding a chapter's exercises
----------------------------
Write ``course_utils/exercises/chNN.py`` (e.g. ``ch01.py``) with one ``check_*`` function per
exercise. It builds the expected answer with the package (never a pasted copy), runs the learner's
function through :func:`run_cases`, and compares each result with a generic checker, adding
chapter-specific :class:`Mistake` values when a typical error is known::

    from ._checks import check_scores
    from ._feedback import Feedback
    from ._learner import run_cases

    def check_all_scores(all_scores) -> Feedback:
        \"\"\"Check ``all_scores(Q, K)``: the raw scores Q Kᵀ.\"\"\"
        cases = [("Q (2, 3) and K (5, 3)", (Q, K))]  # seeded test data, built in the module
        return run_cases(
            "all scores", all_scores, "all_scores", cases,
            lambda result, Q, K: check_scores(result, Q, K, scaled=False),
            "all {n} test cases match Q Kᵀ",
        )

In the notebook, one call style everywhere: ``from course_utils.exercises import ch01`` (in the
chapter's Exercises section), then ``ch01.check_all_scores(all_scores)`` in the exercise cell and
``ch01.check_all_scores(all_scores_solution)`` in the hidden solution cell below it. This package
does not import chapter modules, so adding one never slows down or breaks the others. Add its tests
to ``tests/test_exercises_chNN.py``: the worked solution passes, right answers in other styles pass
(torch or numpy, float32, lists, einsum), and each typical wrong answer gets its specific hint. Use
:func:`merge` to combine several checks into one :class:`Feedback`.
"""

from ._checks import (
    Mistake,
    answer_tolerance,
    as_answer_array,
    check_array,
    check_attention_output,
    check_causal_mask,
    check_number,
    check_scores,
    check_softmax,
    check_weights,
    format_index,
    format_pair,
    not_a_pair,
    to_numpy,
)
from ._feedback import Feedback, merge
from ._learner import TIME_LIMIT, run_cases

__all__ = [
    "TIME_LIMIT",
    "Feedback",
    "Mistake",
    "answer_tolerance",
    "as_answer_array",
    "check_array",
    "check_attention_output",
    "check_causal_mask",
    "check_number",
    "check_scores",
    "check_softmax",
    "check_weights",
    "format_index",
    "format_pair",
    "merge",
    "not_a_pair",
    "run_cases",
    "to_numpy",
]
