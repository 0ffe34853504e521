// Keyboard-first task pages. Rows ([data-row]) hold one question each; a key matching an input's data-key
// (or data-alt) in the current row picks it and moves on; Enter submits; j/k move; f flags; n notes; p folds
// the persona; Esc leaves a text field. Every task page opens at the top (the persona first); the dock (the
// bar of choice controls and Submit held at the bottom of the window) stays in view. No framework, no build
// step.
(function () {
  "use strict";
  // A submit is answered with the next task page directly (one request per label). The address bar would
  // still show the POST's URL; put the page's own URL there, so a reload is a plain GET of the current
  // assignment (resume) instead of resending the form. (A resent form would store nothing anyway: submits
  // are idempotent per assignment.)
  const here = document.body && document.body.dataset.url;
  if (here && here !== window.location.pathname) window.history.replaceState(null, "", here);
  const form = document.querySelector("form.task");
  if (!form) return;
  // a task page opens at the top: never where the previous page (or a reload) was scrolled to
  if ("scrollRestoration" in window.history) window.history.scrollRestoration = "manual";
  const dock = form.querySelector(".dock");
  // rows scrolled into view stop above the dock, not behind it
  function padForDock() {
    if (dock) document.documentElement.style.scrollPaddingBottom = dock.offsetHeight + "px";
  }
  padForDock();
  window.addEventListener("resize", padForDock);
  const started = Date.now();
  const rows = Array.from(form.querySelectorAll("[data-row]"));
  let current = 0;

  function reveal(row) {
    if (dock && dock.contains(row)) {  // the dock is always in view: scroll within it only (it may scroll)
      const r = row.getBoundingClientRect(), d = dock.getBoundingClientRect();
      if (r.top < d.top) dock.scrollTop -= d.top - r.top;
      else if (r.bottom > d.bottom) dock.scrollTop += r.bottom - d.bottom;
      return;
    }
    row.scrollIntoView({ block: "nearest" });
  }

  function setRow(i, scroll) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach((r, k) => r.classList.toggle("current", k === current));
    if (scroll !== false) reveal(rows[current]);
  }

  function firstUnanswered() {
    for (let i = 0; i < rows.length; i++) {
      const radios = rows[i].querySelectorAll("input[type=radio][required]");
      if (radios.length && !rows[i].querySelector("input[type=radio]:checked")) return i;
    }
    return -1;
  }

  function keyed(row, key) {
    return row.querySelector('input[data-key="' + key + '"]') || row.querySelector('input[data-alt="' + key + '"]');
  }

  function pick(key) {
    if (!rows[current]) return false;
    let input = keyed(rows[current], key);
    if (!input) {  // focus moved elsewhere (the note, a link, Esc): the key goes to the first row that takes it
      const start = Math.max(0, firstUnanswered());
      const order = rows.slice(start).concat(rows.slice(0, start));
      const row = order.find((r) => keyed(r, key));
      if (!row) return false;
      setRow(rows.indexOf(row));
      input = keyed(row, key);
    }
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    if (current < rows.length - 1) setRow(current + 1);
    return true;
  }

  function isText(el) {
    return el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text"));
  }

  rows.forEach((r, i) => r.addEventListener("focusin", () => setRow(i)));
  rows.forEach((r, i) => r.addEventListener("click", () => setRow(i)));

  let sent = false;
  form.addEventListener("submit", (ev) => {
    if (sent) { ev.preventDefault(); return; }  // one label per click, however fast the keys
    sent = true;
    form.querySelector('input[name="elapsed_ms"]').value = String(Date.now() - started);
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
  });

  function submit() {
    const missing = firstUnanswered();
    if (missing >= 0) { setRow(missing); }
    if (form.reportValidity()) form.requestSubmit();
  }

  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.metaKey || (ev.ctrlKey && ev.key !== "Enter")) return;
    const target = ev.target;
    if (isText(target)) {
      // Esc leaves the field, and the keys go back to the first row still to answer
      if (ev.key === "Escape") { target.blur(); setRow(Math.max(0, firstUnanswered())); ev.preventDefault(); }
      else if (ev.key === "Enter" && (ev.ctrlKey || target.tagName === "INPUT")) { ev.preventDefault(); target.blur(); submit(); }
      return;
    }
    const key = ev.key;
    if (key === "Enter") { ev.preventDefault(); submit(); return; }
    if (key === "j" || key === "ArrowDown") { ev.preventDefault(); setRow(current + 1); return; }
    if (key === "k" || key === "ArrowUp") { ev.preventDefault(); setRow(current - 1); return; }
    if (pick(key)) { ev.preventDefault(); return; }
    if (key === "f") { const f = form.querySelector("#flag"); if (f) f.checked = !f.checked; ev.preventDefault(); return; }
    if (key === "n") {
      const note = rows[current] && rows[current].querySelector("[data-note]");
      (note || form.querySelector("#note")).focus(); ev.preventDefault(); return;
    }
    if (key === "m") { const m = form.querySelector("#missing"); if (m) { m.focus(); ev.preventDefault(); } return; }
    if (key === "p") { const p = document.getElementById("persona"); if (p) { p.open = !p.open; ev.preventDefault(); } return; }
    if (key === "?") { const h = document.querySelector("details.instructions"); if (h) h.open = !h.open; }
  });

  // the first row to answer is marked, not scrolled to: scrolling to it (a tall row of answers) opened long
  // items hundreds of pixels down, the persona and Submit off screen
  setRow(Math.max(0, firstUnanswered()), false);
  // on a phone the persona opens folded (its summary stays, one tap away) so the answers are in view
  const persona = document.getElementById("persona");
  if (persona && window.matchMedia("(max-width: 700px)").matches) persona.open = false;
})();

// Admin project page: while an import job is queued or running, its row shows the rows read and stored
// (polled from the project's imports.json); once every job has ended the page reloads, so the result and the
// project's counts are current.
(function () {
  "use strict";
  const table = document.querySelector("table[data-imports]");
  const active = (state) => state === "queued" || state === "running";
  if (!table || !Array.from(table.querySelectorAll("tr[data-job]")).some((r) => active(r.dataset.state))) return;

  function show(job) {
    const row = table.querySelector('tr[data-job="' + job.id + '"]');
    if (!row) return;
    row.dataset.state = job.state;
    row.querySelector(".state").textContent = job.state;
    row.querySelector(".read").textContent = String(job.read);
    row.querySelector(".stored").textContent = String(job.stored);
    row.querySelector(".result").textContent = job.message;
  }

  function poll() {
    fetch(table.dataset.imports, { credentials: "same-origin", cache: "no-store" })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status))))
      .then((got) => {
        got.jobs.forEach(show);
        if (got.jobs.some((job) => active(job.state))) window.setTimeout(poll, 1000);
        else window.location.reload();
      })
      .catch(() => window.setTimeout(poll, 5000));
  }
  window.setTimeout(poll, 1000);
})();

// The completion page: a button copies the code (shown in case the platform's redirect is blocked).
(function () {
  "use strict";
  const button = document.getElementById("copy-code");
  if (!button) return;
  button.addEventListener("click", () => {
    const code = document.getElementById(button.dataset.copy);
    if (!code) return;
    const done = () => { button.textContent = "Copied"; };
    if (navigator.clipboard) navigator.clipboard.writeText(code.textContent.trim()).then(done, () => {});
    else { const r = document.createRange(); r.selectNodeContents(code); const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }
  });
})();
