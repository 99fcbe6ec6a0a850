// Attention, step by step: the Web Worker that runs all-MiniLM-L6-v2 off the page's main thread (MIT licence).
//
// Started by the head explorer (course_utils/widgets/head_explorer.js) on the reader's first edit, as a module
// worker: new Worker(".../_static/minilm/worker.mjs", {type: "module"}). The model files sit beside it in
// model/ (written at build time by course_utils.pretrained.minilm_web.export_weights; same origin, no outside request).
//
// Messages in:  {type: "load", base?}            download manifest, vocabulary and weights (base: another folder)
//               {type: "run", id, text, maxTokens} tokenize and run one sentence (after load)
// Messages out: {type: "progress", loaded, total} bytes of the up-front download so far
//               {type: "ready", bytes}             the model is loaded
//               {type: "result", id, tokens, maps, rollout, ms, nLayers, nHeads}
//               {type: "too-long", id, tokens, maxTokens}
//               {type: "error", id, message}
import { createModel, decodeArray, readWeights } from "./bert.mjs";
import { createTokenizer } from "./wordpiece.mjs";

let model = null;
let manifest = null;
let queue = Promise.resolve();

async function fetchBytes(url, onBytes) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
  if (!onBytes || !response.body) return response.arrayBuffer();
  const reader = response.body.getReader();
  const parts = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    n += value.length;
    onBytes(value.length);
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out.buffer;
}

async function load(base) {
  const root = new URL(base || "model/", import.meta.url);
  const head = await fetchBytes(new URL("manifest.json", root));
  manifest = JSON.parse(new TextDecoder().decode(head));
  const total = head.byteLength + manifest.vocab_bytes + manifest.weights_bytes;
  let loaded = head.byteLength;
  let last = 0;
  const onBytes = (n) => {
    loaded += n;
    const now = Date.now();
    if (now - last > 100 || loaded === total) {
      last = now;
      self.postMessage({ type: "progress", loaded, total });
    }
  };
  const [vocabBytes, weightBytes] = await Promise.all([
    fetchBytes(new URL("vocab.json", root), onBytes),
    fetchBytes(new URL("weights.bin", root), onBytes),
  ]);
  const vocab = JSON.parse(new TextDecoder().decode(vocabBytes));
  const weights = readWeights(manifest, weightBytes);
  const chunks = new Map();
  const w = manifest.words;
  const getChunk = (i) => {
    if (!chunks.has(i)) {
      const name = w.pattern.replace("{index}", String(i).padStart(w.digits, "0"));
      chunks.set(i, fetchBytes(new URL(name, root)).then((b) => decodeArray(b, manifest.dtype)));
    }
    return chunks.get(i);
  };
  model = createModel(manifest, weights, createTokenizer(vocab, { special: manifest.special_tokens }), getChunk);
  self.postMessage({ type: "progress", loaded: total, total });
  self.postMessage({ type: "ready", bytes: total });
}

async function run(msg) {
  if (!model) throw new Error("the model is not loaded yet");
  const start = performance.now();
  const out = await model.run(msg.text, msg.maxTokens || manifest.max_tokens);
  if (out.tooLong) {
    self.postMessage({ type: "too-long", id: msg.id, tokens: out.tokens.length, maxTokens: msg.maxTokens || manifest.max_tokens });
    return;
  }
  const ms = performance.now() - start;
  self.postMessage(
    { type: "result", id: msg.id, tokens: out.tokens, maps: out.maps, rollout: out.rollout, ms,
      nLayers: manifest.n_layers, nHeads: manifest.n_heads },
    [out.maps.buffer, out.rollout.buffer],
  );
}

self.onmessage = (event) => {
  const msg = event.data || {};
  queue = queue
    .then(() => (msg.type === "load" ? load(msg.base) : run(msg)))
    .catch((err) => self.postMessage({ type: "error", id: msg.id, message: String((err && err.message) || err) }));
};
