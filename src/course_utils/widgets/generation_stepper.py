"""Chapter 7's generation stepper: one token at a time, the causal mask, the row, the KV cache.

Each example is a short sequence of tokens with its causal attention weights ``(T, T)`` (lower
triangular, rows summing to 1: :class:`course_utils.causal.CausalSelfAttention` with
``return_weights=True``). The slider picks the generation step ``t``: the mask grows to the
``(t + 1) x (t + 1)`` lower triangle, row ``t`` (the current token's attention) is coloured by its
weights, and the keys/values of tokens ``0..t-1`` are marked *from the cache* while token ``t``'s
are *new*. Python checks and packs the weights; the JavaScript only looks them up.

>>> w = GenerationStepper([{"name": "看书真好", "tokens": list("看书真好")}])
>>> w.step = 2
>>> w.cached, w.new
(['看', '书'], '真')
>>> w.row.round(2).tolist()   # no weights given: uniform over the visible tokens
[0.33, 0.33, 0.33, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from ._base import CourseWidget, check_examples, check_tokens, pack_array
from ._text import Text

__all__ = ["GenerationStepper"]

MAX_TOKENS = 16


def _check_example(example: Any, i: int) -> dict[str, Any]:
    if not isinstance(example, dict) or "tokens" not in example:
        raise TypeError(
            f"examples[{i}] must be a dict with 'tokens' (and optionally 'name', 'weights'); "
            f"got {type(example).__name__}"
        )
    tokens = check_tokens(example["tokens"], f"examples[{i}]['tokens']", max_len=MAX_TOKENS)
    T = len(tokens)
    weights = example.get("weights")
    if weights is None:  # the mask alone: uniform over the visible tokens
        w = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # (T, T)
    else:
        if hasattr(weights, "detach"):
            weights = weights.detach().cpu().numpy()
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (T, T):
            raise ValueError(
                f"examples[{i}]['weights'] has shape {w.shape}, expected ({T}, {T}): one row and "
                "one column per token"
            )
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError(f"examples[{i}]['weights'] must be finite and >= 0")
        if np.abs(np.triu(w, 1)).max(initial=0.0) > 0:
            raise ValueError(
                f"examples[{i}]['weights'] has weight above the diagonal: a causal model gives "
                "exactly 0 to future tokens"
            )
        if not np.allclose(w.sum(-1), 1.0, atol=1e-3):
            raise ValueError(f"examples[{i}]['weights'] rows must sum to 1 (softmax rows)")
    name = str(example.get("name", " ".join(tokens)))
    return {"name": name, "tokens": tokens, "weights": w}


class GenerationStepper(CourseWidget):
    """Step through causal generation of a few short sequences.

    Parameters
    ----------
    examples : list of dict
        Each ``{"name": str, "tokens": list[str], "weights": (T, T) array}``; ``weights`` are the
        causal attention weights of one head (default: uniform over the visible tokens, i.e. just
        the mask). 1 to 16 tokens each.
    example_index, step : int
        Initial example and generation step.
    """

    _widget_file = "generation_stepper"

    names = traitlets.List(Text()).tag(sync=True)
    tokens = traitlets.List().tag(sync=True)  # per example: list of T tokens
    frames = traitlets.List().tag(sync=True)  # per example: packed weights (T, T)
    example_index = traitlets.Int(0).tag(sync=True)  # which example is shown
    step = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        examples: Sequence[dict[str, Any]],
        *,
        example_index: int = 0,
        step: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        checked = check_examples(examples, _check_example)
        with self.hold_trait_notifications():
            self.names = [c["name"] for c in checked]
            self.tokens = [c["tokens"] for c in checked]
            self.frames = [pack_array(c["weights"]) for c in checked]
        self._check_budget()
        self.example_index = example_index
        self.step = step

    @classmethod
    def example(cls) -> Self:
        """A small example: the seed's 看书真好 twice, with the causal weights of
        :func:`course_utils.data.reading_example` and with the mask alone (uniform over the
        visible tokens), at step 2.

        >>> w = GenerationStepper.example()
        >>> w.names
        ['看书真好 (reading_example, causal weights)', "看书真好 (the seed's table)"]
        >>> w.cached, w.new, w.row.round(2).tolist()     # 真 reads 看 and 书 from the cache
        (['看', '书'], '真', [0.07, 0.56, 0.37, 0.0])
        >>> w.example_index = 1                          # the second example
        >>> w.row.round(2).tolist()
        [0.33, 0.33, 0.33, 0.0]
        """
        from ..data import reading_example
        from ..masks import causal_mask

        reading = reading_example()
        _, weights = reading.attention(causal_mask(reading.T))  # (T, T), lower triangular
        tokens = list(reading.tokens)
        return cls(
            [
                {
                    "name": "看书真好 (reading_example, causal weights)",
                    "tokens": tokens,
                    "weights": weights,
                },
                {"name": "看书真好 (the seed's table)", "tokens": tokens},
            ],
            step=2,
        )

    _sequence_index = ("example_index", "step", "tokens")
    _v_index = traitlets.validate("example_index", "step")(CourseWidget._valid_index)
    _clamp_step = traitlets.observe("example_index")(CourseWidget._keep_position_within)

    _default_title = "Generating one token at a time: what each new token may look at"
    _repr_format = "{name!r}, step={step}"

    def _repr_values(self) -> dict[str, Any]:
        return {"name": self.names[self.example_index]}

    @property
    def weights(self) -> NDArray:
        """The current example's weights ``(T, T)`` as packed (3 decimals)."""
        packed = self.frames[self.example_index]
        return np.asarray(packed["data"], dtype=np.float64).reshape(packed["shape"])

    @property
    def row(self) -> NDArray:
        """Row ``step``: the current token's attention over all ``T`` tokens (0 after it)."""
        return self.weights[self.step]

    @property
    def cached(self) -> list[str]:
        """Tokens whose keys and values come from the cache at this step."""
        return self.tokens[self.example_index][: self.step]

    @property
    def new(self) -> str:
        """The token whose query, key and value are computed at this step."""
        return self.tokens[self.example_index][self.step]
