// Topic-word focus: one sentence's words shaded by three measures (rows), true topic words underlined,
// and the classifier's topic probabilities before and after removing the top-k words. Python computed
// every value (measures: packed (3, T); removed: uint8 (options, k, T); probs: packed (options, k, C));
// this file only looks them up and draws.
function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-topic-focus");
  const rowsBox = CU.html("div", { class: "cu-tf-rows" }, stage);
  const removedLine = CU.html("p", { class: "cu-tf-removed", "aria-live": "polite" }, stage, "");
  const svg = CU.svg("svg", { role: "img", class: "cu-tf-bars" }, stage);
  const verdict = CU.html("p", { class: "cu-tf-verdict", "aria-live": "polite" }, stage, "");
  let removedBytes = [];

  const sentence = CU.select({
    label: CU.t("Sentence"),
    options: model.get("labels"),
    model,
    trait: "sentence_index",
    onChange: draw,
  });
  const option = CU.select({
    label: CU.t("Remove"),
    options: model.get("option_names"),
    model,
    trait: "option_index",
    onChange: draw,
  });
  const k = CU.slider({
    label: CU.t("k (words removed)"),
    n: model.get("k_max"),
    model,
    trait: "k_index",
    format: (i) => `k = ${i + 1}`,
    onInput: draw,
  });
  controls.append(sentence.root, option.root, k.root);

  function removedMask(s, o, kk) {
    const packed = model.get("removed")[s];
    if (!removedBytes[s]) removedBytes[s] = CU.bytes(packed);
    const [start, n] = CU.offset(packed.shape, o, kk);
    return removedBytes[s].subarray(start, start + n);
  }

  function draw() {
    const s = model.get("sentence_index");
    const o = model.get("option_index");
    const kk = model.get("k_index");
    const tokens = model.get("tokens")[s];
    const topic = model.get("is_topic")[s];
    const measures = model.get("measures")[s];
    const names = model.get("measure_names");
    const gone = removedMask(s, o, kk);
    rowsBox.replaceChildren();
    names.forEach((name, m) => {
      const row = CU.html("div", { class: "cu-tf-row" }, rowsBox);
      CU.html("span", { class: "cu-tf-name" }, row, name);
      const chips = CU.html("span", { class: "cu-tf-chips" }, row);
      const vals = CU.slice(measures, m);
      const top = Math.max(1e-9, ...vals.map((v) => Math.max(0, v)));
      tokens.forEach((tok, t) => {
        const shade = Math.max(0, vals[t]) / top; // positive evidence, scaled to the row's largest
        const cls = ["cu-token", "cu-tf-tok"];
        if (topic[t]) cls.push("cu-tf-topic");
        if (gone[t]) cls.push("cu-tf-gone");
        const chip = CU.token(chips, tok, {
          class: cls.join(" "),
          style: `background:${CU.colour(shade, "cividis")};color:${CU.inkOn(shade, "cividis")}`,
          title: `${name}: ${CU.fmt(vals[t], 3)}${topic[t] ? CU.t(" (topic word)") : ""}${gone[t] ? CU.t(" (removed)") : ""}`,
        });
        chip.setAttribute("aria-label", `${tok}: ${CU.fmt(vals[t], 3)}${topic[t] ? CU.t(", topic word") : ""}`);
      });
    });
    const words = tokens.filter((_, t) => gone[t]);
    const kText = o === 0 ? "" : ` (k = ${kk + 1})`;
    CU.setText(removedLine, CU.t(`Removed: ${model.get("option_names")[o]}${kText}`) +
      (words.length ? ` → ${words.join(", ")}` : ""));
    drawBars(s, o, kk);
  }

  function drawBars(s, o, kk) {
    const topics = model.get("topics");
    const probs = model.get("probs")[s];
    const before = CU.slice(probs, 0, 0);
    const after = CU.slice(probs, o, kk);
    const W = 420, rowH = 22, left = 80, width = 260;
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${W} ${topics.length * rowH + 24}`);
    svg.setAttribute("width", String(W));
    topics.forEach((name, c) => {
      const y = 4 + c * rowH;
      const label = CU.svg("text", { x: left - 6, y: y + 14, "text-anchor": "end", class: "cu-tf-label" }, svg);
      CU.setText(label, name);
      CU.svg("rect", { x: left, y: y + 2, width: width * after[c], height: rowH - 8, class: "cu-tf-after" }, svg);
      CU.svg("rect", { x: left, y: y + 2, width: width * before[c], height: rowH - 8, class: "cu-tf-before" }, svg);
      const num = CU.svg("text", { x: left + width + 6, y: y + 14, class: "cu-tf-label" }, svg);
      CU.setText(num, `${CU.fmt(before[c], 2)} → ${CU.fmt(after[c], 2)}`);
    });
    const legend = CU.svg("text", { x: left, y: topics.length * rowH + 18, class: "cu-tf-label" }, svg);
    CU.setText(legend, CU.t("outline: before removal; filled: after"));
    const argmax = (a) => a.indexOf(Math.max(...a));
    const b = argmax(before), a = argmax(after);
    const truth = model.get("topic")[s];
    svg.setAttribute("aria-label", CU.t("Topic probabilities before and after: ") + `${topics.map((n, c) =>
      CU.t(`${n} ${CU.fmt(before[c], 2)} to ${CU.fmt(after[c], 2)}`)).join("; ")}`);
    CU.setText(verdict, CU.t(`True topic: ${truth}. Prediction: ${topics[b]} (${CU.fmt(before[b], 2)})`) +
      (o === 0 ? "." : ` → ${topics[a]} (${CU.fmt(after[a], 2)})${a !== b ? CU.t(": the prediction changed.") : CU.t(": unchanged.")}`));
  }

  const onData = () => {
    removedBytes = [];
    sentence.setOptions(model.get("labels"), model.get("sentence_index"));
    draw();
  };
  const onState = () => {
    CU.sync(sentence, option, k);
    draw();
  };
  return CU.live(model, [
    ["change:labels change:tokens change:measures change:removed change:probs", onData],
    ["change:sentence_index change:option_index change:k_index", onState],
  ], draw);
}
export default { render };
