// SparsePatterns: a sparse attention mask (left), its cost, and what the last token has heard after
// 1..N layers (right). Python computed every mask and reach of the grid (frames["p-t-a-e"]: bits of
// the mask and of the reach, packed with numpy.packbits, plus the pair count and the layers to reach
// everything); this file only looks a frame up and draws it. CU is prepended by Python.
//
// Speed: a key press must paint its frame within 50 ms (benchmarks/widget_latency.py). At T = 32 the
// two grids have 1,280 cells; one <rect> per cell, made anew on every press, cost the browser a
// style, layout and paint of 1,280 new elements (155-290 ms measured on the built site). Each grid
// is instead three <path>s, one per kind of cell (allowed, masked, new), whose `d` lists that kind's
// squares: a press rewrites at most six attributes, the drawing keeps six elements whatever T is,
// and the cells look exactly as the rects did (same squares, same classes, same colours). Text is
// only rewritten when it changes, and a press draws once: the model's change event draws, the
// controls do not draw a second time.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-sparse");
  const SIZE = 272; // both drawings side by side in a 1280 px desktop's column, at text >= 11 px
  const bit = (bytes, k) => (bytes[k >> 3] >> (7 - (k & 7))) & 1; // numpy.packbits order
  const KINDS = ["cu-sparse-off", "cu-sparse-on", "cu-sparse-new"]; // a cell's kind -> its class

  const names = model.get("pattern_names");
  // No onChange/onInput: moving a control saves its trait, whose change event redraws (onIndex).
  const select = CU.select({ label: CU.t("Pattern"), options: names, model, trait: "pattern_index" });
  // The sliders over the grids of the pattern's sizes; the last two say what they mean for the chosen
  // pattern (the size slider is named after its size; whether it uses extra tokens).
  const pattern = () => model.get("pattern_index");
  const extraText = (v) => (model.get("uses_extra")[pattern()] ? String(v) : CU.t(`${v} (unused here)`));
  const [tSlider, paramSlider, extraSlider] = [
    ["T", "t_index", "t_values", String],
    [model.get("param_labels")[pattern()], "param_index", "param_values", String],
    [CU.t("Global / random tokens"), "extra_index", "extra_values", extraText],
  ].map(([label, trait, grid, format]) => CU.slider({ label, model, trait, grid, format }));
  [select, tSlider, paramSlider, extraSlider].forEach((c) => controls.appendChild(c.root));

  const stats = CU.html("p", { class: "cu-sparse-stats", "aria-live": "polite" }, stage);
  const row = CU.html("div", { class: "cu-sparse-row" }, stage);
  const maskSvg = CU.svg("svg", { role: "img", viewBox: `0 0 ${SIZE + 40} ${SIZE + 40}`, class: "cu-sparse-mask" }, row);
  const maskTitle = CU.svg("title", {}, maskSvg);
  const maskBody = CU.svg("g", {}, maskSvg);
  const reachSvg = CU.svg("svg", { role: "img", viewBox: `0 0 ${SIZE + 70} ${SIZE + 40}`, class: "cu-sparse-reach" }, row);
  const reachTitle = CU.svg("title", {}, reachSvg);
  const reachBody = CU.svg("g", {}, reachSvg);
  // What the colours mean, for both drawings: one HTML line under them (it wraps on a phone).
  const legend = CU.html("p", { class: "cu-sparse-legend" }, stage);
  for (const [cls, words] of [
    ["cu-sparse-on", CU.t("allowed · heard earlier")],
    ["cu-sparse-new", CU.t("heard first in this layer")],
    ["cu-sparse-off", CU.t("masked · not heard yet")],
  ]) {
    const item = CU.html("span", { class: "cu-sparse-legend-item" }, legend);
    const key = CU.svg("svg", { class: "cu-sparse-key", viewBox: "0 0 10 10", "aria-hidden": "true" }, item);
    CU.svg("rect", { class: cls, x: 0.5, y: 0.5, width: 9, height: 9 }, key);
    CU.html("span", {}, item, words);
  }

  // What does not depend on the frame is drawn once.
  const axis = CU.svg("text", { x: 30 + SIZE / 2, y: 14, "text-anchor": "middle", class: "cu-sparse-axis" }, maskBody);
  CU.setText(axis, CU.t("keys j →"));
  const axisQ = CU.svg("text", { x: 12, y: 30 + SIZE / 2, "text-anchor": "middle", class: "cu-sparse-axis",
    transform: `rotate(-90 12 ${30 + SIZE / 2})` }, maskBody);
  CU.setText(axisQ, CU.t("queries i →"));
  const maskCells = KINDS.map((cls) => CU.svg("path", { class: cls, d: "" }, maskBody)); // by kind
  const head = CU.svg("text", { x: 60 + SIZE / 2, y: 14, "text-anchor": "middle", class: "cu-sparse-axis" }, reachBody);
  const reachCells = KINDS.map((cls) => CU.svg("path", { class: cls, d: "" }, reachBody));
  const layerLabels = CU.svg("g", {}, reachBody);

  /** Set a node's text or an attribute only when it changes: an unchanged write still costs a restyle. */
  const text = (node, value) => {
    if (node.textContent !== value) CU.setText(node, value);
  };
  const attr = (node, name, value) => {
    if (node.getAttribute(name) !== value) node.setAttribute(name, value);
  };
  const r3 = (x) => Math.round(x * 1000) / 1000; // viewBox units: a thousandth is far below a pixel

  /**
   * Draw a grid of `rows` x `cols` cells `w` x `h` (the gap between cells is left unpainted), cell
   * (i, j) at (x0 + j * dx, y0 + i * dy), of the kind kind(i, j), as the `d` of the three paths.
   */
  function drawCells(paths, rows, cols, { x0, y0, dx, dy, w, h }, kind) {
    const parts = KINDS.map(() => []);
    const [cw, ch] = [r3(w), r3(h)];
    for (let i = 0; i < rows; i++) {
      const y = r3(y0 + i * dy);
      for (let j = 0; j < cols; j++) parts[kind(i, j)].push(`M${r3(x0 + j * dx)} ${y}h${cw}v${ch}h${-cw}z`);
    }
    paths.forEach((path, k) => attr(path, "d", parts[k].join("")));
  }

  let labelledLayers = -1;
  function labelLayers(L, rh) {
    if (labelledLayers === L) return; // the layer count is fixed by Python: labelled once
    labelledLayers = L;
    layerLabels.replaceChildren();
    for (let l = 0; l < L; l++) {
      const lab = CU.svg("text", { x: 54, y: 24 + l * rh + rh * 0.65, "text-anchor": "end", class: "cu-sparse-axis" }, layerLabels);
      CU.setText(lab, CU.t(`layer ${l + 1}`));
    }
  }

  function refreshLabels() {
    // The size slider is named after the chosen pattern's size: window w, stride or block.
    text(paramSlider.root.querySelector("label"), model.get("param_labels")[pattern()]);
    CU.sync(paramSlider, extraSlider);
  }

  function frame() {
    const p = model.get("pattern_index");
    const e = model.get("uses_extra")[p] ? model.get("extra_index") : 0;
    return model.get("frames")[`${p}-${model.get("t_index")}-${model.get("param_index")}-${e}`];
  }

  function draw() {
    const f = frame();
    const T = model.get("t_values")[model.get("t_index")];
    const L = model.get("n_layers");
    const mask = CU.bytes({ uint8: f.m });
    const heard = CU.bytes({ uint8: f.r });
    const cell = SIZE / T;
    // Allowed (1) or masked (0): the mask's kinds are the first two.
    drawCells(maskCells, T, T, { x0: 30, y0: 24, dx: cell, dy: cell, w: cell - 0.5, h: cell - 0.5 },
      (i, j) => bit(mask, i * T + j));
    const pairs = f.pairs;
    const dense = T * T;
    const pct = (100 * pairs) / dense;
    const name = model.get("pattern_names")[model.get("pattern_index")];
    text(maskTitle, CU.t(`${name} mask, T = ${T}: ${pairs} of ${dense} query-key pairs allowed`));
    const layerText = f.layers <= L ? CU.t(`after ${f.layers} layer${f.layers === 1 ? "" : "s"}`) : CU.t(`only after ${f.layers} layers`);
    text(stats,
      CU.t(`Density ${CU.fmt(pct, 1)}%: ${pairs} of T² = ${dense} pairs. FLOPs (4·pairs·d) and score memory ` +
      `(${pairs * 4} B vs ${dense * 4} B in float32 per head) are ${CU.fmt(pct, 1)}% of dense attention. ` +
      `Stacked layers of this pattern stop adding new tokens ${layerText}.`));

    const rh = Math.min(30, SIZE / L);
    text(head, CU.t(`tokens the last token (${T - 1}) has heard from`));
    labelLayers(L, rh);
    // Heard from before this layer: allowed (1); for the first time: new (2); not yet: masked (0).
    drawCells(reachCells, L, T, { x0: 60, y0: 24, dx: cell, dy: rh, w: cell - 0.5, h: rh - 1 }, (l, j) => {
      const now = bit(heard, l * T + j);
      const before = l > 0 ? bit(heard, (l - 1) * T + j) : 0;
      return now ? (before ? 1 : 2) : 0;
    });
    let count = 0;
    for (let j = 0; j < T; j++) count += bit(heard, (L - 1) * T + j);
    text(reachTitle, CU.t(`Receptive field of the last token: after ${L} layers it has heard ${count} of ${T} tokens; orange cells are new in that layer`));
  }

  const onIndex = () => {
    CU.sync(select, tSlider);
    refreshLabels();
    draw();
  };
  return CU.live(model, [
    ["change:pattern_index change:t_index change:param_index change:extra_index", onIndex],
    ["change:frames", draw],
  ], draw);
}
export default { render };
