// Attention, step by step: the BERT encoder of all-MiniLM-L6-v2 in plain JavaScript (MIT licence).
//
// The same model as course_utils.pretrained.run_encoder (the course's Python reference): word + position +
// segment-0 embeddings, LayerNorm, then 6 post-LayerNorm layers of 12-head attention and a GELU
// feed-forward block. Weights are float16 or float32 (course_utils.pretrained.minilm_web.export_weights), read
// into Float32Arrays; every sum is accumulated in float64 (JavaScript numbers). It returns the attention
// weights of every layer and head, and the attention rollout of course_utils.topic_focus.attention_rollout.
// Tested against the Python reference in Node (tests/js/minilm.test.mjs) and in Chromium.

let HALF = null; // float16 bit pattern -> float32 value, built on first use

function halfTable() {
  if (HALF) return HALF;
  HALF = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    if (e === 0) HALF[h] = sign * f * 2 ** -24;
    else if (e === 31) HALF[h] = f ? NaN : sign * Infinity;
    else HALF[h] = sign * (1 + f / 1024) * 2 ** (e - 15);
  }
  return HALF;
}

/** Little-endian float16 or float32 bytes (ArrayBuffer, byteOffset, byteLength) as a Float32Array. */
export function decodeArray(buffer, dtype, offset = 0, length = buffer.byteLength - offset) {
  if (dtype === "float32") return new Float32Array(buffer.slice(offset, offset + length));
  if (dtype !== "float16") throw new Error(`dtype must be float16 or float32; got ${dtype}`);
  const bits = new Uint16Array(buffer.slice(offset, offset + length));
  const table = halfTable();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  return out;
}

/**
 * Undo the export's byte planes (course_utils.pretrained.web_export.split_planes): `bytes` holds byte 0 of
 * every `itemsize`-byte number, then byte 1 of every number, and so on. Returns the numbers' bytes in order.
 */
export function joinPlanes(bytes, itemsize) {
  const n = bytes.length / itemsize;
  if (!Number.isInteger(n)) throw new Error(`${bytes.length} bytes are not whole ${itemsize}-byte numbers`);
  const out = new Uint8Array(bytes.length);
  for (let b = 0; b < itemsize; b++) {
    const plane = bytes.subarray(b * n, (b + 1) * n);
    for (let i = 0; i < n; i++) out[i * itemsize + b] = plane[i];
  }
  return out.buffer;
}

/** Bytes per number of an export's dtype. */
export function itemsize(dtype) {
  if (dtype === "float16") return 2;
  if (dtype === "float32") return 4;
  throw new Error(`dtype must be float16 or float32; got ${dtype}`);
}

/** The named tensors of weights.bin (manifest.tensors, its planes joined) as Float32Arrays. */
export function readWeights(manifest, buffer) {
  const w = {};
  for (const t of manifest.tensors) w[t.name] = decodeArray(buffer, manifest.dtype, t.offset, t.length);
  return w;
}

/** y = x W^T + b for x (T, nIn) and W (nOut, nIn): blocks of 4 rows of x times 2 rows of W. */
function linear(x, T, nIn, W, b, nOut) {
  const y = new Float64Array(T * nOut);
  let t = 0;
  for (; t + 4 <= T; t += 4) {
    const a0 = t * nIn;
    const a1 = a0 + nIn;
    const a2 = a1 + nIn;
    const a3 = a2 + nIn;
    let o = 0;
    for (; o + 2 <= nOut; o += 2) {
      const r = o * nIn;
      const q = r + nIn;
      let s00 = 0, s10 = 0, s20 = 0, s30 = 0, s01 = 0, s11 = 0, s21 = 0, s31 = 0;
      for (let i = 0; i < nIn; i++) {
        const w0 = W[r + i];
        const w1 = W[q + i];
        const x0 = x[a0 + i];
        const x1 = x[a1 + i];
        const x2 = x[a2 + i];
        const x3 = x[a3 + i];
        s00 += x0 * w0; s10 += x1 * w0; s20 += x2 * w0; s30 += x3 * w0;
        s01 += x0 * w1; s11 += x1 * w1; s21 += x2 * w1; s31 += x3 * w1;
      }
      const b0 = b[o];
      const b1 = b[o + 1];
      y[t * nOut + o] = s00 + b0;
      y[(t + 1) * nOut + o] = s10 + b0;
      y[(t + 2) * nOut + o] = s20 + b0;
      y[(t + 3) * nOut + o] = s30 + b0;
      y[t * nOut + o + 1] = s01 + b1;
      y[(t + 1) * nOut + o + 1] = s11 + b1;
      y[(t + 2) * nOut + o + 1] = s21 + b1;
      y[(t + 3) * nOut + o + 1] = s31 + b1;
    }
    for (; o < nOut; o++) {
      const r = o * nIn;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let i = 0; i < nIn; i++) {
        const w = W[r + i];
        s0 += x[a0 + i] * w; s1 += x[a1 + i] * w; s2 += x[a2 + i] * w; s3 += x[a3 + i] * w;
      }
      y[t * nOut + o] = s0 + b[o];
      y[(t + 1) * nOut + o] = s1 + b[o];
      y[(t + 2) * nOut + o] = s2 + b[o];
      y[(t + 3) * nOut + o] = s3 + b[o];
    }
  }
  for (; t < T; t++) {
    const a = t * nIn;
    for (let o = 0; o < nOut; o++) {
      const r = o * nIn;
      let s = 0;
      for (let i = 0; i < nIn; i++) s += x[a + i] * W[r + i];
      y[t * nOut + o] = s + b[o];
    }
  }
  return y;
}

/** LayerNorm over each row of x (T, d), in place. */
function layerNorm(x, T, d, gamma, beta, eps) {
  for (let t = 0; t < T; t++) {
    const a = t * d;
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[a + i];
    mean /= d;
    let v = 0;
    for (let i = 0; i < d; i++) v += (x[a + i] - mean) ** 2;
    const inv = 1 / Math.sqrt(v / d + eps);
    for (let i = 0; i < d; i++) x[a + i] = (x[a + i] - mean) * inv * gamma[i] + beta[i];
  }
  return x;
}

/** erf to double precision: Taylor series below 3, a continued fraction of erfc above. */
export function erf(x) {
  const z = Math.abs(x);
  if (z < 2.5) {
    let term = z;
    let sum = z;
    const z2 = z * z;
    for (let n = 1; n < 80; n++) {
      term *= -z2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * sum * (2 / Math.sqrt(Math.PI));
  }
  let f = z; // erfc(z) = exp(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))
  for (let k = 120; k >= 1; k--) f = z + k / 2 / f;
  const erfc = Math.exp(-z * z) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

/** GELU (exact, with erf, as BERT and torch.nn.functional.gelu), in place. */
function gelu(x) {
  for (let i = 0; i < x.length; i++) x[i] = 0.5 * x[i] * (1 + erf(x[i] / Math.SQRT2));
  return x;
}

/**
 * The encoder on `words` (T rows of the word-embedding table, a Float32Array of T * d_model).
 * Returns {maps: Float32Array (n_layers, n_heads, T, T), rows = queries, each sums to 1; hidden: Float64Array (T, d)}.
 */
export function runEncoder(manifest, w, words, T) {
  const { n_layers: L, n_heads: H, d_model: d, d_ff: dff, layer_norm_eps: eps } = manifest;
  if (!(T >= 1 && T <= manifest.max_len)) throw new Error(`T must be 1 to ${manifest.max_len}; got ${T}`);
  if (words.length !== T * d) throw new Error(`words must hold ${T} x ${d} numbers; got ${words.length}`);
  const dk = d / H;
  const scale = 1 / Math.sqrt(dk);
  const pos = w["embeddings.position_embeddings.weight"];
  const seg = w["embeddings.token_type_embeddings.weight"];
  let x = new Float64Array(T * d); // (T, d)
  for (let t = 0; t < T; t++) for (let i = 0; i < d; i++) x[t * d + i] = words[t * d + i] + pos[t * d + i] + seg[i];
  layerNorm(x, T, d, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps);
  const maps = new Float32Array(L * H * T * T);
  const row = new Float64Array(T);
  for (let l = 0; l < L; l++) {
    const p = `encoder.layer.${l}.`;
    const lin = (input, nIn, name, nOut) => linear(input, T, nIn, w[`${p}${name}.weight`], w[`${p}${name}.bias`], nOut);
    const q = lin(x, d, "attention.self.query", d); // (T, d)
    const k = lin(x, d, "attention.self.key", d); // (T, d)
    const v = lin(x, d, "attention.self.value", d); // (T, d)
    const ctx = new Float64Array(T * d); // (T, d): heads side by side
    for (let h = 0; h < H; h++) {
      const c = h * dk;
      const base = (l * H + h) * T * T;
      for (let i = 0; i < T; i++) {
        let max = -Infinity;
        for (let j = 0; j < T; j++) {
          let s = 0;
          for (let e = 0; e < dk; e++) s += q[i * d + c + e] * k[j * d + c + e];
          row[j] = s * scale;
          if (row[j] > max) max = row[j];
        }
        let sum = 0;
        for (let j = 0; j < T; j++) {
          row[j] = Math.exp(row[j] - max);
          sum += row[j];
        }
        for (let j = 0; j < T; j++) {
          const pij = row[j] / sum;
          maps[base + i * T + j] = pij;
          for (let e = 0; e < dk; e++) ctx[i * d + c + e] += pij * v[j * d + c + e];
        }
      }
    }
    const a = lin(ctx, d, "attention.output.dense", d); // (T, d)
    for (let i = 0; i < x.length; i++) a[i] += x[i];
    x = layerNorm(a, T, d, w[`${p}attention.output.LayerNorm.weight`], w[`${p}attention.output.LayerNorm.bias`], eps);
    const hid = gelu(lin(x, d, "intermediate.dense", dff)); // (T, d_ff)
    const y = lin(hid, dff, "output.dense", d); // (T, d)
    for (let i = 0; i < x.length; i++) y[i] += x[i];
    x = layerNorm(y, T, d, w[`${p}output.LayerNorm.weight`], w[`${p}output.LayerNorm.bias`], eps);
  }
  return { maps, hidden: x };
}

/**
 * Attention rollout (Abnar & Zuidema 2020) as course_utils.topic_focus.attention_rollout: heads averaged,
 * A_l = r I + (1 - r) W_l with rows renormalised, R = A_{L-1} ... A_0. Returns a Float64Array (T, T).
 */
export function rollout(maps, L, H, T, residual = 0.5) {
  let R = new Float64Array(T * T);
  for (let i = 0; i < T; i++) R[i * T + i] = 1;
  const A = new Float64Array(T * T);
  for (let l = 0; l < L; l++) {
    for (let i = 0; i < T; i++) {
      let sum = 0;
      for (let j = 0; j < T; j++) {
        let m = 0;
        for (let h = 0; h < H; h++) m += maps[((l * H + h) * T + i) * T + j];
        const value = (1 - residual) * (m / H) + (i === j ? residual : 0);
        A[i * T + j] = value;
        sum += value;
      }
      for (let j = 0; j < T; j++) A[i * T + j] /= sum;
    }
    const next = new Float64Array(T * T); // A @ R
    for (let i = 0; i < T; i++) {
      for (let k = 0; k < T; k++) {
        const aik = A[i * T + k];
        if (aik === 0) continue;
        for (let j = 0; j < T; j++) next[i * T + j] += aik * R[k * T + j];
      }
    }
    R = next;
  }
  return R;
}

/**
 * A model ready to run: {tokenize, run(text) -> {tokens, ids, maps, rollout}}.
 * `getChunk(index)` returns (a Promise of) the Float32Array of one chunk of the word-embedding table.
 */
export function createModel(manifest, weights, tokenizer, getChunk) {
  const { d_model: d } = manifest;
  const rows = manifest.words.chunk_rows;
  async function words(ids) {
    // every chunk the sentence needs is asked for at once (they download in parallel)
    const chunks = await Promise.all(ids.map((id) => getChunk(Math.floor(id / rows))));
    const out = new Float32Array(ids.length * d);
    for (let t = 0; t < ids.length; t++) {
      const r = (ids[t] % rows) * d;
      out.set(chunks[t].subarray(r, r + d), t * d);
    }
    return out;
  }
  async function run(text, maxTokens = manifest.max_tokens) {
    const { tokens, ids } = tokenizer.tokenize(text);
    if (tokens.length > maxTokens) return { tokens, ids, tooLong: true };
    const T = tokens.length;
    const { maps } = runEncoder(manifest, weights, await words(ids), T);
    return { tokens, ids, maps, rollout: rollout(maps, manifest.n_layers, manifest.n_heads, T) };
  }
  return { tokenize: tokenizer.tokenize, run };
}
