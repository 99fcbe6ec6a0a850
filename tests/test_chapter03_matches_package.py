"""Chapter 3 builds the four steps in cells; its results must equal course_utils's and PyTorch's.

The chapter's code cells run in one namespace (IPython magics dropped, figures on the Agg
backend, widgets created without a kernel). The step-by-step variables (``step1_scores`` ...
``step4_output``), the masked weights and the fully-masked-row results are compared with the
package applied to data taken fresh from ``course_utils.data``. Mutation tests change one step of
the chapter's code and check that the comparison catches it, so this test can fail. Numbers the
prose states are checked too: the overflow thresholds it quotes are glued from the executed
outputs (``tests/test_glue.py``) and checked here on the glued values (the PyTorch version it
quotes, also glued: ``tests/test_content_corrections.py``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
import torch

from course_kit.myst import glued_values
from course_utils.attention import attention_scores, scaled_dot_product_attention
from course_utils.data import by_hand_example, query_plane_example, reading_example
from course_utils.geometry import in_convex_polygon
from course_utils.masks import causal_mask
from course_utils.softmax import softmax

from .notebook_runner import CHAPTERS, run_notebook_cells

NOTEBOOK = CHAPTERS / "03_softmax_weighted_sum.ipynb"
ZH_NOTEBOOK = CHAPTERS.parent / "locale" / "zh_CN" / "notebooks" / "chapters" / NOTEBOOK.name


def run_chapter(mutate: tuple[str, str] | None = None) -> dict[str, Any]:
    return run_notebook_cells(NOTEBOOK, mutate=mutate)


def compare_with_package(ns: dict[str, Any]) -> None:
    """Raise AssertionError if a step-by-step result of the chapter differs from the package's."""
    ex = by_hand_example()
    raw = attention_scores(ex.Q, ex.K, scale=1.0)  # (4, 4)
    output, weights = scaled_dot_product_attention(ex.Q, ex.K, ex.V)  # (4, 3), (4, 4)
    np.testing.assert_allclose(ns["step1_scores"], raw, err_msg="step 1: scores")
    np.testing.assert_allclose(ns["step2_scaled"], attention_scores(ex.Q, ex.K), err_msg="step 2")
    np.testing.assert_allclose(ns["step3_weights"], weights, err_msg="step 3: weights")
    np.testing.assert_allclose(ns["step4_output"], output, err_msg="step 4: output")
    torch_out = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (ex.Q, ex.K, ex.V))
    ).numpy()  # (4, 3)
    np.testing.assert_allclose(ns["step4_output"], torch_out, atol=1e-12, err_msg="step 4 vs torch")

    rd = reading_example()
    mask = causal_mask(rd.T)  # (4, 4)
    _, masked = scaled_dot_product_attention(rd.Q, rd.K, rd.V, mask)  # (4, 4)
    np.testing.assert_allclose(ns["masked_weights"], masked, err_msg="causal weights")
    assert np.all(ns["masked_weights"][~mask] == 0.0), "masked weights must be exactly 0"

    # Section 3.3: the naive formula really fails where the chapter says, and ours does not.
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for label, x in ns["rows"].items():
            if "1, 2, 3" in label:
                assert np.isfinite(ns["naive_softmax"](x)).all(), label
            else:
                assert np.isnan(ns["naive_softmax"](x)).any(), label
            np.testing.assert_allclose(
                softmax(x).astype(np.float64),
                torch.softmax(torch.tensor(x.astype(np.float32)), dim=-1).numpy(),
                atol=1e-3,
                err_msg=label,
            )


def test_chapter_equals_package() -> None:
    compare_with_package(run_chapter())


@pytest.mark.parametrize(
    "mutation",
    [
        ("step2_scaled = step1_scores / math.sqrt(d_k)", "step2_scaled = step1_scores"),
        ("softmax(step2_scaled, axis=-1)", "softmax(step2_scaled, axis=0)"),
        ("step4_output = step3_weights @ V", "step4_output = step3_weights.T @ V"),
        ("np.where(mask, rd.Q @ rd.K.T", "np.where(True, rd.Q @ rd.K.T"),
    ],
    ids=["no scaling", "softmax over columns", "transposed weights", "mask ignored"],
)
def test_comparison_catches_a_wrong_step(mutation: tuple[str, str]) -> None:
    ns = run_chapter(mutation)
    with pytest.raises(AssertionError):
        compare_with_package(ns)


def test_numbers_the_prose_states() -> None:
    ns = run_chapter()
    # 3.2: fully masked row: course_utils zeros, torch.softmax nan, torch SDPA zeros.
    assert np.all(softmax(np.full(4, -np.inf)) == 0)
    assert torch.isnan(torch.softmax(torch.full((4,), -math.inf), dim=-1)).all()
    assert np.all(ns["out_torch"][3] == 0) and np.all(ns["out_cu"][3] == 0)
    # 3.5: every output is inside the hull, and the hull check can say "outside".
    assert in_convex_polygon(ns["outputs_2d"], ns["hull"]).all()
    assert not in_convex_polygon(np.array([[3.0, 3.0]]), ns["hull"]).any()
    # The temperature widget starts at T = 1 on the plane query's scaled scores.
    plane = query_plane_example()
    _, w = plane.attention(plane.query)  # (4,)
    np.testing.assert_allclose(ns["mix"].weights, w)


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_the_overflow_thresholds_the_prose_quotes(edition: str) -> None:
    """The thresholds are glued from the executed notebook (``tests/test_glue.py``); they are
    ln of the largest float32 and float16 numbers, and the text's claims about them hold."""
    path = NOTEBOOK if edition == "en" else ZH_NOTEBOOK
    glued = {
        k: float(v)
        for k, v in glued_values(json.loads(path.read_text("utf-8"))).items()
        if k.startswith("ln_max_")
    }
    assert glued == {
        "ln_max_float32": round(math.log(np.finfo(np.float32).max), 1),
        "ln_max_float16": round(math.log(np.finfo(np.float16).max), 1),
    }
    # the printed rows: float16 scores 12, 10, 0 ("as modest as 12") overflow at 12 only, and
    # float32 scores 100, 90, 80 at 100 and 90 (naive: [nan 0. 0.] and [nan nan 0.])
    assert 10 < glued["ln_max_float16"] < 12
    assert 80 < glued["ln_max_float32"] < 90
