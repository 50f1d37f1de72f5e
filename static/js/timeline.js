/* The timeline page. It listens to its session's board socket (the ws extension) but shows
   only a part of the board: fragments for parts it does not show (cards, history) are
   dropped before htmx swaps them, and any message means "something changed", so the timeline
   is fetched again, at most about once a second. A reconnect's snapshot does the same, which
   resyncs a page that lost its socket. */
(function () {
  "use strict";

  function targetOf(element) {
    var how = element.getAttribute("hx-swap-oob") || "true";
    var colon = how.indexOf(":");
    if (colon >= 0) return how.slice(colon + 1);
    return element.id ? "#" + CSS.escape(element.id) : null;
  }

  htmx.defineExtension("only-present", {
    transformResponse: function (text, xhr) {
      if (xhr) return text; /* an ordinary request: htmx selects what it needs */
      var holder = document.createElement("template");
      holder.innerHTML = text;
      Array.prototype.slice.call(holder.content.children).forEach(function (element) {
        var target = targetOf(element);
        if (!target || !document.querySelector(target)) element.remove();
      });
      return holder.innerHTML;
    }
  });

  var pending = null;
  /* The socket's first message is the snapshot of what this page was just rendered with. */
  var first = true;
  function refresh() {
    pending = null;
    var timeline = document.getElementById("timeline");
    if (timeline && timeline.hasAttribute("data-live-refresh")) htmx.trigger(timeline, "refresh");
  }
  document.addEventListener("htmx:wsClose", function () { first = false; });
  document.addEventListener("htmx:wsAfterMessage", function (event) {
    if (!event.target.closest || !event.target.closest(".timeline-page")) return;
    if (first) { first = false; return; }
    if (pending === null) pending = setTimeout(refresh, 800);
  });

  /* A running step grows while nobody writes: the axis ends now, so redraw now and then. */
  setInterval(function () {
    var timeline = document.getElementById("timeline");
    if (timeline && timeline.querySelector(".mark.is-running") && pending === null) refresh();
  }, 15000);

  /* A step's detail opens beside the lanes without leaving the page; the address keeps it. */
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.mark-link, .step-what a, #step-detail-close");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    var href = link.getAttribute("href");
    htmx.ajax("GET", href, { target: "#timeline", select: "#timeline", swap: "outerHTML" }).then(function () {
      history.pushState({}, "", href);
      var heading = document.getElementById("step-detail-title");
      if (heading) heading.focus();
      else {
        var again = document.getElementById(link.id === "step-detail-close" ? "timeline" : link.id);
        if (again) again.focus();
      }
    });
  });
  window.addEventListener("popstate", function () {
    if (document.getElementById("timeline")) location.reload();
  });
})();

/* The overview grouped by project or person: groups are the server's, so any change fetches
   the groups again (at most about once a second); a closed group stays closed. The filter
   form applies itself as soon as a choice changes. */
(function () {
  "use strict";
  var CLOSED = "agentboard.closedGroups";
  function closed() {
    try { return JSON.parse(localStorage.getItem(CLOSED) || "{}"); } catch (e) { return {}; }
  }
  function applyClosed(root) {
    var state = closed();
    (root.querySelectorAll ? root.querySelectorAll("details[data-group-key]") : []).forEach(function (group) {
      if (state[group.dataset.groupKey]) group.open = false;
    });
  }
  document.addEventListener("toggle", function (event) {
    var group = event.target;
    if (!group.matches || !group.matches("details[data-group-key]")) return;
    var state = closed();
    if (group.open) delete state[group.dataset.groupKey]; else state[group.dataset.groupKey] = 1;
    try { localStorage.setItem(CLOSED, JSON.stringify(state)); } catch (e) { /* not remembered */ }
  }, true);
  document.addEventListener("DOMContentLoaded", function () { applyClosed(document); });
  document.addEventListener("htmx:afterSwap", function (event) { applyClosed(document); });

  var pending = null;
  var first = true;
  document.addEventListener("htmx:wsClose", function () { first = false; });
  document.addEventListener("htmx:wsAfterMessage", function (event) {
    if (!event.target.closest || !event.target.closest(".is-grouped")) return;
    if (first) { first = false; return; }
    if (pending !== null) return;
    pending = setTimeout(function () {
      pending = null;
      var groups = document.getElementById("session-groups");
      if (groups) htmx.trigger(groups, "refresh");
    }, 800);
  });

  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("form[data-autosubmit]");
    if (form) form.requestSubmit();
  });
  /* Only the filters chosen go in the address ("?person=ben", not "?project=&person=ben"). */
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-autosubmit]")) return;
    Array.prototype.forEach.call(form.elements, function (field) {
      if (field.name && !field.value) field.disabled = true;
    });
    setTimeout(function () {
      Array.prototype.forEach.call(form.elements, function (field) { field.disabled = false; });
    }, 0);
  });
})();

/* "/" anywhere (outside a text field) goes to the header's search box. */
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  var target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  var box = document.getElementById("search-q") || document.getElementById("header-search");
  if (!box) return;
  event.preventDefault();
  box.focus();
  box.select();
});

/* On a phone, "Filter & group" opens the overview's filters. */
document.addEventListener("click", function (event) {
  var toggle = event.target.closest && event.target.closest("[data-toggle-filters]");
  if (!toggle) return;
  var form = document.getElementById(toggle.getAttribute("aria-controls"));
  if (!form) return;
  var open = !form.classList.contains("is-open");
  form.classList.toggle("is-open", open);
  toggle.setAttribute("aria-expanded", String(open));
});
