"""Cross-attention, one output step at a time: the source tokens on one side, the output on the
other, and the chosen output step's weights over the source.

Python receives each example's weights ``(T_out, T_src)`` (e.g. from
:meth:`course_utils.experiments.reversal.ReversalModel.generate`) and checks that every row is a
distribution; JavaScript only looks rows up. Padding tokens (``"<pad>"``) are drawn in a muted
style, so a padded example with and without the key-padding mask shows where weight leaks.

Two output tokens over three source tokens, one of them padding:

>>> weights = [[0.1, 0.9, 0.0], [0.7, 0.2, 0.1]]  # (T_out = 2, T_src = 3)
>>> w = CrossAttentionView([("demo", ["a", "b", "<pad>"], ["b", "a"], weights)])
>>> w.step_index = 1  # the second output token, "a": its weights over the three source tokens
>>> w.weights.round(3)
array([0.7, 0.2, 0.1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from ._base import CourseWidget, check_tokens, check_vectors, pack_array, unpack_array
from ._text import Text

__all__ = ["CrossAttentionView"]


def _parse(entry: Any, i: int) -> tuple[str, list[str], list[str], NDArray]:
    where = f"examples[{i}]"
    if not isinstance(entry, Sequence) or isinstance(entry, str) or len(entry) != 4:
        raise TypeError(
            f"{where} must be a (label, source_tokens, output_tokens, weights) tuple; "
            f"got {type(entry).__name__}"
        )
    label, source, output, weights = entry
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"{where} label must be a non-empty str; got {label!r}")
    src = check_tokens(source, f"{where} source_tokens")
    out = check_tokens(output, f"{where} output_tokens")
    w = check_vectors(weights, f"{where} weights", rows=len(out), dim=len(src))  # (T_out, T_src)
    if (w < 0).any() or not np.allclose(w.sum(axis=1), 1.0, atol=1e-3):
        raise ValueError(
            f"{where} weights must be attention weights: every row of the ({len(out)}, "
            f"{len(src)}) matrix non-negative and summing to 1"
        )
    return label, src, out, w


class CrossAttentionView(CourseWidget):
    """Pick an example and an output step; bars show that step's weights over the source.

    Parameters
    ----------
    examples : sequence of ``(label, source_tokens, output_tokens, weights)``
        ``weights`` has shape ``(len(output_tokens), len(source_tokens))``, rows summing to 1.
    """

    _widget_file = "cross_attention_view"
    _default_description = (
        "Choose an example and an output step. Bars under the source tokens show how much "
        "cross-attention weight that output step gives each source token; they sum to 1."
    )

    labels = traitlets.List(Text()).tag(sync=True)
    sources = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)
    outputs = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)
    frames = traitlets.List(traitlets.Dict()).tag(sync=True)  # per example: packed (T_out, T_src)
    example_index = traitlets.Int(0).tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)

    def __init__(self, examples: Sequence[Any], *, example_index: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(examples, str | bytes) or not isinstance(examples, Sequence) or not examples:
            raise TypeError("examples must be a non-empty list of (label, source, output, weights)")
        parsed = [_parse(e, i) for i, e in enumerate(examples)]
        with self.hold_trait_notifications():
            self.labels = [p[0] for p in parsed]
            self.sources = [p[1] for p in parsed]
            self.outputs = [p[2] for p in parsed]
            self.frames = [pack_array(p[3]) for p in parsed]
        self._weights = [p[3] for p in parsed]
        self.example_index = example_index
        self._check_budget()

    @classmethod
    def example(cls) -> Self:
        """Chapter 8's reversal model, untrained (seed 0), on one batch of ``"cab"`` and ``"ja"``
        (padded to 3), decoded with and without the key-padding mask.

        >>> w = CrossAttentionView.example()
        >>> w.sources[1]
        ['j', 'a', '<pad>']
        >>> w.example_index = 1                    # "ja" with the mask: no weight on its padding
        >>> float(w.frame(1)[:, 2].max())
        0.0
        >>> bool(w.frame(3)[:, 2].min() > 0)       # the same word without the mask: some
        True
        """
        import torch

        from ..experiments.reversal import ReversalModel, cross_attention_rows

        with torch.random.fork_rng(devices=[]):  # seed the weights, leave the caller's RNG alone
            torch.manual_seed(0)
            model = ReversalModel().eval()
        words = ["cab", "ja"]
        rows = cross_attention_rows(model, words)
        rows += cross_attention_rows(model, words, use_padding_mask=False)
        return cls(rows, title="Cross-attention: where each output step looks in the source")

    _sequence_index = ("example_index", "step_index", "outputs")
    _v_index = traitlets.validate("example_index", "step_index")(CourseWidget._valid_index)
    _on_example = traitlets.observe("example_index")(CourseWidget._keep_position_within)

    @property
    def weights(self) -> NDArray:
        """The current output step's weights over the source tokens, ``(T_src,)``."""
        return self._weights[self.example_index][self.step_index]

    def frame(self, example: int) -> NDArray:
        """The packed (rounded) weights the browser draws for an example, ``(T_out, T_src)``."""
        return unpack_array(self.frames[example])
