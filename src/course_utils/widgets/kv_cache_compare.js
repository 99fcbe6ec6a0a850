// KVCacheCompare: sliders for MLA's latent width d_c, its RoPE width d_h^R and the context; bars
// (log scale) of the cache per token for MHA, GQA, MQA and MLA, a table with the total cache, and
// the papers' quality notes. Python precomputed frames.values (n_lat, n_rope, 4) and frames.gib
// (n_lat, n_rope, n_ctx, 4); this file only looks them up. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-kvcache");
  const KINDS = ["MHA", "GQA", "MQA", "MLA"];
  const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7"]; // Okabe-Ito
  const W = 460;
  const ROW = 34;
  const H = 34 + ROW * KINDS.length;
  const fmtCtx = (t) => (t >= 1024 ? `${t / 1024}k` : String(t));

  // The chapter's symbols as it prints them (d with a subscript c; d with h below and R above),
  // not the caret notation of code.
  const symbolLabel = (words, sub, sup = null) => {
    const span = CU.html("span", {}, null, `${words} `);
    CU.html("i", {}, span, "d");
    CU.html("sub", {}, span, sub);
    if (sup) CU.html("sup", {}, span, sup);
    return span;
  };
  const sliders = [
    [symbolLabel(CU.t("MLA latent width"), "c"), "latent_index", "latents", String],
    [symbolLabel(CU.t("MLA RoPE width"), "h", "R"), "rope_index", "ropes", String],
    [CU.t("Context length"), "context_index", "contexts", fmtCtx],
  ].map(([label, trait, grid, format]) => CU.slider({ label, model, trait, grid, format, onInput: update }));
  controls.append(...sliders.map((s) => s.root));

  // Bars and the table of numbers side by side (they stack on a narrow card); the papers' notes in
  // a second table below, as wide as the card, so the widget fits on a projector and a phone.
  const row = CU.html("div", { class: "cu-row" }, stage);
  const svg = CU.svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-kvcache-bars" }, row);
  const svgTitle = CU.svg("title", {}, svg);
  const axisNote = CU.svg("text", { x: 60, y: 12, class: "cu-label" }, svg);
  CU.setText(axisNote, CU.t("numbers cached per token per layer (log scale)"));
  const bars = CU.svg("g", {}, svg);
  const table = CU.html("table", { class: "cu-table cu-kvcache-table" }, row);
  const head = CU.html("tr", {}, CU.html("thead", {}, table));
  const heads = [CU.t("design"), CU.t("numbers / token / layer"), CU.t("bytes / token (all layers)"),
    CU.t("total cache (GiB)")];
  for (const h of heads) {
    CU.html("th", { scope: "col" }, head, h);
  }
  const body = CU.html("tbody", {}, table);
  const cells = KINDS.map((k) => {
    const tr = CU.html("tr", {}, body);
    CU.html("th", { scope: "row" }, tr, k);
    return [
      CU.html("td", { class: "cu-num" }, tr),
      CU.html("td", { class: "cu-num" }, tr),
      CU.html("td", { class: "cu-num" }, tr),
    ];
  });
  // What each kind gives up: folded, so that the widget fits a projector's screen at 150 %.
  const more = CU.html("details", { class: "cu-kvcache-more" }, stage);
  CU.html("summary", {}, more, CU.t("quality note"));
  const notes = CU.html("table", { class: "cu-table cu-kvcache-table cu-kvcache-notes" }, more);
  CU.html("caption", { class: "cu-sr-only" }, notes, CU.t("quality note"));
  const notesBody = CU.html("tbody", {}, notes);
  KINDS.forEach((k, m) => {
    const tr = CU.html("tr", {}, notesBody);
    CU.html("th", { scope: "row" }, tr, k);
    CU.html("td", { class: "cu-kvcache-note" }, tr, model.get("notes")[m]);
  });
  const note = CU.html("p", { class: "cu-kvcache-caption", "aria-live": "polite" }, stage);

  function update() {
    const { latent_index: i, rope_index: j, context_index: c, frames } =
      CU.traits(model, "latent_index", "rope_index", "context_index", "frames");
    const vals = CU.slice(frames.values, i, j);
    const gib = CU.slice(frames.gib, i, j, c);
    const bytes = CU.slice(frames.bytes, i, j);
    const logMax = Math.log10(Math.max(...vals) * 1.2);
    bars.replaceChildren();
    const x0 = 60;
    KINDS.forEach((k, m) => {
      const y = 22 + m * ROW;
      const w = ((W - x0 - 90) * Math.log10(Math.max(vals[m], 1))) / logMax;
      const label = CU.svg("text", { x: 4, y: y + 16, class: "cu-label" }, bars);
      CU.setText(label, k);
      CU.svg("rect", { x: x0, y, width: Math.max(w, 1), height: ROW - 10, fill: COLOURS[m],
        "data-values": vals[m] }, bars);
      const t = CU.svg("text", { x: x0 + w + 6, y: y + 16, class: "cu-label" }, bars);
      CU.setText(t, vals[m].toLocaleString("en"));
      cells[m][0].textContent = vals[m].toLocaleString("en");
      cells[m][1].textContent = bytes[m].toLocaleString("en");
      cells[m][2].textContent = CU.fmt(gib[m], 3);
    });
    const d_c = model.get("latents")[i];
    const d_r = model.get("ropes")[j];
    const T = model.get("contexts")[c];
    const ratio = vals[0] / vals[3];
    const groups = vals[3] / vals[2];
    svgTitle.textContent =
      CU.t(`Numbers cached per token per layer (log scale): `) +
      KINDS.map((k, m) => `${k} ${vals[m]}`).join(", ") + ".";
    note.textContent =
      CU.t(`MLA with a latent width of ${d_c} and a RoPE width of ${d_r} caches ${vals[3]} numbers per token per layer: ` +
      `${CU.fmt(ratio, 1)}× fewer than MHA, as much as GQA with ${CU.fmt(groups, 2)} groups. ` +
      `At ${fmtCtx(T)} tokens the whole cache is ${CU.fmt(gib[3], 3)} GiB against ` +
      `${CU.fmt(gib[0], 1)} GiB for MHA.`);
    CU.sync(...sliders);
  }

  return CU.live(model, [
    ["change:latent_index change:rope_index change:context_index change:frames", update],
  ], update);
}

export default { render };
