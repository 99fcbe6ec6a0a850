"""Chapter 7's decoding widget: a model's real next-token distribution under temperature, top-k
and top-p.

For each prompt the model's logits for the next token ``z`` (the whole vocabulary) are fixed.
Three sliders pick a temperature ``τ``, a ``top_k`` (or off) and a ``top_p`` (or off), and the
widget shows the distribution :func:`course_utils.causal.generate` samples from, in
transformers' order: ``softmax(top_p_filter(top_k_filter(z / τ, k), p))``. The ``n_top`` most
probable tokens are drawn (their order is the logits', so the same at every ``τ``); the tokens
the filters remove are greyed out, the kept ones get their renormalised probability.

Python precomputes every frame with the package's own :func:`~course_utils.causal.top_k_filter`,
:func:`~course_utils.causal.top_p_filter` and ``torch.softmax`` over the whole vocabulary:

- ``probs[prompt, τ]``: ``softmax(z / τ)`` of the ``n_top`` tokens drawn, before any filter;
- ``kept[prompt, τ, k, p]``: how many tokens survive both filters (of the whole vocabulary; the
  survivors are always the most probable ones, so the first ``min(kept, n_top)`` drawn);
- ``mass[prompt, τ, k, p]``: the probability they held before the filters.

JavaScript only looks up: a kept token's bar is ``probs / mass`` (the renormalisation); the test
``tests/test_widgets_next_token_filters.py`` holds that lookup, frame by frame, to the package's
filtered softmax.

>>> w = NextTokenFilters.example()
>>> w.top_k, w.top_p, w.temperature
(None, 0.9, 1.0)
>>> w.kept_count, round(w.kept_mass, 3)
(3, 0.901)
>>> w.k_index = w.top_ks.index(2)       # top-k = 2 first: then top-p keeps at most those two
>>> w.kept_count, w.shown_probabilities[:3].round(3)
(2, array([0.821, 0.179, 0.   ]))
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np
import torch
import traitlets
from numpy.typing import NDArray

from .._determinism import deterministic
from .._validation import check_int
from ..causal import top_k_filter, top_p_filter
from ._base import CourseWidget, check_tokens

__all__ = ["NextTokenFilters"]

DEFAULT_TEMPERATURES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
#: 0 stands for "no top-k filter"
DEFAULT_TOP_KS = (0, 1, 2, 3, 5, 10, 20, 40)
#: 1.0 stands for "no top-p filter" (generate's top_p=None)
DEFAULT_TOP_PS = (0.2, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
SIGNIFICANT = 5  # digits kept of each probability and mass: bars within 1e-4 of the exact ones


def _significant(x: NDArray) -> list[float]:
    """Numbers rounded to :data:`SIGNIFICANT` significant digits (small probabilities keep their
    relative precision, unlike a fixed number of decimals)."""
    return [float(f"{v:.{SIGNIFICANT}g}") for v in np.asarray(x, dtype=np.float64).ravel()]


def _visible(label: str) -> str:
    """A token's text with its spaces and line breaks made visible (a leading space matters)."""
    return label.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def _grid(values: Sequence[Any], name: str, ok: Callable[[Any], bool], want: str) -> list[Any]:
    values = list(values)
    if not 2 <= len(values) <= 12 or not all(ok(v) for v in values):
        raise ValueError(f"{name} must be 2 to 12 values, each {want}; got {values!r}")
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise ValueError(f"{name} must be increasing; got {values!r}")
    return values


class NextTokenFilters(CourseWidget):
    """Temperature, top-k and top-p over the next-token distributions of a few prompts.

    Parameters
    ----------
    prompts : list of str
        The prompts (1 to 4), shown as they are.
    logits : array_like, shape ``(n_prompts, vocab)``
        Each prompt's next-token logits, the whole vocabulary.
    labels : callable
        ``labels(token_id) -> str``: a readable label of a token (spaces are shown as ``␣``).
    temperatures, top_ks, top_ps : sequences
        The slider grids: temperatures > 0; ``top_ks`` ints >= 0, 0 meaning off; ``top_ps`` in
        ``(0, 1]``, 1 meaning off (no filter).
    n_top : int
        How many of the most probable tokens are drawn (2 to 40).
    """

    _widget_file = "next_token_filters"
    _default_title = "Which tokens survive temperature, top-k and top-p?"
    _default_description = (
        "Bars of a language model's probabilities for the next token after a prompt: the most "
        "probable tokens, those the filters remove greyed out, the kept ones renormalised."
    )

    # the controls: the prompt shown and a position on each slider's grid
    prompt_index = traitlets.Int(0).tag(sync=True)
    t_index = traitlets.Int(0).tag(sync=True)
    k_index = traitlets.Int(0).tag(sync=True)
    p_index = traitlets.Int(0).tag(sync=True)
    prompts = traitlets.List(traitlets.Unicode()).tag(sync=True)  # learner data
    labels = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)  # (n_prompts, n)
    temperatures = traitlets.List(traitlets.Float()).tag(sync=True)
    top_ks = traitlets.List(traitlets.Int()).tag(sync=True)  # 0: no top-k filter
    top_ps = traitlets.List(traitlets.Float()).tag(sync=True)  # 1.0: no top-p filter
    vocab_size = traitlets.Int(0).tag(sync=True)
    # probs (n_prompts, n_T, n_top); kept, mass (n_prompts, n_T, n_k, n_p): flat, row-major
    frames = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        prompts: Sequence[str],
        logits: Any,
        labels: Callable[[int], str],
        *,
        temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
        top_ks: Sequence[int] = DEFAULT_TOP_KS,
        top_ps: Sequence[float] = DEFAULT_TOP_PS,
        n_top: int = 40,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = 0.9,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        names = check_tokens(prompts, "prompts")
        if len(names) > 4:
            raise ValueError(f"prompts must be 1 to 4 prompts; got {len(names)}")
        z = torch.as_tensor(np.asarray(logits, dtype=np.float64))  # (n_prompts, vocab)
        if z.dim() != 2 or z.size(0) != len(names) or z.size(1) < 2:
            raise ValueError(
                f"logits must have shape (n_prompts, vocab) = ({len(names)}, vocab >= 2), one row "
                f"per prompt; got {tuple(z.shape)}"
            )
        if not torch.isfinite(z).all():
            raise ValueError("logits must be finite (the whole vocabulary, before any filter)")
        if not callable(labels):
            raise TypeError(
                f"labels must be a function token_id -> str; got {type(labels).__name__}"
            )
        n_top = check_int(n_top, "n_top", low=2, high=min(40, z.size(1)))
        temps = _grid(temperatures, "temperatures", lambda v: 0 < v < 100, "a number in (0, 100)")
        ks = _grid(top_ks, "top_ks", lambda v: isinstance(v, int) and v >= 0, "an int >= 0")
        ps = _grid(top_ps, "top_ps", lambda v: 0 < v <= 1, "a number in (0, 1]")
        self._logits = z
        self._order = z.topk(n_top, dim=-1).indices  # (n_prompts, n_top): the tokens drawn
        drawn = [[_visible(labels(int(i))) for i in row] for row in self._order]
        with self.hold_trait_notifications():
            self.prompts = names
            self.labels = [check_tokens(row, "labels") for row in drawn]
            self.temperatures = [float(v) for v in temps]
            self.top_ks = [int(v) for v in ks]
            self.top_ps = [float(v) for v in ps]
            self.vocab_size = int(z.size(1))
        self._recompute()
        self.t_index = self._position(self.temperatures, temperature, "temperature")
        self.k_index = self._position(self.top_ks, 0 if top_k is None else top_k, "top_k")
        self.p_index = self._position(self.top_ps, 1.0 if top_p is None else top_p, "top_p")

    @staticmethod
    def _position(grid: list[Any], value: Any, name: str) -> int:
        if value not in grid:
            raise ValueError(f"{name} = {value!r} is not on its slider's grid {grid}")
        return grid.index(value)

    @classmethod
    def from_model(cls, model: Any, prompts: Sequence[str], **kwargs: Any) -> Self:
        """The widget over ``model``'s next-token logits after each prompt (one forward pass
        each), labelled by ``model.tokenizer.token_label`` (SmolLM2's tokenizer).

        The passes run on a float64 copy of ``model``, on one thread (``model`` itself is left
        as it is). SmolLM2's float32 logits are up to 4.7e-5 away from a float64 pass (measured),
        and that rounding changes with the kernel set and the thread count: it moved some of the
        saved 5-digit probabilities each time the chapter ran on another machine. Float64's own
        rounding (about 1e-15) is far below the saved digits.
        """
        tok = model.tokenizer
        rows = []
        exact = copy.deepcopy(model).double()  # SmolLM2: 1.1 GB for the few passes below
        with torch.no_grad(), deterministic():
            for prompt in prompts:
                ids = torch.tensor([tok.encode(prompt)])  # (1, T)
                rows.append(exact(ids)[0, -1])  # (vocab,) float64: the next token's logits
        del exact
        return cls(prompts, torch.stack(rows), tok.token_label, **kwargs)

    @classmethod
    def example(cls) -> Self:
        """Two made-up distributions over twelve words (a Zipf-like fall of the logits, and a
        flatter one), so that it starts in a second without a model; chapter 7 uses SmolLM2's real
        ones.

        >>> w = NextTokenFilters.example()
        >>> w.labels[0][:3], w.vocab_size
        (['␣mat', '␣sofa', '␣floor'], 12)
        """
        words = [" mat", " sofa", " floor", " bed", " roof", " chair", " table", " box", " rug",
                 " moon", " idea", " seven"]  # fmt: skip
        rank = np.log(np.arange(1, len(words) + 1))  # (12,)
        sure = 4.0 - 2.2 * rank  # (12,): falling like Zipf's
        unsure = 1.0 - 0.4 * rank[::-1]  # (12,): flatter, another order
        return cls(
            ["the cat sat on the", "the dog slept under the"],
            np.stack([sure, unsure]),  # (2, 12): two prompts, so the prompt menu moves
            lambda i: words[i],
            n_top=12,
            title="A made-up next-token distribution under temperature, top-k and top-p",
        )

    _v_index = traitlets.validate("prompt_index", "t_index", "k_index", "p_index")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        sizes = {
            "prompt_index": self.prompts,
            "t_index": self.temperatures,
            "k_index": self.top_ks,
            "p_index": self.top_ps,
        }
        return len(sizes[name])

    def _filtered(self, prompt: int, t: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The logits of ``prompt`` divided by the temperature ``t`` and filtered by top-k ``k``
        (all indices into the grids), float64, ``(vocab,)`` each, as ``generate`` computes them."""
        scaled = self._logits[prompt] / self.temperatures[t]  # (vocab,) float64, as generate
        top_k = self.top_ks[k]
        return scaled, (top_k_filter(scaled, top_k) if top_k else scaled)

    def distribution(self, prompt: int, t: int, k: int, p: int) -> torch.Tensor:
        """The exact distribution ``generate`` samples from at these grid indices, ``(vocab,)``:
        ``softmax(top_p_filter(top_k_filter(z / τ, k), p))``."""
        _, by_k = self._filtered(prompt, t, k)
        top_p = self.top_ps[p]
        return torch.softmax(top_p_filter(by_k, top_p) if top_p < 1 else by_k, dim=-1)

    def _recompute(self) -> None:
        n_p, n_t = len(self.prompts), len(self.temperatures)
        n_k, n_pp = len(self.top_ks), len(self.top_ps)
        probs = np.zeros((n_p, n_t, self._order.size(1)))  # before the filters
        kept = np.zeros((n_p, n_t, n_k, n_pp), dtype=np.int64)
        mass = np.zeros((n_p, n_t, n_k, n_pp))
        for i in range(n_p):
            for t in range(n_t):
                before = torch.softmax(self._filtered(i, t, 0)[0], dim=-1)  # (vocab,)
                probs[i, t] = before[self._order[i]].numpy()
                rows = torch.stack([self._filtered(i, t, k)[1] for k in range(n_k)])  # (n_k, V)
                for p, top_p in enumerate(self.top_ps):
                    alive = torch.isfinite(top_p_filter(rows, top_p) if top_p < 1 else rows)
                    self._check_prefix(alive, i)
                    kept[i, t, :, p] = alive.sum(-1).numpy()
                    mass[i, t, :, p] = (before * alive).sum(-1).numpy()  # (n_k,)
        self.frames = {
            "probs": {"shape": list(probs.shape), "data": _significant(probs)},
            "kept": {"shape": list(kept.shape), "data": kept.ravel().tolist()},
            "mass": {"shape": list(mass.shape), "data": _significant(mass)},
        }
        self._check_budget("use fewer prompts, a coarser grid or fewer tokens drawn (n_top)")

    def _check_prefix(self, alive: torch.Tensor, prompt: int) -> None:
        """The drawing assumes the survivors are the most probable tokens drawn first; a tie among
        the drawn logits could break that (the filters then choose by position): say so."""
        drawn = alive[:, self._order[prompt]]  # (n_k, n_top)
        count = alive.sum(-1, keepdim=True).clamp(max=drawn.size(1))  # (n_k, 1)
        prefix = torch.arange(drawn.size(1))[None, :] < count  # (n_k, n_top)
        if not torch.equal(drawn, prefix):
            raise ValueError(
                f"the filters kept tokens of prompt {self.prompts[prompt]!r} out of the order of "
                "their logits (tied logits among the tokens drawn); choose another prompt"
            )

    _repr_format = "prompt={prompt!r}, temperature={temperature}, top_k={top_k}, top_p={top_p}"

    def _repr_values(self) -> dict[str, Any]:
        return {"prompt": self.prompts[self.prompt_index]}

    def _frame(self, name: str) -> float:
        packed = self.frames[name]
        shape = packed["shape"]
        flat = np.ravel_multi_index((self.prompt_index, self.t_index, self.k_index, self.p_index),
                                    shape)  # fmt: skip
        return packed["data"][flat]

    @property
    def temperature(self) -> float:
        """The temperature selected."""
        return self.temperatures[self.t_index]

    @property
    def top_k(self) -> int | None:
        """The top-k selected (``None``: off)."""
        return self.top_ks[self.k_index] or None

    @property
    def top_p(self) -> float | None:
        """The top-p selected (``None``: off)."""
        value = self.top_ps[self.p_index]
        return None if value == 1.0 else value

    @property
    def kept_count(self) -> int:
        """How many tokens of the whole vocabulary survive the filters selected."""
        return int(self._frame("kept"))

    @property
    def kept_mass(self) -> float:
        """The probability the survivors held before the filters (at the temperature selected)."""
        return float(self._frame("mass"))

    @property
    def shown_probabilities(self) -> NDArray[np.float64]:
        """What the bars show, computed from the frames as the JavaScript does: a drawn token's
        probability divided by the kept mass if it survives, else 0; ``(n_top,)``."""
        probs = np.asarray(self.frames["probs"]["data"]).reshape(self.frames["probs"]["shape"])
        row = probs[self.prompt_index, self.t_index]  # (n_top,)
        alive = np.arange(row.size) < self.kept_count
        return np.where(alive, row / self.kept_mass, 0.0)
