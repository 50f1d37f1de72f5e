/* Page parts the server renders again rather than patching: the timeline, and the overview
   grouped by project or person. Each such part carries data-live-refresh and an hx-trigger of
   "refresh". Its page listens to a board socket for what changed (the ws extension) but shows
   only some of the board's parts: `only-present` drops the fragments for parts not on the
   page, and any message fetches the refreshed parts again, at most about once a second. A
   reconnect's snapshot does the same, which resyncs a page that lost its socket. Also: the
   overview's filter form. */
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
  function refreshParts() {
    pending = null;
    document.querySelectorAll("[data-live-refresh]").forEach(function (part) {
      htmx.trigger(part, "refresh");
    });
  }
  window.agentboardRefreshParts = function () { if (pending === null) refreshParts(); };
  document.addEventListener("htmx:wsClose", function () { first = false; });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (!document.querySelector("[data-live-refresh]")) return;
    if (first) { first = false; return; }
    if (pending === null) pending = setTimeout(refreshParts, 800);
  });

  /* A closed group of the overview stays closed, here and after a refresh. */
  var CLOSED = "agentboard.closedGroups";
  function closed() {
    try { return JSON.parse(localStorage.getItem(CLOSED) || "{}"); } catch (e) { return {}; }
  }
  function applyClosed() {
    var state = closed();
    document.querySelectorAll("details[data-group-key]").forEach(function (group) {
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
  document.addEventListener("DOMContentLoaded", applyClosed);
  document.addEventListener("htmx:afterSwap", applyClosed);

  /* The overview's filter form applies itself as soon as a choice changes, and puts only the
     filters chosen in the address ("?person=ben", not "?project=&person=ben"). */
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("form[data-autosubmit]");
    if (form) form.requestSubmit();
  });
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
})();
