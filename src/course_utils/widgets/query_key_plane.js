// QueryKeyPlane: keys as points, a query arrow set by angle/length sliders; scores, weights, output.
// Python precomputed every frame (frames.query/scores/weights/output, packed (A, L, ...)); this file only
// looks them up. CU (the shared helpers) is prepended by Python.

// Where a label goes: beside its point, clear of every mark (key dots, the output diamond, the
// arrowhead) and of the labels already placed, inside the drawing. A fixed offset put "q" under the
// output diamond (190 degrees) and a key's name on its own dot once the dot grew with its weight.
// The first of eight places around the point (up-right first, as a label is usually read) that
// hits nothing wins, tried at the least distance, then one and two label heights further out (a
// short query's tip is crowded by the diamond, the dots and its own arrowhead); if every place
// hits something, the one that hits least.
const LABEL_PLACES = [[1, -1], [1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1]];
const LABEL_RINGS = [0, 12, 24]; // px beyond the least distance

function textSize(text) {
  // The label's box as drawn (user units); before the card has its styles, an estimate at 13 px
  // (a CJK character a full em, a Latin one about 0.6 em).
  const b = text.getBBox ? text.getBBox() : null;
  if (b && b.width > 0) return { w: b.width, h: b.height, ascent: Number(text.getAttribute("y") || 0) - b.y };
  const w = Array.from(text.textContent).reduce((sum, ch) => sum + (ch.codePointAt(0) > 0x2e80 ? 13 : 8), 0);
  return { w, h: 16, ascent: 12 };
}

function boxHitsCircle(box, c) {
  const nx = Math.max(box.x, Math.min(c.cx, box.x + box.w));
  const ny = Math.max(box.y, Math.min(c.cy, box.y + box.h));
  return Math.hypot(nx - c.cx, ny - c.cy) < c.r;
}

function boxesMeet(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * The top-left corner of a w x h label near (cx, cy), at least `clear` from that point, that meets
 * none of `marks` (circles {cx, cy, r}) or `taken` (boxes {x, y, w, h}) and stays in size x size.
 */
function placeLabel({ cx, cy, clear, w, h }, marks, taken, size) {
  const pad = 2; // the label's halo and a hair of air
  let best = null;
  for (const extra of LABEL_RINGS) {
    const d = clear + extra;
    for (const [dx, dy] of LABEL_PLACES) {
      const k = dx && dy ? Math.SQRT1_2 : 1; // a corner place: the box's corner at distance d
      const x = dx > 0 ? cx + d * k : dx < 0 ? cx - d * k - w : cx - w / 2;
      const y = dy > 0 ? cy + d * k : dy < 0 ? cy - d * k - h : cy - h / 2;
      const box = { x: x - pad, y: y - pad, w: w + 2 * pad, h: h + 2 * pad };
      const hits = marks.filter((m) => boxHitsCircle(box, m)).length +
        taken.filter((t) => boxesMeet(box, t)).length +
        (box.x < 0 || box.y < 0 || box.x + box.w > size || box.y + box.h > size ? 1 : 0);
      if (!best || hits < best.hits) best = { x, y, box, hits };
      if (!hits) break;
    }
    if (!best.hits) break;
  }
  taken.push(best.box);
  return best;
}

function render({ model, el }) {
  const { controls, stage } = CU.frame(el, model, "cu-qk-plane");
  const SIZE = 320;
  const HALF = SIZE / 2;
  let built = null; // SVG/table nodes for the current inputs (build() makes them)

  const [angleSlider, lengthSlider] = [
    [CU.t("Query angle"), "angle_index", "angles", (v) => `${CU.fmt(v, 0)}°`],
    [CU.t("Query length"), "length_index", "lengths", (v) => CU.fmt(v, 2)],
  ].map(([label, trait, grid, format]) => CU.slider({ label, model, trait, grid, format, onInput: update }));
  controls.append(angleSlider.root, lengthSlider.root);

  const layout = CU.html("div", { class: "cu-qk-layout cu-row" }, stage);

  function build() {
    layout.replaceChildren();
    const frames = model.get("frames");
    const keys = model.get("key_vectors");
    const labels = model.get("key_labels");
    const values = model.get("value_vectors");
    const ext = frames.extent || 1;
    const px = (x) => HALF + (x / ext) * (HALF - 10);
    const py = (y) => HALF - (y / ext) * (HALF - 10);

    const svg = CU.svg("svg", {
      viewBox: `0 0 ${SIZE} ${SIZE}`,
      width: SIZE,
      height: SIZE,
      role: "img",
      class: "cu-qk-svg",
    }, layout);
    const svgTitle = CU.svg("title", {}, svg);
    CU.svg("line", { x1: 0, y1: HALF, x2: SIZE, y2: HALF, class: "cu-axis" }, svg);
    CU.svg("line", { x1: HALF, y1: 0, x2: HALF, y2: SIZE, class: "cu-axis" }, svg);
    const defs = CU.svg("defs", {}, svg);
    const markerId = CU.uid("arrow");
    const marker = CU.svg("marker", {
      id: markerId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
      orient: "auto-start-reverse",
    }, defs);
    CU.svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "cu-qk-arrowhead" }, marker);

    const keyNodes = keys.map((k, j) => {
      const g = CU.svg("g", { class: "cu-qk-key" }, svg);
      const dot = CU.svg("circle", { cx: px(k[0]), cy: py(k[1]), r: 7, class: "cu-qk-keydot" }, g);
      const label = CU.svg("text", { x: px(k[0]) + 10, y: py(k[1]) - 8, class: "cu-qk-label" }, g); // placed by placeLabels
      CU.setText(label, labels[j]);
      return { dot, label };
    });
    const queryLine = CU.svg("line", {
      x1: HALF, y1: HALF, x2: HALF, y2: HALF, class: "cu-qk-query", "marker-end": `url(#${markerId})`,
    }, svg);
    const showOutput = values.length > 0 && values[0].length === 2;
    const outputDot = showOutput
      ? CU.svg("rect", { width: 12, height: 12, class: "cu-qk-output cu-diamond" }, svg)
      : null;
    // Drawn last, with a halo in the card's colour: the label stays readable over a key or the
    // output diamond.
    const queryText = CU.svg("text", { class: "cu-qk-qlabel" }, svg);
    CU.setText(queryText, "q");

    // Table: one row per key with score, weight bar and value; the output line under it, so that
    // both sit beside the plane on a wide card (a projector's short screen showed the plane but not
    // the line once it was under the plane) and stack under it on a phone.
    const side = CU.html("div", { class: "cu-qk-side" }, layout);
    const table = CU.html("table", { class: "cu-table cu-qk-table" }, side);
    const head = CU.html("tr", {}, CU.html("thead", {}, table));
    for (const h of [CU.t("key"), CU.t("score"), CU.t("weight")]) CU.html("th", { scope: "col" }, head, h);
    // The bar column's header is for screen readers only (an empty header cell has no name).
    CU.html("span", { class: "cu-sr-only" }, CU.html("th", { scope: "col" }, head), CU.t("weight bar"));
    const body = CU.html("tbody", {}, table);
    const rows = labels.map((lab) => {
      const tr = CU.html("tr", {}, body);
      CU.token(CU.html("th", { scope: "row" }, tr), lab);
      const score = CU.html("td", { class: "cu-num" }, tr);
      const weight = CU.html("td", { class: "cu-num" }, tr);
      const barCell = CU.html("td", {}, tr);
      const bar = CU.html("span", { class: "cu-bar" }, barCell);
      return { score, weight, bar };
    });
    const out = CU.html("p", { class: "cu-qk-out", "aria-live": "polite" }, side);

    // Optional pointer drag: snap the pointer to the nearest grid query (the sliders stay the
    // keyboard way to do the same). Only grid lookup here, no attention maths.
    const toData = (ev) => {
      const box = svg.getBoundingClientRect();
      const sx = ((ev.clientX - box.left) / box.width) * SIZE;
      const sy = ((ev.clientY - box.top) / box.height) * SIZE;
      return [((sx - HALF) / (HALF - 10)) * ext, ((HALF - sy) / (HALF - 10)) * ext];
    };
    const nearest = (list, x, wrap) => {
      let best = 0;
      let bestD = Infinity;
      list.forEach((v, i) => {
        let d = Math.abs(v - x);
        if (wrap) d = Math.min(d, wrap - d);
        if (d < bestD) {
          bestD = d;
          best = i;
        }
      });
      return best;
    };
    let dragging = false;
    const onPointer = (ev) => {
      if (ev.type === "pointerdown") {
        dragging = true;
        svg.setPointerCapture(ev.pointerId);
      }
      if (!dragging) return;
      if (ev.type === "pointerup" || ev.type === "pointercancel") {
        dragging = false;
        return;
      }
      const [x, y] = toData(ev);
      const deg = ((Math.atan2(y, x) * 180) / Math.PI + 360) % 360;
      const a = nearest(model.get("angles"), deg, 360);
      const l = nearest(model.get("lengths"), Math.hypot(x, y), 0);
      if (a !== model.get("angle_index") || l !== model.get("length_index")) {
        CU.save(model, { angle_index: a, length_index: l });
        update();
      }
    };
    for (const type of ["pointerdown", "pointermove", "pointerup", "pointercancel"]) {
      svg.addEventListener(type, onPointer);
    }
    built = { px, py, svgTitle, keyNodes, queryLine, queryText, outputDot, rows, out, frames };
  }

  function update() {
    const a = model.get("angle_index");
    const l = model.get("length_index");
    const { px, py, frames } = built;
    const q = CU.slice(frames.query, a, l);
    const s = CU.slice(frames.scores, a, l);
    const w = CU.slice(frames.weights, a, l);
    const o = CU.slice(frames.output, a, l);
    built.queryLine.setAttribute("x2", px(q[0]));
    built.queryLine.setAttribute("y2", py(q[1]));
    const wmax = Math.max(...w);
    built.keyNodes.forEach((node, j) => {
      node.dot.setAttribute("fill", CU.colour(w[j]));
      node.dot.setAttribute("r", 5 + 10 * Math.sqrt(w[j]));
      node.dot.setAttribute("data-weight", w[j]);
    });
    built.rows.forEach((row, j) => {
      row.score.textContent = CU.fmt(s[j], 2);
      row.weight.textContent = CU.fmt(w[j], 3);
      row.bar.style.width = `${Math.round(100 * w[j])}px`;
      row.bar.style.background = CU.colour(w[j]);
      row.bar.classList.toggle("cu-max", w[j] === wmax);
    });
    if (built.outputDot) {
      built.outputDot.setAttribute("x", px(o[0]) - 6);
      built.outputDot.setAttribute("y", py(o[1]) - 6);
    }
    placeLabels(q, o, w);
    const outText = CU.t(`output = Σ weight × value = (${o.map((x) => CU.fmt(x, 2)).join(", ")})`);
    built.out.textContent = outText;
    const labels = model.get("key_labels");
    const best = w.indexOf(wmax);
    built.svgTitle.textContent =
      CU.t(`Query at ${CU.fmt(model.get("angles")[a], 0)} degrees, length ${CU.fmt(model.get("lengths")[l], 2)}; ` +
      `largest weight ${CU.fmt(wmax, 3)} on key ${labels[best]}. `) + outText;
    CU.sync(angleSlider, lengthSlider);
  }

  // Every label beside its point and clear of every mark: the keys' names (their dots grow with
  // their weights), then "q" at the arrow's tip (it moves with the query).
  function placeLabels(q, o, w) {
    const { px, py, keyNodes, queryText, outputDot } = built;
    const tip = [px(q[0]), py(q[1])];
    const back = Math.hypot(tip[0] - HALF, tip[1] - HALF) || 1;
    const marks = keyNodes.map((node, j) => ({
      cx: Number(node.dot.getAttribute("cx")), cy: Number(node.dot.getAttribute("cy")),
      r: 5 + 10 * Math.sqrt(w[j]) + 1, // the dot and its outline
    }));
    // The output diamond (a 12 px square turned 45 degrees: its corners 8.5 px out) and the
    // arrowhead (about 20 px long, 10 px either side, ending at the tip).
    if (outputDot) marks.push({ cx: px(o[0]), cy: py(o[1]), r: 6 * Math.SQRT2 + 1 });
    marks.push({
      cx: tip[0] - ((tip[0] - HALF) / back) * 9, cy: tip[1] - ((tip[1] - HALF) / back) * 9, r: 11,
    });
    const taken = [];
    const put = (text, cx, cy, clear) => {
      const { w: tw, h, ascent } = textSize(text);
      const spot = placeLabel({ cx, cy, clear, w: tw, h }, marks, taken, SIZE);
      text.setAttribute("x", spot.x);
      text.setAttribute("y", spot.y + ascent);
    };
    keyNodes.forEach((node, j) => put(node.label, marks[j].cx, marks[j].cy, marks[j].r + 3.5));
    put(queryText, tip[0], tip[1], 12);
  }

  return CU.live(model, [
    ["change:angle_index change:length_index", update],
    ["change:frames change:key_labels", [build, update]],
  ], [build, update]);
}

export default { render };
