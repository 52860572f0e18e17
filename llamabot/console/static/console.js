// llamabot console: live updates of a run page over server-sent events. Plain JS, no build step, no CDN.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || live.dataset.finished === "yes" || !window.EventSource) return;
  var runId = live.dataset.run;
  var base = "/runs/" + encodeURIComponent(runId);

  function openSpans() {
    var open = {};
    live.querySelectorAll("details.span[open]").forEach(function (d) { open[d.dataset.span] = true; });
    return open;
  }

  function refresh() {
    return fetch(base + "/live", { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("live view: HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      var next = document.createElement("div");
      next.innerHTML = html;  // server-rendered, every value escaped there
      var wasOpen = openSpans();
      ["summary", "decisions", "trace"].forEach(function (id) {
        var old = document.getElementById(id), fresh = next.querySelector("#" + id);
        if (old && fresh) old.replaceWith(fresh);
        else if (fresh) live.appendChild(fresh);
        else if (old) old.remove();
      });
      // the approval form is replaced only when the run waits for another approval (or none): never under the
      // hands of someone editing it
      var oldForm = document.getElementById("approval"), newForm = next.querySelector("#approval");
      if (oldForm && newForm && oldForm.dataset.request !== newForm.dataset.request) oldForm.replaceWith(newForm);
      live.querySelectorAll("details.span").forEach(function (d) { if (wasOpen[d.dataset.span]) d.open = true; });
    });
  }

  var source = new EventSource(base + "/events");
  source.addEventListener("change", function () { refresh().catch(function (e) { console.warn(e); }); });
  source.addEventListener("end", function () {
    source.close();
    live.dataset.finished = "yes";
    refresh().catch(function (e) { console.warn(e); });
  });
})();
