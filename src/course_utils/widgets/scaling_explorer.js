// ScalingExplorer: a d_k slider; score histograms, one example softmax row and saturation measures,
// without scaling (left) and with 1/sqrt(d_k) (right). Python precomputed every frame
// (frames.hist (n_d, 2, n_bins), frames.example (n_d, 2, t_k), frames.stats (n_d, 2, 3)); this file
// only looks them up and draws. CU (the shared helpers) is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-scaling");
  const W = 300;
  const H = 262;
  const BARS_Y = 252; // baseline of the example row's bars (60 px for weight 1)
  const MODES = [
    { key: "unscaled", title: CU.t("Without scaling: q·k") },
    { key: "scaled", title: CU.t("With scaling: q·k / √d_k") },
  ];
  const STATS = [CU.t("largest weight"), CU.t("entropy (nats)"), CU.t("gradient norm ‖J‖")];

  const slider = CU.slider({ label: CU.t("Dimension d_k"), model, trait: "d_k_index", grid: "d_ks", onInput: update });
  controls.appendChild(slider.root);

  const layout = CU.html("div", { class: "cu-scaling-layout cu-row" }, stage);
  const panels = MODES.map((mode) => {
    const svg = CU.svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" }, layout);
    const title = CU.svg("title", {}, svg);
    const head = CU.svg("text", { x: W / 2, y: 16, class: "cu-scaling-head", "text-anchor": "middle" }, svg);
    CU.setText(head, mode.title);
    const hist = CU.svg("g", { class: "cu-scaling-hist" }, svg);
    CU.svg("line", { x1: 20, y1: 122, x2: W - 20, y2: 122, class: "cu-axis" }, svg);
    const ticks = [20, W / 2, W - 20].map((x) =>
      CU.svg("text", { x, y: 137, class: "cu-scaling-tick", "text-anchor": "middle" }, svg));
    // The histogram's axis title, then (well below it) the heading of the example row's bars.
    CU.setText(CU.svg("text", { x: W / 2, y: 152, class: "cu-scaling-tick", "text-anchor": "middle" }, svg), CU.t("score"));
    const sub = CU.svg("text", { x: W / 2, y: 180, class: "cu-scaling-sub", "text-anchor": "middle" }, svg);
    CU.setText(sub, CU.t("weights of one example row"));
    const bars = CU.svg("g", { class: "cu-scaling-bars" }, svg);
    CU.svg("line", { x1: 20, y1: BARS_Y, x2: W - 20, y2: BARS_Y, class: "cu-axis" }, svg);
    return { svg, title, hist, ticks, bars };
  });

  const table = CU.html("table", { class: "cu-table cu-scaling-table" }, stage);
  const headRow = CU.html("tr", {}, CU.html("thead", {}, table));
  for (const h of [CU.t("mean over rows"), CU.t("without scaling"), CU.t("with scaling")]) {
    CU.html("th", { scope: "col" }, headRow, h);
  }
  const body = CU.html("tbody", {}, table);
  const cells = STATS.map((name) => {
    const tr = CU.html("tr", {}, body);
    CU.html("th", { scope: "row" }, tr, name);
    return [CU.html("td", { class: "cu-num" }, tr), CU.html("td", { class: "cu-num" }, tr)];
  });
  const note = CU.html("p", { class: "cu-scaling-note", "aria-live": "polite" }, stage);

  function update() {
    const i = model.get("d_k_index");
    const d_k = model.get("d_ks")[i];
    const frames = model.get("frames");
    const ranges = model.get("ranges");
    MODES.forEach((mode, m) => {
      const p = panels[m];
      const hist = CU.slice(frames.hist, i, m);
      const top = Math.max(...hist) || 1;
      const bw = (W - 40) / hist.length;
      p.hist.replaceChildren();
      hist.forEach((f, b) => {
        const h = (100 * f) / top;
        CU.svg("rect", {
          x: 20 + b * bw + 0.5, y: 122 - h, width: Math.max(0.5, bw - 1), height: h,
          fill: CU.colour(0.35), "data-fraction": f,
        }, p.hist);
      });
      const [lo, hi] = ranges[mode.key];
      CU.setText(p.ticks[0], CU.fmt(lo, 0));
      CU.setText(p.ticks[1], "0");
      CU.setText(p.ticks[2], CU.fmt(hi, 0));
      const w = CU.slice(frames.example, i, m);
      const ew = (W - 40) / w.length;
      p.bars.replaceChildren();
      w.forEach((x, j) => {
        const h = 60 * x;
        CU.svg("rect", {
          x: 20 + j * ew + 2, y: BARS_Y - h, width: ew - 4, height: Math.max(h, 0.5),
          fill: CU.colour(x), "data-weight": x,
        }, p.bars);
      });
      const st = CU.slice(frames.stats, i, m);
      st.forEach((x, s) => {
        cells[s][m].textContent = CU.fmt(x, 3);
      });
      p.title.textContent =
        CU.t(`${mode.title}, d_k = ${d_k}: histogram of the scores between ${CU.fmt(lo, 0)} and ` +
        `${CU.fmt(hi, 0)}; example weights ${w.map((x) => CU.fmt(x, 2)).join(", ")}.`);
    });
    const un = CU.slice(frames.stats, i, 0);
    const sc = CU.slice(frames.stats, i, 1);
    note.textContent =
      CU.t(`d_k = ${d_k}: without scaling the largest weight averages ${CU.fmt(un[0], 2)}, ` +
      `with scaling ${CU.fmt(sc[0], 2)} (uniform would be ${CU.fmt(1 / model.get("t_k"), 3)}; ` +
      `maximum entropy log T_k = ${CU.fmt(frames.log_t_k, 3)}).`);
    slider.set(i);
  }

  return CU.live(model, [["change:d_k_index change:frames", update]], update);
}

export default { render };
