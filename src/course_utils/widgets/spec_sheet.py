"""Chapter 14's spec-sheet decoder: pick a real model, read what its attention costs.

A select picks a model of :data:`course_utils.model_configs.MODEL_CONFIGS` (every record with a
spec sheet: year, layers, parameters). The widget draws its layer strip (one cell per layer,
coloured and sized by the layer's attention kind, with a text legend), a table of the KV cache per
token, the cache held and the FLOPs of one decoded token at 1k, 128k and 1M tokens (a context
beyond the trained one is marked), the parameters (total and active), the attention's sizes and
the source line. Python computes every number with :meth:`ModelConfig.spec
<course_utils.model_configs.ModelConfig.spec>` (:mod:`course_utils.kv_cache` and
:mod:`course_utils.transformer_cost`); JavaScript only formats and draws.

>>> w = SpecSheet(model="DeepSeek-V3.2-Exp")
>>> w.model_name, w.kinds()[:3], len(w.kinds())
('DeepSeek-V3.2-Exp', ('dsa', 'dsa', 'dsa'), 61)
>>> round(w.rows()[1]["bytes_per_token"] / 1024, 1)    # KiB per token at 128k tokens, bf16
83.9
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import traitlets

from ..kv_cache import LAYER_KINDS
from ..model_configs import MODEL_CONFIGS, SPEC_SEQ_LENS, ModelConfig
from ._base import CourseWidget

__all__ = ["SpecSheet"]

#: Bytes per cached value in the table: bfloat16 / float16.
BYTES_PER_VALUE = 2


def _params_label(billions: float) -> str:
    """``671`` -> ``"671B"``, ``116.8`` -> ``"116.8B"``, ``1000`` -> ``"1T"``, ``0.135`` ->
    ``"135M"`` (a count, the same in every language)."""
    if billions >= 1000:
        return f"{billions / 1000:g}T"
    if billions < 1:
        return f"{billions * 1000:g}M"
    return f"{billions:g}B"


def _record(cfg: ModelConfig) -> dict[str, Any]:
    """What the drawing of one model needs: every number already computed."""
    rows = cfg.spec(SPEC_SEQ_LENS, bytes_per_value=BYTES_PER_VALUE)
    cites = [cfg.cite, *cfg.extra_cites]
    experts = (
        None
        if cfg.n_experts is None
        else [cfg.n_experts, cfg.n_active_experts, cfg.n_shared_experts or 0]
    )
    return {
        "name": cfg.name,
        "year": cfg.year,
        # one digit per layer: its kind's index in kind_order (a compact strip, 1 byte a layer)
        "layers": "".join(str(LAYER_KINDS.index(kind)) for kind in cfg.layer_kinds()),
        "counts": [[kind, n] for kind, n in cfg.layer_counts().items()],
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.n_kv_heads,
        "d_head": cfg.d_head,
        "d_model": cfg.d_model,
        "context_length": cfg.context_length,
        "window": cfg.sliding_window if "sliding" in cfg.layer_kinds() else None,
        "mla": None if cfg.d_latent_kv is None else [cfg.d_latent_kv, cfg.d_head_rope or 0],
        "indexer": (
            None
            if cfg.index_topk is None
            else [cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk]
        ),
        "linear": (
            None
            if cfg.linear_value_heads is None
            else [cfg.linear_value_heads, cfg.linear_key_dim, cfg.linear_value_dim]
        ),
        "sinks": cfg.sinks,
        "gated": cfg.gated_attention,
        "experts": experts,
        "params": [_params_label(cfg.total_params_b), _params_label(cfg.active_params_b)],
        # per context: KiB per token, MiB held, GFLOP per decoded token, beyond the trained one
        "rows": [
            [
                round(r["bytes_per_token"] / 2**10, 2),
                round(r["held_bytes"] / 2**20, 1),
                round(r["decode_flops"] / 1e9, 1),
                r["beyond_context"],
            ]
            for r in rows
        ],
        "cites": cites,
        "source": cfg.source,
        "guessed": list(cfg.guessed),
    }


class SpecSheet(CourseWidget):
    """A real model's attention on one card (see the module docstring)."""

    _widget_file = "spec_sheet"
    _default_title = "Spec-sheet decoder: what a model's attention costs"
    _default_description = (
        "Pick a model. A strip shows the attention kind of every layer, a table the KV cache "
        "per token, the cache held and the FLOPs of one decoded token at 1k, 128k and 1M tokens, "
        "then the parameters and the source of every number."
    )

    models = traitlets.List(traitlets.Dict()).tag(sync=True)  # one record a model, see _record
    kind_order = traitlets.List(traitlets.Unicode()).tag(sync=True)  # the digits of "layers"
    seq_lens = traitlets.List(traitlets.Int()).tag(sync=True)  # the table's contexts
    model_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self, models: Sequence[str] | None = None, *, model: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        names = self._checked_models(models)
        if model is not None and model not in names:
            raise ValueError(f"model must be one of the models shown {names}; got {model!r}")
        self._names = names  # the English names, to look a model up
        with self.hold_trait_notifications():
            self.kind_order = list(LAYER_KINDS)
            self.seq_lens = list(SPEC_SEQ_LENS)
            self.models = [_record(MODEL_CONFIGS[name]) for name in names]
        self._check_budget("show fewer models")
        self.model_index = 0 if model is None else names.index(model)

    @staticmethod
    def _checked_models(models: Sequence[str] | None) -> list[str]:
        if models is None:
            return [name for name, cfg in MODEL_CONFIGS.items() if cfg.has_spec]
        if isinstance(models, str) or not isinstance(models, Sequence):
            raise TypeError(
                f"models must be a list of model names (or None for all); got {models!r}"
            )
        names = list(models)
        if not names:
            raise ValueError("models must name at least one model; got an empty list")
        for name in names:
            cfg = MODEL_CONFIGS.get(name) if isinstance(name, str) else None
            if cfg is None:
                raise ValueError(f"models: unknown model {name!r}; known: {list(MODEL_CONFIGS)}")
            if not cfg.has_spec:
                raise ValueError(
                    f"models: {name!r} has no spec sheet (year, layer_cycle and parameters)"
                )
        if len(set(names)) != len(names):
            raise ValueError(f"models lists a model twice: {names}")
        return names

    @classmethod
    def example(cls) -> Self:
        """Every sourced model, starting on Gemma 3 27B (five local layers per global one).

        >>> w = SpecSheet.example()
        >>> w.model_name, len(w.models) >= 25
        ('Gemma 3 27B', True)
        >>> w.model_index += 1                      # the next model of the select
        >>> w.model_name
        'Qwen2.5 7B'
        """
        return cls(model="Gemma 3 27B")

    _v_index = traitlets.validate("model_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return len(self.models)

    def _recompute(self) -> None:  # every number is computed once, in __init__
        self._check_budget("show fewer models")

    # -- what the drawing shows for the chosen model --------------------------------------------
    @property
    def model_name(self) -> str:
        return self._names[self.model_index]

    def kinds(self) -> tuple[str, ...]:
        """The attention kind of every layer of the chosen model."""
        return MODEL_CONFIGS[self.model_name].layer_kinds()

    def rows(self) -> list[dict[str, Any]]:
        """The table of the chosen model (exact numbers; the drawing shows them rounded)."""
        return MODEL_CONFIGS[self.model_name].spec(SPEC_SEQ_LENS, bytes_per_value=BYTES_PER_VALUE)

    _repr_format = "model={model_name!r}, models={n_models}"

    def _repr_values(self) -> dict[str, Any]:
        return {"n_models": len(self.models)}
