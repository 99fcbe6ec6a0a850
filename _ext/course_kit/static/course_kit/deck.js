// Start a course slide deck: reveal.js at 1280x720 with speaker notes (press "s"), arrow keys move
// between slides except while a widget control has the focus (then they move the control; Escape
// gives them back to the deck), a slide whose content is taller than the slide is scaled down
// to fit (no scrolling), and a slide with a widget and room to spare is zoomed in.
// MIT, see /LICENSE.
(function () {
  "use strict";
  var WIDTH = 1280;
  var HEIGHT = 720;

  function inWidget(target) {
    return !!(target && target.closest && target.closest(".cu-widget, .widget-subarea, input, select, textarea"));
  }

  // The lowest bottom of the slide's content, in slide pixels, as laid out now (its zoom
  // included); a closed answer's hidden body takes no room (the summary line does).
  function usedHeight(slide) {
    var top = slide.getBoundingClientRect().top;
    var scale = window.Reveal.getScale() || 1;
    var lowest = 0;
    slide.querySelectorAll("*").forEach(function (e) {
      if (e.closest("aside.notes")) return;
      var folded = e.closest("details");
      if (folded && !folded.open && !e.closest("summary")) return;
      var r = e.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) lowest = Math.max(lowest, (r.bottom - top) / scale);
    });
    return lowest;
  }

  // The height a slide's content needs: its scroll height, or the lowest bottom of anything in
  // it (a last element's margin or a late-laid-out formula can reach below the scroll height).
  function neededHeight(slide) {
    return Math.max(slide.scrollHeight, Math.ceil(usedHeight(slide)) + 8);
  }

  // A widget drawn at its page size fills a quarter of a slide (the ch07 grid was 130 px high on
  // a projector): a slide that shows a widget and has room is zoomed in, up to GROW_MAX, as far as
  // the room allows. The text reflows at the larger size, so each step is measured, not predicted.
  var GROW_MAX = 1.8;
  var GROW_STEP = 0.05;

  function grow(slide) {
    if (!slide.querySelector(".cu-widget")) return;
    // Not neededHeight: a slide is 100 % high, so its scroll height is never below the slide's.
    var needed = Math.max(1, usedHeight(slide));
    var zoom = Math.min(GROW_MAX, Math.floor(((HEIGHT - 8) / needed) * 20) / 20);
    for (; zoom > 1; zoom -= GROW_STEP) {
      slide.style.zoom = String(zoom);
      if (usedHeight(slide) <= HEIGHT - 8) {
        slide.classList.add("cu-grown");
        return;
      }
    }
    slide.style.zoom = "";
  }

  function fit(slide) {
    if (!slide) return;
    slide.style.zoom = "";
    slide.classList.remove("cu-grown", "cu-fitted");
    var available = HEIGHT;
    var needed = neededHeight(slide);
    if (needed > available + 1) {
      slide.style.zoom = String(Math.max(0.3, (available - 4) / needed));
      slide.classList.add("cu-fitted");
    } else {
      grow(slide);
    }
  }

  function fitCurrent() {
    fit(window.Reveal.getCurrentSlide());
  }

  // A widget redraws on every move of its controls: a grown slide is fitted again only if the new
  // drawing no longer fits, so the control under the presenter's pointer does not jump.
  function refitCurrent() {
    var slide = window.Reveal.getCurrentSlide();
    if (slide && slide.classList.contains("cu-grown") && usedHeight(slide) <= HEIGHT - 8) return;
    fit(slide);
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
          window.requestAnimationFrame(refitCurrent);
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
    // Opening or closing a folded answer changes the slide's height (an attribute, which the
    // observer above does not watch): fit again. A toggle does not bubble, so listen in capture.
    document.addEventListener(
      "toggle",
      function () {
        window.requestAnimationFrame(fitCurrent);
      },
      true,
    );
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
