"""course_utils.topic_focus: dataset, classifier, rollout, gradient × input, ablation, statistics.

Oracles: a 2-layer rollout computed by hand (Abnar & Zuidema 2020, Eq. 1 with heads averaged);
gradient × input of a linear model equals f(x) − f(0) exactly; the attention pooling equals
``torch.nn.functional.scaled_dot_product_attention`` with one query; a bootstrap of constants.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.topic_focus import (
    ERASER_BINS,
    TOPICS,
    AttentionPoolingClassifier,
    ablate,
    ablation_study,
    attention_flow,
    attention_rollout,
    bootstrap_ci,
    classifier_eraser,
    classifier_gradient_x_input,
    classifier_integrated_gradients,
    eraser_faithfulness,
    gradient_x_input,
    integrated_gradients,
    make_batch,
    make_split,
    real_sentences,
    residual_attention,
    template_sentences,
    top_fraction_masks,
    top_k_precision,
    topic_mask,
    train_classifier,
    without_rounding_noise,
    word_tokens,
)
from course_utils.topic_focus.dataset import find_spans, load_topic_data


@pytest.fixture(scope="module")
def trained():
    data = make_split(n_train=300, n_test=100, seed=0)
    return train_classifier(data, seed=0, steps=40, eval_every=5)


# --- dataset ---------------------------------------------------------------------------------


def test_real_sentences_topic_words_are_in_the_vocabulary():
    data = load_topic_data()
    real = real_sentences()
    assert len(real) == 48
    assert sum(s.lang == "en" for s in real) == 32
    for s in real:
        vocab = data["vocabulary"][s.topic][s.lang]
        assert s.topic_words and all(w in vocab for w in s.topic_words), s.text
        assert s.topic_spans, s.text


def test_seed_sentences_are_kept():
    texts = {s.text for s in real_sentences()}
    assert "小明在银行边的长椅上看书" in texts and "看书真好" in texts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_template_sentences_are_seeded_and_balanced(seed):
    a, b = template_sentences(40, seed=seed), template_sentences(40, seed=seed)
    assert [s.text for s in a] == [s.text for s in b]
    counts = [sum(s.topic == t for s in a) for t in TOPICS]
    assert counts == [10, 10, 10, 10]
    for s in a:
        _, spans = word_tokens(s.text)
        assert topic_mask(spans, s.topic_spans).any(), s.text


def test_topic_mask_for_wordpieces_and_characters():
    # thunder ##storm ##s: every piece of the word is a topic token; [CLS] (0, 0) never is
    spans = [(0, 0), (0, 5), (6, 13), (13, 18), (18, 19), (0, 0)]
    assert topic_mask(spans, [(6, 19)]).tolist() == [False, False, True, True, True, False]
    tokens, spans = word_tokens("今天下雨了")
    assert tokens == ["今", "天", "下", "雨", "了"]
    assert topic_mask(spans, find_spans("今天下雨了", ["下雨"])).tolist() == [0, 0, 1, 1, 0]


def test_find_spans_whole_words_only():
    assert find_spans("rainfall and rain", ["rain"]) == ((13, 17),)
    with pytest.raises(ValueError, match="does not occur"):
        find_spans("sunny day", ["rain"])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: template_sentences(0), ValueError, "n must be"),
        (lambda: template_sentences(5, zh_fraction=2.0), ValueError, "zh_fraction"),
        (lambda: word_tokens(3), TypeError, "text must be a str"),
        (lambda: find_spans("a b", [""]), ValueError, "non-empty"),
    ],
)
def test_dataset_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- classifier ------------------------------------------------------------------------------


def test_pooling_equals_torch_sdpa_with_one_query():
    torch.manual_seed(0)
    model = AttentionPoolingClassifier(vocab_size=20, n_classes=4, d_model=8, d_k=4)
    with torch.no_grad():
        model.query.normal_()
    ids = torch.tensor([[3, 5, 7, 0], [2, 9, 0, 0]])  # (B, T), 0 = padding
    mask = ids != 0
    logits, weights = model(ids, mask)  # (B, C), (B, T)
    x = model.embed(ids)  # (B, T, d)
    k = model.W_K(x)  # (B, T, d_k)
    q = model.query.expand(2, 1, 4)  # (B, 1, d_k)
    # values = the embeddings themselves; SDPA's bool mask: True = may attend (like ours)
    pooled = torch.nn.functional.scaled_dot_product_attention(q, k, x, attn_mask=mask[:, None, :])[
        :, 0
    ]  # (B, d)
    torch.testing.assert_close(logits, model.out(pooled))
    assert (weights[~mask] == 0).all()
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(2))


def test_classifier_beats_chance_on_a_short_seeded_run(trained):
    assert trained.test_accuracy > 0.9  # chance is 0.25
    assert trained.topic_share_curve[-1] > trained.topic_share_curve[0] + 0.3


def test_training_is_deterministic(computed_every_time: None) -> None:
    data = make_split(n_train=100, n_test=40, seed=3)
    a = train_classifier(data, seed=1, steps=5, eval_every=5)
    b = train_classifier(data, seed=1, steps=5, eval_every=5)
    assert a.topic_share_curve == b.topic_share_curve
    for p, q in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(p, q)


def test_initial_attention_is_uniform(trained):
    """The query starts at zero, so at step 0 the share on topic words is their share of tokens."""
    data = make_split(n_train=300, n_test=100, seed=0)
    batch = make_batch(data.test, data.vocab)
    token_share = (batch.is_topic.sum(1) / batch.mask.sum(1)).float().mean().item()
    assert trained.topic_share_curve[0] == pytest.approx(token_share, abs=1e-6)


def test_uniform_attention_baseline_keeps_every_weight_at_one_over_t():
    """Wiegreffe and Pinter's first test: the same model trained with uniform weights. The query
    never moves, every sentence's weights stay 1/T, and the rest of the model still learns."""
    data = make_split(n_train=200, n_test=80, seed=0)
    uniform = train_classifier(data, seed=0, steps=20, eval_every=5, attention="uniform")
    learned = train_classifier(data, seed=0, steps=20, eval_every=5)
    assert torch.equal(uniform.model.query, torch.zeros_like(uniform.model.query))
    _, weights = uniform.predict(data.test)
    for w in weights:
        np.testing.assert_allclose(w, np.full(len(w), 1 / len(w)), rtol=1e-12)
    assert len(set(uniform.topic_share_curve)) == 1  # the share of topic tokens, throughout
    assert uniform.topic_share_curve[0] == learned.topic_share_curve[0]
    assert learned.topic_share_curve[-1] > uniform.topic_share_curve[-1] + 0.3
    assert uniform.test_accuracy > 0.5  # the embeddings and the output layer learn (chance 0.25)
    same_init = train_classifier(data, seed=0, steps=1, eval_every=1, attention="uniform")
    assert same_init.test_accuracy_curve[0] == learned.test_accuracy_curve[0]


def test_attention_setting_rejects_unknown_kinds():
    data = make_split(n_train=20, n_test=8, seed=0)
    with pytest.raises(
        ValueError, match="attention must be one of 'learned', 'uniform'; got 'none'"
    ):
        train_classifier(data, steps=1, attention="none")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vocab_size": 0, "n_classes": 4}, "vocab_size"),
        ({"vocab_size": 5, "n_classes": 4, "d_k": 2.5}, "d_k"),
    ],
)
def test_classifier_bad_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionPoolingClassifier(**kwargs)


def test_classifier_bad_forward(trained):
    with pytest.raises(ValueError, match=r"ids must be a \(B, T\) long tensor"):
        trained.model(torch.tensor([1.0, 2.0]))
    x = torch.zeros(1, 3, 32)
    with pytest.raises(ValueError, match="mask a"):
        trained.model.forward_embeddings(x, torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="steps"):
        train_classifier(make_split(20, 8), steps=0)


# --- ablation --------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 20, 40, 47])
def test_ablation_removing_nothing_changes_nothing(trained, index):
    s = real_sentences()[index]
    probs, _ = trained.predict([s])
    T = len(word_tokens(s.text)[0])
    np.testing.assert_array_equal(ablate(trained, s, np.zeros(T, dtype=bool)), probs[0])


def test_ablation_removing_a_word_is_the_same_as_deleting_it(trained):
    """Attention pooling has no positions or context: removal == the sentence without the word."""
    s = real_sentences()[0]  # "The striker scored a late goal ..."
    tokens, _ = word_tokens(s.text)
    remove = np.array([t == "striker" for t in tokens])
    shorter = type(s)(s.text.replace("striker ", ""), s.topic, s.lang, (), ())
    # float32 sums over T and T - 1 tokens round differently (the kernel's blocking depends on T
    # and on the thread count): equal to float32 precision, not to the last bit.
    np.testing.assert_allclose(
        ablate(trained, s, remove), trained.predict([shorter])[0][0], rtol=1e-5, atol=1e-12
    )


def test_ablation_batched_rows_equal_single_rows(trained):
    s = real_sentences()[3]
    T = len(word_tokens(s.text)[0])
    masks = np.eye(T, dtype=bool)  # (T, T): remove one word per row
    together = ablate(trained, s, masks)
    for t in range(T):
        np.testing.assert_allclose(together[t], ablate(trained, s, masks[t]), rtol=1e-5)


def test_ablation_study_shapes_and_bad_input(trained):
    res = ablation_study(trained, list(real_sentences()[:10]), k=1, n_random=3)
    assert res.drop_attention.shape == res.drop_random.shape == (10,)
    assert ((res.flip_random >= 0) & (res.flip_random <= 1)).all()
    with pytest.raises(ValueError, match="k must be"):
        ablation_study(trained, real_sentences()[:2], k=0)
    with pytest.raises(ValueError, match="remove must be a bool array"):
        ablate(trained, real_sentences()[0], np.zeros(3, dtype=bool))


# --- gradient × input -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_gradient_x_input_sums_to_the_change_from_zero_for_a_linear_model(seed):
    g = torch.Generator().manual_seed(seed)
    T, d = 3 + seed, 5
    w = torch.randn(T, d, generator=g, dtype=torch.float64)
    b = torch.randn((), generator=g, dtype=torch.float64)
    x = torch.randn(T, d, generator=g, dtype=torch.float64)

    def f(x):
        return (w * x).sum() + b

    attributions = gradient_x_input(f, x)  # (T,)
    assert attributions.shape == (T,)
    torch.testing.assert_close(attributions.sum(), f(x) - f(torch.zeros_like(x)))
    torch.testing.assert_close(attributions, (w * x).sum(dim=1))


def test_gradient_x_input_bad_input():
    with pytest.raises(ValueError, match=r"\(T, d\)"):
        gradient_x_input(lambda x: x.sum(), torch.zeros(3))
    with pytest.raises(ValueError, match="scalar"):
        gradient_x_input(lambda x: x, torch.zeros(2, 2))


def test_classifier_gradient_x_input_has_one_value_per_token(trained):
    s = real_sentences()[1]
    g = classifier_gradient_x_input(trained, s)
    assert g.shape == (len(word_tokens(s.text)[0]),)
    assert np.isfinite(g).all()


# --- rollout ----------------------------------------------------------------------------------


def test_rollout_two_layers_by_hand():
    # Layer 0 has two heads whose average is [[1, 0], [0.5, 0.5]]; layer 1 one head.
    head_a = [[1.0, 0.0], [1.0, 0.0]]
    head_b = [[1.0, 0.0], [0.0, 1.0]]
    layer1 = [[0.0, 1.0], [0.0, 1.0]]
    maps = np.array([[head_a, head_b], [layer1, layer1]])  # (L=2, H=2, T=2, T=2)
    # A_0 = 0.5 I + 0.5 [[1, 0], [.5, .5]] = [[1, 0], [.25, .75]]
    # A_1 = 0.5 I + 0.5 [[0, 1], [0, 1]]   = [[.5, .5], [0, 1]]
    # R = A_1 A_0 = [[.5 + .125, .375], [.25, .75]]
    expected = np.array([[0.625, 0.375], [0.25, 0.75]])
    np.testing.assert_allclose(attention_rollout(maps), expected)
    np.testing.assert_allclose(attention_rollout(torch.tensor(maps)), expected)


def test_rollout_without_residual_is_the_product_of_mean_maps():
    rng = np.random.default_rng(0)
    maps = rng.random((3, 2, 4, 4))
    maps /= maps.sum(-1, keepdims=True)
    mean = maps.mean(axis=1)  # (L, T, T)
    np.testing.assert_allclose(
        attention_rollout(maps, residual=0.0), mean[2] @ mean[1] @ mean[0], atol=1e-12
    )


@settings(max_examples=25, deadline=None)
@given(L=st.integers(1, 4), H=st.integers(1, 3), T=st.integers(1, 6), seed=st.integers(0, 999))
def test_rollout_rows_are_distributions(L, H, T, seed):
    rng = np.random.default_rng(seed)
    maps = rng.random((L, H, T, T)) + 1e-3
    maps /= maps.sum(-1, keepdims=True)
    R = attention_rollout(maps)
    assert R.shape == (T, T)
    assert (R >= 0).all()
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-9)


def test_rollout_on_the_real_model():
    from course_utils.pretrained import attention_maps

    tokens, maps = attention_maps("Rain again today.")
    R = attention_rollout(maps)
    assert R.shape == (len(tokens), len(tokens))
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("maps", "kwargs", "match"),
    [
        (np.ones((2, 2, 2)), {}, r"at least 4 dimensions"),
        (np.ones((1, 1, 2, 3)) / 3, {}, r"\(L, H, T, T\)"),
        (np.ones((1, 1, 2, 2)), {}, "sum to 1"),
        (np.full((1, 1, 2, 2), 0.5), {"residual": 1.5}, "residual"),
    ],
)
def test_rollout_bad_input(maps, kwargs, match):
    with pytest.raises(ValueError, match=match):
        attention_rollout(maps, **kwargs)


# --- statistics -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "is_topic", "k", "expected"),
    [
        ([3, 2, 1, 0], [1, 1, 0, 0], None, 1.0),
        ([0, 1, 2, 3], [1, 1, 0, 0], None, 0.0),
        ([3, 0, 2, 1], [1, 1, 0, 0], 2, 0.5),
        ([1, 1, 1, 1], [0, 1, 0, 0], 1, 0.0),  # ties go to the earlier token
        ([5, 1, 0], [0, 1, 0], 1, 0.0),
    ],
)
def test_top_k_precision_table(scores, is_topic, k, expected):
    assert top_k_precision(scores, np.array(is_topic, dtype=bool), k) == expected


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([3e-9, 2.0, -1e-19, -0.5, 1e-3], [0.0, 2.0, 0.0, -0.5, 1e-3]),
        ([-10.0, 9e-6, 1.1e-5], [-10.0, 0.0, 1.1e-5]),  # the floor is 1e-6 of the largest |score|
        ([0.0, 0.0], [0.0, 0.0]),
        ([1e-30, 2e-30], [1e-30, 2e-30]),  # tiny scores alone are not noise: the scale is theirs
    ],
)
def test_without_rounding_noise_table(scores, expected):
    assert without_rounding_noise(np.array(scores)).tolist() == expected


@settings(max_examples=50, deadline=None)
@given(
    big=st.lists(st.floats(0.01, 20.0), min_size=1, max_size=4),
    noise=st.lists(st.floats(-1e-9, 1e-9), min_size=2, max_size=6),  # ≪ 1e-6 of the largest
    seed=st.integers(0, 2**16),
)
def test_rankings_of_denoised_scores_ignore_the_last_bits(big, noise, seed):
    """Words a gradient ignores get rounding noise (1e-9, 1e-19): perturbing that noise, as
    another CPU's kernels do, must not change a top-k pick or a precision."""
    scores = np.array(big + noise)
    jitter = np.random.default_rng(seed).uniform(-1e-9, 1e-9, size=scores.size)
    jitter[: len(big)] = 0.0  # the real scores are the same on every machine
    a, b = without_rounding_noise(scores), without_rounding_noise(scores + jitter)
    assert np.argsort(-a, kind="stable").tolist() == np.argsort(-b, kind="stable").tolist()
    m = np.arange(scores.size) % 2 == 1
    for k in range(1, scores.size + 1):
        assert top_k_precision(a, m, k) == top_k_precision(b, m, k)


def test_classifier_gradient_has_no_rounding_noise(trained):
    """The classifier's gradient × input is exactly 0 where it would be rounding noise."""
    for s in real_sentences()[:12]:
        g = classifier_gradient_x_input(trained, s)  # (T,)
        small = np.abs(g) < 1e-6 * np.abs(g).max()
        assert (g[small] == 0.0).all()


def test_top_k_precision_candidates_and_errors():
    m = np.array([False, True, False])
    assert top_k_precision([9, 1, 0], m, candidates=np.array([False, True, True])) == 1.0
    with pytest.raises(ValueError, match="k must be"):
        top_k_precision([1, 2, 3], m, k=4)
    with pytest.raises(TypeError, match="bool"):
        top_k_precision([1, 2, 3], [0, 1, 0])
    with pytest.raises(ValueError, match=r"\(T,\)"):
        top_k_precision([1, 2], m)


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    v = rng.random(40)
    mean, low, high = bootstrap_ci(v, seed=3)
    assert low < mean < high
    assert bootstrap_ci(v, seed=3) == (mean, low, high)
    assert bootstrap_ci([0.5] * 5) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(v, level=1.5)


# --- attention flow, integrated gradients, ERASER (issue 35) ------------------------------------
# Oracles we did not write: networkx's maximum_flow_value for attention flow; the closed forms of
# integrated gradients for a linear and a quadratic score (the paper's Riemann sum, worked out by
# hand); DeYoung et al.'s definitions of comprehensiveness and sufficiency on hand-made tables.


def _random_maps(rng: np.random.Generator, L: int, H: int, T: int) -> np.ndarray:
    w = rng.random((L, H, T, T)) ** 3 + 1e-3  # cubed: uneven weights, narrow edges
    return w / w.sum(axis=-1, keepdims=True)


def _networkx_flow(maps: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Max flow from every input to every output in the layer graph, by networkx."""
    A = residual_attention(maps, residual=residual)  # (L, T, T)
    L, T, _ = A.shape
    G = nx.DiGraph()
    for layer in range(L):
        for i in range(T):
            for j in range(T):
                G.add_edge((layer, j), (layer + 1, i), capacity=float(A[layer, i, j]))
    return np.array(
        [[nx.maximum_flow_value(G, (0, j), (L, i)) for j in range(T)] for i in range(T)]
    )


# --- attention flow ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("L", "H", "T", "seed", "residual"),
    [
        (1, 1, 2, 0, 0.5),
        (2, 1, 3, 1, 0.5),
        (3, 2, 4, 2, 0.5),
        (4, 3, 5, 3, 0.5),
        (2, 2, 6, 4, 0.0),
        (3, 1, 4, 5, 0.9),
        (6, 2, 3, 6, 0.5),
    ],
)
def test_attention_flow_equals_networkx_maximum_flow(L, H, T, seed, residual):
    maps = _random_maps(np.random.default_rng(seed), L, H, T)
    flow = attention_flow(maps, residual=residual)
    np.testing.assert_allclose(flow, _networkx_flow(maps, residual), atol=1e-9)


def test_attention_flow_two_layers_by_hand():
    # A_0 = [[1, 0], [1/4, 3/4]], A_1 = [[1/2, 1/2], [0, 1]] (the rollout example's matrices).
    # Into output 0 at most A_1[0, 0] + A_1[0, 1] = 1 can arrive. From input 0: via token 0
    # below layer 1, min(A_0[0, 0], A_1[0, 0]) = 1/2; via token 1, min(A_0[1, 0], A_1[0, 1]) =
    # 1/4: 3/4. From input 1: only via token 1, min(3/4, 1/2) = 1/2.
    A0 = [[1.0, 0.0], [0.5, 0.5]]
    A1 = [[0.0, 1.0], [0.0, 1.0]]
    flow = attention_flow(np.array([[A0], [A1]]))
    np.testing.assert_allclose(flow, [[0.75, 0.5], [0.25, 0.75]], atol=1e-12)
    np.testing.assert_allclose(attention_flow(np.array([[A0], [A1]]), outputs=[1]), flow[1:])


def test_attention_flow_of_one_layer_is_the_layer():
    maps = _random_maps(np.random.default_rng(7), 1, 3, 5)
    np.testing.assert_allclose(attention_flow(maps), residual_attention(maps)[0], atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(L=st.integers(1, 4), H=st.integers(1, 3), T=st.integers(1, 5), seed=st.integers(0, 999))
def test_attention_flow_lies_between_rollout_and_one(L, H, T, seed):
    # rollout's paths, each carrying the product of its capacities, are a feasible flow, so
    # rollout <= flow; everything reaching output i enters through capacities summing to 1.
    maps = _random_maps(np.random.default_rng(seed), L, H, T)
    flow = attention_flow(maps)
    assert (attention_rollout(maps) <= flow + 1e-9).all()
    assert (flow <= 1 + 1e-9).all()
    # and no more leaves input j than its edges into the first layer carry
    column = residual_attention(maps)[0].sum(axis=0)  # (T,)
    assert (flow <= column[None, :] + 1e-9).all()


def test_attention_flow_on_the_real_model():
    from course_utils.pretrained import attention_maps

    tokens, maps = attention_maps("Rain again today.")
    flow = attention_flow(maps, outputs=[0])
    assert flow.shape == (1, len(tokens))
    assert (attention_rollout(maps)[:1] <= flow + 1e-6).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"outputs": [5]}, r"outputs\[\.\.\.\] must be"),
        ({"residual": -0.1}, "residual must be in"),
    ],
)
def test_attention_flow_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        attention_flow(np.full((1, 1, 2, 2), 0.5), **kwargs)


# --- integrated gradients ----------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "steps"), [(0, 1), (1, 7), (2, 50)])
def test_integrated_gradients_of_a_linear_score_is_exact(seed, steps):
    g = torch.Generator().manual_seed(seed)
    w, x, base = (torch.randn(4, 3, generator=g, dtype=torch.float64) for _ in range(3))
    ig = integrated_gradients(lambda xs: (w * xs).sum(dim=(1, 2)) + 2.0, x, base, steps=steps)
    torch.testing.assert_close(ig, (w * (x - base)).sum(dim=-1))  # closed form, any m


@pytest.mark.parametrize(("seed", "steps"), [(0, 1), (1, 4), (2, 100)])
def test_integrated_gradients_of_a_square_matches_the_riemann_sum_worked_out(seed, steps):
    # score = Σ x²: the gradient at x' + (k/m)(x − x') is 2x' + 2(k/m)(x − x'); averaged over
    # k = 1..m it is 2x' + (m + 1)/m · (x − x'), so IG = (x − x')(x + x') + (x − x')²/m.
    g = torch.Generator().manual_seed(seed)
    x, base = (torch.randn(3, 5, generator=g, dtype=torch.float64) for _ in range(2))
    ig = integrated_gradients(lambda xs: (xs**2).sum(dim=(1, 2)), x, base, steps=steps)
    d = x - base
    torch.testing.assert_close(ig, (d * (x + base) + d**2 / steps).sum(dim=-1))


def test_classifier_integrated_gradients_completeness_improves_with_steps(trained):
    sentence = list(real_sentences())[3]
    batch = make_batch([sentence], trained.vocab)
    with torch.no_grad():
        x = trained.model.embed(batch.ids)  # (1, T, d)
        full, _ = trained.model.forward_embeddings(x, batch.mask)
        zero, _ = trained.model.forward_embeddings(torch.zeros_like(x), batch.mask)
    c = int(full.argmax())
    change = float((full[0, c] - full[0].mean()) - (zero[0, c] - zero[0].mean()))
    errors = [
        abs(classifier_integrated_gradients(trained, sentence, steps=m).sum() - change)
        for m in (8, 64, 512)
    ]
    assert errors[2] < errors[1] < errors[0]
    assert errors[2] < 0.01 * abs(change)


def test_classifier_integrated_gradients_with_one_step_is_gradient_x_input_at_x(trained):
    # m = 1: the only point of the sum is x itself (k/m = 1)
    sentence = next(iter(real_sentences()))
    np.testing.assert_allclose(
        classifier_integrated_gradients(trained, sentence, steps=1),
        classifier_gradient_x_input(trained, sentence),
        rtol=1e-6,
        atol=1e-9,
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x": torch.ones(3)}, r"x must be a floating \(T, d\) tensor"),
        ({"baseline": torch.zeros(2, 3)}, "baseline must have the shape of x"),
        ({"steps": 0}, "steps must be"),
        ({"score": lambda xs: xs.sum()}, r"score must return a \(50,\) tensor"),
    ],
)
def test_integrated_gradients_bad_input(kwargs, match):
    args = {"score": lambda xs: xs.sum(dim=(1, 2)), "x": torch.ones(2, 2)} | kwargs
    with pytest.raises(ValueError, match=match):
        integrated_gradients(**args)


# --- ERASER: comprehensiveness and sufficiency -------------------------------------------------


@pytest.mark.parametrize(
    ("p_full", "p_without", "p_only", "expected"),
    [
        # one bin: the paper's definitions, p(c|x) − p(c|x∖r) and p(c|x) − p(c|r)
        ([0.8, 0.2], [[0.3, 0.7]], [[0.75, 0.25]], (0.5, 0.05)),
        # the predicted class is the argmax of the full prediction (class 1 here), in every bin
        (
            [0.1, 0.6, 0.3],
            [[0.2, 0.5, 0.3], [0.5, 0.1, 0.4]],
            [[0.0, 0.7, 0.3], [0, 0.6, 0.4]],
            (0.3, -0.05),
        ),
        # AOPC: the mean over the bins, not the sum, not the last bin
        (
            [0.9, 0.1],
            [[0.6, 0.4], [0.35, 0.65], [0.2, 0.8]],
            [[0.7, 0.3], [0.85, 0.15], [0.88, 0.12]],
            (0.55 / 3 + 0.30 / 3 + 0.70 / 3, 0.27 / 3),
        ),
    ],
)
def test_eraser_faithfulness_hand_made_cases(p_full, p_without, p_only, expected):
    np.testing.assert_allclose(eraser_faithfulness(p_full, p_without, p_only), expected, atol=1e-12)


def test_top_fraction_masks_counts_and_ties():
    masks = top_fraction_masks(np.array([0.2, 0.9, 0.2, 0.1, 0.5, 0.0, 0.3, 0.4, 0.6, 0.7]))
    # 10 tokens: 1 %, 5 %, 10 % -> 1 token (at least one), 20 % -> 2, 50 % -> 5
    assert masks.sum(axis=1).tolist() == [1, 1, 1, 2, 5]
    assert np.flatnonzero(masks[4]).tolist() == [1, 4, 7, 8, 9]
    # a tie goes to the earlier token
    assert top_fraction_masks([0.5, 0.5, 0.1], (0.3,)).tolist() == [[True, False, False]]


def test_classifier_eraser_equals_the_definitions_by_ablation(trained):
    sentence = list(real_sentences())[5]
    (p_full,), (w,) = (x for x in trained.predict([sentence]))
    masks = top_fraction_masks(w)
    p_without, p_only = ablate(trained, sentence, masks), ablate(trained, sentence, ~masks)
    c = p_full.argmax()
    comp, suff = classifier_eraser(trained, sentence, w)
    assert comp == pytest.approx(np.mean(p_full[c] - p_without[:, c]), abs=1e-12)
    assert suff == pytest.approx(np.mean(p_full[c] - p_only[:, c]), abs=1e-12)
    assert ERASER_BINS == (0.01, 0.05, 0.1, 0.2, 0.5)


def test_classifier_eraser_attention_beats_reversed_ranking(trained):
    # a sanity check with a direction: ranking by attention must be more comprehensive than
    # ranking by the opposite of attention, on the hand-written sentences
    real = list(real_sentences())
    _, weights = trained.predict(real)
    best = np.mean(
        [classifier_eraser(trained, s, w)[0] for s, w in zip(real, weights, strict=True)]
    )
    worst = np.mean(
        [classifier_eraser(trained, s, -w)[0] for s, w in zip(real, weights, strict=True)]
    )
    assert best > worst + 0.1


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0.9, 0.1], [[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]), "the same bins"),
        (
            ([0.9, 0.1], [0.5, 0.5], [[0.5, 0.5]]),
            r"p_without must have at least 2 dimensions \(B, 2\)",
        ),
        (([1.0], [[1.0]], [[1.0]]), "C >= 2"),
        (([0.9, 0.3], [[0.5, 0.5]], [[0.5, 0.5]]), "p_full must hold probabilities"),
    ],
)
def test_eraser_faithfulness_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        eraser_faithfulness(*args)


@pytest.mark.parametrize(
    ("scores", "fractions", "match"),
    [
        ([], ERASER_BINS, "non-empty"),
        ([1.0, 2.0], (0.0,), r"fractions must be"),
        ([1.0, np.nan], (0.5,), "NaN"),
    ],
)
def test_top_fraction_masks_bad_input(scores, fractions, match):
    with pytest.raises(ValueError, match=match):
        top_fraction_masks(scores, fractions)


# --- the MiniLM ablation -----------------------------------------------------------------------


def test_zero_shot_after_removing_nothing_is_the_measured_zero_shot():
    from course_utils.topic_focus.measures import minilm_measures, zero_shot_after_removal

    sentence = list(real_sentences())[16]
    T = len(minilm_measures(sentence).tokens)
    sims = zero_shot_after_removal(sentence, np.zeros((1, T), dtype=bool))
    np.testing.assert_allclose(sims[0], minilm_measures(sentence).zero_shot, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[CLS\] and \[SEP\]"):
        zero_shot_after_removal(sentence, np.eye(1, T, dtype=bool))


def test_minilm_ablation_shapes_on_two_sentences():
    from course_utils.topic_focus.measures import ABLATION_MEASURES, minilm_ablation

    studies = minilm_ablation(list(real_sentences())[:2], (1,), n_random=2)
    (study,) = studies
    assert set(study.drop) == {*ABLATION_MEASURES, "random"}
    assert all(v.shape == (2,) for v in study.drop.values())
    assert all(((v >= 0) & (v <= 1)).all() for v in study.flip.values())
