// SpecSheet: a select picks a model; the card shows its layer strip (one cell per layer, coloured
// and sized by the attention kind, with a text legend), a table of the KV cache per token, the
// cache held and the FLOPs of one decoded token at 1k / 128k / 1M tokens, its parameters and
// sizes, and the source line. Python computed every number (models[i].rows); this file formats
// and draws. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-spec");
  const kindOrder = model.get("kind_order");
  // Okabe-Ito colours (colour-blind safe); the legend names every kind, and a cell's height
  // says whether that kind's cache grows with the context (tall) or is bounded (short).
  const KINDS = {
    full: { colour: "#0072b2", grows: true, label: CU.t("full attention") },
    sliding: { colour: "#e69f00", grows: false, label: CU.t("sliding window") },
    mla: { colour: "#009e73", grows: true, label: CU.t("MLA (latent cache)") },
    dsa: { colour: "#cc79a7", grows: true, label: CU.t("DSA (MLA read through a top-k indexer)") },
    linear: { colour: "#56b4e9", grows: false, label: CU.t("linear attention (fixed state)") },
    deltanet: { colour: "#d55e00", grows: false, label: CU.t("Gated DeltaNet (fixed state)") },
  };
  const W = 630;
  const H = 40;
  const ctxLabel = (T) => (T >= 2 ** 20 ? `${T / 2 ** 20}M` : `${T / 1024}k`);
  const kib = (x) => (x >= 1024 ? `${CU.fmt(x / 1024, 2)} MiB` : `${CU.fmt(x, x >= 100 ? 0 : 1)} KiB`);
  const mib = (x) => (x >= 2 ** 20 ? `${CU.fmt(x / 2 ** 20, 2)} TiB` : x >= 1024 ? `${CU.fmt(x / 1024, x >= 102400 ? 0 : 2)} GiB` : `${CU.fmt(x, x >= 100 ? 0 : 1)} MiB`);
  const gflop = (x) => (x >= 1000 ? `${CU.fmt(x / 1000, 2)} TFLOP` : `${CU.fmt(x, x >= 100 ? 0 : 1)} GFLOP`);

  const models = model.get("models");
  const pick = CU.select({
    label: CU.t("Model"),
    options: models.map((m) => `${m.name} (${m.year})`),
    model,
    trait: "model_index",
    onChange: update,
  });
  controls.appendChild(pick.root);

  // The layer strip: an SVG without text (it scales to any width), its legend in HTML.
  const stripBox = CU.html("div", { class: "cu-spec-strip" }, stage);
  const svg = CU.svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-plot" }, stripBox);
  const svgTitle = CU.svg("title", {}, svg);
  const cells = CU.svg("g", {}, svg);
  const ends = CU.html("p", { class: "cu-spec-ends" }, stripBox);
  const legend = CU.html("ul", { class: "cu-spec-legend" }, stripBox);
  CU.html("p", { class: "cu-spec-small" }, stripBox,
    CU.t("Tall cells: the cache grows with the context. Short cells: bounded by a window or a fixed state."));

  // The table: one row per context length, a dagger beyond the trained context.
  const table = CU.html("table", { class: "cu-table cu-spec-table" }, stage);
  CU.html("caption", {}, table, CU.t("At 2 bytes per cached value (bfloat16)"));
  const head = CU.html("tr", {}, CU.html("thead", {}, table));
  for (const text of [CU.t("context"), CU.t("KV cache per token"), CU.t("cache held"),
    CU.t("FLOPs per decoded token")]) {
    CU.html("th", { scope: "col" }, head, text);
  }
  const tbody = CU.html("tbody", {}, table);
  const rows = model.get("seq_lens").map(() => {
    const tr = CU.html("tr", {}, tbody);
    const th = CU.html("th", { scope: "row" }, tr);
    return [th, ...[0, 1, 2].map(() => CU.html("td", { class: "cu-num" }, tr))];
  });
  const dagger = CU.html("p", { class: "cu-spec-small" }, stage);
  const facts = CU.html("ul", { class: "cu-spec-facts" }, stage);
  const source = CU.html("p", { class: "cu-spec-source" }, stage);
  const guessed = CU.html("p", { class: "cu-spec-guess" }, stage);
  const live = CU.html("p", { class: "cu-sr-only", "aria-live": "polite" }, stage);

  function update() {
    const m = models[model.get("model_index")];
    const n = m.layers.length;
    const w = W / n;
    cells.replaceChildren();
    for (let i = 0; i < n; i++) {
      const kind = KINDS[kindOrder[Number(m.layers[i])]];
      const h = kind.grows ? H - 2 : (H - 2) / 2;
      CU.svg("rect", {
        x: i * w + 0.5, y: H - 1 - h, width: Math.max(w - 1, 0.5), height: h,
        fill: kind.colour, class: "cu-spec-cell",
      }, cells);
    }
    const parts = m.counts.map(([kind, count]) => CU.t(`${KINDS[kind].label}: ${count} layers`));
    svgTitle.textContent = CU.t(`Layers of ${m.name}, first to last: ${parts.join("; ")}`);
    ends.textContent = CU.t(`layer 1 … layer ${n}`);
    legend.replaceChildren();
    for (const [kind, count] of m.counts) {
      const li = CU.html("li", {}, legend);
      CU.html("span", { class: `cu-spec-swatch${KINDS[kind].grows ? "" : " cu-spec-short"}`,
        style: `background: ${KINDS[kind].colour}`, "aria-hidden": "true" }, li);
      CU.html("span", {}, li, CU.t(`${KINDS[kind].label}: ${count} layers`));
    }

    let beyond = false;
    model.get("seq_lens").forEach((T, r) => {
      const [perToken, held, flops, over] = m.rows[r];
      beyond = beyond || over;
      const [th, c1, c2, c3] = rows[r];
      th.textContent = `${ctxLabel(T)}${over ? " †" : ""}`;
      c1.textContent = kib(perToken);
      c2.textContent = mib(held);
      c3.textContent = gflop(flops);
    });
    dagger.textContent = beyond
      ? CU.t(`† Beyond the ${ctxLabel(m.context_length)} tokens it was trained for: what the formulas give, not a claim about the model.`)
      : CU.t(`Trained for ${ctxLabel(m.context_length)} tokens.`);

    facts.replaceChildren();
    const add = (text) => CU.html("li", {}, facts, text);
    const [total, active] = m.params;
    add(m.experts
      ? CU.t(`Parameters: ${total} in all, ${active} per token; ${m.experts[0]} routed experts, ${m.experts[1]} per token, ${m.experts[2]} shared`)
      : CU.t(`Parameters: ${total}, all used by every token (dense)`));
    add(CU.t(`${n} layers, d_model ${m.d_model}; ${m.n_heads} query heads, ${m.n_kv_heads} key/value heads of width ${m.d_head}`));
    if (m.window) add(CU.t(`Sliding window: ${m.window} tokens`));
    if (m.mla) add(CU.t(`MLA: a latent of ${m.mla[0]} and a RoPE key of ${m.mla[1]} cached per token`));
    if (m.indexer) add(CU.t(`Lightning indexer: ${m.indexer[0]} heads of width ${m.indexer[1]}; each query reads its top ${m.indexer[2]} tokens`));
    if (m.linear) add(CU.t(`Linear layers: ${m.linear[0]} heads, a ${m.linear[1]} × ${m.linear[2]} state each`));
    if (m.sinks) add(CU.t("Learned attention sinks: one extra logit per head"));
    if (m.gated) add(CU.t("Gated attention: the output times sigmoid(gate)"));
    source.textContent = CU.t(`Source: ${m.cites.map((c) => `(${c})`).join(", ")}. ${m.source}`);
    guessed.textContent = m.guessed.length
      ? CU.t(`Guessed, no source gave them: ${m.guessed.join(", ")}`)
      : "";
    live.textContent = CU.t(`${m.name}: ${kib(m.rows[1][0])} of cache per token at 128k tokens, ${gflop(m.rows[1][2])} per decoded token.`);
    pick.sync();
  }

  return CU.live(model, [["change:model_index change:models", update]], update);
}

export default { render };
