// FourSteps: Score -> Scaled -> Weights -> Output, one step at a time, as a labelled heatmap with the
// numbers in the cells. Python computed every step (frames.scores/scaled/weights (T_q, T_k),
// frames.output (T_q, d_v), frames.mask 0/1); this file only picks the matrix of the selected step.
// CU is prepended by Python.
//
// Speed: the two grids (T_q x T_k for steps 1-3, T_q x d_v for step 4) are built once per input; a step
// change only rewrites the fill, value and number of the cells whose content changed, and shows the
// right grid. The drawing keeps one size for all four steps, so the page around it does not move.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-steps");
  const KEYS = ["scores", "scaled", "weights", "output"];
  const EXPLAIN = [
    CU.t("Step 1 (similarity): each cell is the dot product of a query row with a key row."),
    CU.t("Step 2 (缩放, scaling): every score divided by √d_k = "),
    CU.t("Step 3 (归一化, normalisation): softmax along each row; every row now sums to 1."),
    CU.t("Step 4 (加权求和, weighted sum): each output row is the weights of that row times the values V."),
  ];
  const grid = CU.cellGrid({ cell: 52, row: 30, left: 70, top: 34, text: 19 });
  const slider = CU.slider({
    label: CU.t("Step"),
    n: 4,
    model,
    trait: "step_index",
    format: (i) => `${i + 1}: ${model.get("step_names")[i]}`,
    onInput: update,
  });
  controls.appendChild(slider.root);
  const explain = CU.html("p", { class: "cu-steps-explain", "aria-live": "polite" }, stage);
  const { svg, title: svgTitle, g: body } = CU.drawing(stage, { role: "img", class: "cu-steps-svg" });
  let grids = null; // {keys: grid over (T_q, T_k), values: grid over (T_q, d_v)}
  let shownGrid = null;

  /** A rows x cols grid of cells with row and column labels; cells start empty. */
  function makeGrid(rowLabels, colLabels) {
    const g = CU.svg("g", { display: "none" }, body);
    colLabels.forEach((lab, j) => grid.colLabel(g, j, lab));
    const cells = [];
    rowLabels.forEach((lab, i) => {
      grid.rowLabel(g, i, lab);
      for (let j = 0; j < colLabels.length; j++) {
        const rect = grid.rect(g, i, j);
        const txt = grid.num(g, i, j, { class: "cu-steps-num" });
        const num = document.createTextNode("");
        txt.appendChild(num);
        // What the cell shows now, so that a step change only touches what differs.
        cells.push({ rect, txt, num, fill: null, value: null, label: null, ink: null });
      }
    });
    return { g, cells, rows: rowLabels.length, cols: colLabels.length };
  }

  function build() {
    body.replaceChildren();
    const frames = model.get("frames");
    const rowLabels = model.get("query_tokens");
    grids = {
      keys: makeGrid(rowLabels, model.get("key_tokens")),
      values: makeGrid(rowLabels, model.get("value_labels")),
    };
    shownGrid = null;
    const cols = Math.max(frames.scores.shape[1], frames.output.shape[1]);
    const width = grid.x(cols) + 10;
    const height = grid.y(frames.scores.shape[0]) + 10;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
  }

  function update() {
    const s = model.get("step_index");
    const frames = model.get("frames");
    const packed = frames[KEYS[s]];
    const [rows, cols] = packed.shape;
    const grid = s === 3 ? grids.values : grids.keys;
    if (shownGrid !== grid) {
      if (shownGrid) shownGrid.g.setAttribute("display", "none");
      grid.g.removeAttribute("display");
      shownGrid = grid;
    }
    const rowLabels = model.get("query_tokens");
    const isMasked = (i, j) => s >= 1 && s <= 2 && CU.at(frames.mask, i, j) === 0;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        if (isMasked(i, j)) continue;
        const x = CU.at(packed, i, j);
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    }
    if (s === 2) {
      lo = 0;
      hi = 1;
    }
    const span = hi - lo || 1;
    const cellsText = [];
    for (let i = 0; i < rows; i++) {
      const rowText = [];
      for (let j = 0; j < cols; j++) {
        const masked = isMasked(i, j);
        const x = CU.at(packed, i, j);
        const tt = masked ? 0 : (x - lo) / span;
        const label = s === 1 && masked ? "−∞" : s === 2 && masked ? "0" : CU.fmt(x, s === 2 ? 3 : 2);
        const c = grid.cells[i * cols + j];
        const fill = masked ? "var(--cu-surface)" : CU.colour(tt);
        const value = masked ? "masked" : String(x);
        const ink = masked ? "var(--cu-fg)" : CU.inkOn(tt);
        // style, not the fill attribute: a masked cell takes the theme's colours (var()).
        if (c.fill !== fill) c.rect.style.fill = c.fill = fill;
        if (c.value !== value) c.rect.setAttribute("data-value", (c.value = value));
        if (c.ink !== ink) c.txt.style.fill = c.ink = ink;
        if (c.label !== label) c.num.nodeValue = c.label = label;
        rowText.push(label);
      }
      cellsText.push(`${rowLabels[i]}: ${rowText.join(", ")}`);
    }
    const extra = s === 1 ? `${CU.fmt(frames.sqrt_d_k, 3)} (d_k = ${frames.d_k}).` : "";
    explain.textContent = `${EXPLAIN[s]}${extra}`;
    svgTitle.textContent = CU.t(`${model.get("step_names")[s]}, ${rows} by ${cols}. Rows: ${cellsText.join("; ")}.`);
    slider.sync();
  }

  return CU.live(model, [
    ["change:step_index", update],
    ["change:frames change:query_tokens change:key_tokens change:value_labels", [build, update]],
  ], [build, update]);
}

export default { render };
