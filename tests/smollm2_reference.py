"""What our Python SmolLM2 says for a greedy run: the oracle of the browser path's tests.

The tokens come from :func:`course_utils.causal.generate` (its KV cache and fast path), with
:func:`~course_utils.pretrained.smollm2.knocked_out_heads` silencing heads when asked; the logits
and attention weights of every step come from one full pass over the prompt and the new tokens
(``return_weights=True``): step ``i``'s query is position ``T - 1 + i``. Much faster than asking
the step-by-step :func:`~course_utils.pretrained.smollm2.writer_steps` for weights at every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from course_utils.causal import generate
from course_utils.pretrained.smollm2 import SmolLM2, knocked_out_heads


@dataclass(frozen=True)
class GreedyRun:
    ids: list[int]  # the prompt's token ids
    tokens: list[int]  # the new tokens
    logits: np.ndarray  # (n_new, vocab) float32: what step i chose from
    maps: list[torch.Tensor]  # per layer (n_heads, N, N), N = T + n_new - 1

    def weights(self, step: int) -> np.ndarray:
        """The attention of step ``step``'s query over the tokens before it: (layers, heads, n)."""
        q = len(self.ids) - 1 + step
        return torch.stack([m[:, q, : q + 1] for m in self.maps]).numpy()


def greedy_run(
    model: SmolLM2, prompt: str, n_new: int, knockout: list[tuple[int, int]] | None = None
) -> GreedyRun:
    ids = model.tokenizer.encode(prompt)
    with knocked_out_heads(model, knockout or []), torch.no_grad():
        out = generate(model, torch.tensor([ids]), n_new)  # (1, T + n_new)
        logits, maps = model(out[:, :-1], return_weights=True)  # (1, T + n_new - 1, vocab)
    T = len(ids)
    return GreedyRun(
        ids=ids,
        tokens=out[0, T:].tolist(),
        logits=logits[0, T - 1 :].numpy(),
        maps=[m[0] for m in maps],
    )
