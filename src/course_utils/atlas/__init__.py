"""An atlas of 2026 attention variants, each rebuilt from the course's own code and proven equal
to a ``transformers`` model.

:func:`from_hf` takes a causal LM of ``transformers`` and returns a ``torch.nn.Module`` made of
our blocks (:mod:`course_utils.atlas.blocks`) with the model's weights copied in. Its
``forward(input_ids)`` returns the same logits as ``model(input_ids).logits``; with
``cache = ours.new_cache()``, ``ours(ids, cache=cache)`` decodes token by token. One module per
variant:

- ``gemma3_text`` (:mod:`.gemma3`): five sliding-window layers per global one, QK-norm, pre- and
  post-norms, a scaled embedding, a final logit soft-cap.
- ``gpt_oss`` (:mod:`.gpt_oss`): learned attention sinks, alternating sliding and full layers,
  a mixture of experts with a clamped SwiGLU, YaRN RoPE.
- ``qwen3_next`` (:mod:`.qwen3_next`): gated attention and Gated DeltaNet layers, MoE with a
  shared expert.
- ``deepseek_v32`` (:mod:`.deepseek_v32`): DeepSeek Sparse Attention (a lightning indexer picks
  the top-k keys) on top of MLA, DeepSeek MoE.

The model's ``config.model_type`` picks the module (imported when first needed); each module's
docstring rebuilds a tiny model of its type. Anything else is refused by name:

>>> SUPPORTED_MODEL_TYPES
('gemma3_text', 'gpt_oss', 'qwen3_next', 'deepseek_v32')
>>> from_hf(torch.nn.Linear(2, 2))  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
ValueError: model.config.model_type must be one of ['gemma3_text', ...]; got None
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch
from torch import nn

__all__ = ["SUPPORTED_MODEL_TYPES", "from_hf"]

#: ``model_type`` -> the module of this package that builds it (imported when first needed).
_MODULES = {
    "gemma3_text": "gemma3",
    "gpt_oss": "gpt_oss",
    "qwen3_next": "qwen3_next",
    "deepseek_v32": "deepseek_v32",
}
SUPPORTED_MODEL_TYPES = tuple(_MODULES)

#: ``model_type`` -> ``build(model) -> nn.Module``, the ``build`` of its module once imported.
_BUILDERS: dict[str, Callable[[nn.Module], nn.Module]] = {}


def _builder(model_type: str) -> Callable[[nn.Module], nn.Module]:
    if model_type not in _BUILDERS:
        name = f"{__name__}.{_MODULES[model_type]}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # the module exists but something it imports is missing
                raise
            raise NotImplementedError(
                f"model_type {model_type!r} is not built yet: {name} is missing"
            ) from err
        _BUILDERS.setdefault(model_type, module.build)
    return _BUILDERS[model_type]


def from_hf(model: nn.Module) -> nn.Module:
    """Rebuild a ``transformers`` causal LM from the course's code, with its weights.

    ``model`` is a causal LM (``...ForCausalLM``) whose ``config.model_type`` is one of
    ``SUPPORTED_MODEL_TYPES``. The result has the model's dtype and device, and:

    - ``forward(input_ids)``: ``input_ids`` ``(B, T)`` -> logits ``(B, T, vocab_size)``, equal to
      ``model(input_ids).logits`` (to 1e-4 in float32, 1e-9 in float64);
    - ``new_cache()`` and ``forward(input_ids, cache=cache)``: the logits of the new tokens only,
      the cache updated in place (a prompt, then one token at a time, gives the full pass's logits).

    It never calls the model's modules: only its weights (and float32 RoPE frequencies) are read.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            "model must be a transformers causal LM (a torch.nn.Module); got "
            f"{type(model).__name__}"
        )
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in _MODULES:
        raise ValueError(
            f"model.config.model_type must be one of {list(SUPPORTED_MODEL_TYPES)}; "
            f"got {model_type!r}"
        )
    if not isinstance(getattr(model, "lm_head", None), nn.Module):
        raise TypeError(
            f"model must be a causal LM with an lm_head (a ...ForCausalLM); got "
            f"{type(model).__name__} without one"
        )
    with torch.no_grad():
        return _builder(model_type)(model)
