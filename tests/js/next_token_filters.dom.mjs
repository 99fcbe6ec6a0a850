// Runs the NextTokenFilters widget's ES module in Node on a minimal fake DOM, moves it to every
// position of its controls and prints, per position, what it drew: the kept count it shows and the
// renormalised probability of each kept bar (data-p). tests/test_widgets_next_token_filters.py
// compares them with Python. Usage: node next_token_filters.dom.mjs module.mjs state.json
import fs from "fs";

class FakeNode {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.attrs = {};
    this.text = "";
    this.style = {};
    this.classList = { toggle() {}, add() {}, remove() {} };
    this.isConnected = false;
  }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return this.attrs[k] ?? null; }
  appendChild(c) { this.children.push(c); return c; }
  replaceChildren(...c) { this.children = [...c]; }
  addEventListener() {}
  removeEventListener() {}
  set textContent(t) { this.text = String(t); this.children = []; }
  get textContent() { return this.text + this.children.map((c) => c.textContent).join(""); }
  querySelectorAll() { return []; }
  querySelector() { return null; }
  after() {}
  getBoundingClientRect() { return { height: 0, width: 0 }; }
}
globalThis.document = { createElement: (t) => new FakeNode(t), createElementNS: (_, t) => new FakeNode(t) };
globalThis.window = { innerHeight: 900, innerWidth: 1200, addEventListener() {} };
globalThis.getComputedStyle = () => ({ fontSize: "12px" });
globalThis.ResizeObserver = class { observe() {} disconnect() {} };
globalThis.MutationObserver = class { observe() {} disconnect() {} };
globalThis.requestAnimationFrame = () => 0;

const [modulePath, statePath] = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(statePath, "utf-8"));
const handlers = {};
const model = {
  get: (k) => state[k],
  set: (k, v) => { state[k] = v; },
  save_changes() {},
  on: (events, f) => { for (const e of events.split(" ")) (handlers[e] ||= []).push(f); },
  off() {},
};
const { default: widget } = await import(modulePath);
const el = new FakeNode("div");
widget.render({ model, el });
const find = (n, pred, out = []) => {
  if (pred(n)) out.push(n);
  n.children.forEach((c) => find(c, pred, out));
  return out;
};
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
