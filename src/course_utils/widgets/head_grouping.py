"""Chapter 10's head-grouping view: which query heads share each key/value head.

A slider sets ``n_kv_heads`` over the divisors of ``n_heads`` (from MHA down to MQA); a second
slider picks one query head to follow. Python precomputes, with
:func:`course_utils.gqa.head_groups`, the k/v head of every query head for every setting, and
optionally a measured number per setting (such as the output change of a real layer converted
by mean-pooling, :func:`course_utils.gqa.relative_output_change`); JavaScript only draws them.

>>> w = HeadGrouping(12)
>>> w.kv_options
[12, 6, 4, 3, 2, 1]
>>> w.kv_index = 2
>>> w.groups()[0]                  # 4 k/v heads: query heads 0, 1, 2 share k/v head 0
[0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets

from .._validation import check_int
from ..gqa import head_groups
from ._base import CourseWidget
from ._text import Text

__all__ = ["HeadGrouping"]


class HeadGrouping(CourseWidget):
    """Query heads (top row) joined to the k/v head they read (bottom row).

    Parameters
    ----------
    n_heads : number of query heads (2 to 32).
    measured : optional, one number per ``n_kv_heads`` option (same order as ``kv_options``,
        i.e. divisors of ``n_heads`` from largest to smallest), shown with ``measured_label``.
    """

    _widget_file = "head_grouping"

    n_heads = traitlets.Int(8).tag(sync=True)
    kv_options = traitlets.List(traitlets.Int()).tag(sync=True)  # divisors, MHA first
    kv_of = traitlets.List(traitlets.List(traitlets.Int())).tag(sync=True)  # (options, n_heads)
    measured = traitlets.List(traitlets.Float()).tag(sync=True)
    measured_label = Text("").tag(sync=True)
    kv_index = traitlets.Int(0).tag(sync=True)
    query_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        n_heads: int = 8,
        *,
        measured: Sequence[float] | None = None,
        measured_label: str = "",
        n_kv_heads: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("title", "Which query heads share each key/value head")
        kwargs.setdefault(
            "description",
            "Top row: query heads; bottom row: key/value heads; a line joins each query head to "
            "the key/value head it reads. Slide the number of key/value heads from multi-head "
            "(one each) to multi-query (one for all), and pick a query head to follow.",
        )
        super().__init__(**kwargs)
        n_heads = check_int(n_heads, "n_heads", low=2, high=32)
        options = [d for d in range(n_heads, 0, -1) if n_heads % d == 0]
        values: list[float] = []
        if measured is not None:
            arr = np.asarray(measured, dtype=np.float64)
            if arr.shape != (len(options),) or not np.all(np.isfinite(arr)):
                raise ValueError(
                    f"measured must hold one finite number per n_kv_heads option {options}, "
                    f"shape ({len(options)},); got shape {arr.shape}"
                )
            values = [round(float(v), 4) for v in arr]
        with self.hold_trait_notifications():
            self.n_heads = n_heads
            self.kv_options = options
            self.measured = values
            self.measured_label = str(measured_label)
            self._recompute()
        if n_kv_heads is not None:
            if n_kv_heads not in options:
                raise ValueError(f"n_kv_heads must be one of {options}; got {n_kv_heads!r}")
            self.kv_index = options.index(n_kv_heads)

    @classmethod
    def example(cls) -> Self:
        """Twelve query heads (all-MiniLM-L6-v2's, chapter 10), four of them per k/v head.

        >>> w = HeadGrouping.example()
        >>> w.kv_options, w.n_kv_heads
        ([12, 6, 4, 3, 2, 1], 3)
        >>> w.groups()[1]                      # k/v head 1 serves query heads 4 to 7
        [4, 5, 6, 7]
        >>> w.kv_index = len(w.kv_options) - 1  # multi-query: one k/v head for all
        >>> len(w.groups()[0])
        12
        """
        return cls(12, n_kv_heads=3)

    _v_index = traitlets.validate("kv_index", "query_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return {"kv_index": len(self.kv_options), "query_index": self.n_heads}[name]

    def _recompute(self) -> None:
        kv_of = []
        for n_kv in self.kv_options:
            row = [0] * self.n_heads
            for j, heads in enumerate(head_groups(self.n_heads, n_kv)):
                for i in heads:
                    row[i] = j
            kv_of.append(row)
        self.kv_of = kv_of
        self._check_budget()

    @property
    def n_kv_heads(self) -> int:
        return self.kv_options[self.kv_index]

    def groups(self) -> list[list[int]]:
        """Query heads of each k/v head at the current setting."""
        return head_groups(self.n_heads, self.n_kv_heads)

    _repr_format = "n_heads={n_heads}, n_kv_heads={n_kv_heads}, query_head={query_index}"
