"""Pick a sentence, a layer and a head of all-MiniLM-L6-v2 and see that head's attention map.

Python runs the real model (:func:`course_utils.pretrained.attention_maps`, our own code) on each
sentence and syncs every map of every layer and head, as whole percentages (0-100) packed one
byte each (:func:`~course_utils.widgets._base.pack_uint8`, base64), so that the page can switch
sentence, layer and head without a kernel and three sentences fit the 50 KB budget of every widget.
JavaScript decodes each sentence once, builds its ``T × T`` grid once, and on a layer or head change
only recolours and relabels the cells. Each sentence's attention rollout
(:func:`course_utils.topic_focus.attention_rollout`, chapter 13) is synced the same way.

A text box lets the reader type a sentence of their own (at most ``MAX_BROWSER_TOKENS`` tokens):

* in JupyterLab, with a kernel, the typed text arrives in the trait ``sentence`` and Python runs the
  model on it (``custom`` holds its maps and rollout, ``custom_error`` the message when it is too
  long); :meth:`HeadExplorer.add_sentence` adds a sentence for good;
* on the static site, with no kernel, the page runs the same model in a Web Worker
  (:mod:`course_utils.pretrained.minilm_web`): the first edit downloads ``download_bytes`` of
  weights exported at build time (the size is stated on the button), and nothing before it.

>>> w = HeadExplorer(["The cat sat."], layer=0, head=2)
>>> w.tokens[0]
['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]']
>>> w.weights.shape      # the map on show: (T, T), rows sum to 1
(6, 6)
>>> w.weights.argmax(axis=1)[2:5].tolist()   # head 0-2 looks at the previous token
[1, 2, 3]
>>> from course_utils.widgets._base import unpack_array
>>> unpack_array(w.maps[0]).shape              # synced: (L, H, T, T) whole percentages
(6, 12, 6, 6)
>>> w.sentence = "Dogs bark."                   # what the text box does with a kernel
>>> w.custom["tokens"], unpack_array(w.custom["rollout"]).shape
(['[CLS]', 'dogs', 'bark', '.', '[SEP]'], (5, 5))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from ..i18n import t_literal
from ..pretrained.minilm_web import MAX_BROWSER_TOKENS, download_sizes
from ._base import CourseWidget, check_index, pack_uint8

__all__ = ["HeadExplorer", "too_long_message"]

MAX_TOKENS = 24
#: What to cut when the maps do not fit the shared budget (``MAX_STATE_BYTES``).
BUDGET_HINT = "use fewer or shorter sentences"
#: The drawings ``view`` chooses between (the JavaScript's menu says the same).
VIEWS = ("one head", "attention rollout")
#: Where the site's build puts the browser model, relative to the site's ``_static/`` folder.
WORKER_PATH = "minilm/worker.mjs"


def too_long_message(n_tokens: int, max_tokens: int = MAX_BROWSER_TOKENS) -> str:
    """The cap message (the same text as the JavaScript's ``TEXT.tooLong``).

    >>> too_long_message(70)
    'Your sentence has 70 tokens; at most 64 fit (with [CLS] and [SEP]). Please shorten it.'
    """
    return (
        f"Your sentence has {n_tokens} tokens; at most {max_tokens} fit (with [CLS] and [SEP]). "
        "Please shorten it."
    )


def _percent(x: NDArray) -> dict[str, Any]:
    return pack_uint8(np.rint(np.asarray(x, dtype=np.float64) * 100), "weights")


class HeadExplorer(CourseWidget):
    """Attention maps of every layer and head of the pretrained model, for a few sentences.

    Parameters
    ----------
    sentences : sequence of str
        The texts (each at most ``MAX_TOKENS`` tokens with ``[CLS]`` and ``[SEP]``).
    layer, head : int
        The map shown first (numbered from 0).
    notes : mapping ``(layer, head) -> str``, optional
        A line of text shown under the map for that head (e.g. what a measurement found).
    """

    _widget_file = "head_explorer"
    _default_description = (
        "Heatmap of one attention head: rows are query tokens, columns are key tokens, "
        "brighter cells get more weight. Choose a sentence, a layer and a head."
    )

    labels = traitlets.List(traitlets.Unicode()).tag(sync=True)  # one per sentence
    tokens = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)
    maps = traitlets.List(traitlets.Dict()).tag(sync=True)  # pack_uint8 of (L, H, T, T) in 0..100
    rollouts = traitlets.List(traitlets.Dict()).tag(sync=True)  # pack_uint8 of (T, T) in 0..100
    n_layers = traitlets.Int(0).tag(sync=True)
    n_heads = traitlets.Int(0).tag(sync=True)
    head_notes = traitlets.Dict().tag(sync=True)  # "layer-head" -> text
    sentence_index = traitlets.Int(0).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    #: What the drawing shows: 0 one head's map, 1 the attention rollout (all layers and heads).
    view = traitlets.Int(0).tag(sync=True)
    #: The reader's own sentence (the text box); with a kernel, Python runs the model on it.
    sentence = traitlets.Unicode("").tag(sync=True)
    #: Python's result for ``sentence``: {tokens, maps, rollout} (packed like ``maps``), or {}.
    custom = traitlets.Dict().tag(sync=True)
    custom_error = traitlets.Unicode("").tag(sync=True)
    max_tokens = traitlets.Int(MAX_BROWSER_TOKENS).tag(sync=True)
    #: Bytes the first edit downloads on the static site (stated on the button).
    download_bytes = traitlets.Int(0).tag(sync=True)
    worker_path = traitlets.Unicode(WORKER_PATH).tag(sync=True)

    def __init__(
        self,
        sentences: Sequence[str],
        *,
        layer: int = 0,
        head: int = 0,
        notes: dict[tuple[int, int], str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
            raise TypeError(
                f"sentences must be a non-empty list of str; got {type(sentences).__name__}"
            )
        self._full: list[NDArray] = []
        for text in sentences:
            self._append(text)
        self.n_layers, self.n_heads = self._full[0].shape[:2]
        for name, value, n in (("layer", layer, self.n_layers), ("head", head, self.n_heads)):
            check_index(value, name, n)
        self.layer, self.head = layer, head
        self.download_bytes = download_sizes("float16")["upfront_bytes"]
        self.head_notes = {
            f"{L}-{H}": t_literal(str(note)) for (L, H), note in (notes or {}).items()
        }
        self._check_budget(BUDGET_HINT)

    @classmethod
    def example(cls) -> Self:
        """Two of chapter 4's sentences through all-MiniLM-L6-v2 (the shipped model), showing head
        2 of layer 0, a head that looks at the previous token.

        >>> w = HeadExplorer.example()
        >>> len(w.labels), w.n_layers, w.n_heads
        (2, 6, 12)
        >>> w.tokens[1]
        ['[CLS]', 'snow', ',', 'snow', 'and', 'more', 'snow', '.', '[SEP]']
        >>> w.sentence_index = 1
        >>> w.weights.argmax(axis=1)[2:8].tolist()   # each word looks at the one before it
        [1, 2, 3, 4, 5, 6]
        """
        import torch

        with torch.random.fork_rng(devices=[]):  # loading the model draws initial weights
            return cls(
                ["The cat sat on the mat.", "Snow, snow and more snow."],
                layer=0,
                head=2,
                title="all-MiniLM-L6-v2: one head's attention map",
            )

    def _append(self, text: str) -> None:
        from ..pretrained import attention_maps
        from ..topic_focus import attention_rollout

        if not isinstance(text, str):
            raise TypeError(f"each sentence must be a str; got {type(text).__name__}")
        tokens, maps = attention_maps(text)  # (L, H, T, T)
        if len(tokens) > MAX_TOKENS:
            raise ValueError(
                f"sentence {text!r} has {len(tokens)} tokens; at most {MAX_TOKENS} fit the widget"
            )
        percent = np.rint(maps.astype(np.float64) * 100)  # (L, H, T, T), whole numbers 0..100
        self._full.append(maps)
        with self.hold_sync():  # one message: the page never sees labels without their maps
            self.labels = [*self.labels, text]
            self.tokens = [*self.tokens, tokens]
            self.maps = [*self.maps, pack_uint8(percent, "maps")]
            self.rollouts = [*self.rollouts, _percent(attention_rollout(maps))]  # (T, T)

    @traitlets.observe("sentence")
    def _on_sentence(self, change: dict[str, Any]) -> None:
        """With a kernel: run the model on the typed sentence (the browser path does it without)."""
        from ..pretrained import attention_maps, load_tokenizer
        from ..topic_focus import attention_rollout

        text = change["new"]
        with self.hold_sync():
            if not text.strip():
                self.custom, self.custom_error = {}, ""
                return
            n_tokens = len(load_tokenizer().encode(text).ids)  # with [CLS] and [SEP]
            if n_tokens > self.max_tokens:
                self.custom, self.custom_error = {}, too_long_message(n_tokens, self.max_tokens)
                return
            tokens, maps = attention_maps(text)  # (L, H, T, T)
            self.custom_error = ""
            self.custom = {
                "text": text,
                "tokens": tokens,
                "maps": _percent(maps),
                "rollout": _percent(attention_rollout(maps)),  # (T, T)
            }

    def add_sentence(self, text: str) -> None:
        """Run the model on ``text`` (needs a Python kernel) and show it.

        If the new maps would not fit the budget, the widget is left as it was.
        """
        before = (list(self.labels), list(self.tokens), list(self.maps), len(self._full))
        with self.hold_sync():
            self._append(text)
            try:
                self._check_budget(BUDGET_HINT)
            except ValueError:
                self.labels, self.tokens, self.maps = before[:3]
                self.rollouts = self.rollouts[: before[3]]
                del self._full[before[3] :]
                raise
            self.sentence_index = len(self.labels) - 1

    _v_index = traitlets.validate("sentence_index", "layer", "head", "view")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        sizes = {"sentence_index": len(self.labels), "layer": self.n_layers, "head": self.n_heads}
        return sizes.get(name, len(VIEWS))

    _repr_format = (
        "{n_sentences} sentences, sentence_index={sentence_index}, layer={layer}, head={head}"
    )

    def _repr_values(self) -> dict[str, Any]:
        return {"n_sentences": len(self.labels)}

    @property
    def weights(self) -> NDArray:
        """The map on show, ``(T, T)`` float32, as the model computed it (not rounded)."""
        return self._full[self.sentence_index][self.layer, self.head]
