// Shared prelude of every course widget. Python (course_utils.widgets._base) puts this text in front of
// each widget's own .js file to make the widget's ES module: anywidget loads an ES module from a string
// (a blob URL), so relative imports between our files would not resolve. Everything lives in one
// namespace, CU, so a widget file only adds `export default { render }`.
//
// Safety rule: learner text (tokens, labels, titles) is only ever set with textContent, createTextNode or
// setAttribute; never with innerHTML, outerHTML, insertAdjacentHTML or document.write. A unit test checks
// that no widget file uses those sinks.
const CU = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  let counter = 0;

  /** A page-unique id for label/aria links (several views of one model may share a page). */
  function uid(prefix) {
    counter += 1;
    return `cu-${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  }

  /** Create an SVG element with attributes; append it to parent if given. */
  function svg(tag, attrs = {}, parent = null) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  /** Create an HTML element; text (if given) is set with textContent, never parsed as HTML. */
  function html(tag, attrs = {}, parent = null, text = null) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    // A node (e.g. a label with a sub- or superscript) is appended; anything else is text.
    if (text && typeof text === "object" && text.nodeType) node.appendChild(text);
    else if (text !== null && text !== undefined) node.textContent = String(text);
    if (parent) parent.appendChild(node);
    return node;
  }

  /** Set the text of a node safely (SVG <text> or HTML). */
  function setText(node, text) {
    node.textContent = String(text);
  }

  /** Stop JupyterLab (Lumino) from taking the keys of this control. */
  function suppressShortcuts(node) {
    node.setAttribute("data-lm-suppress-shortcuts", "true");
    // Also stop the key event from reaching notebook-level handlers (e.g. Shift+Enter is not ours anyway).
    node.addEventListener("keydown", (ev) => ev.stopPropagation());
  }

  /**
   * Set model traits from the page and save them, so that Python sees the change in JupyterLab
   * (harmless on the kernel-free site): `CU.save(model, { step_index: i })`.
   */
  function save(model, values) {
    for (const [name, value] of Object.entries(values)) model.set(name, value);
    model.save_changes();
  }

  /**
   * What a control does when the reader moves it to i: if it shows a model trait (opts.model and
   * opts.trait), save i to that trait first; then call the widget's handler (a redraw).
   */
  function moved(opts, i, handler) {
    if (opts.trait) save(opts.model, { [opts.trait]: i });
    if (handler) handler(i);
  }

  /**
   * Several model traits at once, as an object to destructure at the start of a redraw:
   * `const { layer, token } = CU.traits(model, "layer", "token");`
   */
  function traits(model, ...names) {
    return Object.fromEntries(names.map((name) => [name, model.get(name)]));
  }

  /** Slider options over the values of a list trait (opts.grid): n and format(i) from the values. */
  function overGrid(opts) {
    const { format = String, model, grid } = opts;
    const values = () => model.get(grid); // read when shown: Python may change the grid
    return { ...opts, n: values().length, format: (i) => format(values()[i], i) };
  }

  /** The start value of a control: opts.value, else the value of the model trait it shows. */
  function startValue(opts) {
    return opts.value !== undefined ? opts.value : opts.model.get(opts.trait);
  }

  /**
   * A labelled range slider over integer indices 0..n-1 (a grid of precomputed frames).
   * opts: {label, n, value, format(i) -> text shown and announced, onInput(i)}; with {model, trait}
   * it shows that model trait: it starts at its value (unless value is given), a move saves it
   * (CU.save) before onInput, and sync() moves the slider to the trait's current value.
   * With {model, grid: "list_trait"} it runs over the values of that list trait: n is its length
   * and format(value, i) gets the value at i (shown as String(value) without a format).
   * Returns {root, input, set(i), sync()}.
   */
  function slider(options) {
    const opts = options.grid ? overGrid(options) : options;
    const id = uid("slider");
    const root = html("div", { class: "cu-control cu-slider" });
    html("label", { for: id }, root, opts.label);
    const input = html("input", {
      id,
      type: "range",
      min: 0,
      max: Math.max(0, opts.n - 1),
      step: 1,
    }, root);
    const start = startValue(opts);
    input.value = String(start);
    suppressShortcuts(input);
    // Space moves no range input, so the browser scrolled the page away from the widget instead.
    input.addEventListener("keydown", (ev) => {
      if (ev.key === " ") ev.preventDefault();
    });
    const out = html("output", { for: id, "aria-hidden": "true" }, root);
    const show = (i) => {
      const text = opts.format ? opts.format(i) : String(i);
      out.textContent = text;
      input.setAttribute("aria-valuetext", text);
    };
    show(start);
    input.addEventListener("input", () => {
      const i = Number(input.value);
      show(i);
      moved(opts, i, opts.onInput);
    });
    const control = {
      root,
      input,
      set(i) {
        if (Number(input.value) !== i) input.value = String(i);
        show(i);
      },
      sync() {
        control.set(opts.model.get(opts.trait));
      },
    };
    return control;
  }

  /**
   * A labelled native <select> (keyboard-operable by default).
   * opts: {label, options: [text...], value: index, onChange(i)}; {model, trait} as for CU.slider.
   * Option text is set with textContent. Returns {root, input, set(i), sync(), setOptions(options, i)}.
   */
  function select(opts) {
    const id = uid("select");
    const root = html("div", { class: "cu-control cu-select" });
    html("label", { for: id }, root, opts.label);
    const sel = html("select", { id }, root);
    opts.options.forEach((text, i) => html("option", { value: i }, sel, text));
    sel.value = String(startValue(opts));
    suppressShortcuts(sel);
    sel.addEventListener("change", () => moved(opts, Number(sel.value), opts.onChange));
    const control = {
      root,
      input: sel,
      set(i) {
        if (Number(sel.value) !== i) sel.value = String(i);
      },
      sync() {
        control.set(opts.model.get(opts.trait));
      },
      setOptions(options, value) {
        sel.replaceChildren();
        options.forEach((text, i) => html("option", { value: i }, sel, text));
        sel.value = String(value);
      },
    };
    return control;
  }

  /**
   * The two controls of a widget that shows one of several sequences and a position in it (Python:
   * CourseWidget._sequence_index): a select of the sequences (model trait `outer`) and a slider over
   * the positions of the chosen one (trait `inner`). Picking sequence i saves it, moves the position
   * back into that sequence if it is past its end, and calls onSequence(); moving the slider saves the
   * position and calls onPosition(). format(i, sequence) is the slider's text at position i.
   * opts: {model, outer, inner, sequences, options, selectLabel, sliderLabel, format, onSequence,
   * onPosition}. Returns {select, slider, current() -> the chosen sequence, position() -> the chosen
   * position (kept within the chosen sequence), resize(), sync()}: call sync() after a redraw, to fit
   * the slider to the chosen sequence (resize()) and move both controls to the model's values.
   */
  function sequenceControls(opts) {
    const { model, outer, inner, sequences } = opts;
    const current = () => model.get(sequences)[model.get(outer)];
    const at = () => Math.min(model.get(inner), current().length - 1);
    const choice = select({
      label: opts.selectLabel,
      options: opts.options,
      value: model.get(outer),
      onChange: (i) => {
        const last = model.get(sequences)[i].length - 1;
        save(model, { [outer]: i, [inner]: Math.min(model.get(inner), last) });
        opts.onSequence();
      },
    });
    const position = slider({
      label: opts.sliderLabel,
      n: current().length,
      value: at(),
      format: (i) => opts.format(i, current()),
      model,
      trait: inner,
      onInput: opts.onPosition,
    });
    const resize = () => position.input.setAttribute("max", String(Math.max(0, current().length - 1)));
    const sync = () => {
      resize();
      choice.set(model.get(outer));
      position.set(at());
    };
    return { select: choice, slider: position, current, position: at, resize, sync };
  }

  // Colour-blind-safe sequential maps: 9 stops sampled from matplotlib, linearly interpolated.
  const MAPS = {
    viridis: ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"],
    cividis: ["#00224e", "#1a386f", "#434e6c", "#61656f", "#7d7c78", "#9b9476", "#bcae6c", "#dec958", "#fee838"],
  };
  const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));

  /** Colour for t in [0, 1] from "viridis" or "cividis" (a lookup for drawing, not maths). */
  function colour(t, name = "viridis") {
    const c = rgbAt(t, name);
    return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
  }

  /** [r, g, b] (0-255) of colour(t, name). */
  function rgbAt(t, name = "viridis") {
    const stops = MAPS[name] || MAPS.viridis;
    const x = Math.min(1, Math.max(0, Number(t) || 0)) * (stops.length - 1);
    const i = Math.min(stops.length - 2, Math.floor(x));
    const f = x - i;
    const a = hex(stops[i]);
    const b = hex(stops[i + 1]);
    return a.map((ai, j) => Math.round(ai + (b[j] - ai) * f));
  }

  /**
   * Black or white text, whichever has the higher WCAG contrast on colour(t, name): black from a
   * relative luminance of 0.179 up, where both are 4.58:1, so a number on a cell has 4.58:1 or more.
   */
  function inkOn(t, name = "viridis") {
    const lin = (v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
    const [r, g, b] = rgbAt(t, name);
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b) > 0.179 ? "#000" : "#fff";
  }

  /**
   * The geometry of a labelled matrix drawn in SVG (the four steps, the tiling grid): columns
   * `cell` px wide and rows `row` px tall, starting at (`left`, `top`), with the row labels left
   * of it, the column labels above it and numbers on the baseline `text` px below a row's top.
   */
  function cellGrid({ cell, row, left, top, text }) {
    const x = (j) => left + j * cell; // left edge of column j
    const y = (i) => top + i * row; // top edge of row i
    const mid = (j) => left + (j + 0.5) * cell;
    return {
      cell, row, left, top, x, y,
      colLabel(parent, j, label) {
        const node = svg("text", { x: mid(j), y: top - 10, "text-anchor": "middle", class: "cu-label" }, parent);
        setText(node, label);
        return node;
      },
      rowLabel(parent, i, label) {
        const node = svg("text", { x: left - 6, y: y(i) + text, "text-anchor": "end", class: "cu-label" }, parent);
        setText(node, label);
        return node;
      },
      /** The rectangle of cell (i, j), 1 px inside the grid lines. */
      rect(parent, i, j, attrs = {}) {
        return svg("rect", { x: x(j) + 1, y: y(i) + 1, width: cell - 2, height: row - 2, ...attrs }, parent);
      },
      /** A <text> centred in cell (i, j), on the row's baseline. */
      num(parent, i, j, attrs = {}) {
        return svg("text", { x: mid(j), y: y(i) + text, "text-anchor": "middle", ...attrs }, parent);
      },
    };
  }

  /**
   * A drawing redrawn in place: <svg attrs> in parent, its <title> (what a screen reader says of it;
   * set its text on each redraw) and one <g> to empty and draw into. Returns {svg, title, g}.
   */
  function drawing(parent, attrs) {
    const root = svg("svg", attrs, parent);
    return { svg: root, title: svg("title", {}, root), g: svg("g", {}, root) };
  }

  /** Render one token as text: a <span class="cu-token"> whose textContent is the token. */
  function token(parent, text, attrs = {}) {
    return html("span", { class: "cu-token", ...attrs }, parent, text);
  }

  /** Read element idx (array of ints) of a packed array {shape, data} (row-major). */
  /**
   * One column of a bar chart of attention weights (sentence and cross-attention views): the
   * weight as a number, a bar in a well `height` px tall, then whatever the caller appends to
   * `col` (a token, a button). Classes `${prefix}-col`, `-num`, `-well`, `-bar`. `set(w)` shows
   * a weight w in [0, 1]: its number, the bar's height and its cividis colour.
   */
  function weightColumn(parent, prefix, height) {
    const col = html("div", { class: `${prefix}-col` }, parent);
    const num = html("span", { class: `${prefix}-num` }, col);
    const well = html("div", { class: `${prefix}-well`, style: `height:${height}px` }, col);
    const bar = html("div", { class: `${prefix}-bar` }, well);
    const set = (w) => {
      num.textContent = fmt(w, 2);
      bar.style.height = `${Math.round(height * w)}px`;
      bar.style.background = colour(w, "cividis");
    };
    return { col, bar, set };
  }

  function at(packed, ...idx) {
    let flat = 0;
    for (let d = 0; d < packed.shape.length; d++) flat = flat * packed.shape[d] + idx[d];
    return packed.data[flat];
  }

  /** The sub-array (as a flat JS array) of a packed array at leading indices idx. */
  function slice(packed, ...idx) {
    let flat = 0;
    let d = 0;
    for (; d < idx.length; d++) flat = flat * packed.shape[d] + idx[d];
    let size = 1;
    for (let e = d; e < packed.shape.length; e++) size *= packed.shape[e];
    return packed.data.slice(flat * size, (flat + 1) * size);
  }

  /**
   * Decode a packed uint8 array {shape, uint8: base64} (Python's pack_uint8) into a row-major Uint8Array.
   * Decoding walks the whole string: do it once per packed array and keep the result.
   */
  function bytes(packed) {
    const text = atob(packed.uint8);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }

  /**
   * Where the sub-array at leading indices idx starts in a flat row-major array of this shape, and how
   * long it is: [start, size]. E.g. the (T, T) map of layer l, head h of an (L, H, T, T) array is
   * data.subarray(start, start + size) with [start, size] = offset(shape, l, h).
   */
  function offset(shape, ...idx) {
    let flat = 0;
    let d = 0;
    for (; d < idx.length; d++) flat = flat * shape[d] + idx[d];
    let size = 1;
    for (let e = d; e < shape.length; e++) size *= shape[e];
    return [flat * size, size];
  }

  /** Format a number with a fixed number of decimals, with a true minus sign. */
  function fmt(x, decimals = 2) {
    return Number(x).toFixed(decimals).replace("-", "\u2212");
  }

  /**
   * Standard widget frame: <figure class="cu-widget"> with a caption (title) and an accessible description.
   * Returns {root, controls, stage, caption}. Cleanup is the caller's job (return it from render).
   */
  function frame(el, model, cls) {
    el.replaceChildren();
    const root = html("figure", { class: `cu-widget ${cls}` }, el);
    const title = model.get("title");
    const captionId = uid("caption");
    const caption = html("figcaption", { id: captionId, class: "cu-title" }, root, title || "");
    if (!title) caption.hidden = true;
    const descId = uid("desc");
    html("p", { id: descId, class: "cu-description" }, root, model.get("description") || "");
    root.setAttribute("aria-labelledby", captionId);
    root.setAttribute("aria-describedby", descId);
    const controls = html("div", { class: "cu-controls" }, root);
    const stage = html("div", { class: "cu-stage" }, root);
    keepReadable(root, stage);
    return { root, controls, stage, caption };
  }

  /** The least size (CSS px) of any text a widget draws: a drawing never shrinks its text below it. */
  const MIN_TEXT_PX = 11;

  /**
   * Keep every drawing of a widget readable: an <svg viewBox> scales with the card, but never below
   * the scale at which its smallest text is MIN_TEXT_PX (its min-width and min-height; a min size
   * wins over the max-width and max-height caps). Where the card is narrower than that, the stage
   * scrolls sideways inside the card and says so, instead of shrinking the text out of reach;
   * likewise where a landscape window is shorter than the card. A stage that scrolls is a Tab stop
   * (so a keyboard can scroll it) and a named region ("Drawing: <title>", described by the hint),
   * so a screen reader says what the stop is. Refitted when a drawing gets a new viewBox or new
   * text, and when the card is laid out (a view drawn before it is on the page has no styles yet).
   */
  function keepReadable(root, stage) {
    const fit = (drawing) => {
      const box = drawing.viewBox && drawing.viewBox.baseVal;
      if (!box || !box.width || !box.height) return;
      const sizes = new Map(); // class -> font size: the labels of a drawing share a few classes
      let smallest = Infinity;
      for (const text of drawing.querySelectorAll("text")) {
        const key = text.getAttribute("class") || "";
        if (!sizes.has(key) || !key) sizes.set(key, parseFloat(getComputedStyle(text).fontSize));
        const px = sizes.get(key);
        if (px > 0 && px < smallest) smallest = px;
      }
      const scale = Number.isFinite(smallest) ? MIN_TEXT_PX / smallest : 0;
      drawing.style.minWidth = scale ? `${Math.ceil(box.width * scale)}px` : "";
      drawing.style.minHeight = scale ? `${Math.ceil(box.height * scale)}px` : "";
    };
    let hint = null;
    const refit = () => {
      if (!root.isConnected) return;
      root.querySelectorAll("svg[viewBox]").forEach(fit);
      // A card never taller than a landscape window (a projector at 150 %: 480 px high): what
      // does not fit scrolls inside the stage. (On a phone, held upright, the page scrolls.)
      const card = root.getBoundingClientRect().height;
      const rest = card - stage.clientHeight;
      const room = window.innerHeight - rest - 8;
      const landscape = window.innerWidth > window.innerHeight;
      stage.style.maxHeight = landscape && rest + stage.scrollHeight > window.innerHeight ? `${Math.max(120, room)}px` : "";
      const scrolls = stage.scrollWidth > stage.clientWidth + 1 || stage.scrollHeight > stage.clientHeight + 1;
      stage.classList.toggle("cu-scrolls", scrolls);
      if (scrolls && !hint) {
        hint = html("p", { class: "cu-scroll-hint", id: uid("scroll-hint") }, null, CU.t("Scroll to see the whole drawing."));
        stage.after(hint);
      }
      if (hint) hint.hidden = !scrolls;
      if (scrolls) {
        // The title is read at each refit, not once: a widget may set or change it later.
        const caption = root.querySelector(":scope > .cu-title");
        const title = caption && !caption.hidden ? caption.textContent.trim() : "";
        stage.setAttribute("tabindex", "0");
        stage.setAttribute("role", "region");
        stage.setAttribute("aria-label", title ? CU.t(`Drawing: ${title}`) : CU.t("Drawing"));
        stage.setAttribute("aria-describedby", hint.id);
      } else {
        for (const name of ["tabindex", "role", "aria-label", "aria-describedby"]) stage.removeAttribute(name);
      }
    };
    let queued = false;
    const later = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        refit();
      });
    };
    new MutationObserver((records) => {
      if (records.some((r) => r.type === "attributes" || r.target.closest("svg") || r.target.querySelector("svg"))) later();
    }).observe(stage, { subtree: true, childList: true, attributes: true, attributeFilter: ["viewBox"] });
    if (window.ResizeObserver) new ResizeObserver(later).observe(root);
    REFITS.add(later);
  }
  /** Every widget's refit, run when the window changes size (its height: no card resizes then). */
  const REFITS = new Set();
  if (typeof window !== "undefined") window.addEventListener("resize", () => REFITS.forEach((refit) => refit()));

  /**
   * One handler from a handler or a list of them, called in order: a change of a widget's data
   * often means "rebuild the layout, then redraw" (`[build, update]`).
   */
  function steps(handler) {
    if (!Array.isArray(handler)) return handler;
    return (...args) => {
      for (const step of handler) step(...args);
    };
  }

  /**
   * Subscribe handlers to model events and return the cleanup that unsubscribes exactly those, so a
   * widget's render() cannot forget one: `return CU.listen(model, [["change:x change:y", draw]]);`
   * Each entry is [space-separated event names, handler], where handler may be a list of functions
   * called in order: `["change:frames", [build, update]]`.
   */
  function listen(model, entries) {
    const pairs = entries.flatMap(([events, handler]) => {
      const run = steps(handler);
      return events.split(/\s+/).filter(Boolean).map((ev) => [ev, run]);
    });
    for (const [ev, handler] of pairs) model.on(ev, handler);
    return () => {
      for (const [ev, handler] of pairs) model.off(ev, handler);
    };
  }

  /**
   * The end of a widget's render(): subscribe the handlers (as CU.listen), draw the widget once with
   * first() (a function or a list of them, as a handler), and return the cleanup:
   * `return CU.live(model, [["change:x", update], ["change:frames", [build, update]]], [build, update]);`
   */
  function live(model, entries, first) {
    const cleanup = listen(model, entries);
    steps(first)();
    return cleanup;
  }

  // ---- a model in the reader's browser (head explorer, SmolLM2 writer) ----
  /** Bytes as megabytes with one decimal, as the download button and status line show them. */
  function mb(bytes) {
    return (bytes / 1e6).toFixed(1);
  }

  /**
   * Start the kernel-free site's model in a Web Worker (the module at the model's `worker_path` under
   * `_static/`) and ask it to load. Its download shows on the <progress> `bar` and in `status`, a live
   * region that speaks only at 0, 25, 50, 75 and 100 % (a screen reader would otherwise read every
   * chunk): text.loading(loadedMB, totalMB). Every other message goes to onMessage(msg); a worker that
   * fails to start calls onFail(why). Returns the worker, or null where none can start (in JupyterLab,
   * on a file:// page, without Worker), and then status says text.noWorker.
   */
  function modelWorker(model, { bar, status, text, onMessage, onFail }) {
    let worker;
    try {
      if (!model.static_url || !window.Worker || location.protocol === "file:") throw new Error("no worker");
      worker = new Worker(new URL(model.get("worker_path"), model.static_url), { type: "module" });
    } catch (err) {
      setText(status, text.noWorker);
      return null;
    }
    bar.hidden = false;
    let quarter = -1;
    worker.onmessage = (ev) => {
      const msg = ev.data;
      if (msg.type !== "progress") {
        onMessage(msg);
        return;
      }
      bar.max = msg.total;
      bar.value = msg.loaded;
      const q = Math.floor((4 * msg.loaded) / msg.total);
      if (q !== quarter) {
        quarter = q;
        setText(status, text.loading(mb(msg.loaded), mb(msg.total)));
      }
    };
    worker.onerror = (ev) => {
      ev.preventDefault();
      onFail(ev.message || "the worker did not start");
    };
    worker.postMessage({ type: "load" });
    return worker;
  }

  /** Move each control that shows a model trait (made with {model, trait}) to the trait's value. */
  function sync(...controls) {
    for (const control of controls) control.sync();
  }

  // ---- translations (course_utils.i18n) ----
  // Every visible English string of a widget goes through CU.t, written as it is shown (a string or a
  // template literal, already formatted). In English nothing is looked up. A widget created in Python
  // under COURSE_LANG=zh (or after set_language("zh")) gets `CU.addMessages({...})` with the Chinese of
  // exactly the messages its code uses, right after this prelude: the saved widget state of a zh notebook
  // then carries its own Chinese, and needs no kernel. A key may hold placeholders {} standing for any
  // text (the numbers), which is carried into the translation ({} in order, or {0}, {1} by position).
  const MESSAGES = new Map();
  const TEMPLATES = [];
  const FIELD = /\{\{|\}\}|\{(\d*)\}/g;

  function keyRegex(key) {
    let out = "";
    let pos = 0;
    for (const m of key.matchAll(FIELD)) {
      out += key.slice(pos, m.index).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      out += m[0] === "{{" ? "\\{" : m[0] === "}}" ? "\\}" : "([\\s\\S]*?)";
      pos = m.index + m[0].length;
    }
    out += key.slice(pos).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(`^${out}$`);
  }

  function fill(value, groups) {
    let next = 0;
    return value.replace(FIELD, (m, n) => {
      if (m === "{{") return "{";
      if (m === "}}") return "}";
      const g = groups[n === "" ? next++ : Number(n)];
      return MESSAGES.has(g) ? MESSAGES.get(g) : g;
    }).replace(/(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])/g, "");
  }

  /** Add translations {English key: text}; keys with {} placeholders match formatted text. */
  function addMessages(entries) {
    for (const [key, value] of Object.entries(entries)) {
      const plain = key.replace(/\{\{|\}\}/g, "");
      if (/\{\d*\}/.test(plain)) {
        TEMPLATES.push([plain.replace(/\{\d*\}/g, "").length, keyRegex(key), value]);
        TEMPLATES.sort((a, b) => b[0] - a[0]); // the most specific key first
      } else {
        MESSAGES.set(key.replace(/\{\{/g, "{").replace(/\}\}/g, "}"), value);
      }
    }
  }

  /** The text in the widget's language: an exact entry, else a key with placeholders, else text. */
  function t(text) {
    const s = String(text);
    if (MESSAGES.size === 0 && TEMPLATES.length === 0) return s;
    if (MESSAGES.has(s)) return MESSAGES.get(s);
    for (const [, rx, value] of TEMPLATES) {
      const m = s.match(rx);
      if (m) return fill(value, m.slice(1));
    }
    return s;
  }

  return {
    svg, drawing, html, setText, uid, slider, select, sequenceControls, colour, inkOn, token, weightColumn, cellGrid, at, slice, bytes, offset,
    fmt, frame, suppressShortcuts, listen, live, save, sync, traits, t, addMessages, mb, modelWorker,
  };
})();
