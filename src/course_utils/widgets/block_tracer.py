"""Follow one token's vector through a stack of Transformer blocks, one sublayer at a time.

For every layer and every token, Python runs :meth:`course_utils.transformer.TransformerBlock.trace`
and syncs the seven steps of that token's vector (the residual stream in, what LayerNorm makes
of it, the attention output added to the stream, the stream after it, the FFN's input and output,
the block's output) with their norms, and the attention weights of that token on every token
(each head, in whole percent). JavaScript only looks them up: one slider picks the token, another
the layer.

>>> import torch
>>> from course_utils.transformer import TransformerBlock
>>> _ = torch.manual_seed(0)
>>> blocks = [TransformerBlock(8, 2, 16).eval() for _ in range(2)]
>>> w = BlockTracer(blocks, torch.randn(4, 8), ["a", "b", "a", "c"], token=2)
>>> from course_utils.widgets._base import unpack_array
>>> unpack_array(w.vectors).shape                    # (layers, T, steps, d_model)
(2, 4, 7, 8)
>>> w.weights.shape                                  # token 2, layer 0: (n_heads, T)
(2, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch
import traitlets
from numpy.typing import NDArray

from ..transformer import TransformerBlock
from ._base import CourseWidget, check_index, check_tokens, check_vectors, pack_array, pack_uint8
from ._text import Text

__all__ = ["POST_LN_LABELS", "STEPS", "BlockTracer"]

#: The seven vector rows of the drawing: (BlockTrace field, label) for a pre-LN block.
STEPS: tuple[tuple[str, str], ...] = (
    ("x", "residual stream in"),
    ("attn_in", "LayerNorm 1: what attention reads"),
    ("attn_out", "+ attention output"),
    ("mid", "= stream after attention"),
    ("ffn_in", "LayerNorm 2: what the FFN reads"),
    ("ffn_out", "+ FFN output"),
    ("out", "= block output"),
)
#: The same rows for a post-LN block, where the sublayers read the stream itself.
POST_LN_LABELS: tuple[str, ...] = (
    "residual stream in",
    "attention reads the stream itself",
    "+ attention output",
    "= LayerNorm 1(stream + attention)",
    "the FFN reads the stream itself",
    "+ FFN output",
    "= LayerNorm 2(stream + FFN)",
)
MAX_TOKENS = 16


class BlockTracer(CourseWidget):
    """One token's vector through the blocks: norms, the attention mix, the residual adds, the FFN.

    Parameters
    ----------
    blocks : sequence of TransformerBlock
        The layers, in order (pre-LN or post-LN; put them in ``eval()`` mode).
    x : array or tensor ``(T, d_model)``
        The vectors entering the first block (e.g. the token embeddings of one sequence).
    tokens : list of str
        One label per position.
    answers : list of str, optional
        One line per position shown under the drawing (e.g. the model's prediction).
    token, layer : int
        What is shown first.
    """

    _widget_file = "block_tracer"
    _default_description = (
        "For the chosen token and layer: bar charts of the token's vector at each step of "
        "the block, its length (norm), and how much attention weight it gives each token "
        "in each head. Choose the token and the layer with the sliders."
    )

    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    answers = traitlets.List(Text()).tag(sync=True)
    step_labels = traitlets.List(Text()).tag(sync=True)
    vectors = traitlets.Dict().tag(sync=True)  # pack_array (L, T, n_steps, d_model), 2 decimals
    norms = traitlets.Dict().tag(sync=True)  # pack_array (L, T, n_steps), 2 decimals
    attention = traitlets.Dict().tag(sync=True)  # pack_uint8 (L, T, n_heads, T), whole percent
    n_layers = traitlets.Int(1).tag(sync=True)
    token = traitlets.Int(0).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        blocks: Sequence[TransformerBlock],
        x: Any,
        tokens: Sequence[str],
        *,
        answers: Sequence[str] | None = None,
        token: int = 0,
        layer: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(blocks, TransformerBlock) or not isinstance(blocks, Sequence) or not blocks:
            raise TypeError(
                f"blocks must be a non-empty list of TransformerBlock; got {type(blocks).__name__}"
            )
        for i, b in enumerate(blocks):
            if not isinstance(b, TransformerBlock):
                raise TypeError(f"blocks[{i}] must be a TransformerBlock; got {type(b).__name__}")
        if len({b.norm_first for b in blocks}) > 1:
            raise ValueError("blocks must be all pre-LN or all post-LN (norm_first differs)")
        tokens = check_tokens(tokens, "tokens", max_len=MAX_TOKENS)
        d_model = blocks[0].d_model
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().double().numpy()
        x = check_vectors(x, "x", rows=len(tokens), dim=d_model)  # (T, d_model)
        if answers is not None:
            answers = [str(a) for a in answers]
            if len(answers) != len(tokens):
                raise ValueError(
                    f"answers needs one line per token ({len(tokens)}); got {len(answers)}"
                )
        self._full = self._run(blocks, x)  # vectors (L, T, S, d), weights (L, T, H, T)
        vectors, weights = self._full
        with self.hold_trait_notifications():
            self.tokens = tokens
            self.answers = answers or []
            pre_ln = blocks[0].norm_first
            self.step_labels = [label for _, label in STEPS] if pre_ln else list(POST_LN_LABELS)
            self.n_layers = len(blocks)
            self.vectors = pack_array(vectors, decimals=2)
            self.norms = pack_array(np.linalg.norm(vectors, axis=-1), decimals=2)
            self.attention = pack_uint8(np.rint(100 * weights), "attention")
            self.token = check_index(token, "token", len(tokens))
            self.layer = check_index(layer, "layer", len(blocks))
        self._check_budget("use fewer tokens or layers")

    @classmethod
    def example(cls) -> Self:
        """Chapter 6's counting model (two pre-LN blocks, ``d_model = 16``, 4 heads), untrained
        (seed 0), on the chapter's letters ``abacdbaeaf``; each line under the drawing gives the
        count the model is meant to learn.

        >>> w = BlockTracer.example()
        >>> w
        BlockTracer(2 layers, 10 tokens, token=0, layer=0)
        >>> w.answers[0]
        "'a' occurs 4 time(s) in abacdbaeaf"
        >>> s = w.steps                                  # (7 steps, d_model)
        >>> bool(np.allclose(s[3], s[0] + s[2]))         # stream after attention = in + attention
        True
        >>> w.layer = 1
        >>> w.weights.shape                              # (heads, T): token 0's weights in layer 1
        (4, 10)
        """
        from ..experiments.counting import CountingModel, encode

        text = "abacdbaeaf"
        with torch.random.fork_rng(devices=[]):  # seed the weights, leave the caller's RNG alone
            torch.manual_seed(0)
            model = CountingModel(6, len(text)).eval()
        with torch.no_grad():
            embedded = model.embed(encode(text))[0]  # (T, d_model)
        return cls(
            list(model.blocks),
            embedded,
            list(text),
            answers=[f"'{c}' occurs {text.count(c)} time(s) in {text}" for c in text],
            title="One token's vector through two untrained blocks",
        )

    @staticmethod
    def _run(blocks: Sequence[TransformerBlock], x: NDArray) -> tuple[NDArray, NDArray]:
        dtype = blocks[0].attn.W_Q.weight.dtype
        h = torch.from_numpy(x).to(dtype)[None]  # (1, T, d_model)
        vectors, weights = [], []
        with torch.no_grad():
            for block in blocks:
                t = block.trace(h)
                steps = [getattr(t, field)[0] for field, _ in STEPS]  # each (T, d_model)
                vectors.append(torch.stack(steps, dim=1).double().numpy())  # (T, S, d_model)
                weights.append(t.weights[0].transpose(0, 1).double().numpy())  # (T, H, T)
                h = t.out  # (1, T, d_model)
        return np.stack(vectors), np.stack(weights)  # (L, T, S, d), (L, T, H, T)

    _v_index = traitlets.validate("token", "layer")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return {"token": len(self.tokens), "layer": self.n_layers}[name]

    _repr_format = "{n_layers} layers, {n_tokens} tokens, token={token}, layer={layer}"

    def _repr_values(self) -> dict[str, Any]:
        return {"n_tokens": len(self.tokens)}

    @property
    def steps(self) -> NDArray:
        """The chosen token's vector at each step, ``(n_steps, d_model)``, not rounded."""
        return self._full[0][self.layer, self.token]

    @property
    def weights(self) -> NDArray:
        """The chosen token's attention weights in the chosen layer, ``(n_heads, T)``."""
        return self._full[1][self.layer, self.token]
