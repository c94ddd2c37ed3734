// SPDX-License-Identifier: Apache-2.0
// Live updates for the tocsin console: server-sent events carry the inner HTML of each
// section, rendered and escaped by the server. No framework, no build step; without
// this script the page still works (reload to refresh, forms post normally).
"use strict";
(function () {
  if (!window.EventSource) { return; }
  var toggle = document.getElementById("live-toggle");
  var state = document.getElementById("live-state");
  var paused = false;
  var last = {};
  function say(text) { state.textContent = text; }
  function replace(id, html) {
    var el = document.getElementById(id);
    if (!el || last[id] === html) { return; }
    last[id] = html;
    // Keep keyboard focus across the swap: find the same control (same accessible name).
    var active = document.activeElement;
    var label = active && el.contains(active) ? active.getAttribute("aria-label") : null;
    el.innerHTML = html;
    if (label) {
      var again = el.querySelector('[aria-label="' + CSS.escape(label) + '"]');
      if (again) { again.focus(); }
    }
  }
  var source = new EventSource("events");
  source.addEventListener("open", function () { say(paused ? "Paused" : "Live"); });
  source.addEventListener("error", function () {
    // CLOSED: the browser gave up (the session ended, or the console answered with
    // anything but a stream); otherwise it reconnects by itself.
    say(source.readyState === EventSource.CLOSED
      ? "Live updates stopped: reload the page (signed out, or the console stopped)"
      : "Reconnecting…");
  });
  source.addEventListener("update", function (event) {
    if (paused) { return; }
    var sections = JSON.parse(event.data);
    Object.keys(sections).forEach(function (id) { replace(id, sections[id]); });
    say("Live");
  });
  toggle.hidden = false;
  toggle.addEventListener("click", function () {
    paused = !paused;
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    toggle.textContent = paused ? "Resume live updates" : "Pause live updates";
    say(paused ? "Paused" : "Live");
  });
})();
