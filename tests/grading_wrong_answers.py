"""Typical wrong answers to every exercise, as a learner would type them in the exercise cell.

A test fixture for ``tests/test_grading.py`` (not package code): per exercise id, at least three
``(code, hint)`` pairs. ``code`` replaces the exercise cell's stub (the cell's checker call is
appended by the test); ``hint`` is a piece of the hint the course's checker gives that mistake (its
``Mistake`` hints, or the shared runner's), which the gradebook's feedback must contain. Most are
the wrong answers of ``tests/test_exercises_chNN.py`` and ``tests/test_exercises_catalogue.py``,
written out as source; round ``k`` of the test hands in the ``k``-th wrong answer of every
exercise at once.
"""

from __future__ import annotations

NO_RETURN = "end the function with `return ...`"

WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {
    # --- chapter 1 ---
    "ch01.dot_product": [
        ("def dot(q, k):\n    return q * k\n", "add them up"),
        ("def dot(q, k):\n    return sum(q) * sum(k)\n", "multiply entry by entry first"),
        ("def dot(q, k):\n    return sum(q + k)\n", "the entries are multiplied, not added"),
    ],
    "ch01.all_scores": [
        ("def all_scores(Q, K):\n    return K @ Q.T\n", "K·Qᵀ"),
        (
            "def all_scores(Q, K):\n    return Q @ K.T / np.sqrt(Q.shape[1])\n",
            "already divided by √d_k",
        ),
        ("def all_scores(Q, K):\n    total = Q @ K.T\n", NO_RETURN),
    ],
    "ch01.attend_one": [
        (
            "def attend_one(q, K, V):\n    w = softmax(K @ q)\n    return w, w @ V\n",
            "divide the scores by √d_k",
        ),
        (
            "def attend_one(q, K, V):\n    w = softmax(K @ q / len(q))\n    return w, w @ V\n",
            "not by d_k",
        ),
        (
            "def attend_one(q, K, V):\n    w = softmax(K @ q / np.sqrt(len(q)))\n"
            "    return w @ V, w\n",
            "weights first",
        ),
        (
            "def attend_one(q, K, V):\n    w = softmax(K @ q / np.sqrt(len(q)))\n"
            "    return w, w @ K\n",
            "mixes the values V, not the keys K",
        ),
    ],
    "ch01.shapes": [
        (
            'shapes = {"Q": (6, 4), "K": (6, 4), "V": (6, 4), "scores": (6, 6),\n'
            '          "weights": (6, 6), "output": (6, 4)}\n',
            "V:",
        ),
        (
            'shapes = {"Q": (6.7, 4.2), "K": (6, 4), "V": (6, 5), "scores": (6, 6),\n'
            '          "weights": (6, 6), "output": (6, 5)}\n',
            "whole numbers",
        ),
        (
            'shapes = {"Q": (6, 4), "K": (6, 4), "V": (6, 5), "scores": (4, 4),\n'
            '          "weights": (6, 6), "output": (6, 5)}\n',
            "scores:",
        ),
    ],
    # --- chapter 2 ---
    "ch02.score_variance": [
        (
            "def score_var(d_k, sigma_q, sigma_k):\n    return d_k * sigma_q * sigma_k\n\n\n"
            "def unit_scale(d_k, sigma_q, sigma_k):\n"
            "    return 1.0 / (sigma_q * sigma_k * math.sqrt(d_k))\n",
            "sigma**2",
        ),
        (
            "def score_var(d_k, sigma_q, sigma_k):\n    return d_k\n\n\n"
            "def unit_scale(d_k, sigma_q, sigma_k):\n"
            "    return 1.0 / (sigma_q * sigma_k * math.sqrt(d_k))\n",
            "has variance sigma_q² sigma_k²",
        ),
        (
            "def score_var(d_k, sigma_q, sigma_k):\n    return d_k * sigma_q**2 * sigma_k**2\n\n\n"
            "def unit_scale(d_k, sigma_q, sigma_k):\n"
            "    return 1.0 / (d_k * sigma_q**2 * sigma_k**2)\n",
            "c = 1/√Var, not 1/Var",
        ),
    ],
    "ch02.jacobian": [
        ("def jacobian(p):\n    return np.diag(p) - p @ p\n", "p @ p is a number"),
        ("def jacobian(p):\n    return np.outer(p, p) - np.diag(p)\n", "the sign is flipped"),
        ("def jacobian(p):\n    return np.diag(p)\n", "off-diagonal terms"),
    ],
    "ch02.saturation_threshold": [
        ("answer = 64\n", "raw (unscaled) softmax"),
        ("answer = 128.0 + 0.5\n", "whole number"),
        ("answer = 3000\n", "d_ks = [2**i for i in range(11)]"),
    ],
    # --- chapter 3 ---
    "ch03.stable_softmax": [
        (
            "def stable_softmax(x):\n"
            "    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)\n",
            "subtract",
        ),
        (
            "def stable_softmax(x):\n    x = np.asarray(x)\n    return np.exp(x - x.max(axis=-1, "
            "keepdims=True))\n",
            "sum to 1",
        ),
        (
            "def stable_softmax(x):\n    e = np.exp(x - np.max(x))\n    return e / e.sum()\n",
            "each row must sum to 1",
        ),
    ],
    "ch03.temperature_limits": [
        (
            "weights_t_to_0 = [0, 1, 0, 0]\nweights_t_to_infinity = [0.25, 0.25, 0.25, 0.25]\n",
            "tie for the maximum",
        ),
        (
            "weights_t_to_0 = [0, 0.5, 0.5, 0]\nweights_t_to_infinity = [0, 0.5, 0.5, 0]\n",
            "softmax of zeros is uniform",
        ),
        (
            "weights_t_to_0 = ...\nweights_t_to_infinity = [0.25, 0.25, 0.25, 0.25]\n",
            "a list of 4 weights",
        ),
    ],
    "ch03.attention": [
        (
            "def attention(Q, K, V, mask=None):\n    scores = Q @ K.T / math.sqrt(Q.shape[-1])\n"
            "    if mask is not None:\n        scores = np.where(mask, -np.inf, scores)\n"
            "    return softmax(scores, axis=-1) @ V\n",
            "polarity is inverted",
        ),
        (
            "def attention(Q, K, V, mask=None):\n    scores = Q @ K.T / math.sqrt(Q.shape[-1])\n"
            "    w = softmax(scores, axis=-1)\n    return w @ V, w\n",
            "return only the output",
        ),
        (
            "def attention(Q, K, V, mask=None):\n    scores = Q @ K.T / math.sqrt(Q.shape[-1])\n"
            "    return softmax(scores, axis=-1) @ V\n",
            "the mask was not applied",
        ),
        (
            "def attention(Q, K, V, mask=None):\n    scores = Q @ K.T\n"
            "    if mask is not None:\n        scores = np.where(mask, scores, -np.inf)\n"
            "    return softmax(scores, axis=-1) @ V\n",
            "forget to divide by √d_k",
        ),
    ],
    # --- chapter 4 ---
    "ch04.split_heads": [
        (
            "def split_heads(x, n_heads):\n    B, T, d = x.shape\n"
            "    return x.reshape(B, n_heads, T, d // n_heads)\n",
            "scrambled",
        ),
        (
            "def split_heads(x, n_heads):\n    B, T, d = x.shape\n"
            "    return x.view(B, T, n_heads, d // n_heads)\n",
            "you stopped at (B, T, n_heads, d_k)",
        ),
        ("def split_heads(x, n_heads):\n    x.view(1, 2, 3)\n", "raised"),
    ],
    "ch04.parameter_count": [
        (
            "def count(d_model, n_heads, bias):\n"
            "    return n_heads * 4 * (d_model * d_model + (d_model if bias else 0))\n",
            "does not get full d_model × d_model",
        ),
        (
            "def count(d_model, n_heads, bias):\n"
            "    return 3 * (d_model * d_model + (d_model if bias else 0))\n",
            "W_O, the fourth matrix",
        ),
        (
            "def count(d_model, n_heads, bias):\n    return 4 * d_model * d_model\n",
            "count the biases",
        ),
    ],
    "ch04.head_weights": [
        (
            "def head_weights(X, W_Q, W_K, n_heads):\n    T, d = X.shape\n    k = d // n_heads\n"
            "    Q = (X @ W_Q).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    K = (X @ W_K).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    return softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d), axis=-1)\n",
            "not √d_model",
        ),
        (
            "def head_weights(X, W_Q, W_K, n_heads):\n    T, d = X.shape\n    k = d // n_heads\n"
            "    Q = (X @ W_Q).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    K = (X @ W_K).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    return softmax(Q @ K.transpose(0, 2, 1), axis=-1)\n",
            "forget to divide",
        ),
        (
            "def head_weights(X, W_Q, W_K, n_heads):\n    T, d = X.shape\n    k = d // n_heads\n"
            "    Q = (X @ W_Q).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    K = (X @ W_K).reshape(T, n_heads, k).transpose(1, 0, 2)\n"
            "    return softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(k), axis=-2)\n",
            "softmax goes over the keys",
        ),
    ],
    "ch04.torch_mask": [
        ("def to_torch_mask(mask):\n    return mask\n", "may NOT attend"),
        ("def to_torch_mask(mask):\n    return (~mask).float()\n", "a float mask is ADDED"),
        ("def to_torch_mask(mask):\n    return (~mask).numpy()\n", "boolean torch.Tensor"),
    ],
    # --- chapter 5 ---
    "ch05.sinusoidal": [
        (
            "def sinusoid(n_positions, d_model):\n    p = np.arange(n_positions)[:, None]\n"
            "    i = np.arange(d_model // 2)[None, :]\n    angle = p / 10000 ** (2 * i / d_model)\n"
            "    pe = np.zeros((n_positions, d_model))\n    pe[:, 0::2] = np.cos(angle)\n"
            "    pe[:, 1::2] = np.sin(angle)\n    return pe\n",
            "swapped",
        ),
        (
            "def sinusoid(n_positions, d_model):\n    p = np.arange(n_positions)[:, None]\n"
            "    i = np.arange(d_model // 2)[None, :]\n    angle = p / 10000 ** (i / d_model)\n"
            "    pe = np.zeros((n_positions, d_model))\n    pe[:, 0::2] = np.sin(angle)\n"
            "    pe[:, 1::2] = np.cos(angle)\n    return pe\n",
            "2i/d_model, not i/d_model",
        ),
        (
            "def sinusoid(n_positions, d_model):\n    p = np.arange(1, n_positions + 1)[:, None]\n"
            "    i = np.arange(d_model // 2)[None, :]\n    angle = p / 10000 ** (2 * i / d_model)\n"
            "    pe = np.zeros((n_positions, d_model))\n    pe[:, 0::2] = np.sin(angle)\n"
            "    pe[:, 1::2] = np.cos(angle)\n    return pe\n",
            "positions start at 0",
        ),
    ],
    "ch05.rope": [
        (
            "def rope(x, positions, base):\n    d = x.shape[1]\n"
            "    theta = base ** (-2 * np.arange(d // 2) / d)\n"
            "    angle = positions[:, None] * theta\n    a, b = x[:, 0::2], x[:, 1::2]\n"
            "    out = np.empty_like(x, dtype=float)\n"
            "    out[:, 0::2] = a * np.cos(angle) - b * np.sin(angle)\n"
            "    out[:, 1::2] = a * np.sin(angle) + b * np.cos(angle)\n    return out\n",
            "interleaved",
        ),
        (
            "def rope(x, positions, base):\n    d = x.shape[1]\n"
            "    theta = base ** (-2 * np.arange(d // 2) / d)\n"
            "    angle = positions[:, None] * theta\n    a, b = x[:, : d // 2], x[:, d // 2 :]\n"
            "    return np.concatenate([a * np.cos(angle) + b * np.sin(angle),\n"
            "                           -a * np.sin(angle) + b * np.cos(angle)], axis=1)\n",
            "the wrong way",
        ),
        (
            "def rope(x, positions, base):\n    d = x.shape[1]\n"
            "    theta = base ** (-np.arange(d // 2) / d)\n"
            "    angle = positions[:, None] * theta\n    a, b = x[:, : d // 2], x[:, d // 2 :]\n"
            "    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),\n"
            "                           a * np.sin(angle) + b * np.cos(angle)], axis=1)\n",
            "not base^(-i/d)",
        ),
    ],
    "ch05.alibi": [
        (
            "def alibi(n_heads, T):\n    m = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)\n"
            "    dist = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])\n"
            "    return m[:, None, None] * dist\n",
            "the bias is a penalty",
        ),
        (
            "def alibi(n_heads, T):\n    m = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)\n"
            "    dist = np.arange(T)[:, None] - np.arange(T)[None, :]\n"
            "    return -m[:, None, None] * dist\n",
            "use the distance |i - j|",
        ),
        (
            "def alibi(n_heads, T):\n    m = 2.0 ** (-8.0 * np.arange(0, n_heads) / n_heads)\n"
            "    dist = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])\n"
            "    return -m[:, None, None] * dist\n",
            "the first slope is 2^(-8/n), not 1",
        ),
    ],
    "ch05.learned_parameters": [
        (
            "def count(max_positions, d_model):\n    return max_positions + d_model\n",
            "multiply, don't add",
        ),
        (
            "def count(max_positions, d_model):\n    return max_positions * d_model // 2\n",
            "not per pair of dimensions",
        ),
        ("def count(max_positions, d_model):\n    max_positions * d_model\n", NO_RETURN),
    ],
    "ch05.shift_block": [
        (
            "def shift_block(k, theta):\n    c, s = np.cos(k * theta), np.sin(k * theta)\n"
            "    return np.array([[c, -s], [s, c]])\n",
            "turns the pair the wrong way",
        ),
        (
            "def shift_block(k, theta):\n    c, s = np.cos(theta), np.sin(theta)\n"
            "    return np.array([[c, s], [-s, c]])\n",
            "not θ alone",
        ),
        ("def shift_block(k, theta):\n    return np.eye(2)\n", "not the identity"),
    ],
    "ch05.slow_pairs": [
        (
            "def slow_pairs(d, base, context):\n    theta = base ** (-2 * np.arange(d // 2) / d)\n"
            "    return int((context * theta >= 2 * np.pi).sum())\n",
            "the fast ones",
        ),
        (
            "def slow_pairs(d, base, context):\n    theta = base ** (-2 * np.arange(d // 2) / d)\n"
            "    return 2 * int((context * theta < 2 * np.pi).sum())\n",
            "not dimensions",
        ),
        (
            "def slow_pairs(d, base, context):\n    theta = base ** (-2 * np.arange(d // 2) / d)\n"
            "    return int((context * theta < 1).sum())\n",
            "2π radians, not 1",
        ),
    ],
    "ch05.interpolated_angle": [
        (
            "def interpolated_angle(m, i, d, base, factor):\n"
            "    return m * base ** (-2 * i / d) * factor\n",
            "do not multiply",
        ),
        (
            "def interpolated_angle(m, i, d, base, factor):\n    return m * base ** (-2 * i / d)\n",
            "plain RoPE's angle",
        ),
        (
            "def interpolated_angle(m, i, d, base, factor):\n"
            "    return (m // factor) * base ** (-2 * i / d)\n",
            "not rounded",
        ),
    ],
    # --- chapter 6 ---
    "ch06.layer_norm": [
        (
            "def layer_norm(x, gamma, beta, eps):\n    mean = x.mean(dim=-1, keepdim=True)\n"
            "    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)\n"
            "    return (x - mean) / (torch.sqrt(var) + eps) * gamma + beta\n",
            "eps inside the square root",
        ),
        (
            "def layer_norm(x, gamma, beta, eps):\n    mean = x.mean(dim=-1, keepdim=True)\n"
            "    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)\n"
            "    return (x - mean) / torch.sqrt(var + eps)\n",
            "apply the gain gamma and the bias beta",
        ),
        (
            "def layer_norm(x, gamma, beta, eps):\n"
            "    rms = torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps)\n"
            "    return x / rms * gamma + beta\n",
            "that is RMSNorm",
        ),
    ],
    "ch06.rms_norm": [
        (
            "def rms_norm(x, gamma, eps):\n    return x / ((x**2).mean(dim=-1, keepdim=True) + eps)"
            " * gamma\n",
            "take the square root",
        ),
        (
            "def rms_norm(x, gamma, eps):\n"
            "    return x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps)\n",
            "multiply by the gain gamma",
        ),
        (
            "def rms_norm(x, gamma, eps):\n"
            "    return x / torch.sqrt((x**2).sum(dim=-1, keepdim=True) + eps) * gamma\n",
            "mean(x²), not sum(x²)",
        ),
    ],
    "ch06.pre_ln_block": [
        (
            "def pre_ln_block(x, attn, ffn, norm1, norm2):\n    h = norm1(x + attn(x))\n"
            "    return norm2(h + ffn(h))\n",
            "post-LN",
        ),
        (
            "def pre_ln_block(x, attn, ffn, norm1, norm2):\n    h = attn(norm1(x))\n"
            "    return ffn(norm2(h))\n",
            "keep the residual connections",
        ),
        (
            "def pre_ln_block(x, attn, ffn, norm1, norm2):\n    h = x + attn(norm1(x))\n"
            "    return h + ffn(norm1(h))\n",
            "use norm2",
        ),
    ],
    "ch06.block_parameters": [
        (
            "def count(d_model, d_ff, bias):\n"
            "    return 4 * d_model * d_model + 2 * d_model * d_ff\n",
            "only the weight matrices",
        ),
        (
            "def count(d_model, d_ff, bias):\n    b = 1 if bias else 0\n"
            "    return (4 * d_model * d_model + 4 * d_model * b + 2 * d_model * d_ff\n"
            "            + (d_ff + d_model) * b)\n",
            "two LayerNorms",
        ),
        (
            "def count(d_model, d_ff, bias):\n    b = 1 if bias else 0\n"
            "    return 2 * d_model * d_ff + (d_ff + d_model) * b + 2 * (d_model + d_model * b)\n",
            "four d_model × d_model matrices",
        ),
    ],
    "ch06.attention_half_length": [
        ("def T_half(d_model, d_ff):\n    return d_ff\n", "projections W_Q, W_K, W_V, W_O"),
        ("def T_half(d_model, d_ff):\n    return d_ff / 2\n", "solve for T"),
        ("def T_half(d_model, d_ff):\n    return d_ff - d_model\n", "not 4·d_model²"),
    ],
    "ch06.smollm2_parameters": [
        ("n_params = 162_826_560\n", "count it once, not twice"),
        ("n_params = 147.8  # millions\n", "not d_model = 576"),
        ("n_params = 49152 * 576 + 30 * (4 * 576 * 576 + 2 * 576 * 1536)\n", "not two"),
    ],
    # --- chapter 7 ---
    "ch07.cache_mask": [
        (
            "def cache_mask(t_new, t_past):\n"
            "    return np.tril(np.ones((t_new, t_new), dtype=bool))\n",
            "also attend to the t_past cached keys",
        ),
        (
            "def cache_mask(t_new, t_past):\n    n = t_new + t_past\n"
            "    return np.tril(np.ones((n, n), dtype=bool))\n",
            "only the t_new new tokens are queries",
        ),
        ("def cache_mask(t_new, t_past):\n    np.ones((t_new, t_past + t_new))\n", NO_RETURN),
    ],
    "ch07.kv_cache_bytes": [
        (
            "def cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value):\n"
            "    return n_layers * n_kv_heads * d_head * seq_len * bytes_per_value\n",
            "keys AND values",
        ),
        (
            "def cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value):\n"
            "    return 2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value * 8\n",
            "not bits",
        ),
        (
            "def cache_bytes(n_layers, n_kv_heads, d_head, seq_len, bytes_per_value):\n"
            "    return 2 * n_kv_heads * d_head * seq_len * bytes_per_value\n",
            "multiply by n_layers",
        ),
    ],
    "ch07.next_token_probs": [
        (
            "def next_token_probs(logits, temperature):\n"
            "    return torch.softmax(logits * temperature, dim=-1)\n",
            "divide the logits by the temperature",
        ),
        (
            "def next_token_probs(logits, temperature):\n    return logits / temperature\n",
            "with a softmax",
        ),
        (
            "def next_token_probs(logits, temperature):\n"
            "    return torch.softmax(logits, dim=-1) / temperature\n",
            "before the softmax",
        ),
    ],
    "ch07.token_passes": [
        (
            "def passes(prompt_len, new_tokens):\n    P, N = prompt_len, new_tokens\n"
            "    return N * P + N * (N - 1) // 2, P + N\n",
            "never fed back in",
        ),
        (
            "def passes(prompt_len, new_tokens):\n    P, N = prompt_len, new_tokens\n"
            "    return N * (P + N), P + N - 1\n",
            "not N times the final length",
        ),
        (
            "def passes(prompt_len, new_tokens):\n    P, N = prompt_len, new_tokens\n"
            "    return P + N - 1, N * P + N * (N - 1) // 2\n",
            "the first number is without the cache",
        ),
    ],
    "ch07.nucleus": [
        (
            "def nucleus(logits, temperature, p):\n"
            "    probs = torch.softmax(logits / temperature, dim=-1)\n"
            "    desc, order = probs.sort(descending=True)\n"
            "    keep_sorted = desc.cumsum(-1) < p\n"
            "    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)\n"
            "    kept = probs * keep\n"
            "    return kept / kept.sum()\n",
            "keep the token that crosses p too",
        ),
        (
            "def nucleus(logits, temperature, p):\n"
            "    probs = torch.softmax(logits / temperature, dim=-1)\n"
            "    keep = probs.cumsum(-1) - probs < p\n"
            "    kept = probs * keep\n"
            "    return kept / kept.sum()\n",
            "sort the tokens by probability first",
        ),
        (
            "def nucleus(logits, temperature, p):\n"
            "    plain = torch.softmax(logits, dim=-1)\n"
            "    desc, order = plain.sort(descending=True)\n"
            "    keep_sorted = desc.cumsum(-1) - desc < p\n"
            "    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)\n"
            "    kept = torch.softmax(logits / temperature, dim=-1) * keep\n"
            "    return kept / kept.sum()\n",
            "apply the temperature BEFORE filtering",
        ),
    ],
    "ch07.streaming_view": [
        (
            "def streaming_view(n_appended, window, n_sink):\n"
            "    held = list(range(max(0, n_appended - window), n_appended))\n"
            "    return held, len(held) - 1\n",
            "the first n_sink tokens stay as well",
        ),
        (
            "def streaming_view(n_appended, window, n_sink):\n"
            "    sinks = list(range(min(n_sink, n_appended)))\n"
            "    start = max(len(sinks), n_appended - window)\n"
            "    held = sinks + list(range(start, n_appended))\n"
            "    return held, n_appended - 1\n",
            "by place in the cache, not in the text",
        ),
        (
            "def streaming_view(n_appended, window, n_sink):\n"
            "    sinks = list(range(min(n_sink, n_appended)))\n"
            "    start = max(len(sinks), n_appended - window - 1)\n"
            "    held = sinks + list(range(start, n_appended))\n"
            "    return held, len(held) - 1\n",
            "the window counts the newest token itself",
        ),
    ],
    # --- chapter 8 ---
    "ch08.cross_attention": [
        (
            "def cross_attention(x, memory, W_Q, W_K, W_V):\n"
            "    q, k, v = x @ W_Q, x @ W_K, x @ W_V\n"
            "    w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)\n    return w @ v\n",
            "self-attention on x",
        ),
        (
            "def cross_attention(x, memory, W_Q, W_K, W_V):\n"
            "    q, k, v = x @ W_Q, memory @ W_K, x @ W_V\n"
            "    w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)\n    return w @ v\n",
            "values come from memory too",
        ),
        (
            "def cross_attention(x, memory, W_Q, W_K, W_V):\n"
            "    q, k, v = x @ W_Q, memory @ W_K, memory @ W_V\n"
            "    w = torch.softmax(q @ k.T, dim=-1)\n    return w @ v\n",
            "√d_k before the softmax",
        ),
    ],
    "ch08.padding_mask": [
        (
            "def padding_mask(lengths, t_k):\n"
            "    return torch.arange(t_k)[None, :] <= torch.as_tensor(lengths)[:, None]\n",
            "off by one",
        ),
        (
            "def padding_mask(lengths, t_k):\n"
            "    return (torch.arange(t_k)[None, :] < torch.as_tensor(lengths)[:, None]).T\n",
            "one row per sentence",
        ),
        (
            "def padding_mask(lengths, t_k):\n"
            "    return torch.arange(t_k)[None, :] >= torch.as_tensor(lengths)[:, None]\n",
            'True means "may attend" here',
        ),
    ],
    "ch08.decoder_block": [
        (
            "def decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):\n"
            "    x = x + self_attn(norm1(x))\n    x = x + cross_attn(norm1(x), memory)\n"
            "    return x + ffn(norm1(x))\n",
            "its own LayerNorm",
        ),
        (
            "def decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):\n"
            "    x = norm1(x + self_attn(x))\n    x = norm2(x + cross_attn(x, memory))\n"
            "    return norm3(x + ffn(x))\n",
            "post-LN",
        ),
        (
            "def decoder_block(x, memory, self_attn, cross_attn, ffn, norm1, norm2, norm3):\n"
            "    x = x + cross_attn(norm2(x), memory)\n    return x + ffn(norm3(x))\n",
            "causal self-attention",
        ),
    ],
    "ch08.attention_shapes": [
        (
            "def shapes(B, n_heads, t_src, t_tgt):\n"
            "    return (B, n_heads, t_src, t_src), (B, n_heads, t_tgt, t_tgt), "
            "(B, n_heads, t_src, t_tgt)\n",
            "the queries come from the decoder",
        ),
        (
            "def shapes(B, n_heads, t_src, t_tgt):\n"
            "    return (B, t_src, t_src), (B, t_tgt, t_tgt), (B, t_tgt, t_src)\n",
            "keep the heads axis",
        ),
        (
            "def shapes(B, n_heads, t_src, t_tgt):\n"
            "    return (B, n_heads, t_src, t_src), (B, n_heads, t_tgt, t_tgt)\n",
            "return three",
        ),
    ],
    "ch08.encoder_decoder_masks": [
        (
            "def masks(lengths, t_src, t_tgt):\n"
            "    padding = key_padding_mask(lengths, t_src)[:, None, :]\n"
            "    return padding & causal_mask(t_src), causal_mask(t_tgt), padding\n",
            "no causal mask, only padding",
        ),
        (
            "def masks(lengths, t_src, t_tgt):\n"
            "    padding = key_padding_mask(lengths, t_src)[:, None, :]\n"
            "    return padding, np.ones((t_tgt, t_tgt), dtype=bool), padding\n",
            "causal: step i may not see later steps",
        ),
        (
            "def masks(lengths, t_src, t_tgt):\n"
            "    padding = key_padding_mask(lengths, t_src)[:, None, :]\n"
            "    return padding, causal_mask(t_tgt), np.ones((1, 1, t_src), dtype=bool)\n",
            "hide the source's padding keys too",
        ),
    ],
    # --- chapter 9 ---
    "ch09.window_mask": [
        (
            "def window_mask(t, window):\n    i = np.arange(t)[:, None]\n"
            "    j = np.arange(t)[None, :]\n"
            "    return (j <= i) & (j >= i - window)\n",
            "one key too many",
        ),
        (
            "def window_mask(t, window):\n    i = np.arange(t)[:, None]\n"
            "    j = np.arange(t)[None, :]\n"
            "    return j <= i\n",
            "plain causal mask",
        ),
        (
            "def window_mask(t, window):\n    i = np.arange(t)[:, None]\n"
            "    j = np.arange(t)[None, :]\n"
            "    return ((j <= i) & (j > i - window)).astype(int)\n",
            "not .astype(int)",
        ),
    ],
    "ch09.layers_needed": [
        (
            "def layers_needed(t, window):\n    return max(1, math.ceil((t - 1) / window))\n",
            "window - 1 positions, not window",
        ),
        ("def layers_needed(t, window):\n    return max(1, (t - 1) // (window - 1))\n", "round up"),
        (
            "def layers_needed(t, window):\n    return max(1, math.ceil(t / (window - 1)))\n",
            "t - 1 positions apart, not t",
        ),
    ],
    "ch09.window_attention": [
        (
            "def window_attention(q, k, v, window):\n    t, d_k = q.shape\n"
            "    out = np.zeros((t, v.shape[1]))\n    for i in range(t):\n"
            "        lo = max(0, i - window + 1)\n        s = k[lo : i + 1] @ q[i]\n"
            "        out[i] = softmax(s) @ v[lo : i + 1]\n    return out\n",
            "1/√d_k",
        ),
        (
            "def window_attention(q, k, v, window):\n    t, d_k = q.shape\n"
            "    out = np.zeros((t, v.shape[1]))\n    for i in range(t):\n"
            "        s = k[: i + 1] @ q[i] / np.sqrt(d_k)\n"
            "        out[i] = softmax(s) @ v[: i + 1]\n    return out\n",
            "causal attention over all earlier keys",
        ),
        (
            "def window_attention(q, k, v, window):\n    t, d_k = q.shape\n"
            "    out = np.zeros((t, v.shape[1]))\n    for i in range(t):\n"
            "        lo = max(0, i - window)\n        s = k[lo : i + 1] @ q[i] / np.sqrt(d_k)\n"
            "        out[i] = softmax(s) @ v[lo : i + 1]\n    return out\n",
            "one key too many",
        ),
    ],
    "ch09.strided_keys": [
        (
            "def strided_keys(i, stride):\n    return min(i + 1, stride) + i // stride + 1\n",
            "counted twice",
        ),
        ("def strided_keys(i, stride):\n    return min(i + 1, stride)\n", "only the band"),
        ("def strided_keys(i, stride):\n    return i // stride + 1\n", "only the stride keys"),
    ],
    # --- chapter 10 ---
    "ch10.max_batch": [
        (
            "def max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len,\n"
            "              bytes_per_value):\n"
            "    per = 2 * n_layers * n_heads * d_head * seq_len * bytes_per_value\n"
            "    return memory_bytes // per\n",
            "only the n_kv_heads",
        ),
        (
            "def max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len,\n"
            "              bytes_per_value):\n"
            "    per = n_layers * n_kv_heads * d_head * seq_len * bytes_per_value\n"
            "    return memory_bytes // per\n",
            "keys AND values",
        ),
        (
            "def max_batch(memory_bytes, n_layers, n_heads, n_kv_heads, d_head, seq_len,\n"
            "              bytes_per_value):\n"
            "    per = 2 * n_layers * n_kv_heads * d_head * seq_len\n"
            "    return memory_bytes // per\n",
            "the memory is in bytes",
        ),
    ],
    "ch10.gqa_attention": [
        (
            "def gqa_attention(q, k, v):\n    g = q.shape[0] // k.shape[0]\n"
            "    k, v = np.tile(k, (g, 1, 1)), np.tile(v, (g, 1, 1))\n"
            "    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])\n"
            "    w = np.exp(s - s.max(-1, keepdims=True))\n"
            "    return w / w.sum(-1, keepdims=True) @ v\n",
            "wrong order",
        ),
        (
            "def gqa_attention(q, k, v):\n    g = q.shape[0] // k.shape[0]\n"
            "    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)\n"
            "    s = q @ k.transpose(0, 2, 1)\n    w = np.exp(s - s.max(-1, keepdims=True))\n"
            "    return w / w.sum(-1, keepdims=True) @ v\n",
            "1/√d",
        ),
        (
            "def gqa_attention(q, k, v):\n    g = q.shape[0] // k.shape[0]\n"
            "    k, v = np.repeat(k, g, axis=0), np.repeat(v, g, axis=0)\n"
            "    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])\n"
            "    w = np.exp(s - s.max(-1, keepdims=True))\n",
            NO_RETURN,
        ),
    ],
    "ch10.mean_pool": [
        (
            "def mean_pool(W, n_heads, n_kv_heads):\n    d_k = W.shape[0] // n_heads\n"
            "    blocks = W.reshape(n_kv_heads, n_heads // n_kv_heads, d_k, W.shape[1])\n"
            "    return blocks.sum(axis=1).reshape(n_kv_heads * d_k, W.shape[1])\n",
            "don't sum them",
        ),
        (
            "def mean_pool(W, n_heads, n_kv_heads):\n    d_k = W.shape[0] // n_heads\n"
            "    blocks = W.reshape(n_heads // n_kv_heads, n_kv_heads, d_k, W.shape[1])\n"
            "    return blocks.mean(axis=0).reshape(n_kv_heads * d_k, W.shape[1])\n",
            "consecutive heads",
        ),
        (
            "def mean_pool(W, n_heads, n_kv_heads):\n    d_k = W.shape[0] // n_heads\n"
            "    W.reshape(n_kv_heads, n_heads // n_kv_heads, d_k, W.shape[1]).mean(axis=1)\n",
            NO_RETURN,
        ),
    ],
    # --- chapter 11 ---
    "ch11.cache_values": [
        (
            "def cache_values(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    return n_heads * d_head, d_latent_kv + d_head_rope\n",
            "a key AND a value per head",
        ),
        (
            "def cache_values(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    return 2 * n_heads * d_head, d_latent_kv + n_heads * d_head_rope\n",
            "SHARED by all heads",
        ),
        (
            "def cache_values(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    return 2 * n_heads * d_head, d_latent_kv\n",
            "cached too, beside the latent",
        ),
    ],
    "ch11.absorb_query": [
        (
            "def absorb_query(q_c, W_UK):\n"
            '    s = np.einsum("hn,hnc->c", q_c, W_UK)\n'
            "    return np.broadcast_to(s, (q_c.shape[0], s.shape[0]))\n",
            "do not sum over the heads",
        ),
        (
            'def absorb_query(q_c, W_UK):\n    return np.einsum("hn,hcn->hc", q_c, W_UK)\n',
            "run your function on a small example",
        ),
        ('def absorb_query(q_c, W_UK):\n    np.einsum("hn,hnc->hc", q_c, W_UK)\n', NO_RETURN),
    ],
    "ch11.latent_scores": [
        (
            "def latent_scores(q_c, q_r, c_kv, k_r, W_UK):\n"
            '    q_lat = np.einsum("hn,hnc->hc", q_c, W_UK)\n'
            "    return (q_lat @ c_kv.T + q_r @ k_r.T) / np.sqrt(q_c.shape[1])\n",
            "sqrt(d_h + d_h^R)",
        ),
        (
            "def latent_scores(q_c, q_r, c_kv, k_r, W_UK):\n"
            '    q_lat = np.einsum("hn,hnc->hc", q_c, W_UK)\n'
            "    return q_lat @ c_kv.T / np.sqrt(q_c.shape[1] + q_r.shape[1])\n",
            "add the RoPE part",
        ),
        (
            "def latent_scores(q_c, q_r, c_kv, k_r, W_UK):\n"
            '    q_lat = np.einsum("hn,hnc->hc", q_c, W_UK)\n'
            "    return q_lat @ c_kv.T + q_r @ k_r.T\n",
            "the scores are scaled",
        ),
    ],
    "ch11.kv_reduction": [
        (
            "def kv_reduction(gqa, mla, bits):\n    L, h, d = gqa\n"
            "    gqa_bytes = 2 * L * h * d * 2\n"
            "    L, c, r = mla\n    return L * (c + r) * bits / 8 / gqa_bytes\n",
            "fraction KEPT",
        ),
        (
            "def kv_reduction(gqa, mla, bits):\n    L, h, d = gqa\n"
            "    gqa_bytes = 2 * L * h * d * 2\n"
            "    L, c, r = mla\n    return 100 * (1 - L * (c + r) * bits / 8 / gqa_bytes)\n",
            "not a percentage",
        ),
        (
            "def kv_reduction(gqa, mla, bits):\n    L, h, d = gqa\n"
            "    gqa_bytes = 2 * L * h * d * 2\n"
            "    L, c, r = mla\n    return 1 - L * c * bits / 8 / gqa_bytes\n",
            "cached too, beside the latent",
        ),
    ],
    "ch11.equivalent_mqa": [
        (
            "def equivalent_mqa(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    return d_head + d_head_rope, d_latent_kv, d_latent_kv + d_head_rope\n",
            "not a head's d_h + d_h^R",
        ),
        (
            "def equivalent_mqa(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    k = d_latent_kv + d_head_rope\n"
            "    return k, d_latent_kv, d_latent_kv + n_heads * d_head_rope\n",
            "SHARED by all heads",
        ),
        (
            "def equivalent_mqa(n_heads, d_head, d_latent_kv, d_head_rope):\n"
            "    k = d_latent_kv + d_head_rope\n"
            "    return k, d_latent_kv, 2 * d_latent_kv + d_head_rope\n",
            "cached ONCE",
        ),
    ],
    # --- chapter 12 ---
    "ch12.merge": [
        (
            "def merge(m1, l1, m2, l2):\n    return max(m1, m2), l1 + l2\n",
            "each sum was taken under its own maximum",
        ),
        (
            "def merge(m1, l1, m2, l2):\n    m = max(m1, m2)\n"
            "    return m, l1 * np.exp(m - m1) + l2 * np.exp(m - m2)\n",
            "not its inverse",
        ),
        ("def merge(m1, l1, m2, l2):\n    return min(m1, m2), l1 + l2\n", "larger of the two"),
    ],
    "ch12.streaming_softmax": [
        (
            "def streaming_softmax(x, block_size):\n    x = np.asarray(x)\n"
            "    m, total = -np.inf, 0.0\n"
            "    for s in range(0, len(x), block_size):\n        b = x[s : s + block_size]\n"
            "        m_new = max(m, b.max())\n        sh = m_new if np.isfinite(m_new) else 0.0\n"
            "        total = total + np.exp(b - sh).sum()\n        m = m_new\n"
            "    return np.exp(x - m) / total\n",
            "never rescaled",
        ),
        (
            "def streaming_softmax(x, block_size):\n    x = np.asarray(x)\n"
            "    out = [np.exp(x[s : s + block_size] - x[s : s + block_size].max())\n"
            "           for s in range(0, len(x), block_size)]\n"
            "    return np.concatenate([o / o.sum() for o in out])\n",
            "normalised on its own",
        ),
        (
            "def streaming_softmax(x, block_size):\n    x = np.asarray(x)\n    total = 0.0\n"
            "    for s in range(0, len(x), block_size):\n"
            "        total = total + np.exp(x[s : s + block_size]).sum()\n"
            "    return np.exp(x) / total\n",
            "exp overflowed",
        ),
    ],
    "ch12.key_block_attention": [
        (
            "def key_block_attention(Q, K, V, block_k):\n    outs = []\n"
            "    for s in range(0, K.shape[0], block_k):\n"
            "        sc = Q @ K[s : s + block_k].T / np.sqrt(Q.shape[-1])\n"
            "        outs.append(softmax(sc, axis=-1) @ V[s : s + block_k])\n"
            "    return np.mean(outs, axis=0)\n",
            "average of the blocks' own outputs",
        ),
        (
            "def key_block_attention(Q, K, V, block_k):\n"
            "    return softmax(Q @ K.T, axis=-1) @ V\n",
            "not divided by √d_k",
        ),
        (
            "def key_block_attention(Q, K, V, block_k):\n    Q = Q / np.sqrt(Q.shape[-1])\n"
            "    m = np.full((Q.shape[0], 1), -np.inf)\n    total = np.zeros((Q.shape[0], 1))\n"
            "    o = np.zeros((Q.shape[0], V.shape[-1]))\n"
            "    for s in range(0, K.shape[0], block_k):\n        sc = Q @ K[s : s + block_k].T\n"
            "        m_new = np.maximum(m, sc.max(axis=-1, keepdims=True))\n"
            "        a = np.exp(m - m_new)\n        p = np.exp(sc - m_new)\n"
            "        total = a * total + p.sum(axis=-1, keepdims=True)\n"
            "        o = a * o + p @ V[s : s + block_k]\n        m = m_new\n    return o\n",
            "divide by l at the end",
        ),
    ],
    "ch12.hbm_reads": [
        (
            "def hbm_reads(n, d, block_q):\n    return n * d + n / block_q * 2 * n * d\n",
            "round n / block_q up",
        ),
        (
            "def hbm_reads(n, d, block_q):\n    return n * d + -(-n // block_q) * n * d\n",
            "keys AND the values",
        ),
        (
            "def hbm_reads(n, d, block_q):\n    return -(-n // block_q) * 2 * n * d\n",
            "the queries are read too",
        ),
    ],
    # --- chapter 13 ---
    "ch13.topic_share": [
        (
            "def topic_share(weights, is_topic):\n"
            "    return (weights * is_topic).sum(axis=-1) / is_topic.sum(axis=-1)\n",
            "you averaged the weights on topic words",
        ),
        (
            "def topic_share(weights, is_topic):\n    return (weights * is_topic).mean(axis=-1)\n",
            "divided by T",
        ),
        (
            "def topic_share(weights, is_topic):\n    return (weights * is_topic).sum(0)\n",
            "wrong axis",
        ),
    ],
    "ch13.rollout": [
        (
            "def rollout(maps):\n    L, _, T, _ = maps.shape\n    R = np.eye(T)\n"
            "    for layer in range(L):\n"
            "        A = 0.5 * np.eye(T) + 0.5 * maps[layer].mean(axis=0)\n"
            "        A = A / A.sum(axis=-1, keepdims=True)\n        R = R @ A\n    return R\n",
            "wrong order",
        ),
        (
            "def rollout(maps):\n    L, _, T, _ = maps.shape\n    R = np.eye(T)\n"
            "    for layer in range(L):\n        R = maps[layer].mean(axis=0) @ R\n    return R\n",
            "no residual",
        ),
        (
            "def rollout(maps):\n    L, _, T, _ = maps.shape\n    R = np.eye(T)\n"
            "    for layer in range(L):\n"
            "        A = 0.5 * np.eye(T) + 0.5 * maps[layer].mean(axis=0)\n        R = A @ R\n",
            NO_RETURN,
        ),
    ],
    "ch13.precision_at_k": [
        (
            "def precision_at_k(scores, is_topic, k):\n"
            "    low = np.argsort(np.asarray(scores), kind='stable')[:k]\n"
            "    return float(np.asarray(is_topic)[low].mean())\n",
            "k *lowest* scores",
        ),
        (
            "def precision_at_k(scores, is_topic, k):\n"
            "    top = np.argsort(-np.asarray(scores), kind='stable')[:k]\n"
            "    return float(np.asarray(is_topic)[top].sum())\n",
            "precision is that number",
        ),
        (
            "def precision_at_k(scores, is_topic, k):\n    scores = np.asarray(scores)\n"
            "    threshold = np.sort(scores)[::-1][k - 1]\n"
            "    return float(np.asarray(is_topic)[scores >= threshold].mean())\n",
            "take exactly k",
        ),
    ],
    "ch13.eraser_by_hand": [
        ("answer = (0.09, 0.52)\n", "the two are swapped"),
        ("answer = (0.90 - 0.20, 0.90 - 0.88)\n", "you used only the last bin"),
        ("answer = (0.383, 0.81)\n", "subtract each from the original"),
    ],
    "ch13.uniform_pool": [
        (
            "def uniform_pool(x, keep):\n    return np.asarray(x).mean(axis=1)\n",
            "padding was averaged in",
        ),
        (
            "def uniform_pool(x, keep):\n"
            "    return (np.asarray(x) * np.asarray(keep)[..., None]).sum(axis=1) / x.shape[1]\n",
            "divided by T",
        ),
        (
            "def uniform_pool(x, keep):\n"
            "    return (np.asarray(x) * np.asarray(keep)[..., None]).sum(axis=1)\n",
            "that is a sum",
        ),
    ],
    # --- chapter 14 ---
    "ch14.cache_ratio": [
        (
            "def cache_ratio(n_local, n_global, window, T):\n"
            "    return (n_global * T + n_local * min(T, window)) / ((n_local + n_global) * T)\n",
            "how many times SMALLER",
        ),
        (
            "def cache_ratio(n_local, n_global, window, T):\n"
            "    return (n_local + n_global) / n_global\n",
            "the local layers hold a cache too",
        ),
        (
            "def cache_ratio(n_local, n_global, window, T):\n"
            "    return (n_local + n_global) * T / (n_global * T + n_local * window)\n",
            "min(T, window), not window",
        ),
    ],
    "ch14.sink_weights": [
        (
            "def sink_weights(scores, sinks):\n"
            "    return torch.softmax(torch.as_tensor(scores), dim=-1)\n",
            "these rows sum to 1",
        ),
        (
            "def sink_weights(scores, sinks):\n"
            "    e = torch.exp(torch.as_tensor(scores))\n"
            "    return e / (e.sum(-1, keepdim=True) + torch.as_tensor(sinks)[:, None, None])\n",
            "not as sink",
        ),
        (
            "def sink_weights(scores, sinks):\n"
            "    e = torch.exp(torch.as_tensor(scores))\n"
            "    return e / (e.sum(-1, keepdim=True) + torch.exp(torch.as_tensor(sinks)[0]))\n",
            "each head has its own sink",
        ),
    ],
    "ch14.route": [
        (
            "def route(logits, k):\n"
            "    p = torch.softmax(torch.as_tensor(logits), dim=-1)\n"
            "    top_p, top_i = p.topk(k, dim=-1)\n"
            "    return torch.zeros_like(p).scatter(1, top_i, top_p)\n",
            "renormalise the k kept probabilities",
        ),
        (
            "def route(logits, k):\n    return torch.softmax(torch.as_tensor(logits), dim=-1)\n",
            "keep only the k highest probabilities",
        ),
        (
            "def route(logits, k):\n"
            "    x = torch.as_tensor(logits)\n"
            "    top_x, top_i = x.topk(k, dim=-1)\n"
            "    return torch.zeros_like(x).scatter(1, top_i, top_x)\n",
            "not the raw logits",
        ),
    ],
    "ch12.paged_blocks": [
        (
            "def paged_blocks(lengths, block_size):\n"
            "    blocks = sum(n // block_size for n in lengths)\n"
            "    return blocks, blocks * block_size - sum(lengths)\n",
            "forgot the last, partial block",
        ),
        (
            "def paged_blocks(lengths, block_size):\n"
            "    blocks = -(-sum(lengths) // block_size)\n"
            "    return blocks, blocks * block_size - sum(lengths)\n",
            "sequences do not share blocks",
        ),
        (
            "def paged_blocks(lengths, block_size):\n"
            "    blocks = sum(-(-n // block_size) for n in lengths)\n"
            "    return blocks, sum(block_size - n % block_size for n in lengths)\n",
            "wastes 0 slots, not block_size",
        ),
    ],
    # --- chapter 10, exercise 10.4 (issue 35) ---
    "ch10.local_global_cache": [
        (
            "def local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len,\n"
            "                       bytes_per_value):\n"
            "    per = 2 * n_kv_heads * d_head * bytes_per_value\n"
            "    return per * n_layers * min(seq_len, window), per * n_layers * seq_len\n",
            "every sixth layer is full",
        ),
        (
            "def local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len,\n"
            "                       bytes_per_value):\n"
            "    per = n_kv_heads * d_head * bytes_per_value\n"
            "    n_full = n_layers // 6\n"
            "    held = (n_layers - n_full) * min(seq_len, window) + n_full * seq_len\n"
            "    return per * held, per * n_layers * seq_len\n",
            "keys AND values",
        ),
        (
            "def local_global_cache(n_layers, n_heads, n_kv_heads, d_head, window, seq_len,\n"
            "                       bytes_per_value):\n"
            "    per = 2 * n_heads * d_head * bytes_per_value\n"
            "    n_full = n_layers // 6\n"
            "    held = (n_layers - n_full) * min(seq_len, window) + n_full * seq_len\n"
            "    return per * held, per * n_layers * seq_len\n",
            "not one per query head",
        ),
    ],
}

# --- chapter 8, exercise 8.7 (the cached source) ---
WRONG_ANSWERS["ch08.cross_kv_multiplies"] = [
    (
        "def kv_multiplies(d_model, t_src, n_steps, n_layers):\n"
        "    once = n_layers * t_src * d_model * d_model\n"
        "    return n_steps * once, once\n",
        "count K and V both",
    ),
    (
        "def kv_multiplies(d_model, t_src, n_steps, n_layers):\n"
        "    once = n_layers * 2 * t_src * t_src * d_model\n"
        "    return n_steps * once, once\n",
        "not t_src²",
    ),
    (
        "def kv_multiplies(d_model, t_src, n_steps, n_layers):\n"
        "    once = 2 * t_src * d_model * d_model\n"
        "    return n_steps * once, once\n",
        "multiply by n_layers",
    ),
]
