"""How many numbers and bytes a KV cache (键值缓存) holds: MHA, GQA, MQA and MLA.

During generation every layer keeps, for every past token, what later queries need. Multi-head
attention (MHA) keeps a key and a value per head; grouped-query attention (GQA) keeps them per
k/v group; multi-query attention (MQA) keeps one key and one value shared by all heads;
multi-head latent attention (MLA, DeepSeek-AI 2024) keeps one latent ``c_KV`` of width ``d_c``
and one shared RoPE key of width ``d_h^R``. Per token and per layer (DeepSeek-V2, Table 1):

======  =====================
MHA     ``2 n_h d_h``
GQA     ``2 n_g d_h``
MQA     ``2 d_h``
MLA     ``d_c + d_h^R``
======  =====================

>>> values_per_token_mha(n_heads=128, d_head=128)   # DeepSeek-V2's shape, as plain MHA
32768
>>> values_per_token_mla(d_latent_kv=512, d_head_rope=64)
576
>>> kv_cache_bytes(n_layers=32, n_kv_heads=32, d_head=128, seq_len=4096)   # Llama 2 7B, fp16
2147483648
"""

from __future__ import annotations

from ._validation import check_count

__all__ = [
    "DEEPSEEK_V2",
    "kv_cache_bytes",
    "max_batch",
    "mla_cache_bytes",
    "values_per_token_gqa",
    "values_per_token_mha",
    "values_per_token_mla",
    "values_per_token_mqa",
]

#: DeepSeek-V2's attention configuration (DeepSeek-AI 2024, §3.1.1 "Model Hyper-Parameters"; the
#: same numbers are in its ``config.json``: ``num_hidden_layers``, ``num_attention_heads``,
#: ``qk_nope_head_dim``, ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``, ``v_head_dim``).
DEEPSEEK_V2: dict[str, int] = {
    "n_layers": 60,
    "d_model": 5120,
    "n_heads": 128,  # n_h
    "d_head": 128,  # d_h (also d_head_nope and d_head_v)
    "d_latent_kv": 512,  # d_c = 4 d_h
    "d_latent_q": 1536,  # d_c'
    "d_head_rope": 64,  # d_h^R = d_h / 2
}


def _cache_bytes(
    n_layers: int, per_token: int, seq_len: int, batch: int, bytes_per_value: int
) -> int:
    """``layers · per_token · T · batch · bytes``: any cache of ``per_token`` values per layer."""
    return (
        check_count(n_layers, "n_layers")
        * per_token
        * check_count(seq_len, "seq_len", low=0)
        * check_count(batch, "batch")
        * check_count(bytes_per_value, "bytes_per_value")
    )


def values_per_token_mha(n_heads: int, d_head: int) -> int:
    """Numbers cached per token per layer by multi-head attention: a key and a value per head.

    >>> values_per_token_mha(12, 64)    # BERT-base / GPT-2 small
    1536
    """
    return 2 * check_count(n_heads, "n_heads") * check_count(d_head, "d_head")


def values_per_token_gqa(n_groups: int, d_head: int) -> int:
    """Numbers cached per token per layer by GQA with ``n_groups`` k/v heads: ``2 n_g d_h``.

    >>> values_per_token_gqa(8, 128)    # Llama 3 8B: 8 k/v heads
    2048
    """
    return 2 * check_count(n_groups, "n_groups") * check_count(d_head, "d_head")


def values_per_token_mqa(d_head: int) -> int:
    """Numbers cached per token per layer by MQA: one key and one value, ``2 d_h``.

    >>> values_per_token_mqa(64)
    128
    """
    return 2 * check_count(d_head, "d_head")


def values_per_token_mla(d_latent_kv: int, d_head_rope: int) -> int:
    """Numbers cached per token per layer by MLA: the latent ``c_KV`` and the shared RoPE key.

    ``d_head_rope`` may be 0 (MLA without decoupled RoPE, as in the chapter's first step).

    >>> values_per_token_mla(512, 64)   # DeepSeek-V2
    576
    """
    return check_count(d_latent_kv, "d_latent_kv") + check_count(d_head_rope, "d_head_rope", low=0)


def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    *,
    batch: int = 1,
    bytes_per_value: int = 2,
) -> int:
    """Bytes of an MHA/GQA/MQA KV cache: ``2 · layers · n_kv_heads · d_head · T · batch · bytes``.

    ``n_kv_heads`` is ``n_heads`` for MHA, the number of groups for GQA and 1 for MQA;
    ``bytes_per_value`` is 2 for float16/bfloat16, 4 for float32, 1 for 8-bit caches.

    >>> kv_cache_bytes(30, 3, 64, 8192)             # SmolLM2-135M at 8k tokens, bf16
    188743680
    >>> kv_cache_bytes(30, 3, 64, 8192, batch=4, bytes_per_value=4)
    1509949440
    """
    per_token = values_per_token_gqa(check_count(n_kv_heads, "n_kv_heads"), d_head)
    return _cache_bytes(n_layers, per_token, seq_len, batch, bytes_per_value)


def max_batch(
    memory_bytes: int,
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    seq_len: int,
    *,
    bytes_per_value: int = 2,
) -> int:
    """The largest batch whose KV cache of ``seq_len`` tokens fits in ``memory_bytes``.

    ``memory_bytes`` is the memory left for the cache (after the weights and activations); the
    answer is ``memory_bytes // kv_cache_bytes(..., batch=1)`` and may be 0 (not even one sequence
    fits).

    >>> max_batch(80 * 2**30, 32, 32, 128, 4096)     # Llama 2 7B, fp16, 80 GiB for the cache
    40
    >>> max_batch(80 * 2**30, 32, 8, 128, 4096)      # the same shape with 8 k/v heads (GQA)
    160
    """
    memory = check_count(memory_bytes, "memory_bytes", low=0)
    per_sequence = kv_cache_bytes(
        n_layers,
        n_kv_heads,
        d_head,
        check_count(seq_len, "seq_len"),
        bytes_per_value=bytes_per_value,
    )
    return memory // per_sequence


def mla_cache_bytes(
    n_layers: int,
    d_latent_kv: int,
    d_head_rope: int,
    seq_len: int,
    *,
    batch: int = 1,
    bytes_per_value: int = 2,
) -> int:
    """Bytes of an MLA latent cache: ``layers · (d_c + d_h^R) · T · batch · bytes``.

    >>> mla_cache_bytes(60, 512, 64, 128 * 1024) / 2**30    # DeepSeek-V2 at 128k tokens, bf16
    8.4375
    """
    per_token = values_per_token_mla(d_latent_kv, d_head_rope)
    return _cache_bytes(n_layers, per_token, seq_len, batch, bytes_per_value)
