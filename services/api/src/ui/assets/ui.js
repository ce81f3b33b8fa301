// Evident console: live refresh of the part of a page marked `data-live` (queue, sources).
// Re-fetches the same address with `fragment=1` every few seconds while the tab is visible
// and replaces that part. Hand-written, no dependencies. SPDX-License-Identifier: same as Evident.
(function () {
  "use strict";
  var live = document.querySelector("[data-live]");
  if (!live) return;
  var url = new URL(window.location.href);
  url.searchParams.set("fragment", "1");
  var busy = false;
  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(url.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) live.innerHTML = html; })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  window.setInterval(refresh, 3000);
})();
