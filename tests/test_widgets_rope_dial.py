"""Chapter 5's RopeDial: frames equal course_utils.positions (and transformers' Llama RoPE), only
the distance changes the score, bad inputs are rejected, and the data stays within budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.positions import apply_rope, rope_frequencies
from course_utils.widgets import RopeDial
from course_utils.widgets._base import MAX_STATE_BYTES, unpack_array


@pytest.fixture(scope="module")
def dial() -> RopeDial:
    return RopeDial(n_positions=24, n_distances=12)


def test_pairs_equal_apply_rope(dial: RopeDial) -> None:
    q_pairs = unpack_array(dial.frames["q_pairs"])  # (n_b, n_q, d/2, 2)
    k_pairs = unpack_array(dial.frames["k_pairs"])  # (n_b, n_p, d/2, 2)
    half = dial.d // 2
    assert q_pairs.shape == (3, 24 + 12 - 1, half, 2) and k_pairs.shape == (3, 24, half, 2)
    for b, base in enumerate(dial.bases):
        for name, pairs in (("q", q_pairs), ("k", k_pairs)):
            vec = torch.from_numpy(getattr(dial, f"_{name}"))  # (d,)
            pos = torch.arange(pairs.shape[1])
            rot = apply_rope(vec.expand(len(pos), -1), pos, base=base).numpy()  # (P, d)
            np.testing.assert_allclose(pairs[b, ..., 0], rot[:, :half], atol=6e-4)
            np.testing.assert_allclose(pairs[b, ..., 1], rot[:, half:], atol=6e-4)


def test_scores_depend_only_on_the_distance(dial: RopeDial) -> None:
    scores = unpack_array(dial.frames["scores"])  # (n_b, n_p, n_d)
    for b, base in enumerate(dial.bases):
        q = torch.from_numpy(dial._q)
        k = torch.from_numpy(dial._k)
        for p in (0, 7, 23):
            for delta in (0, 3, 11):
                qr = apply_rope(q[None], torch.tensor([p + delta]), base=base)[0]
                kr = apply_rope(k[None], torch.tensor([p]), base=base)[0]
                expected = float(qr @ kr) / math.sqrt(dial.d)
                assert scores[b, p, delta] == pytest.approx(expected, abs=6e-4)
        # every row (every absolute position p) is the same curve, up to rounding
        np.testing.assert_allclose(
            scores[b], np.broadcast_to(scores[b, :1], scores[b].shape), atol=2e-3
        )
    shares = unpack_array(dial.frames["shares"])  # (n_b, n_d, d/2)
    np.testing.assert_allclose(shares.sum(-1), scores[:, 0, :], atol=3e-3)


def test_frequencies_and_transformers_agree(dial: RopeDial) -> None:
    theta = unpack_array(dial.frames["theta"])  # (n_b, d/2)
    for b, base in enumerate(dial.bases):
        np.testing.assert_allclose(theta[b], rope_frequencies(dial.d, base=base), atol=1e-6)
    import transformers
    from transformers.models.llama.modeling_llama import rotate_half

    q = torch.from_numpy(dial._q).float()  # (d,)
    pos = torch.arange(30).float()[:, None]  # (P, 1)
    inv = torch.from_numpy(rope_frequencies(dial.d, base=dial.bases[-1])).float()  # (d/2,)
    emb = torch.cat([pos * inv, pos * inv], dim=-1)  # (P, d), as LlamaRotaryEmbedding builds it
    ref = q * emb.cos() + rotate_half(q.expand(30, -1)) * emb.sin()  # (P, d)
    ours = unpack_array(dial.frames["q_pairs"])[-1, :30]  # (P, d/2, 2)
    np.testing.assert_allclose(np.concatenate([ours[..., 0], ours[..., 1]], -1), ref, atol=6e-4)
    assert transformers is not None


def test_state_and_properties(dial: RopeDial) -> None:
    assert dial.data_bytes() < MAX_STATE_BYTES
    assert RopeDial().data_bytes() < MAX_STATE_BYTES
    dial.base_index, dial.distance_index = 2, 4
    s = dial.score
    for p in (0, 5, 23):
        dial.position_index = p
        assert (dial.key_position, dial.query_position) == (p, p + 4)
        assert dial.score == pytest.approx(s, abs=1e-9)
    dial.distance_index = 5
    assert dial.score != pytest.approx(s, abs=1e-6)
    assert repr(dial) == "RopeDial(title='')"


def test_custom_vectors() -> None:
    w = RopeDial([1.0, 0.0], [1.0, 0.0], bases=[1.0], n_positions=4, n_distances=4)
    # d = 2, theta = 1: the score is cos(Δ)/√2
    scores = unpack_array(w.frames["scores"])[0, 0]
    np.testing.assert_allclose(scores, np.cos(np.arange(4)) / math.sqrt(2), atol=6e-4)


BAD = [
    (lambda: RopeDial([1.0, 0.0, 0.0], [1.0, 0.0, 0.0]), ValueError, r"even length d.*d = 3"),
    (lambda: RopeDial([1.0, 0.0], [1.0, 0.0, 0.0, 0.0]), ValueError, r"same shape.*\(2,\).*\(4,\)"),
    (lambda: RopeDial([[1.0, 0.0]], [[1.0, 0.0]]), ValueError, r"q must be a vector.*\(1, 2\)"),
    (lambda: RopeDial([1.0, 0.0]), ValueError, r"give both q and k"),
    (lambda: RopeDial(["a", "b"], ["c", "d"]), TypeError, r"q must be a numeric array"),
    (lambda: RopeDial([1.0, np.nan], [1.0, 0.0]), ValueError, r"q contains NaN"),
    (lambda: RopeDial(bases=[]), ValueError, r"bases must hold 1 to 4"),
    (lambda: RopeDial(bases=[10.0, -1.0]), ValueError, r"every entry of bases must be a finite"),
    (lambda: RopeDial(bases="10"), TypeError, r"bases must be a sequence"),
    (lambda: RopeDial(n_positions=1), ValueError, r"n_positions must be an int in \[2, 64\]"),
    (lambda: RopeDial(n_distances=2.0), TypeError, r"n_distances must be an int"),
    (
        lambda: RopeDial(distance_index=16),
        ValueError,
        r"distance_index must be an int in \[0, 15\]",
    ),
    (lambda: RopeDial(base_index=3), ValueError, r"base_index must be an int in \[0, 2\]"),
]


@pytest.mark.parametrize(("call", "error", "match"), BAD)
def test_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


def test_index_traits_are_checked(dial: RopeDial) -> None:
    with pytest.raises(ValueError, match=r"position_index must be an int in \[0, 23\]; got 24"):
        dial.position_index = 24
