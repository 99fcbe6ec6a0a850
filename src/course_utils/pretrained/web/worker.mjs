// Attention, step by step: the Web Worker that runs all-MiniLM-L6-v2 off the page's main thread (MIT licence).
//
// Started by the head explorer (course_utils/widgets/head_explorer.js) on the reader's first edit, as a module
// worker: new Worker(".../_static/minilm/worker.mjs", {type: "module"}). The model files sit beside it in
// model/ (written at build time by course_utils.pretrained.minilm_web.export_weights; same origin, no outside request),
// the weights packed as byte planes under deflate, which the browser's own DecompressionStream undoes.
//
// Messages in:  {type: "load", base?}            download manifest, vocabulary and weights (base: another folder)
//               {type: "run", id, text, maxTokens} tokenize and run one sentence (after load)
// Messages out: {type: "progress", loaded, total} bytes of the up-front download so far
//               {type: "ready", bytes}             the model is loaded
//               {type: "result", id, tokens, maps, rollout, ms, nLayers, nHeads}
//               {type: "too-long", id, tokens, maxTokens}
//               {type: "error", id, message}
import { createModel, decodeArray, itemsize, joinPlanes, readWeights } from "./bert.mjs";
import { createTokenizer } from "./wordpiece.mjs";

let model = null;
let manifest = null;
let queue = Promise.resolve();

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
  return response;
}

// A file as it arrives, counting its bytes (the progress bar counts what crosses the network).
function counted(response, onBytes) {
  if (!onBytes) return response.body;
  return response.body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        onBytes(chunk.byteLength);
        controller.enqueue(chunk);
      },
    }),
  );
}

// A packed file (byte planes under deflate: course_utils.pretrained.web_export), unpacked by the
// browser's own DecompressionStream, its planes joined: the numbers' bytes, as exported.
async function fetchPacked(url, size, onBytes) {
  const body = counted(await fetchOk(url), onBytes).pipeThrough(new DecompressionStream("deflate"));
  return joinPlanes(new Uint8Array(await new Response(body).arrayBuffer()), size);
}

async function fetchText(url, onBytes) {
  return new Response(counted(await fetchOk(url), onBytes)).text();
}

async function load(base) {
  const root = new URL(base || "model/", import.meta.url);
  const head = await fetchText(new URL("manifest.json", root));
  manifest = JSON.parse(head);
  const size = itemsize(manifest.dtype);
  const headBytes = new TextEncoder().encode(head).length;
  const total = headBytes + manifest.vocab_bytes + manifest.weights_file_bytes;
  let loaded = headBytes;
  let last = 0;
  const onBytes = (n) => {
    loaded += n;
    const now = Date.now();
    if (now - last > 100 || loaded === total) {
      last = now;
      self.postMessage({ type: "progress", loaded, total });
    }
  };
  const [vocabText, weightBytes] = await Promise.all([
    fetchText(new URL("vocab.json", root), onBytes),
    fetchPacked(new URL("weights.bin", root), size, onBytes),
  ]);
  const vocab = JSON.parse(vocabText);
  const weights = readWeights(manifest, weightBytes);
  const chunks = new Map();
  const w = manifest.words;
  const getChunk = (i) => {
    if (!chunks.has(i)) {
      const name = w.pattern.replace("{index}", String(i).padStart(w.digits, "0"));
      chunks.set(i, fetchPacked(new URL(name, root), size).then((b) => decodeArray(b, manifest.dtype)));
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
