"""The pictures of chapter 14 ("The attention atlas of 2026 models"), one function per idea.

Each function takes numbers the chapter has computed (with :mod:`course_utils.atlas` and
:mod:`course_utils.kv_cache`), draws one figure no wider than the book's column with no text under
:data:`course_utils.plotting.SMALL_FONT_PT`, and returns it; the notebook only calls it. Colours
are Okabe and Ito's (colour-blind safe), and every colour also has a text label or a hatch, so
nothing is told by colour alone. Labels go through :func:`course_utils.i18n.t`, so the 中文 edition
draws them in Chinese.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> fig = plot_router([0.1, 0.6, 0.2, 0.1], k=2)
>>> [round(float(p.get_height()), 2) for p in fig.axes[0].patches]  # the probabilities
[0.1, 0.6, 0.2, 0.1]
>>> plt.close(fig)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import as_float_array, check_int, shape_str
from ..i18n import t, t_literal
from ..plotting import OKABE_ITO, SMALL_FONT_PT, column_figsize

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, not by `import course_utils`
    from matplotlib.figure import Figure

__all__ = [
    "plot_gate",
    "plot_index_choice",
    "plot_interleave",
    "plot_linear_attention",
    "plot_router",
    "plot_sink_weights",
]

#: One colour (and one hatch, for print and colour-blind readers) per kind of layer, by the kinds
#: of :data:`course_utils.kv_cache.LAYER_KINDS`.
LAYER_STYLE = {
    "sliding": (OKABE_ITO["sky blue"], "", "local (sliding window)"),
    "full": (OKABE_ITO["vermillion"], "//", "global (full attention)"),
    "deltanet": (OKABE_ITO["bluish green"], "..", "linear (Gated DeltaNet)"),
}
#: ``config.layer_types`` of ``transformers`` names the same kinds otherwise.
_HF_KINDS = {
    "sliding_attention": "sliding",
    "full_attention": "full",
    "linear_attention": "deltanet",
}
_LINE_STYLES = ("-", "--", ":", "-.")
_LINE_COLOURS = ("vermillion", "blue", "bluish green", "reddish purple")


def _figure(height: float, n_axes: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    import matplotlib.pyplot as plt

    return plt.subplots(1, n_axes, figsize=column_figsize(height), **kwargs)


def _vector(values: Any, name: str) -> np.ndarray:
    v = as_float_array(values, name)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} has shape {shape_str(v.shape)}, expected a non-empty 1-D array")
    return v


def _growth(ax: Any, contexts: np.ndarray, series: Mapping[str, Any], ylabel: str) -> None:
    """Log-log lines, one per series, each with its own colour and line style and a legend."""
    for i, (label, values) in enumerate(series.items()):
        y = _vector(values, f"series[{label!r}]")
        if y.shape != contexts.shape:
            raise ValueError(
                f"series[{label!r}] has {y.size} values, expected one per context ({contexts.size})"
            )
        colour = OKABE_ITO[_LINE_COLOURS[i % len(_LINE_COLOURS)]]
        ax.loglog(contexts, y, _LINE_STYLES[i % len(_LINE_STYLES)], color=colour, lw=2, label=label)
    ax.set_xlabel(t("context T (tokens)"))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=SMALL_FONT_PT)


def plot_interleave(
    kinds: Sequence[str],
    contexts: Any,
    series: Mapping[str, Any],
    *,
    window: int,
) -> Figure:
    """Top: the layers of a model as a strip of cells, one per layer, by kind (``kinds`` holds
    :meth:`~course_utils.model_configs.ModelConfig.layer_kinds` or ``config.layer_types``).
    Bottom: the KV cache held against the context, one line per entry of ``series`` (already
    computed: tokens held, summed over the layers, at each context of ``contexts``), with the
    window marked.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_interleave(["sliding"] * 5 + ["full"], [1, 10],
    ...                       {"all global": [6, 60], "5:1": [6, 15]}, window=3)
    >>> len(fig.axes[0].patches)                            # one cell per layer
    6
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    kinds = [_HF_KINDS.get(k, k) for k in kinds]
    unknown = sorted({k for k in kinds if k not in LAYER_STYLE})
    if not kinds or unknown:
        raise ValueError(f"kinds must be layer kinds among {list(LAYER_STYLE)}; got {unknown}")
    window = check_int(window, "window", low=1)
    x = _vector(contexts, "contexts")
    fig = plt.figure(figsize=column_figsize(4.2))
    strip = fig.add_axes((0.08, 0.84, 0.88, 0.08))
    for i, kind in enumerate(kinds):
        colour, hatch, _ = LAYER_STYLE[kind]
        strip.add_patch(
            plt.Rectangle((i, 0), 0.9, 1, facecolor=colour, hatch=hatch, edgecolor="black", lw=0.5)
        )
    strip.set(xlim=(0, len(kinds)), ylim=(0, 1), yticks=[])
    strip.set_xlabel(t("layer"), fontsize=SMALL_FONT_PT)
    strip.tick_params(labelsize=SMALL_FONT_PT)
    handles = [
        plt.Rectangle((0, 0), 1, 1, facecolor=c, hatch=h, edgecolor="black", label=t_literal(label))
        for kind, (c, h, label) in LAYER_STYLE.items()
        if kind in kinds
    ]
    strip.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.05),
        ncol=len(handles),
        fontsize=SMALL_FONT_PT,
        frameon=False,
    )
    ax = fig.add_axes((0.12, 0.1, 0.84, 0.56))
    _growth(ax, x, series, t("tokens held in the KV cache"))
    ax.axvline(window, color="grey", ls=":", lw=1)
    ax.annotate(
        t("window = {window}", window=window),
        (window, ax.get_ylim()[1]),
        xytext=(4, -12),
        textcoords="offset points",
        fontsize=SMALL_FONT_PT,
    )
    return fig


def plot_sink_weights(plain: Any, with_sink: Any, sink_share: float) -> Figure:
    """One query's attention weights over its keys without a sink (``plain``) and with a learned
    sink (``with_sink``), side by side; a last bar shows the share the sink took (it has no value,
    so that share of the output is simply missing).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_sink_weights([0.5, 0.5], [0.25, 0.25], 0.5)
    >>> len(fig.axes[0].patches)                            # 2 + 2 bars, and the sink's
    5
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    a, b = _vector(plain, "plain"), _vector(with_sink, "with_sink")
    if a.shape != b.shape:
        raise ValueError(f"plain has {a.size} weights and with_sink {b.size}, expected the same")
    fig, ax = _figure(3.0)
    keys = np.arange(a.size)
    ax.bar(keys - 0.2, a, 0.4, color=OKABE_ITO["blue"], label=t("softmax over the keys"))
    ax.bar(
        keys + 0.2,
        b,
        0.4,
        color=OKABE_ITO["orange"],
        hatch="//",
        edgecolor="black",
        lw=0.5,
        label=t("with a learned sink"),
    )
    ax.bar(
        a.size + 0.2,
        sink_share,
        0.4,
        color="white",
        hatch="xx",
        edgecolor=OKABE_ITO["vermillion"],
        label=t("the sink's share (no value)"),
    )
    ax.set_xticks([*keys, a.size + 0.2], [str(k) for k in keys] + [t("sink")])
    ax.set(xlabel=t("key position"), ylabel=t("attention weight"), ylim=(0, 1))
    ax.legend(fontsize=SMALL_FONT_PT)
    fig.tight_layout()
    return fig


def plot_gate(gate: Any) -> Figure:
    """The output gate ``sigmoid(x W_gate)`` of gated attention as a heatmap, tokens down and
    output channels across (every value is in (0, 1): each channel is scaled, never amplified).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_gate([[0.1, 0.9], [0.5, 0.5]])
    >>> fig.axes[0].images[0].get_array().shape
    (2, 2)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    g = as_float_array(gate, "gate")
    if g.ndim != 2:
        raise ValueError(f"gate has shape {shape_str(g.shape)}, expected (T, channels)")
    fig, ax = _figure(2.6)
    image = ax.imshow(g, cmap="cividis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set(xlabel=t("output channel (head by head)"), ylabel=t("token"))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label=t("gate value"))
    fig.tight_layout()
    return fig


def plot_linear_attention(
    contexts: Any,
    series: Mapping[str, Any],
    n_pairs: Any,
    recall_error: Any,
    *,
    d_k: int,
) -> Figure:
    """Left: what one layer keeps against the context (``series``: numbers held at each context
    of ``contexts``), log-log. Right: how well a fixed state recalls ``n`` key -> value pairs
    written with the delta rule (``recall_error`` for each ``n`` of ``n_pairs``), with the key
    width ``d_k`` marked: past ``d_k`` keys cannot all be orthogonal, and the writes interfere.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_linear_attention([1, 10], {"KV": [2, 20], "state": [8, 8]}, [4, 8], [0, 0.5],
    ...                             d_k=4)
    >>> len(fig.axes)
    2
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    x = _vector(contexts, "contexts")
    n, err = _vector(n_pairs, "n_pairs"), _vector(recall_error, "recall_error")
    if n.shape != err.shape:
        raise ValueError(f"n_pairs has {n.size} values and recall_error {err.size}")
    d_k = check_int(d_k, "d_k", low=1)
    fig, (left, right) = _figure(3.2, 2)
    _growth(left, x, series, t("numbers kept by one layer"))
    left.set_title(t("memory against the context"), fontsize=10)
    right.plot(n, err, "o-", color=OKABE_ITO["blue"], lw=2)
    right.axvline(d_k, color="grey", ls=":", lw=1)
    right.annotate(
        t("d_k = {d_k}", d_k=d_k),
        (d_k, max(float(err.max()), 1e-9)),
        xytext=(4, -12),
        textcoords="offset points",
        fontsize=SMALL_FONT_PT,
    )
    right.set_xscale("log", base=2)
    right.set(xlabel=t("pairs written into the state"), ylabel=t("recall error (relative)"))
    right.set_title(t("a fixed state forgets"), fontsize=10)
    fig.tight_layout()
    return fig


def plot_index_choice(keep: Any) -> Figure:
    """DeepSeek Sparse Attention's choice for every query: ``keep`` ``(T, T)`` is ``True`` where
    the lightning indexer kept an earlier token; the causal triangle it chose from is drawn
    lighter, so what was dropped shows.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> fig = plot_index_choice(np.tril(np.ones((3, 3), dtype=bool)))
    >>> fig.axes[0].images[0].get_array().shape
    (3, 3)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    from matplotlib.colors import ListedColormap

    k = np.asarray(keep, dtype=bool)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"keep has shape {shape_str(k.shape)}, expected (T, T)")
    T = k.shape[0]
    causal = np.tril(np.ones((T, T), dtype=bool))
    if (k & ~causal).any():
        raise ValueError("keep marks a later token: the indexer only chooses earlier ones")
    level = np.where(k, 2, np.where(causal, 1, 0))  # 0 future, 1 dropped, 2 kept
    colours = ListedColormap(["white", OKABE_ITO["sky blue"], OKABE_ITO["blue"]])
    fig, ax = _figure(3.4, 1)
    ax.imshow(level, cmap=colours, vmin=0, vmax=2)
    ax.set(xlabel=t("key (earlier token)"), ylabel=t("query (token)"))
    handles = [
        _patch(OKABE_ITO["blue"], t("kept by the indexer (top-k)")),
        _patch(OKABE_ITO["sky blue"], t("causal, but dropped")),
    ]
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=SMALL_FONT_PT,
        frameon=False,
    )
    fig.tight_layout()
    return fig


def _patch(colour: Any, label: str, hatch: str = "") -> Any:
    import matplotlib.pyplot as plt

    return plt.Rectangle(
        (0, 0), 1, 1, facecolor=colour, hatch=hatch, edgecolor="black", lw=0.5, label=label
    )


def plot_router(probs: Any, k: int) -> Figure:
    """One token's router probabilities over the experts, the ``k`` highest hatched and labelled
    with their renormalised weights (what the chosen experts' outputs are multiplied by).

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_router([0.1, 0.6, 0.2, 0.1], k=2)
    >>> sorted(text.get_text() for text in fig.axes[0].texts)      # 0.6 / 0.8, 0.2 / 0.8
    ['0.25', '0.75']
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    p = _vector(probs, "probs")
    k = check_int(k, "k", low=1, high=p.size)
    top = np.argsort(-p, kind="stable")[:k]
    fig, ax = _figure(2.8)
    chosen = np.zeros(p.size, dtype=bool)
    chosen[top] = True
    for e in range(p.size):
        ax.bar(
            e,
            p[e],
            0.7,
            color=OKABE_ITO["orange"] if chosen[e] else OKABE_ITO["sky blue"],
            hatch="//" if chosen[e] else "",
            edgecolor="black",
            lw=0.5,
        )
    for e in top:
        ax.annotate(
            f"{p[e] / p[top].sum():.2f}",
            (e, p[e]),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=SMALL_FONT_PT,
        )
    ax.set(xlabel=t("expert"), ylabel=t("router probability"), ylim=(0, 1.2 * float(p.max())))
    ax.set_xticks(np.arange(p.size))
    ax.legend(
        handles=[
            _patch(OKABE_ITO["orange"], t("chosen (top-{k}): label = weight", k=k), "//"),
            _patch(OKABE_ITO["sky blue"], t("not run for this token")),
        ],
        fontsize=SMALL_FONT_PT,
    )
    fig.tight_layout()
    return fig
