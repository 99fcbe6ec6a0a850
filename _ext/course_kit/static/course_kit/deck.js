// Start a course slide deck: reveal.js at 1280x720 with speaker notes (press "s"), arrow keys move
// between slides except while a widget control has the focus (then they move the control; Escape
// gives them back to the deck), and a slide whose content is taller than the slide is scaled down
// to fit (no scrolling).
// MIT, see /LICENSE.
(function () {
  "use strict";
  var WIDTH = 1280;
  var HEIGHT = 720;

  function inWidget(target) {
    return !!(target && target.closest && target.closest(".cu-widget, .widget-subarea, input, select, textarea"));
  }

  // The height a slide's content needs: its scroll height, or the lowest bottom of anything in
  // it (a last element's margin or a late-laid-out formula can reach below the scroll height).
  function neededHeight(slide) {
    var top = slide.getBoundingClientRect().top;
    var scale = window.Reveal.getScale() || 1;
    var lowest = 0;
    slide.querySelectorAll("*").forEach(function (e) {
      if (e.closest("aside.notes")) return;
      var folded = e.closest("details");
      if (folded && !folded.open && !e.closest("summary")) return; // a closed answer takes no room
      var r = e.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) lowest = Math.max(lowest, (r.bottom - top) / scale);
    });
    return Math.max(slide.scrollHeight, Math.ceil(lowest) + 8);
  }

  function fit(slide) {
    if (!slide) return;
    slide.style.zoom = "";
    var available = HEIGHT;
    var needed = neededHeight(slide);
    if (needed > available + 1) {
      slide.style.zoom = String(Math.max(0.3, (available - 4) / needed));
      slide.classList.add("cu-fitted");
    }
  }

  function fitCurrent() {
    fit(window.Reveal.getCurrentSlide());
  }

  // Escape on a focused widget control hands the arrow keys back to the deck (a presenter who
  // touched a slider need not reach for the mouse). Capture phase: before reveal.js sees the key.
  document.addEventListener(
    "keydown",
    function (event) {
      if (event.key !== "Escape" || !inWidget(event.target)) return;
      event.target.blur();
      event.stopPropagation();
      event.preventDefault();
    },
    true,
  );

  function start() {
    var deck = window.Reveal;
    deck
      .initialize({
        width: WIDTH,
        height: HEIGHT,
        margin: 0.03,
        center: false,
        hash: true,
        controls: true,
        progress: true,
        slideNumber: "c/t",
        navigationMode: "linear",
        transition: "none",
        plugins: window.RevealNotes ? [window.RevealNotes] : [],
        keyboardCondition: function (event) {
          return !inWidget(event.target);
        },
      })
      .then(function () {
        fitCurrent();
        // MathJax and the widgets change heights after they load: fit again.
        var mj = window.MathJax;
        if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(fitCurrent);
        var observer = new MutationObserver(function () {
          window.requestAnimationFrame(fitCurrent);
        });
        observer.observe(document.querySelector(".reveal .slides"), { childList: true, subtree: true });
        window.setTimeout(fitCurrent, 1000);
        // Web fonts (the CJK font of the 中文 decks) change line heights when they arrive.
        if (document.fonts) {
          document.fonts.ready.then(fitCurrent);
          document.fonts.addEventListener("loadingdone", fitCurrent);
        }
      });
    deck.on("slidechanged", function (event) {
      fit(event.currentSlide);
      // Again once the slide is laid out (fonts, formulas, widgets drawn on showing).
      window.requestAnimationFrame(function () {
        fit(event.currentSlide);
      });
    });
    deck.on("resize", fitCurrent);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
