// KVCacheCalculator: a select for a real model (or custom), sliders for layers, query heads, k/v
// heads, head width and context, selects for the number type and the memory. Python precomputed
// frames.per_token (L, K, D, dtype): the cache bytes per token for every combination of the grids
// (kv_cache_bytes). This file looks the bytes per token up; the total is that times the context
// (for a preset, the bytes of one layer times models[m].held_tokens[c], the tokens all its layers
// hold: a sliding layer stops at its window), and the batch that fits is how many such totals fit
// in the memory. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-kvcalc");
  const grids = model.get("grids");
  const models = model.get("models");
  const CUSTOM = models.length;
  const W = 480;
  const H = 176;
  const X0 = 58; // left margin for the axis labels
  const Y0 = 16; // top of the plot
  const PH = 140; // plot height
  const LOG_MIN = 20; // 2^20 bytes = 1 MiB at the bottom
  const LOG_MAX = 43; // 2^43 bytes = 8 TiB at the top
  // The traits of the controls: update() reads them all and redraws when any of them changes.
  const INDICES = ["model_index", "layers_index", "heads_index", "kv_index", "dhead_index", "dtype_index",
    "context_index", "memory_index"];
  const fmtCtx = (t) => `${t / 1024}k`;
  const fmtBytes = (b) => {
    const units = [["TiB", 2 ** 40], ["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
    for (const [u, s] of units) if (b >= s) return `${CU.fmt(b / s, b / s >= 100 ? 0 : 2)} ${u}`;
    return CU.t(`${b} bytes`);
  };
  const knobs = [
    ["layers_index", CU.t("Layers"), (i) => String(grids.layers[i]), grids.layers.length],
    ["heads_index", CU.t("Query heads"), (i) => String(grids.heads[i]), grids.heads.length],
    ["kv_index", CU.t("K/V heads"), (i) => String(grids.kv_heads[i]), grids.kv_heads.length],
    ["dhead_index", CU.t("Head width d_head"), (i) => String(grids.d_heads[i]), grids.d_heads.length],
  ];

  const modelSel = CU.select({
    label: CU.t("Model"),
    options: [...models.map((m) => `${m.name} (${m.kind})`), CU.t("custom")],
    value: model.get("model_index"),
    onChange: (i) => {
      const published = i < CUSTOM ? knobs.map(([key]) => [key, models[i][key]]) : [];
      CU.save(model, { model_index: i, ...Object.fromEntries(published) });
      update();
    },
  });
  controls.appendChild(modelSel.root);
  const sliders = {};
  for (const [key, label, format, n] of knobs) {
    sliders[key] = CU.slider({
      label,
      n,
      value: model.get(key),
      format,
      onInput: (i) => {
        // a moved knob is no longer the published model
        CU.save(model, { [key]: i, model_index: CUSTOM });
        update();
      },
    });
    controls.appendChild(sliders[key].root);
  }
  const dtypeSel = CU.select({
    label: CU.t("Number type"),
    options: model.get("dtype_names").map((n, i) => `${n} (${grids.dtype_bytes[i]} B)`),
    model,
    trait: "dtype_index",
    onChange: update,
  });
  controls.appendChild(dtypeSel.root);
  const ctxSlider = CU.slider({
    label: CU.t("Context length"),
    n: grids.contexts.length,
    model,
    trait: "context_index",
    format: (i) => CU.t(`${fmtCtx(grids.contexts[i])} tokens`),
    onInput: update,
  });
  controls.appendChild(ctxSlider.root);
  const memSel = CU.select({
    label: CU.t("Memory for the cache"),
    options: grids.memories_gib.map((g) => `${g} GiB`),
    model,
    trait: "memory_index",
    onChange: update,
  });
  controls.appendChild(memSel.root);

  const row2 = CU.html("div", { class: "cu-row" }, stage); // drawing and numbers side by side
  const svgBox = CU.html("div", { class: "cu-kvcalc-plot" }, row2);
  const { svg, title: svgTitle, g: plot } = CU.drawing(svgBox, { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-plot" });
  // The caption is HTML under the drawing, so it wraps instead of being cut at the SVG's width.
  CU.html("p", { class: "cu-kvcalc-caption" }, svgBox,
    CU.t("cache of one sequence (log scale) by context; above the dashed line: does not fit"));
  const table = CU.html("table", { class: "cu-table cu-kvcalc-table" }, row2);
  const tbody = CU.html("tbody", {}, table);
  const row = (label) => {
    const tr = CU.html("tr", {}, tbody);
    CU.html("th", { scope: "row" }, tr, label);
    return CU.html("td", { class: "cu-num" }, tr);
  };
  const cPerToken = row(CU.t("bytes per token (all layers)"));
  const cTotal = row(CU.t("cache of one sequence"));
  const cBatch = row(CU.t("sequences that fit"));
  const cGroups = row(CU.t("query heads per k/v head"));
  const cSliding = row(CU.t("sliding-window layers"));
  const note = CU.html("p", { class: "cu-kvcalc-note", "aria-live": "polite" }, stage);

  const y = (bytes) => Y0 + PH * (1 - (Math.log2(Math.max(bytes, 2 ** LOG_MIN)) - LOG_MIN) / (LOG_MAX - LOG_MIN));

  function update() {
    const {
      model_index: m, layers_index: iL, heads_index: iH, kv_index: iK, dhead_index: iD, dtype_index: iT,
      context_index: iC, memory_index: iM,
    } = CU.traits(model, ...INDICES);
    const perToken = CU.at(model.get("frames").per_token, iL, iK, iD, iT);
    const contexts = grids.contexts;
    const memory = grids.memories_gib[iM] * 2 ** 30;
    const held = m < CUSTOM ? models[m].held_tokens : null;
    const nLayers = grids.layers[iL];
    // perToken counts every layer; a preset's layers together hold held[c] tokens, not nLayers * T
    const totals = contexts.map((T, c) => (held ? (perToken / nLayers) * held[c] : perToken * T));
    const total = totals[iC];
    const batch = Math.floor(memory / total);
    const heads = grids.heads[iH];
    const kv = grids.kv_heads[iK];
    const divides = heads % kv === 0;

    plot.replaceChildren();
    for (const [label, p] of [["1 MiB", 20], ["1 GiB", 30], ["1 TiB", 40]]) {
      const yy = y(2 ** p);
      CU.svg("line", { x1: X0, x2: W - 4, y1: yy, y2: yy, class: "cu-kvcalc-grid" }, plot);
      CU.setText(CU.svg("text", { x: X0 - 6, y: yy + 4, class: "cu-kvcalc-axis", "text-anchor": "end" }, plot), label);
    }
    const bw = (W - X0 - 10) / contexts.length;
    contexts.forEach((T, c) => {
      const top = y(totals[c]);
      const over = totals[c] > memory;
      CU.svg("rect", {
        x: X0 + c * bw + 4, y: top, width: bw - 8, height: Math.max(Y0 + PH - top, 1),
        class: `cu-kvcalc-bar${over ? " cu-kvcalc-over" : ""}${c === iC ? " cu-kvcalc-current" : ""}`,
      }, plot);
      const t = CU.svg("text", { x: X0 + c * bw + bw / 2, y: Y0 + PH + 14, class: "cu-kvcalc-axis", "text-anchor": "middle" }, plot);
      CU.setText(t, fmtCtx(T));
    });
    const ym = y(memory);
    CU.svg("line", { x1: X0, x2: W - 4, y1: ym, y2: ym, class: "cu-kvcalc-memory" }, plot);
    CU.setText(CU.svg("text", { x: W - 6, y: ym - 4, class: "cu-kvcalc-axis", "text-anchor": "end" }, plot),
      CU.t(`memory ${grids.memories_gib[iM]} GiB`));

    cPerToken.textContent = `${perToken.toLocaleString("en")} B (${fmtBytes(perToken)})`;
    cTotal.textContent = CU.t(`${fmtBytes(total)} at ${fmtCtx(contexts[iC])} tokens`);
    cBatch.textContent = batch >= 1 ? CU.t(`${batch.toLocaleString("en")} in ${grids.memories_gib[iM]} GiB`) : CU.t("none: one sequence does not fit");
    cGroups.textContent = divides
      ? `${heads / kv} (${kv === heads ? "MHA" : kv === 1 ? "MQA" : "GQA"})`
      : CU.t(`invalid: ${kv} k/v heads do not divide ${heads} query heads`);
    const nSliding = m < CUSTOM ? models[m].n_sliding : 0;
    cSliding.textContent = nSliding > 0
      ? CU.t(`${nSliding} of ${nLayers}, window ${models[m].window.toLocaleString("en")} tokens`)
      : CU.t("none: every layer keeps every token");
    const name = m < CUSTOM ? models[m].name : CU.t("custom");
    let text = m < CUSTOM
      ? CU.t(`${name}: the published configuration (${models[m].citation}), trained for ${fmtCtx(models[m].context_length)} tokens.`)
      : CU.t("Custom configuration.");
    if (m < CUSTOM && models[m].note) text += CU.t(` Note: ${models[m].note}.`);
    if (m < CUSTOM && contexts[iC] > models[m].context_length) {
      text += CU.t(" This context is beyond the trained one: the formula's number, not a claim about the model.");
    }
    note.textContent = text;
    svg.setAttribute("data-total", String(total)); // the exact bytes drawn (tests read them)
    svgTitle.textContent = CU.t(`${name}: ${fmtBytes(perToken)} per token; ${fmtBytes(total)} at ${fmtCtx(contexts[iC])} tokens; ${batch} sequences fit in ${grids.memories_gib[iM]} GiB.`);

    modelSel.set(m);
    for (const [key] of knobs) sliders[key].set(model.get(key));
    dtypeSel.set(iT);
    ctxSlider.set(iC);
    memSel.set(iM);
  }

  const changes = [...INDICES, "frames"].map((name) => `change:${name}`).join(" ");
  return CU.live(model, [[changes, update]], update);
}

export default { render };
