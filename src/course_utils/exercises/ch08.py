"""Checkers for the exercises of chapter 8, "Cross attention and the encoder–decoder".

The learner writes a *function*; the checker runs it on its own seeded cases (through the shared
runner :func:`~course_utils.exercises._learner.run_cases`) and compares with the package
(:func:`course_utils.masks.key_padding_mask`, :class:`course_utils.decoder.DecoderBlock`). A
checker never raises on a wrong answer, and names the typical mistake when it recognises one.

- :func:`check_cross_attention`: ``cross_attention(x, memory, W_Q, W_K, W_V)``, one head;
- :func:`check_padding_mask`: ``padding_mask(lengths, t_k)``, the key-padding mask;
- :func:`check_decoder_block`: ``decoder_block(x, memory, self_attn, cross_attn, ffn, norm1,
  norm2, norm3)``, the pre-LN wiring of a decoder block.

>>> def padding_mask(lengths, t_k):
...     return torch.arange(t_k)[None, :] < torch.as_tensor(lengths)[:, None]
>>> bool(check_padding_mask(padding_mask))
True
>>> def off_by_one(lengths, t_k):
...     return torch.arange(t_k)[None, :] <= torch.as_tensor(lengths)[:, None]
>>> print(check_padding_mask(off_by_one).hints[0])
off by one: position j is real when j < length (j counts from 0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..decoder import DecoderBlock
from ..masks import causal_mask, key_padding_mask
from ._checks import Mistake, as_answer_array, check_array, described_cases, to_numpy
from ._feedback import Feedback
from ._learner import run_cases

__all__ = ["check_cross_attention", "check_decoder_block", "check_padding_mask"]

_SEED = 2008


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: bool = True) -> torch.Tensor:
    """PyTorch's attention (the reference answer), unscaled for the "forgot √d_k" mistake."""
    return F.scaled_dot_product_attention(q, k, v, scale=None if scale else 1.0)  # (T_q, d_v)


# --- exercise 8.1: cross-attention, one head -----------------------------------------------------


def check_cross_attention(cross_attention: Callable[..., Any]) -> Feedback:
    """Check ``cross_attention(x, memory, W_Q, W_K, W_V)``: queries from ``x`` ``(T_q, d)``, keys
    and values from ``memory`` ``(T_k, d)``, output ``(T_q, d_v)``.

    >>> def cross_attention(x, memory, W_Q, W_K, W_V):
    ...     q, k, v = x @ W_Q, memory @ W_K, memory @ W_V
    ...     return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v
    >>> bool(check_cross_attention(cross_attention))
    True
    >>> def swapped(x, memory, W_Q, W_K, W_V):
    ...     q, k, v = memory @ W_Q, x @ W_K, x @ W_V
    ...     return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v
    >>> print(check_cross_attention(swapped).hints[0])  # doctest: +ELLIPSIS
    the queries come from x (the decoder), the keys and values from memory ...
    """
    title = "cross-attention"
    g = torch.Generator().manual_seed(_SEED)
    cases = []
    for t_q, t_k, d, d_v in [(3, 3, 6, 6), (2, 5, 4, 3), (4, 7, 8, 2)]:
        # The square case first: with T_q = T_k the typical swaps give an answer (and
        # their hint) instead of a shape error.
        x = torch.randn(t_q, d, generator=g, dtype=torch.float64)
        memory = torch.randn(t_k, d, generator=g, dtype=torch.float64)
        w = [torch.randn(d, n, generator=g, dtype=torch.float64) for n in (d, d, d_v)]
        cases.append((f"T_q = {t_q}, T_k = {t_k}, d_model = {d}, d_v = {d_v}", (x, memory, *w)))

    def compare(result: Any, x: Any, memory: Any, W_Q: Any, W_K: Any, W_V: Any) -> Feedback:
        expected = _attend(x @ W_Q, memory @ W_K, memory @ W_V)  # (T_q, d_v)
        mistakes = [
            Mistake(
                "the queries come from x (the decoder), the keys and values from memory "
                "(the encoder's output); you have them the other way round",
                _attend(memory @ W_Q, x @ W_K, x @ W_V),
            ),
            Mistake(
                "that is self-attention on x: the keys and values must come from memory",
                _attend(x @ W_Q, x @ W_K, x @ W_V),
            ),
            Mistake(
                "the values come from memory too (the same rows the keys were made from)",
                _attend(x @ W_Q, memory @ W_K, x @ W_V) if x.shape[0] == memory.shape[0] else None,
            ),
            Mistake(
                "divide the scores by √d_k before the softmax",
                _attend(x @ W_Q, memory @ W_K, memory @ W_V, scale=False),
            ),
        ]
        mistakes = [m for m in mistakes if m.value is not None]
        return check_array(title, result, expected, atol=1e-6, mistakes=mistakes)

    return run_cases(
        title, cross_attention, "cross_attention", cases, compare,
        "all {n} test cases right: each output row is a mix of memory's values",
    )  # fmt: skip


# --- exercise 8.2: the key-padding mask ----------------------------------------------------------


def check_padding_mask(padding_mask: Callable[..., Any]) -> Feedback:
    """Check ``padding_mask(lengths, t_k)`` -> boolean ``(B, t_k)``, ``True`` = a real token.

    >>> print(check_padding_mask(lambda lengths, t_k: torch.arange(t_k)[None, :] >=
    ...       torch.as_tensor(lengths)[:, None]).hints[0])  # doctest: +ELLIPSIS
    True means "may attend" here: ...
    """
    title = "key-padding mask"
    cases = [
        ("lengths = [3, 1, 2], t_k = 3", ([3, 1, 2], 3)),
        ("lengths = [2, 5], t_k = 6", ([2, 5], 6)),
        ("lengths = [4], t_k = 4", ([4], 4)),
    ]

    def compare(result: Any, lengths: list[int], t_k: int) -> Feedback:
        expected = key_padding_mask(lengths, t_k)  # (B, t_k)
        arr = np.asarray(to_numpy(result))
        if arr.dtype != np.bool_ and arr.shape == expected.shape and np.isin(arr, (0, 1)).all():
            arr = arr.astype(bool)  # 0/1 integers are a fine answer too
        pos = np.arange(t_k)[None, :]  # (1, t_k)
        lens = np.asarray(lengths)[:, None]  # (B, 1)
        mistakes = [
            Mistake(
                'True means "may attend" here: True for the real tokens, False for the padding '
                "(PyTorch's key_padding_mask is the opposite)",
                ~expected,
            ),
            Mistake(
                "off by one: position j is real when j < length (j counts from 0)", pos <= lens
            ),
            Mistake("one row per sentence (B, t_k), not (t_k, B)", expected.T),
        ]
        return check_array(title, arr, expected, mistakes=mistakes)

    return run_cases(
        title, padding_mask, "padding_mask", cases, compare,
        "all {n} test cases right: True for real tokens, False for padding",
    )  # fmt: skip


# --- exercise 8.3: the decoder block's wiring ----------------------------------------------------


def check_decoder_block(decoder_block: Callable[..., Any]) -> Feedback:
    """Check ``decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3)`` against
    a pre-LN :class:`DecoderBlock`. ``self_attn(h)`` is causal self-attention, ``cross_attn(h,
    memory)`` attends from ``h`` to ``memory``, ``ffn(h)`` the FFN, ``norm*`` the LayerNorms.

    >>> def decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):
    ...     x = x + self_attn(norm1(x))
    ...     x = x + cross_attn(norm2(x), memory)
    ...     return x + ffn(norm3(x))
    >>> bool(check_decoder_block(decoder_block))
    True
    """
    title = "decoder block"
    cases = []
    for seed, (B, t_q, t_k) in enumerate([(1, 3, 5), (2, 4, 2)]):
        torch.manual_seed(_SEED + seed)
        block = DecoderBlock(8, 2, 16).double().eval()
        g = torch.Generator().manual_seed(_SEED + 10 + seed)
        with torch.no_grad():  # fresh LayerNorms are all (1, 0): any wiring of them would pass
            for norm in (block.norm1, block.norm2, block.norm3):
                for p in norm.parameters():
                    p.normal_(0.5, 0.5, generator=g)
        x = torch.randn(B, t_q, 8, generator=g, dtype=torch.float64)
        memory = torch.randn(B, t_k, 8, generator=g, dtype=torch.float64)
        causal = torch.from_numpy(causal_mask(t_q))  # (T_q, T_q)

        def self_attn(h: torch.Tensor, _b: DecoderBlock = block, _m: Any = causal) -> torch.Tensor:
            return _b.self_attn(h, h, h, mask=_m)

        def cross_attn(h: torch.Tensor, mem: torch.Tensor, _b: DecoderBlock = block) -> Any:
            return _b.cross_attn(h, mem, mem)

        fns = (self_attn, cross_attn, block.ffn, block.norm1, block.norm2, block.norm3)
        cases.append((f"B = {B}, T_q = {t_q}, T_k = {t_k}, d_model = 8", (x, memory, *fns)))

    def compare(
        result: Any, x: Any, memory: Any, sa: Any, ca: Any, ffn: Any, *norms: Any
    ) -> Feedback:
        n1, n2, n3 = norms
        with torch.no_grad():
            h = x + sa(n1(x))
            expected = (h2 := h + ca(n2(h), memory)) + ffn(n3(h2))
            post = n1(x + sa(x))
            post = n3((p2 := n2(post + ca(post, memory))) + ffn(p2))
            normed_mem = (m2 := h + ca(n2(h), n2(memory))) + ffn(n3(m2))
            no_self = (s2 := x + ca(n2(x), memory)) + ffn(n3(s2))
            no_res = (r2 := ca(n2(h), memory)) + ffn(n3(r2))  # x = cross_attn(norm2(x), memory)
            swapped_norms = (w2 := h + ca(n3(h), memory)) + ffn(n2(w2))
            one_norm = (o2 := h + ca(n1(h), memory)) + ffn(n1(o2))
            cross_first = (c1 := x + ca(n1(x), memory)) + sa(n2(c1))
            cross_first = cross_first + ffn(n3(cross_first))
        mistakes = [
            Mistake(
                "each sublayer has its own LayerNorm: norm1 before self_attn, norm2 before "
                "cross_attn, norm3 before the FFN",
                swapped_norms,
            ),
            Mistake(
                "each sublayer has its own LayerNorm (with its own gain and bias): norm1, norm2, "
                "norm3 in that order",
                one_norm,
            ),
            Mistake(
                "the causal self-attention comes first, then the cross-attention, then the FFN",
                cross_first,
            ),
            Mistake("that is the post-LN block; pre-LN normalises each sublayer's input", post),
            Mistake(
                "pass memory to cross_attn as it is: the encoder already normalised it",
                normed_mem,
            ),
            Mistake(
                "start with the causal self-attention sublayer (x + self_attn(norm1(x)))", no_self
            ),
            Mistake("add cross_attn's output to x (the residual), do not replace x", no_res),
        ]
        return check_array(title, result, expected, atol=1e-6, mistakes=mistakes)

    return run_cases(
        title, decoder_block, "decoder_block", cases, compare,
        "all {n} test cases equal course_utils' pre-LN DecoderBlock",
    )  # fmt: skip


# --- exercises 8.5 and 8.6: the three attentions of an encoder–decoder ----------------------------

__all__ += ["check_attention_shapes", "check_encoder_decoder_masks"]

#: The three attentions, in the order the exercises return them.
_THREE = ("encoder self-attention", "decoder self-attention", "cross-attention")


def _whole(n: Any) -> int:
    """``n`` as an int if it is a whole number (``2.0`` is, ``2.5`` is not: no silent rounding)."""
    x = float(n)
    if not x.is_integer():
        raise ValueError(f"{n!r} is not a whole number")
    return int(x)


def _as_shape(value: Any) -> tuple[int, ...] | None:
    try:
        shape = tuple(_whole(n) for n in value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf
        return None
    return shape if all(n >= 0 for n in shape) else None


def _not_three(title: str, result: Any, things: str) -> Feedback | None:
    """Feedback when ``result`` is not three ``things`` (``"shapes"``, ``"masks"``), one for each
    attention of :data:`_THREE`; None when it is, and the checker goes on to compare them.

    >>> _not_three("attention shapes", [(1, 2), (1, 2), (1, 2)], "shapes") is None
    True
    >>> print(_not_three("attention shapes", None, "shapes"))
    ✗ attention shapes: not yet right
      - expected three shapes; got NoneType
      hint: return three shapes, in this order: encoder self, decoder self, cross
    """
    from ..i18n import t, t_literal

    if isinstance(result, tuple | list) and len(result) == len(_THREE):
        return None
    things = t_literal(things)  # the noun in the reader's language
    return Feedback(
        False,
        title,
        (t("expected three {things}; got {what}", things=things, what=type(result).__name__),),
        (
            t(
                "return three {things}, in this order: encoder self, decoder self, cross",
                things=things,
            ),
        ),
    )


def check_attention_shapes(shapes: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``shapes(B, n_heads, t_src, t_tgt)``: the shapes of the attention weights of the
    encoder's self-attention, the decoder's self-attention and the cross-attention, in that order,
    each ``(B, n_heads, T_q, T_k)``.

    >>> def shapes(B, h, t_src, t_tgt):
    ...     return (B, h, t_src, t_src), (B, h, t_tgt, t_tgt), (B, h, t_tgt, t_src)
    >>> bool(check_attention_shapes(shapes))
    True
    >>> swapped = lambda B, h, s, t: ((B, h, s, s), (B, h, t, t), (B, h, s, t))
    >>> print(check_attention_shapes(swapped).hints[0])  # doctest: +ELLIPSIS
    in cross-attention the queries come from the decoder: ...
    """
    from ..i18n import t, t_literal

    title = "attention shapes"

    def hint_for(name: str, got: tuple[int, ...] | None, B: int, h: int, s: int, q: int) -> str:
        want = dict(zip(_THREE, ((s, s), (q, q), (q, s)), strict=True))[name]
        if got is not None and len(got) == 3 and got[1:] == want:
            return "keep the heads axis: every head has its own weights, (B, n_heads, T_q, T_k)"
        if name == "cross-attention" and got == (B, h, s, q):
            return (
                "in cross-attention the queries come from the decoder: T_q = t_tgt rows, one "
                "column (key) per source position"
            )
        if name == "cross-attention" and got == (B, h, q, q):
            return (
                "the keys and values of cross-attention are the encoder's output, so the last "
                "axis is t_src"
            )
        if name == "decoder self-attention" and got == (B, h, s, s):
            return "the decoder's self-attention is over its own output steps: t_tgt × t_tgt"
        if name == "encoder self-attention" and got == (B, h, q, q):
            return "the encoder's self-attention is over the source: t_src × t_src"
        return ""

    def compare(result: Any, B: int, h: int, s: int, q: int) -> Feedback:
        expected = ((B, h, s, s), (B, h, q, q), (B, h, q, s))
        wrong_type = _not_three(title, result, "shapes")
        if wrong_type is not None:
            return wrong_type
        for name, answer, want in zip(_THREE, result, expected, strict=True):
            got = _as_shape(answer)
            if got == want:
                continue
            hint = hint_for(name, got, B, h, s, q)
            return Feedback(
                False,
                title,
                (
                    t(
                        "{name}: got {got}, expected {want}",
                        name=t_literal(name),
                        got=got if got is not None else answer,
                        want=want,
                    ),
                ),
                (hint,) if hint else (),
            )
        return Feedback(True, title)

    sizes = ((2, 4, 7, 5), (1, 8, 3, 9), (3, 2, 6, 6))
    cases = described_cases("B = {B}, n_heads = {h}, t_src = {s}, t_tgt = {q}", sizes)
    passed = "all {n} cases right"
    return run_cases(title, shapes, "shapes", cases, compare, passed)


def check_encoder_decoder_masks(masks: Callable[[Any, int, int], Any]) -> Feedback:
    """Check ``masks(lengths, t_src, t_tgt)``: the boolean masks (``True`` = may attend) of the
    encoder's self-attention, the decoder's self-attention and the cross-attention, in that order.

    Any shape that broadcasts to the full ``(B, T_q, T_k)`` is right: ``(B, 1, T_k)`` for a
    padding mask, ``(T_q, T_k)`` for a causal one (numpy, torch, lists).

    >>> from course_utils.masks import causal_mask, key_padding_mask
    >>> def masks(lengths, t_src, t_tgt):
    ...     pad = key_padding_mask(lengths, t_src)[:, None, :]      # (B, 1, t_src)
    ...     return pad, causal_mask(t_tgt), pad
    >>> bool(check_encoder_decoder_masks(masks))
    True
    >>> wrong = lambda lengths, s, q: (key_padding_mask(lengths, s)[:, None, :], causal_mask(q),
    ...                                causal_mask(q, s))
    >>> print(check_encoder_decoder_masks(wrong).hints[0])  # doctest: +ELLIPSIS
    cross-attention is not causal: ...
    """
    from ..i18n import t, t_literal

    title = "encoder–decoder masks"

    def full(value: Any, shape: tuple[int, int, int]) -> np.ndarray | None:
        arr = np.asarray(to_numpy(value))
        if arr.ndim == 4 and arr.shape[1] == 1:  # (B, 1, T_q, T_k): a heads axis of 1
            arr = arr[:, 0]
        try:
            return np.broadcast_to(arr, shape).astype(float)  # (B, T_q, T_k)
        except ValueError:
            return None

    def compare(result: Any, lengths: list[int], s: int, q: int) -> Feedback:
        B = len(lengths)
        wrong_type = _not_three(title, result, "masks")
        if wrong_type is not None:
            return wrong_type
        for name, mask in zip(_THREE, result, strict=True):
            try:
                as_answer_array(mask, name)
            except TypeError as err:  # None, a string: say so instead of reading it as nan
                return Feedback(False, title, (str(err),))
        pad = key_padding_mask(lengths, s)  # (B, s)
        keys = np.broadcast_to(pad[:, None, :], (B, s, s))  # (B, s, s): padding keys hidden
        causal_q = np.broadcast_to(causal_mask(q), (B, q, q))  # (B, q, q)
        expected = {
            "encoder self-attention": keys,
            "decoder self-attention": causal_q,
            "cross-attention": np.broadcast_to(pad[:, None, :], (B, q, s)),
        }
        ones = {name: np.ones_like(e) for name, e in expected.items()}
        mistakes = {
            "encoder self-attention": [
                Mistake(
                    "the encoder must not attend to padding either: hide the padding keys",
                    ones["encoder self-attention"],
                ),
                Mistake(
                    "the encoder reads the whole source at once: no causal mask, only padding",
                    keys & causal_mask(s),
                ),
                Mistake(
                    "mask the padding keys (columns, the last axis), not the queries (rows)",
                    np.broadcast_to(pad[:, :, None], (B, s, s)),
                ),
            ],
            "decoder self-attention": [
                Mistake(
                    "the decoder's self-attention is causal: step i may not see later steps",
                    ones["decoder self-attention"],
                ),
                Mistake(
                    "True = may attend: the causal mask keeps the past (lower triangle)",
                    ~causal_q,
                ),
            ],
            "cross-attention": [
                Mistake(
                    "cross-attention is not causal: every output step may read the whole source; "
                    "it needs only the padding mask",
                    np.broadcast_to(causal_mask(q, s), (B, q, s)),
                ),
                Mistake(
                    "cross-attention must hide the source's padding keys too",
                    ones["cross-attention"],
                ),
            ],
        }
        for name, answer in zip(_THREE, result, strict=True):
            want = expected[name]
            got = full(answer, want.shape)
            if got is None:
                shape = tuple(np.shape(to_numpy(answer)))
                return Feedback(
                    False,
                    title,
                    (
                        t(
                            "{name}: a mask of shape {shape} does not broadcast to {want}",
                            name=t_literal(name),
                            shape=shape,
                            want=want.shape,
                        ),
                    ),
                    ("use (B, 1, T_k) for a padding mask and (T_q, T_k) for a causal one",),
                )
            fb = check_array(
                name, got, want.astype(float), rtol=0, atol=0, mistakes=[
                    Mistake(m.hint, np.asarray(m.value, dtype=float)) for m in mistakes[name]
                ]
            )  # fmt: skip
            if not fb:
                return fb
        return Feedback(True, title)

    cases = [([4, 2, 3], 4, 3), ([5, 5], 5, 6), ([1, 3], 3, 2)]
    described = [
        t("lengths = {lengths}, t_src = {s}, t_tgt = {q}", lengths=c[0], s=c[1], q=c[2])
        for c in cases
    ]
    passed = "all {n} cases right"
    return run_cases(
        title, masks, "masks", list(zip(described, cases, strict=True)), compare, passed
    )


# --- exercise 8.7: what the cached source saves, counted ------------------------------------------

__all__ += ["check_cross_kv_multiplies"]


def _as_floats(values: Any) -> list[float] | None:
    """``values`` as a list of floats, or ``None`` when they are not numbers."""
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def check_cross_kv_multiplies(multiplies: Callable[[int, int, int, int], Any]) -> Feedback:
    """Check ``multiplies(d_model, t_src, n_steps, n_layers)``: the multiplies of the
    cross-attention's K and V projections while ``n_steps`` tokens are decoded, as the pair
    ``(without_cache, with_cache)``, against
    :func:`course_utils.transformer_cost.cross_kv_multiplies`.

    >>> def multiplies(d, t, n, layers):
    ...     once = layers * 2 * t * d * d
    ...     return n * once, once
    >>> bool(check_cross_kv_multiplies(multiplies))
    True
    >>> def only_k(d, t, n, layers):
    ...     return n * layers * t * d * d, layers * t * d * d
    >>> print(check_cross_kv_multiplies(only_k).hints[0])  # doctest: +ELLIPSIS
    count K and V both: ...
    """
    from ..i18n import t
    from ..transformer_cost import cross_kv_multiplies
    from ._checks import check_number, not_a_pair

    title = "cross-attention K/V multiplies"

    def compare(result: Any, d: int, s: int, n: int, layers: int) -> Feedback:
        wrong_type = not_a_pair(title, result, "without_cache, with_cache")
        if wrong_type is not None:
            return wrong_type
        without = cross_kv_multiplies(d, s, n, layers, cached=False)
        once = cross_kv_multiplies(d, s, n, layers, cached=True)
        kv = (
            "count K and V both: each block projects the source through W_K and through W_V, "
            "2 · t_src · d_model² multiplies"
        )
        squared = (
            "the projection multiplies each of the t_src source rows by a d_model × d_model "
            "matrix: t_src · d_model² per matrix, not t_src² (that is the score matrix of "
            "the encoder's self-attention)"
        )
        per_layer = (
            "every decoder block has its own W_K and W_V, so the memory is projected once per "
            "block: multiply by n_layers"
        )
        not_squared = "a d_model × d_model matrix costs d_model² multiplies per row, not d_model"
        mistakes = {
            "without": [
                (without / 2, kv),
                (n * layers * 2 * s * s * d, squared),
                (n * 2 * s * d * d, per_layer),
                (n * layers * 2 * s * d, not_squared),
                (
                    once,
                    "without a cache the projections run again at every step: n_steps times "
                    "the cached count",
                ),
            ],
            "with": [
                (once / 2, kv),
                (layers * 2 * s * s * d, squared),
                (2 * s * d * d, per_layer),
                (layers * 2 * s * d, not_squared),
                (
                    without,
                    "with the cache the memory is projected once per source, not at every step",
                ),
            ],
        }
        if _as_floats(result) == [float(once), float(without)]:  # the two swapped
            hint = "return (without_cache, with_cache) in this order"
            return Feedback(False, title, (t("got the pair the wrong way round"),), (hint,))
        fb = check_number(
            t("without the cache"),
            result[0],
            without,
            mistakes["without"],
            "got {value:,.0f}, expected {expected:,}",
        )
        if not fb:
            return fb
        fb = check_number(
            t("with the cache"),
            result[1],
            once,
            mistakes["with"],
            "got {value:,.0f}, expected {expected:,}",
        )
        return fb if not fb else Feedback(True, title)

    def described(d: int, s: int, n: int, layers: int) -> str:
        return t(
            "d_model = {d}, t_src = {s}, n_steps = {n}, n_layers = {layers}",
            d=d,
            s=s,
            n=n,
            layers=layers,
        )

    sizes = ((32, 8, 9, 3), (512, 64, 20, 6), (16, 5, 3, 4))  # no two named mistakes coincide
    cases = [(described(*size), size) for size in sizes]
    passed = "all {n} cases right"
    return run_cases(title, multiplies, "multiplies", cases, compare, passed)
