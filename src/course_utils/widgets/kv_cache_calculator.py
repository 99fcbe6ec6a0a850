"""Chapter 10's KV-cache calculator: pick a real model or set the shape, drag the context.

A select picks one of chapter 10's rows of :data:`course_utils.model_configs.MODEL_CONFIGS`
(:func:`~course_utils.model_configs.configs_in_chapter`, or "custom"); sliders set
the layers, query heads, k/v heads and head width; selects set the number type and the memory
left for the cache; a slider sets the context length. Python precomputes, with
:func:`course_utils.kv_cache.kv_cache_bytes`, the cache bytes per token for every combination of
the grids (layers x k/v heads x head width x number type); JavaScript looks the bytes per token
up and shows them times the context (the total for one sequence) and how many such sequences fit
in the memory, with bars of the total at every context of the grid.

A model with sliding-window layers (Mistral 7B v0.1's rolling buffer, Gemma 3's five local layers
per global one) keeps only its window in those layers: for each preset, Python also precomputes
``held_tokens``, the tokens all layers hold at every context of the grid
(:meth:`course_utils.model_configs.ModelConfig.layers`, ``AttentionLayer.reads``), and the total is
the bytes per token of one layer times that. A custom shape keeps every token in every layer.

>>> w = KVCacheCalculator()
>>> w.model_name, w.bytes_per_token()        # Llama 3 8B, bf16: 2 * 32 * 8 * 128 * 2 bytes
('Llama 3 8B', 131072)
>>> w.total_bytes() / 2**30, w.batch_that_fits()       # at 32k tokens, 80 GiB for the cache
(4.0, 20)
>>> w.model_index = list(MODELS).index("Gemma 3 12B")    # 40 sliding (window 1024) + 8 full
>>> w.total_bytes() / 2**30, w.batch_that_fits()
(2.3125, 34)
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
import traitlets

from ..gqa import head_groups
from ..i18n import t_literal
from ..kv_cache import kv_cache_bytes, max_batch
from ..model_configs import configs_in_chapter
from ._base import CourseWidget, pack_array

__all__ = ["KVCacheCalculator"]

#: The models of the select: chapter 10's rows of the sourced table (its grids fit them).
MODELS = configs_in_chapter(10)

LAYERS = [12, 16, 24, 30, 32, 40, 48, 60, 64, 80, 96, 126]
HEADS = [8, 9, 12, 16, 24, 32, 40, 48, 64, 71, 96, 128]
KV_HEADS = [1, 2, 3, 4, 8, 16, 32, 64, 128]
D_HEADS = [32, 64, 80, 96, 128, 256]
DTYPES = [("float32", 4), ("bfloat16 / float16", 2), ("8-bit", 1)]
CONTEXTS = [2**k for k in range(10, 18)]  # 1k .. 128k tokens
MEMORIES_GIB = [8, 16, 24, 40, 80, 160]
#: How many positions each control has (the models' select has one more: "custom").
INDEX_SIZES = {
    "model_index": len(MODELS) + 1,
    "layers_index": len(LAYERS),
    "heads_index": len(HEADS),
    "kv_index": len(KV_HEADS),
    "dhead_index": len(D_HEADS),
    "dtype_index": len(DTYPES),
    "context_index": len(CONTEXTS),
    "memory_index": len(MEMORIES_GIB),
}


class KVCacheCalculator(CourseWidget):
    """KV-cache bytes of real and custom models (see the module docstring)."""

    _widget_file = "kv_cache_calculator"

    models = traitlets.List(traitlets.Dict()).tag(sync=True)  # preset rows + their grid indices
    grids = traitlets.Dict().tag(sync=True)  # layers, heads, kv_heads, d_heads, contexts, ...
    dtype_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    frames = traitlets.Dict().tag(sync=True)  # per_token: packed (L, K, D, dtype) bytes
    model_index = traitlets.Int(0).tag(sync=True)  # len(models) = custom
    layers_index = traitlets.Int(0).tag(sync=True)
    heads_index = traitlets.Int(0).tag(sync=True)
    kv_index = traitlets.Int(0).tag(sync=True)
    dhead_index = traitlets.Int(0).tag(sync=True)
    dtype_index = traitlets.Int(1).tag(sync=True)
    context_index = traitlets.Int(0).tag(sync=True)
    memory_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        model: str = "Llama 3 8B",
        *,
        context: int = 32768,
        memory_gib: int = 80,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("title", "KV-cache calculator")
        kwargs.setdefault(
            "description",
            "Pick a model or set layers, heads, key/value heads, head width and number type; "
            "drag the context length. Shows the cache bytes per token, the cache of one "
            "sequence, and how many sequences fit in the chosen memory, with bars of the cache "
            "at every context on a log scale.",
        )
        super().__init__(**kwargs)
        if model not in MODELS:
            raise ValueError(f"model must be one of {list(MODELS)}; got {model!r}")
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}; got {context!r}")
        if memory_gib not in MEMORIES_GIB:
            raise ValueError(f"memory_gib must be one of {MEMORIES_GIB}; got {memory_gib!r}")
        presets = []
        for cfg in MODELS.values():
            layers = cfg.layers()
            presets.append(
                {
                    "name": cfg.name,
                    "kind": cfg.kind,
                    "citation": cfg.cite or cfg.citation,  # shown as the book cites it
                    "context_length": cfg.context_length,
                    "note": t_literal(cfg.note),
                    "layers_index": LAYERS.index(cfg.n_layers),
                    "heads_index": HEADS.index(cfg.n_heads),
                    "kv_index": KV_HEADS.index(cfg.n_kv_heads),
                    "dhead_index": D_HEADS.index(cfg.d_head),
                    # tokens held by all layers together at each context (sliding: its window)
                    "held_tokens": [sum(x.reads(T) for x in layers) for T in CONTEXTS],
                    "n_sliding": cfg.layer_counts().get("sliding", 0),
                    "window": cfg.sliding_window or 0,
                }
            )
        with self.hold_trait_notifications():
            self.models = presets
            self.grids = {
                "layers": LAYERS,
                "heads": HEADS,
                "kv_heads": KV_HEADS,
                "d_heads": D_HEADS,
                "dtype_bytes": [b for _, b in DTYPES],
                "contexts": CONTEXTS,
                "memories_gib": MEMORIES_GIB,
            }
            self.dtype_names = [n for n, _ in DTYPES]
        self._recompute()
        self.model_index = list(MODELS).index(model)
        self._apply_preset()
        self.context_index = CONTEXTS.index(context)
        self.memory_index = MEMORIES_GIB.index(memory_gib)

    @classmethod
    def example(cls) -> Self:
        """Chapter 10's calculator: Llama 3 8B at a context of 32k tokens, 40 GiB for the cache.

        >>> w = KVCacheCalculator.example()
        >>> w.model_name, w.total_bytes() / 2**30, w.batch_that_fits()
        ('Llama 3 8B', 4.0, 10)
        >>> w.dtype_index = 2                     # 8-bit numbers: half the cache, twice the batch
        >>> w.total_bytes() / 2**30, w.batch_that_fits()
        (2.0, 20)
        """
        return cls("Llama 3 8B", context=32768, memory_gib=40)

    # -- validation of every index trait ---------------------------------------------------
    _v_index = traitlets.validate(*INDEX_SIZES)(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return INDEX_SIZES[name]

    @traitlets.observe("model_index")
    def _on_model(self, _change: Any) -> None:
        self._apply_preset()

    def _apply_preset(self) -> None:
        if self.model_index >= len(self.models):
            return  # custom: keep the knobs where they are
        row = self.models[self.model_index]
        with self.hold_trait_notifications():
            for key in ("layers_index", "heads_index", "kv_index", "dhead_index"):
                setattr(self, key, row[key])

    def _recompute(self) -> None:
        per_token = np.zeros((len(LAYERS), len(KV_HEADS), len(D_HEADS), len(DTYPES)))
        for a, n_layers in enumerate(LAYERS):
            for b, n_kv in enumerate(KV_HEADS):
                for c, d_head in enumerate(D_HEADS):
                    for d, (_, nbytes) in enumerate(DTYPES):
                        per_token[a, b, c, d] = kv_cache_bytes(
                            n_layers, n_kv, d_head, 1, bytes_per_value=nbytes
                        )
        self.frames = {"per_token": pack_array(per_token, 0)}  # (L, K, D, dtype) bytes
        self._check_budget()

    # -- exact answers at the current settings (what the drawing shows) --------------------
    @property
    def model_name(self) -> str:
        if self.model_index >= len(self.models):
            return "custom"
        return str(self.models[self.model_index]["name"])

    def _shape(self) -> tuple[int, int, int, int]:
        return (
            LAYERS[self.layers_index],
            KV_HEADS[self.kv_index],
            D_HEADS[self.dhead_index],
            DTYPES[self.dtype_index][1],
        )

    def bytes_per_token(self) -> int:
        n_layers, n_kv, d_head, nbytes = self._shape()
        return kv_cache_bytes(n_layers, n_kv, d_head, 1, bytes_per_value=nbytes)

    def total_bytes(self) -> int:
        """The cache one sequence holds at the current context (a preset's sliding layers
        stop at their window, as the drawing shows)."""
        n_layers, n_kv, d_head, nbytes = self._shape()
        T = CONTEXTS[self.context_index]
        if self.model_index >= len(self.models):
            return kv_cache_bytes(n_layers, n_kv, d_head, T, bytes_per_value=nbytes)
        held = self.models[self.model_index]["held_tokens"][self.context_index]
        # bytes of one token in one layer, times the tokens all layers hold
        return kv_cache_bytes(1, n_kv, d_head, held, bytes_per_value=nbytes)

    def batch_that_fits(self) -> int:
        memory = MEMORIES_GIB[self.memory_index] * 2**30
        if self.model_index >= len(self.models):
            n_layers, n_kv, d_head, nbytes = self._shape()
            T = CONTEXTS[self.context_index]
            return max_batch(memory, n_layers, n_kv, d_head, T, bytes_per_value=nbytes)
        return memory // self.total_bytes()

    def groups(self) -> list[list[int]]:
        """Query heads sharing each k/v head (ValueError if k/v heads do not divide heads)."""
        return head_groups(HEADS[self.heads_index], KV_HEADS[self.kv_index])

    _repr_format = (
        "model={model_name!r}, layers={layers}, heads={heads}, kv_heads={kv_heads}, "
        "d_head={d_head}, bytes_per_value={bytes_per_value}, context={context}, memory={memory} GiB"
    )

    def _repr_values(self) -> dict[str, Any]:
        n_layers, n_kv, d_head, nbytes = self._shape()
        return {
            "layers": n_layers,
            "heads": HEADS[self.heads_index],
            "kv_heads": n_kv,
            "d_head": d_head,
            "bytes_per_value": nbytes,
            "context": CONTEXTS[self.context_index],
            "memory": MEMORIES_GIB[self.memory_index],
        }
