"""Atlas: 2026 causal LMs rebuilt from the course's own code, proven equal to ``transformers``.

:func:`from_hf` takes a ``transformers`` causal LM and returns a ``torch.nn.Module`` made of this
package's pieces, whose ``forward(input_ids)`` gives the same logits as ``model(input_ids).logits``.
One module per model type (``atlas/<module>.py``, each with a ``build(model)``), imported only
when its type is asked for.

>>> from_hf(torch.nn.Linear(2, 2))
Traceback (most recent call last):
...
TypeError: model must be a transformers causal LM with a .config.model_type; got Linear
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch  # noqa: F401  (the doctest above uses it)
from torch import nn

__all__ = ["from_hf"]

# model_type -> module of this package that builds it (imported lazily)
_MODULES: dict[str, str] = {
    "gemma3_text": "gemma3",
    "gpt_oss": "gpt_oss",
    "qwen3_next": "qwen3_next",
    "deepseek_v32": "deepseek_v32",
}

# model_type -> build(model), filled the first time a type is asked for
_BUILDERS: dict[str, Callable[[nn.Module], nn.Module]] = {}


def _builder(model_type: str) -> Callable[[nn.Module], nn.Module]:
    if model_type not in _BUILDERS:
        name = _MODULES[model_type]
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise NotImplementedError(
                f"model_type {model_type!r} has no builder yet (course_utils/atlas/{name}.py "
                f"is missing)"
            ) from err
        _BUILDERS[model_type] = module.build
    return _BUILDERS[model_type]


def from_hf(model: nn.Module) -> nn.Module:
    """Our own rebuild of the ``transformers`` causal LM ``model`` (same weights, same logits).

    Supported ``model.config.model_type``: ``gemma3_text``, ``gpt_oss``, ``qwen3_next``,
    ``deepseek_v32``. The result's ``forward(input_ids, cache=None)`` returns logits
    ``(B, T, vocab)``; ``new_cache()`` starts a cache for token-by-token decoding.
    """
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if not isinstance(model, nn.Module) or not isinstance(model_type, str):
        raise TypeError(
            f"model must be a transformers causal LM with a .config.model_type; got "
            f"{type(model).__name__}"
        )
    if model_type not in _MODULES:
        raise ValueError(
            f"model.config.model_type must be one of {sorted(_MODULES)}; got {model_type!r}"
        )
    return _builder(model_type)(model)
