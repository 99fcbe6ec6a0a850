"""Chapter 6's LogitLensView: its numbers are the package's logit lens, the controls move within
range, bad inputs are rejected with the argument named, text stays text, and the state is within
budget. (That the lens itself equals transformers' model: tests/test_logit_lens.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from course_utils.pretrained.logit_lens import logit_lens
from course_utils.pretrained.smollm2 import SmolLM2, SmolLM2Config
from course_utils.widgets import LogitLensView
from course_utils.widgets._base import MAX_STATE_BYTES


def _example(n: int = 3, k: int = 2, prompt: str = "p") -> dict:
    probs = np.linspace(0.9, 0.1, n * k).reshape(n, k) / k  # rows sorted, sum < 1
    return {
        "prompt": prompt,
        "norms": np.arange(1.0, n + 1),
        "tokens": [[f"t{b}{j}" for j in range(k)] for b in range(n)],
        "probs": np.sort(probs, axis=-1)[:, ::-1],
    }


def test_the_example_shows_the_lens_of_its_model():
    w = LogitLensView.example()
    cfg = SmolLM2Config(n_layers=4, d_model=16, n_heads=2, n_kv_heads=1, d_ff=32, vocab_size=12)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = SmolLM2(cfg).eval()
    lens = logit_lens(model, torch.tensor([[0, 1, 2]]), k=3)  # "a b c"
    np.testing.assert_allclose(w.stream_norms, lens.norms.numpy(), atol=0.05)
    for block in range(5):
        w.block = block
        assert [tok for tok, _ in w.guesses] == ["abcdefghijkl"[i] for i in lens.top_ids[block]]
        np.testing.assert_allclose(
            [p for _, p in w.guesses], lens.top_probs[block].numpy(), atol=5e-4
        )


def test_prompt_and_block_select_the_numbers():
    w = LogitLensView([_example(prompt="a"), _example(prompt="b")], prompt_index=1, block=2)
    assert [tok for tok, _ in w.guesses] == ["t20", "t21"]  # prompt "b", block 2
    assert w.n_blocks == 2 and w.final_guesses(0) == ["t20", "t21"]
    assert repr(w) == "LogitLensView('b', block=2, n_blocks=2)"
    with pytest.raises(Exception, match="block"):
        w.block = 3
    with pytest.raises(Exception, match="prompt_index"):
        w.prompt_index = 2


@pytest.mark.parametrize(
    ("examples", "error", "match"),
    [
        ([], TypeError, "non-empty list"),
        ({"prompt": "x"}, TypeError, "non-empty list"),
        ([{"prompt": "x"}], TypeError, r"examples\[0\] must be a dict with 'prompt'"),
        ([{**_example(), "prompt": ""}], TypeError, r"\['prompt'\] must be a non-empty str"),
        ([{**_example(), "norms": [1.0]}], ValueError, r"\['norms'\] must have shape"),
        ([{**_example(), "norms": [1.0, -1, 2]}], ValueError, "finite and >= 0"),
        ([{**_example(), "tokens": [["a", "b"]]}], ValueError, "one list of guesses per entry"),
        ([{**_example(), "probs": np.zeros((3, 3))}], ValueError, r"shape \(3, 3\), expected"),
        ([{**_example(), "probs": np.full((3, 2), 0.7)}], ValueError, "at most 1"),
        ([{**_example(), "probs": [[0.1, 0.2]] * 3}], ValueError, "sorted"),
        ([_example(n=3), _example(n=4)], ValueError, "same number of blocks"),
        ([_example()] * 7, ValueError, "at most 6 prompts"),
    ],
)
def test_bad_inputs(examples, error, match):
    with pytest.raises(error, match=match):
        LogitLensView(examples)


def test_from_model_needs_a_tokenizer():
    cfg = SmolLM2Config(n_layers=1, d_model=8, n_heads=2, n_kv_heads=1, d_ff=8, vocab_size=5)
    with pytest.raises(ValueError, match="no tokenizer"):
        LogitLensView.from_model(SmolLM2(cfg), ["x"])


def test_hostile_tokens_stay_plain_text():
    hostile = "<img src=x onerror=alert(1)>"
    ex = _example()
    ex["tokens"][0][0] = hostile
    w = LogitLensView([{**ex, "prompt": hostile}])
    assert w.tokens[0][0][0] == hostile and w.prompts == [hostile]


def test_state_within_budget_and_js_reads_the_traits():
    # four prompts, 30 blocks and five guesses, as chapter 6 shows
    w = LogitLensView([_example(n=31, k=5, prompt=f"prompt {i}") for i in range(4)])
    size = len(json.dumps({k: getattr(w, k) for k in ("prompts", "norms", "tokens", "probs")}))
    assert size < MAX_STATE_BYTES and w.data_bytes() < 50_000
    for trait in ("prompts", "norms", "tokens", "probs", "prompt_index", "block"):
        assert f'"{trait}"' in w._esm or f"change:{trait}" in w._esm
