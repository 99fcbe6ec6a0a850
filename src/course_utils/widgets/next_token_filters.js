// NextTokenFilters: a model's next-token distribution under temperature, top-k and top-p.
// Python precomputed, per prompt and grid position, the probabilities of the tokens drawn before
// any filter (frames.probs), how many tokens of the vocabulary survive the filters (frames.kept)
// and the probability they held (frames.mass). This file only looks them up: a kept token's bar
// is its probability divided by that mass (the renormalisation), a removed token is greyed out.
// CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-ntf");
  const prompt = CU.select({
    label: CU.t("Prompt"),
    options: model.get("prompts"),
    model,
    trait: "prompt_index",
    onChange: update,
  });
  const off = (on, text) => (on ? text : CU.t("off"));
  const temperature = CU.slider({
    label: CU.t("Temperature τ"), model, trait: "t_index", grid: "temperatures",
    format: (v) => CU.fmt(v, 2), onInput: update,
  });
  const topK = CU.slider({
    label: CU.t("top-k"), model, trait: "k_index", grid: "top_ks",
    format: (v) => off(v > 0, String(v)), onInput: update,
  });
  const topP = CU.slider({
    label: CU.t("top-p"), model, trait: "p_index", grid: "top_ps",
    format: (v) => off(v < 1, CU.fmt(v, 2)), onInput: update,
  });
  [prompt, temperature, topK, topP].forEach((c) => controls.appendChild(c.root));

  const W = 660;
  const H = 200;
  const LEFT = 46; // room for the scale's "100.0%" at 12 px
  const BASE = 120; // the bars' baseline
  const TALL = 96; // the tallest bar
  const { svg: drawing, title: heading, g: bars } = CU.drawing(stage, { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-ntf-bars" });
  // the settings in words, in the drawing's card: every move of a control shows here too (a top-k
  // above what top-p keeps, say, changes no bar)
  const settings = CU.html("p", { class: "cu-ntf-settings" }, stage);
  const summary = CU.html("p", { class: "cu-ntf-summary", "aria-live": "polite" }, stage);
  const legend = CU.html("p", { class: "cu-ntf-legend" }, stage);
  CU.html("span", { class: "cu-ntf-key cu-ntf-key-kept" }, legend);
  CU.html("span", {}, legend, CU.t("kept, renormalised"));
  CU.html("span", { class: "cu-ntf-key cu-ntf-key-before" }, legend);
  CU.html("span", {}, legend, CU.t("before the filters"));
  CU.html("span", { class: "cu-ntf-key cu-ntf-key-gone" }, legend);
  CU.html("span", {}, legend, CU.t("removed"));

  const pct = (x) => `${CU.fmt(100 * x, 1)}%`;

  function update() {
    const { prompt_index: i, t_index: t, k_index: k, p_index: p } = CU.traits(
      model, "prompt_index", "t_index", "k_index", "p_index");
    const frames = model.get("frames");
    const before = CU.slice(frames.probs, i, t); // the drawn tokens' probabilities at τ
    const kept = CU.at(frames.kept, i, t, k, p); // survivors, whole vocabulary
    const mass = CU.at(frames.mass, i, t, k, p); // their probability before the filters
    const after = before.map((x, j) => (j < kept ? x / mass : 0)); // renormalised
    const labels = model.get("labels")[i];
    const top = Math.max(after[0], before[0]);
    const step = (W - LEFT - 4) / before.length;
    bars.replaceChildren();
    const axis = CU.svg("line", { x1: LEFT - 2, y1: BASE, x2: W - 2, y2: BASE, class: "cu-axis" }, bars);
    axis.setAttribute("aria-hidden", "true");
    const scale = CU.svg("text", { x: LEFT - 4, y: BASE - TALL + 4, class: "cu-label", "text-anchor": "end" }, bars);
    CU.setText(scale, pct(top));
    const zero = CU.svg("text", { x: LEFT - 4, y: BASE + 4, class: "cu-label", "text-anchor": "end" }, bars);
    CU.setText(zero, "0");
    before.forEach((x, j) => {
      const x0 = LEFT + j * step;
      const alive = j < kept;
      const hBefore = (TALL * x) / top;
      const hAfter = (TALL * after[j]) / top;
      if (alive) {
        CU.svg("rect", {
          x: x0 + 2, y: BASE - hAfter, width: step - 4, height: Math.max(hAfter, 0.5), class: "cu-ntf-kept",
          "data-p": after[j], // the renormalised probability, for the tests
        }, bars);
      }
      CU.svg("rect", {
        x: x0 + 2, y: BASE - hBefore, width: step - 4, height: Math.max(hBefore, 0.5),
        class: alive ? "cu-ntf-before" : "cu-ntf-gone",
      }, bars);
      const label = CU.svg("text", {
        x: 0, y: 0, class: alive ? "cu-label" : "cu-label cu-ntf-label-gone",
        transform: `translate(${x0 + step / 2 + 4},${BASE + 6}) rotate(-60)`, "text-anchor": "end",
      }, bars);
      CU.setText(label, labels[j]);
    });
    drawing.setAttribute("data-kept", String(kept));
    const outside = 1 - before.reduce((a, b) => a + b, 0);
    const best = after.slice(0, Math.min(kept, 3)).map((x, j) => `${labels[j]} ${pct(x)}`).join(", ");
    const text = CU.t(`${kept} of ${model.get("vocab_size")} tokens kept, holding ${pct(mass)} ` +
      `of the probability before renormalising; most probable after: ${best}. ` +
      `The ${before.length} tokens drawn hold ${pct(1 - outside)} at this temperature.`);
    const kValue = model.get("top_ks")[k];
    const pValue = model.get("top_ps")[p];
    const tText = CU.fmt(model.get("temperatures")[t], 2);
    const kText = off(kValue > 0, String(kValue));
    const pText = off(pValue < 1, CU.fmt(pValue, 2));
    settings.textContent = CU.t(`Filters: τ = ${tText}, top-k ${kText}, top-p ${pText}.`);
    summary.textContent = text;
    heading.textContent = text;
    CU.sync(prompt, temperature, topK, topP);
  }

  return CU.live(model, [
    ["change:prompt_index change:t_index change:k_index change:p_index change:frames", update],
  ], update);
}

export default { render };
