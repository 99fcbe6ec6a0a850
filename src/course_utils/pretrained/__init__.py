"""Real pretrained models, run by our own code from their weight files, offline.

- :mod:`.minilm`: all-MiniLM-L6-v2, a 6-layer BERT encoder (chapters 4 and 13). Its public names
  are re-exported here, so ``from course_utils.pretrained import attention_maps`` keeps working.
- :mod:`.smollm2`: SmolLM2-135M-Instruct, a 30-layer Llama-architecture decoder with
  grouped-query attention (chapters 7 and 10): :func:`load_smollm2`.
"""

from .minilm import (
    MODEL_NAME,
    Encoding,
    attention_maps,
    encode,
    load_config,
    load_model,
    load_tokenizer,
    model_dir,
    run_encoder,
    tokenize,
    word_vectors,
)
from .smollm2 import SmolLM2, load_smollm2, smollm2_gguf_path

__all__ = [
    "MODEL_NAME",
    "Encoding",
    "SmolLM2",
    "attention_maps",
    "encode",
    "load_config",
    "load_model",
    "load_smollm2",
    "load_tokenizer",
    "model_dir",
    "run_encoder",
    "smollm2_gguf_path",
    "tokenize",
    "word_vectors",
]
