/*
 * Attention, step by step: a small loader for anywidget views saved in a static HTML page.
 * (MIT licence, like the rest of the course's code.)
 *
 * The site's only widget manager (instead of @jupyter-widgets/html-manager + require.js, 3.6 MB):
 * the site saves anywidgets only. URL on the built site: _static/course/widget_loader.js (stable; the slide decks
 * load the same file).
 *
 * Contract
 * - A classic script with no dependencies; include it anywhere in the page (head or body, with or
 *   without defer). It starts itself on DOMContentLoaded (at once if the DOM is already parsed).
 * - Input: every <script type="application/vnd.jupyter.widget-state+json"> on the page (the saved
 *   models, as Jupyter writes them: {"state": {model_id: {model_name, model_module, state,
 *   buffers?}}}) and every <script type="application/vnd.jupyter.widget-view+json"> ({model_id}),
 *   as myst-nb and nbconvert write them.
 * - Output: for each view of an anywidget model, a <div class="widget-subarea"> inserted just
 *   before the view script (where html-manager puts it), holding the `el` the widget draws into.
 *   Each model's `_css` is added once as a <style>; its `_esm` is imported from a blob URL (or from
 *   its URL if `_esm` is one); then `initialize({model})` (once per model) and
 *   `render({model, el})` (once per view) are called, as anywidget's own front end does.
 * - The model a view gets: get(name), set(name, value) (fires "change:name" and "change"),
 *   on(events, cb) / off(events?, cb?), save_changes() and send() (no kernel: they do nothing
 *   more). Views of one model share it, so moving one view's control updates the others.
 * - A course widget saved by a notebook keeps its state but not its code
 *   (course_utils.widgets.saved_code): its `_esm` starts with "// course-widget: <stem>.<lang>".
 *   The loader then adds the classic script _static/course_widgets/<stem>.<lang>.js (written by the
 *   site build from the package's files), which puts {esm, css} in
 *   window.courseWidgetCode["<stem>.<lang>"], and uses that code. A classic script, not an ES
 *   module, so that a page opened from file:// can load it too.
 * - Views of other widgets (core ipywidgets) are left alone: the course's Sphinx extension fails
 *   the build on a page that saved one (course_site.WidgetModelError).
 * - There is no kernel: every model says so with `model.kernelless === true`, and gives
 *   `model.static_url`, the absolute URL of the site's _static/ folder (the folder this file is in,
 *   one level up), so a widget can start site files that are not swept into every page (e.g. the
 *   head explorer's Web Worker, _static/minilm/worker.mjs). In JupyterLab neither is set.
 * - window.courseWidgetLoader.ready: a Promise of {rendered, skipped, failed} once every view is
 *   drawn; the document then gets the event "course-widgets-ready" (detail: the same object).
 */
(function () {
  "use strict";
  if (window.courseWidgetLoader) return; // loaded twice: the first copy does the work

  var STATE_MIME = "application/vnd.jupyter.widget-state+json";
  // _static/ of the site: this file is _static/course/widget_loader.js.
  var SELF = document.currentScript && document.currentScript.src;
  var STATIC_URL = SELF ? new URL("../", SELF).href : "";
  var VIEW_MIME = "application/vnd.jupyter.widget-view+json";

  function parseScript(script) {
    try {
      return JSON.parse(script.textContent);
    } catch (err) {
      console.warn("course widget loader: unreadable widget JSON", err);
      return null;
    }
  }

  function same(a, b) {
    if (a === b) return true;
    if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
    try {
      return JSON.stringify(a) === JSON.stringify(b);
    } catch (err) {
      return false;
    }
  }

  /** Binary buffers of a saved model: base64 text put back at their path as DataViews. */
  function restoreBuffers(state, buffers) {
    (buffers || []).forEach(function (b) {
      var raw = atob(b.data || "");
      var bytes = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
      var obj = state;
      for (var j = 0; j < b.path.length - 1; j++) obj = obj[b.path[j]];
      obj[b.path[b.path.length - 1]] = new DataView(bytes.buffer);
    });
  }

  function Model(id, state, registry) {
    this.model_id = id;
    this._state = state;
    this._handlers = {};
    this.widget_manager = {
      get_model: function (otherId) {
        var m = registry[otherId];
        return m ? Promise.resolve(m) : Promise.reject(new Error("no model " + otherId));
      },
    };
  }
  Model.prototype.get = function (name) {
    return this._state[name];
  };
  Model.prototype.set = function (name, value) {
    var changes = {};
    if (typeof name === "object" && name !== null) changes = name;
    else changes[name] = value;
    var changed = false;
    for (var key in changes) {
      if (!Object.prototype.hasOwnProperty.call(changes, key)) continue;
      if (same(this._state[key], changes[key])) continue;
      this._state[key] = changes[key];
      changed = true;
      this._emit("change:" + key, [this, changes[key]]);
    }
    if (changed) this._emit("change", [this]);
  };
  Model.prototype.on = function (events, callback) {
    var self = this;
    String(events).split(/\s+/).filter(Boolean).forEach(function (ev) {
      (self._handlers[ev] = self._handlers[ev] || []).push(callback);
    });
  };
  Model.prototype.off = function (events, callback) {
    var self = this;
    var names = events ? String(events).split(/\s+/).filter(Boolean) : Object.keys(self._handlers);
    names.forEach(function (ev) {
      if (!callback) delete self._handlers[ev];
      else if (self._handlers[ev]) {
        self._handlers[ev] = self._handlers[ev].filter(function (h) {
          return h !== callback;
        });
      }
    });
  };
  Model.prototype._emit = function (ev, args) {
    (this._handlers[ev] || []).slice().forEach(function (h) {
      try {
        h.apply(null, args);
      } catch (err) {
        console.error("course widget loader: a '" + ev + "' handler failed", err);
      }
    });
  };
  // No kernel on a static page: what a widget saves or sends goes nowhere.
  Model.prototype.kernelless = true;
  Model.prototype.static_url = STATIC_URL;
  Model.prototype.save_changes = function () {};
  Model.prototype.send = function () {};

  var modules = {}; // _esm text -> Promise of the widget definition
  var styles = {}; // _css text -> true once added
  var codeScripts = {}; // "<stem>.<lang>" -> Promise of {esm, css}
  var CODE_FOLDER = "course_widgets/";
  var ESM_MARK = /^\/\/ course-widget: ([a-z0-9_]+\.[a-z]+)\n/;

  // The code of a course widget whose notebook saved only its state (see the contract above).
  function loadCode(name) {
    if (!codeScripts[name]) {
      codeScripts[name] = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = STATIC_URL + CODE_FOLDER + name + ".js";
        script.onload = function () {
          var code = (window.courseWidgetCode || {})[name];
          if (code && typeof code.esm === "string") resolve(code);
          else reject(new Error(script.src + " did not define the code of " + name));
        };
        script.onerror = function () {
          reject(new Error("could not load " + script.src));
        };
        document.head.appendChild(script);
      });
    }
    return codeScripts[name];
  }

  // The widget's {esm, css}: from the site's file if the notebook saved a placeholder, else saved.
  function widgetCode(model) {
    var esm = String(model.get("_esm") || "");
    var mark = ESM_MARK.exec(esm);
    return mark ? loadCode(mark[1]) : Promise.resolve({ esm: esm, css: String(model.get("_css") || "") });
  }

  function addStyle(css, id) {
    if (!css || styles[css]) return;
    styles[css] = true;
    var style = document.createElement("style");
    style.setAttribute("data-anywidget-id", id || "");
    style.textContent = css;
    document.head.appendChild(style);
  }

  function importWidget(esm) {
    if (!modules[esm]) {
      var isUrl = /^(https?:|\.{0,2}\/)[^\n]*$/.test(esm.trim());
      var url = isUrl ? esm.trim() : URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
      modules[esm] = import(url).then(function (mod) {
        if (!isUrl) URL.revokeObjectURL(url);
        var def = mod.default !== undefined ? mod.default : mod;
        return typeof def === "function" ? def() : def; // anywidget's widget factory form
      });
    }
    return modules[esm];
  }

  function start() {
    var registry = {};
    var raw = {};
    document.querySelectorAll('script[type="' + STATE_MIME + '"]').forEach(function (s) {
      var data = parseScript(s);
      var state = (data && data.state) || {};
      Object.keys(state).forEach(function (id) {
        raw[id] = state[id];
      });
    });
    var initialized = {};
    var summary = { rendered: 0, skipped: 0, failed: 0 };
    var jobs = [];
    document.querySelectorAll('script[type="' + VIEW_MIME + '"]').forEach(function (script) {
      var spec = parseScript(script);
      var saved = spec && raw[spec.model_id];
      var prev = script.previousElementSibling;
      if (!saved || saved.model_module !== "anywidget" || (prev && prev.classList.contains("widget-subarea"))) {
        summary.skipped += 1;
        return;
      }
      var id = spec.model_id;
      if (!registry[id]) {
        var state = Object.assign({}, saved.state);
        restoreBuffers(state, saved.buffers);
        registry[id] = new Model(id, state, registry);
      }
      var model = registry[id];
      var area = document.createElement("div");
      area.className = "widget-subarea";
      var el = document.createElement("div");
      el.className = "course-anywidget-view";
      area.appendChild(el);
      script.parentNode.insertBefore(area, script);
      var job = widgetCode(model)
        .then(function (code) {
          addStyle(code.css, model.get("_anywidget_id"));
          return importWidget(code.esm);
        })
        .then(function (widget) {
          if (!initialized[id]) {
            initialized[id] = Promise.resolve(
              widget && widget.initialize ? widget.initialize({ model: model, experimental: {} }) : null,
            );
          }
          return initialized[id].then(function () {
            if (!widget || typeof widget.render !== "function") throw new Error("no render() exported");
            return widget.render({ model: model, el: el, experimental: {} });
          });
        })
        .then(function () {
          summary.rendered += 1;
        })
        .catch(function (err) {
          summary.failed += 1;
          console.error("course widget loader: could not draw widget " + id, err);
        });
      jobs.push(job);
    });
    return Promise.all(jobs).then(function () {
      document.dispatchEvent(new CustomEvent("course-widgets-ready", { detail: summary }));
      return summary;
    });
  }

  var resolveReady;
  window.courseWidgetLoader = {
    ready: new Promise(function (resolve) {
      resolveReady = resolve;
    }),
  };
  function run() {
    start().then(resolveReady);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
