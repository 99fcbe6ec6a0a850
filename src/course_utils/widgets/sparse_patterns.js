// SparsePatterns: a sparse attention mask (left), its cost, and what the last token has heard after
// 1..N layers (right). Python computed every mask and reach of the grid (frames["p-t-a-e"]: bits of
// the mask and of the reach, packed with numpy.packbits, plus the pair count and the layers to reach
// everything); this file only looks a frame up and draws it. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-sparse");
  const SIZE = 272; // both drawings side by side in a 1280 px desktop's column, at text >= 11 px
  const bit = (bytes, k) => (bytes[k >> 3] >> (7 - (k & 7))) & 1; // numpy.packbits order

  const names = model.get("pattern_names");
  const select = CU.select({
    label: CU.t("Pattern"),
    options: names,
    model,
    trait: "pattern_index",
    onChange: () => { refreshLabels(); draw(); },
  });
  // The sliders over the grids of the pattern's sizes; the last two say what they mean for the chosen
  // pattern (the size slider is named after its size; whether it uses extra tokens).
  const pattern = () => model.get("pattern_index");
  const extraText = (v) => (model.get("uses_extra")[pattern()] ? String(v) : CU.t(`${v} (unused here)`));
  const [tSlider, paramSlider, extraSlider] = [
    ["T", "t_index", "t_values", String],
    [model.get("param_labels")[pattern()], "param_index", "param_values", String],
    [CU.t("Global / random tokens"), "extra_index", "extra_values", extraText],
  ].map(([label, trait, grid, format]) => CU.slider({ label, model, trait, grid, format, onInput: draw }));
  [select, tSlider, paramSlider, extraSlider].forEach((c) => controls.appendChild(c.root));

  const stats = CU.html("p", { class: "cu-sparse-stats", "aria-live": "polite" }, stage);
  const row = CU.html("div", { class: "cu-sparse-row" }, stage);
  const maskSvg = CU.svg("svg", { role: "img", viewBox: `0 0 ${SIZE + 40} ${SIZE + 40}`, class: "cu-sparse-mask" }, row);
  const maskTitle = CU.svg("title", {}, maskSvg);
  const maskBody = CU.svg("g", {}, maskSvg);
  const reachSvg = CU.svg("svg", { role: "img", viewBox: `0 0 ${SIZE + 70} ${SIZE + 40}`, class: "cu-sparse-reach" }, row);
  const reachTitle = CU.svg("title", {}, reachSvg);
  const reachBody = CU.svg("g", {}, reachSvg);

  function refreshLabels() {
    // The size slider is named after the chosen pattern's size: window w, stride or block.
    paramSlider.root.querySelector("label").textContent = model.get("param_labels")[pattern()];
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
    maskBody.replaceChildren();
    const axis = CU.svg("text", { x: 30 + SIZE / 2, y: 14, "text-anchor": "middle", class: "cu-sparse-axis" }, maskBody);
    CU.setText(axis, CU.t("keys j →"));
    const axisQ = CU.svg("text", { x: 12, y: 30 + SIZE / 2, "text-anchor": "middle", class: "cu-sparse-axis",
      transform: `rotate(-90 12 ${30 + SIZE / 2})` }, maskBody);
    CU.setText(axisQ, CU.t("queries i →"));
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const on = bit(mask, i * T + j);
        CU.svg("rect", { x: 30 + j * cell, y: 24 + i * cell, width: cell - 0.5, height: cell - 0.5,
          class: on ? "cu-sparse-on" : "cu-sparse-off" }, maskBody);
      }
    }
    const pairs = f.pairs;
    const dense = T * T;
    const pct = (100 * pairs) / dense;
    const name = model.get("pattern_names")[model.get("pattern_index")];
    CU.setText(maskTitle, CU.t(`${name} mask, T = ${T}: ${pairs} of ${dense} query-key pairs allowed`));
    const layerText = f.layers <= L ? CU.t(`after ${f.layers} layer${f.layers === 1 ? "" : "s"}`) : CU.t(`only after ${f.layers} layers`);
    CU.setText(stats,
      CU.t(`Density ${CU.fmt(pct, 1)}%: ${pairs} of T² = ${dense} pairs. FLOPs (4·pairs·d) and score memory ` +
      `(${pairs * 4} B vs ${dense * 4} B in float32 per head) are ${CU.fmt(pct, 1)}% of dense attention. ` +
      `Stacked layers of this pattern stop adding new tokens ${layerText}.`));

    reachBody.replaceChildren();
    const rcell = SIZE / T;
    const rh = Math.min(30, SIZE / L);
    const head = CU.svg("text", { x: 60 + SIZE / 2, y: 14, "text-anchor": "middle", class: "cu-sparse-axis" }, reachBody);
    CU.setText(head, CU.t(`tokens the last token (${T - 1}) has heard from`));
    let count = 0;
    for (let l = 0; l < L; l++) {
      const lab = CU.svg("text", { x: 54, y: 24 + l * rh + rh * 0.65, "text-anchor": "end", class: "cu-sparse-axis" }, reachBody);
      CU.setText(lab, CU.t(`layer ${l + 1}`));
      for (let j = 0; j < T; j++) {
        const now = bit(heard, l * T + j);
        const before = l > 0 ? bit(heard, (l - 1) * T + j) : 0;
        const cls = now ? (before ? "cu-sparse-on" : "cu-sparse-new") : "cu-sparse-off";
        CU.svg("rect", { x: 60 + j * rcell, y: 24 + l * rh, width: rcell - 0.5, height: rh - 1, class: cls }, reachBody);
        if (l === L - 1) count += now;
      }
    }
    CU.setText(reachTitle, CU.t(`Receptive field of the last token: after ${L} layers it has heard ${count} of ${T} tokens; orange cells are new in that layer`));
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
