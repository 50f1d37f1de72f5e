/* Steering from the board: Message (m), Pause (p) or Resume, Stop. Every button is a link to
   the box's own page, which works without JavaScript; here the box opens in a dialog instead,
   Resume is one click, and a refusal is said where it was asked. */
(function () {
  "use strict";

  var opener = null;
  var hovered = null;

  function dialog() { return document.getElementById("steer-dialog"); }

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["x-csrftoken"] || ""; } catch (e) { return ""; }
  }

  function openBox(link) {
    var box = dialog();
    if (!box || !window.htmx) { window.location.href = link.href; return; }
    opener = link;
    htmx.ajax("GET", link.href, { target: "#steer-dialog-body", swap: "innerHTML" }).then(function () {
      if (!box.open) box.showModal();
      var field = box.querySelector("textarea");
      if (field) field.focus();
    });
  }

  function closeBox() {
    var box = dialog();
    if (box && box.open) box.close();
  }

  function resume(link) {
    var error = link.closest(".steer-actions").querySelector("[data-steer-error]");
    fetch(link.dataset.steerResume, {
      method: "POST",
      credentials: "same-origin",
      headers: { "HX-Request": "true", "X-CSRFToken": csrfToken() }
    }).then(function (response) {
      return response.text().then(function (text) {
        if (response.ok) { if (error) error.textContent = ""; return; }
        if (error) error.textContent = text.length < 500 ? text : "Resume failed; try again.";
      });
    }).catch(function () {
      if (error) error.textContent = "Resume could not be sent; check the connection and try again.";
    });
  }

  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var link = event.target.closest("a[data-steer]");
    if (link) { event.preventDefault(); openBox(link); return; }
    var again = event.target.closest("a[data-steer-resume]");
    if (again) { event.preventDefault(); resume(again); return; }
    if (event.target.closest("#steer-dialog [data-steer-close]")) { event.preventDefault(); closeBox(); return; }
    /* A click on the backdrop, outside the box itself, closes it. */
    if (event.target === dialog()) closeBox();
  });

  var box = null;
  document.addEventListener("DOMContentLoaded", function () {
    box = dialog();
    if (box) {
      box.addEventListener("close", function () {
        document.getElementById("steer-dialog-body").innerHTML = "";
        if (opener && opener.isConnected) opener.focus();
        opener = null;
      });
    }
    revealSteering(document);
  });

  /* A refusal (403, 409, 422) is shown in the box, as its sentence. */
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && (target.id === "steer-result" || target.id === "steer-count") && event.detail.xhr.status >= 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  /* Sent: the box says so, the card says "queued" by itself; Cancel becomes Close. */
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target.closest && event.target.closest("[data-steer-form]");
    if (!form || event.target !== form || !event.detail.successful) return;
    var send = form.querySelector("button[type=submit]");
    if (send) send.disabled = true;
    var close = form.querySelector("[data-steer-close]");
    if (close) { close.textContent = "Close"; close.focus(); }
  });

  /* Keys: m for Message, p for Pause or Resume, on the card or row under the pointer or with
     the focus, else the first on the page (the main agent's card). */
  document.addEventListener("mouseover", function (event) {
    var place = event.target.closest && event.target.closest(".card, .session-row, .attention-item");
    if (place) hovered = place;
  });
  function visible(el) { return !!el && el.offsetParent !== null; }
  function actionsFor(place) {
    var found = place && place.querySelector(".steer-actions");
    return visible(found) ? found : null;
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "m" && event.key !== "p") return;
    if (window.agentboardKeys.ignored(event)) return;
    var focused = document.activeElement && document.activeElement.closest
      ? document.activeElement.closest(".card, .session-row, .attention-item") : null;
    var actions = actionsFor(focused) || actionsFor(hovered && hovered.isConnected ? hovered : null);
    if (!actions) {
      actions = Array.prototype.find.call(document.querySelectorAll("#cards .steer-actions, #session-list .steer-actions"), visible);
    }
    if (!actions) return;
    var link = event.key === "m"
      ? actions.querySelector("a[data-steer=message]")
      : actions.querySelector("a[data-steer=pause], a[data-steer-resume]");
    if (!link) return;
    event.preventDefault();
    if (link.hasAttribute("data-steer-resume")) resume(link); else openBox(link);
  });

  /* A row sent live to every viewer carries its buttons hidden: shown here to those who may
     steer its session (its owner, and reviewers of its team or project), as the server
     decides for the rows of the page itself. */
  function mayAct(row) {
    var list = row.closest("[data-audience]");
    if (!list) return false;
    var audience = list.dataset.audience;
    if (audience === "all" || audience === row.dataset.owner) return true;
    if (row.dataset.project && (list.dataset.named || "").split(" ").indexOf(row.dataset.project) >= 0) return true;
    var team = row.dataset.team || "";
    if (!team) return list.dataset.reviewsOpen === "true";
    return (list.dataset.reviews || "").split(" ").indexOf(team) >= 0;
  }
  function revealSteering(root) {
    var checks = root.querySelectorAll ? Array.prototype.slice.call(root.querySelectorAll("[data-steer-check]")) : [];
    checks.forEach(function (actions) {
      var row = actions.closest(".session-row");
      if (row && mayAct(row)) actions.hidden = false;
    });
  }
  document.addEventListener("htmx:load", function (event) { revealSteering(event.target.parentElement || document); });
})();
