// Attention, step by step: the Web Worker that runs SmolLM2-135M-Instruct off the page's main thread (MIT licence).
//
// Started by the writer widget (course_utils/widgets/smollm2_writer.js) when the reader first asks for
// text, as a module worker: new Worker(".../_static/smollm2/smollm2_worker.mjs", {type: "module"}). The
// model files sit beside it (written at build time by course_utils.pretrained.smollm2_web; same origin,
// no outside request), deflate-compressed; the browser's DecompressionStream unpacks them. The packed
// files are kept in the Cache API (when the page's origin allows it), so a second visit downloads
// nothing but the small manifest.
//
// Messages in:  {type: "load"}                                       download and build the model
//               {type: "generate", id, prompt, nNew, temperature, topK, topP, seed, knockout: ["l:h"]}
//               {type: "stop", id}                                  stop that run after its current token
// Messages out: {type: "progress", loaded, total}                  bytes so far
//               {type: "ready", bytes, simd, cached}
//               {type: "prompt", id, ids, labels}                   the prompt's tokens
//               {type: "token", id, index, token, label, ms, n, weights (Float32Array L*H*n), top}
//               {type: "done", id, ids, ms}
//               {type: "too-long", id, tokens, max}
//               {type: "error", id, message}
import { createTokenizer } from "./bpe.mjs";
import { createModel, mulberry32, pickNext, readStreams } from "./llama.mjs";

const STREAMS = ["q4_scales", "q4_codes", "q8_scales", "q8_codes", "f32", "tokenizer"];
let model = null;
let tokenizer = null;
let manifest = null;
let loading = null;
let stopped = new Set();

async function cachedResponse(url, version) {
  let store = null;
  try {
    store = self.caches ? await caches.open(`attention-course-smollm2-${version}`) : null;
  } catch (_) {
    store = null; // an opaque origin (file://) or private mode: download every time
  }
  if (store) {
    const hit = await store.match(url);
    if (hit) return { response: hit, cached: true };
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
  if (store) {
    try {
      await store.put(url, response.clone());
    } catch (_) {
      // out of quota: still usable this time
    }
  }
  return { response, cached: false };
}

// The packed file at url, unpacked, counting its packed bytes as they arrive.
async function unpacked(url, version, onBytes) {
  const { response, cached } = await cachedResponse(url, version);
  const counted = response.body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        onBytes(chunk.byteLength);
        controller.enqueue(chunk);
      },
    }),
  );
  const buffer = await new Response(counted.pipeThrough(new DecompressionStream("deflate"))).arrayBuffer();
  return { bytes: new Uint8Array(buffer), cached };
}

async function load() {
  const root = new URL("./", import.meta.url);
  const head = await fetch(new URL("manifest.json", root));
  if (!head.ok) throw new Error(`could not load the model's manifest: HTTP ${head.status}`);
  manifest = await head.json();
  const total = manifest.download_bytes;
  let loaded = 0;
  let last = 0;
  const onBytes = (n) => {
    loaded += n;
    const now = Date.now();
    if (now - last > 100) {
      last = now;
      self.postMessage({ type: "progress", loaded, total });
    }
  };
  const parts = {};
  let allCached = true;
  await Promise.all(
    STREAMS.map(async (name) => {
      const got = await unpacked(new URL(manifest.files[name].file, root), manifest.version, onBytes);
      if (got.bytes.byteLength !== manifest.files[name].raw_bytes) {
        throw new Error(`${name}: ${got.bytes.byteLength} bytes unpacked, ${manifest.files[name].raw_bytes} expected`);
      }
      parts[name] = got.bytes;
      allCached = allCached && got.cached;
    }),
  );
  let wasm = null;
  try {
    const r = await fetch(new URL("kernels.wasm", root));
    const bytes = new Uint8Array(await r.arrayBuffer());
    if (r.ok && WebAssembly.validate(bytes)) wasm = bytes; // no SIMD: plain JavaScript loops
  } catch (_) {
    wasm = null;
  }
  tokenizer = createTokenizer(JSON.parse(new TextDecoder().decode(parts.tokenizer)));
  model = createModel(manifest, readStreams(manifest, parts, wasm));
  self.postMessage({ type: "progress", loaded: total, total });
  self.postMessage({ type: "ready", bytes: total, simd: model.simd, cached: allCached });
}

// The top 5 next-token candidates: [{id, label, logit}], largest first.
function top5(logits) {
  const best = [];
  for (let i = 0; i < logits.length; i++) {
    if (best.length < 5 || logits[i] > logits[best[best.length - 1]]) {
      best.push(i);
      best.sort((a, b) => logits[b] - logits[a] || a - b);
      if (best.length > 5) best.pop();
    }
  }
  return best.map((id) => ({ id, label: tokenizer.decode([id]), logit: logits[id] }));
}

async function generate(msg) {
  if (!model) throw new Error("the model is not loaded yet");
  const ids = tokenizer.encode(msg.prompt || "");
  const max = manifest.max_prompt_tokens;
  if (ids.length > max || ids.length === 0) {
    self.postMessage({ type: "too-long", id: msg.id, tokens: ids.length, max });
    return;
  }
  self.postMessage({ type: "prompt", id: msg.id, ids, labels: tokenizer.labels(ids) });
  const random = mulberry32(msg.seed || 0);
  const knockout = new Set(msg.knockout || []);
  const cache = model.newCache(ids.length + msg.nNew);
  const all = ids.slice();
  const labels = tokenizer.labels(ids);
  const start = performance.now();
  let input = ids;
  for (let i = 0; i < msg.nNew; i++) {
    if (stopped.has(msg.id)) break;
    const t0 = performance.now();
    const { logits, maps } = model.forward(input, cache, { weightsOfLast: true, knockout });
    const token = pickNext(logits, { temperature: msg.temperature, topK: msg.topK, topP: msg.topP, random });
    const ms = performance.now() - t0;
    all.push(token);
    // the new token's label: the characters it completes (as the tokenizer's labels)
    const now = tokenizer.decode(all).replace(/\uFFFD+$/u, "");
    const before = labels.join("").replace(/·/gu, "");
    labels.push(now.slice(before.length) || "·");
    self.postMessage(
      { type: "token", id: msg.id, index: i, token, label: labels[labels.length - 1], ms, n: cache.length,
        weights: maps, top: top5(logits) },
      [maps.buffer],
    );
    input = [token];
    await new Promise((resolve) => setTimeout(resolve, 0)); // let a "stop" message in
  }
  stopped.delete(msg.id);
  self.postMessage({ type: "done", id: msg.id, ids: all.slice(ids.length), ms: performance.now() - start });
}

self.onmessage = (event) => {
  const msg = event.data || {};
  if (msg.type === "stop") {
    stopped.add(msg.id);
    return;
  }
  if (msg.type === "load") {
    loading = loading || load();
    loading.catch((err) => self.postMessage({ type: "error", message: String((err && err.message) || err) }));
    return;
  }
  (loading || Promise.reject(new Error("load the model first")))
    .then(() => generate(msg))
    .catch((err) => self.postMessage({ type: "error", id: msg.id, message: String((err && err.message) || err) }));
};
