// Head explorer: a T x T heatmap of one head of the pretrained model. Python computed every map (as
// whole percentages); this file only draws the map chosen by sentence, layer and head.
function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-head-explorer");
  const svg = CU.svg("svg", { role: "img" }, stage);
  const note = CU.html("p", { class: "cu-he-note", "aria-live": "polite" }, stage, "");

  const sentence = CU.select({
    label: "Sentence",
    options: model.get("labels"),
    value: model.get("sentence_index"),
    onChange: (i) => { model.set("sentence_index", i); model.save_changes(); draw(); },
  });
  const layers = Array.from({ length: model.get("n_layers") }, (_, i) => `layer ${i}`);
  const layer = CU.select({
    label: "Layer",
    options: layers,
    value: model.get("layer"),
    onChange: (i) => { model.set("layer", i); model.save_changes(); draw(); },
  });
  const head = CU.slider({
    label: "Head",
    n: model.get("n_heads"),
    value: model.get("head"),
    format: (i) => `head ${i}`,
    onInput: (i) => { model.set("head", i); model.save_changes(); draw(); },
  });
  controls.append(sentence.root, layer.root, head.root);

  function draw() {
    svg.replaceChildren();
    const s = model.get("sentence_index");
    const l = model.get("layer");
    const h = model.get("head");
    const tokens = model.get("tokens")[s];
    const packed = model.get("maps")[s];
    const T = tokens.length;
    const cell = Math.max(16, Math.min(30, Math.floor(420 / T)));
    const margin = 80;
    const size = margin + T * cell + 10;
    svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
    svg.setAttribute("width", String(size));
    svg.setAttribute("aria-label", `Attention map of layer ${l}, head ${h}, for: ${model.get("labels")[s]}`);
    const flat = CU.slice(packed, l, h); // T*T ints, row = query
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const p = flat[i * T + j];
        const t = p / 100;
        const rect = CU.svg("rect", {
          x: margin + j * cell, y: margin + i * cell, width: cell, height: cell,
          fill: CU.colour(t, "viridis"),
        }, svg);
        CU.setText(CU.svg("title", {}, rect), `${tokens[i]} → ${tokens[j]}: ${CU.fmt(t, 2)}`);
        if (cell >= 22) {
          const txt = CU.svg("text", {
            x: margin + j * cell + cell / 2, y: margin + i * cell + cell / 2 + 3,
            "text-anchor": "middle", fill: CU.inkOn(t, "viridis"), class: "cu-he-cell-text",
          }, svg);
          CU.setText(txt, String(p));
        }
      }
      const row = CU.svg("text", {
        x: margin - 4, y: margin + i * cell + cell / 2 + 4, "text-anchor": "end", class: "cu-he-tok",
      }, svg);
      CU.setText(row, tokens[i]);
      const col = CU.svg("text", {
        x: 0, y: 0, "text-anchor": "start", class: "cu-he-tok",
        transform: `translate(${margin + i * cell + cell / 2 + 4}, ${margin - 4}) rotate(-60)`,
      }, svg);
      CU.setText(col, tokens[i]);
    }
    const extra = model.get("head_notes")[`${l}-${h}`];
    CU.setText(note, `Layer ${l}, head ${h}: rows are queries, columns keys; numbers are weights in %.` +
      (extra ? ` Measured: ${extra}` : ""));
  }

  const onSentences = () => {
    sentence.setOptions(model.get("labels"), model.get("sentence_index"));
    draw();
  };
  const onState = () => {
    sentence.set(model.get("sentence_index"));
    layer.set(model.get("layer"));
    head.set(model.get("head"));
    draw();
  };
  model.on("change:labels", onSentences);
  model.on("change:sentence_index", onState);
  model.on("change:layer", onState);
  model.on("change:head", onState);
  model.on("change:head_notes", draw);
  draw();
  return () => {
    model.off("change:labels", onSentences);
    model.off("change:sentence_index", onState);
    model.off("change:layer", onState);
    model.off("change:head", onState);
    model.off("change:head_notes", draw);
  };
}
export default { render };
