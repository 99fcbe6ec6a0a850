"""Ways to say which tokens a prediction rests on, and ways to check them.

* :func:`attention_rollout`: attention weights followed through every layer (Abnar & Zuidema 2020);
* :func:`attention_flow`: the same graph read as a flow network, the maximum flow from each input
  token to each output (their second method);
* :func:`gradient_x_input`: the gradient of a score times the input, summed per token;
* :func:`integrated_gradients`: the gradient averaged along the line from a baseline to the input,
  times the difference (Sundararajan et al. 2017);
* :func:`eraser_faithfulness`: ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020),
  and :func:`classifier_eraser` for the chapter's classifier;
* :func:`ablate`: remove tokens and see the prediction change (the check: an explanation should
  name the tokens whose removal matters);
* :func:`top_k_precision` and :func:`bootstrap_ci`: overlap with the ground truth, and its spread
  over sentences.

>>> import numpy as np
>>> top_k_precision(np.array([0.1, 0.7, 0.2]), np.array([False, True, False]))
1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor

from .._validation import as_float_array, check_int, shape_str
from .classifier import TrainResult, make_batch, one_thread
from .dataset import TopicSentence

__all__ = [
    "ERASER_BINS",
    "NOISE_FLOOR",
    "AblationResult",
    "ablate",
    "ablation_study",
    "attention_flow",
    "attention_rollout",
    "bootstrap_ci",
    "classifier_eraser",
    "classifier_gradient_x_input",
    "classifier_integrated_gradients",
    "eraser_faithfulness",
    "gradient_x_input",
    "input_gradient",
    "integrated_gradients",
    "residual_attention",
    "top_fraction_masks",
    "top_k_precision",
    "without_rounding_noise",
]


def attention_rollout(maps: Any, *, residual: float = 0.5) -> NDArray[np.float64]:
    """Attention rollout (Abnar & Zuidema 2020) of ``(L, H, T, T)`` maps: a ``(T, T)`` matrix.

    The variant of the paper's Eq. (1) with heads averaged:

    1. average the heads of layer ``l``: ``W_l = mean_h maps[l, h]``;
    2. account for the residual connection: ``A_l = residual · I + (1 − residual) · W_l`` (the
       paper uses ``0.5 W + 0.5 I``), then divide each row by its sum (a no-op when the rows of
       ``maps`` sum to 1; kept so that the definition is the paper's);
    3. multiply through the layers, the last on the left: ``R = A_{L-1} ⋯ A_1 A_0``.

    Row ``i`` of ``R`` says how much token ``i`` at the top "draws from" each input token, if
    information moved only along attention weights and the residual path (value vectors and the
    feed-forward layers are ignored: it is an approximation, not a measurement of the model).
    ``maps`` is what :func:`course_utils.pretrained.attention_maps` returns.

    By hand: ``A_0 = ½I + ½[[1, 0], [½, ½]] = [[1, 0], [¼, ¾]]``,
    ``A_1 = ½I + ½[[0, 1], [0, 1]] = [[½, ½], [0, 1]]``, and ``R = A_1 A_0``:

    >>> A0 = [[1.0, 0.0], [0.5, 0.5]]
    >>> A1 = [[0.0, 1.0], [0.0, 1.0]]
    >>> attention_rollout(np.array([[A0], [A1]]))   # (L=2, H=1, T=2, T=2)
    array([[0.625, 0.375],
           [0.25 , 0.75 ]])
    """
    layers = residual_attention(maps, residual=residual)  # (L, T, T)
    rollout = np.eye(layers.shape[-1])  # (T, T)
    for A in layers:
        rollout = A @ rollout  # (T, T): this layer on the left of the layers below it
    return rollout


def residual_attention(maps: Any, *, residual: float = 0.5) -> NDArray[np.float64]:
    """The ``(L, T, T)`` matrices rollout and flow follow: heads averaged, residual added.

    ``A_l = residual · I + (1 − residual) · mean_h maps[l, h]``, each row divided by its sum:
    steps 1 and 2 of :func:`attention_rollout`, shared with :func:`attention_flow` so that both
    read the same graph. ``A_l[i, j]`` is how much token ``i`` above layer ``l`` takes from token
    ``j`` below it.

    >>> residual_attention(np.array([[[[1.0, 0.0], [0.5, 0.5]]]]))   # (L=1, H=1, T=2, T=2)
    array([[[1.  , 0.  ],
            [0.25, 0.75]]])
    """
    if isinstance(maps, Tensor):
        maps = maps.detach().cpu().numpy()
    arr = as_float_array(maps, "maps", min_ndim=4, expected="(L, H, T, T)").astype(np.float64)
    if arr.ndim != 4 or arr.shape[-1] != arr.shape[-2] or 0 in arr.shape:
        raise ValueError(f"maps must have shape (L, H, T, T); got shape {shape_str(arr.shape)}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError("maps must hold attention weights: finite and >= 0")
    if not np.allclose(arr.sum(axis=-1), 1.0, atol=1e-3):
        raise ValueError("every row of maps must sum to 1 (attention weights over the keys)")
    if not 0.0 <= float(residual) <= 1.0:
        raise ValueError(f"residual must be in [0, 1]; got {residual!r}")
    eye = np.eye(arr.shape[-1])  # (T, T)
    A = residual * eye + (1.0 - residual) * arr.mean(axis=1)  # (L, T, T)
    return A / A.sum(axis=-1, keepdims=True)  # (L, T, T), rows sum to 1


def _max_flow(capacity: NDArray[np.float64], source: int, sink: int) -> float:
    """Edmonds–Karp: augment along shortest paths (breadth first) until none is left.

    Shortest augmenting paths bound the number of augmentations by ``V·E`` whatever the
    capacities (Edmonds & Karp 1972), so real-valued capacities terminate too; residual
    capacities below ``_FLOW_EPS`` count as used up, so rounding cannot make it loop.
    """
    left = capacity.copy()  # (V, V) residual capacities
    total = 0.0
    while True:
        parent = np.full(len(left), -1)
        parent[source] = source
        queue, head = [source], 0
        while head < len(queue) and parent[sink] < 0:
            u = queue[head]
            head += 1
            fresh = np.flatnonzero((left[u] > _FLOW_EPS) & (parent < 0))
            parent[fresh] = u
            queue.extend(fresh.tolist())
        if parent[sink] < 0:
            return total
        path = [sink]
        while path[-1] != source:
            path.append(int(parent[path[-1]]))
        edges = list(zip(path[1:], path[:-1], strict=True))  # (u, v) pairs, sink end first
        push = min(left[u, v] for u, v in edges)
        for u, v in edges:
            left[u, v] -= push
            left[v, u] += push
        total += push


_FLOW_EPS = 1e-12


def attention_flow(
    maps: Any, *, residual: float = 0.5, outputs: Sequence[int] | None = None
) -> NDArray[np.float64]:
    """Attention flow (Abnar & Zuidema 2020): the maximum flow from each input token to each output.

    The graph has a node per token per layer boundary, ``(L + 1)·T`` nodes; an edge runs from
    token ``j`` below layer ``l`` to token ``i`` above it with capacity ``A_l[i, j]``
    (:func:`residual_attention`, the same matrices rollout multiplies). ``flow[i, j]`` is the
    maximum flow from input ``j`` (bottom) to output ``i`` (top). Rollout adds up *products*
    along every path; flow asks how much can pass through the narrowest cut.

    Two bounds follow (``tests/test_topic_focus.py`` checks both): the rollout's paths, each
    carrying the product of its capacities, are themselves a feasible flow (an edge carries at
    most ``upstream · A_l[i, j] · downstream ≤ A_l[i, j]``, since every partial product of
    row-stochastic matrices is at most 1), so ``rollout ≤ flow``; and all that reaches output
    ``i`` enters through its incoming edges, whose capacities sum to 1, so ``flow ≤ 1``.
    ``outputs`` restricts the rows (e.g. ``[0]`` for ``[CLS]``): each entry is one max-flow
    problem, so ``T`` outputs cost ``T²`` of them.

    By hand, one layer: the only path is the edge itself, so the flow is ``A_0``:

    >>> attention_flow(np.array([[[[1.0, 0.0], [0.5, 0.5]]]]))   # (L=1, H=1, T=2, T=2)
    array([[1.  , 0.  ],
           [0.25, 0.75]])
    """
    layers = residual_attention(maps, residual=residual)  # (L, T, T)
    L, T, _ = layers.shape
    rows = list(range(T)) if outputs is None else list(outputs)
    for i in rows:
        check_int(i, "outputs[...]", low=0, high=T - 1)
    capacity = np.zeros(((L + 1) * T, (L + 1) * T))  # (V, V): node l·T + t
    for layer, A in enumerate(layers):
        below, above = layer * T, (layer + 1) * T
        capacity[below : below + T, above : above + T] = A.T  # (T, T): from j below to i above
    flow = np.zeros((len(rows), T))  # (outputs, T)
    for r, i in enumerate(rows):
        for j in range(T):
            flow[r, j] = _max_flow(capacity, j, L * T + i)
    return flow


def input_gradient(score: Callable[[Tensor], Tensor], x: Any) -> Tensor:
    """``∂score/∂x`` for an input ``x`` of shape ``(T, d)``; ``score(x)`` returns one number.

    >>> input_gradient(lambda x: (x**2).sum(), torch.tensor([[1.0, -2.0]]))
    tensor([[ 2., -4.]])
    """
    if not isinstance(x, Tensor):
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x must be a floating (T, d) tensor; got shape {tuple(x.shape)}")
    x = x.detach().clone().requires_grad_(True)  # (T, d)
    out = score(x)
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise ValueError("score(x) must return a scalar tensor (one number)")
    (grad,) = torch.autograd.grad(out.reshape(()), x)  # (T, d)
    return grad


def gradient_x_input(score: Callable[[Tensor], Tensor], x: Any) -> Tensor:
    """Gradient × input per token: ``Σ_d x[t, d] · ∂score/∂x[t, d]`` for ``x`` of shape ``(T, d)``.

    ``score(x)`` must return a scalar tensor. For a linear score ``f(x) = Σ w·x + b`` the entries
    add up exactly to ``f(x) − f(0)``, the change from an all-zero input (the baseline); for a
    non-linear model they are a first-order estimate of that change, no more (Shrikumar et al.
    2017 discuss the method and its limits).

    >>> w = torch.tensor([[1.0, 2.0], [0.0, -1.0]])
    >>> x = torch.tensor([[3.0, 1.0], [2.0, 2.0]])
    >>> gradient_x_input(lambda x: (w * x).sum() + 7.0, x)
    tensor([ 5., -2.])
    """
    if not isinstance(x, Tensor):
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    grad = input_gradient(score, x)  # (T, d); validates x
    return (grad * x.detach()).sum(dim=-1)  # (T,)


def integrated_gradients(
    score: Callable[[Tensor], Tensor], x: Any, baseline: Any | None = None, *, steps: int = 50
) -> Tensor:
    """Integrated gradients (Sundararajan et al. 2017) per token of an input ``x`` ``(T, d)``.

    ``IG_t = Σ_d (x − x')[t, d] · (1/m) Σ_{k=1..m} ∂score/∂x[t, d] at x' + (k/m)(x − x')``: the
    paper's Riemann sum (their Eq. 3) of the gradient along the straight line from the
    ``baseline`` ``x'`` (zeros by default) to ``x``, with ``m = steps``. ``score`` takes a batch
    ``(m, T, d)`` of points on the line and returns their ``(m,)`` scores, so one backward pass
    serves every step. Completeness: the entries add up to ``score(x) − score(x')`` as ``m``
    grows (exactly, for any ``m``, when the score is linear; the error of this right-hand sum
    shrinks like ``1/m``).

    >>> w = torch.tensor([[1.0, 2.0], [0.0, -1.0]])
    >>> x = torch.tensor([[3.0, 1.0], [2.0, 2.0]])
    >>> integrated_gradients(lambda xs: (w * xs).sum(dim=(1, 2)), x, steps=4)  # linear: w·x
    tensor([ 5., -2.])
    """
    if not isinstance(x, Tensor):
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x must be a floating (T, d) tensor; got shape {tuple(x.shape)}")
    x = x.detach()
    if baseline is None:
        base = torch.zeros_like(x)  # (T, d)
    else:
        base = torch.as_tensor(baseline, dtype=x.dtype).detach()
        if base.shape != x.shape:
            raise ValueError(
                f"baseline must have the shape of x, {tuple(x.shape)}; got {tuple(base.shape)}"
            )
    steps = check_int(steps, "steps", low=1)
    alphas = torch.arange(1, steps + 1, dtype=x.dtype) / steps  # (m,): k/m, k = 1..m
    line = (base + alphas[:, None, None] * (x - base)).requires_grad_(True)  # (m, T, d)
    out = score(line)
    if not isinstance(out, Tensor) or out.shape != (steps,):
        raise ValueError(
            f"score must return a ({steps},) tensor, one score per point of the line; got "
            f"{tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__}"
        )
    (grads,) = torch.autograd.grad(out.sum(), line)  # (m, T, d): points do not interact
    return ((x - base) * grads.mean(dim=0)).sum(dim=-1)  # (T,)


def _check_pair(scores: Any, is_topic: Any) -> tuple[NDArray, NDArray[np.bool_]]:
    s = as_float_array(scores, "scores", min_ndim=1, expected="(T,)")
    m = np.asarray(is_topic)
    if s.ndim != 1 or m.shape != s.shape:
        raise ValueError(
            f"scores and is_topic must both have shape (T,); got {shape_str(s.shape)} and "
            f"{shape_str(m.shape)}"
        )
    if m.dtype != np.bool_:
        raise TypeError(f"is_topic must be a bool array; got dtype {m.dtype}")
    return s, m


def top_k_precision(
    scores: Any, is_topic: Any, k: int | None = None, *, candidates: Any | None = None
) -> float:
    """Fraction of the ``k`` highest-scoring candidate tokens that are topic tokens.

    ``k`` defaults to the number of topic tokens among the candidates (so a perfect ranking scores
    1). ``candidates`` (bool ``(T,)``) excludes tokens from the ranking, e.g. ``[CLS]``/``[SEP]``.
    Ties go to the earlier token. A random ranking scores ``n_topic / n_candidates`` on average.

    >>> top_k_precision([0.5, 0.3, 0.1, 0.1], np.array([False, True, True, False]), k=2)
    0.5
    >>> top_k_precision([9.0, 0.3, 0.1], np.array([False, True, False]),
    ...                 candidates=np.array([False, True, True]))
    1.0
    """
    s, m = _check_pair(scores, is_topic)
    c = np.ones_like(m) if candidates is None else np.asarray(candidates)
    if c.shape != m.shape or c.dtype != np.bool_:
        raise ValueError(f"candidates must be a bool array of shape {shape_str(m.shape)}")
    idx = np.flatnonzero(c)  # candidate positions
    n_topic = int(m[idx].sum())
    k = n_topic if k is None else k
    k = check_int(k, "k", low=1, high=len(idx))  # at most the number of candidates
    order = idx[np.argsort(-s[idx], kind="stable")]  # candidates, best first
    return float(m[order[:k]].mean())


def bootstrap_ci(
    values: Any, *, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``values`` and a percentile bootstrap confidence interval: ``(mean, low, high)``.

    Resamples the values (one per sentence) with replacement ``n_boot`` times with a seeded
    generator (Efron & Tibshirani 1993), so the interval is the same on every run.

    >>> bootstrap_ci([1.0, 1.0, 1.0])
    (1.0, 1.0, 1.0)
    """
    v = as_float_array(values, "values", min_ndim=1, expected="(n,)")
    if v.ndim != 1 or v.size < 1 or not np.isfinite(v).all():
        raise ValueError(f"values must be a non-empty finite 1-D array; got {shape_str(v.shape)}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)  # (n_boot,)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(v.mean()), float(low), float(high)


# --- the attention-pooling classifier ---------------------------------------------------------


def ablate(result: TrainResult, sentence: TopicSentence, remove: Any) -> NDArray[np.float64]:
    """Class probabilities of the classifier without the tokens in ``remove``.

    ``remove`` is a bool ``(T,)`` over the sentence's tokens, or ``(R, T)`` for ``R`` removals at
    once (result ``(R, n_topics)``). Removed tokens get exactly zero attention weight, as if they
    had not been written; removing nothing gives the original prediction exactly.
    """
    batch = make_batch([sentence], result.vocab)
    T = int(batch.mask.sum())
    r = np.asarray(remove)
    if r.dtype != np.bool_ or r.ndim not in (1, 2) or r.shape[-1] != T:
        raise ValueError(
            f"remove must be a bool array of shape ({T},) or (R, {T}) (one entry per token); "
            f"got {shape_str(r.shape)} of dtype {r.dtype}"
        )
    rows = r.reshape(-1, T)  # (R, T)
    keep = ~torch.from_numpy(rows)  # (R, T)
    ids = batch.ids.expand(len(rows), T)  # (R, T)
    with torch.no_grad():
        logits, _ = result.model(ids, keep)  # (R, C)
    probs = torch.softmax(logits.double(), dim=-1).numpy()  # (R, C)
    return probs[0] if r.ndim == 1 else probs


def classifier_gradient_x_input(
    result: TrainResult, sentence: TopicSentence, target: int | None = None
) -> NDArray[np.float64]:
    """Gradient × input ``(T,)`` of the classifier on one sentence.

    The score is the target class's logit minus the mean logit (the margin that softmax sees);
    ``target`` defaults to the predicted class. The input is the token embeddings; the baseline
    is the zero vector.
    """
    x, margins = _classifier_margins(result, sentence, target)  # (T, d_model)
    g = gradient_x_input(lambda x: margins(x[None])[0], x).double().numpy()  # (T,)
    return without_rounding_noise(g)


#: A float32 attribution smaller than this fraction of the sentence's largest is rounding noise.
NOISE_FLOOR = 1e-6


def without_rounding_noise(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """``scores`` with every entry under ``NOISE_FLOOR`` times the largest magnitude set to 0.

    A word the classifier's pooling ignores gets a gradient that is float32 rounding noise
    (1e-9, 1e-19, ... beside a largest score near 10). Its value, and so its place in a ranking
    and in a top-k pick, would change with the CPU and its kernels; as exact zeros, such words tie
    and ties go to the earlier word, on every machine.

    >>> without_rounding_noise(np.array([3e-9, 2.0, -1e-19, -0.5, 1e-3])).tolist()
    [0.0, 2.0, 0.0, -0.5, 0.001]
    """
    floor = NOISE_FLOOR * float(np.abs(scores).max(initial=0.0))
    return np.where(np.abs(scores) < floor, 0.0, scores)  # (T,)


def _classifier_margins(
    result: TrainResult, sentence: TopicSentence, target: int | None
) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
    """The sentence's embeddings ``(T, d_model)`` and the score the attributions explain: for a
    batch ``(m, T, d_model)`` of embeddings, the target's logit minus the mean logit ``(m,)``."""
    batch = make_batch([sentence], result.vocab)
    model = result.model
    with torch.no_grad():
        logits, _ = model(batch.ids, batch.mask)  # (1, C)
    c = int(logits.argmax()) if target is None else int(target)

    def margins(xs: Tensor) -> Tensor:
        mask = batch.mask.expand(len(xs), -1)  # (m, T)
        out, _ = model.forward_embeddings(xs, mask)  # (m, C)
        return out[:, c] - out.mean(dim=1)  # (m,)

    return model.embed(batch.ids)[0].detach(), margins


def classifier_integrated_gradients(
    result: TrainResult, sentence: TopicSentence, target: int | None = None, *, steps: int = 32
) -> NDArray[np.float64]:
    """Integrated gradients ``(T,)`` of the classifier on one sentence, from all-zero embeddings.

    The same score as :func:`classifier_gradient_x_input` (the target's logit minus the mean
    logit; ``target`` defaults to the predicted class) and the same zero baseline, so the two
    differ only in where the gradient is taken: at the input, or averaged along the line to it.
    """
    x, margins = _classifier_margins(result, sentence, target)  # (T, d_model)
    ig = integrated_gradients(margins, x, steps=steps).double().numpy()  # (T,)
    return without_rounding_noise(ig)


#: ERASER's bins: the top 1 %, 5 %, 10 %, 20 % and 50 % of the tokens (DeYoung et al. 2020).
ERASER_BINS = (0.01, 0.05, 0.1, 0.2, 0.5)


def top_fraction_masks(scores: Any, fractions: Sequence[float] = ERASER_BINS) -> NDArray[np.bool_]:
    """``(B, T)`` bool: row ``b`` marks the ``ceil(fractions[b] · T)`` highest-scoring tokens.

    At least one token per bin (1 % of a 10-token sentence is still one word, our choice for
    short sentences); ties go to the earlier token.

    >>> top_fraction_masks([0.1, 0.7, 0.2, 0.0], (0.25, 0.5))
    array([[False,  True, False, False],
           [False,  True,  True, False]])
    """
    s = as_float_array(scores, "scores", min_ndim=1, expected="(T,)")
    if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all():
        raise ValueError(f"scores must be a non-empty finite (T,) array; got {shape_str(s.shape)}")
    f = as_float_array(fractions, "fractions", min_ndim=1, expected="(B,)")
    if f.ndim != 1 or f.size == 0 or not ((f > 0) & (f <= 1)).all():
        raise ValueError(
            f"fractions must be a non-empty list of numbers in (0, 1]; got {fractions!r}"
        )
    order = np.argsort(-s, kind="stable")  # (T,) best first
    counts = np.clip(np.ceil(f * s.size - 1e-9).astype(int), 1, s.size)  # (B,)
    masks = np.zeros((f.size, s.size), dtype=bool)  # (B, T)
    for b, k in enumerate(counts):
        masks[b, order[:k]] = True
    return masks


def eraser_faithfulness(p_full: Any, p_without: Any, p_only: Any) -> tuple[float, float]:
    """ERASER's comprehensiveness and sufficiency, averaged over the bins (AOPC): ``(comp, suff)``.

    For the class ``c`` predicted on the whole input (DeYoung et al. 2020, section 4):
    comprehensiveness is ``p(c | x) − p(c | x without the rationale)`` (high: removing the
    rationale hurts), sufficiency is ``p(c | x) − p(c | the rationale alone)`` (low: the rationale
    alone keeps the prediction). With a rationale at several sizes (bins), each is averaged over
    the bins, their AOPC ("area over the perturbation curve"). ``p_full`` is ``(C,)``; ``p_without``
    and ``p_only`` are ``(B, C)``, one row per bin.

    >>> eraser_faithfulness([0.9, 0.1], [[0.6, 0.4], [0.2, 0.8]], [[0.8, 0.2], [0.9, 0.1]])
    (0.5, 0.05)
    """
    full = as_float_array(p_full, "p_full", min_ndim=1, expected="(C,)")
    if full.ndim != 1 or full.size < 2:
        raise ValueError(
            f"p_full must be a (C,) array of C >= 2 probabilities; got {shape_str(full.shape)}"
        )
    arrays = []
    for name, value in (("p_without", p_without), ("p_only", p_only)):
        arr = as_float_array(value, name, min_ndim=2, expected=f"(B, {full.size})")
        if arr.ndim != 2 or arr.shape[1] != full.size or arr.shape[0] == 0:
            raise ValueError(
                f"{name} must have shape (B, {full.size}), one row per bin; got "
                f"{shape_str(arr.shape)}"
            )
        arrays.append(arr)
    without, only = arrays
    if without.shape != only.shape:
        raise ValueError(
            f"p_without and p_only must have the same bins; got {shape_str(without.shape)} and "
            f"{shape_str(only.shape)}"
        )
    for name, arr in (("p_full", full), ("p_without", without), ("p_only", only)):
        if (
            not np.isfinite(arr).all()
            or (arr < 0).any()
            or not np.allclose(arr.sum(-1), 1, atol=1e-6)
        ):
            raise ValueError(
                f"{name} must hold probabilities: finite, >= 0, summing to 1 over classes"
            )
    c = int(full.argmax())
    comp = float(np.mean(full[c] - without[:, c]))
    suff = float(np.mean(full[c] - only[:, c]))
    return round(comp, 12), round(suff, 12)


def classifier_eraser(
    result: TrainResult,
    sentence: TopicSentence,
    scores: Any,
    fractions: Sequence[float] = ERASER_BINS,
) -> tuple[float, float]:
    """Comprehensiveness and sufficiency (AOPC over ``fractions``) of ``scores`` ``(T,)`` on one
    sentence: the top tokens are removed (:func:`ablate`), or kept alone (everything else removed).
    """
    masks = top_fraction_masks(scores, fractions)  # (B, T)
    probs = ablate(result, sentence, np.concatenate([np.zeros_like(masks[:1]), masks, ~masks]))
    B = len(masks)
    return eraser_faithfulness(probs[0], probs[1 : 1 + B], probs[1 + B :])


@dataclass(frozen=True)
class AblationResult:
    """Per-sentence drops in the probability of the predicted class after removing ``k`` tokens."""

    k: int
    drop_attention: NDArray  # (N,) remove the k tokens with the most attention weight
    drop_gradient: NDArray  # (N,) remove the k tokens with the largest gradient × input
    drop_random: NDArray  # (N,) remove k random tokens (mean over the draws)
    flip_attention: NDArray  # (N,) bool: the predicted class changed
    flip_gradient: NDArray  # (N,)
    flip_random: NDArray  # (N,) fraction of draws whose predicted class changed


def ablation_study(
    result: TrainResult,
    sentences: Sequence[TopicSentence],
    k: int,
    *,
    n_random: int = 10,
    seed: int = 0,
) -> AblationResult:
    """Remove the top-``k`` words by attention, by gradient × input, and ``k`` random words.

    For each sentence with more than ``k`` tokens (shorter ones are skipped, since removing every
    word says nothing), record the drop of the predicted class's probability and whether the
    predicted class changed. Random removals use ``n_random`` seeded draws per sentence.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1; got {k!r}")
    rng = np.random.default_rng(seed)
    rows: dict[str, list[float]] = {key: [] for key in AblationResult.__dataclass_fields__}
    del rows["k"]
    with one_thread():
        probs, weights = result.predict(sentences)  # (N, C), list of (T_i,)
        for s, p, w in zip(sentences, probs, weights, strict=True):
            T = len(w)
            if k >= T:
                continue
            c = int(p.argmax())
            grad = classifier_gradient_x_input(result, s, target=c)  # (T,)
            masks = np.zeros((2 + n_random, T), dtype=bool)  # (R, T): attention, gradient, random
            for row, ranking in enumerate((w, grad)):
                masks[row, np.argsort(-ranking, kind="stable")[:k]] = True
            for row in range(2, 2 + n_random):
                masks[row, rng.choice(T, size=k, replace=False)] = True
            q = ablate(result, s, masks)  # (R, C)
            drop = p[c] - q[:, c]  # (R,)
            flip = (q.argmax(axis=1) != c).astype(float)  # (R,)
            rows["drop_attention"].append(drop[0])
            rows["flip_attention"].append(flip[0])
            rows["drop_gradient"].append(drop[1])
            rows["flip_gradient"].append(flip[1])
            rows["drop_random"].append(float(drop[2:].mean()))
            rows["flip_random"].append(float(flip[2:].mean()))
    return AblationResult(k=k, **{key: np.asarray(v) for key, v in rows.items()})
