"""The logit lens: what a decoder would predict if it stopped after block ``l``.

A pre-norm decoder such as SmolLM2 keeps one running sum per token, the residual stream: the
embedding, plus what every block adds. Only after the last block does the model read it out, with
its final RMSNorm and its LM head (for SmolLM2 the embedding matrix itself: tied weights). The
*logit lens* (nostalgebraist, 2020) applies that same read-out to the stream after every block:

    logits_l = W_E · RMSNorm_final(x_l)        l = 0 (the embedding), 1, ..., n_layers

so the last one is the model's real output. No new weights are learned (the *tuned lens* of
Belrose et al., 2023, trains one small map per block instead). The stream after block ``l`` is
``hidden_states[l]`` of ``transformers``' ``LlamaForCausalLM(output_hidden_states=True)`` for
``l < n_layers`` (its last entry is already normalised); ``tests/test_logit_lens.py`` checks both.

>>> import torch
>>> from course_utils.pretrained.smollm2 import SmolLM2, SmolLM2Config
>>> _ = torch.manual_seed(0)
>>> cfg = SmolLM2Config(n_layers=2, d_model=8, n_heads=2, n_kv_heads=1, d_ff=16, vocab_size=11)
>>> tiny = SmolLM2(cfg).eval()                     # random weights, same wiring as SmolLM2-135M
>>> ids = torch.tensor([[3, 1, 4, 1, 5]])          # (B, T) = (1, 5)
>>> residual_stream(tiny, ids).shape               # (n_layers + 1, B, T, d_model)
torch.Size([3, 1, 5, 8])
>>> lens = logit_lens(tiny, ids, k=3)              # the last position
>>> lens.top_ids.shape, lens.norms.shape           # (n_layers + 1, k), (n_layers + 1,)
(torch.Size([3, 3]), torch.Size([3]))
>>> with torch.no_grad():
...     real = tiny(ids)[0, -1].softmax(-1).topk(3)  # the model's own next-token guesses
>>> torch.equal(lens.top_ids[-1], real.indices)    # the lens after the last block is the model
True
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_int, shape_str
from .smollm2 import SmolLM2

__all__ = ["LogitLens", "lens_logits", "logit_lens", "residual_stream"]


def _check_model(model: object) -> SmolLM2:
    if not isinstance(model, SmolLM2):
        raise TypeError(
            f"model must be a SmolLM2 (course_utils.pretrained.load_smollm2()); "
            f"got {type(model).__name__}"
        )
    return model


def _check_ids(input_ids: object, vocab_size: int) -> Tensor:
    if (
        not isinstance(input_ids, Tensor)
        or input_ids.dim() != 2
        or input_ids.is_floating_point()
        or input_ids.numel() == 0
    ):
        got = (
            shape_str(tuple(input_ids.shape))
            if isinstance(input_ids, Tensor)
            else type(input_ids).__name__
        )
        raise ValueError(f"input_ids must be a non-empty integer tensor of shape (B, T); got {got}")
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab_size:
        raise ValueError(
            f"input_ids must be token ids in [0, {vocab_size}); got values from "
            f"{int(input_ids.min())} to {int(input_ids.max())}"
        )
    return input_ids


def residual_stream(model: SmolLM2, input_ids: Tensor) -> Tensor:
    """The residual stream before the first block and after each block, stacked:
    ``(n_layers + 1, B, T, d_model)``; entry 0 is the token embedding, entry ``l`` what
    ``l`` blocks have made of it. Computed without gradients."""
    model = _check_model(model)
    ids = _check_ids(input_ids, model.config.vocab_size)
    with torch.no_grad():
        x = model.embed(ids)  # (B, T, d_model)
        stream = [x]
        for layer in model.layers:
            x, _ = layer(x)  # (B, T, d_model): the block adds attention, then its FFN
            stream.append(x)
    return torch.stack(stream)  # (n_layers + 1, B, T, d_model)


def lens_logits(model: SmolLM2, residual: Tensor) -> Tensor:
    """The model's own read-out applied to any residual stream ``(..., d_model)``: final
    RMSNorm, then the LM head (SmolLM2's embedding matrix: tied weights) -> ``(..., vocab)``."""
    model = _check_model(model)
    d = model.config.d_model
    if not isinstance(residual, Tensor) or residual.dim() < 1 or residual.shape[-1] != d:
        got = (
            shape_str(tuple(residual.shape))
            if isinstance(residual, Tensor)
            else type(residual).__name__
        )
        raise ValueError(f"residual must be a tensor of shape (..., {d}); got {got}")
    with torch.no_grad():
        return F.linear(model.norm(residual), model.embed.weight)  # (..., vocab)


@dataclass(frozen=True)
class LogitLens:
    """The logit lens of one position of a sequence, for the stream after 0, 1, ...,
    ``n_layers`` blocks.

    ``norms`` ``(n_layers + 1,)``: the length of the token's residual stream;
    ``top_ids``, ``top_probs`` ``(n_layers + 1, k)``: the ``k`` most likely next tokens
    (softmax of :func:`lens_logits`), most likely first.
    """

    norms: Tensor
    top_ids: Tensor
    top_probs: Tensor


def logit_lens(model: SmolLM2, input_ids: Tensor, k: int = 5, position: int = -1) -> LogitLens:
    """The logit lens of one sequence ``input_ids`` ``(1, T)`` at ``position`` (default the
    last token, whose guess is the next token of the text), with the top ``k`` guesses.

    Only that position is read out: the LM head is the largest product of a short prompt
    (``49152 x 576`` per token and block), so reading all ``T`` would cost ``T`` times more."""
    model = _check_model(model)
    ids = _check_ids(input_ids, model.config.vocab_size)
    if ids.shape[0] != 1:
        raise ValueError(
            f"input_ids must hold one sequence, shape (1, T); got {shape_str(tuple(ids.shape))}"
        )
    T = ids.shape[1]
    k = check_int(k, "k", low=1, high=model.config.vocab_size)
    position = check_int(position, "position", low=-T, high=T - 1)
    stream = residual_stream(model, ids)[:, 0, position]  # (n_layers + 1, d_model)
    probs = lens_logits(model, stream).softmax(-1)  # (n_layers + 1, vocab)
    top = probs.topk(k, dim=-1)  # (n_layers + 1, k) each
    return LogitLens(stream.norm(dim=-1), top.indices, top.values)
