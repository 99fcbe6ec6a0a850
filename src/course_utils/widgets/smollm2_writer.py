"""SmolLM2-135M-Instruct writes, token by token, with every head's attention for each new token.

A prompt box, a Generate button and the decoding settings (greedy, or sampling with temperature,
top-k and top-p). For the token just generated the widget shows the attention of one layer and
head over every earlier token (a row that grows), all 30 × 9 heads as small strips, the next-token
candidates and the size of the KV cache. Clicking a head (or the button under the sliders) knocks
it out: its output is set to zero, and the next run shows what changes.

* In JupyterLab, with a kernel, the page sends ``{"type": "generate", ...}`` to Python, which runs
  :func:`course_utils.pretrained.smollm2.writer_steps` (our model, :func:`load_smollm2`) and sends
  each token back as it comes (the same messages as the browser's worker).
* On the static site, with no kernel, the page runs the same model in a Web Worker
  (:mod:`course_utils.pretrained.smollm2_web`): nothing is downloaded until the reader presses
  Generate, which states the size (``download_bytes``).

The saved state is small (settings and sizes, no model output): the page loads nothing of the
model before the reader asks.

>>> w = SmolLM2Writer.example()
>>> w.n_layers, w.n_heads, w.n_kv_heads, w.max_prompt_tokens
(30, 9, 3, 256)
>>> w.layer, w.head = 3, 4
>>> w.knockout = ["3:4"]
>>> w.request_from_settings("Hi")["knockout"]
['3:4']
"""

from __future__ import annotations

from typing import Any, Self

import traitlets

from ..i18n import t_literal
from ..pretrained.smollm2_web import MAX_PROMPT_TOKENS
from ._base import CourseWidget

__all__ = ["DECODING", "NEW_TOKENS", "SmolLM2Writer"]

#: Where the site's build puts the browser model, relative to the site's ``_static/`` folder.
WORKER_PATH = "smollm2/smollm2_worker.mjs"
#: The choices of the "new tokens" menu.
NEW_TOKENS = (8, 16, 32, 64)
#: The decoding menu: (label, temperature, top_k, top_p); the first is greedy.
DECODING = (
    ("greedy", 0.0, None, None),
    ("temperature 0.7", 0.7, None, None),
    ("temperature 0.7, top-k 20", 0.7, 20, None),
    ("temperature 0.7, top-p 0.9", 0.7, None, 0.9),
    ("temperature 1.2, top-p 0.95", 1.2, None, 0.95),
)


def _knockout_pairs(knockout: list[str], n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    pairs = []
    for item in knockout:
        parts = str(item).split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f"knockout entries must be 'layer:head'; got {item!r}")
        layer, head = int(parts[0]), int(parts[1])
        if layer >= n_layers or head >= n_heads:
            raise ValueError(f"knockout {item!r} is outside {n_layers} layers x {n_heads} heads")
        pairs.append((layer, head))
    return pairs


class SmolLM2Writer(CourseWidget):
    """SmolLM2 generating from the reader's prompt, with the attention of every head visible.

    Parameters
    ----------
    prompts : list of str
        Example prompts for the menu (the first fills the prompt box).
    """

    _widget_file = "smollm2_writer"
    _default_title = "SmolLM2-135M writes: the attention behind each new token"
    _default_description = (
        "A language model generating text from your prompt. For the newest token, bars show how "
        "much one attention head draws from each earlier token; a grid shows all 270 heads."
    )

    prompts = traitlets.List(traitlets.Unicode()).tag(sync=True)
    example_index = traitlets.Int(0).tag(sync=True)
    #: The prompt box's text (saved when the reader generates).
    prompt = traitlets.Unicode("").tag(sync=True)
    new_tokens = traitlets.List(traitlets.Int(), list(NEW_TOKENS)).tag(sync=True)
    new_tokens_index = traitlets.Int(2).tag(sync=True)
    decoding = traitlets.List(traitlets.Unicode(), [d[0] for d in DECODING]).tag(sync=True)
    decoding_index = traitlets.Int(0).tag(sync=True)
    #: Each decoding choice's [temperature, top_k, top_p] (null: not used), for the page.
    decoding_settings = traitlets.List(
        traitlets.List(), [[t, k, p] for _, t, k, p in DECODING]
    ).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    #: Heads whose output is zero, as "layer:head".
    knockout = traitlets.List(traitlets.Unicode()).tag(sync=True)
    n_layers = traitlets.Int(30).tag(sync=True)
    n_heads = traitlets.Int(9).tag(sync=True)
    n_kv_heads = traitlets.Int(3).tag(sync=True)
    head_dim = traitlets.Int(64).tag(sync=True)
    max_prompt_tokens = traitlets.Int(MAX_PROMPT_TOKENS).tag(sync=True)
    #: Bytes the first Generate downloads on the static site (stated on the button).
    download_bytes = traitlets.Int(0).tag(sync=True)
    #: What a phone's reader may expect (display strings:
    #: :func:`course_utils.pretrained.smollm2_web.phone_estimate`); empty without an export.
    phone = traitlets.Dict().tag(sync=True)
    worker_path = traitlets.Unicode(WORKER_PATH).tag(sync=True)
    seed = traitlets.Int(0).tag(sync=True)

    def __init__(self, prompts: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(prompts, str) or not isinstance(prompts, list | tuple) or not prompts:
            raise TypeError(
                f"prompts must be a non-empty list of str; got {type(prompts).__name__}"
            )
        for p in prompts:
            if not isinstance(p, str) or not p.strip():
                raise ValueError(f"each prompt must be a non-empty str; got {p!r}")
        self.decoding = [t_literal(label) for label, *_ in DECODING]
        self.prompts = list(prompts)
        self.prompt = self.prompts[0]
        self.download_bytes = _expected_download_bytes()
        self.phone = _phone_estimate(self.download_bytes)
        self._model: Any = None
        self.on_msg(self._on_message)

    @classmethod
    def example(cls) -> Self:
        """Two prompts, one English and one Chinese (the seed's sentence); nothing is computed
        until Generate is pressed.

        >>> w = SmolLM2Writer.example()
        >>> len(w.prompts), w.prompt == w.prompts[0]
        (2, True)
        """
        return cls(["The capital of France is", "我喜欢看书，因为"])

    _v_index = traitlets.validate("example_index", "new_tokens_index", "decoding_index")(
        CourseWidget._valid_index
    )

    def _index_size(self, name: str) -> int:
        sizes = {
            "example_index": len(self.prompts),
            "new_tokens_index": len(self.new_tokens),
            "decoding_index": len(self.decoding),
        }
        return sizes[name]

    @traitlets.validate("layer", "head")
    def _valid_layer_head(self, proposal: dict[str, Any]) -> int:
        name = proposal["trait"].name
        n = self.n_layers if name == "layer" else self.n_heads
        value = proposal["value"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise traitlets.TraitError(f"{name} must be an int in [0, {n}); got {value!r}")
        return value

    @traitlets.validate("knockout")
    def _valid_knockout(self, proposal: dict[str, Any]) -> list[str]:
        try:
            _knockout_pairs(proposal["value"], self.n_layers, self.n_heads)
        except ValueError as err:
            raise traitlets.TraitError(str(err)) from err
        return list(proposal["value"])

    def request_from_settings(self, prompt: str) -> dict[str, Any]:
        """The ``generate`` message the page sends for ``prompt`` with the current settings."""
        temperature, top_k, top_p = self.decoding_settings[self.decoding_index]
        return {
            "type": "generate",
            "id": 0,
            "prompt": prompt,
            "nNew": self.new_tokens[self.new_tokens_index],
            "temperature": temperature,
            "topK": top_k,
            "topP": top_p,
            "seed": self.seed,
            "knockout": list(self.knockout),
        }

    def run(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Answer a ``generate`` request in Python (what the kernel does when the page asks):
        the messages, in order, that are also sent to the page."""
        from ..pretrained.smollm2 import load_smollm2, writer_steps

        sent: list[dict[str, Any]] = []

        def send(message: dict[str, Any]) -> None:
            sent.append(message)
            self.send(message)

        rid = request.get("id", 0)
        try:
            if self._model is None:
                self._model = load_smollm2()
            tok = self._model.tokenizer
            ids = tok.encode(str(request.get("prompt", "")))
            if not ids or len(ids) > self.max_prompt_tokens:
                send(
                    {
                        "type": "too-long",
                        "id": rid,
                        "tokens": len(ids),
                        "max": self.max_prompt_tokens,
                    }
                )
                return sent
            send({"type": "prompt", "id": rid, "ids": ids, "labels": tok.labels_of(ids)})
            knockout = _knockout_pairs(
                list(request.get("knockout") or []), self.n_layers, self.n_heads
            )
            done: list[int] = []
            total = 0.0
            for i, step in enumerate(
                writer_steps(
                    self._model,
                    ids,
                    int(request["nNew"]),
                    temperature=float(request.get("temperature") or 0.0),
                    top_k=request.get("topK"),
                    top_p=request.get("topP"),
                    seed=int(request.get("seed") or 0),
                    knockout=knockout,
                )
            ):
                done.append(step.token)
                total += step.seconds
                labels = tok.labels_of(ids + done)
                top = sorted(range(len(step.logits)), key=lambda j: -step.logits[j])[:5]
                send(
                    {
                        "type": "token",
                        "id": rid,
                        "index": i,
                        "token": step.token,
                        "label": labels[-1],
                        "ms": step.seconds * 1e3,
                        "n": len(ids) + i,  # tokens the query that chose it attended to
                        "weights": [float(x) for x in step.weights.ravel()],
                        "top": [
                            {"id": j, "label": tok.decode([j]), "logit": float(step.logits[j])}
                            for j in top
                        ],
                    }
                )
            send({"type": "done", "id": rid, "ids": done, "ms": total * 1e3})
        except Exception as err:  # the page shows it; the kernel keeps running
            send({"type": "error", "id": rid, "message": f"{type(err).__name__}: {err}"})
        return sent

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "generate":
            self.run(content)

    _repr_format = "{n_prompts} prompts, layer={layer}, head={head}, knockout={knockout}"

    def _repr_values(self) -> dict[str, Any]:
        return {"n_prompts": len(self.prompts)}


def _expected_download_bytes() -> int:
    """The download the button states: the size of the exported model files (made once, then
    kept: :func:`course_utils.pretrained.smollm2_web.prepare_export`)."""
    from ..pretrained.smollm2_web import download_bytes, prepare_export

    return download_bytes(prepare_export())


def _phone_estimate(n_bytes: int) -> dict[str, str]:
    """The phone note's numbers for a download of ``n_bytes`` (none without an export)."""
    from ..pretrained.smollm2_web import phone_estimate

    return phone_estimate(n_bytes) if n_bytes > 0 else {}
