/* Agentboard page behaviour: connection indicator, card collapse memory, relative times,
   overview filters. All markup comes from the server; this only toggles state. */
(function () {
  "use strict";

  /* Connection indicator. The ws extension reconnects by itself; the server answers every
     (re)connect with a fresh snapshot, so we only tell the user what is going on. */
  var everOpened = false;
  function setConnection(state, text) {
    var el = document.getElementById("connection");
    if (!el) return;
    el.dataset.state = state;
    el.querySelector(".connection-text").textContent = text;
    document.body.classList.toggle("is-offline", state !== "live");
  }
  document.addEventListener("htmx:wsOpen", function () { everOpened = true; setConnection("live", "live"); });
  document.addEventListener("htmx:wsClose", function () {
    setConnection(everOpened ? "reconnecting" : "offline", everOpened ? "reconnecting…" : "offline");
  });
  document.addEventListener("htmx:wsError", function () { setConnection("reconnecting", "reconnecting…"); });

  /* Collapse state per card, remembered in this browser (the terminal's Ctrl+T). */
  var STORE = "agentboard.collapsed";
  function collapsed() {
    try { return JSON.parse(localStorage.getItem(STORE) || "{}"); } catch (e) { return {}; }
  }
  function applyCollapse(card) {
    var isCollapsed = !!collapsed()[card.dataset.collapseKey];
    card.classList.toggle("is-collapsed", isCollapsed);
    var button = card.querySelector(".collapse-toggle");
    if (button) {
      button.setAttribute("aria-expanded", String(!isCollapsed));
      var label = card.querySelector(".agent-label");
      button.setAttribute("aria-label", (isCollapsed ? "Expand" : "Collapse") + " the list of " + (label ? label.textContent : "this agent"));
    }
  }
  function applyAll(root) {
    (root.matches && root.matches("[data-collapse-key]") ? [root] : []).concat(
      Array.prototype.slice.call(root.querySelectorAll ? root.querySelectorAll("[data-collapse-key]") : [])
    ).forEach(applyCollapse);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".collapse-toggle");
    if (!button) return;
    var card = button.closest("[data-collapse-key]");
    var state = collapsed();
    if (state[card.dataset.collapseKey]) { delete state[card.dataset.collapseKey]; } else { state[card.dataset.collapseKey] = 1; }
    try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { /* private mode: not remembered */ }
    applyCollapse(card);
  });

  /* Times, exact in the title: data-relative reads "2 min ago", data-duration "4 min"
     (as in "waiting 4 min"), in the same steps as the server. */
  function elapsed(date) {
    var seconds = Math.max(0, Math.round((Date.now() - date.getTime()) / 1000));
    if (seconds < 60) return seconds + " s";
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + " min";
    var hours = Math.round(minutes / 60);
    if (hours < 48) return hours + " h";
    return Math.round(hours / 24) + " days";
  }
  function refreshTimes(root) {
    (root.querySelectorAll ? root.querySelectorAll("time[data-relative], time[data-duration]") : []).forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date)) return;
      if (el.hasAttribute("data-duration")) {
        el.textContent = elapsed(date);
      } else {
        el.textContent = Date.now() - date.getTime() < 10000 ? "now" : elapsed(date) + " ago";
      }
    });
  }
  setInterval(function () { refreshTimes(document); }, 10000);

  /* Overview filters: active / waiting on me / all, plus free text. */
  var filter = "active";
  function applyFilters() {
    var search = document.getElementById("session-search");
    var text = search ? search.value.trim().toLowerCase() : "";
    document.querySelectorAll(".session-row").forEach(function (row) {
      var show = filter === "all" || (filter === "active" && row.dataset.active === "true") ||
        (filter === "waiting" && row.dataset.waiting === "true");
      if (text && row.dataset.search.indexOf(text) === -1) show = false;
      row.hidden = !show;
    });
  }
  document.addEventListener("click", function (event) {
    var chip = event.target.closest(".chip[data-filter]");
    if (!chip) return;
    filter = chip.dataset.filter;
    document.querySelectorAll(".chip[data-filter]").forEach(function (c) { c.setAttribute("aria-pressed", String(c === chip)); });
    applyFilters();
  });
  document.addEventListener("input", function (event) { if (event.target.id === "session-search") applyFilters(); });

  /* Continuation countdowns: "Resuming in Ns…", ticking every second until the server says
     what happened (the card is then re-rendered without the toast). */
  function startCountdowns(root) {
    (root.querySelectorAll ? root.querySelectorAll("[data-countdown-seconds]") : []).forEach(function (toast) {
      var due = Date.now() + parseFloat(toast.dataset.countdownSeconds) * 1000;
      var number = toast.querySelector(".countdown-number");
      function tick() {
        if (!toast.isConnected) return;
        number.textContent = String(Math.max(0, Math.ceil((due - Date.now()) / 1000)));
        if (Date.now() < due) setTimeout(tick, 250);
      }
      tick();
    });
  }

  /* Every piece of new content (page load and each out-of-band swap). */
  document.addEventListener("htmx:load", function (event) {
    applyAll(event.target);
    refreshTimes(event.target);
    startCountdowns(event.target);
    if (event.target.closest && event.target.closest("#session-list")) applyFilters();
    var waiting = document.getElementById("plans-waiting");
    var title = document.querySelector("title");
    if (waiting && title) {
      var count = parseInt(waiting.dataset.count || "0", 10);
      title.textContent = (count ? "(" + count + ") " : "") + title.dataset.baseTitle;
    }
  });
  document.addEventListener("DOMContentLoaded", function () { applyAll(document); refreshTimes(document); applyFilters(); });
})();
