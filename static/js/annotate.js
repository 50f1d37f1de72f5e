/* Plan annotations on the review page: select words of the plan, then comment on them (or ask
   for them to be removed or replaced). The form and the list come from the server; this fills
   the form from the selection and marks the annotated words in the plan. */
(function () {
  "use strict";

  function plan() { return document.querySelector(".plan-body"); }
  function form() { return document.querySelector("[data-annotation-form]"); }
  function collapse(text) { return text.replace(/\s+/g, " ").trim(); }

  /* The plan's text nodes as one string, whitespace collapsed as the server does, with a map
     from each character back to its node and offset, to turn a quote into a Range. */
  function textMap(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var text = "", map = [], space = true, node;
    while ((node = walker.nextNode())) {
      var value = node.nodeValue;
      for (var i = 0; i < value.length; i++) {
        if (/\s/.test(value[i])) {
          if (space) continue;
          space = true;
          text += " ";
        } else {
          space = false;
          text += value[i];
        }
        map.push([node, i]);
      }
    }
    return { text: text, map: map };
  }
  function rangeOf(quote, mapped) {
    var at = mapped.text.indexOf(collapse(quote));
    if (at === -1 || !quote) return null;
    var end = at + collapse(quote).length - 1;
    var range = document.createRange();
    range.setStart(mapped.map[at][0], mapped.map[at][1]);
    range.setEnd(mapped.map[end][0], mapped.map[end][1] + 1);
    return range;
  }

  /* Annotated words are marked with the CSS Custom Highlight API: no change to the plan's
     markup. Browsers without it still list every comment beside the plan. */
  function highlightAll() {
    var body = plan();
    if (!body || !window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    var mapped = textMap(body);
    var kinds = { comment: new Highlight(), "delete": new Highlight(), replace: new Highlight() };
    document.querySelectorAll("#annotations .annotation[data-quote]").forEach(function (item) {
      var range = rangeOf(item.dataset.quote, mapped);
      if (range && kinds[item.dataset.kind]) kinds[item.dataset.kind].add(range);
    });
    CSS.highlights.set("annotation-comment", kinds.comment);
    CSS.highlights.set("annotation-delete", kinds["delete"]);
    CSS.highlights.set("annotation-replace", kinds.replace);
  }
  function focusQuote(item) {
    var body = plan();
    if (!body || !window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    var range = item ? rangeOf(item.dataset.quote, textMap(body)) : null;
    CSS.highlights.set("annotation-focus", range ? new Highlight(range) : new Highlight());
  }
  document.addEventListener("mouseover", function (event) {
    var item = event.target.closest && event.target.closest("#annotations .annotation");
    focusQuote(item);
  });

  /* Selecting words of the plan fills the form and offers a button beside the selection. */
  var popup = null;
  function selectionInPlan() {
    var body = plan();
    var selection = window.getSelection();
    if (!body || !body.hasAttribute("data-annotatable") || !selection || selection.isCollapsed) return null;
    var range = selection.getRangeAt(0);
    if (!body.contains(range.commonAncestorContainer)) return null;
    var text = collapse(selection.toString());
    return text ? { text: text, range: range } : null;
  }
  function showPopup() {
    popup = popup || document.querySelector("[data-annotate-popup]");
    if (!popup) return;
    var selected = selectionInPlan();
    if (!selected) { popup.hidden = true; return; }
    var current = form();
    if (current && !current.elements.annotation.value) current.elements.quote.value = selected.text;
    var box = selected.range.getBoundingClientRect();
    popup.hidden = false;
    /* CSSOM, not a style attribute: allowed by the Content-Security-Policy. */
    popup.style.top = Math.round(window.scrollY + box.bottom + 6) + "px";
    popup.style.left = Math.round(Math.max(8, Math.min(window.scrollX + box.left, window.scrollX + document.documentElement.clientWidth - popup.offsetWidth - 8))) + "px";
  }
  document.addEventListener("mouseup", function () { setTimeout(showPopup, 0); });
  document.addEventListener("keyup", function (event) { if (event.shiftKey) showPopup(); });
  document.addEventListener("selectionchange", function () {
    if (popup && !selectionInPlan()) popup.hidden = true;
  });
  document.addEventListener("touchend", function () { setTimeout(showPopup, 300); });

  function resetForm(current) {
    current.reset();
    current.elements.annotation.value = "";
    var title = current.querySelector("[data-annotation-form-title]");
    if (title) title.textContent = "New comment";
    var error = current.querySelector("[data-annotation-error]");
    if (error) error.hidden = true;
    showReplacement(current);
  }
  function showReplacement(current) {
    var field = current.querySelector("[data-replacement-field]");
    if (field) field.hidden = current.elements.kind.value !== "replace";
  }
  document.addEventListener("change", function (event) {
    var current = event.target.closest("[data-annotation-form]");
    if (current && event.target.name === "kind") showReplacement(current);
  });
  document.addEventListener("click", function (event) {
    var current = form();
    if (event.target.closest("[data-annotate-popup]") && current) {
      popup.hidden = true;
      current.scrollIntoView({ block: "nearest" });
      current.elements.comment.focus();
      return;
    }
    var edit = event.target.closest("[data-annotation-edit]");
    if (edit && current) {
      var item = edit.closest(".annotation");
      current.elements.annotation.value = edit.dataset.annotationEdit;
      current.elements.quote.value = item.dataset.quote;
      current.querySelector('input[name=kind][value="' + item.dataset.kind + '"]').checked = true;
      current.elements.comment.value = edit.dataset.comment;
      current.elements.replacement.value = edit.dataset.replacement;
      current.querySelector("[data-annotation-form-title]").textContent = "Edit comment";
      showReplacement(current);
      current.scrollIntoView({ block: "nearest" });
      current.elements.comment.focus();
      return;
    }
    if (event.target.closest("[data-annotation-cancel]") && current) resetForm(current);
  });

  /* htmx: a saved comment clears the form; a refusal says why, in the form. */
  document.addEventListener("htmx:afterRequest", function (event) {
    var current = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("[data-annotation-form]");
    var fromList = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("#annotations");
    if (!current && !fromList) return;
    current = current || form();
    if (!current) return;
    var error = current.querySelector("[data-annotation-error]");
    if (event.detail.successful) {
      if (event.detail.elt.closest("[data-annotation-form]")) resetForm(current);
    } else if (error) {
      error.textContent = event.detail.xhr.responseText || "The comment could not be saved; try again.";
      error.hidden = false;
    }
  });

  document.addEventListener("htmx:load", function (event) {
    if (event.target.id === "annotations" || (event.target.querySelector && event.target.querySelector("#annotations"))) highlightAll();
  });
  document.addEventListener("DOMContentLoaded", function () {
    var current = form();
    if (current) showReplacement(current);
    highlightAll();
  });
})();
