/* Agentboard plan review: keyboard shortcuts on the queue and review pages (desktop
   notifications are in notify.js). All markup comes from the server. */
(function () {
  "use strict";

  /* Keyboard: a / e / r decide (e asks to confirm), j / k move between waiting plans, Esc
     leaves the text box (u, undo, is in keys.js: it works wherever an Undo is shown). */
  var keys = window.agentboardKeys;
  function pendingLinks() {
    return Array.prototype.slice.call(document.querySelectorAll("a[data-pending-plan]"));
  }
  function moveOnReview(step) {
    var region = document.querySelector("[data-plan-keys=review]");
    var links = pendingLinks();
    if (!links.length) return;
    var index = links.findIndex(function (a) { return a.dataset.pendingPlan === region.dataset.planPk; });
    var next = index === -1 ? (step > 0 ? 0 : links.length - 1) : index + step;
    if (next >= 0 && next < links.length) window.location.href = links[next].href;
  }
  function moveOnQueue(step) {
    var links = Array.prototype.slice.call(document.querySelectorAll(".queue-link"));
    if (!links.length) return;
    var index = links.indexOf(document.activeElement);
    var next = index === -1 ? 0 : Math.min(links.length - 1, Math.max(0, index + step));
    links[next].focus();
  }
  function feedbackMissing(form) {
    /* Comments on the plan alone are not enough: the agent reads the feedback box. */
    var text = form.querySelector("textarea");
    if (text.value.trim()) return false;
    form.querySelector("[data-feedback-hint]").hidden = false;
    text.focus();
    return true;
  }
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && keys.typing(event.target)) { event.target.blur(); return; }
    var region = document.querySelector("[data-plan-keys]");
    if (!region || keys.ignored(event)) return;
    var page = region.dataset.planKeys;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      (page === "review" ? moveOnReview : moveOnQueue)(event.key === "j" ? 1 : -1);
      return;
    }
    var form = document.querySelector("[data-decision-form]");
    if (!form || form.dataset.sent) return;
    if (form.closest(".decision-panel").querySelector("#staged-decision:not([hidden])")) return;
    var button = form.querySelector('[data-shortcut="' + event.key + '"]');
    if (!button) return;
    event.preventDefault();
    /* The audit log says a decision was made with the keyboard. */
    var via = form.querySelector("input[name=via]");
    if (via) via.value = "keyboard";
    button.click();
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-decision-form] button[value=reject]");
    if (button && feedbackMissing(button.form)) event.preventDefault();
    /* Approve with auto-accept asks first, in a dialog (Esc or Cancel closes it). */
    var asking = event.target.closest("[data-decision-form] [data-confirm]");
    if (asking) {
      event.preventDefault();
      document.getElementById(asking.dataset.confirm).showModal();
    }
    var cancel = event.target.closest("[data-confirm-cancel]");
    if (cancel) cancel.closest("dialog").close();
  });
  /* Revision N: what changed, marked in the plan or as the source diff (the links work
     without this too, through the server). */
  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-changes-view]");
    if (!link) return;
    event.preventDefault();
    var source = link.dataset.changesView === "source";
    document.getElementById("plan-body").hidden = source;
    document.getElementById("plan-source-diff").hidden = !source;
    document.querySelectorAll("[data-changes-view]").forEach(function (each) {
      if (each === link) { each.setAttribute("aria-current", "true"); } else { each.removeAttribute("aria-current"); }
    });
    var url = new URL(window.location.href);
    url.searchParams.set("changes", link.dataset.changesView);
    url.hash = "";
    window.history.replaceState(null, "", url);
  });
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("[data-decision-form]");
    if (!form) return;
    if (form.dataset.sent) { event.preventDefault(); return; }
    form.dataset.sent = "1";
  });
})();
