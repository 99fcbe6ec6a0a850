"""Attention configurations of real models, each row sourced, and their KV-cache sizes (chapter 10).

Every number of the table (``model_configs.json``, beside this file) is the model's published
configuration: its paper's architecture table and the ``config.json`` of its model card (the
``citation`` key of each row is in ``references.bib``, ``cite`` is how the book shows it, as
(author, year); ``source`` says where in it).
SmolLM2-135M's row is also read from its GGUF file by
:func:`course_utils.pretrained.load_smollm2`, and a test checks the two agree.

``n_kv_heads == n_heads`` is multi-head attention (MHA), ``n_kv_heads == 1`` multi-query attention
(MQA, Shazeer 2019), anything in between grouped-query attention (GQA, Ainslie et al. 2023).
Byte counts come from :func:`course_utils.kv_cache.kv_cache_bytes`, the single home of the formula
``2 · layers · n_kv_heads · d_head · T · batch · bytes per value``.

>>> cfg = MODEL_CONFIGS["Llama 2 70B"]
>>> cfg.kind, cfg.group_size
('GQA', 8)
>>> cfg.cache_bytes(4096) / 2**30          # one sequence of 4k tokens, fp16
1.25

Chapter 14's spec sheets read more of each record (all optional, so chapter 10's six rows need
none of them): the year, the attention kind of every layer as a repeated cycle (``layer_cycle``:
``[["sliding", 5], ["full", 1]]`` is Gemma 3's five local layers per global one, cut at
``n_layers``), the sizes each kind needs (the window; MLA's latent and RoPE widths; the DSA
indexer's heads, width and top-k; a linear layer's heads and state), learned sinks, gated
attention, the experts, and the total and active parameters. ``chapters`` names the chapters a
record appears in (:func:`configs_in_chapter`); ``extra_citations`` are further keys of
``references.bib`` the record was read from (``extra_cites``: how the book shows them);
``guessed`` names the fields whose values no source gave (a spec sheet marks them).
:meth:`ModelConfig.layers` turns a record into :class:`course_utils.kv_cache.AttentionLayer`
shapes, and :meth:`ModelConfig.spec` gives the cache it holds and the FLOPs of a decoded token at
several context lengths:

>>> g = MODEL_CONFIGS["Gemma 3 27B"]
>>> g.layer_counts()
{'sliding': 52, 'full': 10}
>>> row = g.spec((131072,))[0]
>>> row["held_bytes"] / 2**30, row["held_bytes"] < g.cache_bytes(131072)
(10.40625, True)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ._validation import check_count, check_int
from .kv_cache import LAYER_KINDS, AttentionLayer, kv_cache_bytes, layers_cache_bytes, max_batch
from .transformer_cost import decode_flops_per_token

__all__ = [
    "CONFIGS_PATH",
    "MODEL_CONFIGS",
    "SPEC_SEQ_LENS",
    "ModelConfig",
    "configs_in_chapter",
    "kv_cache_table",
    "load_model_configs",
]

#: The context lengths a spec sheet shows: 1k, 128k and 1M tokens.
SPEC_SEQ_LENS = (1024, 131072, 1048576)

#: The fields of a record each layer kind needs (beyond n_heads, n_kv_heads and d_head).
_KIND_NEEDS = {
    "full": (),
    "sliding": ("sliding_window",),
    "mla": ("d_latent_kv", "d_head_rope"),
    "dsa": ("d_latent_kv", "d_head_rope", "index_n_heads", "index_head_dim", "index_topk"),
    "linear": ("linear_value_heads", "linear_key_dim", "linear_value_dim"),
    "deltanet": (
        "linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim",
        "linear_conv_kernel",
    ),
}  # fmt: skip

#: The optional sizes of a record: an int >= 1 when given (``d_head_rope`` and the counts of
#: shared experts and of a convolution's taps may be 0).
_OPTIONAL_SIZES = (
    "year", "sliding_window", "d_latent_kv", "index_n_heads", "index_head_dim", "index_topk",
    "linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim",
    "n_experts", "n_active_experts",
)  # fmt: skip
_OPTIONAL_COUNTS = ("d_head_rope", "linear_conv_kernel", "n_shared_experts")


@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of one model: what sets its KV cache."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    context_length: int  # the context the released model was trained for
    citation: str  # key in references.bib
    source: str  # where in the cited work (and the model card's config.json keys)
    note: str = ""
    cite: str = ""  # how the book shows the reference: "Touvron et al., 2023" (author, year)
    # -- chapter 14's spec sheet (all optional) ---------------------------------------------
    year: int | None = None  # of the cited release
    chapters: tuple[int, ...] = ()  # the chapters that show this record
    extra_citations: tuple[str, ...] = ()  # further references.bib keys read for it
    extra_cites: tuple[str, ...] = ()  # how the book shows each of them (author, year)
    layer_cycle: tuple[tuple[str, int], ...] = ()  # (kind, count) repeated, cut at n_layers
    sliding_window: int | None = None
    sinks: bool = False  # a learned attention-sink logit per head (gpt-oss)
    gated_attention: bool = False  # attention output times sigmoid(gate) (Qwen3-Next)
    d_latent_kv: int | None = None  # MLA's d_c (kv_lora_rank)
    d_head_rope: int | None = None  # MLA's d_h^R (qk_rope_head_dim)
    index_n_heads: int | None = None  # DSA's lightning indexer
    index_head_dim: int | None = None
    index_topk: int | None = None
    linear_key_heads: int | None = None  # linear / Gated DeltaNet layers
    linear_value_heads: int | None = None
    linear_key_dim: int | None = None
    linear_value_dim: int | None = None
    linear_conv_kernel: int | None = None
    n_experts: int | None = None  # routed experts of a mixture of experts
    n_active_experts: int | None = None  # routed experts a token goes through
    n_shared_experts: int | None = None
    total_params_b: float | None = None  # parameters, billions
    active_params_b: float | None = None  # parameters a token goes through, billions
    guessed: tuple[str, ...] = ()  # fields no source gave: shown as guesses

    def __post_init__(self) -> None:
        # Every size an int >= 1 (a string "32" or a -1 would only fail later, in a formula);
        # every text field a string.
        label = self.name if isinstance(self.name, str) and self.name else "ModelConfig"
        for field_name in ("name", "citation", "source", "note", "cite"):
            value = getattr(self, field_name)
            if not isinstance(value, str):
                raise TypeError(
                    f"{label}: {field_name} must be a str; got {type(value).__name__} {value!r}"
                )
        if not self.name:
            raise ValueError("ModelConfig: name must be a non-empty str")
        for field_name in (
            "n_layers", "d_model", "n_heads", "n_kv_heads", "d_head", "context_length"
        ):  # fmt: skip
            try:
                check_int(getattr(self, field_name), field_name, low=1)
            except (TypeError, ValueError) as err:
                raise type(err)(f"{label}: {err}") from None
        if self.n_kv_heads > self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"{self.name}: n_kv_heads = {self.n_kv_heads} must divide n_heads = {self.n_heads}"
            )
        self._check_spec_fields(label)

    def _fail(self, message: str, error: type[Exception] = ValueError) -> None:
        raise error(f"{self.name}: {message}")

    def _check_spec_fields(self, label: str) -> None:
        """The optional fields: sizes are ints, lists become tuples (a frozen record stays
        hashable), every layer kind has the sizes it needs, ``guessed`` names real fields."""
        for field_name in _OPTIONAL_SIZES + _OPTIONAL_COUNTS:
            value = getattr(self, field_name)
            if value is not None:
                try:
                    check_count(value, field_name, low=0 if field_name in _OPTIONAL_COUNTS else 1)
                except (TypeError, ValueError) as err:
                    raise type(err)(f"{label}: {err}") from None
        for field_name in ("total_params_b", "active_params_b"):
            value = getattr(self, field_name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
            if value is not None and not ok:
                self._fail(f"{field_name} must be a number > 0 (billions); got {value!r}")
        for field_name in ("sinks", "gated_attention"):
            if not isinstance(getattr(self, field_name), bool):
                self._fail(f"{field_name} must be True or False; got {getattr(self, field_name)!r}")
        for field_name in ("chapters", "extra_citations", "extra_cites", "guessed"):
            object.__setattr__(self, field_name, tuple(getattr(self, field_name)))
        if len(self.extra_cites) != len(self.extra_citations):
            self._fail(
                f"extra_cites must give one (author, year) label per key of extra_citations "
                f"{list(self.extra_citations)}; got {list(self.extra_cites)}"
            )
        cycle = []
        for step in self.layer_cycle:
            if not isinstance(step, (list, tuple)) or len(step) != 2:
                self._fail(f"layer_cycle must hold [kind, count] pairs; got {step!r}")
            kind, count = step
            if kind not in LAYER_KINDS:
                self._fail(f"layer kind must be one of {list(LAYER_KINDS)}; got {kind!r}")
            try:
                check_count(count, f"the count of {kind!r} layers")
            except (TypeError, ValueError) as err:
                raise type(err)(f"{label}: {err}") from None
            for needed in _KIND_NEEDS[kind]:
                if getattr(self, needed) is None:
                    self._fail(f"layer kind {kind!r} needs {needed}, which is missing")
            cycle.append((kind, count))
        object.__setattr__(self, "layer_cycle", tuple(cycle))
        names = {f.name for f in fields(self)}
        unknown = [g for g in self.guessed if g not in names]
        if unknown:
            self._fail(f"guessed names unknown fields {unknown}; fields are {sorted(names)}")

    @property
    def kind(self) -> str:
        """``"MHA"``, ``"GQA"`` or ``"MQA"``."""
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def group_size(self) -> int:
        """Query heads per k/v head: ``n_heads / n_kv_heads``."""
        return self.n_heads // self.n_kv_heads

    def bytes_per_token(self, bytes_per_value: int = 2) -> int:
        """Cache bytes per token, all layers: ``2 · layers · n_kv_heads · d_head · bytes``."""
        return kv_cache_bytes(
            self.n_layers, self.n_kv_heads, self.d_head, 1, bytes_per_value=bytes_per_value
        )

    def cache_bytes(self, seq_len: int, *, batch: int = 1, bytes_per_value: int = 2) -> int:
        """Bytes of the whole cache for ``batch`` sequences of ``seq_len`` tokens."""
        return kv_cache_bytes(
            self.n_layers,
            self.n_kv_heads,
            self.d_head,
            seq_len,
            batch=batch,
            bytes_per_value=bytes_per_value,
        )

    def max_batch(self, memory_bytes: int, seq_len: int, *, bytes_per_value: int = 2) -> int:
        """Largest batch of ``seq_len``-token sequences whose cache fits in ``memory_bytes``."""
        return max_batch(
            memory_bytes,
            self.n_layers,
            self.n_kv_heads,
            self.d_head,
            seq_len,
            bytes_per_value=bytes_per_value,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"kind": self.kind, "group_size": self.group_size}

    # -- chapter 14: every layer's kind, the cache it holds, a decoded token's FLOPs -------------
    @property
    def has_spec(self) -> bool:
        """True when the record has what a spec sheet shows: year, layers and parameters."""
        return None not in (self.year, self.total_params_b, self.active_params_b) and bool(
            self.layer_cycle
        )

    def layer_kinds(self) -> tuple[str, ...]:
        """The kind of every layer, first to last: ``layer_cycle`` repeated and cut at
        ``n_layers`` (no cycle: every layer ``full``)."""
        cycle = [kind for kind, count in self.layer_cycle for _ in range(count)] or ["full"]
        return tuple(cycle[i % len(cycle)] for i in range(self.n_layers))

    def layer_counts(self) -> dict[str, int]:
        """How many layers of each kind, in the order the kinds first appear."""
        counts: dict[str, int] = {}
        for kind in self.layer_kinds():
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def _layer(self, kind: str) -> AttentionLayer:
        if kind in ("linear", "deltanet"):
            return AttentionLayer(
                kind,
                n_heads=self.linear_value_heads or 0,
                n_key_heads=self.linear_key_heads or 0,
                d_key=self.linear_key_dim or 0,
                d_value=self.linear_value_dim or 0,
                conv_kernel=self.linear_conv_kernel or 0,
            )
        if kind in ("mla", "dsa"):
            return AttentionLayer(
                kind,
                n_heads=self.n_heads,
                d_latent_kv=self.d_latent_kv or 0,
                d_head_rope=self.d_head_rope or 0,
                index_n_heads=self.index_n_heads or 0,
                index_head_dim=self.index_head_dim or 0,
                index_topk=self.index_topk or 0,
            )
        window = self.sliding_window if kind == "sliding" else None
        return AttentionLayer(
            kind,
            n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads,
            d_head=self.d_head,
            window=window,
        )

    def layers(self) -> tuple[AttentionLayer, ...]:
        """Every layer's shape (:class:`course_utils.kv_cache.AttentionLayer`), first to last."""
        shapes = {kind: self._layer(kind) for kind in set(self.layer_kinds())}
        return tuple(shapes[kind] for kind in self.layer_kinds())

    def held_cache_bytes(self, seq_len: int, *, batch: int = 1, bytes_per_value: int = 2) -> int:
        """Bytes the model's cache holds after ``seq_len`` tokens, each layer by its kind
        (:func:`course_utils.kv_cache.layers_cache_bytes`). Unlike :meth:`cache_bytes` (chapter
        10: every layer a plain GQA layer), a sliding layer stops at its window, MLA keeps a
        latent, a linear layer a fixed state."""
        return layers_cache_bytes(
            self.layers(), seq_len, batch=batch, bytes_per_value=bytes_per_value
        )

    def decode_flops(self, seq_len: int) -> float:
        """FLOPs to decode the token at position ``seq_len - 1``
        (:func:`course_utils.transformer_cost.decode_flops_per_token` with the active
        parameters)."""
        if self.active_params_b is None:
            self._fail("active_params_b is missing: the decode FLOPs need the active parameters")
        return decode_flops_per_token(self.active_params_b * 1e9, self.layers(), seq_len)

    def spec(
        self, seq_lens: tuple[int, ...] = SPEC_SEQ_LENS, *, bytes_per_value: int = 2
    ) -> list[dict[str, Any]]:
        """One row per context length ``T``: the cache held (bytes), the cache per token
        (held / T, bytes), the FLOPs of the token at position ``T - 1``, and whether ``T`` is
        beyond the context the model was trained for (the numbers are then what the formulas
        give, not a claim that the model works there)."""
        rows = []
        for T in seq_lens:
            held = self.held_cache_bytes(T, bytes_per_value=bytes_per_value)
            rows.append(
                {
                    "seq_len": T,
                    "held_bytes": held,
                    "bytes_per_token": held / T,
                    "decode_flops": self.decode_flops(T),
                    "beyond_context": self.context_length < T,
                }
            )
        return rows


#: The sourced table: one record a model, in the chapter's order (each with its ``citation`` and
#: ``source``), shipped with the package.
CONFIGS_PATH = Path(__file__).with_name("model_configs.json")


def load_model_configs(path: str | Path = CONFIGS_PATH) -> dict[str, ModelConfig]:
    """The models of a table of records (a JSON list of :class:`ModelConfig` fields), by name.

    A record with a missing or unknown field is a ``TypeError`` naming it; two records of one
    name are a ``ValueError``.

    >>> list(load_model_configs())[:2]
    ['Llama 2 7B', 'Llama 2 70B']
    """
    records = json.loads(Path(path).read_text(encoding="utf-8"))
    configs: dict[str, ModelConfig] = {}
    for record in records:
        cfg = ModelConfig(**record)
        if cfg.name in configs:
            raise ValueError(f"{path}: model {cfg.name!r} is listed twice")
        configs[cfg.name] = cfg
    return configs


#: The sourced table, by model name (in the chapters' order).
MODEL_CONFIGS: dict[str, ModelConfig] = load_model_configs()


def configs_in_chapter(chapter: int) -> dict[str, ModelConfig]:
    """The records a chapter shows (``chapters`` holds its number), by name, in the table's
    order.

    >>> list(configs_in_chapter(10))        # doctest: +NORMALIZE_WHITESPACE
    ['Llama 2 7B', 'Llama 2 70B', 'Mistral 7B', 'Llama 3 8B', 'Falcon 7B', 'SmolLM2-135M',
     'Gemma 3 12B']
    """
    check_count(chapter, "chapter")
    return {name: cfg for name, cfg in MODEL_CONFIGS.items() if chapter in cfg.chapters}


def kv_cache_table(
    seq_lens: tuple[int, ...] = (4096, 32768, 131072),
    *,
    bytes_per_value: int = 2,
    memory_bytes: int = 80 * 2**30,
    batch_seq_len: int = 32768,
) -> list[dict[str, Any]]:
    """One row per model of chapter 10 (:func:`configs_in_chapter`): its shape, cache bytes per
    token while every layer still keeps every token, the cache one sequence really holds at each
    of ``seq_lens`` (GiB: :meth:`ModelConfig.held_cache_bytes`, so a sliding layer stops at its
    window) and the largest batch of ``batch_seq_len``-token sequences whose cache fits in
    ``memory_bytes``.

    The cache at a length beyond a model's trained context is what the formula gives, not a
    claim that the model works there.

    >>> rows = kv_cache_table()
    >>> rows[0]["name"], rows[0]["gib"][4096], rows[0]["max_batch"]
    ('Llama 2 7B', 2.0, 5)
    >>> mistral = rows[2]                        # v0.1: every layer a 4096-token rolling buffer
    >>> mistral["gib"][4096] == mistral["gib"][131072] == 0.5, mistral["max_batch"]
    (True, 160)
    """
    check_count(memory_bytes, "memory_bytes", low=0)
    rows = []
    for cfg in configs_in_chapter(10).values():
        held = {T: cfg.held_cache_bytes(T, bytes_per_value=bytes_per_value) for T in seq_lens}
        per_sequence = cfg.held_cache_bytes(batch_seq_len, bytes_per_value=bytes_per_value)
        rows.append(
            cfg.as_dict()
            | {
                "bytes_per_token": cfg.bytes_per_token(bytes_per_value),
                "layers": cfg.layer_counts(),
                "gib": {T: b / 2**30 for T, b in held.items()},
                "max_batch": memory_bytes // per_sequence,
            }
        )
    return rows
