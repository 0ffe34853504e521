// The arena's only script: streams both answers of a battle into their panes (server-sent events, written with
// textContent: model text never becomes markup), opens voting once both have finished, and votes by key.
"use strict";
(function () {
  var battle = document.getElementById("battle");
  if (!battle) { return; }
  var panes = [document.getElementById("pane-1"), document.getElementById("pane-2")];
  var buttons = ["1", "2", "3", "4"].map(function (k) { return document.getElementById("vote-" + k); });
  var note = document.getElementById("vote-note");

  function settle() {
    var states = panes.map(function (p) { return p.dataset.state; });
    if (states.indexOf("failed") >= 0) {
      document.getElementById("failed").hidden = false;
      buttons.forEach(function (b) { b.disabled = true; });
      note.textContent = "This battle failed and is not counted.";
      return;
    }
    if (states[0] === "done" && states[1] === "done") {
      buttons.forEach(function (b) { b.disabled = false; });
      battle.dataset.ready = "1";
      note.textContent = "Vote with the buttons or the keys 1/A, 2/B, 3/T, 4/X.";
    }
  }

  panes.forEach(function (pane, i) {
    var text = document.getElementById("text-" + (i + 1));
    var state = document.getElementById("state-" + (i + 1));
    var source = new EventSource(pane.dataset.src);
    pane.dataset.state = "streaming";
    state.textContent = "writing…";
    source.addEventListener("delta", function (e) {
      text.textContent += JSON.parse(e.data);
    });
    source.addEventListener("done", function () {
      source.close();
      pane.dataset.state = "done";
      state.textContent = "finished";
      settle();
    });
    source.addEventListener("failed", function (e) {
      source.close();
      pane.dataset.state = "failed";
      state.textContent = "failed (" + JSON.parse(e.data) + ")";
      pane.classList.add("failed");
      settle();
    });
    source.onerror = function () {
      if (pane.dataset.state === "streaming") { state.textContent = "reconnecting…"; }
    };
  });

  var keys = { "1": 0, "a": 0, "2": 1, "b": 1, "3": 2, "t": 2, "4": 3, "x": 3 };
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" && e.target.type === "text" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) {
      return;
    }
    var k = keys[e.key.toLowerCase()];
    if (k === undefined || buttons[k].disabled) { return; }
    e.preventDefault();
    buttons[k].click();
  });
  document.getElementById("vote-form").addEventListener("submit", function (e) {
    if (!e.submitter || e.submitter.disabled) { e.preventDefault(); }
  });
})();
