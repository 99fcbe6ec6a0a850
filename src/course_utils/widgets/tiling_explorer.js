// TilingExplorer: tiled attention one tile at a time. Python ran the tile loop (course_utils.flash)
// and stored, after every tile, the running max m, running sum l, output estimate o / l and its
// distance from the exact output, for every query row, with and without the causal mask; plus the
// memory of naive against tiled attention for a range of T. This file only looks the numbers up.
// CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-tiling");
  const grid = CU.cellGrid({ cell: 33, row: 26, left: 58, top: 34, text: 17 });
  const { cell: CELL, row: ROW, left: LEFT, top: TOP } = grid; // the side panels line up with it
  const OUT_CELL = 22; // the drawing fits a 1280 px desktop's column at text >= 11 px
  const ERR_W = 80; // the error column: its longest text in either language, and a margin

  const maskSelect = CU.select({
    label: CU.t("Mask"),
    options: [CU.t("none (every query sees every key)"), CU.t("causal (query i sees keys j ≤ i)")],
    value: model.get("causal") ? 1 : 0,
    onChange: (i) => {
      model.set("causal", i === 1);
      const n = tiles().length;
      CU.save(model, { step_index: Math.min(model.get("step_index"), n - 1) });
      draw();
    },
  });
  const stepSlider = CU.slider({
    label: CU.t("Tile"),
    n: Math.max(1, tiles().length),
    model,
    trait: "step_index",
    format: (i) => tileText(i),
    onInput: draw,
  });
  const memT = model.get("frames").memory.T;
  const memSlider = CU.slider({
    label: CU.t("Memory view: sequence length T"),
    n: memT.length,
    model,
    trait: "memory_index",
    format: (i) => `T = ${model.get("frames").memory.T[i]}`,
    onInput: drawMemory,
  });
  controls.appendChild(maskSelect.root);
  controls.appendChild(stepSlider.root);

  const explain = CU.html("p", { class: "cu-tiling-explain", "aria-live": "polite" }, stage);
  const svg = CU.svg("svg", { role: "img", class: "cu-tiling-svg" }, stage);
  const svgTitle = CU.svg("title", {}, svg);
  const body = CU.svg("g", {}, svg);
  const memControls = CU.html("div", { class: "cu-controls cu-tiling-memctl" }, stage);
  memControls.appendChild(memSlider.root);
  const memSvg = CU.svg("svg", { role: "img", class: "cu-tiling-mem", viewBox: "0 0 640 120" }, stage);
  const memTitle = CU.svg("title", {}, memSvg);
  const memBody = CU.svg("g", {}, memSvg);

  function mode() {
    return model.get("causal") ? "causal" : "plain";
  }
  function tiles() {
    return model.get("frames")[mode()].tiles;
  }
  function tileText(i) {
    const t = tiles()[i];
    if (!t) return "";
    return CU.t(`${i + 1} of ${tiles().length}: queries ${t[0] + 1}–${t[1]}, keys ${t[2] + 1}–${t[3]}`);
  }

  function draw() {
    const frames = model.get("frames");
    const f = frames[mode()];
    const all = f.tiles;
    const s = Math.min(model.get("step_index"), all.length - 1);
    const [qs, qe, ks, ke] = all[s];
    const tokens = model.get("tokens");
    const T = tokens.length;
    const dv = f.out.shape[2];
    const causal = model.get("causal");
    stepSlider.input.max = String(all.length - 1);
    stepSlider.set(s);
    maskSelect.set(causal ? 1 : 0);

    body.replaceChildren();
    const gridW = T * CELL;
    const panelX = LEFT + gridW + 24;
    const outX = panelX + 120;
    const errX = outX + dv * OUT_CELL + 12;
    const width = errX + ERR_W; // "off by 0.514", "not reached", 与精确值相比: each fits
    const height = TOP + T * ROW + 30;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.style.setProperty("--cu-tiling-ratio", String(width / height)); // CSS scales by it

    // Which score cells have been folded in so far (tiles 0..s).
    const done = new Uint8Array(T * T);
    for (let n = 0; n <= s; n++) {
      const [a, b, c, d] = all[n];
      for (let i = a; i < b; i++) for (let j = c; j < d; j++) done[i * T + j] = 1;
    }
    // Colour scale over the visible scores.
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < T; i++)
      for (let j = 0; j < T; j++) {
        if (causal && j > i) continue;
        const x = CU.at(frames.scores, i, j);
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    const span = hi - lo || 1;

    // Bands behind the labels of the current query block (rows) and key block (columns).
    CU.svg("rect", { x: 2, y: TOP + qs * ROW, width: LEFT - 4, height: (qe - qs) * ROW, class: "cu-tiling-band" }, body);
    CU.svg("rect", { x: LEFT + ks * CELL, y: 4, width: (ke - ks) * CELL, height: TOP - 8, class: "cu-tiling-band" }, body);
    const head = CU.svg("text", { x: LEFT + gridW / 2, y: height - 8, "text-anchor": "middle", class: "cu-label" }, body);
    CU.setText(head, CU.t("scaled scores: rows = queries, columns = keys"));
    for (let j = 0; j < T; j++) grid.colLabel(body, j, tokens[j]);
    const rowsText = [];
    for (let i = 0; i < T; i++) {
      const y = grid.y(i);
      grid.rowLabel(body, i, tokens[i]);
      for (let j = 0; j < T; j++) {
        const masked = causal && j > i;
        const x = CU.at(frames.scores, i, j);
        const tt = (x - lo) / span;
        const seen = done[i * T + j] === 1;
        const rect = grid.rect(body, i, j, {
          fill: masked ? "none" : CU.colour(tt),
          "fill-opacity": masked || seen ? 1 : 0.25,
          "data-state": masked ? "masked" : seen ? "seen" : "unseen",
        });
        rect.setAttribute("class", masked ? "cu-tiling-cell cu-tiling-masked" : "cu-tiling-cell");
        // Masked and not-yet-seen cells take the theme's text colour (CSS); seen cells black or white.
        const numAttrs = { class: "cu-tiling-cellnum" };
        if (masked || !seen) numAttrs.class += " cu-tiling-dim";
        else numAttrs.fill = CU.inkOn(tt);
        const num = grid.num(body, i, j, numAttrs);
        CU.setText(num, masked ? "−∞" : CU.fmt(x, 1));
      }
      // Running statistics and the output estimate of row i.
      const reached = CU.at(f.reached, s, i) === 1;
      const m = CU.at(f.m, s, i);
      const l = CU.at(f.l, s, i);
      const err = CU.at(f.err, s, i);
      const inBlock = i >= qs && i < qe;
      if (inBlock) CU.svg("rect", { x: panelX - 4, y: y + 1, width: errX + ERR_W - 4 - panelX, height: ROW - 2, class: "cu-tiling-band" }, body);
      const mt = CU.svg("text", { x: panelX + 50, y: y + 17, "text-anchor": "end", class: "cu-tiling-num" }, body);
      CU.setText(mt, reached ? CU.fmt(m, 2) : "−∞");
      const lt = CU.svg("text", { x: panelX + 108, y: y + 17, "text-anchor": "end", class: "cu-tiling-num" }, body);
      CU.setText(lt, CU.fmt(l, 3));
      for (let c = 0; c < dv; c++) {
        const val = CU.at(f.out, s, i, c);
        CU.svg("rect", {
          x: outX + c * OUT_CELL + 1, y: y + 3, width: OUT_CELL - 2, height: ROW - 6,
          fill: reached ? CU.colour(Math.max(0, Math.min(1, (val + 1) / 2)), "cividis") : "none",
          class: "cu-tiling-out",
        }, body);
      }
      const et = CU.svg("text", { x: errX, y: y + 17, class: "cu-tiling-num" }, body);
      const errText = !reached ? CU.t("not reached") : err < 0.0005 ? CU.t("exact") : CU.t(`off by ${CU.fmt(err, 3)}`);
      CU.setText(et, errText);
      rowsText.push(`${tokens[i]}: m ${reached ? CU.fmt(m, 2) : CU.t("minus infinity")}, l ${CU.fmt(l, 3)}, ${errText}`);
    }
    for (const [x, text, anchor] of [
      [panelX + 50, CU.t("max m"), "end"],
      [panelX + 108, CU.t("sum l"), "end"],
      [outX, CU.t("output o / l"), "start"],
      [errX, CU.t("vs exact"), "start"],
    ]) {
      const t = CU.svg("text", { x, y: TOP - 10, "text-anchor": anchor, class: "cu-label" }, body);
      CU.setText(t, text);
    }
    // The current tile, outlined last so that it is on top.
    CU.svg("rect", {
      x: LEFT + ks * CELL, y: TOP + qs * ROW, width: (ke - ks) * CELL, height: (qe - qs) * ROW,
      class: "cu-tiling-tile",
    }, body);
    const skipped = causal ? CU.t(` Tiles above the diagonal are skipped: ${all.length} tiles instead of ${frames.plain.tiles.length}.`) : "";
    explain.textContent =
      CU.t(`Tile ${s + 1} of ${all.length}: query rows ${qs + 1}–${qe} (${tokens.slice(qs, qe).join(" ")}) ` +
      `meet key columns ${ks + 1}–${ke} (${tokens.slice(ks, ke).join(" ")}). Each of these rows updates ` +
      `its running max m, rescales its sum l and output by exp(m_old − m_new), and adds the new keys.`) + skipped;
    svgTitle.textContent = CU.t(`Score grid with tile ${s + 1} outlined; per row: ${rowsText.join("; ")}.`);
  }

  function drawMemory() {
    const mem = model.get("frames").memory;
    const i = model.get("memory_index");
    memSlider.set(i);
    memBody.replaceChildren();
    const X0 = 90;
    const W = 520;
    const maxLog = Math.log2(mem.naive_mib[mem.naive_mib.length - 1]);
    const minLog = -1;
    const xOf = (mib) => X0 + (W * (Math.log2(Math.max(mib, 0.5)) - minLog)) / (maxLog - minLog);
    const rows = [
      [CU.t("naive"), mem.naive_mib[i], "cu-tiling-naive"],
      [CU.t("tiled"), mem.tiled_mib[i], "cu-tiling-tiled"],
    ];
    rows.forEach(([name, mib, cls], r) => {
      const y = 14 + r * 34;
      const lab = CU.svg("text", { x: X0 - 8, y: y + 17, "text-anchor": "end", class: "cu-label" }, memBody);
      CU.setText(lab, name);
      CU.svg("rect", { x: X0, y, width: Math.max(1, xOf(mib) - X0), height: 24, class: cls }, memBody);
      const val = CU.svg("text", { x: Math.min(xOf(mib) + 6, X0 + W - 60), y: y + 17, class: "cu-label" }, memBody);
      CU.setText(val, mib >= 1024 ? `${CU.fmt(mib / 1024, 1)} GiB` : `${CU.fmt(mib, 1)} MiB`);
    });
    for (const tick of [1, 32, 1024, 32768]) {
      const x = xOf(tick);
      CU.svg("line", { x1: x, x2: x, y1: 84, y2: 90, class: "cu-tiling-axis" }, memBody);
      const t = CU.svg("text", { x, y: 104, "text-anchor": "middle", class: "cu-label" }, memBody);
      CU.setText(t, tick >= 1024 ? `${tick / 1024} GiB` : `${tick} MiB`);
    }
    const ratio = mem.naive_mib[i] / mem.tiled_mib[i];
    const text = CU.t(`T = ${mem.T[i]}, 8 heads, d = 64, float32: naive attention holds ${CU.fmt(mem.naive_mib[i], 1)} MiB of scores and weights, tiled attention ${CU.fmt(mem.tiled_mib[i], 1)} MiB (${CU.fmt(ratio, 0)} times less). Log scale.`);
    memTitle.textContent = text;
    memSvg.setAttribute("aria-label", text);
  }

  return CU.live(model, [
    ["change:step_index change:causal", draw],
    ["change:memory_index", drawMemory],
    ["change:frames change:tokens", [draw, drawMemory]],
  ], [draw, drawMemory]);
}

export default { render };
