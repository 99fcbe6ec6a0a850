"""The result of checking a learner's answer: passed or not, and messages that say why.

A :class:`Feedback` is truthy when the answer passed, so tests can ``assert check_x(...)``, and
displays itself in Jupyter as a short, deterministic block (text/plain and text/html; no ids, no
timings), so that nbval can compare it on every run.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

from ..i18n import get_language, t, t_literal

__all__ = ["Feedback", "merge"]

_PASS = "✓"
_FAIL = "✗"


def _hint() -> str:
    """The word before a hint and its gap: "hint: " in English, "提示：" in Chinese (no space
    after full-width punctuation).

    >>> from course_utils.i18n import set_language
    >>> set_language("zh"); _hint() + "x"
    '提示：x'
    >>> set_language("en"); _hint() + "x"
    'hint: x'
    >>> set_language(None)
    """
    word = t("hint:")  # plain text: emoji show as empty boxes where no emoji font is installed
    return word if word.endswith(("：", "，")) else word + " "


@dataclass(frozen=True)
class Feedback:
    """Outcome of one check.

    Attributes
    ----------
    passed : bool
        Whether the answer is right.
    title : str
        What was checked, e.g. ``"weights"``.
    messages : tuple of str
        What is right (when passed) or exactly what is wrong, most important first.
    hints : tuple of str
        Likely causes of the mistake ("did you forget to divide by √d_k?"). Empty when passed.

    >>> msg, hint = "row 2 sums to 1.37, expected 1", "did you apply softmax?"
    >>> fb = Feedback(False, "weights", (msg,), (hint,))
    >>> bool(fb)
    False
    >>> print(fb)
    ✗ weights: not yet right
      - row 2 sums to 1.37, expected 1
      hint: did you apply softmax?
    """

    passed: bool
    title: str
    messages: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", bool(self.passed))
        object.__setattr__(self, "messages", tuple(str(m) for m in self.messages))
        object.__setattr__(self, "hints", tuple(str(h) for h in self.hints))
        if get_language() != "en":  # feedback is stored in the reader's language
            # Messages made with t(...) are in the reader's language already; a constant (a
            # label, a hint) is looked up as a whole (t_literal).
            object.__setattr__(self, "title", t_literal(str(self.title)))
            object.__setattr__(self, "messages", tuple(t_literal(m) for m in self.messages))
            object.__setattr__(self, "hints", tuple(t_literal(h) for h in self.hints))

    def __bool__(self) -> bool:
        return self.passed

    @property
    def headline(self) -> str:
        verdict = t("correct") if self.passed else t("not yet right")
        return f"{_PASS if self.passed else _FAIL} {self.title}{t(': ')}{verdict}"

    def __str__(self) -> str:
        lines = [self.headline]
        lines += [f"  - {m}" for m in self.messages]
        lines += [f"  {_hint()}{h}" for h in self.hints]
        return "\n".join(lines)

    def __repr__(self) -> str:
        # The text/plain output in a notebook: the same readable block as str().
        return str(self)

    def _repr_html_(self) -> str:
        colour = (
            "#1b7837" if self.passed else "#b2182b"
        )  # text also says pass/fail: not colour alone
        items = "".join(f"<li>{html.escape(m)}</li>" for m in self.messages)
        items += "".join(f"<li>{_hint()}{html.escape(h)}</li>" for h in self.hints)
        body = f"<ul>{items}</ul>" if items else ""
        return (
            f'<div class="course-feedback" role="status" '
            f'style="border-left: 4px solid {colour}; padding-left: 0.6em">'
            f"<strong>{html.escape(self.headline)}</strong>{body}</div>"
        )

    def assert_passed(self) -> None:
        """Raise ``AssertionError`` with the messages if the check failed (handy in tests)."""
        if not self.passed:
            raise AssertionError(str(self))


def merge(title: str, feedbacks: Iterable[Feedback]) -> Feedback:
    """Combine several checks into one: passed only if all passed; messages prefixed by each title.

    >>> a = Feedback(True, "scores", ("all 16 entries match",))
    >>> b = Feedback(False, "weights", ("row 0 sums to 2, expected 1",))
    >>> print(merge("exercise 1.2", [a, b]))
    ✗ exercise 1.2: not yet right
      - scores: all 16 entries match
      - weights: row 0 sums to 2, expected 1
    """
    items = list(feedbacks)
    messages = tuple(f"{fb.title}: {m}" for fb in items for m in fb.messages)
    hints = tuple(dict.fromkeys(h for fb in items for h in fb.hints))  # unique, in order
    return Feedback(all(fb.passed for fb in items), title, messages, hints)
