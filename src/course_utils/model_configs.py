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
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ._validation import check_int
from .kv_cache import kv_cache_bytes, max_batch

__all__ = ["CONFIGS_PATH", "MODEL_CONFIGS", "ModelConfig", "kv_cache_table", "load_model_configs"]


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


#: The sourced table, by model name (in the chapter's order).
MODEL_CONFIGS: dict[str, ModelConfig] = load_model_configs()


def kv_cache_table(
    seq_lens: tuple[int, ...] = (4096, 32768, 131072),
    *,
    bytes_per_value: int = 2,
    memory_bytes: int = 80 * 2**30,
    batch_seq_len: int = 32768,
) -> list[dict[str, Any]]:
    """One row per model of :data:`MODEL_CONFIGS`: its shape, cache bytes per token, the cache of
    one sequence at each of ``seq_lens`` (GiB) and the largest batch of ``batch_seq_len``-token
    sequences whose cache fits in ``memory_bytes``.

    The cache at a length beyond a model's trained context is what the formula gives, not a
    claim that the model works there.

    >>> rows = kv_cache_table()
    >>> rows[0]["name"], rows[0]["gib"][4096], rows[0]["max_batch"]
    ('Llama 2 7B', 2.0, 5)
    """
    rows = []
    for cfg in MODEL_CONFIGS.values():
        rows.append(
            cfg.as_dict()
            | {
                "bytes_per_token": cfg.bytes_per_token(bytes_per_value),
                "gib": {
                    T: cfg.cache_bytes(T, bytes_per_value=bytes_per_value) / 2**30 for T in seq_lens
                },
                "max_batch": cfg.max_batch(
                    memory_bytes, batch_seq_len, bytes_per_value=bytes_per_value
                ),
            }
        )
    return rows
