"""Chapter 11's KV-cache comparison: MHA, GQA, MQA and MLA for the same model size.

The model's shape (layers, heads, head width, GQA groups, bytes per number) is fixed; three
sliders pick MLA's latent width ``d_c``, its RoPE width ``d_h^R`` and the context length. Python
computes, with :mod:`course_utils.kv_cache`, the numbers cached per token per layer, the bytes per
token (all layers) and the total cache at every context of the grid, for every slider position;
JavaScript only looks them up and draws bars (log scale) and a table, beside short quality notes
from the papers.

>>> w = KVCacheCompare()
>>> w.values_per_token()          # DeepSeek-V2's shape: MHA, GQA (8 groups), MQA, MLA
{'MHA': 32768, 'GQA': 2048, 'MQA': 256, 'MLA': 576}
>>> w.latent_index = 0
>>> w.values_per_token()["MLA"]         # d_c = 128, d_h^R still 64
192
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets

from .._validation import check_int
from ..kv_cache import (
    DEEPSEEK_V2,
    values_per_token_gqa,
    values_per_token_mha,
    values_per_token_mla,
    values_per_token_mqa,
)
from ._base import CourseWidget, pack_array
from ._text import Text

__all__ = ["QUALITY_NOTES", "KVCacheCompare"]

KINDS = ("MHA", "GQA", "MQA", "MLA")

#: One short note per design, from the papers (full citations in chapter 11).
QUALITY_NOTES: dict[str, str] = {
    "MHA": "Baseline: one key and one value per head (Vaswani et al. 2017).",
    "GQA": "Uptrained GQA comes close to MHA's quality at nearly MQA's decoding speed "
    "(Ainslie et al. 2023).",
    "MQA": "Much faster incremental decoding with minor quality loss (Shazeer 2019); the GQA "
    "paper reports quality drops and training instability.",
    "MLA": "DeepSeek-V2 reports MLA above MHA on its benchmarks, with a far smaller cache "
    "(DeepSeek-AI 2024, Appendix D).",
}


def _grid(values: Any, name: str, *, low: int) -> list[int]:
    vals = list(values) if isinstance(values, Sequence | np.ndarray) else None
    if vals is None or not 2 <= len(vals) <= 12:
        raise ValueError(f"{name} must be a sequence of 2 to 12 ints; got {values!r}")
    for v in vals:
        check_int(v, f"every entry of {name}", low=low)
    if any(b <= a for a, b in itertools.pairwise(vals)):
        raise ValueError(f"{name} must be strictly increasing; got {vals}")
    return [int(v) for v in vals]


class KVCacheCompare(CourseWidget):
    """Sliders for MLA's ``d_c``, ``d_h^R`` and the context; bars for the four caches.

    Parameters
    ----------
    n_layers, n_heads, d_head, n_groups : the shared model shape (default DeepSeek-V2's, with
        8 GQA groups as a comparison point).
    bytes_per_value : 2 (bf16/fp16) by default.
    latents, ropes, contexts : the slider grids (``ropes`` may contain 0: no decoupled RoPE).
    """

    _widget_file = "kv_cache_compare"

    latents = traitlets.List(traitlets.Int()).tag(sync=True)
    ropes = traitlets.List(traitlets.Int()).tag(sync=True)
    contexts = traitlets.List(traitlets.Int()).tag(sync=True)
    shape = traitlets.Dict().tag(sync=True)  # the fixed model shape, for the caption
    notes = traitlets.List(Text()).tag(sync=True)  # one per KINDS
    # values, bytes (n_lat, n_rope, 4): per token per layer / all layers; gib (.., n_ctx, 4)
    frames = traitlets.Dict().tag(sync=True)
    latent_index = traitlets.Int(0).tag(sync=True)
    rope_index = traitlets.Int(0).tag(sync=True)
    context_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        *,
        n_layers: int = DEEPSEEK_V2["n_layers"],
        n_heads: int = DEEPSEEK_V2["n_heads"],
        d_head: int = DEEPSEEK_V2["d_head"],
        n_groups: int = 8,
        bytes_per_value: int = 2,
        latents: Sequence[int] = (128, 256, 384, 512, 768, 1024, 2048),
        ropes: Sequence[int] = (0, 16, 32, 64, 128),
        contexts: Sequence[int] = (1024, 4096, 16384, 32768, 131072),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if n_groups < 1 or n_heads % n_groups:
            raise ValueError(f"n_groups must divide n_heads={n_heads}; got {n_groups}")
        self._shape = {
            "n_layers": n_layers,
            "n_heads": n_heads,
            "d_head": d_head,
            "n_groups": n_groups,
            "bytes_per_value": bytes_per_value,
        }
        values_per_token_mha(n_heads, d_head)  # validates the ints with clear messages
        with self.hold_trait_notifications():
            self.latents = _grid(latents, "latents", low=1)
            self.ropes = _grid(ropes, "ropes", low=0)
            self.contexts = _grid(contexts, "contexts", low=1)
            self.shape = dict(self._shape)
            self.notes = [QUALITY_NOTES[k] for k in KINDS]
        self._recompute()
        self.latent_index = self._nearest(self.latents, DEEPSEEK_V2["d_latent_kv"])
        self.rope_index = self._nearest(self.ropes, DEEPSEEK_V2["d_head_rope"])
        self.context_index = self._nearest(self.contexts, 32768)

    @classmethod
    def example(cls) -> Self:
        """Chapter 11's comparison: DeepSeek-V2's shape, MLA with ``d_c = 512`` and
        ``d_h^R = 64``, at 32k tokens.

        >>> w = KVCacheCompare.example()
        >>> w
        KVCacheCompare(d_c=512, d_h^R=64, context=32768)
        >>> {k: round(v / 2**30, 2) for k, v in w.total_bytes().items()}     # GiB, one sequence
        {'MHA': 120.0, 'GQA': 7.5, 'MQA': 0.94, 'MLA': 2.11}
        """
        return cls()

    @staticmethod
    def _nearest(grid: list[int], value: int) -> int:
        return int(np.argmin([abs(g - value) for g in grid]))

    _v_index = traitlets.validate("latent_index", "rope_index", "context_index")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        grids = {"latent_index": self.latents, "rope_index": self.ropes}
        return len(grids.get(name, self.contexts))

    def _values(self, d_c: int, d_r: int) -> dict[str, int]:
        s = self._shape
        return {
            "MHA": values_per_token_mha(s["n_heads"], s["d_head"]),
            "GQA": values_per_token_gqa(s["n_groups"], s["d_head"]),
            "MQA": values_per_token_mqa(s["d_head"]),
            "MLA": values_per_token_mla(d_c, d_r),
        }

    def _recompute(self) -> None:
        s = self._shape
        n_l, n_r = len(self.latents), len(self.ropes)
        values = np.zeros((n_l, n_r, 4))  # (n_lat, n_rope, 4)
        for i, d_c in enumerate(self.latents):
            for j, d_r in enumerate(self.ropes):
                values[i, j] = list(self._values(d_c, d_r).values())
        per_token_bytes = values * s["n_layers"] * s["bytes_per_value"]  # (n_lat, n_rope, 4)
        ctx = np.asarray(self.contexts, dtype=np.float64)[None, None, :, None]  # (1, 1, n_c, 1)
        gib = per_token_bytes[:, :, None, :] * ctx / 2**30  # (n_lat, n_rope, n_ctx, 4)
        self.frames = {
            "values": pack_array(values, 0),
            "bytes": pack_array(per_token_bytes, 0),  # bytes per token, all layers
            "gib": pack_array(gib, 3),
        }
        self._check_budget()

    def values_per_token(self) -> dict[str, int]:
        """Numbers cached per token per layer at the current slider positions (exact)."""
        return self._values(self.latents[self.latent_index], self.ropes[self.rope_index])

    def total_bytes(self) -> dict[str, int]:
        """Bytes of the whole cache (all layers) at the current context (exact)."""
        s = self._shape
        T = self.contexts[self.context_index]
        return {
            k: v * s["n_layers"] * s["bytes_per_value"] * T
            for k, v in self.values_per_token().items()
        }

    _default_title = "KV cache per token: MHA, GQA, MQA and MLA side by side"
    _repr_format = "d_c={d_c}, d_h^R={d_r}, context={context}"

    def _repr_values(self) -> dict[str, Any]:
        return {
            "d_c": self.latents[self.latent_index],
            "d_r": self.ropes[self.rope_index],
            "context": self.contexts[self.context_index],
        }
