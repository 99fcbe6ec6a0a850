// Runs the NextTokenFilters widget's ES module in Node on a minimal fake DOM, moves it to every
// position of its controls and prints, per position, what it drew: the kept count it shows and the
// renormalised probability of each kept bar (data-p). tests/test_widgets_next_token_filters.py
// compares them with Python. Usage: node next_token_filters.dom.mjs module.mjs state.json
import { renderWidget } from "./fake_dom.mjs";

const [modulePath, statePath] = process.argv.slice(2);
const { state, handlers, el, find } = await renderWidget(modulePath, statePath);
const frames = [];
for (let i = 0; i < state.prompts.length; i++) {
  for (let t = 0; t < state.temperatures.length; t++) {
    for (let k = 0; k < state.top_ks.length; k++) {
      for (let p = 0; p < state.top_ps.length; p++) {
        Object.assign(state, { prompt_index: i, t_index: t, k_index: k, p_index: p });
        handlers["change:p_index"].forEach((f) => f());
        const drawing = find(el, (n) => n.tag === "svg")[0];
        const bars = find(el, (n) => n.attrs.class === "cu-ntf-kept").map((n) => Number(n.attrs["data-p"]));
        frames.push({ i, t, k, p, kept: Number(drawing.attrs["data-kept"]), bars });
      }
    }
  }
}
process.stdout.write(JSON.stringify(frames));
