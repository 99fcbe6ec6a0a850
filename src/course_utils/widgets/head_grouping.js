// HeadGrouping: query heads (top) joined to the key/value head each reads (bottom). Python
// precomputed kv_of[option][query head] with course_utils.gqa.head_groups, and optionally one
// measured number per option; this file only draws. CU is prepended by Python.

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-groups");
  const n = model.get("n_heads");
  const options = model.get("kv_options");
  const W = 480;
  const H = 150;
  const PAD = 24;
  const step = (W - 2 * PAD) / n;
  const box = Math.min(step - 4, 30);
  const yQ = 22;
  const yK = 100;
  const kindOf = (kv) => (kv === n ? "MHA" : kv === 1 ? "MQA" : "GQA");

  const kvSlider = CU.slider({
    label: CU.t("K/V heads"),
    n: options.length,
    model,
    trait: "kv_index",
    format: (i) => `${options[i]} (${kindOf(options[i])})`,
    onInput: draw,
  });
  const qSlider = CU.slider({
    label: CU.t("Follow query head"),
    n,
    model,
    trait: "query_index",
    format: (i) => String(i),
    onInput: draw,
  });
  controls.appendChild(kvSlider.root);
  controls.appendChild(qSlider.root);

  const { title: svgTitle, g } = CU.drawing(stage, { viewBox: `0 0 ${W} ${H}`, role: "img", class: "cu-plot" });
  const note = CU.html("p", { class: "cu-groups-note", "aria-live": "polite" }, stage);

  function draw() {
    const o = model.get("kv_index");
    const q = model.get("query_index");
    const kv = options[o];
    const kvOf = model.get("kv_of")[o];
    const group = n / kv;
    const kStep = (W - 2 * PAD) / kv;
    const colourOf = (j) => (kv === 1 ? 0.5 : j / (kv - 1));
    const xQ = (i) => PAD + step * i + step / 2;
    const xK = (j) => PAD + kStep * j + kStep / 2;
    g.replaceChildren();
    CU.setText(CU.svg("text", { x: 4, y: yQ - 8, class: "cu-groups-label" }, g), CU.t("query heads"));
    CU.setText(CU.svg("text", { x: 4, y: yK + box + 14, class: "cu-groups-label" }, g), CU.t("key/value heads (cached)"));
    for (let i = 0; i < n; i++) {
      const j = kvOf[i];
      const on = j === kvOf[q];
      CU.svg("line", {
        x1: xQ(i), y1: yQ + box, x2: xK(j), y2: yK,
        class: `cu-groups-link${on ? " cu-groups-on" : ""}${i === q ? " cu-groups-followed" : ""}`,
      }, g);
    }
    for (let i = 0; i < n; i++) {
      const t = colourOf(kvOf[i]);
      CU.svg("rect", { x: xQ(i) - box / 2, y: yQ, width: box, height: box, rx: 3,
        fill: CU.colour(t, "viridis"), class: i === q ? "cu-groups-box cu-groups-followed" : "cu-groups-box" }, g);
      const label = CU.svg("text", { x: xQ(i), y: yQ + box / 2 + 4, "text-anchor": "middle",
        fill: CU.inkOn(t, "viridis"), class: "cu-groups-num" }, g);
      CU.setText(label, `q${i}`);
    }
    const kBox = Math.min(kStep - 6, 44);
    for (let j = 0; j < kv; j++) {
      const t = colourOf(j);
      CU.svg("rect", { x: xK(j) - kBox / 2, y: yK, width: kBox, height: box, rx: 3,
        fill: CU.colour(t, "viridis"), class: j === kvOf[q] ? "cu-groups-box cu-groups-followed" : "cu-groups-box" }, g);
      const label = CU.svg("text", { x: xK(j), y: yK + box / 2 + 4, "text-anchor": "middle",
        fill: CU.inkOn(t, "viridis"), class: "cu-groups-num" }, g);
      CU.setText(label, kv > 16 ? String(j) : `kv${j}`);
    }
    const mates = [];
    for (let i = 0; i < n; i++) if (kvOf[i] === kvOf[q]) mates.push(i);
    let text = CU.t(`${kindOf(kv)} with ${kv} k/v head${kv > 1 ? "s" : ""}: ${group} query head${group > 1 ? "s" : ""} per k/v head; ` +
      `the cache holds ${kv}/${n} of MHA's keys and values. Query head ${q} reads k/v head ${kvOf[q]}, ` +
      `shared with query heads ${mates.join(", ")}.`);
    const measured = model.get("measured");
    if (measured.length === options.length) {
      text += CU.t(` ${model.get("measured_label")}: ${CU.fmt(measured[o], 3)}.`);
    }
    note.textContent = text;
    svgTitle.textContent = text;
    kvSlider.set(o);
    qSlider.set(q);
  }

  return CU.live(model, [["change:kv_index change:query_index change:kv_of change:measured", draw]], draw);
}

export default { render };
