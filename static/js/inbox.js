/* Agentboard inbox: keyboard (j/k move, a allow, A always, d deny, D deny and stop, x select,
   Enter open), selecting identical requests to answer together, and refusals shown in place.
   All markup comes from the server; this only moves focus, toggles state and clicks buttons. */
(function () {
  "use strict";

  function region() { return document.querySelector("[data-inbox]"); }
  function items() { return Array.prototype.slice.call(document.querySelectorAll("[data-inbox-item]")); }
  var keys = window.agentboardKeys;

  /* The current item survives the list being re-rendered (live updates, decisions): when it
     is gone, the next one still listed takes its place, as after a decision in plan review. */
  var currentId = null;
  var order = [];
  function current() { return currentId ? document.getElementById(currentId) : null; }
  function setCurrent(item, focus) {
    var list = items();
    list.forEach(function (other) { other.classList.toggle("is-current", other === item); });
    currentId = item ? item.id : null;
    order = list.map(function (other) { return other.id; });
    if (item && focus) { item.focus({ preventScroll: true }); item.scrollIntoView({ block: "nearest" }); }
  }
  function move(step) {
    var list = items();
    if (!list.length) return;
    var index = list.indexOf(current());
    var next = index === -1 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, index + step));
    setCurrent(list[next], true);
  }
  function restoreCurrent() {
    var list = items();
    if (!list.length) { currentId = null; order = []; return; }
    var item = current();
    if (!item) {
      var at = order.indexOf(currentId);
      var after = order.slice(at + 1).concat(order.slice(0, Math.max(at, 0)).reverse());
      var found = after.map(function (id) { return document.getElementById(id); }).filter(Boolean)[0];
      item = found || list[0];
    }
    var lost = !document.activeElement || document.activeElement === document.body;
    setCurrent(item, lost && currentId !== null);
  }

  /* Selection: only identical requests (same tool, same input) go together. */
  var selected = {};
  var selectedKey = null;
  function selectedIds() { return Object.keys(selected); }
  function syncSelection() {
    var boxes = Array.prototype.slice.call(document.querySelectorAll("[data-select]"));
    var listed = {};
    boxes.forEach(function (box) { listed[box.value] = true; });
    selectedIds().forEach(function (id) { if (!listed[id]) delete selected[id]; });
    if (!selectedIds().length) selectedKey = null;
    boxes.forEach(function (box) {
      var key = box.closest("[data-inbox-item]").dataset.identical;
      box.checked = !!selected[box.value];
      box.disabled = selectedKey !== null && key !== selectedKey;
      box.title = box.disabled ? "Only identical requests can be answered together" : "";
    });
    var form = document.querySelector("[data-bulk-form]");
    if (!form) return;
    var count = selectedIds().length;
    form.hidden = count === 0;
    form.querySelector("[data-bulk-count]").textContent =
      count + " identical request" + (count === 1 ? "" : "s") + " selected";
  }
  function select(box, on) {
    var key = box.closest("[data-inbox-item]").dataset.identical;
    if (on) {
      if (selectedKey !== null && selectedKey !== key) return;
      selectedKey = key;
      selected[box.value] = true;
    } else {
      delete selected[box.value];
    }
    syncSelection();
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("[data-select]")) select(event.target, event.target.checked);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-select-identical]");
    if (!button) return;
    var key = button.closest("[data-inbox-item]").dataset.identical;
    selected = {};
    selectedKey = key;
    items().forEach(function (item) {
      var box = item.dataset.identical === key && item.querySelector("[data-select]");
      if (box) selected[box.value] = true;
    });
    syncSelection();
  });

  /* Deny needs a message for the model, Always a choice of what to remember: the first press
     opens the item's details there, the second one sends. */
  function openDetails(item, focusSelector, hintSelector) {
    var details = item.querySelector("[data-details]");
    if (details) details.open = true;
    var hint = item.querySelector(hintSelector);
    if (hint) hint.hidden = false;
    var field = item.querySelector(focusSelector);
    if (field) field.focus();
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-request-form] button[type=submit]");
    if (!button) return;
    var item = button.closest("[data-inbox-item]");
    if (button.hasAttribute("data-needs-message")) {
      if (!item.querySelector("textarea[name=message]").value.trim()) {
        event.preventDefault();
        openDetails(item, "textarea[name=message]", "[data-message-hint]");
      }
    } else if (button.hasAttribute("data-needs-remember") && !item.dataset.rememberShown) {
      event.preventDefault();
      item.dataset.rememberShown = "1";
      openDetails(item, "[data-remember] input[type=radio]:checked", "[data-remember-hint]");
    }
  });

  function bulk(key) {
    var form = document.querySelector("[data-bulk-form]");
    var action = { a: "allow", d: "deny", D: "stop" }[key];
    if (!form || !action) return false;
    var message = form.querySelector("input[name=message]");
    if (action === "deny" && !message.value.trim()) { message.focus(); return true; }
    form.querySelector('button[value="' + action + '"]').click();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (!region()) return;
    if (event.key === "Escape" && keys.typing(event.target)) { event.target.blur(); return; }
    if (keys.ignored(event)) return;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      move(event.key === "j" ? 1 : -1);
      return;
    }
    if (selectedIds().length && "adD".indexOf(event.key) !== -1) {
      event.preventDefault();
      bulk(event.key);
      return;
    }
    var item = current();
    if (!item) return;
    if (event.key === "x") {
      var box = item.querySelector("[data-select]");
      if (box && !box.disabled) { event.preventDefault(); select(box, !box.checked); }
      return;
    }
    if (event.key === "Enter" || event.key === "o") {
      var link = item.querySelector("[data-open]");
      var details = item.querySelector("[data-details]");
      if (link) { event.preventDefault(); window.location.href = link.href; }
      else if (details) { event.preventDefault(); details.open = !details.open; }
      return;
    }
    var button = item.querySelector('[data-shortcut="' + event.key + '"]');
    if (!button) return;
    event.preventDefault();
    button.click();
  });

  /* A refusal (someone was quicker, not allowed, a message missing) comes back as the list
     with the sentence on top and its status: show it rather than drop it. */
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if ([400, 403, 404, 409, 422].indexOf(status) === -1) return;
    if (!event.detail.elt.closest || !event.detail.elt.closest("[data-inbox]")) return;
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  });

  /* Messages being typed survive the list being re-rendered by a live update (another agent's
     request arriving must not wipe a reviewer's half-written message), and so does the focus. */
  var drafts = {};
  var typingIn = null;
  function draftable(field) {
    return field && field.id && field.closest && field.closest("#inbox-list") &&
      field.matches("textarea, input[name=message]");
  }
  document.addEventListener("input", function (event) {
    if (draftable(event.target)) drafts[event.target.id] = event.target.value;
  });
  document.addEventListener("focusin", function (event) {
    typingIn = draftable(event.target) ? event.target.id : null;
  });
  document.addEventListener("focusout", function (event) {
    // Left on purpose (Escape, a click elsewhere), not removed by a re-render.
    if (event.target.id === typingIn && event.target.isConnected) typingIn = null;
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    // Sent: what was typed for the answered request or selection is done with.
    if (!event.detail.successful || !event.detail.elt.closest) return;
    var form = event.detail.elt.closest("form");
    if (!form) return;
    Array.prototype.forEach.call(form.querySelectorAll("textarea, input[name=message]"), function (field) {
      delete drafts[field.id];
    });
    typingIn = null;
  });
  function restoreDrafts() {
    Object.keys(drafts).forEach(function (id) {
      var field = document.getElementById(id);
      if (!field) { delete drafts[id]; return; }
      if (!field.value) field.value = drafts[id];
    });
    var field = typingIn && document.getElementById(typingIn);
    if (field && (!document.activeElement || document.activeElement === document.body)) {
      field.focus({ preventScroll: true });
      field.setSelectionRange(field.value.length, field.value.length);
    }
  }

  function listSwapped(event) {
    var target = event.detail && event.detail.target ? event.detail.target : event.target;
    if (!region() || !target) return;
    if (target.id === "inbox-list" || (target.querySelector && target.querySelector("#inbox-list"))) {
      restoreCurrent();
      syncSelection();
      restoreDrafts();
    }
  }
  // Right after the swap, in the same task, so no keystroke lands in between.
  document.addEventListener("htmx:oobAfterSwap", listSwapped);
  document.addEventListener("htmx:afterSwap", listSwapped);
  document.addEventListener("htmx:load", listSwapped);
  document.addEventListener("DOMContentLoaded", function () {
    if (!region()) return;
    var list = items();
    if (list.length) setCurrent(list[0], false);
    syncSelection();
  });
})();
