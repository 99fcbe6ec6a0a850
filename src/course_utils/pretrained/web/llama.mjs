// Attention, step by step: SmolLM2-135M (a Llama-architecture model) in JavaScript (MIT licence).
//
// The forward pass of course_utils.pretrained.smollm2.SmolLM2, on the GGUF's own quantised blocks
// (dequantised on the fly, as gguf.quants does: Q4_1 w = d*q + m, Q8_0 w = d*q):
//
//   x = embed[token]                                                           (d_model)
//   for each of the 30 blocks:
//     h = RMSNorm(x);  q, k, v = W_Q h, W_K h, W_V h   (9 query heads, 3 key/value heads of 64)
//     q, k rotated by RoPE;  k, v appended to the layer's cache
//     head i reads key/value head floor(i / 3): w = softmax(q k^T / 8), c_i = w V
//     x = x + W_O [c_0 .. c_8]                         (a knocked-out head's c_i is zero)
//     h = RMSNorm(x);  x = x + W_down (SiLU(W_gate h) * W_up h)
//   logits = embed^T RMSNorm(x)                                  (tied: the embedding again)
//
// llama.cpp stores W_Q and W_K with each head's rows permuted for RoPE over neighbouring pairs
// (2i, 2i+1); Python undoes the permutation and rotates (i, i + 32). Both rotate the same pairs by
// the same angles, and a dot product of q and k does not depend on the order of their entries,
// so the attention weights, and everything after them, are the same.
//
// Numbers are JavaScript doubles (the weights' values are exact); Python computes in float32,
// so the two agree to float32's rounding, far inside the 1e-3 the tests allow.

const BLOCK = 32;

// float16 bits -> number
const F16 = (() => {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    table[h] = e === 0 ? s * f * 2 ** -24 : e === 31 ? (f ? NaN : s * Infinity) : s * (1 + f / 1024) * 2 ** (e - 15);
  }
  return table;
})();

// Scale stream (all low bytes, then all high bytes, for each of `k` float16 arrays) -> Float32Arrays.
function halves(bytes, count, k) {
  const out = [];
  for (let j = 0; j < k; j++) {
    const lo = bytes.subarray(2 * j * count, (2 * j + 1) * count);
    const hi = bytes.subarray((2 * j + 1) * count, (2 * j + 2) * count);
    const a = new Float32Array(count);
    for (let i = 0; i < count; i++) a[i] = F16[lo[i] | (hi[i] << 8)];
    out.push(a);
  }
  return out;
}

// Bytes of scratch space per input row (inputs, outputs): the widest activation, d_ff.
const MAX_ROWS = 512; // tokens one call may run at once (a prompt is cut to fewer)

// Lay the weights out in one buffer (a WebAssembly memory when `wasm` is given, so that its
// kernels read them in place): 4-bit codes, float32 scales and minimums, 8-bit codes and scales,
// float32 norms, then scratch space for inputs and outputs. streams: {q4_scales, q4_codes,
// q8_scales, q8_codes, f32} as Uint8Arrays (decompressed).
export function readStreams(manifest, streams, wasm = null) {
  const n4 = manifest.blocks.Q4_1;
  const n8 = manifest.blocks.Q8_0;
  const wide = Math.max(manifest.d_model, manifest.d_ff);
  const sizes = {
    codes4: n4 * 16, d4: n4 * 4, m4: n4 * 4, codes8: n8 * 32, d8: n8 * 4,
    floats: streams.f32.byteLength, x: MAX_ROWS * wide * 4, xs: wide * 4,
    y: MAX_ROWS * Math.max(wide, manifest.vocab_size / MAX_ROWS) * 4, acc: MAX_ROWS * 16,
  };
  const at = {};
  let end = 0;
  for (const [name, n] of Object.entries(sizes)) {
    at[name] = end;
    end += Math.ceil(n / 16) * 16; // 16-byte aligned: the kernels load 16 bytes at a time
  }
  let memory = null;
  let buffer;
  if (wasm) {
    memory = new WebAssembly.Memory({ initial: Math.ceil(end / 65536) });
    buffer = memory.buffer;
  } else buffer = new ArrayBuffer(end);
  const v = {
    codes4: new Uint8Array(buffer, at.codes4, n4 * 16), d4: new Float32Array(buffer, at.d4, n4),
    m4: new Float32Array(buffer, at.m4, n4), codes8: new Int8Array(buffer, at.codes8, n8 * 32),
    d8: new Float32Array(buffer, at.d8, n8), floats: new Float32Array(buffer, at.floats, streams.f32.byteLength / 4),
    x: new Float32Array(buffer, at.x, sizes.x / 4), xs: new Float32Array(buffer, at.xs, wide),
    y: new Float32Array(buffer, at.y, sizes.y / 4),
  };
  const [d4, m4] = halves(streams.q4_scales, n4, 2);
  v.d4.set(d4);
  v.m4.set(m4);
  v.d8.set(halves(streams.q8_scales, n8, 1)[0]);
  v.codes4.set(streams.q4_codes);
  v.codes8.set(new Int8Array(streams.q8_codes.buffer, streams.q8_codes.byteOffset, streams.q8_codes.byteLength));
  v.floats.set(new Float32Array(streams.f32.buffer.slice(streams.f32.byteOffset, streams.f32.byteOffset + streams.f32.byteLength)));
  return { ...v, at, memory, wasm };
}

// The matrix products, by the WebAssembly kernels (kernels.wat) or by plain JavaScript loops.
function createKernels(w, manifest) {
  const nbOf = (t) => t.shape[1] / BLOCK;
  if (w.wasm) {
    const k = new WebAssembly.Instance(new WebAssembly.Module(w.wasm), { env: { memory: w.memory } }).exports;
    const a = w.at;
    return {
      simd: true,
      // x, y: Float64Array (T x in), (T x out)
      linear(t, x, T, y) {
        const [rows, cols] = t.shape;
        const nb = cols / BLOCK;
        w.x.set(x.subarray(0, T * cols));
        if (T === 1) {
          for (let b = 0; b < nb; b++) {
            let s = 0;
            for (let j = 0; j < BLOCK; j++) s += w.x[b * BLOCK + j];
            w.xs[b] = s;
          }
          k.mv_q4(a.codes4, a.d4, a.m4, t.start, rows, nb, a.x, a.xs, a.y);
        } else k.mm_q4(a.codes4, a.d4, a.m4, t.start, rows, nb, a.x, a.y, T, a.acc);
        const out = w.y.subarray(0, T * rows);
        for (let i = 0; i < T * rows; i++) y[i] = out[i];
      },
      logits(t, last, out) {
        w.x.set(last);
        k.mv_q8(a.codes8, a.d8, t.start, t.shape[0], nbOf(t), a.x, a.y);
        const y = w.y.subarray(0, t.shape[0]);
        for (let i = 0; i < y.length; i++) out[i] = y[i];
      },
    };
  }
  return {
    simd: false,
    linear(t, x, T, y) {
      const [rows, cols] = t.shape;
      if (T === 1) matvecQ4(w, t.start, rows, cols, x, y);
      else matmulQ4(w, t.start, rows, cols, x, T, y);
    },
    logits(t, last, out) {
      const nb = nbOf(t);
      const { d8, codes8 } = w;
      for (let r = 0; r < t.shape[0]; r++) {
        let acc = 0;
        for (let b = 0; b < nb; b++) {
          const blk = t.start + r * nb + b;
          let s = 0;
          const c = blk * BLOCK;
          const o = b * BLOCK;
          for (let j = 0; j < BLOCK; j++) s += codes8[c + j] * last[o + j];
          acc += d8[blk] * s;
        }
        out[r] = acc;
      }
    },
  };
}

// y (T x out) = x (T x in) W^T for a Q4_1 matrix W (out x in) whose blocks start at `start`.
function matmulQ4(w, start, rows, cols, x, T, y) {
  const { d4, m4, codes4 } = w;
  const nb = cols / BLOCK;
  // each token's sum per block of 32 inputs: the m term is m * (sum of the block's inputs)
  const xs = new Float64Array(T * nb);
  for (let t = 0; t < T; t++) {
    for (let b = 0; b < nb; b++) {
      let s = 0;
      const o = t * cols + b * BLOCK;
      for (let j = 0; j < BLOCK; j++) s += x[o + j];
      xs[t * nb + b] = s;
    }
  }
  const q = new Float64Array(BLOCK);
  for (let r = 0; r < rows; r++) {
    for (let t = 0; t < T; t++) y[t * rows + r] = 0;
    for (let b = 0; b < nb; b++) {
      const blk = start + r * nb + b;
      const cbase = blk * 16;
      for (let j = 0; j < 16; j++) {
        const c = codes4[cbase + j];
        q[j] = c & 15;
        q[j + 16] = c >> 4;
      }
      const d = d4[blk];
      const m = m4[blk];
      for (let t = 0; t < T; t++) {
        const o = t * cols + b * BLOCK;
        let s = 0;
        for (let j = 0; j < BLOCK; j++) s += q[j] * x[o + j];
        y[t * rows + r] += d * s + m * xs[t * nb + b];
      }
    }
  }
}

// The same for one token (T = 1), the decoding step: the inner loop reads the codes directly.
function matvecQ4(w, start, rows, cols, x, y) {
  const { d4, m4, codes4 } = w;
  const nb = cols / BLOCK;
  const xs = new Float64Array(nb);
  for (let b = 0; b < nb; b++) {
    let s = 0;
    for (let j = 0; j < BLOCK; j++) s += x[b * BLOCK + j];
    xs[b] = s;
  }
  for (let r = 0; r < rows; r++) {
    let acc = 0;
    let blk = start + r * nb;
    for (let b = 0; b < nb; b++, blk++) {
      let c = blk * 16;
      const o = b * BLOCK;
      let s = 0;
      for (let j = 0; j < 16; j++, c++) {
        const v = codes4[c];
        s += (v & 15) * x[o + j] + (v >> 4) * x[o + 16 + j];
      }
      acc += d4[blk] * s + m4[blk] * xs[b];
    }
    y[r] = acc;
  }
}

function rmsNorm(x, T, d, weight, wStart, eps, out) {
  for (let t = 0; t < T; t++) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += x[t * d + i] * x[t * d + i];
    const r = 1 / Math.sqrt(ss / d + eps);
    for (let i = 0; i < d; i++) out[t * d + i] = x[t * d + i] * r * weight[wStart + i];
  }
}

export { MAX_ROWS };

export function createModel(manifest, weights) {
  const kernels = createKernels(weights, manifest);
  const linear = (_w, t, x, T, y) => kernels.linear(t, x, T, y);
  const { n_layers: L, d_model: D, n_heads: H, n_kv_heads: HKV, head_dim: DK, d_ff: F, vocab_size: V } = manifest;
  const eps = manifest.eps;
  const byName = new Map(manifest.tensors.map((t) => [t.name, t]));
  const tensor = (name) => {
    const t = byName.get(name);
    if (!t) throw new Error(`the export has no tensor ${name}`);
    return t;
  };
  const layers = [];
  for (let l = 0; l < L; l++) {
    const p = `blk.${l}.`;
    layers.push({
      attnNorm: tensor(p + "attn_norm.weight").start,
      q: tensor(p + "attn_q.weight"), k: tensor(p + "attn_k.weight"), v: tensor(p + "attn_v.weight"),
      o: tensor(p + "attn_output.weight"), ffnNorm: tensor(p + "ffn_norm.weight").start,
      gate: tensor(p + "ffn_gate.weight"), up: tensor(p + "ffn_up.weight"), down: tensor(p + "ffn_down.weight"),
    });
  }
  const outNorm = tensor("output_norm.weight").start;
  const embed = tensor("token_embd.weight");
  const group = H / HKV;
  const scale = 1 / Math.sqrt(DK);
  // RoPE: pair i of a head turns by position * base^(-2i / 64)
  const theta = new Float64Array(DK / 2);
  for (let i = 0; i < DK / 2; i++) theta[i] = Math.pow(manifest.rope_base, (-2 * i) / DK);

  function newCache(capacity = 512) {
    return { length: 0, capacity, k: [], v: [], grow(n) {
      if (n <= this.capacity) return;
      let c = this.capacity;
      while (c < n) c *= 2;
      for (let l = 0; l < L; l++) {
        const k = new Float64Array(c * HKV * DK);
        k.set(this.k[l]);
        const v = new Float64Array(c * HKV * DK);
        v.set(this.v[l]);
        this.k[l] = k;
        this.v[l] = v;
      }
      this.capacity = c;
    }, init() {
      for (let l = 0; l < L; l++) {
        this.k.push(new Float64Array(this.capacity * HKV * DK));
        this.v.push(new Float64Array(this.capacity * HKV * DK));
      }
      return this;
    } }.init();
  }

  function embedRows(ids, x) {
    const nb = D / BLOCK;
    ids.forEach((id, t) => {
      if (!(id >= 0 && id < V)) throw new Error(`token id ${id} is outside 0..${V - 1}`);
      for (let b = 0; b < nb; b++) {
        const blk = embed.start + id * nb + b;
        const d = weights.d8[blk];
        for (let j = 0; j < BLOCK; j++) x[t * D + b * BLOCK + j] = d * weights.codes8[blk * BLOCK + j];
      }
    });
  }

  function rope(vec, at, nHeads, pos) {
    for (let h = 0; h < nHeads; h++) {
      const o = at + h * DK;
      for (let i = 0; i < DK / 2; i++) {
        const a = pos * theta[i];
        const c = Math.cos(a);
        const s = Math.sin(a);
        const x0 = vec[o + 2 * i];
        const x1 = vec[o + 2 * i + 1];
        vec[o + 2 * i] = x0 * c - x1 * s;
        vec[o + 2 * i + 1] = x0 * s + x1 * c;
      }
    }
  }

  // Run `ids` after the cache's tokens. Returns the last token's logits (Float64Array V) and, when
  // asked, the last token's attention weights: a Float32Array (L x H x n) over all n tokens so far.
  // knockout: a Set of "layer:head" strings whose outputs are set to zero.
  function forward(ids, cache, { weightsOfLast = false, knockout = null } = {}) {
    const T = ids.length;
    if (!(T >= 1 && T <= MAX_ROWS)) throw new Error(`one call runs 1 to ${MAX_ROWS} tokens; got ${T}`);
    const past = cache.length;
    const n = past + T;
    cache.grow(n);
    const x = new Float64Array(T * D);
    embedRows(ids, x);
    const h = new Float64Array(T * D);
    const q = new Float64Array(T * H * DK);
    const k = new Float64Array(T * HKV * DK);
    const v = new Float64Array(T * HKV * DK);
    const ctx = new Float64Array(T * D);
    const att = new Float64Array(T * D);
    const g = new Float64Array(T * F);
    const u = new Float64Array(T * F);
    const scores = new Float64Array(n);
    const maps = weightsOfLast ? new Float32Array(L * H * n) : null;
    for (let l = 0; l < L; l++) {
      const ly = layers[l];
      rmsNorm(x, T, D, weights.floats, ly.attnNorm, eps, h);
      linear(weights, ly.q, h, T, q);
      linear(weights, ly.k, h, T, k);
      linear(weights, ly.v, h, T, v);
      const K = cache.k[l];
      const Vc = cache.v[l];
      for (let t = 0; t < T; t++) {
        rope(q, t * H * DK, H, past + t);
        rope(k, t * HKV * DK, HKV, past + t);
        K.set(k.subarray(t * HKV * DK, (t + 1) * HKV * DK), (past + t) * HKV * DK);
        Vc.set(v.subarray(t * HKV * DK, (t + 1) * HKV * DK), (past + t) * HKV * DK);
      }
      for (let t = 0; t < T; t++) {
        const seen = past + t + 1; // causal: token t sees the cache and new tokens 0..t
        for (let hd = 0; hd < H; hd++) {
          const kv = Math.floor(hd / group);
          const qo = t * H * DK + hd * DK;
          let max = -Infinity;
          for (let j = 0; j < seen; j++) {
            const ko = (j * HKV + kv) * DK;
            let s = 0;
            for (let i = 0; i < DK; i++) s += q[qo + i] * K[ko + i];
            s *= scale;
            scores[j] = s;
            if (s > max) max = s;
          }
          let sum = 0;
          for (let j = 0; j < seen; j++) {
            scores[j] = Math.exp(scores[j] - max); // stable: the largest score becomes 0
            sum += scores[j];
          }
          const co = t * D + hd * DK;
          for (let i = 0; i < DK; i++) ctx[co + i] = 0;
          if (knockout && knockout.has(`${l}:${hd}`)) {
            if (maps && t === T - 1) for (let j = 0; j < seen; j++) maps[(l * H + hd) * n + j] = scores[j] / sum;
            continue; // the head's output is zero: W_O sees nothing from it
          }
          for (let j = 0; j < seen; j++) {
            const w = scores[j] / sum;
            if (maps && t === T - 1) maps[(l * H + hd) * n + j] = w;
            const vo = (j * HKV + kv) * DK;
            for (let i = 0; i < DK; i++) ctx[co + i] += w * Vc[vo + i];
          }
        }
      }
      linear(weights, ly.o, ctx, T, att);
      for (let i = 0; i < T * D; i++) x[i] += att[i];
      rmsNorm(x, T, D, weights.floats, ly.ffnNorm, eps, h);
      linear(weights, ly.gate, h, T, g);
      linear(weights, ly.up, h, T, u);
      for (let i = 0; i < T * F; i++) g[i] = (g[i] / (1 + Math.exp(-g[i]))) * u[i]; // SiLU(gate) * up
      linear(weights, ly.down, g, T, att);
      for (let i = 0; i < T * D; i++) x[i] += att[i];
    }
    cache.length = n;
    // the last token only: the next-token logits (tied output layer = the Q8_0 embedding)
    const last = new Float64Array(D);
    rmsNorm(x.subarray((T - 1) * D), 1, D, weights.floats, outNorm, eps, last);
    const logits = new Float64Array(V);
    kernels.logits(embed, last, logits);
    return { logits, maps };
  }

  return { manifest, newCache, forward, simd: kernels.simd, nLayers: L, nHeads: H, nKvHeads: HKV, headDim: DK };
}

// Greedy: the first largest logit (as torch.argmax). Sampling (temperature, top-k, top-p) with a
// seeded generator, so that a reader can replay a run.
export function argmax(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The next token: greedy when temperature is 0; else softmax(logits / temperature) after top-k
// (the k largest kept) and top-p (the smallest set of largest whose probabilities reach p, the
// one that crosses p included), as course_utils.causal.top_k_filter / top_p_filter.
export function pickNext(logits, { temperature = 0, topK = null, topP = null, random = Math.random } = {}) {
  if (!(temperature > 0)) return argmax(logits);
  const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
  let keep = topK ? order.slice(0, Math.max(1, topK)) : order;
  const max = logits[keep[0]];
  let probs = keep.map((i) => Math.exp((logits[i] - max) / temperature));
  let total = probs.reduce((a, b) => a + b, 0);
  if (topP !== null && topP < 1) {
    let run = 0;
    let cut = keep.length;
    for (let j = 0; j < keep.length; j++) {
      run += probs[j] / total;
      if (run >= topP) {
        cut = j + 1;
        break;
      }
    }
    keep = keep.slice(0, cut);
    probs = probs.slice(0, cut);
    total = probs.reduce((a, b) => a + b, 0);
  }
  let r = random() * total;
  for (let j = 0; j < keep.length; j++) {
    r -= probs[j];
    if (r <= 0) return keep[j];
  }
  return keep[keep.length - 1];
}
