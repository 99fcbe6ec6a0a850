// Block tracer: one token's vector through one Transformer block. Python ran every block on every
// token and synced, per (layer, token): the vector at seven steps (vectors: [L, T, S, d], 2 decimals),
// their norms ([L, T, S]) and the token's attention weights on every token, per head (attention:
// uint8 whole percent, [L, T, H, T]). This file only looks the numbers up and draws them.
function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-block-tracer");
  const svg = CU.svg("svg", { role: "img" }, stage);
  const answer = CU.html("p", { class: "cu-bt-answer", "aria-live": "polite" }, stage, "");
  const tokens = model.get("tokens");
  const T = tokens.length;
  const percents = CU.bytes(model.get("attention"));
  const [L, , H] = model.get("attention").shape;

  const tokenSlider = CU.slider({
    label: CU.t("Token"),
    n: T,
    model,
    trait: "token",
    format: (i) => `${i}: ${tokens[i]}`,
    onInput: draw,
  });
  const layerSlider = CU.slider({
    label: CU.t("Layer"),
    n: L,
    model,
    trait: "layer",
    format: (i) => CU.t(`block ${i}`),
    onInput: draw,
  });
  controls.append(tokenSlider.root, layerSlider.root);

  const LABEL_W = 230;
  const BAR_X = LABEL_W;
  const BAR_W = 250;
  const NORM_X = BAR_X + BAR_W + 20;
  const NORM_W = 120;
  const ROW_H = 34;
  const CELL = Math.min(26, Math.floor(BAR_W / T));

  function text(parent, x, y, value, cls, anchor = "start") {
    const t = CU.svg("text", { x, y, class: cls, "text-anchor": anchor }, parent);
    CU.setText(t, value);
    return t;
  }

  /**
   * A row label longer than its column (a translation can be) goes on two lines, split after its
   * colon, instead of running under the bars.
   */
  function fitLabel(t, maxWidth) {
    if (typeof t.getComputedTextLength !== "function" || t.getComputedTextLength() <= maxWidth) return;
    const value = t.textContent;
    const cut = Math.max(value.lastIndexOf("：") + 1, value.lastIndexOf(": ") + 2);
    if (cut <= 1 || cut >= value.length) return;
    const x = t.getAttribute("x");
    t.textContent = "";
    const first = CU.svg("tspan", { x, dy: "-0.55em" }, t);
    CU.setText(first, value.slice(0, cut).trim());
    const second = CU.svg("tspan", { x, dy: "1.15em" }, t);
    CU.setText(second, value.slice(cut).trim());
  }

  /**
   * One vector: a bar per dimension (blue up, orange down), scaled to the row's largest entry so that
   * its direction is visible; then its length (norm, from Python) as a bar on one shared scale.
   */
  function vectorRow(y, label, values, norm, maxNorm) {
    let scale = 0;
    for (const v of values) scale = Math.max(scale, Math.abs(v)); // a drawing scale, not maths
    scale = scale || 1;
    fitLabel(text(svg, 0, y + ROW_H / 2 + 4, label, "cu-bt-label"), LABEL_W - 8);
    const mid = y + ROW_H / 2;
    const half = ROW_H / 2 - 3;
    CU.svg("line", { x1: BAR_X, x2: BAR_X + BAR_W, y1: mid, y2: mid, class: "cu-bt-axis" }, svg);
    const w = BAR_W / values.length;
    values.forEach((v, j) => {
      const h = Math.abs(v) / scale * half;
      CU.svg("rect", {
        x: BAR_X + j * w + 0.5, y: v >= 0 ? mid - h : mid, width: Math.max(1, w - 1), height: h,
        class: v >= 0 ? "cu-bt-pos" : "cu-bt-neg",
      }, svg);
    });
    CU.svg("rect", {
      x: NORM_X, y: mid - 6, width: Math.max(1, norm / maxNorm * NORM_W), height: 12,
      class: "cu-bt-norm",
    }, svg);
    text(svg, NORM_X + NORM_W + 6, mid + 4, `|v| = ${CU.fmt(norm, 2)}`, "cu-bt-num");
  }

  /** The attention mix: one row of cells per head, one column per token, weight in percent. */
  function attentionRows(y, layer, token) {
    text(svg, 0, y + 14, CU.t("attention: drew from"), "cu-bt-label");
    tokens.forEach((tok, j) => {
      const t = text(svg, BAR_X + j * CELL + CELL / 2, y + 14, tok, "cu-bt-tok", "middle");
      if (j === token) t.setAttribute("class", "cu-bt-tok cu-bt-self");
    });
    for (let h = 0; h < H; h++) {
      const [start] = CU.offset([L, T, H, T], layer, token, h);
      const yy = y + 20 + h * 18;
      text(svg, BAR_X - 6, yy + 13, CU.t(`head ${h}`), "cu-bt-small", "end");
      for (let j = 0; j < T; j++) {
        const p = percents[start + j];
        const rect = CU.svg("rect", {
          x: BAR_X + j * CELL, y: yy, width: CELL - 1, height: 17, fill: CU.colour(p / 100),
        }, svg);
        const title = CU.svg("title", {}, rect);
        CU.setText(title, CU.t(`head ${h}: ${tokens[token]} -> ${tokens[j]}: ${p}%`));
        if (CELL >= 22) { // "100" in 12 px needs 21
          const t = text(svg, BAR_X + j * CELL + CELL / 2, yy + 12, String(p), "cu-bt-cell", "middle");
          t.style.fill = CU.inkOn(p / 100); // inline style: beats the theme-aware text fill
        }
      }
    }
    return 20 + H * 18 + 8;
  }

  function draw() {
    const { layer, token, vectors, norms, step_labels: labels } =
      CU.traits(model, "layer", "token", "vectors", "norms", "step_labels");
    const S = labels.length;
    let maxNorm = 0;
    for (const v of norms.data) maxNorm = Math.max(maxNorm, v);
    svg.replaceChildren();
    let y = 4;
    for (let s = 0; s < S; s++) {
      const values = CU.slice(vectors, layer, token, s);
      vectorRow(y, labels[s], values, CU.at(norms, layer, token, s), maxNorm || 1);
      y += ROW_H;
      if (s === 1) y += attentionRows(y, layer, token); // after LayerNorm 1, before the add
    }
    svg.setAttribute("viewBox", `0 0 ${NORM_X + NORM_W + 90} ${y + 4}`);
    svg.setAttribute(
      "aria-label",
      CU.t(`Token ${token} (${tokens[token]}) through block ${layer}: its vector at ${S} steps and its attention weights`),
    );
    const answers = model.get("answers");
    CU.setText(answer, answers.length ? answers[token] : "");
  }

  const syncSliders = () => CU.sync(tokenSlider, layerSlider);
  return CU.live(model, [["change:token change:layer", [syncSliders, draw]], ["change:vectors", draw]], draw);
}
export default { render };
