// A display formula wider than its column scrolls sideways (site.css). A region that scrolls must
// be reachable by keyboard (axe: scrollable-region-focusable), so each formula that overflows
// after MathJax has typeset it becomes a Tab stop; formulas that fit stay out of the Tab order.
(function () {
  "use strict";
  function markOverflowing() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1) {
        el.setAttribute("tabindex", "0");
      } else if (el.getAttribute("tabindex") === "0") {
        el.removeAttribute("tabindex");
      }
    });
  }
  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(markOverflowing);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
  window.addEventListener("resize", markOverflowing);
})();
