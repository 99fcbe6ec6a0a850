// RopeDial: one dial per RoPE frequency (pair of dimensions) with the rotated pair of q (at p + Δ) and
// of k (at p), and the score q·k/√d against the distance Δ. Python precomputed every frame
// (frames.q_pairs (n_b, n_q, d/2, 2), frames.k_pairs (n_b, n_p, d/2, 2), frames.scores (n_b, n_p, n_d),
// frames.shares (n_b, n_d, d/2), frames.theta (n_b, d/2)); this file only looks them up and draws.
// CU (the shared helpers) is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-rope-dial");
  const DIAL = 140; // px per dial
  const R = 44; // px for the longest pair
  const CW = 300; // chart width
  const CH = 210; // chart height
  const PAD = { l: 38, r: 10, t: 18, b: 34 };

  const baseSelect = CU.select({
    label: CU.t("Base θ"),
    options: model.get("bases").map((b) => b.toLocaleString("en-US")),
    model,
    trait: "base_index",
    onChange: update,
  });
  // The two position sliders: [label, trait holding their count, index trait, symbol shown].
  const [posSlider, distSlider] = [
    [CU.t("Position p of the key"), "n_positions", "position_index", "p"],
    [CU.t("Distance Δ (query at p + Δ)"), "n_distances", "distance_index", "Δ"],
  ].map(([label, count, trait, symbol]) =>
    CU.slider({ label, n: model.get(count), model, trait, format: (i) => `${symbol} = ${i}`, onInput: update }),
  );
  if (model.get("bases").length > 1) controls.append(baseSelect.root);
  controls.append(posSlider.root, distSlider.root);

  const layout = CU.html("div", { class: "cu-rope-layout" }, stage);
  const half = model.get("d") / 2;
  const ROW = DIAL + 36; // a dial and its two lines of text
  // One small drawing per dial in a wrapping grid (CSS: 4 a row on a wide card, 2 on a phone), so
  // the dials keep a readable size on every screen; the grid is one image for screen readers.
  const dialBox = CU.html("div", { class: "cu-rope-dials", role: "img" }, layout);
  dialBox.style.setProperty("--cu-rope-cols", String(Math.min(half, 4)));
  dialBox.style.setProperty("--cu-rope-cols-narrow", String(Math.min(half, 2)));
  const dials = [];
  for (let i = 0; i < half; i++) {
    const cx = DIAL / 2;
    const cy = DIAL / 2 + 4;
    const dialSvg = CU.svg("svg", { viewBox: `0 0 ${DIAL} ${ROW}`, "aria-hidden": "true" }, dialBox);
    const g = CU.svg("g", { class: "cu-rope-one" }, dialSvg);
    CU.svg("circle", { cx, cy, r: R + 4, class: "cu-rope-ring" }, g);
    CU.svg("line", { x1: cx - R - 4, y1: cy, x2: cx + R + 4, y2: cy, class: "cu-rope-axis" }, g);
    CU.svg("line", { x1: cx, y1: cy - R - 4, x2: cx, y2: cy + R + 4, class: "cu-rope-axis" }, g);
    const k = CU.svg("line", { x1: cx, y1: cy, class: "cu-rope-k" }, g);
    const kTip = CU.svg("circle", { r: 3.5, class: "cu-rope-k-tip" }, g);
    const q = CU.svg("line", { x1: cx, y1: cy, class: "cu-rope-q" }, g);
    const qTip = CU.svg("circle", { r: 4, class: "cu-rope-q-tip" }, g);
    const label = CU.svg("text", { x: cx, y: cy + R + 19, class: "cu-rope-label", "text-anchor": "middle" }, g);
    const share = CU.svg("text", { x: cx, y: cy + R + 32, class: "cu-rope-share", "text-anchor": "middle" }, g);
    dials.push({ cx, cy, k, kTip, q, qTip, label, share });
  }

  const chart = CU.svg("svg", { viewBox: `0 0 ${CW} ${CH}`, role: "img", class: "cu-rope-chart" }, layout);
  const chartTitle = CU.svg("title", {}, chart);
  const plotW = CW - PAD.l - PAD.r;
  const plotH = CH - PAD.t - PAD.b;
  CU.svg("line", { x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: PAD.t + plotH, class: "cu-rope-axis" }, chart);
  const zero = CU.svg("line", { x1: PAD.l, x2: PAD.l + plotW, class: "cu-rope-axis cu-rope-zero" }, chart);
  const xLabel = CU.svg("text", { x: PAD.l + plotW / 2, y: CH - 4, class: "cu-rope-label", "text-anchor": "middle" }, chart);
  CU.setText(xLabel, CU.t("distance Δ = query position − key position"));
  const yHi = CU.svg("text", { x: PAD.l - 4, y: PAD.t + 4, class: "cu-rope-tick", "text-anchor": "end" }, chart);
  const yLo = CU.svg("text", { x: PAD.l - 4, y: PAD.t + plotH, class: "cu-rope-tick", "text-anchor": "end" }, chart);
  const xHi = CU.svg("text", { x: PAD.l + plotW, y: PAD.t + plotH + 14, class: "cu-rope-tick", "text-anchor": "end" }, chart);
  const head = CU.svg("text", { x: PAD.l + 4, y: 12, class: "cu-rope-label" }, chart);
  CU.setText(head, CU.t("score q·k/√d"));
  const curve = CU.svg("polyline", { class: "cu-rope-curve", fill: "none" }, chart);
  const dot = CU.svg("circle", { r: 5, class: "cu-rope-dot" }, chart);

  const summary = CU.html("p", { class: "cu-rope-summary", "aria-live": "polite" }, stage);

  function update() {
    const { frames, base_index: b, position_index: p, distance_index: dist, n_distances: nD } =
      CU.traits(model, "frames", "base_index", "position_index", "distance_index", "n_distances");
    const scale = R / (frames.radius || 1);
    const theta = CU.slice(frames.theta, b);
    const shares = CU.slice(frames.shares, b, dist);
    dials.forEach((dl, i) => {
      const [qx, qy] = CU.slice(frames.q_pairs, b, p + dist, i);
      const [kx, ky] = CU.slice(frames.k_pairs, b, p, i);
      const qX = dl.cx + scale * qx;
      const qY = dl.cy - scale * qy; // SVG y points down
      const kX = dl.cx + scale * kx;
      const kY = dl.cy - scale * ky;
      for (const [node, x, y] of [[dl.q, qX, qY], [dl.k, kX, kY]]) {
        node.setAttribute("x2", x.toFixed(2));
        node.setAttribute("y2", y.toFixed(2));
      }
      dl.qTip.setAttribute("cx", qX.toFixed(2));
      dl.qTip.setAttribute("cy", qY.toFixed(2));
      dl.kTip.setAttribute("cx", kX.toFixed(2));
      dl.kTip.setAttribute("cy", kY.toFixed(2));
      const wave = (2 * Math.PI) / theta[i];
      CU.setText(dl.label, CU.t(`pair ${i}: θ = ${theta[i] >= 0.01 ? CU.fmt(theta[i], 3) : theta[i].toExponential(1)}`));
      CU.setText(dl.share, CU.t(`λ = ${wave < 1000 ? CU.fmt(wave, 1) : wave.toExponential(1)}, share ${CU.fmt(shares[i], 2)}`));
    });
    const scores = CU.slice(frames.scores, b, p);
    const [lo, hi] = frames.score_range;
    const span = hi - lo || 1;
    const x = (j) => PAD.l + (plotW * j) / Math.max(1, nD - 1);
    const y = (s) => PAD.t + plotH * (1 - (s - lo) / span);
    curve.setAttribute("points", scores.map((s, j) => `${x(j).toFixed(1)},${y(s).toFixed(1)}`).join(" "));
    dot.setAttribute("cx", x(dist).toFixed(1));
    dot.setAttribute("cy", y(scores[dist]).toFixed(1));
    const zy = Math.min(PAD.t + plotH, Math.max(PAD.t, y(0)));
    zero.setAttribute("y1", zy.toFixed(1));
    zero.setAttribute("y2", zy.toFixed(1));
    CU.setText(yHi, CU.fmt(hi, 1));
    CU.setText(yLo, CU.fmt(lo, 1));
    CU.setText(xHi, String(nD - 1));
    const s = scores[dist];
    dialBox.setAttribute("aria-label",
      CU.t(`${half} dials, one per frequency. Query (vermillion) at position ${p + dist}, key (blue) at ` +
      `position ${p}; in every dial the angle between them is Δ·θ_i with Δ = ${dist}.`));
    chartTitle.textContent =
      CU.t(`Score against distance Δ for the key at p = ${p}: ${scores.map((v) => CU.fmt(v, 2)).join(", ")}.`);
    summary.textContent =
      CU.t(`Key at p = ${p}, query at p + Δ = ${p + dist}, base ${model.get("bases")[b].toLocaleString("en-US")}: ` +
      `score ${CU.fmt(s, 3)}. Move p and both arrows of every dial turn together; the score and the curve ` +
      `stay the same, because only the distance Δ changes the angle between q and k.`);
    CU.sync(posSlider, distSlider, baseSelect);
  }

  return CU.live(model, [
    ["change:base_index change:position_index change:distance_index change:frames", update],
  ], update);
}

export default { render };
