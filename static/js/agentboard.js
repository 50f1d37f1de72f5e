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

  /* What an agent is doing now ticks by the second; "Thinking" between two steps turns into
     "Idle" when nothing happened for a while (data-idle-at, from the server). */
  function refreshNow(root) {
    (root.querySelectorAll ? root.querySelectorAll("[data-now]") : []).forEach(function (el) {
      var idleAt = el.getAttribute("data-idle-at");
      if (idleAt && el.getAttribute("data-now") === "thinking" && Date.now() >= new Date(idleAt).getTime()) {
        el.setAttribute("data-now", "idle");
        el.className = el.className.replace("is-thinking", "is-idle");
        var word = el.querySelector(".now-word");
        if (word) word.textContent = "Idle";
      }
      refreshTimes(el);
    });
  }
  setInterval(function () { refreshNow(document); }, 1000);

  /* A decision in its undo window: "sends in 0:04", counted down to the second. */
  setInterval(function () {
    document.querySelectorAll("time[data-sends-at]").forEach(function (el) {
      var left = Math.max(0, Math.ceil((new Date(el.getAttribute("datetime")).getTime() - Date.now()) / 1000));
      el.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
    });
  }, 250);

  /* Overview filters: running (with what waits on me) / waiting on me / paused / all, plus
     free text.
     The chip is remembered in this browser, the text for this tab. */
  var FILTER = "agentboard.filter";
  var SEARCH = "agentboard.search";
  var filter = "active";
  try { filter = localStorage.getItem(FILTER) || "active"; } catch (e) { /* not remembered */ }
  /* A state in the address (?state=waiting, a bookmark) wins over the remembered one. */
  var stated = document.querySelector("[data-state-filter]");
  if (stated) filter = stated.dataset.stateFilter;
  function showFilter() {
    document.querySelectorAll(".chip[data-filter]").forEach(function (c) {
      c.setAttribute("aria-pressed", String(c.dataset.filter === filter));
    });
  }
  function applyFilters() {
    var search = document.getElementById("session-search");
    var text = search ? search.value.trim().toLowerCase() : "";
    var rows = document.querySelectorAll(".session-row");
    var listed = document.getElementById("session-list");
    var kind = listed ? listed.dataset.client : "";
    var shown = 0;
    var mineCount = 0;
    rows.forEach(function (row) {
      var waiting = waitsOnMe(row);
      if (waiting) mineCount += parseInt(row.dataset.waits || "0", 10);
      var show = filter === "all" || (filter === "active" && (row.dataset.active === "true" || waiting)) ||
        (filter === "waiting" && waiting) || (filter === "paused" && row.dataset.paused === "true");
      if (text && row.dataset.search.indexOf(text) === -1) show = false;
      // A row of another kind of agent, project, person or machine, arriving live on a page
      // filtered by it (?client=, ?project=, ?person=, ?machine=).
      if (kind && row.dataset.client !== kind) show = false;
      ["project", "person", "machine"].forEach(function (name) {
        var only = listed ? listed.dataset[name] : "";
        if (only && row.dataset[name] !== only) show = false;
      });
      row.hidden = !show;
      if (show) shown += 1;
    });
    var chipCount = document.querySelector("[data-waiting-chip-count]");
    if (chipCount) chipCount.textContent = mineCount ? " (" + mineCount + ")" : "";
    var list = document.getElementById("session-list");
    var empty = document.getElementById("filter-empty");
    if (list && empty) {
      var filtered = rows.length > 0 && shown === 0;
      empty.hidden = !filtered;
      list.classList.toggle("is-filtered-empty", filtered);
    }
  }
  function setFilter(value) {
    filter = value;
    try { localStorage.setItem(FILTER, value); } catch (e) { /* not remembered */ }
    /* The address says it too, so the view can be bookmarked or sent. */
    if (document.querySelector(".chip[data-filter]")) {
      var address = new URL(location.href);
      if (value === "active") address.searchParams.delete("state"); else address.searchParams.set("state", value);
      history.replaceState(history.state, "", address.pathname + address.search);
      var kept = document.querySelector(".overview-filters input[name=state]");
      if (!kept && value !== "active") {
        kept = document.createElement("input");
        kept.type = "hidden"; kept.name = "state";
        var form = document.querySelector(".overview-filters");
        if (form) form.appendChild(kept);
      }
      if (kept) { if (value === "active") kept.remove(); else kept.value = value; }
    }
    showFilter();
    applyFilters();
  }
  document.addEventListener("click", function (event) {
    var chip = event.target.closest(".chip[data-filter]");
    if (chip) { setFilter(chip.dataset.filter); return; }
    if (event.target.closest("[data-filter-reset]")) {
      var search = document.getElementById("session-search");
      if (search) { search.value = ""; try { sessionStorage.removeItem(SEARCH); } catch (e) { /* */ } }
      setFilter("all");
    }
  });
  document.addEventListener("input", function (event) {
    if (event.target.id !== "session-search") return;
    try { sessionStorage.setItem(SEARCH, event.target.value); } catch (e) { /* not remembered */ }
    applyFilters();
  });

  /* Overview order: what waits on me first, then running sessions, then ended ones. A row
     that changed group (a plan arrived, the session ended or came back) moves to the top of
     its group (the end, for what waits: oldest first); rows that stay in their group stay put. */
  /* A row waits on me when something in it waits on a person and I am who may answer it: an
     admin for every session; anyone else for their own, for the teams they review, for the
     projects that name them as reviewers, and (with the review permission) for sessions no
     team owns. The header counts alike. */
  function waitsOnMe(row) {
    if (row.dataset.waiting !== "true") return false;
    var list = row.closest("[data-audience]") || document.getElementById("session-list");
    var audience = list ? list.dataset.audience : "all";
    if (!audience || audience === "all" || audience === row.dataset.owner) return true;
    if (row.dataset.project && (list.dataset.named || "").split(" ").indexOf(row.dataset.project) >= 0) return true;
    var team = row.dataset.team || "";
    if (!team) return list.dataset.reviewsOpen === "true";
    return (list.dataset.reviews || "").split(" ").indexOf(team) >= 0;
  }
  function rank(row) {
    if (waitsOnMe(row)) return 0;
    return row.dataset.active === "true" ? 1 : 2;
  }
  function neighbour(row, step) {
    var el = step < 0 ? row.previousElementSibling : row.nextElementSibling;
    while (el && !el.classList.contains("session-row")) el = step < 0 ? el.previousElementSibling : el.nextElementSibling;
    return el;
  }
  function placeRow(row) {
    var list = row.parentElement;
    if (!list || list.id !== "session-list") return;
    var before = neighbour(row, -1), after = neighbour(row, 1), mine = rank(row);
    if ((!before || rank(before) <= mine) && (!after || rank(after) >= mine)) return;
    var rows = Array.prototype.filter.call(list.children, function (el) {
      return el !== row && el.classList.contains("session-row");
    });
    var anchor = null;
    for (var i = 0; i < rows.length; i++) {
      var r = rank(rows[i]);
      if (mine === 0 ? r > 0 : r >= mine) { anchor = rows[i]; break; }
    }
    list.insertBefore(row, anchor);
  }

  /* Motion only for change: after a live update, the items whose state changed (a todo
     started or finished, a row's progress or group) get a brief highlight, not the whole card. */
  var before = {};
  function changeKeys(el) {
    var keys = {};
    if (el.dataset && el.dataset.changeKey) keys[el.dataset.changeKey] = true;
    el.querySelectorAll("[data-change-key]").forEach(function (child) { keys[child.dataset.changeKey] = true; });
    return keys;
  }
  function flash(el) {
    el.classList.remove("flash");
    void el.offsetWidth;
    el.classList.add("flash");
  }
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id) before[target.id] = changeKeys(target);
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var el = event.target;
    var old = el.id && before[el.id];
    if (!old) return;
    delete before[el.id];
    var changed = [];
    if (el.dataset.changeKey && !old[el.dataset.changeKey]) changed.push(el);
    el.querySelectorAll("[data-change-key]").forEach(function (child) {
      if (!old[child.dataset.changeKey]) changed.push(child);
    });
    changed.forEach(flash);
  });
  document.addEventListener("animationend", function (event) {
    if (event.animationName === "flash") event.target.classList.remove("flash");
  });

  /* Continuation countdowns: "Resumes in 4:32", ticking every second until the server says
     what happened (the fragment is then re-rendered without it). */
  function clock(seconds) {
    var whole = Math.max(0, Math.ceil(seconds));
    var rest = whole % 60;
    return Math.floor(whole / 60) + ":" + (rest < 10 ? "0" : "") + rest;
  }
  function startCountdowns(root) {
    var found = root.querySelectorAll ? Array.prototype.slice.call(root.querySelectorAll("[data-countdown-seconds]")) : [];
    if (root.matches && root.matches("[data-countdown-seconds]")) found.push(root);
    found.forEach(function (toast) {
      if (toast.dataset.ticking) return;
      toast.dataset.ticking = "1";
      var due = Date.now() + parseFloat(toast.dataset.countdownSeconds) * 1000;
      var number = toast.querySelector(".countdown-number");
      function tick() {
        if (!toast.isConnected) return;
        number.textContent = clock((due - Date.now()) / 1000);
        if (Date.now() < due) setTimeout(tick, 250);
      }
      tick();
    });
  }

  /* A permission answered from the board's banner: the banner updates by itself when the
     answer is stored; a refusal is said in the banner. */
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target.closest && event.target.closest("[data-attention-form]");
    if (!form) return;
    var error = form.querySelector("[data-attention-error]");
    var xhr = event.detail.xhr;
    if (event.detail.successful) { error.hidden = true; return; }
    error.textContent = xhr && xhr.status && xhr.responseText && xhr.responseText.length < 500
      ? xhr.responseText : "The answer could not be sent; try again.";
    error.hidden = false;
  });

  /* Every piece of new content (page load and each out-of-band swap). */
  function updateTitle() {
    var waiting = document.getElementById("plans-waiting");
    var title = document.querySelector("title");
    if (!waiting || !title) return;
    /* The server counts only what this user can answer (see the header's context). */
    var count = parseInt(waiting.dataset.count || "0", 10);
    title.textContent = (count ? "(" + count + ") " : "") + title.dataset.baseTitle;
  }
  document.addEventListener("htmx:load", function (event) {
    var el = event.target;
    applyAll(el);
    refreshTimes(el);
    startCountdowns(el);
    if (el.classList && el.classList.contains("session-row")) placeRow(el);
    if (el.closest && el.closest("#session-list")) applyFilters();
    updateTitle();
  });
  document.addEventListener("DOMContentLoaded", function () {
    /* A page without a live region has no connection to show. */
    var connection = document.getElementById("connection");
    if (connection && !document.querySelector("[ws-connect]")) connection.hidden = true;
    /* On a phone the menu scrolls sideways: the page the lead is on shows in it. */
    var here = document.querySelector(".site-nav [aria-current=page]");
    if (here) {
      var nav = here.parentElement;
      var past = here.getBoundingClientRect().right - nav.getBoundingClientRect().right;
      if (past > 0) nav.scrollLeft += past + 28;
    }
    var search = document.getElementById("session-search");
    if (search) {
      try { search.value = sessionStorage.getItem(SEARCH) || ""; } catch (e) { /* not remembered */ }
    }
    showFilter();
    applyAll(document);
    refreshTimes(document);
    applyFilters();
  });
})();
