/*
 * The site navigation (☰) and contents buttons, on every page, at every width.
 *
 * pydata-sphinx-theme and sphinx-book-theme bind their sidebar toggles with
 * document.querySelector(".primary-toggle") and (".secondary-toggle"): the first match only, the
 * copy in the site header that the book layout hides. The copies a reader sees, in the article
 * header, got no handler, so on a phone or a projector at 150 % zoom (where the sidebars are
 * collapsed) neither button did anything. This forwards a click (tap, Enter, Space) on any other
 * copy to the first one, whose handler the theme set: the theme's own behaviour, from every copy.
 */
(function () {
  "use strict";

  function forward(selector) {
    var copies = document.querySelectorAll(selector);
    var bound = copies[0];
    for (var i = 1; i < copies.length; i++) {
      copies[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        bound.click();
      });
    }
  }

  function init() {
    forward(".primary-toggle");
    forward(".secondary-toggle");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
