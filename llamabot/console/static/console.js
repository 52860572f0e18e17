// llamabot console: a span's details fetched when it is opened, and live updates of a run page over server-sent
// events. Plain JS, no build step, no CDN. Every fragment is HTML rendered (and escaped) by the server.
(function () {
  "use strict";

  function loadDetails(d) {
    var execution = d.closest(".execution"), page = document.getElementById("live");
    if (!d.open || d.dataset.loaded || !execution || !page) return;
    d.dataset.loaded = "yes";
    var src = "/runs/" + encodeURIComponent(page.dataset.run) + "/spans/" + encodeURIComponent(execution.dataset.trace) +
      "/" + d.dataset.span;
    fetch(src, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
      var holder = document.createElement("div");
      holder.innerHTML = html;
      var pre = holder.firstElementChild;
      if (pre) d.querySelector(":scope > summary").after(pre);
    }).catch(function () { delete d.dataset.loaded; });
  }

  document.addEventListener("toggle", function (e) {
    if (e.target.matches && e.target.matches("details.span")) loadDetails(e.target);
  }, true);
  document.addEventListener("submit", function (e) {
    var question = e.target.dataset && e.target.dataset.confirm;
    if (question && !window.confirm(question)) e.preventDefault();
  }, true);
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("details.span[open]").forEach(loadDetails);
  });

  var live = document.getElementById("live");
  if (!live || live.dataset.finished === "yes" || !window.EventSource) return;
  var base = "/runs/" + encodeURIComponent(live.dataset.run);

  function key(d) { return d.closest(".execution").dataset.trace + ":" + d.dataset.span; }

  function refresh() {
    return fetch(base + "/live" + (live.dataset.all === "yes" ? "?all=1" : ""), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("live view: HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      var next = document.createElement("div");
      next.innerHTML = html;
      var wasOpen = {};
      live.querySelectorAll("details.span[open]").forEach(function (d) { wasOpen[key(d)] = true; });
      ["summary", "decisions", "trace"].forEach(function (id) {
        var old = document.getElementById(id), fresh = next.querySelector("#" + id);
        if (old && fresh) old.replaceWith(fresh);
      });
      // the approval form is replaced only when the run waits for another approval (or none): never under the
      // hands of someone editing it
      var oldForm = document.getElementById("approval"), newForm = next.querySelector("#approval");
      if (oldForm && newForm && oldForm.dataset.request !== newForm.dataset.request) oldForm.replaceWith(newForm);
      live.querySelectorAll("details.span").forEach(function (d) {
        if (wasOpen[key(d)]) d.open = true;
        loadDetails(d);
      });
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
