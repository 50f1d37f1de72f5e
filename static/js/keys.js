/* Keys every page shares: ? shows the keys of this page (listed by the server in the
   #key-help dialog), / goes to the search box, u undoes the last decision still in its undo
   window, and j / k / Enter walk the overview's session rows. `agentboardKeys.ignored` is the
   one rule for every page's keys (the inbox, plan review, steering): never while typing, with
   a modifier held, or with a dialog open. */
(function () {
  "use strict";

  function typing(target) {
    return target.closest && target.closest("input, textarea, select, [contenteditable]");
  }
  function ignored(event) {
    return event.ctrlKey || event.metaKey || event.altKey || !!typing(event.target) ||
      !!document.querySelector("dialog[open]");
  }
  window.agentboardKeys = { ignored: ignored, typing: typing };

  function shown(el) { return el.offsetParent !== null; }

  /* The decision staged last sends last: its Undo is the one with the latest send time. */
  function lastUndo() {
    var found = null;
    var latest = -Infinity;
    document.querySelectorAll("[data-undo]").forEach(function (button) {
      if (!shown(button)) return;
      var staged = button.closest("[data-staged]");
      var time = staged && staged.querySelector("time[data-sends-at]");
      var at = time ? Date.parse(time.getAttribute("datetime")) : 0;
      if (at >= latest) { latest = at; found = button; }
    });
    return found;
  }

  /* The overview's rows, what waits on the lead first (the server and agentboard.js order
     them); the current one keeps its place when a live update renders it again. */
  var currentRow = null;
  function rows() {
    return Array.prototype.filter.call(document.querySelectorAll(".session-row"), function (row) {
      return !row.hidden && shown(row);
    });
  }
  function rowKeys() {
    return !!document.getElementById("session-list") || !!document.querySelector(".session-row");
  }
  function selectRow(row, focus) {
    document.querySelectorAll(".session-row.is-current").forEach(function (other) {
      if (other !== row) other.classList.remove("is-current");
    });
    row.classList.add("is-current");
    currentRow = row.id;
    var link = row.querySelector(".session-link");
    if (link && focus) link.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }
  function moveRow(step) {
    var list = rows();
    if (!list.length) return;
    var focused = document.activeElement && document.activeElement.closest
      ? document.activeElement.closest(".session-row") : null;
    var index = list.indexOf(focused);
    if (index === -1) index = list.indexOf(document.getElementById(currentRow));
    var next = index === -1 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, index + step));
    selectRow(list[next], true);
  }
  document.addEventListener("htmx:load", function (event) {
    var row = event.target;
    if (!currentRow || row.id !== currentRow) return;
    var lost = !document.activeElement || document.activeElement === document.body;
    selectRow(row, lost);
  });

  function toggleHelp() {
    var help = document.getElementById("key-help");
    if (!help) return false;
    if (help.open) help.close(); else help.showModal();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "?" && !event.ctrlKey && !event.metaKey && !event.altKey && !typing(event.target)) {
      var help = document.getElementById("key-help");
      var other = document.querySelector("dialog[open]");
      if (other && other !== help) return;
      if (toggleHelp()) event.preventDefault();
      return;
    }
    if (ignored(event)) return;
    if (event.key === "/") {
      var box = document.getElementById("search-q") || document.getElementById("header-search");
      if (!box) return;
      event.preventDefault();
      box.focus();
      box.select();
      return;
    }
    if (event.key === "u") {
      var undo = lastUndo();
      if (undo) { event.preventDefault(); undo.click(); }
      return;
    }
    if (!rowKeys()) return;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      moveRow(event.key === "j" ? 1 : -1);
      return;
    }
    if (event.key === "Enter" && (!document.activeElement || document.activeElement === document.body)) {
      var row = currentRow && document.getElementById(currentRow);
      var link = row && shown(row) ? row.querySelector(".session-link") : null;
      if (link) { event.preventDefault(); window.location.href = link.href; }
    }
  });
})();
