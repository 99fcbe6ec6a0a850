// SentenceAttention: pick a sentence and a query token; bars show that token's attention weights over
// every token. Python precomputed each sentence's (T, T) weight matrix (frames[s], packed); this file
// only reads row query_index. CU (the shared helpers) is prepended by Python. Tokens are text only.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-sentence-attention");
  const BAR = 90; // px for weight 1

  const picker = CU.sequenceControls({
    model,
    outer: "sentence_index",
    inner: "query_index",
    sequences: "tokens",
    options: model.get("labels"),
    selectLabel: CU.t("Sentence"),
    sliderLabel: CU.t("Query token"),
    format: (i, tokens) => `${i}: ${tokens[i]}`, // positions from 0, as in the Python cells
    onSequence: rebuild,
    onPosition: update,
  });
  const { select: sentenceSelect, slider: querySlider } = picker;
  if (model.get("labels").length > 1) controls.append(sentenceSelect.root);
  controls.append(querySlider.root);

  const row = CU.html("div", { class: "cu-sa-row cu-row", role: "group", "aria-label": CU.t("Tokens and weights") }, stage);
  const summary = CU.html("p", { class: "cu-sa-summary", "aria-live": "polite" }, stage);
  let cols = [];

  function rebuild() {
    const s = model.get("sentence_index");
    const toks = model.get("tokens")[s];
    row.replaceChildren();
    cols = toks.map((tok, j) => {
      const column = CU.weightColumn(row, "cu-sa", BAR);
      const btn = CU.html("button", { type: "button", class: "cu-sa-tok" }, column.col);
      CU.token(btn, tok);
      btn.setAttribute("aria-label", CU.t(`Make "${tok}" the query`));
      btn.addEventListener("click", () => {
        CU.save(model, { query_index: j });
        update();
      });
      CU.suppressShortcuts(btn);
      return { ...column, btn };
    });
    update();
  }

  function update() {
    const s = model.get("sentence_index");
    const qi = picker.position();
    const w = CU.slice(model.get("frames")[s], qi);
    const toks = model.get("tokens")[s];
    let best = 0;
    cols.forEach((c, j) => {
      if (w[j] > w[best]) best = j;
      c.set(w[j]);
      c.bar.setAttribute("data-weight", w[j]);
      c.btn.classList.toggle("cu-sa-query", j === qi);
      c.btn.setAttribute("aria-pressed", j === qi ? "true" : "false");
    });
    picker.sync();
    summary.textContent =
      CU.t(`Query "${toks[qi]}" attends most to "${toks[best]}" (weight ${CU.fmt(w[best], 2)}); `) +
      CU.t("weights: ") + `${toks.map((t, j) => `${t} ${CU.fmt(w[j], 2)}`).join(", ")}.`;
  }

  const onSentence = () => rebuild();
  const onFrames = () => {
    sentenceSelect.setOptions(model.get("labels"), model.get("sentence_index"));
    rebuild();
  };
  return CU.live(model, [
    ["change:sentence_index", onSentence],
    ["change:query_index", update],
    ["change:frames", onFrames],
  ], rebuild);
}

export default { render };
