// A figure is never shown smaller than the width at which its smallest text is 11 px (the build
// writes that width on each figure: course_site.link_figures). On a screen narrower than that (a
// phone) the figure keeps it, in a box that scrolls sideways: this shows the hint under each
// figure whose box scrolls ("Scroll sideways ..., or open the image at full size"), and hides it
// again when the box fits (a wider window, a phone turned sideways).
(function () {
  "use strict";
  function showHints() {
    document.querySelectorAll(".cu-figure-scroll").forEach(function (box) {
      var hint = box.nextElementSibling;
      if (!hint || !hint.classList.contains("cu-figure-hint")) return;
      hint.hidden = !(box.scrollWidth > box.clientWidth + 1);
    });
  }
  function whenImagesLoad() {
    showHints();
    document.querySelectorAll(".cu-figure-scroll img").forEach(function (img) {
      if (!img.complete) img.addEventListener("load", showHints);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenImagesLoad);
  } else {
    whenImagesLoad();
  }
  window.addEventListener("resize", showHints);
})();
