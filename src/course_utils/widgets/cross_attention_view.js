// CrossAttentionView: pick an example and an output step; bars under the source tokens show that
// step's cross-attention weights. Python precomputed every (T_out, T_src) matrix; this file only
// reads one row. Padding tokens are drawn muted. Tokens are text only (textContent).

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-cross-attention-view");
  const BAR = 80; // px for weight 1

  const picker = CU.sequenceControls({
    model,
    outer: "example_index",
    inner: "step_index",
    sequences: "outputs",
    options: model.get("labels"),
    selectLabel: CU.t("Example"),
    sliderLabel: CU.t("Output step"),
    format: (i, outputs) => `${i}: ${outputs[i]}`, // positions from 0, as in the Python cells
    onSequence: rebuild,
    onPosition: update,
  });
  const { select: exampleSelect, slider: stepSlider } = picker;
  if (model.get("labels").length > 1) controls.append(exampleSelect.root);
  controls.append(stepSlider.root);

  CU.html("p", { class: "cu-cav-label" }, stage, CU.t("Output (queries)"));
  const outRow = CU.html("div", { class: "cu-cav-row", role: "group", "aria-label": CU.t("Output tokens") }, stage);
  CU.html("p", { class: "cu-cav-label" }, stage, CU.t("Source (keys and values) and the chosen step's weights"));
  const srcRow = CU.html("div", { class: "cu-cav-row", role: "group", "aria-label": CU.t("Source tokens and weights") }, stage);
  const summary = CU.html("p", { class: "cu-cav-summary", "aria-live": "polite" }, stage);
  let outs = [];
  let cols = [];

  function rebuild() {
    const e = model.get("example_index");
    outRow.replaceChildren();
    srcRow.replaceChildren();
    outs = model.get("outputs")[e].map((tok, i) => {
      const btn = CU.html("button", { type: "button", class: "cu-cav-tok" }, outRow);
      CU.token(btn, tok);
      btn.setAttribute("aria-label", CU.t(`Show output step ${i + 1}, "${tok}"`));
      btn.addEventListener("click", () => {
        CU.save(model, { step_index: i });
        update();
      });
      CU.suppressShortcuts(btn);
      return btn;
    });
    cols = model.get("sources")[e].map((tok) => {
      const column = CU.weightColumn(srcRow, "cu-cav", BAR);
      CU.token(CU.html("span", { class: "cu-cav-src" }, column.col), tok);
      if (tok === "<pad>") column.col.classList.add("cu-cav-pad");
      return column;
    });
    update();
  }

  function update() {
    const e = model.get("example_index");
    const qi = picker.position();
    const w = CU.slice(model.get("frames")[e], qi);
    const src = model.get("sources")[e];
    let best = 0;
    let pad = 0;
    cols.forEach((c, j) => {
      if (w[j] > w[best]) best = j;
      if (src[j] === "<pad>") pad += w[j];
      c.set(w[j]);
    });
    outs.forEach((b, i) => {
      b.classList.toggle("cu-cav-query", i === qi);
      b.setAttribute("aria-pressed", i === qi ? "true" : "false");
    });
    picker.sync();
    summary.textContent =
      CU.t(`Output step ${qi + 1} ("${model.get("outputs")[e][qi]}") looks most at source position ` +
      `${best + 1} ("${src[best]}", weight ${CU.fmt(w[best], 2)}); weight on padding: ${CU.fmt(pad, 2)}.`);
  }

  return CU.live(model, [
    ["change:example_index change:frames", rebuild],
    ["change:step_index", update],
  ], rebuild);
}

export default { render };
