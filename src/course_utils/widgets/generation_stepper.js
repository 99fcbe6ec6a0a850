// GenerationStepper: generation one token at a time. The grid is the causal attention matrix
// (frames[example], (T, T), precomputed in Python): rows up to the current step are drawn, cells
// above the diagonal are masked, row `step` is coloured by its weights. Below, the keys/values:
// blue squares come from the KV cache, the orange one is new. This file only looks values up.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-gstep");
  // One slider for every example (its range is updated when the example changes), so the control
  // keeps its id and focus.
  const picker = CU.sequenceControls({
    model,
    outer: "example_index",
    inner: "step",
    sequences: "tokens",
    options: model.get("names"),
    selectLabel: CU.t("Sequence"),
    sliderLabel: CU.t("Generation step t"),
    format: (i, tokens) => `${i} (${tokens[Math.min(i, tokens.length - 1)]})`,
    onSequence: update,
    onPosition: update,
  });
  const { select: exampleSelect, slider } = picker;
  controls.append(exampleSelect.root, slider.root);
  const layout = CU.html("div", { class: "cu-gstep-layout" }, stage);
  const { svg, title, g } = CU.drawing(layout, { role: "img" });
  // The legend is HTML under the drawing, so it wraps instead of being cut at the SVG's width;
  // the sentence below it says how many keys and values come from the cache.
  const key = CU.html("ul", { class: "cu-gstep-key" }, stage);
  [
    ["cu-gstep-cache", CU.t("k, v read from the cache")],
    ["cu-gstep-newkv", CU.t("k, v of the new token")],
    ["cu-gstep-seen", CU.t("an earlier step")],
    ["cu-gstep-masked", CU.t("masked: weight exactly 0")],
    ["cu-gstep-future", CU.t("not generated yet")],
  ].forEach(([cls, label]) => {
    const item = CU.html("li", {}, key);
    const swatch = CU.svg("svg", { width: 14, height: 14, "aria-hidden": "true" }, item);
    CU.svg("rect", { x: 1, y: 1, width: 12, height: 12, class: cls }, swatch);
    item.append(` ${label}`);
  });
  const out = CU.html("p", { class: "cu-gstep-out", "aria-live": "polite" }, stage);

  function update() {
    const ex = model.get("example_index");
    const tokens = model.get("tokens")[ex];
    const packed = model.get("frames")[ex];
    const T = tokens.length;
    const t = picker.position();
    const C = 34; // cell size
    const L = 60; // room for row labels
    const top = 40; // room for column labels
    const W = L + T * C + 10;
    const H = top + T * C + C + 6;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    g.replaceChildren();
    tokens.forEach((tok, j) => {
      const col = CU.svg("text", { x: L + (j + 0.5) * C, y: top - 8, "text-anchor": "middle", class: "cu-gstep-label" }, g);
      CU.setText(col, tok);
      const row = CU.svg("text", { x: L - 6, y: top + (j + 0.6) * C, "text-anchor": "end", class: "cu-gstep-label" }, g);
      CU.setText(row, tok);
    });
    for (let i = 0; i < T; i += 1) {
      for (let j = 0; j < T; j += 1) {
        const attrs = { x: L + j * C + 1, y: top + i * C + 1, width: C - 2, height: C - 2 };
        if (i > t) {
          attrs.class = "cu-gstep-future"; // not generated yet
        } else if (j > i) {
          attrs.class = "cu-gstep-masked"; // above the diagonal: weight exactly 0
        } else if (i === t) {
          const w = CU.at(packed, i, j);
          attrs.fill = CU.colour(w);
          attrs["data-weight"] = w;
        } else {
          attrs.class = "cu-gstep-seen";
        }
        CU.svg("rect", attrs, g);
        if (i === t && j <= i) {
          const w = CU.at(packed, i, j);
          const num = CU.svg("text", {
            x: L + (j + 0.5) * C, y: top + (i + 0.62) * C, "text-anchor": "middle",
            class: "cu-gstep-num", fill: CU.inkOn(w),
          }, g);
          CU.setText(num, CU.fmt(w, 2));
        }
      }
    }
    CU.svg("rect", { x: L, y: top + t * C, width: (t + 1) * C, height: C, class: "cu-gstep-current" }, g);
    // The keys and values this step reads: cached (blue) and new (orange).
    const ky = top + T * C + 14;
    for (let j = 0; j <= t; j += 1) {
      CU.svg("rect", {
        x: L + j * C + 6, y: ky, width: C - 12, height: C - 12,
        class: j < t ? "cu-gstep-cache" : "cu-gstep-newkv",
      }, g);
    }
    const row = [];
    for (let j = 0; j <= t; j += 1) row.push(`${tokens[j]} ${CU.fmt(CU.at(packed, t, j), 2)}`);
    const text = CU.t(`Step ${t}: the new token "${tokens[t]}" attends to ${t + 1} token(s): ${row.join(", ")}. ` +
      `Keys and values of ${t} earlier token(s) are read from the cache; only "${tokens[t]}"'s q, k, v are computed.`);
    out.textContent = text;
    title.textContent = CU.t(`Causal attention at generation step ${t} of ${T}: `) + text;
    picker.sync();
  }

  return CU.live(model, [["change:step change:example_index change:frames", update]], update);
}

export default { render };
