"""The shared base of the course widgets: "Python computes, JavaScript draws".

A course widget is an :class:`anywidget.AnyWidget` subclass that

* holds its **inputs** (tokens, vectors, grids) and its **precomputed frames** as synced traits;
* recomputes the frames in Python (with ``course_utils`` maths) whenever an input changes;
* ships one ES module ``<name>.js`` and one stylesheet ``<name>.css`` next to ``<name>.py``; the
  JavaScript only *looks frames up* when a control moves, so the widget stays live on the static
  site with no kernel, and with a kernel Python sees every move (``model.set`` +
  ``model.save_changes``).

How the JavaScript is assembled
-------------------------------
anywidget loads a widget's ES module from a string (a blob URL), so relative ``import`` between our
JS files cannot resolve. :class:`CourseWidget` therefore builds ``_esm`` as one string at class
creation: ``_shared.js`` (the ``CU`` helper namespace: SVG/HTML creation, labelled keyboard sliders
and selects, viridis/cividis lookup, text-only tokens, packed-array access) followed by the
widget's own file. The same holds for ``_css`` (``_shared.css`` + ``<name>.css``).

Packing frames
--------------
:func:`pack_array` stores rounded floats as a JSON list (``CU.at``/``CU.slice`` read it).
:func:`pack_uint8` stores whole numbers in 0..255 (e.g. weights in whole percent) as base64 bytes,
about a third of the JSON size; ``CU.bytes`` decodes it once into a ``Uint8Array`` and
``CU.offset`` finds a sub-array in it. :func:`unpack_array` reads both (for tests).

Safety rule
-----------
Learner text is rendered with ``textContent``/``setAttribute`` only, never ``innerHTML`` (checked
by a unit test and by a browser test with ``<img src=x onerror=...>``). Python therefore never
escapes text: escaping twice would show ``&lt;`` to the learner.

Example
-------
>>> import numpy as np
>>> pack_array(np.array([[0.12345, -0.0], [1.0, 2.5]]), decimals=2)
{'shape': [2, 2], 'data': [0.12, 0.0, 1.0, 2.5]}
>>> check_tokens(["the", "cat"], "tokens")
['the', 'cat']
"""

from __future__ import annotations

import base64
import json
import math
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anywidget
import numpy as np
from numpy.typing import NDArray

from .._validation import as_float_array, check_int, shape_str
from ..i18n import get_language, js_catalogue, normalise_language
from ._text import Text

__all__ = [
    "DECIMALS",
    "MAX_STATE_BYTES",
    "CourseWidget",
    "Text",
    "check_examples",
    "check_grid_size",
    "check_index",
    "check_qkv",
    "check_tokens",
    "check_vectors",
    "pack_array",
    "pack_uint8",
    "unpack_array",
    "widget_css",
    "widget_esm",
]

HERE = Path(__file__).parent
#: The widgets alive in this kernel, so that new code for them (``hot_reload``) reaches each one.
LIVE_WIDGETS: weakref.WeakSet[CourseWidget] = weakref.WeakSet()
#: Budget for the JSON size of one widget's data traits (its frames and inputs, not its code).
MAX_STATE_BYTES = 50_000
#: Longest token a widget accepts (longer text would not fit in the drawing).
MAX_TOKEN_CHARS = 40


def widget_esm(stem: str, lang: str = "en", source: Path | None = None) -> str:
    """The ES module text of widget ``stem``: the shared prelude followed by ``<stem>.js``.

    For ``lang="zh"`` the Chinese of the messages the widget's code passes to ``CU.t`` is added
    between the two (``CU.addMessages({...});``); the English module is unchanged. ``source`` is
    the folder of the ``.js`` files (default: this package's; a test passes an edited copy).
    """
    source = HERE if source is None else source
    shared = (source / "_shared.js").read_text(encoding="utf-8")
    own = (source / f"{stem}.js").read_text(encoding="utf-8")
    messages = js_catalogue(shared + own, normalise_language(lang))
    if messages:
        table = json.dumps(messages, ensure_ascii=False, sort_keys=True, indent=0)
        shared = f"{shared}\nCU.addMessages({table});"
    return f"{shared}\n// ---- {stem}.js ----\n{own}"


def widget_css(stem: str, source: Path | None = None) -> str:
    """The stylesheet of widget ``stem``: ``_shared.css`` then ``<stem>.css`` (if present)."""
    source = HERE if source is None else source
    parts = [(source / "_shared.css").read_text(encoding="utf-8")]
    own = source / f"{stem}.css"
    if own.exists():
        parts.append(own.read_text(encoding="utf-8"))
    return "\n".join(parts)


#: Decimals kept in the numbers a widget syncs to the page: the drawings show at most two, and
#: fewer digits keep the saved state small.
DECIMALS = 3


def pack_array(x: Any, decimals: int = DECIMALS) -> dict[str, Any]:
    """Pack an array as ``{"shape": [...], "data": [...]}`` (row-major, rounded): compact JSON.

    ``-0.0`` becomes ``0.0`` so that equal frames serialise equally. JavaScript reads it with
    ``CU.at``
    and ``CU.slice``.

    >>> pack_array([[1, 2, 3]], decimals=0)
    {'shape': [1, 3], 'data': [1.0, 2.0, 3.0]}
    """
    arr = np.asarray(x, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"cannot pack an array with NaN or inf (shape {shape_str(arr.shape)})")
    rounded = np.round(arr, decimals) + 0.0  # (...) ; + 0.0 turns -0.0 into 0.0
    return {"shape": [int(s) for s in arr.shape], "data": rounded.ravel().tolist()}


def pack_uint8(x: Any, name: str = "x") -> dict[str, Any]:
    """Pack whole numbers in ``0..255`` as ``{"shape": [...], "uint8": base64 text}`` (row-major).

    One byte per number (4/3 of a byte after base64) instead of 2-4 characters of JSON each: use it
    for frames that are already small whole numbers, such as weights in whole percent
    (``np.rint(100 * w)``; the rounding is maths and stays in Python). JavaScript decodes it once
    with ``CU.bytes(packed)`` into a ``Uint8Array`` and indexes it with ``CU.offset``.

    >>> pack_uint8([[0, 50, 100]], "percent")
    {'shape': [1, 3], 'uint8': 'ADJk'}
    >>> unpack_array(pack_uint8([[0, 50, 100]]))
    array([[  0.,  50., 100.]])
    >>> pack_uint8([0.5, 300], "percent")
    Traceback (most recent call last):
    ...
    ValueError: percent must hold whole numbers in 0..255; got shape (2,) with values in [0.5, 300]
    """
    arr = np.asarray(x)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(
            f"{name} must be an array of whole numbers in 0..255; got dtype {arr.dtype} "
            f"(shape {shape_str(arr.shape)})"
        )
    values = arr.astype(np.float64)  # (...)
    if values.size and (
        not np.isfinite(values).all()
        or (values != np.rint(values)).any()
        or values.min() < 0
        or values.max() > 255
    ):
        low, high = f"{values.min():g}", f"{values.max():g}"
        raise ValueError(
            f"{name} must hold whole numbers in 0..255; got shape {shape_str(arr.shape)} "
            f"with values in [{low}, {high}]"
        )
    raw = values.astype(np.uint8).tobytes()  # row-major, one byte per element
    return {"shape": [int(s) for s in arr.shape], "uint8": base64.b64encode(raw).decode("ascii")}


def unpack_array(packed: dict[str, Any]) -> NDArray[np.float64]:
    """Inverse of :func:`pack_array` (up to rounding) and of :func:`pack_uint8`.

    >>> unpack_array({"shape": [2], "data": [0.5, 1.5]})
    array([0.5, 1.5])
    >>> unpack_array({"shape": [2], "uint8": "AP8="})
    array([  0., 255.])
    """
    if "uint8" in packed:
        raw = np.frombuffer(base64.b64decode(packed["uint8"]), dtype=np.uint8)  # (n,)
        return raw.astype(np.float64).reshape(packed["shape"])
    return np.asarray(packed["data"], dtype=np.float64).reshape(packed["shape"])


def check_tokens(
    tokens: Any,
    name: str = "tokens",
    *,
    min_len: int = 1,
    max_len: int | None = None,
    count: int | None = None,
    per: str = "one per row",
) -> list[str]:
    """Validate a sequence of tokens (non-empty strings of at most ``MAX_TOKEN_CHARS`` characters).

    ``count``: exactly that many (one label per row, per key ...: ``per`` says which, for the
    message); ``max_len``: at most that many (what fits in the drawing).

    Any text is allowed, including ``<`` and ``&``: widgets show tokens as text, never as HTML.

    >>> check_tokens("cat", "tokens")
    Traceback (most recent call last):
    ...
    TypeError: tokens must be a list of strings, not a single str; got 'cat' (try 'cat'.split())
    >>> check_tokens(["k1", "k2"], "key_labels", count=3, per="one per key")
    Traceback (most recent call last):
    ...
    ValueError: key_labels must have 3 labels (one per key); got 2
    """
    if isinstance(tokens, str):
        raise TypeError(
            f"{name} must be a list of strings, not a single str; got {tokens!r} "
            f"(try {tokens!r}.split())"
        )
    if not isinstance(tokens, Sequence) and not isinstance(tokens, np.ndarray):
        raise TypeError(f"{name} must be a list of strings; got {type(tokens).__name__}")
    out = list(tokens)
    if count is not None and len(out) != count:
        plural = "label" if count == 1 else "labels"
        raise ValueError(f"{name} must have {count} {plural} ({per}); got {len(out)}")
    if max_len is not None and not min_len <= len(out) <= max_len:
        raise ValueError(f"{name} must have {min_len} to {max_len} tokens; got {len(out)}")
    if len(out) < min_len:
        raise ValueError(f"{name} must have at least {min_len} token(s); got {len(out)}")
    for i, tok in enumerate(out):
        if not isinstance(tok, str):
            raise TypeError(f"{name}[{i}] must be a str; got {type(tok).__name__} {tok!r}")
        if not tok.strip():
            raise ValueError(f"{name}[{i}] is empty or only whitespace; got {tok!r}")
        if len(tok) > MAX_TOKEN_CHARS:
            raise ValueError(
                f"{name}[{i}] has {len(tok)} characters; "
                f"at most {MAX_TOKEN_CHARS} fit in the drawing"
            )
    return out


def check_vectors(x: Any, name: str, *, rows: int | None = None, dim: int | None = None) -> NDArray:
    """Validate a 2-D float array of shape ``(rows, dim)``; ``None`` means any size (at least 1).

    >>> check_vectors([[1, 0], [0, 1]], "keys", dim=2).shape
    (2, 2)
    >>> check_vectors([[1, 0, 0]], "keys", dim=2)
    Traceback (most recent call last):
    ...
    ValueError: keys must have shape (T, 2); got shape (1, 3)
    """
    want = f"({'T' if rows is None else rows}, {'d' if dim is None else dim})"
    arr = as_float_array(x, name, min_ndim=2, expected=want)
    if arr.ndim != 2 or (rows is not None and arr.shape[0] != rows) or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape {want}; got shape {shape_str(arr.shape)}")
    if (dim is not None and arr.shape[1] != dim) or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape {want}; got shape {shape_str(arr.shape)}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite; got shape {shape_str(arr.shape)} with inf")
    return arr.astype(np.float64)


def check_qkv(
    q: Any, k: Any, v: Any, *, same_length: bool = False
) -> tuple[NDArray, NDArray, NDArray]:
    """Validate the inputs of one attention: ``q`` ``(T_q, d_k)``, ``k`` ``(T_k, d_k)``, ``v``
    ``(T_k, d_v)`` as float64 arrays; ``same_length``: also ``T_k == T_q`` (self-attention over
    one sequence of tokens).

    >>> q, k, v = check_qkv([[1, 0]], [[1, 0], [0, 1]], [[1], [2]])
    >>> q.shape, k.shape, v.shape
    ((1, 2), (2, 2), (2, 1))
    >>> check_qkv([[1, 0]], [[1, 0], [0, 1]], [[1], [2]], same_length=True)
    Traceback (most recent call last):
    ...
    ValueError: k must have shape (1, 2); got shape (2, 2)
    """
    q_arr = check_vectors(q, "q")  # (T_q, d_k)
    rows = q_arr.shape[0] if same_length else None
    k_arr = check_vectors(k, "k", rows=rows, dim=q_arr.shape[1])  # (T_k, d_k)
    v_arr = check_vectors(v, "v", rows=k_arr.shape[0])  # (T_k, d_v)
    return q_arr, k_arr, v_arr


#: Most query-key pairs a widget that writes every score in a cell can show (12 tokens × 12).
MAX_DRAWN_PAIRS = 144


def check_drawable(widget: str, q: NDArray, k: NDArray, v: NDArray, max_d_v: int = 12) -> None:
    """Refuse inputs too large for a widget that draws every score and output as a number.

    >>> check_drawable("FourSteps", np.ones((13, 2)), np.ones((13, 2)), np.ones((13, 2)))
    Traceback (most recent call last):
    ...
    ValueError: FourSteps draws every number: at most 144 query-key pairs (12 tokens) and 12 value dimensions; got q (13, 2), k (13, 2), v (13, 2)
    """  # noqa: E501
    if q.shape[0] * k.shape[0] > MAX_DRAWN_PAIRS or v.shape[1] > max_d_v:
        raise ValueError(
            f"{widget} draws every number: at most {MAX_DRAWN_PAIRS} query-key pairs "
            f"({math.isqrt(MAX_DRAWN_PAIRS)} tokens) and {max_d_v} value dimensions; got "
            f"q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)}"
        )


def check_index(i: Any, name: str, n: int) -> int:
    """Validate the position of a control: an int in ``[0, n - 1]`` (bool is not an int here).

    Every widget's index traits (``angle_index``, ``layer``, ``step_index`` ...) go through this, so
    a learner who sets one from Python gets the same clear message everywhere.

    >>> check_index(2, "query_index", 4)
    2
    >>> check_index(4, "query_index", 4)
    Traceback (most recent call last):
    ...
    ValueError: query_index must be an int in [0, 3]; got 4
    """
    return check_int(i, name, low=0, high=n - 1)


_Checked = TypeVar("_Checked")


def check_examples(
    examples: Any,
    check_one: Callable[[Any, int], _Checked],
    *,
    most: int | None = None,
    unit: str = "examples",
) -> list[_Checked]:
    """A widget's ``examples``: a non-empty list (a dict is not one) of at most ``most`` items
    (``unit`` names them in the error), each checked by ``check_one(item, i)``, whose errors name
    ``examples[i]``.

    >>> check_examples([{"n": 1}, {"n": 2}], lambda e, i: e["n"])
    [1, 2]
    >>> check_examples({"n": 1}, lambda e, i: e)
    Traceback (most recent call last):
    ...
    TypeError: examples must be a non-empty list of dicts
    >>> check_examples([{}] * 3, lambda e, i: e, most=2, unit="prompts")
    Traceback (most recent call last):
    ...
    ValueError: examples must hold at most 2 prompts; got 3
    """
    if isinstance(examples, dict) or not isinstance(examples, Sequence) or not examples:
        raise TypeError("examples must be a non-empty list of dicts")
    if most is not None and len(examples) > most:
        raise ValueError(f"examples must hold at most {most} {unit}; got {len(examples)}")
    return [check_one(e, i) for i, e in enumerate(examples)]


def check_grid_size(n: Any, name: str, *, low: int = 2, high: int = 121) -> int:
    """Validate the number of grid points of a slider (an int in ``[low, high]``).

    >>> check_grid_size(3.0, "n_angles")
    Traceback (most recent call last):
    ...
    TypeError: n_angles must be an int in [2, 121]; got float 3.0
    """
    return check_int(n, name, low=low, high=high)


class _ReprFields:
    """The fields of :attr:`CourseWidget._repr_format`: the widget's ``_repr_values()``, else its
    attributes."""

    def __init__(self, widget: CourseWidget) -> None:
        self._widget = widget
        self._values = widget._repr_values()

    def __getitem__(self, name: str) -> Any:
        return self._values[name] if name in self._values else getattr(self._widget, name)


class CourseWidget(anywidget.AnyWidget):  # type: ignore[misc]
    """Base of every course widget.

    Subclasses set ``_widget_file = "<stem>"`` (the ``.js``/``.css`` next to this module), declare
    their synced traits, and implement :meth:`_recompute`, which fills the frame traits from the
    inputs. Calling :meth:`_recompute` from an ``@traitlets.observe`` on the inputs keeps Python and
    drawing in step. :meth:`data_bytes` measures the JSON size of the data traits;
    :meth:`_recompute` should end with :meth:`_check_budget`.
    """

    _widget_file: ClassVar[str] = ""
    #: The screen-reader description a widget gets when none is given (``description=...``).
    _default_description: ClassVar[str] = ""
    #: The caption a widget gets when none is given (``title=...``): every widget is named, on
    #: the page, on a slide and under its still in the PDF.
    _default_title: ClassVar[str] = ""
    #: ``(outer, inner, sequences)`` for a widget that picks one of several sequences (index trait
    #: ``outer``) and a position in it (index trait ``inner``); ``sequences`` names the list trait
    #: that holds the sequences. :meth:`_index_size` then knows both sizes.
    _sequence_index: ClassVar[tuple[str, str, str] | None] = None

    #: Shown above the drawing (as text). Empty: no caption.
    title = Text("").tag(sync=True)
    #: Accessible description of what the widget shows (read by screen readers; visually hidden).
    description = Text("").tag(sync=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Under zh the widget's own ES module carries the Chinese its JavaScript shows (the class's
        # module, shared by English widgets, is unchanged), and its text traits are translated.
        lang = get_language()
        if lang != "en" and self._widget_file:
            kwargs.setdefault("_esm", widget_esm(self._widget_file, lang))
        super().__init__(*args, **kwargs)
        self._code_language = lang  # the language its ES module was built in
        LIVE_WIDGETS.add(self)
        if not self.description and self._default_description:
            self.description = self._default_description
        if not self.title and self._default_title:
            self.title = self._default_title

    #: What the repr shows between the class name's parentheses: a ``str.format`` template whose
    #: fields name attributes (traits or properties) or keys of :meth:`_repr_values`.
    _repr_format: ClassVar[str] = "title={title!r}"

    def __repr__(self) -> str:
        # Deterministic text/plain for notebooks: ipywidgets' default repr shows a memory
        # address, which changes on every run and would defeat nbval's output comparison.
        return f"{type(self).__name__}({self._repr_format.format_map(_ReprFields(self))})"

    def _repr_values(self) -> dict[str, Any]:
        """Values the repr shows that are not attributes (counts, 1-based positions)."""
        return {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        stem = cls.__dict__.get("_widget_file")
        if stem:
            cls._esm = widget_esm(stem)
            cls._css = widget_css(stem)
        super().__init_subclass__(**kwargs)

    def _recompute(self) -> None:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def _index_size(self, name: str) -> int:
        """How many positions the index trait ``name`` has (the options of its slider or select).

        A widget whose index traits :meth:`_valid_index` checks implements it, unless they are the
        two of :attr:`_sequence_index`.
        """
        if self._sequence_index is not None:
            outer, inner, sequences_trait = self._sequence_index
            sequences = getattr(self, sequences_trait)
            if name == outer:
                return len(sequences)
            if name == inner:
                return len(sequences[getattr(self, outer)]) if sequences else 1
        raise NotImplementedError(f"{type(self).__name__} has no size for index trait {name}")

    def _valid_index(self, proposal: Any) -> int:
        """Validate an index trait: :func:`check_index` with ``n`` from :meth:`_index_size`.

        ``n`` is at least 1, so that 0 is accepted while a widget's inputs are still being set. A
        widget names its index traits once, in its class body:
        ``_v_index = traitlets.validate("angle_index", "length_index")(CourseWidget._valid_index)``.
        """
        name = proposal["trait"].name
        return check_index(proposal["value"], name, max(1, self._index_size(name)))

    def _keep_position_within(self, _change: Any) -> None:
        """Observer of the outer index of :attr:`_sequence_index`: keep the inner one in range.

        ``_on_outer = traitlets.observe("sentence_index")(CourseWidget._keep_position_within)``
        """
        if self._sequence_index is not None:
            self._keep_index_within(self._sequence_index[1])

    def _keep_index_within(self, name: str) -> None:
        """Move index trait ``name`` back to its last position if it is past it.

        For an index into a list that just changed, e.g. the query token when another, shorter
        sentence is chosen.
        """
        last = self._index_size(name) - 1
        if getattr(self, name) > last:
            setattr(self, name, last)

    def data_bytes(self) -> int:
        """JSON size in bytes of the synced state without the code (``_esm``, ``_css``) and ids."""
        state = self.get_state()
        skip = {"_esm", "_css", "_anywidget_id", "layout", "tabbable", "tooltip", "_dom_classes"}
        data = {k: v for k, v in state.items() if k not in skip and not k.startswith("_model")}
        data = {k: v for k, v in data.items() if not k.startswith("_view")}
        return len(json.dumps(data, separators=(",", ":")).encode("utf-8"))

    def state_bytes(self) -> int:
        """JSON size in bytes of the whole synced state, code included (what a notebook stores)."""
        return len(json.dumps(self.get_state(), separators=(",", ":")).encode("utf-8"))

    def _check_budget(
        self, hint: str = "use a coarser grid (fewer slider steps) or fewer tokens"
    ) -> None:
        """Raise ``ValueError`` if the data is over ``MAX_STATE_BYTES``; ``hint``: what to cut."""
        size = self.data_bytes()
        if size > MAX_STATE_BYTES:
            raise ValueError(
                f"{type(self).__name__} would sync {size} bytes of data, more than the budget of "
                f"{MAX_STATE_BYTES}; {hint}"
            )
