"""Chapter 6's logit lens: what a decoder would predict if it stopped after block ``l``.

For each of a few prompts, Python runs the model once and reads the last token's residual stream
after every block through the model's own final norm and LM head
(:func:`course_utils.pretrained.logit_lens.logit_lens`): the top guesses for the next token with
their probabilities, and the length of the stream. A select picks the prompt, a slider the block
(0 = the token embedding, before any block); the JavaScript only looks the numbers up.

>>> w = LogitLensView([{"prompt": "a b", "norms": [1.0, 2.0],
...                     "tokens": [["x", "y"], ["y", "x"]],
...                     "probs": [[0.6, 0.3], [0.9, 0.05]]}], block=1)
>>> w.guesses
[('y', 0.9), ('x', 0.05)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from ._base import CourseWidget, check_examples, check_index, check_tokens, pack_array

__all__ = ["LogitLensView"]

MAX_PROMPTS = 6
MAX_BLOCKS = 64
MAX_GUESSES = 8


def _check_example(example: Any, i: int) -> dict[str, Any]:
    if not isinstance(example, dict) or not {"prompt", "norms", "tokens", "probs"} <= set(example):
        raise TypeError(
            f"examples[{i}] must be a dict with 'prompt', 'norms', 'tokens' and 'probs'; "
            f"got {type(example).__name__}"
            + (f" with keys {sorted(example)}" if isinstance(example, dict) else "")
        )
    prompt = example["prompt"]
    if not isinstance(prompt, str) or not prompt:
        raise TypeError(f"examples[{i}]['prompt'] must be a non-empty str; got {prompt!r}")
    norms = np.asarray(example["norms"], dtype=np.float64)
    if norms.ndim != 1 or not 2 <= norms.size <= MAX_BLOCKS + 1:
        raise ValueError(
            f"examples[{i}]['norms'] must have shape (n_blocks + 1,) with 1 to {MAX_BLOCKS} "
            f"blocks; got shape {norms.shape}"
        )
    if not np.isfinite(norms).all() or (norms < 0).any():
        raise ValueError(f"examples[{i}]['norms'] must be finite and >= 0 (lengths)")
    n = norms.size
    rows = example["tokens"]
    if not isinstance(rows, Sequence) or isinstance(rows, str) or len(rows) != n:
        raise ValueError(
            f"examples[{i}]['tokens'] must have one list of guesses per entry of 'norms' ({n}); "
            f"got {len(rows) if isinstance(rows, Sequence) else type(rows).__name__}"
        )
    k = len(rows[0]) if rows and isinstance(rows[0], Sequence) else 0
    tokens = [
        check_tokens(r, f"examples[{i}]['tokens'][{b}]", count=k, per="one per guess")
        for b, r in enumerate(rows)
    ]
    if not 1 <= k <= MAX_GUESSES:
        raise ValueError(f"examples[{i}] must have 1 to {MAX_GUESSES} guesses per block; got {k}")
    probs = np.asarray(example["probs"], dtype=np.float64)
    if probs.shape != (n, k):
        raise ValueError(
            f"examples[{i}]['probs'] has shape {probs.shape}, expected ({n}, {k}): one row per "
            "block, one probability per guess"
        )
    if not np.isfinite(probs).all() or (probs < 0).any() or (probs.sum(-1) > 1 + 1e-6).any():
        raise ValueError(
            f"examples[{i}]['probs'] must be probabilities: finite, >= 0, each row summing to "
            "at most 1 (the top guesses of a softmax)"
        )
    if (np.diff(probs, axis=-1) > 1e-9).any():
        raise ValueError(f"examples[{i}]['probs'] rows must be sorted, most likely guess first")
    return {"prompt": prompt, "norms": norms, "tokens": tokens, "probs": probs}


class LogitLensView(CourseWidget):
    """The logit lens of a few prompts: the top guesses and the stream's length after each block.

    Parameters
    ----------
    examples : list of dict
        Each ``{"prompt": str, "norms": (n + 1,), "tokens": (n + 1) lists of k str,
        "probs": (n + 1, k)}``: for the stream after 0, 1, ..., n blocks, its length and the
        ``k`` most likely next tokens (most likely first). All examples have the same ``n``.
        :meth:`from_model` makes them from a model.
    prompt_index, block : int
        The prompt and the block shown first.
    """

    _widget_file = "logit_lens_view"

    prompts = traitlets.List(traitlets.Unicode()).tag(sync=True)  # learner data: never translated
    norms = traitlets.List().tag(sync=True)  # per prompt: packed (n_blocks + 1,)
    tokens = traitlets.List().tag(sync=True)  # per prompt: (n_blocks + 1) lists of k guesses
    probs = traitlets.List().tag(sync=True)  # per prompt: packed (n_blocks + 1, k)
    prompt_index = traitlets.Int(0).tag(sync=True)
    block = traitlets.Int(0).tag(sync=True)

    _default_title = "The logit lens: the next-token guess after each block"
    _default_description = (
        "Pick a prompt and a block. A line chart shows the length of the last token's residual "
        "stream after each block; bars show the five most likely next tokens if the model read "
        "its output from the stream after that block."
    )
    _repr_format = "{prompt!r}, block={block}, n_blocks={n_blocks}"
    _v_index = traitlets.validate("prompt_index", "block")(CourseWidget._valid_index)

    def __init__(
        self,
        examples: Sequence[dict[str, Any]],
        *,
        prompt_index: int = 0,
        block: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        checked = check_examples(examples, _check_example, most=MAX_PROMPTS, unit="prompts")
        sizes = {c["norms"].size for c in checked}
        if len(sizes) != 1:
            raise ValueError(
                "every example must have the same number of blocks; got "
                f"{sorted(s - 1 for s in sizes)}"
            )
        with self.hold_trait_notifications():
            self.prompts = [c["prompt"] for c in checked]
            self.norms = [pack_array(c["norms"], decimals=1) for c in checked]
            self.tokens = [c["tokens"] for c in checked]
            self.probs = [pack_array(c["probs"]) for c in checked]
        self._check_budget()
        self.prompt_index = check_index(prompt_index, "prompt_index", len(checked))
        self.block = check_index(block, "block", sizes.pop())

    def _index_size(self, name: str) -> int:
        if name == "prompt_index":
            return len(self.prompts)
        return len(self.tokens[0]) if self.tokens else 0

    def _repr_values(self) -> dict[str, Any]:
        return {"prompt": self.prompts[self.prompt_index], "n_blocks": self.n_blocks}

    @classmethod
    def from_model(
        cls, model: Any, prompts: Sequence[str], *, k: int = 5, **kwargs: Any
    ) -> LogitLensView:
        """The lens of ``prompts`` (their last token) through ``model``, a
        :class:`~course_utils.pretrained.smollm2.SmolLM2` with a tokenizer
        (:func:`~course_utils.pretrained.load_smollm2`)."""
        import torch

        from ..pretrained.logit_lens import logit_lens

        tokenizer = getattr(model, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("model has no tokenizer: load it with load_smollm2()")
        if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
            raise TypeError("prompts must be a non-empty list of str")
        examples = []
        for prompt in prompts:
            ids = torch.tensor([tokenizer.encode(prompt)])  # (1, T)
            lens = logit_lens(model, ids, k=k)
            examples.append(
                {
                    "prompt": prompt,
                    "norms": lens.norms.numpy(),
                    "tokens": [[tokenizer.piece(int(i)) for i in row] for row in lens.top_ids],
                    "probs": lens.top_probs.numpy(),
                }
            )
        return cls(examples, **kwargs)

    @classmethod
    def example(cls) -> Self:
        """The lens of a tiny SmolLM2-shaped model with random weights (seeded; 4 blocks, a
        vocabulary of 12 letters), on two short prompts.

        >>> w = LogitLensView.example()
        >>> w.n_blocks, w.prompts
        (4, ['a b c', 'c a b b'])
        >>> w.block = 4
        >>> [token for token, _ in w.guesses] == w.final_guesses(0)
        True
        """
        import torch

        from ..pretrained.logit_lens import logit_lens
        from ..pretrained.smollm2 import SmolLM2, SmolLM2Config

        letters = "abcdefghijkl"
        cfg = SmolLM2Config(n_layers=4, d_model=16, n_heads=2, n_kv_heads=1, d_ff=32, vocab_size=12)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = SmolLM2(cfg).eval()
        examples = []
        for prompt in ("a b c", "c a b b"):
            ids = torch.tensor([[letters.index(c) for c in prompt.split()]])  # (1, T)
            lens = logit_lens(model, ids, k=3)
            examples.append(
                {
                    "prompt": prompt,
                    "norms": lens.norms.numpy(),
                    "tokens": [[letters[int(i)] for i in row] for row in lens.top_ids],
                    "probs": lens.top_probs.numpy(),
                }
            )
        return cls(examples, block=1)

    @property
    def n_blocks(self) -> int:
        """The number of blocks (the slider has one more position: the embedding)."""
        return len(self.tokens[0]) - 1

    @property
    def stream_norms(self) -> NDArray:
        """The shown prompt's stream lengths ``(n_blocks + 1,)`` as packed (1 decimal)."""
        packed = self.norms[self.prompt_index]
        return np.asarray(packed["data"], dtype=np.float64)

    @property
    def guesses(self) -> list[tuple[str, float]]:
        """The shown prompt's guesses after the shown block: ``(token, probability)`` pairs."""
        packed = self.probs[self.prompt_index]
        probs = np.asarray(packed["data"], dtype=np.float64).reshape(packed["shape"])
        row = self.tokens[self.prompt_index][self.block]
        return [(tok, float(p)) for tok, p in zip(row, probs[self.block], strict=True)]

    def final_guesses(self, prompt_index: int) -> list[str]:
        """The guesses after the last block (the model's own output) for one prompt."""
        return list(self.tokens[check_index(prompt_index, "prompt_index", len(self.prompts))][-1])
