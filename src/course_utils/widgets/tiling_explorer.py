"""Chapter 12's tile stepper: FlashAttention-style tiling on a small example, one tile at a time.

Python runs :func:`course_utils.flash.tiled_attention_steps` (the loop of
:func:`course_utils.flash.tiled_attention_reference`, shown in the chapter) for the example, with
and without the causal mask, and stores the running maximum ``m``, sum ``l`` and output estimate
``o / l`` of every query row after every tile, plus each row's distance from the exact output. A
second view shows the memory of naive against tiled attention as ``T`` grows
(:func:`course_utils.flash.attention_memory_bytes`). The JavaScript only looks these numbers up.

>>> from course_utils.data import bank_example
>>> ex = bank_example()
>>> w = TilingExplorer(ex.Q, ex.K, ex.V, tokens=list(ex.tokens), block_q=4, block_k=2)
>>> w.n_steps, w.tile
(8, (0, 4, 0, 2))
>>> w.causal = True
>>> w.n_steps
6
>>> w.step_index = w.n_steps - 1
>>> float(np.abs(w.output - w.exact).max()) < 1e-12  # after the last tile: the exact output
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from .._validation import check_int
from ..attention import attention_scores, scaled_dot_product_attention
from ..flash import TileStep, attention_memory_bytes, tile_schedule, tiled_attention_steps
from ..masks import causal_mask
from ._base import CourseWidget, check_drawable, check_qkv, check_tokens, pack_array

__all__ = ["MEMORY_LENGTHS", "TilingExplorer"]

#: Sequence lengths of the memory view (8 heads, d = 64, float32, the default block sizes).
MEMORY_LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
#: Most tiles one example may have (the frames of every tile must fit in 50 KB).
MAX_TILES = 36
_MODES = ("plain", "causal")


def _block(value: Any, name: str, t: int) -> int:
    """A tile size: from 1 to ``t``, the number of tokens."""
    return check_int(value, name, low=1, high=t)


def _after_current_tile(field: str, doc: str) -> property:
    """A read-only property: ``field`` of the :class:`~course_utils.flash.TileStep` after the
    widget's current tile."""
    return property(lambda self: getattr(self._current_step, field), doc=doc)


class TilingExplorer(CourseWidget):
    """Step through the tiles of tiled attention on ``T <= 12`` tokens.

    Parameters
    ----------
    q, k, v : array_like, shapes ``(T, d_k)``, ``(T, d_k)``, ``(T, d_v)``
        Self-attention on one small example (``d_v <= 8``).
    tokens : list of str
        One label per token.
    block_q, block_k : int
        Query rows and key columns per tile.
    causal : bool
        Start with the causal mask (tiles above the diagonal are skipped).
    """

    _widget_file = "tiling_explorer"

    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    block_q = traitlets.Int(4).tag(sync=True)
    block_k = traitlets.Int(2).tag(sync=True)
    # {"scores": (T, T) scaled scores, "plain"/"causal": {"tiles", "m", "l", "reached", "out",
    #  "err", "exact"}, "memory": {"T", "naive_mib", "tiled_mib"}}
    frames = traitlets.Dict().tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)
    memory_index = traitlets.Int(5).tag(sync=True)  # T = 8192

    def __init__(
        self,
        q: Any,
        k: Any,
        v: Any,
        *,
        tokens: Sequence[str],
        block_q: int = 4,
        block_k: int = 2,
        causal: bool = False,
        step_index: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        q_arr, k_arr, v_arr = check_qkv(q, k, v, same_length=True)  # (T, d_k), (T, d_k), (T, d_v)
        check_drawable("TilingExplorer", q_arr, k_arr, v_arr, max_d_v=8)
        t = q_arr.shape[0]
        labels = check_tokens(tokens, "tokens", count=t, per="one per row of q")
        self._q, self._k, self._v = q_arr, k_arr, v_arr
        self._steps: dict[str, list[TileStep]] = {}
        with self.hold_trait_notifications():
            self.tokens = labels
            self.block_q = _block(block_q, "block_q", t)
            self.block_k = _block(block_k, "block_k", t)
        self._check_tile_count()
        self._recompute()
        self.causal = bool(causal)
        self.step_index = step_index

    @classmethod
    def example(cls) -> Self:
        """Chapter 12's tiles: 小明在银行边的长椅上看书 (:func:`course_utils.data.bank_example`),
        tiles of 4 query rows by 2 key columns.

        >>> w = TilingExplorer.example()
        >>> w.n_steps, w.tile                # 8 tiles; the first: rows 0-3, columns 0-1
        (8, (0, 4, 0, 2))
        >>> w.step_index = 3                 # after the first row of tiles: rows 0-3 are exact
        >>> float(np.abs(w.output - w.exact)[:4].max()) < 1e-12
        True
        """
        from ..data import bank_example

        bank = bank_example()
        return cls(
            bank.Q,
            bank.K,
            bank.V,
            tokens=list(bank.tokens),
            block_q=4,
            block_k=2,
            title="Tiled attention on 小明在银行边的长椅上看书, one tile at a time",
        )

    # -- validation of the controls ------------------------------------------------------------
    _v_index = traitlets.validate("step_index", "memory_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return self.n_steps if name == "step_index" else len(MEMORY_LENGTHS)

    @traitlets.observe("causal")
    def _on_causal(self, _change: Any) -> None:
        self.step_index = min(self.step_index, self.n_steps - 1)

    @traitlets.observe("block_q", "block_k")
    def _on_blocks(self, _change: Any) -> None:
        if self._steps:  # after __init__: recompute every frame
            t = len(self.tokens)
            _block(self.block_q, "block_q", t)
            _block(self.block_k, "block_k", t)
            self._check_tile_count()
            self._recompute()
            self.step_index = 0

    def _check_tile_count(self) -> None:
        t = len(self.tokens)
        n = len(tile_schedule(t, t, block_q=self.block_q, block_k=self.block_k))
        if n > MAX_TILES:
            raise ValueError(
                f"block_q = {self.block_q} and block_k = {self.block_k} give {n} tiles; at most "
                f"{MAX_TILES} fit in the widget's data budget: use larger blocks"
            )

    # -- frames ----------------------------------------------------------------------------------
    def _recompute(self) -> None:
        t = self._q.shape[0]
        frames: dict[str, Any] = {"scores": pack_array(attention_scores(self._q, self._k), 2)}
        for mode in _MODES:
            causal = mode == "causal"
            steps = list(
                tiled_attention_steps(
                    self._q, self._k, self._v, block_q=self.block_q, block_k=self.block_k,
                    causal=causal,
                )
            )  # fmt: skip
            self._steps[mode] = steps
            exact, _ = scaled_dot_product_attention(
                self._q, self._k, self._v, causal_mask(t) if causal else None
            )  # (T, d_v)
            reached = np.stack([np.isfinite(s.m) for s in steps])  # (n_steps, T)
            m = np.stack([np.where(np.isfinite(s.m), s.m, 0.0) for s in steps])  # (n_steps, T)
            out = np.stack([s.output for s in steps])  # (n_steps, T, d_v)
            err = np.abs(out - exact[None]).max(axis=-1)  # (n_steps, T)
            frames[mode] = {
                "tiles": [list(s.tile) for s in steps],
                "m": pack_array(m),
                "l": pack_array(np.stack([s.l for s in steps])),
                "reached": pack_array(reached.astype(float), 0),
                "out": pack_array(out),
                "err": pack_array(err),
                "exact": pack_array(exact),
            }
        mib = [attention_memory_bytes(n) for n in MEMORY_LENGTHS]
        frames["memory"] = {
            "T": list(MEMORY_LENGTHS),
            "naive_mib": [round(b["naive"] / 2**20, 1) for b in mib],
            "tiled_mib": [round(b["tiled"] / 2**20, 1) for b in mib],
        }
        self.frames = frames
        self._check_budget()

    _repr_format = (
        "T={T}, block_q={block_q}, block_k={block_k}, causal={causal}, tile={step}/{n_steps}"
    )

    def _repr_values(self) -> dict[str, Any]:
        return {"T": len(self.tokens), "step": self.step_index + 1}

    # -- what the view shows, exactly (for tests and the notebook) --------------------------------
    @property
    def mode(self) -> str:
        return "causal" if self.causal else "plain"

    @property
    def n_steps(self) -> int:
        """Number of tiles visited (fewer with the causal mask)."""
        return len(self._steps[self.mode])

    @property
    def _current_step(self) -> TileStep:
        """The state after the current tile (what ``tile``, ``running_max`` ... read)."""
        return self._steps[self.mode][self.step_index]

    tile = _after_current_tile("tile", "The current tile ``(q_start, q_stop, k_start, k_stop)``.")
    running_max = _after_current_tile(
        "m", "``m`` of every query row after the current tile (``-inf`` where not reached yet)."
    )
    running_sum = _after_current_tile("l", "``l`` of every query row after the current tile.")
    output = _after_current_tile(
        "output", "The output estimate ``o / l`` after the current tile, ``(T, d_v)``."
    )

    @property
    def exact(self) -> NDArray:
        """The exact attention output (with the causal mask if ``causal``), ``(T, d_v)``."""
        t = self._q.shape[0]
        mask = causal_mask(t) if self.causal else None
        return scaled_dot_product_attention(self._q, self._k, self._v, mask)[0]

    @property
    def memory_mib(self) -> dict[str, float]:
        """Naive and tiled memory (MiB) at the selected length of the memory view."""
        b = attention_memory_bytes(MEMORY_LENGTHS[self.memory_index])
        return {"T": MEMORY_LENGTHS[self.memory_index], **{k: v / 2**20 for k, v in b.items()}}
