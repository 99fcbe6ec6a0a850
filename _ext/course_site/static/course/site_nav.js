/*
 * Navigation that works on every page, at every width (course/site_nav.js, every page).
 *
 * 1. The site navigation (☰) and contents buttons. pydata-sphinx-theme and sphinx-book-theme bind
 *    their sidebar toggles with document.querySelector(".primary-toggle") and
 *    (".secondary-toggle"): the first match only. When the site header held copies too (it is
 *    empty now: course_site sets navbar_persistent to []), the copies a reader sees, in the
 *    article header, got no handler, so on a phone or a projector at 150 % zoom neither button
 *    did anything. A click (tap, Enter, Space) on any other copy is forwarded to the first one,
 *    whose handler the theme set: the theme's own behaviour, from every copy, whatever the
 *    theme's version puts in its header.
 * 2. The language switch (English / 中文) keeps the section being read. It moves into the
 *    article's header bar, which stays at the top of the window (sticky), so it can be clicked
 *    from anywhere in the page; both editions give a section the same id (the translated page
 *    keeps the English ids), so the link gets the id of the section at the top of the window
 *    (or the page's own #anchor) when clicked.
 * 3. sphinx-togglebutton names the button of every folded answer "Toggle hidden content", in
 *    English on a 中文 page too, and the same for every answer: the admonition's own title
 *    ("Answer", 答案) names it instead. Runs at the page's load event, after sphinx-togglebutton
 *    made its buttons at DOMContentLoaded (a deferred script runs before that event).
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

  // The section the reader is in: the last one whose top has reached the upper quarter of the
  // window; before the first one, the page's own #anchor (if any), else none.
  function currentSection() {
    var sections = document.querySelectorAll("article section[id]");
    var line = window.innerHeight / 4;
    var found = "";
    for (var i = 0; i < sections.length; i++) {
      if (sections[i].getBoundingClientRect().top <= line) found = sections[i].id;
    }
    return found || decodeURIComponent(location.hash.slice(1));
  }

  function dockLanguageSwitch() {
    var nav = document.querySelector(".cu-lang-switch");
    var bar = document.querySelector(".bd-header-article .header-article-items__end");
    if (nav && bar) bar.insertBefore(nav, bar.firstChild);
  }

  function keepSection() {
    var links = document.querySelectorAll(".cu-lang-switch a[href]");
    for (var i = 0; i < links.length; i++) {
      links[i].addEventListener("click", function (event) {
        var link = event.currentTarget;
        var id = currentSection();
        var base = link.getAttribute("href").split("#")[0];
        link.setAttribute("href", id ? base + "#" + encodeURIComponent(id) : base);
      });
    }
  }

  function nameToggleButtons() {
    var buttons = document.querySelectorAll("button.toggle-button[data-target]");
    for (var i = 0; i < buttons.length; i++) {
      var box = document.getElementById(buttons[i].getAttribute("data-target"));
      var title = box && box.querySelector(".admonition-title");
      if (!title || !title.textContent.trim()) continue;
      if (!title.id) title.id = buttons[i].id + "-title";
      buttons[i].removeAttribute("aria-label");
      buttons[i].setAttribute("aria-labelledby", title.id);
    }
  }

  function init() {
    forward(".primary-toggle");
    forward(".secondary-toggle");
    dockLanguageSwitch();
    keepSection();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
  if (document.readyState === "complete") {
    nameToggleButtons();
  } else {
    window.addEventListener("load", nameToggleButtons);
  }
})();
