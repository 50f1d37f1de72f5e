/* The timeline page (its live refresh is `pages.js`'s, through data-live-refresh). */
(function () {
  "use strict";

  /* A running step grows while nobody writes: the axis ends now, so redraw now and then. */
  setInterval(function () {
    var timeline = document.getElementById("timeline");
    if (timeline && timeline.hasAttribute("data-live-refresh") && timeline.querySelector(".mark.is-running")) {
      window.agentboardRefreshParts();
    }
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
