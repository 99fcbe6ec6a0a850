// A formula wider than its column scrolls sideways instead of being cut at the column's edge.
// Display formulas scroll by the theme's CSS; a long inline formula (ch11's absorption identity on
// a phone) is marked here (.cu-math-scroll in site.css: an inline block no wider than its line).
// A region that scrolls must be reachable by keyboard (axe: scrollable-region-focusable), so each
// formula that overflows after MathJax has typeset it becomes a Tab stop; formulas that fit stay
// out of the Tab order.
(function () {
  "use strict";
  function tabStopIfScrolling(el) {
    if (el.scrollWidth > el.clientWidth + 1) {
      el.setAttribute("tabindex", "0");
    } else if (el.getAttribute("tabindex") === "0") {
      el.removeAttribute("tabindex");
    }
  }
  function markOverflowing() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(tabStopIfScrolling);
    document.querySelectorAll('mjx-container:not([display="true"])').forEach(function (el) {
      var column = el.parentElement;
      if (!column) return;
      var right = column.getBoundingClientRect().right;
      if (!el.classList.contains("cu-math-scroll") && el.getBoundingClientRect().right > right + 1) {
        el.classList.add("cu-math-scroll");
      }
      if (el.classList.contains("cu-math-scroll")) tabStopIfScrolling(el);
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
