"""Pick a sparse-attention pattern, its parameters and T; see the mask, its cost and how far a token
hears after 1, 2, 3 … layers.

Python builds every mask of the grid (patterns × T × parameter × extra tokens) with
:mod:`course_utils.sparse`, packs each as bits (:func:`numpy.packbits`, one byte per 8 cells,
:func:`~course_utils.widgets._base.pack_uint8`), and computes its density, FLOPs and score memory
against dense attention and the receptive field of the last token after 1 … ``N_LAYERS`` layers.
JavaScript only looks frames up by key and draws them.

>>> w = SparsePatterns()
>>> w.pattern_names[w.pattern_index], w.t, w.param, w.extra
('window + global', 24, 3, 1)
>>> w.mask.shape, round(w.density, 3)
((24, 24), 0.271)
>>> w.reach.shape   # (layers, T): which tokens the last one has heard from
(8, 24)
>>> w.data_bytes() < 50_000
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

# Module-qualified (sparse.density, sparse.reach): the widget has properties of the same names.
from .. import sparse
from ._base import CourseWidget, pack_uint8, unpack_array
from ._text import Text

__all__ = ["PATTERNS", "SparsePatterns", "build_mask"]

#: Layers shown in the receptive-field view.
N_LAYERS = 8
T_VALUES = (16, 24, 32)
PARAM_VALUES = (2, 3, 4, 6, 8)
EXTRA_VALUES = (0, 1, 2, 4)

#: pattern name -> (label of the parameter slider, whether the "extra tokens" slider is used)
PATTERNS: dict[str, tuple[str, bool]] = {
    "sliding window": ("window w", False),
    "dilated window (dilation 2)": ("window w", False),
    "strided (Sparse Transformer)": ("stride", False),
    "window + global": ("window w (two-sided)", True),
    "BigBird": ("window w (two-sided)", True),
    "block-sparse window": ("block = window", False),
}
#: How many positions each control has.
INDEX_SIZES = {
    "pattern_index": len(PATTERNS),
    "t_index": len(T_VALUES),
    "param_index": len(PARAM_VALUES),
    "extra_index": len(EXTRA_VALUES),
}


def build_mask(pattern: str, t: int, param: int, extra: int) -> NDArray[np.bool_]:
    """The ``(t, t)`` mask the widget shows for these settings (seed 0 for random keys).

    >>> build_mask("sliding window", 4, 2, 0).astype(int)[3]
    array([0, 0, 1, 1])
    """
    makers: dict[str, Callable[[], NDArray[np.bool_]]] = {
        "sliding window": lambda: sparse.sliding_window_mask(t, window=param),
        "dilated window (dilation 2)": lambda: sparse.dilated_window_mask(
            t, window=param, dilation=2
        ),
        "strided (Sparse Transformer)": lambda: sparse.strided_mask(t, stride=param),
        "window + global": lambda: (
            sparse.sliding_window_mask(t, window=param, causal=False)
            | sparse.global_mask(t, range(extra))
        ),
        "BigBird": lambda: sparse.bigbird_mask(
            t, window=param, n_global=extra, n_random=extra, seed=0
        ),
        "block-sparse window": lambda: sparse.block_sparse_mask(
            sparse.block_layout(sparse.sliding_window_mask(t, window=param), param), param, t=t
        ),
    }
    if pattern not in makers:
        raise ValueError(f"pattern must be one of {list(makers)}; got {pattern!r}")
    return makers[pattern]()


def _bits(text: str) -> NDArray[np.uint8]:
    return unpack_array({"shape": [-1], "uint8": text}).astype(np.uint8)


def _key(p: int, t: int, a: int, e: int) -> str:
    return f"{p}-{t}-{a}-{e}"


class SparsePatterns(CourseWidget):
    """Sparse attention patterns as masks, with their cost and receptive field.

    Parameters
    ----------
    pattern : str
        The pattern shown first (a key of ``PATTERNS``).
    t, param, extra : int
        The sequence length, the pattern's parameter (window, stride or block) and the number of
        extra tokens (global tokens; BigBird: global and random) shown first; each must be on
        the grid (``T_VALUES``, ``PARAM_VALUES``, ``EXTRA_VALUES``).
    """

    _widget_file = "sparse_patterns"
    _default_description = (
        "Left: a sparse attention mask, rows are queries and columns keys, a filled cell "
        "means the query may attend to that key. Right: after 1 to 8 layers, which tokens "
        "the last token has received information from. Choose a pattern, the sequence "
        "length T, the pattern's parameter and the number of extra tokens."
    )

    pattern_names = traitlets.List(Text()).tag(sync=True)
    param_labels = traitlets.List(Text()).tag(sync=True)
    uses_extra = traitlets.List(traitlets.Bool()).tag(sync=True)
    t_values = traitlets.List(traitlets.Int()).tag(sync=True)
    param_values = traitlets.List(traitlets.Int()).tag(sync=True)
    extra_values = traitlets.List(traitlets.Int()).tag(sync=True)
    n_layers = traitlets.Int(N_LAYERS).tag(sync=True)
    #: "p-t-a-e" -> {"m": base64 of the mask's bits (T*T, row-major, numpy.packbits),
    #: "r": base64 of the reach bits (N_LAYERS*T), "pairs": int, "layers": int}
    #: (grid indices; e is 0 for patterns without extra tokens)
    frames = traitlets.Dict().tag(sync=True)
    pattern_index = traitlets.Int(0).tag(sync=True)
    t_index = traitlets.Int(0).tag(sync=True)
    param_index = traitlets.Int(0).tag(sync=True)
    extra_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        pattern: str = "window + global",
        *,
        t: int = 24,
        param: int = 3,
        extra: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        names = list(PATTERNS)
        if pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {names}; got {pattern!r}")
        for name, value, grid in (
            ("t", t, T_VALUES),
            ("param", param, PARAM_VALUES),
            ("extra", extra, EXTRA_VALUES),
        ):
            if isinstance(value, bool) or value not in grid:
                raise ValueError(f"{name} must be one of {list(grid)}; got {value!r}")
        self._pattern_keys = list(names)  # PATTERNS keys; pattern_names is what the reader sees
        self.pattern_names = names
        self.param_labels = [PATTERNS[n][0] for n in names]
        self.uses_extra = [PATTERNS[n][1] for n in names]
        self.t_values, self.param_values = list(T_VALUES), list(PARAM_VALUES)
        self.extra_values = list(EXTRA_VALUES)
        self._recompute()
        self.pattern_index = names.index(pattern)
        self.t_index, self.param_index = T_VALUES.index(t), PARAM_VALUES.index(param)
        self.extra_index = EXTRA_VALUES.index(extra)

    @classmethod
    def example(cls) -> Self:
        """Chapter 9's explorer: window + global, ``T = 24``, window 3, one global token.

        >>> w = SparsePatterns.example()
        >>> w.pattern_names[w.pattern_index], round(w.density, 3)
        ('window + global', 0.271)
        >>> w.pattern_index = 0                # causal, window 3: itself and the 2 tokens before
        >>> w.pattern_names[w.pattern_index], round(w.density, 3)
        ('sliding window', 0.12)
        >>> int(w.reach[0].sum()), int(w.reach[-1].sum())   # heard from after 1 and 8 layers
        (3, 17)
        """
        return cls(
            "window + global",
            t=24,
            param=3,
            extra=1,
            title="Sparse patterns: the mask, its cost, and the receptive field of the last token",
        )

    def _recompute(self) -> None:
        frames: dict[str, Any] = {}
        for p, name in enumerate(self._pattern_keys):
            extras = range(len(EXTRA_VALUES)) if PATTERNS[name][1] else [0]
            for ti, t in enumerate(T_VALUES):
                for a, param in enumerate(PARAM_VALUES):
                    for e in extras:
                        m = build_mask(name, t, param, EXTRA_VALUES[e])  # (t, t)
                        heard = sparse.reach(m, N_LAYERS)[:, t - 1, :]  # (N_LAYERS, t)
                        frames[_key(p, ti, a, e)] = {  # the shapes are known from T
                            "m": pack_uint8(np.packbits(m.ravel()), "mask bits")["uint8"],
                            "r": pack_uint8(np.packbits(heard.ravel()), "reach bits")["uint8"],
                            "pairs": int(m.sum()),
                            "layers": sparse.layers_to_reach_all(m),
                        }
        self.frames = frames
        self._check_budget("use fewer grid values")

    _v_index = traitlets.validate(*INDEX_SIZES)(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return INDEX_SIZES[name]

    _repr_format = "pattern={pattern!r}, t={t}, param={param}, extra={extra}"

    def _repr_values(self) -> dict[str, Any]:
        return {"pattern": self._pattern_keys[self.pattern_index]}  # the English name

    @property
    def t(self) -> int:
        return T_VALUES[self.t_index]

    @property
    def param(self) -> int:
        return PARAM_VALUES[self.param_index]

    @property
    def extra(self) -> int:
        return EXTRA_VALUES[self.extra_index]

    def _frame(self) -> dict[str, Any]:
        e = self.extra_index if self.uses_extra[self.pattern_index] else 0
        return self.frames[_key(self.pattern_index, self.t_index, self.param_index, e)]

    @property
    def mask(self) -> NDArray[np.bool_]:
        """The mask on show, ``(T, T)`` bool, unpacked from the synced bits."""
        bits = _bits(self._frame()["m"])
        return np.unpackbits(bits)[: self.t * self.t].reshape(self.t, self.t).astype(bool)

    @property
    def reach(self) -> NDArray[np.bool_]:
        """``(N_LAYERS, T)``: which tokens the last token has heard from after each layer."""
        bits = _bits(self._frame()["r"])
        n = N_LAYERS * self.t
        return np.unpackbits(bits)[:n].reshape(N_LAYERS, self.t).astype(bool)

    @property
    def density(self) -> float:
        """Fraction of the ``T²`` pairs the pattern keeps (also its fraction of dense FLOPs)."""
        return sparse.density(self.mask)
