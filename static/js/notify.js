/* Agentboard notifications in the browser: desktop notifications while a page is open, and
   Web Push for this device. Nothing asks for permission on load: only the buttons in the
   settings do. All text shown comes from the server as plain text. */
(function () {
  "use strict";

  var NOTIFY = "agentboard.notify";
  var SEEN = "agentboard.notified";
  var KEEP = 500;

  function notifyOn() {
    try { return localStorage.getItem(NOTIFY) === "on" && Notification.permission === "granted"; } catch (e) { return false; }
  }

  /* The toggle in the settings. */
  function showToggle() {
    var button = document.querySelector("[data-notify-toggle]");
    if (!button || !("Notification" in window)) return;
    var unsupported = document.querySelector("[data-notify-unsupported]");
    if (unsupported) unsupported.hidden = true;
    button.hidden = false;
    // The button says what it does; what holds now is said beside it.
    var on = notifyOn();
    button.textContent = on ? "Turn off desktop notifications" : "Turn on desktop notifications";
    var state = document.querySelector("[data-notify-state]");
    if (!state) return;
    state.hidden = false;
    state.dataset.on = String(on);
    state.textContent = on ? "On in this browser."
      : Notification.permission === "denied" ? "Off: this browser blocks notifications from Agentboard (see its site settings)."
      : "Off in this browser.";
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-notify-toggle]");
    if (!button) return;
    if (notifyOn()) {
      try { localStorage.removeItem(NOTIFY); } catch (e) { /* not remembered */ }
      showToggle();
      return;
    }
    Notification.requestPermission().then(function (permission) {
      if (permission === "granted") {
        try { localStorage.setItem(NOTIFY, "on"); } catch (e) { /* not remembered */ }
        check(false);
      }
      showToggle();
    });
  });

  /* What was already shown (or already waiting when a page opened), shared by every tab. */
  function seen() {
    try { return JSON.parse(localStorage.getItem(SEEN) || "{}") || {}; } catch (e) { return {}; }
  }
  function remember(keys) {
    var all = seen();
    var now = Date.now();
    keys.forEach(function (key) { all[key] = now; });
    var sorted = Object.keys(all).sort(function (a, b) { return all[b] - all[a]; });
    var kept = {};
    sorted.slice(0, KEEP).forEach(function (key) { kept[key] = all[key]; });
    try { localStorage.setItem(SEEN, JSON.stringify(kept)); } catch (e) { /* not remembered */ }
  }

  /* One open tab shows the notifications: the one holding the lock (the first opened; when it
     closes, the next one takes over). Without Web Locks every tab shows them.
     What waits when the first tab opens was not news: it is remembered, not shown. A tab
     opened (or reloaded, as after a decision) beside the one that shows them remembers
     nothing: the other tab already knows what it showed, and an item that arrives while this
     one loads is news it must show. A tab that takes over shows what nobody showed yet. */
  var LOCK = "agentboard.notifier";
  var leading = !("locks" in navigator);
  function hold() { return new Promise(function () { /* held while this page is open */ }); }
  function lead() {
    if (!("locks" in navigator)) { check(false); return; }
    navigator.locks.request(LOCK, { ifAvailable: true }, function (lock) {
      if (lock) { leading = true; check(false); return hold(); }
      navigator.locks.request(LOCK, function () { leading = true; check(true); return hold(); });
      return null;
    });
  }

  var checking = false;
  var again = false;
  var recheck = null;
  /* What a project asks its own reviewers about first reaches the others later, with nothing
     changing on the page then: the list says when to ask again. */
  function askAgainIn(seconds) {
    if (recheck) { clearTimeout(recheck); recheck = null; }
    if (typeof seconds !== "number") return;
    recheck = setTimeout(function () { recheck = null; check(true); }, Math.min(seconds * 1000 + 250, 2147483647));
  }
  function check(announce) {
    if (!notifyOn() || !document.getElementById("plans-waiting")) return;
    // Another tab is the one that shows them (and remembers what it showed).
    if (announce && !leading) return;
    if (checking) { again = true; return; }
    checking = true;
    fetch("/settings/notifications/waiting.json", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : { items: [] }; })
      .then(function (data) {
        askAgainIn(data.later_in);
        data.items.forEach(function (item) {
          // Read again for each item: a tab that showed it may have closed meanwhile.
          if (seen()[item.key]) return;
          remember([item.key]);
          if (!announce) return;
          // The same tag as the push message of the same item: never two on one screen.
          var note = new Notification(item.title, { body: item.body, tag: item.key });
          note.onclick = function () { window.focus(); window.location.href = item.url; note.close(); };
        });
      })
      .catch(function () { /* the next change tries again */ })
      .then(function () {
        checking = false;
        if (again) { again = false; check(true); }
      });
  }

  /* The header's count is re-rendered by the live socket whenever what waits on the user
     changes: a new item shows up in the list then. */
  document.addEventListener("htmx:load", function (event) {
    if (event.target.id === "plans-waiting") check(true);
  });

  /* Web Push for this device. */
  function keyBytes(base64) {
    var padded = (base64 + "===".slice((base64.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(padded);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }
  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["x-csrftoken"]; } catch (e) { return ""; }
  }
  function pushSupported() {
    return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
  }
  function setupPush() {
    var section = document.querySelector("[data-push]");
    if (!section || !pushSupported()) return;
    var form = section.querySelector("[data-push-form]");
    var status = section.querySelector("[data-push-status]");
    form.hidden = false;
    status.textContent = "";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var name = form.querySelector("input[name=name]").value;
      status.textContent = "Asking this browser…";
      Notification.requestPermission().then(function (permission) {
        if (permission !== "granted") throw new Error("Notifications are blocked for Agentboard in this browser's settings.");
        return navigator.serviceWorker.register("/sw.js", { scope: "/" });
      }).then(function () {
        return navigator.serviceWorker.ready;
      }).then(function (registration) {
        return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(section.dataset.vapidKey) });
      }).then(function (subscription) {
        var body = subscription.toJSON();
        body.name = name;
        return fetch(section.dataset.deviceUrl, {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
          body: JSON.stringify(body),
        });
      }).then(function (response) {
        if (!response.ok) return response.json().then(function (problem) { throw new Error(problem.detail); });
        window.location.reload();
      }).catch(function (error) {
        status.textContent = error.message || "Push could not be turned on here.";
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    showToggle();
    setupPush();
    lead();
    // Installable app: the worker caches nothing, registering it asks nothing.
    if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(function () {});
  });
})();
