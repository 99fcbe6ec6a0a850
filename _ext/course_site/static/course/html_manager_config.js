// Local configuration for the live widgets on the static site (loaded only on pages with widget state,
// between require.js and html-manager's embed-amd.js). Everything resolves relative to this file, so the
// site works from any sub-folder, from http://127.0.0.1 and from file://. No CDN is ever used: we never
// set data-jupyter-widgets-cdn-only (its mere presence forces CDN loading), and every module the widget
// state names (anywidget, the html-manager itself) is mapped to a vendored file here.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  var vendor = new URL("../course_vendor/", here || document.baseURI).href;
  // html-manager loads its Font Awesome fonts relative to its webpack public path.
  window.__jupyter_widgets_assets_path__ = vendor + "html-manager/";
  window.require.config({
    paths: {
      anywidget: vendor + "anywidget/index",
      "@jupyter-widgets/html-manager/dist": vendor + "html-manager",
    },
  });

  // @jupyter-widgets/controls typesets labels with MathJax 2's MathJax.Hub.Queue; Sphinx 7 loads
  // MathJax 3. Map the call to MathJax 3's typesetPromise so it does not throw.
  function shimMathJax() {
    var mj = window.MathJax;
    if (!mj || !mj.version || mj.Hub) return;
    mj.Hub = {
      Queue: function () {
        for (var i = 0; i < arguments.length; i++) {
          var job = arguments[i];
          if (Array.isArray(job) && job[0] === "Typeset") {
            var el = job[2];
            // typesetPromise exists once MathJax's startup is ready; wait for it if needed.
            var ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
            ready
              .then(function () {
                return mj.typesetPromise(el ? [el] : undefined);
              })
              .catch(function (err) {
                console.warn("MathJax typeset failed", err);
              });
          }
        }
      },
    };
  }
  shimMathJax();
  document.addEventListener("DOMContentLoaded", shimMathJax);
  window.addEventListener("load", shimMathJax);
})();
