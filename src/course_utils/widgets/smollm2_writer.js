// SmolLM2Writer: SmolLM2-135M-Instruct generates from the reader's prompt, one token at a time; for
// the newest token the widget shows one head's attention over every earlier token (the tokens
// shaded by weight), all 30 x 9 heads as small strips, the next-token candidates and the KV cache.
//
// Two engines, one message protocol (course_utils.pretrained.web.smollm2_worker):
// * JupyterLab (a kernel): model.send({type: "generate", ...}); Python (SmolLM2Writer.run) answers
//   with model "msg:custom" messages: prompt, token (one per new token), done, too-long, error.
// * The static site (model.kernelless): the first Generate starts a module Web Worker
//   (_static/smollm2/smollm2_worker.mjs) that downloads the model (the size is on the button), then
//   the same messages arrive from it. Nothing of the model is loaded before that click.
// For tests: the output element carries the generated ids (data-token-ids, JSON), the attention
// strip the shown weights (data-weights, JSON) with data-layer and data-head.

const TEXT = {
  example: CU.t("Example prompt"),
  newTokens: CU.t("New tokens"),
  decoding: CU.t("Decoding"),
  layer: CU.t("Layer"),
  head: CU.t("Head"),
  promptLabel: CU.t("Your prompt"),
  generate: (mb) => (mb ? CU.t(`Generate (downloads ${mb} MB once)`) : CU.t("Generate (downloads the model once)")),
  generateReady: CU.t("Generate"),
  generateKernel: CU.t("Generate (Python)"),
  stop: CU.t("Stop"),
  knock: (l, h) => CU.t(`Knock out layer ${l}, head ${h}`),
  restore: (l, h) => CU.t(`Restore layer ${l}, head ${h}`),
  clear: CU.t("Restore all heads"),
  knocked: (list) => (list.length ? CU.t(`Knocked out: ${list.join(", ")}`) : CU.t("No head knocked out.")),
  settings: (n, dec) => CU.t(`Next run: ${n} new tokens, ${dec}.`),
  phone: (p) => (p && p.mb
    ? CU.t(`On a phone all of this runs on the phone. The ${p.mb} MB download takes about ${p.minutes} min on slow mobile data (${p.mbit} Mbit/s). Then a mid-range phone needs about ${p.first_s} s for the first token and writes about ${p.mid} tokens/s, a low-end phone about ${p.low}: an estimate, this computer's speed on one core slowed ${p.mid_x} and ${p.low_x} times, as Chrome's Lighthouse does to imitate phones.`)
    : CU.t("On a phone the download and each token take longer: it computes on your device, one core.")),
  loading: (done, total) => CU.t(`Downloading the model: ${done} of ${total} MB…`),
  progress: CU.t("Model download"),
  loaded: (cached) => (cached ? CU.t("Model loaded from this browser's cache.") : CU.t("Model downloaded and kept for your next visit.")),
  running: CU.t("Generating…"),
  perToken: (i, ms) => CU.t(`Token ${i}: ${ms} ms`),
  done: (n, ms, rate) => CU.t(`Done: ${n} new tokens in ${ms} ms (${rate} tokens/s).`),
  tooLong: (n, max) => CU.t(`Your prompt has ${n} tokens; at most ${max} fit. Please shorten it.`),
  empty: CU.t("Type a prompt first."),
  failed: (msg) => CU.t(`The model could not run here: ${msg}`),
  noWorker: CU.t("This page cannot run the model: open the course website over http (for example `make serve`)."),
  attention: (l, h, k) => CU.t(`Layer ${l}, head ${h} (reads key/value head ${k}): how much the newest token draws from each token.`),
  nothingYet: CU.t("Press Generate: the newest token's attention appears here."),
  gridLabel: (n) => CU.t(`All 30 layers x 9 heads, each a strip over the ${n} tokens so far (brighter: more weight). Click a head to pick it.`),
  top: CU.t("Next-token candidates (logits):"),
  cache: (n, kb) => CU.t(`KV cache: ${n} tokens x 30 layers x 2 (K and V) x 3 heads x 64 numbers x 4 bytes = ${kb} KB`),
};

function render({ model, el }) {
  const { root, controls, stage } = CU.frame(el, model, "cu-smollm2-writer cu-long-menus");
  const kernel = !model.kernelless;
  const L = model.get("n_layers");
  const H = model.get("n_heads");
  const group = H / model.get("n_kv_heads");

  const example = CU.select({
    label: TEXT.example, options: model.get("prompts"), model, trait: "example_index",
    onChange: (i) => {
      // another example: a fresh start (a run still going is stopped; its tokens are dropped)
      box.value = model.get("prompts")[i];
      if (worker) worker.postMessage({ type: "stop", id: asked });
      asked += 1;
      run = null;
      go.disabled = false;
      stopButton.disabled = true;
      drawOutput();
      drawHead();
      drawTop();
    },
  });
  const newTokens = CU.select({
    label: TEXT.newTokens, options: model.get("new_tokens").map(String), model, trait: "new_tokens_index",
    onChange: () => showSettings(),
  });
  const decoding = CU.select({
    label: TEXT.decoding, options: model.get("decoding"), model, trait: "decoding_index",
    onChange: () => showSettings(),
  });
  const layer = CU.slider({ label: TEXT.layer, n: L, model, trait: "layer", onInput: () => drawHead() });
  const head = CU.slider({ label: TEXT.head, n: H, model, trait: "head", onInput: () => drawHead() });
  controls.append(example.root, newTokens.root, decoding.root, layer.root, head.root);

  // The prompt box and the buttons (cu-screen-only: the printed book's still leaves them out).
  const ask = CU.html("div", { class: "cu-sw-ask cu-screen-only" });
  controls.after(ask);
  const boxId = CU.uid("prompt");
  CU.html("label", { for: boxId }, ask, TEXT.promptLabel);
  const box = CU.html("textarea", { id: boxId, class: "cu-sw-prompt cu-field", rows: 2, spellcheck: "false" }, ask);
  box.value = model.get("prompt") || model.get("prompts")[0];
  CU.suppressShortcuts(box);
  const buttons = CU.html("div", { class: "cu-sw-buttons" }, ask);
  const go = CU.html("button", { type: "button", class: "cu-sw-go cu-field-button" }, buttons,
    kernel ? TEXT.generateKernel : TEXT.generate(model.get("download_bytes") ? CU.mb(model.get("download_bytes")) : null));
  const stopButton = CU.html("button", { type: "button", class: "cu-sw-stop cu-field-button" }, buttons, TEXT.stop);
  stopButton.disabled = true;
  const knock = CU.html("button", { type: "button", class: "cu-sw-knock cu-field-button", "aria-pressed": "false" }, buttons, "");
  const clear = CU.html("button", { type: "button", class: "cu-sw-clear cu-field-button" }, buttons, TEXT.clear);
  const progress = CU.html("progress", { class: "cu-sw-progress", max: 1, value: 0, "aria-label": TEXT.progress }, ask);
  progress.hidden = true;
  const status = CU.html("p", { class: "cu-sw-status", role: "status" }, ask, "");
  CU.html("p", { class: "cu-sw-phone" }, ask, TEXT.phone(model.get("phone")));

  // The stage: settings, the text, the head's attention, the grid of all heads, candidates, cache.
  const settings = CU.html("p", { class: "cu-sw-settings" }, stage, "");
  const knockedLine = CU.html("p", { class: "cu-sw-knocked" }, stage, "");
  const output = CU.html("p", { class: "cu-sw-output", "data-token-ids": "[]", lang: "" }, stage, "");
  const headNote = CU.html("p", { class: "cu-sw-head-note" }, stage, "");
  const strip = CU.html("p", { class: "cu-sw-strip", "data-weights": "[]", "data-layer": "0", "data-head": "0" }, stage, TEXT.nothingYet);
  const gridNote = CU.html("p", { class: "cu-sw-grid-note" }, stage, TEXT.gridLabel(0));
  const canvas = CU.html("canvas", { class: "cu-sw-grid", role: "img", "aria-label": TEXT.gridLabel(0) }, stage);
  const CELL_W = 40;
  const CELL_H = 9;
  canvas.width = H * (CELL_W + 2);
  canvas.height = L * (CELL_H + 2);
  const topLine = CU.html("p", { class: "cu-sw-top" }, stage, "");
  const cacheLine = CU.html("p", { class: "cu-sw-cache" }, stage, "");

  let run = null; // {id, ids, labels, newIds, weights (last token), n, top, ms: []}
  let asked = 0;

  function knockedList() {
    return model.get("knockout");
  }
  function showSettings() {
    const n = model.get("new_tokens")[model.get("new_tokens_index")];
    CU.setText(settings, TEXT.settings(n, model.get("decoding")[model.get("decoding_index")]));
    const list = knockedList().map((k) => k.replace(":", "."));
    CU.setText(knockedLine, TEXT.knocked(list));
    const key = `${model.get("layer")}:${model.get("head")}`;
    const on = knockedList().includes(key);
    CU.setText(knock, on ? TEXT.restore(model.get("layer"), model.get("head")) : TEXT.knock(model.get("layer"), model.get("head")));
    knock.setAttribute("aria-pressed", on ? "true" : "false");
  }

  function drawOutput() {
    output.replaceChildren();
    if (!run) {
      CU.html("span", { class: "cu-sw-piece cu-sw-from-prompt" }, output, box.value);
      output.dataset.tokenIds = "[]";
      return;
    }
    run.labels.forEach((label, i) => {
      const isNew = i >= run.ids.length;
      const span = CU.html("span", { class: `cu-sw-piece ${isNew ? "cu-sw-new" : "cu-sw-from-prompt"}` }, output, label);
      if (isNew && run.ms[i - run.ids.length] !== undefined) {
        span.title = TEXT.perToken(i - run.ids.length + 1, Math.round(run.ms[i - run.ids.length]));
      }
    });
    output.dataset.tokenIds = JSON.stringify(run.newIds);
  }

  // The chosen head's row: every token so far, shaded by the weight the newest token gives it.
  function drawHead() {
    const l = model.get("layer");
    const h = model.get("head");
    CU.setText(headNote, TEXT.attention(l, h, Math.floor(h / group)));
    strip.dataset.layer = String(l);
    strip.dataset.head = String(h);
    showSettings();
    drawGrid();
    if (!run || !run.weights) {
      strip.replaceChildren(TEXT.nothingYet);
      strip.dataset.weights = "[]";
      return;
    }
    const n = run.n;
    const row = Array.from(run.weights.subarray((l * H + h) * n, (l * H + h + 1) * n));
    strip.dataset.weights = JSON.stringify(row);
    strip.replaceChildren();
    const labels = run.labels.slice(0, n);
    labels.forEach((label, j) => {
      const w = row[j];
      const span = CU.html("span", { class: "cu-sw-piece" }, strip, label === "\n" ? "⏎" : label);
      span.style.background = CU.colour(w, "viridis");
      span.style.color = CU.inkOn(w, "viridis");
      span.title = `${(100 * w).toFixed(1)} %`;
    });
  }

  function drawGrid() {
    const ctx = canvas.getContext && canvas.getContext("2d");
    if (!ctx) return;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const n = run && run.weights ? run.n : 0;
    const knocked = new Set(knockedList());
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        const x0 = h * (CELL_W + 2) + 1;
        const y0 = l * (CELL_H + 2) + 1;
        ctx.fillStyle = CU.colour(0, "viridis");
        ctx.fillRect(x0, y0, CELL_W, CELL_H);
        if (n) {
          const base = (l * H + h) * n;
          for (let j = 0; j < n; j++) {
            const a = Math.floor((j * CELL_W) / n);
            const b = Math.max(a + 1, Math.floor(((j + 1) * CELL_W) / n));
            ctx.fillStyle = CU.colour(Math.min(1, run.weights[base + j]), "viridis");
            ctx.fillRect(x0 + a, y0, b - a, CELL_H);
          }
        }
        if (knocked.has(`${l}:${h}`)) {
          ctx.strokeStyle = "#d55e00";
          ctx.lineWidth = 2;
          ctx.beginPath();
          ctx.moveTo(x0, y0);
          ctx.lineTo(x0 + CELL_W, y0 + CELL_H);
          ctx.stroke();
        }
      }
    }
    const l = model.get("layer");
    const h = model.get("head");
    ctx.strokeStyle = "#e69f00";
    ctx.lineWidth = 2;
    ctx.strokeRect(h * (CELL_W + 2), l * (CELL_H + 2), CELL_W + 2, CELL_H + 2);
    const label = TEXT.gridLabel(n);
    canvas.setAttribute("aria-label", label);
    CU.setText(gridNote, label);
  }

  canvas.addEventListener("click", (ev) => {
    const rect = canvas.getBoundingClientRect();
    const x = ((ev.clientX - rect.left) / rect.width) * canvas.width;
    const y = ((ev.clientY - rect.top) / rect.height) * canvas.height;
    const h = Math.min(H - 1, Math.max(0, Math.floor(x / (CELL_W + 2))));
    const l = Math.min(L - 1, Math.max(0, Math.floor(y / (CELL_H + 2))));
    CU.save(model, { layer: l, head: h });
    layer.set(l);
    head.set(h);
    drawHead();
  });

  knock.addEventListener("click", () => {
    const key = `${model.get("layer")}:${model.get("head")}`;
    const list = knockedList();
    CU.save(model, { knockout: list.includes(key) ? list.filter((k) => k !== key) : [...list, key] });
    drawHead();
  });
  clear.addEventListener("click", () => {
    CU.save(model, { knockout: [] });
    drawHead();
  });

  function drawTop() {
    if (!run || !run.top) {
      CU.setText(topLine, "");
      CU.setText(cacheLine, "");
      return;
    }
    CU.setText(topLine, `${TEXT.top} ${run.top.map((c) => `${JSON.stringify(c.label)} ${c.logit.toFixed(2)}`).join(" · ")}`);
    const bytes = run.n * 30 * 2 * 3 * 64 * 4;
    CU.setText(cacheLine, TEXT.cache(run.n, (bytes / 1000).toFixed(0)));
  }

  // --- one message protocol for both engines ---------------------------------------------------
  function onMessage(msg) {
    if (msg.id !== undefined && msg.id !== asked) return; // an older run
    if (msg.type === "prompt") {
      run = { id: msg.id, ids: msg.ids, labels: msg.labels.slice(), newIds: [], weights: null, n: 0, top: null, ms: [], start: performance.now() };
      drawOutput();
      root.dataset.cuRun = "running";
    } else if (msg.type === "token") {
      run.newIds.push(msg.token);
      run.labels.push(msg.label);
      run.ms.push(msg.ms);
      run.n = msg.n;
      run.weights = msg.weights instanceof Float32Array ? msg.weights : Float32Array.from(msg.weights);
      run.top = msg.top;
      drawOutput();
      drawHead();
      drawTop();
      CU.setText(status, `${TEXT.running} ${TEXT.perToken(msg.index + 1, Math.round(msg.ms))}`);
    } else if (msg.type === "done") {
      const total = run ? run.ms.reduce((a, b) => a + b, 0) : msg.ms;
      const n = msg.ids.length;
      CU.setText(status, TEXT.done(n, Math.round(total), n ? (n / (total / 1000)).toFixed(1) : "0"));
      output.dataset.tokenIds = JSON.stringify(msg.ids);
      root.cuWriter = { ids: msg.ids, weights: run && run.weights, top: run && run.top, ms: run && run.ms };
      root.dataset.cuRun = "done";
      stopButton.disabled = true;
      go.disabled = false;
    } else if (msg.type === "too-long") {
      CU.setText(status, msg.tokens ? TEXT.tooLong(msg.tokens, msg.max) : TEXT.empty);
      root.dataset.cuRun = "too-long";
      stopButton.disabled = true;
      go.disabled = false;
    } else if (msg.type === "error") {
      CU.setText(status, TEXT.failed(msg.message));
      root.dataset.cuRun = "error";
      stopButton.disabled = true;
      go.disabled = false;
    }
  }

  let worker = null;
  let ready = false;
  let pending = null;
  // the worker's own messages; the download's progress is shown by CU.modelWorker
  function onModelMessage(msg) {
    if (msg.type === "ready") {
      ready = true;
      progress.hidden = true;
      CU.setText(go, TEXT.generateReady);
      CU.setText(status, TEXT.loaded(msg.cached));
      root.dataset.cuModel = msg.simd ? "wasm-simd" : "javascript";
      if (pending) {
        worker.postMessage(pending);
        pending = null;
      }
    } else if (msg.type === "error" && msg.id === undefined) {
      CU.setText(status, TEXT.failed(msg.message));
      root.dataset.cuRun = "error";
      worker.terminate();
      worker = null;
      ready = false;
      go.disabled = false;
    } else onMessage(msg);
  }

  function onStartFailed(why) {
    CU.setText(status, TEXT.failed(why));
    root.dataset.cuRun = "error";
    worker = null;
    go.disabled = false;
  }

  function startWorker() {
    if (!worker) {
      worker = CU.modelWorker(model, { bar: progress, status, text: TEXT, onMessage: onModelMessage, onFail: onStartFailed });
    }
    return worker !== null;
  }

  go.addEventListener("click", () => {
    const text = box.value;
    if (!text.trim()) {
      CU.setText(status, TEXT.empty);
      return;
    }
    CU.save(model, { prompt: text });
    asked += 1;
    const n = model.get("new_tokens")[model.get("new_tokens_index")];
    const [temperature, topK, topP] = model.get("decoding_settings")[model.get("decoding_index")];
    const request = { type: "generate", id: asked, prompt: text, nNew: n, temperature, topK, topP,
      seed: model.get("seed"), knockout: knockedList() };
    root.dataset.cuRun = "asked";
    go.disabled = true;
    stopButton.disabled = false;
    if (kernel) {
      model.send(request);
    } else if (startWorker()) {
      if (ready) worker.postMessage(request);
      else pending = request;
    } else go.disabled = false;
  });
  stopButton.addEventListener("click", () => {
    if (!kernel && worker) worker.postMessage({ type: "stop", id: asked });
  });

  showSettings();
  drawOutput();
  drawHead();
  const cleanup = CU.listen(model, [
    ["change:knockout change:new_tokens_index change:decoding_index", drawHead],
    ["change:layer change:head", [() => CU.sync(layer, head), drawHead]],
    ["change:example_index", () => example.sync()],
    // JupyterLab: Python's answers (the worker's messages, sent by SmolLM2Writer.run)
    ...(kernel ? [["msg:custom", onMessage]] : []),
  ]);
  return () => {
    cleanup();
    if (worker) worker.terminate();
  };
}

export default { render };
