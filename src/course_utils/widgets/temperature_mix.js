// TemperatureMix: a temperature slider over one row of scores. Bars show softmax(s / τ) (precomputed
// in Python, frames.weights (n_T, T_k)); the plane shows the values, their convex hull and the output
// (frames.output (n_T, 2)). This file only looks frames up. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-tmix");
  const slider = CU.slider({
    label: CU.t("Temperature τ"),
    model,
    trait: "t_index",
    grid: "temperatures",
    format: (v) => CU.fmt(v, 2),
    onInput: update,
  });
  controls.appendChild(slider.root);
  const layout = CU.html("div", { class: "cu-tmix-layout cu-row" }, stage);

  // Left: the weights as bars, with the score under each label.
  const BW = 300;
  const BH = 200;
  const barsSvg = CU.svg("svg", { viewBox: `0 0 ${BW} ${BH}`, width: BW, height: BH, role: "img" }, layout);
  const barsTitle = CU.svg("title", {}, barsSvg);
  CU.svg("line", { x1: 10, y1: 150, x2: BW - 10, y2: 150, class: "cu-axis" }, barsSvg);
  const barsG = CU.svg("g", {}, barsSvg);

  // Right: the values in the plane, their hull and the output.
  const PS = 220;
  const PW = PS + 70; // room for labels right of the values
  const planeSvg = CU.svg("svg", { viewBox: `0 0 ${PW} ${PS}`, width: PW, height: PS, role: "img" }, layout);
  const planeTitle = CU.svg("title", {}, planeSvg);
  const out = CU.html("p", { class: "cu-tmix-out", "aria-live": "polite" }, stage);
  let plane = null; // scales and nodes of the plane (buildPlane() makes them)

  function buildPlane() {
    planeSvg.replaceChildren(planeTitle);
    const values = model.get("values");
    const xs = values.map((v) => v[0]);
    const ys = values.map((v) => v[1]);
    const lo = [Math.min(...xs), Math.min(...ys)];
    const span = Math.max(Math.max(...xs) - lo[0], Math.max(...ys) - lo[1]) || 1;
    const px = (x) => 25 + ((x - lo[0]) / span) * (PS - 50);
    const py = (y) => PS - 25 - ((y - lo[1]) / span) * (PS - 50);
    const hull = model.get("hull");
    if (hull.length >= 3) {
      CU.svg("polygon", {
        points: hull.map((p) => `${px(p[0])},${py(p[1])}`).join(" "), class: "cu-tmix-hull",
      }, planeSvg);
    }
    const labels = model.get("labels");
    const dots = values.map((v, j) => {
      const dot = CU.svg("circle", { cx: px(v[0]), cy: py(v[1]), r: 6, class: "cu-tmix-value" }, planeSvg);
      const t = CU.svg("text", { x: px(v[0]) + 8, y: py(v[1]) - 8, class: "cu-tmix-label" }, planeSvg);
      CU.setText(t, labels[j]);
      return dot;
    });
    const outDot = CU.svg("rect", { width: 12, height: 12, class: "cu-tmix-output cu-diamond" }, planeSvg);
    plane = { px, py, dots, outDot };
  }

  function update() {
    const i = model.get("t_index");
    const T = model.get("temperatures")[i];
    const frames = model.get("frames");
    const w = CU.slice(frames.weights, i);
    const o = CU.slice(frames.output, i);
    const labels = model.get("labels");
    const scores = model.get("scores");
    const bw = (BW - 20) / w.length;
    barsG.replaceChildren();
    w.forEach((x, j) => {
      const h = 130 * x;
      CU.svg("rect", {
        x: 10 + j * bw + 3, y: 150 - h, width: bw - 6, height: Math.max(h, 0.5),
        fill: CU.colour(x), "data-weight": x,
      }, barsG);
      const val = CU.svg("text", { x: 10 + (j + 0.5) * bw, y: 144 - h, class: "cu-tmix-num", "text-anchor": "middle" }, barsG);
      CU.setText(val, CU.fmt(x, 2));
      const lab = CU.svg("text", { x: 10 + (j + 0.5) * bw, y: 166, class: "cu-tmix-label", "text-anchor": "middle" }, barsG);
      CU.setText(lab, labels[j]);
      const sc = CU.svg("text", { x: 10 + (j + 0.5) * bw, y: 182, class: "cu-tmix-num", "text-anchor": "middle" }, barsG);
      CU.setText(sc, `s=${CU.fmt(scores[j], 1)}`);
    });
    plane.dots.forEach((dot, j) => dot.setAttribute("fill", CU.colour(w[j])));
    plane.outDot.setAttribute("x", plane.px(o[0]) - 6);
    plane.outDot.setAttribute("y", plane.py(o[1]) - 6);
    const text = CU.t(`τ = ${CU.fmt(T, 2)}: weights ${w.map((x) => CU.fmt(x, 2)).join(", ")}; ` +
      `output = Σ weight × value = (${CU.fmt(o[0], 2)}, ${CU.fmt(o[1], 2)})`);
    out.textContent = text;
    barsTitle.textContent = CU.t(`Softmax weights at temperature ${CU.fmt(T, 2)}: ${w.map((x) => CU.fmt(x, 2)).join(", ")}`);
    planeTitle.textContent = CU.t(`Values and their convex hull; the output (square) is at (${CU.fmt(o[0], 2)}, ${CU.fmt(o[1], 2)})`);
    slider.sync();
  }

  return CU.live(model, [
    ["change:t_index", update],
    ["change:frames", [buildPlane, update]],
  ], [buildPlane, update]);
}

export default { render };
