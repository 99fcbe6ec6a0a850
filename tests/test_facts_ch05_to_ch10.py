"""Errors of fact in chapters 5 to 10 (review 2026-12 content ch05-13, section A).

Each test names the item it guards: which code uses the rotate-half RoPE pairing (E1), causal
attention as the seed's first variant (E2), the Sparse Transformer's section and band (E4), and
the multiply-adds per number read while decoding with MHA and GQA (E5). Nothing is executed; the
zh catalogue must hold the corrected English as a msgid with a translation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polib
import torch

from course_utils import positions
from course_utils.exercises import ch05
from course_utils.i18n import t_literal
from course_utils.sparse import strided_mask
from course_utils.widgets import rope_dial

REPO = Path(__file__).resolve().parents[1]
CH = {int(p.name[:2]): p for p in sorted((REPO / "chapters").glob("*.ipynb"))}
PO = REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"


def _src(cell: dict) -> str:
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _markdown(n: int) -> str:
    nb = json.loads(CH[n].read_text(encoding="utf-8"))
    return "\n".join(_src(c) for c in nb["cells"] if c["cell_type"] == "markdown")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _zh(n: int, english: str) -> str:
    """The msgstr of the one entry whose msgid contains ``english`` (translated, not fuzzy)."""
    po = polib.pofile(str(PO / f"{CH[n].stem}.po"))
    hits = [e for e in po if english in e.msgid]
    assert len(hits) == 1, f"{len(hits)} entries of {CH[n].stem}.po contain {english!r}"
    assert hits[0].msgstr and "fuzzy" not in hits[0].flags
    return hits[0].msgstr


# --- E1, ch5: rotate-half is GPT-NeoX's and transformers', interleaved RoFormer's and Meta Llama's


def test_e1_rope_pairings_name_the_right_code():
    md = _flat(_markdown(5))
    assert "The Llama family of models, and Hugging Face `transformers`, pair" not in md
    assert "Rotate-half (Llama)" not in md
    assert "and so does Meta's reference Llama code (`apply_rotary_emb` in `llama/model.py`)" in md
    assert "GPT-NeoX and Hugging Face `transformers` pair dimension $i$ with $i + d/2$" in md
    assert "`convert_llama_weights_to_hf.py`) permutes the rows of $W_Q$ and $W_K$ once" in md
    assert (
        "Rotate-half (GPT-NeoX, Hugging Face `transformers`) and interleaved (RoFormer, Meta's "
        "Llama code) pairings" in md
    )
    doc = _flat(positions.__doc__)
    assert "what Llama-family models" not in doc
    assert "what GPT-NeoX and Hugging Face ``transformers`` use" in doc
    assert "Meta's reference Llama code" in doc
    assert "Llama-family models" not in _flat(positions.apply_rope.__doc__)
    assert "Meta 的 Llama 参考代码" in _zh(5, "and so does Meta's reference Llama code")
    assert "Meta 的 Llama 代码" in _zh(5, "Rotate-half (GPT-NeoX,")


def test_e1_rope_checker_and_dial_name_gpt_neox_not_llama_for_rotate_half():
    """The exercise's hint and the RoPE dial repeated 'rotate-half, as Llama does'."""

    def interleaved(x, p, base):
        return positions.apply_rope(
            torch.as_tensor(x), torch.as_tensor(p), base=base, interleaved=True
        )

    fb = str(ch05.check_rope(interleaved))
    assert "interleaved pairing" in fb and "Llama" not in fb
    assert "GPT-NeoX and Hugging Face transformers" in fb
    msg = next(line for line in fb.splitlines() if "interleaved pairing" in line)
    msg = msg.split("hint:", 1)[-1].strip()
    zh = t_literal(msg, "zh")
    assert "GPT-NeoX" in zh and "Llama" not in zh and zh != msg
    doc = _flat(rope_dial.RopeDial.__doc__)
    assert "as in Llama" not in doc and "Rotate-half pairing (GPT-NeoX, Hugging Face" in doc


# --- E2, ch7: causal attention is the first of the seed's variants (causal, cross, sparse)


def test_e2_causal_attention_is_the_seeds_first_variant():
    md = _markdown(7)
    assert "the seed's last variant" not in md
    assert "**causal attention (因果注意力)**, the seed's first variant" in md
    zh = _zh(7, "the seed's first variant")
    assert "第一个变体" in zh and "最后一个变体" not in zh


# --- E4, ch9: Sparse Transformer section 4.3, and how our band differs from the paper's


def test_e4_strided_pattern_cites_section_4_3_and_states_the_band():
    md = _flat(_markdown(9))
    assert "section 4.2" not in md
    assert "({cite:t}`child2019generating`, section 4.3)" in md
    assert "has $\\ell + 1$ keys; its extra key $i - \\ell$ is a stride key anyway" in md
    assert "the same keys as the paper's band $i - j \\le \\ell$ plus the stride" in md
    doc = _flat(strided_mask.__doc__)
    assert "section 4.2" not in doc and "section 4.3" in doc
    assert "第 4.3 节" in _zh(9, "section 4.3") and "第 4.2 节" not in _zh(9, "section 4.3")
    # what the text says: our band has l keys, the paper's l + 1, and the unions are the same
    t, ell = 23, 4
    m = strided_mask(t, stride=ell)
    for i in range(t):
        band = {j for j in range(max(0, i - ell), i + 1)}  # the paper's A_i^(1)
        stride = {j for j in range(i + 1) if (i - j) % ell == 0}  # A_i^(2)
        assert set(np.flatnonzero(m[i])) == band | stride
        ours = {j for j in range(i + 1) if i - j < ell}
        assert len(ours) == min(ell, i + 1) and len(band) == min(ell + 1, i + 1)


# --- E5, ch10: one multiply-add per number read in MHA, g in GQA


def test_e5_decoding_does_one_multiply_add_per_number_read_in_mha_g_in_gqa():
    md = _flat(_markdown(10))
    assert "two multiply-adds per number read" not in md
    assert "in MHA, does only about one multiply-add (two FLOPs) per number read" in md
    assert "so it does $g$ multiply-adds per number read" in md
    zh = _zh(10, "one multiply-add (two FLOPs)")
    assert "一次乘加" in zh and "$g$ 次乘加" in zh and "两次乘加" not in zh
