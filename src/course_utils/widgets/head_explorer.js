// Head explorer: a T x T heatmap of one head of the pretrained model. Python computed every map (whole
// percentages, packed one byte each as base64: maps[s] = {shape: [L, H, T, T], uint8}); this file only
// draws the map chosen by sentence, layer and head.
//
// Speed (goal: key press -> redrawn widget under 16 ms on the chapter page): each sentence's maps are
// decoded once (CU.bytes) and its grid (cells, numbers, token labels) is built once; a layer or head
// change only rewrites the fill and the number of the cells whose value changed.
function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-head-explorer");
  const svg = CU.svg("svg", { role: "img" }, stage);
  const note = CU.html("p", { class: "cu-he-note", "aria-live": "polite" }, stage, "");
  // Colour and text colour of each whole percentage 0..100 (a lookup table, not maths).
  const FILL = Array.from({ length: 101 }, (_, p) => CU.colour(p / 100, "viridis"));
  const INK = Array.from({ length: 101 }, (_, p) => CU.inkOn(p / 100, "viridis"));
  const MARGIN = 80;

  let grids = []; // per sentence: the built grid, or undefined until first shown
  let percents = []; // per sentence: decoded Uint8Array (L*H*T*T), or undefined
  let shown = null; // the grid in the svg now

  const sentence = CU.select({
    label: CU.t("Sentence"),
    options: model.get("labels"),
    value: model.get("sentence_index"),
    onChange: (i) => { model.set("sentence_index", i); model.save_changes(); draw(); },
  });
  const layers = Array.from({ length: model.get("n_layers") }, (_, i) => CU.t(`layer ${i}`));
  const layer = CU.select({
    label: CU.t("Layer"),
    options: layers,
    value: model.get("layer"),
    onChange: (i) => { model.set("layer", i); model.save_changes(); draw(); },
  });
  const head = CU.slider({
    label: CU.t("Head"),
    n: model.get("n_heads"),
    value: model.get("head"),
    format: (i) => CU.t(`head ${i}`),
    onInput: (i) => { model.set("head", i); model.save_changes(); draw(); },
  });
  controls.append(sentence.root, layer.root, head.root);

  /** The grid of sentence s: built once (cells, numbers, token labels), then only updated. */
  function grid(s) {
    if (grids[s]) return grids[s];
    const tokens = model.get("tokens")[s];
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
            x: x + cell / 2, y: y + cell / 2 + 3, "text-anchor": "middle", class: "cu-he-cell-text",
          }, g);
          num = document.createTextNode("");
          txt.appendChild(num);
        }
        cells.push({ rect, weight, txt, num });
      }
      const row = CU.svg("text", {
        x: MARGIN - 4, y: MARGIN + i * cell + cell / 2 + 4, "text-anchor": "end", class: "cu-he-tok",
      }, g);
      CU.setText(row, tokens[i]);
      const col = CU.svg("text", {
        x: 0, y: 0, "text-anchor": "start", class: "cu-he-tok",
        transform: `translate(${MARGIN + i * cell + cell / 2 + 4}, ${MARGIN - 4}) rotate(-60)`,
      }, g);
      CU.setText(col, tokens[i]);
    }
    // last[k]: the percentage cell k shows now (-1: nothing yet), so unchanged cells are not touched.
    grids[s] = { g, size, T, cells, last: new Int16Array(T * T).fill(-1) };
    return grids[s];
  }

  function draw() {
    const s = model.get("sentence_index");
    const l = model.get("layer");
    const h = model.get("head");
    const packed = model.get("maps")[s];
    if (!percents[s]) percents[s] = CU.bytes(packed);
    const G = grid(s);
    if (shown !== G) {
      svg.replaceChildren(G.g);
      svg.setAttribute("viewBox", `0 0 ${G.size} ${G.size}`);
      svg.setAttribute("width", String(G.size));
      shown = G;
    }
    svg.setAttribute("aria-label", CU.t(`Attention map of layer ${l}, head ${h}, for: ${model.get("labels")[s]}`));
    const [start, n] = CU.offset(packed.shape, l, h); // the (T, T) map, row = query
    const map = percents[s].subarray(start, start + n);
    const { cells, last } = G;
    for (let k = 0; k < n; k++) {
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
    const extra = model.get("head_notes")[`${l}-${h}`];
    CU.setText(note, CU.t(`Layer ${l}, head ${h}: rows are queries, columns keys; numbers are weights in %.`) +
      (extra ? CU.t(` Measured: ${extra}`) : ""));
  }

  const onSentences = () => {
    grids = [];
    percents = [];
    shown = null;
    sentence.setOptions(model.get("labels"), model.get("sentence_index"));
    draw();
  };
  const onState = () => {
    sentence.set(model.get("sentence_index"));
    layer.set(model.get("layer"));
    head.set(model.get("head"));
    draw();
  };
  const cleanup = CU.listen(model, [
    ["change:labels change:tokens change:maps", onSentences],
    ["change:sentence_index change:layer change:head", onState],
    ["change:head_notes", draw],
  ]);
  draw();
  return cleanup;
}
export default { render };
