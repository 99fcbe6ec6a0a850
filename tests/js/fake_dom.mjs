// A minimal fake DOM in which a widget's ES module renders in Node, shared by the widgets' DOM
// runners (*.dom.mjs). renderWidget(modulePath, statePath) renders the widget on a model backed by
// the saved state and returns { state, handlers, el, find }: set traits on `state`, call the
// `handlers["change:<trait>"]` the widget registered, and `find` nodes in what it drew.
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

export const find = (n, pred, out = []) => {
  if (pred(n)) out.push(n);
  n.children.forEach((c) => find(c, pred, out));
  return out;
};

export async function renderWidget(modulePath, statePath) {
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
  return { state, handlers, el, find };
}
