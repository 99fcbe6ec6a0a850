// LogitLensView: the logit lens of a few prompts. For the last token of the chosen prompt, the line
// chart shows the length of its residual stream after each block (norms[prompt], precomputed in
// Python) and the bars its top next-token guesses if the model read its output after the chosen
// block (tokens[prompt][block], probs[prompt]). This file only looks the numbers up.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-llv");
  const nBlocks = () => model.get("tokens")[0].length - 1;
  const blockText = (b) => (b === 0 ? CU.t("0 (the embedding)") : String(b));
  const choice = CU.select({
    label: CU.t("Prompt"),
    options: model.get("prompts"),
    model,
    trait: "prompt_index",
    onChange: update,
  });
  const slider = CU.slider({
    label: CU.t("After block"),
    n: nBlocks() + 1,
    model,
    trait: "block",
    format: blockText,
    onInput: update,
  });
  controls.append(choice.root, slider.root);
  const layout = CU.html("div", { class: "cu-llv-layout cu-row" }, stage);

  // Left: the stream's length after each block, one line for the chosen prompt.
  const W = 320;
  const H = 210;
  const left = 46;
  const right = 12;
  const top = 14;
  const bottom = 40;
  const { title: chartTitle, g: chartG } = CU.drawing(layout, { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-llv-chart" });

  // Right: the top guesses after the chosen block, as bars.
  const BW = 320;
  const BH = 210;
  const { title: barsTitle, g: barsG } = CU.drawing(layout, { viewBox: `0 0 ${BW} ${BH}`, role: "img", class: "cu-llv-bars" });
  const out = CU.html("p", { class: "cu-llv-out", "aria-live": "polite" }, stage);

  function update() {
    const p = model.get("prompt_index");
    const b = model.get("block");
    const n = nBlocks();
    const norms = CU.slice(model.get("norms")[p]);
    const guesses = model.get("tokens")[p][b];
    const finalTop = model.get("tokens")[p][n][0];
    const probs = CU.slice(model.get("probs")[p], b);

    // The line chart: x = blocks 0..n, y = length from 0 to the largest.
    chartG.replaceChildren();
    const most = Math.max(...norms) || 1;
    const x = (i) => left + (i / n) * (W - left - right);
    const y = (v) => H - bottom - (v / most) * (H - top - bottom);
    CU.svg("line", { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, class: "cu-llv-axis" }, chartG);
    CU.svg("line", { x1: left, y1: top, x2: left, y2: H - bottom, class: "cu-llv-axis" }, chartG);
    [0, Math.round(n / 2), n].forEach((i) => {
      const tick = CU.svg("text", { x: x(i), y: H - bottom + 14, "text-anchor": "middle", class: "cu-label" }, chartG);
      CU.setText(tick, String(i));
    });
    [0, most].forEach((v) => {
      const tick = CU.svg("text", { x: left - 4, y: y(v) + 4, "text-anchor": "end", class: "cu-label" }, chartG);
      CU.setText(tick, CU.fmt(v, 0));
    });
    const xLabel = CU.svg("text", { x: (left + W - right) / 2, y: H - 6, "text-anchor": "middle", class: "cu-label" }, chartG);
    CU.setText(xLabel, CU.t("blocks the stream went through"));
    const yLabel = CU.svg("text", {
      x: 12, y: (top + H - bottom) / 2, "text-anchor": "middle", class: "cu-label",
      transform: `rotate(-90 12 ${(top + H - bottom) / 2})`,
    }, chartG);
    CU.setText(yLabel, CU.t("length |x|"));
    CU.svg("polyline", {
      points: norms.map((v, i) => `${x(i)},${y(v)}`).join(" "), class: "cu-llv-line",
    }, chartG);
    CU.svg("line", { x1: x(b), y1: top, x2: x(b), y2: H - bottom, class: "cu-llv-now" }, chartG);
    CU.svg("circle", { cx: x(b), cy: y(norms[b]), r: 5, class: "cu-llv-dot", "data-norm": norms[b] }, chartG);
    const value = CU.svg("text", {
      x: b > n / 2 ? x(b) - 8 : x(b) + 8, y: Math.max(top + 10, y(norms[b]) - 8),
      "text-anchor": b > n / 2 ? "end" : "start", class: "cu-label",
    }, chartG);
    CU.setText(value, CU.fmt(norms[b], 0));
    chartTitle.textContent = CU.t(`Length of the last token's residual stream after each block; after block ${b}: ${CU.fmt(norms[b], 1)}`);

    // The bars: one row per guess, most likely first; the model's final answer is marked.
    barsG.replaceChildren();
    const row = 36;
    const labelW = 110;
    const barMax = BW - labelW - 56;
    guesses.forEach((tok, j) => {
      const yy = 8 + j * row;
      const isFinal = tok === finalTop;
      const label = CU.svg("text", {
        x: labelW - 8, y: yy + 19, "text-anchor": "end",
        class: isFinal ? "cu-label cu-llv-final" : "cu-label",
      }, barsG);
      CU.setText(label, tok);
      CU.svg("rect", { x: labelW, y: yy + 4, width: barMax, height: 22, class: "cu-llv-well" }, barsG);
      CU.svg("rect", {
        x: labelW, y: yy + 4, width: Math.max(0.5, probs[j] * barMax), height: 22,
        class: isFinal ? "cu-llv-bar cu-llv-bar-final" : "cu-llv-bar", "data-prob": probs[j],
      }, barsG);
      const num = CU.svg("text", { x: labelW + barMax + 6, y: yy + 19, class: "cu-label" }, barsG);
      CU.setText(num, `${CU.fmt(100 * probs[j], 0)}%`);
    });
    const key = CU.svg("text", { x: 8, y: 8 + guesses.length * row + 14, class: "cu-label cu-llv-final" }, barsG);
    CU.setText(key, CU.t(`bold, orange: the model's answer "${finalTop}"`));
    const summary = CU.t(`After block ${blockText(b)} of ${n}, the lens's top guess for the next token is "${guesses[0]}" ` +
      `(${CU.fmt(100 * probs[0], 0)}%); the model's own answer after the last block is "${finalTop}". ` +
      `The stream's length is ${CU.fmt(norms[b], 1)}.`);
    barsTitle.textContent = summary;
    out.textContent = summary;
    CU.sync(choice, slider);
  }

  return CU.live(model, [["change:prompt_index change:block change:tokens change:probs change:norms", update]], update);
}

export default { render };
