// Runs the KVCacheCalculator widget's ES module in Node on a minimal fake DOM, picks every model
// at every context and prints what it drew: the total bytes on the drawing (data-total) and the
// text of its "sliding-window layers" row. tests/test_widgets_kv_cache_calculator.py compares
// them with Python. Usage: node kv_cache_calculator.dom.mjs module.mjs state.json
import { renderWidget } from "./fake_dom.mjs";

const [modulePath, statePath] = process.argv.slice(2);
const { state, handlers, el, find } = await renderWidget(modulePath, statePath);
const KNOBS = ["layers_index", "heads_index", "kv_index", "dhead_index"];
const frames = [];
for (let m = 0; m < state.models.length; m++) {
  for (let c = 0; c < state.grids.contexts.length; c++) {
    // a preset sets its knobs, as the model select does
    const knobs = Object.fromEntries(KNOBS.map((k) => [k, state.models[m][k]]));
    Object.assign(state, knobs, { model_index: m, context_index: c });
    handlers["change:context_index"].forEach((f) => f());
    const drawing = find(el, (n) => n.tag === "svg")[0];
    const rows = find(el, (n) => n.tag === "tr").map((n) => n.textContent);
    const sliding = rows.find((r) => r.startsWith("sliding-window layers"));
    frames.push({ m, c, total: Number(drawing.attrs["data-total"]), sliding });
  }
}
process.stdout.write(JSON.stringify(frames));
