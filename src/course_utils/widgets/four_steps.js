// FourSteps: Score -> Scaled -> Weights -> Output, one step at a time, as a labelled heatmap with the
// numbers in the cells. Python computed every step (frames.scores/scaled/weights (T_q, T_k),
// frames.output (T_q, d_v), frames.mask 0/1); this file only picks the matrix of the selected step.
// CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-steps");
  const KEYS = ["scores", "scaled", "weights", "output"];
  const EXPLAIN = [
    "Step 1 (similarity): each cell is the dot product of a query row with a key row.",
    "Step 2 (缩放, scaling): every score divided by √d_k = ",
    "Step 3 (归一化, normalisation): softmax along each row; every row now sums to 1.",
    "Step 4 (加权求和, weighted sum): each output row is the weights of that row times the values V.",
  ];
  const slider = CU.slider({
    label: "Step",
    n: 4,
    value: model.get("step_index"),
    format: (i) => `${i + 1}: ${model.get("step_names")[i]}`,
    onInput: (i) => {
      model.set("step_index", i);
      model.save_changes();
      update();
    },
  });
  controls.appendChild(slider.root);
  const explain = CU.html("p", { class: "cu-steps-explain", "aria-live": "polite" }, stage);
  const svg = CU.svg("svg", { role: "img", class: "cu-steps-svg" }, stage);
  const svgTitle = CU.svg("title", {}, svg);
  const body = CU.svg("g", {}, svg);

  function update() {
    const s = model.get("step_index");
    const frames = model.get("frames");
    const packed = frames[KEYS[s]];
    const [rows, cols] = packed.shape;
    const rowLabels = model.get("query_tokens");
    const colLabels = s === 3 ? model.get("value_labels") : model.get("key_tokens");
    const CELL = 52;
    const LEFT = 70;
    const TOP = 34;
    const width = LEFT + cols * CELL + 10;
    const height = TOP + rows * 30 + 10;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    body.replaceChildren();
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        const masked = s >= 1 && s <= 2 && CU.at(frames.mask, i, j) === 0;
        if (masked) continue;
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
    colLabels.forEach((lab, j) => {
      const t = CU.svg("text", { x: LEFT + (j + 0.5) * CELL, y: TOP - 10, "text-anchor": "middle", class: "cu-steps-label" }, body);
      CU.setText(t, lab);
    });
    const cellsText = [];
    for (let i = 0; i < rows; i++) {
      const t = CU.svg("text", { x: LEFT - 6, y: TOP + i * 30 + 19, "text-anchor": "end", class: "cu-steps-label" }, body);
      CU.setText(t, rowLabels[i]);
      const rowText = [];
      for (let j = 0; j < cols; j++) {
        const masked = s >= 1 && s <= 2 && CU.at(frames.mask, i, j) === 0;
        const x = CU.at(packed, i, j);
        const tt = masked ? 0 : (x - lo) / span;
        CU.svg("rect", {
          x: LEFT + j * CELL + 1, y: TOP + i * 30 + 1, width: CELL - 2, height: 28,
          fill: masked ? "#ddd" : CU.colour(tt), "data-value": masked ? "masked" : x,
        }, body);
        const label = s === 1 && masked ? "−∞" : s === 2 && masked ? "0" : CU.fmt(x, s === 2 ? 3 : 2);
        const txt = CU.svg("text", {
          x: LEFT + (j + 0.5) * CELL, y: TOP + i * 30 + 19, "text-anchor": "middle",
          class: "cu-steps-num", fill: masked ? "#111" : CU.inkOn(tt),
        }, body);
        CU.setText(txt, label);
        rowText.push(label);
      }
      cellsText.push(`${rowLabels[i]}: ${rowText.join(", ")}`);
    }
    const extra = s === 1 ? `${CU.fmt(frames.sqrt_d_k, 3)} (d_k = ${frames.d_k}).` : "";
    explain.textContent = `${EXPLAIN[s]}${extra}`;
    svgTitle.textContent = `${model.get("step_names")[s]}, ${rows} by ${cols}. Rows: ${cellsText.join("; ")}.`;
    slider.set(s);
  }

  model.on("change:step_index", update);
  model.on("change:frames", update);
  update();
  return () => {
    model.off("change:step_index", update);
    model.off("change:frames", update);
  };
}

export default { render };
