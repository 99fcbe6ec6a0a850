// Head explorer: a T x T heatmap of one head of the pretrained model. Python computed every map (whole
// percentages, packed one byte each as base64: maps[s] = {shape: [L, H, T, T], uint8}); this file only
// draws the map chosen by sentence, layer and head, or the sentence's attention rollout (chapter 13).
//
// Speed (goal: key press -> redrawn widget under 16 ms on the chapter page): each sentence's maps are
// decoded once (CU.bytes) and its grid (cells, numbers, token labels) is built once; a layer or head
// change only rewrites the fill and the number of the cells whose value changed.
//
// The reader's own sentence (the text box): with a kernel (JupyterLab), the text goes to Python
// (model "sentence"), which sends back "custom" (tokens, maps, rollout). Without a kernel (the static
// site: our widget loader's model says model.kernelless and gives model.static_url), the first edit
// starts a module Web Worker (_static/minilm/worker.mjs, course_utils.pretrained.minilm_web) that downloads the
// float16 weights exported at build time and runs the encoder off the main thread. Its float results are
// kept on the widget's root element as `root.cuHeadExplorer` (tokens, maps, rollout) for the tests.

// Every text the reader sees, in one place (for translators).
const TEXT = {
  sentence: CU.t("Sentence"),
  layer: CU.t("Layer"),
  head: CU.t("Head"),
  show: CU.t("Show"),
  views: [CU.t("one head"), CU.t("attention rollout (all layers)")],
  layerName: (i) => CU.t(`layer ${i}`),
  headName: (i) => CU.t(`head ${i}`),
  yours: (text) => CU.t(`your sentence: ${text.length > 40 ? text.slice(0, 39) + "…" : text}`),
  boxLabel: CU.t("Type your own sentence"),
  boxHint: (n) => CU.t(`At most ${n} tokens (with [CLS] and [SEP]).`),
  button: (mb) => CU.t(`Run the model on it (downloads ${mb} MB once)`),
  buttonKernel: CU.t("Run the model on it (Python)"),
  cjk: CU.t("MiniLM's vocabulary is English: most Chinese characters become [UNK], so its map says little about a Chinese sentence."),
  buttonLoaded: CU.t("Run the model on it"),
  loading: (done, total) => CU.t(`Downloading the model: ${done} of ${total} MB…`),
  progress: CU.t("Model download"),
  computing: CU.t("Computing…"),
  done: (ms, n) => CU.t(`Done: ${n} tokens in ${ms} ms, computed in your browser. Pick a layer and a head.`),
  doneKernel: (n) => CU.t(`Done: ${n} tokens, computed by Python. Pick a layer and a head.`),
  tooLong: (n, cap) => CU.t(`Your sentence has ${n} tokens; at most ${cap} fit (with [CLS] and [SEP]). Please shorten it.`),
  empty: CU.t("Type a sentence first."),
  failed: (msg) => CU.t(`The model could not run here: ${msg}`),
  noWorker: CU.t("This page cannot run the model: open the course website over http (for example `make serve`)."),
  note: (l, h) => CU.t(`Layer ${l}, head ${h}: rows are queries, columns keys; numbers are weights in %.`),
  measured: (extra) => CU.t(` Measured: ${extra}`),
  rolloutNote: CU.t("Attention rollout: every layer's heads averaged, half the weight kept on the token itself (the residual path), multiplied through the 6 layers. Row i: how much token i at the top draws from each input token."),
  mapLabel: (l, h, s) => CU.t(`Attention map of layer ${l}, head ${h}, for: ${s}`),
  rolloutLabel: (s) => CU.t(`Attention rollout over all layers, for: ${s}`),
};

function render({ model, el }) {
  const { root, controls, stage } = CU.frame(el, model, "cu-head-explorer cu-long-menus");
  const svg = CU.svg("svg", { role: "img" }, stage);
  const note = CU.html("p", { class: "cu-he-note", "aria-live": "polite" }, stage, "");
  // Colour and text colour of each whole percentage 0..100 (a lookup table, not maths).
  const FILL = Array.from({ length: 101 }, (_, p) => CU.colour(p / 100, "viridis"));
  const INK = Array.from({ length: 101 }, (_, p) => CU.inkOn(p / 100, "viridis"));
  const MARGIN = 80;
  const kernel = !model.kernelless;
  const cap = model.get("max_tokens");

  let grids = []; // per sentence: the built grid, or undefined until first shown
  let percents = []; // per sentence: decoded Uint8Array (L*H*T*T), or undefined
  let rollPercents = []; // per sentence: decoded Uint8Array (T*T)
  let shown = null; // the grid in the svg now
  let custom = null; // the reader's sentence: {text, tokens, percent, rollPercent, grid}
  let showCustom = false;

  const options = () => [...model.get("labels"), ...(custom ? [TEXT.yours(custom.text)] : [])];
  const sentence = CU.select({
    label: TEXT.sentence,
    options: options(),
    value: model.get("sentence_index"),
    onChange: (i) => {
      showCustom = custom !== null && i === model.get("labels").length;
      if (!showCustom) CU.save(model, { sentence_index: i });
      draw();
    },
  });
  const layers = Array.from({ length: model.get("n_layers") }, (_, i) => TEXT.layerName(i));
  const layer = CU.select({
    label: TEXT.layer,
    options: layers,
    model,
    trait: "layer",
    onChange: draw,
  });
  const head = CU.slider({
    label: TEXT.head,
    n: model.get("n_heads"),
    model,
    trait: "head",
    format: TEXT.headName,
    onInput: draw,
  });
  const shows = CU.select({
    label: TEXT.show,
    options: TEXT.views,
    model,
    trait: "view",
    onChange: draw,
  });
  controls.append(sentence.root, layer.root, head.root, shows.root);

  // The text box, its button, a progress bar and a status line.
  // cu-screen-only: typing a sentence needs a reader at a screen (the PDF's still leaves it out).
  const box = CU.html("div", { class: "cu-he-own cu-screen-only" });
  controls.after(box);
  const boxId = CU.uid("own");
  const hintId = CU.uid("hint");
  CU.html("label", { for: boxId }, box, TEXT.boxLabel);
  const row = CU.html("div", { class: "cu-he-own-row" }, box);
  const input = CU.html("input", {
    id: boxId, type: "text", class: "cu-he-input cu-field", autocomplete: "off", spellcheck: "false",
    "aria-describedby": hintId,
  }, row);
  CU.suppressShortcuts(input);
  const button = CU.html("button", { type: "button", class: "cu-he-run cu-field-button" }, row,
    kernel ? TEXT.buttonKernel : TEXT.button(CU.mb(model.get("download_bytes"))));
  CU.html("p", { id: hintId, class: "cu-he-hint" }, box, TEXT.boxHint(cap));
  const progress = CU.html("progress", { class: "cu-he-progress", max: 1, value: 0, "aria-label": TEXT.progress }, box);
  progress.hidden = true;
  const status = CU.html("p", { class: "cu-he-status", role: "status" }, box, "");
  // A reader of the 中文 edition will type Chinese: say before the run what the model will see.
  const cjkNote = CU.html("p", { class: "cu-he-cjk", "aria-live": "polite" }, box, TEXT.cjk);
  cjkNote.hidden = true;
  input.addEventListener("input", () => {
    cjkNote.hidden = !/[\u3400-\u9fff\uf900-\ufaff]/.test(input.value);
  });

  /** The grid for these tokens: cells, numbers, token labels (built once per sentence). */
  function buildGrid(tokens) {
    const T = tokens.length;
    const cell = Math.max(16, Math.min(30, Math.floor(420 / T)));
    const size = MARGIN + T * cell + 10;
    const g = CU.svg("g", {});
    const cells = [];
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const x = MARGIN + j * cell;
        const y = MARGIN + i * cell;
        const rect = CU.svg("rect", { x, y, width: cell, height: cell }, g);
        // Hover text: query -> key and the weight; the number changes, the tokens do not.
        const title = CU.svg("title", {}, rect);
        const prefix = `${tokens[i]} → ${tokens[j]}: `;
        title.appendChild(document.createTextNode(prefix));
        const weight = document.createTextNode("");
        title.appendChild(weight);
        let num = null;
        let txt = null;
        if (cell >= 22) {
          txt = CU.svg("text", {
            x: x + cell / 2, y: y + cell / 2 + 4, "text-anchor": "middle", class: "cu-he-cell-text",
          }, g);
          num = document.createTextNode("");
          txt.appendChild(num);
        }
        cells.push({ rect, weight, txt, num });
      }
      const rowLabel = CU.svg("text", {
        x: MARGIN - 4, y: MARGIN + i * cell + cell / 2 + 4, "text-anchor": "end", class: "cu-he-tok",
      }, g);
      CU.setText(rowLabel, tokens[i]);
      const col = CU.svg("text", {
        x: 0, y: 0, "text-anchor": "start", class: "cu-he-tok",
        transform: `translate(${MARGIN + i * cell + cell / 2 + 4}, ${MARGIN - 4}) rotate(-60)`,
      }, g);
      CU.setText(col, tokens[i]);
    }
    // last[k]: the percentage cell k shows now (-1: nothing yet), so unchanged cells are not touched.
    return { g, size, T, cells, last: new Int16Array(T * T).fill(-1) };
  }

  /** What is on show: {G, map (Uint8Array T*T of percentages), label}. */
  function current() {
    const view = model.get("view");
    const l = model.get("layer");
    const h = model.get("head");
    if (showCustom && custom) {
      if (!custom.grid) custom.grid = buildGrid(custom.tokens);
      const T = custom.tokens.length;
      const map = view === 1 ? custom.rollPercent : custom.percent.subarray((l * model.get("n_heads") + h) * T * T, (l * model.get("n_heads") + h + 1) * T * T);
      return { G: custom.grid, map, text: custom.text };
    }
    const s = model.get("sentence_index");
    const packed = model.get("maps")[s];
    if (!percents[s]) percents[s] = CU.bytes(packed);
    if (!grids[s]) grids[s] = buildGrid(model.get("tokens")[s]);
    let map;
    if (view === 1) {
      if (!rollPercents[s]) rollPercents[s] = CU.bytes(model.get("rollouts")[s]);
      map = rollPercents[s];
    } else {
      const [start, n] = CU.offset(packed.shape, l, h); // the (T, T) map, row = query
      map = percents[s].subarray(start, start + n);
    }
    return { G: grids[s], map, text: model.get("labels")[s] };
  }

  function draw() {
    const view = model.get("view");
    const l = model.get("layer");
    const h = model.get("head");
    const { G, map, text } = current();
    if (shown !== G) {
      svg.replaceChildren(G.g);
      svg.setAttribute("viewBox", `0 0 ${G.size} ${G.size}`);
      svg.setAttribute("width", String(G.size));
      shown = G;
    }
    svg.setAttribute("aria-label", view === 1 ? TEXT.rolloutLabel(text) : TEXT.mapLabel(l, h, text));
    layer.input.disabled = view === 1;
    head.input.disabled = view === 1;
    const { cells, last } = G;
    for (let k = 0; k < map.length; k++) {
      const p = map[k];
      if (last[k] === p) continue;
      last[k] = p;
      const c = cells[k];
      c.rect.setAttribute("fill", FILL[p]);
      c.weight.nodeValue = CU.fmt(p / 100, 2);
      if (c.num) {
        c.num.nodeValue = String(p);
        c.txt.setAttribute("fill", INK[p]);
      }
    }
    if (view === 1) CU.setText(note, TEXT.rolloutNote);
    else {
      const extra = showCustom ? "" : model.get("head_notes")[`${l}-${h}`];
      CU.setText(note, TEXT.note(l, h) + (extra ? TEXT.measured(extra) : ""));
    }
  }

  /** Show the reader's sentence: percentages for drawing (rounding for display only). */
  function showOwn(text, tokens, percent, rollPercent) {
    custom = { text, tokens, percent, rollPercent, grid: null };
    showCustom = true;
    sentence.setOptions(options(), model.get("labels").length);
    draw();
  }

  const toPercent = (values) => {
    const out = new Uint8Array(values.length);
    for (let i = 0; i < values.length; i++) out[i] = Math.min(100, Math.max(0, Math.round(values[i] * 100)));
    return out;
  };

  // --- the kernel-free path: a Web Worker -----------------------------------------------------
  let worker = null;
  let ready = false;
  let asked = 0; // id of the latest request
  let pending = null; // text to run once the model is loaded

  // the model could not load: say why, and let the next edit try again
  function fail(message) {
    CU.setText(status, TEXT.failed(message));
    root.dataset.cuOwn = "error";
    progress.hidden = true;
    if (worker) worker.terminate();
    worker = null;
    ready = false;
  }

  function onWorkerMessage(msg) {
    if (msg.type === "error" && msg.id === undefined) {
      fail(msg.message);
    } else if (msg.type === "ready") {
      ready = true;
      progress.hidden = true;
      CU.setText(button, TEXT.buttonLoaded);
      if (pending !== null) runInWorker(pending);
    } else if (msg.id !== asked) {
      // an answer to an older request: the reader has typed on since
    } else if (msg.type === "result") {
      root.cuHeadExplorer = { tokens: msg.tokens, maps: msg.maps, rollout: msg.rollout, text: pendingText, ms: msg.ms };
      showOwn(pendingText, msg.tokens, toPercent(msg.maps), toPercent(msg.rollout));
      CU.setText(status, TEXT.done(Math.round(msg.ms), msg.tokens.length));
      root.dataset.cuOwn = "ready";
    } else if (msg.type === "too-long") {
      CU.setText(status, TEXT.tooLong(msg.tokens, msg.maxTokens));
      root.dataset.cuOwn = "too-long";
    } else if (msg.type === "error") {
      CU.setText(status, TEXT.failed(msg.message));
      root.dataset.cuOwn = "error";
    }
  }

  function startWorker() {
    if (!worker) {
      worker = CU.modelWorker(model, { bar: progress, status, text: TEXT, onMessage: onWorkerMessage, onFail: fail });
    }
    return worker !== null;
  }

  let pendingText = "";
  function runInWorker(text) {
    if (!ready) {
      pending = text;
      return;
    }
    pending = null;
    asked += 1;
    pendingText = text;
    root.dataset.cuOwn = "computing";
    CU.setText(status, TEXT.computing);
    worker.postMessage({ type: "run", id: asked, text, maxTokens: cap });
  }

  function submit() {
    const text = input.value;
    if (!text.trim()) {
      CU.setText(status, TEXT.empty);
      return;
    }
    if (kernel) {
      CU.setText(status, TEXT.computing);
      model.set("sentence", text);
      model.save_changes();
    } else if (startWorker()) {
      runInWorker(text);
    }
  }

  let timer = null;
  input.addEventListener("input", () => {
    if (!kernel) startWorker(); // the first edit starts the download, nothing before it
    clearTimeout(timer);
    timer = setTimeout(submit, 400);
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      clearTimeout(timer);
      submit();
    }
  });
  button.addEventListener("click", () => {
    clearTimeout(timer);
    submit();
  });

  // --- the kernel path: Python sends "custom" back --------------------------------------------
  const onCustom = () => {
    const c = model.get("custom");
    const error = model.get("custom_error");
    if (error) {
      CU.setText(status, error);
      root.dataset.cuOwn = "too-long";
      return;
    }
    if (!c || !c.tokens) return;
    showOwn(c.text, c.tokens, CU.bytes(c.maps), CU.bytes(c.rollout));
    CU.setText(status, TEXT.doneKernel(c.tokens.length));
    root.dataset.cuOwn = "ready";
  };

  const onSentences = () => {
    grids = [];
    percents = [];
    rollPercents = [];
    shown = null;
    showCustom = false;
    sentence.setOptions(options(), model.get("sentence_index"));
    draw();
  };
  const onState = () => {
    if (!showCustom) sentence.set(model.get("sentence_index"));
    CU.sync(layer, head, shows);
    draw();
  };
  const cleanup = CU.listen(model, [
    ["change:labels change:tokens change:maps change:rollouts", onSentences],
    ["change:sentence_index change:layer change:head change:view", onState],
    ["change:head_notes", draw],
    ["change:custom change:custom_error", onCustom],
  ]);
  draw();
  return () => {
    cleanup();
    clearTimeout(timer);
    if (worker) worker.terminate();
  };
}
export default { render };
