/* tailor view: pages over the runs' columnar data (window.TB_DATA, from data-N.js), filtered here in the browser.
   Every text from a run (questions, answers, judge output, names) reaches the page through textContent or
   createTextNode, never as HTML. Texts are loaded after the first paint, shard by shard (text-N-K.js). */
(function () {
  "use strict";

  var DATA = window.TB_DATA || {};
  var COMPARE = DATA.compare || {};
  var RUNS = Object.keys(DATA).filter(function (k) { return k !== "compare"; })
    .map(function (k) { return DATA[k]; }).sort(function (a, b) { return a.number - b.number; });
  var PAGE = 100;
  var FILTERS = ["run", "split", "tier", "user", "outcome", "order", "consistency", "overlap", "training", "q"];
  var COLUMN = {split: "split", tier: "tier", user: "user", overlap: "overlap", training: "training"};
  var shown = PAGE;
  var lastMatch = null;
  var searchCache = {q: null, hits: null};

  // --- small DOM helpers (text only) ---------------------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") { node.textContent = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
      });
    }
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } return node; }
  function $(sel) { return document.querySelector(sel); }
  function status(text) { $("#status").textContent = text || ""; }
  function fmt(x, digits) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1); }
  function link(href, text) { return el("a", {href: href, text: text}); }
  // a run in a menu: `judge / setting` and its dataset, so two datasets' runs never look alike
  function menuLabel(r) { return r.data ? r.label + " · " + r.data : r.label; }
  // a table in a box that scrolls sideways when it is wider than the page (the page itself never does)
  function scroll(table) { return el("div", {"class": "scroll"}, [table]); }
  function hashFor(page, params) {
    var q = new URLSearchParams();
    Object.keys(params).forEach(function (k) { if (params[k] !== "" && params[k] !== undefined) { q.set(k, params[k]); } });
    var s = q.toString();
    return "#/" + page + (s ? "?" + s : "");
  }

  // --- per-run lookups, built on first use -----------------------------------------------------------------
  function caseIndex(run) {
    if (!run._caseAt) {
      run._caseAt = new Map();
      run.cases.id.forEach(function (id, k) { run._caseAt.set(id, k); });
    }
    return run._caseAt;
  }
  function predsOf(run) {
    if (!run._preds) {
      run._preds = new Map();
      var cases = run.preds.case;
      for (var i = 0; i < cases.length; i++) {
        var list = run._preds.get(cases[i]);
        if (!list) { list = []; run._preds.set(cases[i], list); }
        list.push(i);
      }
    }
    return run._preds;
  }
  function caseScores(run) {
    // the mean over a case's verdicts of "right" (pairwise: correct; gen-eval: generated picked)
    if (!run._scores) {
      var n = run.cases.id.length, right = new Float64Array(n), count = new Float64Array(n);
      var p = run.preds;
      for (var i = 0; i < p.case.length; i++) { count[p.case[i]] += 1; if (p.outcome[i] === 0) { right[p.case[i]] += 1; } }
      for (var k = 0; k < n; k++) { right[k] = count[k] ? right[k] / count[k] : NaN; }
      run._scores = right;
    }
    return run._scores;
  }
  function judgeOf(run, i) { return run.names.judge[run.preds.judge[i]] || run.label; }

  // --- text shards ---------------------------------------------------------------------------------------
  var loading = {};
  function loadScript(name, key) {
    if (!loading[name]) {
      loading[name] = new Promise(function (resolve, reject) {
        if (window.TB_TEXT && window.TB_TEXT[key]) { resolve(); return; }
        var s = document.createElement("script");
        s.src = name;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error("could not load " + name)); };
        document.body.appendChild(s);
      });
    }
    return loading[name];
  }
  function shardKey(run, s) { return run.number + "-" + s; }
  function absorb(run, s) {
    if (!run._text) { run._text = {cases: new Array(run.cases.id.length), preds: new Map(), done: {}}; }
    if (run._text.done[s]) { return; }
    var shard = window.TB_TEXT[shardKey(run, s)];
    for (var k = 0; k < shard.cases.length; k++) { run._text.cases[shard.start + k] = shard.cases[k]; }
    shard.preds.forEach(function (row) { run._text.preds.set(row[0], row.slice(1)); });
    run._text.done[s] = true;
  }
  function ensureShard(run, s) {
    return loadScript("text-" + shardKey(run, s) + ".js", shardKey(run, s)).then(function () { absorb(run, s); });
  }
  function ensureCaseText(run, caseAt) { return ensureShard(run, Math.floor(caseAt / run.shard_size)); }
  function ensureAllText(runs) {
    var jobs = [];
    runs.forEach(function (run) { for (var s = 0; s < run.shards; s++) { jobs.push(ensureShard(run, s)); } });
    return Promise.all(jobs);
  }
  function ensurePersonas(run) {
    var key = run.number + "-personas";
    return loadScript("personas-" + run.number + ".js", key).then(function () { return window.TB_TEXT[key] || {}; });
  }
  function haystacks(run) {
    if (!run._hay) {
      var cases = run._text.cases, hay = new Array(cases.length);
      for (var k = 0; k < cases.length; k++) {
        var t = cases[k] || [];
        hay[k] = (run.cases.id[k] + "\n" + (t[0] || "") + "\n" + (t[1] || "") + "\n" + (t[2] || "")).toLowerCase();
      }
      var predHay = new Map();
      run._text.preds.forEach(function (v, i) { predHay.set(i, ((v[0] || "") + "\n" + (v[1] || "")).toLowerCase()); });
      run._hay = hay; run._predHay = predHay;
    }
    return run._hay;
  }
  function textReady(run) { return run._text && Object.keys(run._text.done).length === run.shards; }

  // --- filters -------------------------------------------------------------------------------------------
  function readState(params) {
    var state = {};
    FILTERS.forEach(function (f) { state[f] = params.get(f) || ""; });
    return state;
  }
  function union(key) {
    var seen = new Set(), out = [];
    RUNS.forEach(function (run) { (run.names[key] || []).forEach(function (n) { if (!seen.has(n)) { seen.add(n); out.push(n); } }); });
    return out;
  }
  function fillSelect(select, options) {
    clear(select);
    select.appendChild(el("option", {value: "", text: "any"}));
    options.forEach(function (o) { select.appendChild(el("option", {value: o[0], text: o[1]})); });
  }
  function setupFilters() {
    fillSelect($("[data-filter=run]"), RUNS.map(function (r) { return [String(r.number), menuLabel(r)]; }));
    ["split", "tier", "user", "overlap", "outcome"].forEach(function (key) {
      fillSelect($("[data-filter=" + key + "]"), union(key).map(function (n) { return [n, n]; }));
    });
    var training = union("training");
    fillSelect($("[data-filter=training]"), training.map(function (n) { return [n, n]; }));
    if (!training.length) { $("[data-filter=training]").closest("label").hidden = true; }
    fillSelect($("[data-filter=order]"), [["AB", "AB"], ["BA", "BA"]]);
    fillSelect($("[data-filter=consistency]"), [["inconsistent", "order-inconsistent"],
      ["other", "not order-inconsistent"]]);
    var form = $("#filters"), timer = null;
    form.addEventListener("change", function () { applyForm(); });
    form.addEventListener("input", function (e) {
      if (e.target.name !== "q") { return; }
      clearTimeout(timer);
      timer = setTimeout(applyForm, 150);
    });
    form.addEventListener("submit", function (e) { e.preventDefault(); applyForm(); });
    $("#reset").addEventListener("click", function () { location.hash = "#/cases"; });
    $("#more").addEventListener("click", function () { shown += PAGE; drawRows(); });
    $("#export-jsonl").addEventListener("click", function () { exportRows("jsonl"); });
    $("#export-csv").addEventListener("click", function () { exportRows("csv"); });
  }
  function formState() {
    var state = {};
    FILTERS.forEach(function (f) { state[f] = $("[data-filter=" + f + "]").value; });
    return state;
  }
  function applyForm() {
    var state = formState();
    history.replaceState(null, "", hashFor("cases", state));
    shown = PAGE;
    renderCases(state);
  }

  function match(state) {
    // the filtered verdicts, as parallel arrays of run number and verdict index
    var runs = [], idx = [];
    var q = state.q.trim().toLowerCase();
    RUNS.forEach(function (run) {
      if (!run.preds || (state.run !== "" && String(run.number) !== state.run)) { return; }
      var want = {}, impossible = false;
      Object.keys(COLUMN).forEach(function (f) {
        if (state[f] === "") { want[f] = -1; return; }
        want[f] = run.names[COLUMN[f]].indexOf(state[f]);
        if (want[f] < 0) { impossible = true; }
      });
      var outcome = state.outcome === "" ? -1 : run.names.outcome.indexOf(state.outcome);
      if (impossible || (state.outcome !== "" && outcome < 0)) { return; }
      var order = state.order === "" ? -1 : (state.order === "AB" ? 0 : 1);
      var consistency = state.consistency === "" ? -1 : (state.consistency === "inconsistent" ? 1 : 0);
      var hits = null, predHay = null;
      if (q) {
        if (!textReady(run)) { return; }
        hits = searchHits(run, q);
        predHay = run._predHay;
      }
      var c = run.cases, p = run.preds, n = p.case.length;
      var cs = c.split, ct = c.tier, cu = c.user, co = c.overlap, ctr = c.training, ci = c.inconsistent;
      var pc = p.case, po = p.outcome, pord = p.order;
      for (var i = 0; i < n; i++) {
        var k = pc[i];
        if (want.split >= 0 && cs[k] !== want.split) { continue; }
        if (want.tier >= 0 && ct[k] !== want.tier) { continue; }
        if (want.user >= 0 && cu[k] !== want.user) { continue; }
        if (want.overlap >= 0 && co[k] !== want.overlap) { continue; }
        if (want.training >= 0 && ctr[k] !== want.training) { continue; }
        if (outcome >= 0 && po[i] !== outcome) { continue; }
        if (order >= 0 && pord[i] !== order) { continue; }
        if (consistency >= 0 && ci[k] !== consistency) { continue; }
        if (hits && !hits[k]) {
          var h = predHay.get(i);
          if (!h || h.indexOf(q) < 0) { continue; }
        }
        runs.push(run.number); idx.push(i);
      }
    });
    return {runs: runs, idx: idx};
  }
  function searchHits(run, q) {
    var key = run.number + "\u0000" + q;
    if (searchCache.q !== key) {
      var hay = haystacks(run), hits = new Uint8Array(hay.length);
      for (var k = 0; k < hay.length; k++) { hits[k] = hay[k].indexOf(q) >= 0 ? 1 : 0; }
      searchCache = {q: key, hits: hits};
    }
    return searchCache.hits;
  }

  function renderCases(state) {
    FILTERS.forEach(function (f) { $("[data-filter=" + f + "]").value = state[f]; });
    var note = $("#search-note");
    note.textContent = "";
    var scope = RUNS.filter(function (r) { return r.preds && (state.run === "" || String(r.number) === state.run); });
    if (state.q.trim() && !scope.every(textReady)) {
      note.textContent = "loading the texts for search…";
      ensureAllText(scope).then(function () { if (location.hash.indexOf("#/cases") === 0) { renderCases(readState(currentParams())); } });
    }
    lastMatch = match(state);
    var nCases = 0, seen = {};
    for (var j = 0; j < lastMatch.idx.length; j++) {
      var r = lastMatch.runs[j], marks = seen[r];
      if (!marks) { marks = seen[r] = new Uint8Array(DATA[r].cases.id.length); }
      var k = DATA[r].preds.case[lastMatch.idx[j]];
      if (!marks[k]) { marks[k] = 1; nCases += 1; }
    }
    var count = $("#count");
    count.dataset.count = String(lastMatch.idx.length);
    count.dataset.cases = String(nCases);
    count.textContent = lastMatch.idx.length + " verdicts on " + nCases + " cases";
    drawRows();
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  }
  function drawRows() {
    var body = clear($("#rows")), m = lastMatch, end = Math.min(shown, m.idx.length);
    var frag = document.createDocumentFragment();
    for (var j = 0; j < end; j++) {
      var run = DATA[m.runs[j]], i = m.idx[j], k = run.preds.case[i], p = run.preds, c = run.cases;
      var id = c.id[k], user = run.names.user[c.user[k]];
      var tr = el("tr", {"data-outcome": run.names.outcome[p.outcome[i]]}, [
        el("td", {text: run.label}),
        el("td", null, [link(hashFor("case", {run: run.number, id: id}), id)]),
        el("td", {text: run.names.split[c.split[k]]}),
        el("td", {text: run.names.tier[c.tier[k]]}),
        el("td", null, [link(hashFor("user", {id: user}), user)]),
        el("td", {text: p.order[i] ? "BA" : "AB"}),
        el("td", {text: run.names.outcome[p.outcome[i]]}),
        el("td", {text: ["–", "A", "B"][p.choice[i]]}),
        el("td", {text: fmt(p.latency[i], 2)}),
        el("td", {text: p.tokens_in[i] + "/" + p.tokens_out[i]}),
        el("td", {text: p.cached[i] ? "yes" : "no"})
      ]);
      frag.appendChild(tr);
    }
    body.appendChild(frag);
    $("#more").hidden = end >= m.idx.length;
  }

  function exportRows(kind) {
    var m = lastMatch;
    if (!m) { return; }
    var involved = RUNS.filter(function (r) { return m.runs.indexOf(r.number) >= 0; });
    status("preparing the export…");
    ensureAllText(involved).then(function () {
      var records = [];
      for (var j = 0; j < m.idx.length; j++) {
        var run = DATA[m.runs[j]], i = m.idx[j], k = run.preds.case[i], p = run.preds, c = run.cases;
        var t = run._text.preds.get(i) || [null, null, null];
        records.push({run: run.label, judge: judgeOf(run, i), case_id: c.id[k], split: run.names.split[c.split[k]],
          tier: run.names.tier[c.tier[k]], user_id: run.names.user[c.user[k]], order: p.order[i] ? "BA" : "AB",
          verdict: run.names.outcome[p.outcome[i]], choice: [null, "A", "B"][p.choice[i]],
          order_inconsistent: c.inconsistent[k] === 1, latency_s: p.latency[i], prompt_tokens: p.tokens_in[i],
          completion_tokens: p.tokens_out[i], cost_usd: p.cost[i], cached: p.cached[i] === 1,
          truncated: p.truncated[i] === 1, raw: t[0], error: t[1], scores: t[2]});
      }
      var text, type;
      if (kind === "jsonl") {
        text = records.map(function (r) { return JSON.stringify(r); }).join("\n") + (records.length ? "\n" : "");
        type = "application/x-ndjson";
      } else {
        var cols = ["run", "judge", "case_id", "split", "tier", "user_id", "order", "verdict", "choice",
          "order_inconsistent", "latency_s", "prompt_tokens", "completion_tokens", "cost_usd", "cached", "truncated",
          "raw", "error", "scores"];
        var cell = function (v) {
          if (v === null || v === undefined) { return ""; }
          var s = typeof v === "object" ? JSON.stringify(v) : String(v);
          return /[",\n\r]/.test(s) ? "\"" + s.replace(/"/g, "\"\"") + "\"" : s;
        };
        text = [cols.join(",")].concat(records.map(function (r) { return cols.map(function (c) { return cell(r[c]); }).join(","); })).join("\r\n") + "\r\n";
        type = "text/csv";
      }
      var url = URL.createObjectURL(new Blob([text], {type: type}));
      var a = el("a", {href: url, download: "cases." + kind});
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
      status("");
    }, function (e) { status(String(e.message)); });
  }

  // --- case page -----------------------------------------------------------------------------------------
  function renderValue(value, depth) {
    if (value === null || value === undefined) { return el("span", {text: "–"}); }
    if (Array.isArray(value)) {
      return el("ul", null, value.map(function (v) { return el("li", null, [renderValue(v, depth + 1)]); }));
    }
    if (typeof value === "object") {
      return el("div", null, Object.keys(value).map(function (k) {
        var d = el("details", {"class": "section"}, [el("summary", {text: k}), renderValue(value[k], depth + 1)]);
        if (depth > 0) { d.open = true; }
        return d;
      }));
    }
    return el("span", {"class": "value", text: String(value)});
  }
  function renderCase(params) {
    var root = clear($("#case")), id = params.get("id") || "";
    var holders = RUNS.filter(function (r) { return r.preds && caseIndex(r).has(id); });
    var named = RUNS.filter(function (r) { return String(r.number) === params.get("run"); })[0];
    var first = named && holders.indexOf(named) >= 0 ? named : holders[0];
    if (!first) { root.appendChild(el("p", {text: "No run holds the case " + id + "."})); return; }
    // the verdicts of the runs that judged this very case: same kind (same two answers) and same data
    holders = holders.filter(function (r) {
      return r.kind === first.kind && r.manifest.dataset_fingerprint === first.manifest.dataset_fingerprint;
    });
    var at = caseIndex(first).get(id), c = first.cases, user = first.names.user[c.user[at]];
    root.appendChild(el("h2", {text: "Case " + id}));
    var facts = [["split", first.names.split[c.split[at]]], ["tier", first.names.tier[c.tier[at]]],
      ["overlap", first.names.overlap[c.overlap[at]]]];
    if (c.training[at] >= 0) { facts.push(["training", first.names.training[c.training[at]]]); }
    var dl = el("p", {"class": "facts"}, [el("span", {text: "user "}), link(hashFor("user", {id: user}), user)]);
    facts.forEach(function (f) { dl.appendChild(el("span", {text: " · " + f[0] + " " + f[1]})); });
    root.appendChild(dl);
    var holder = el("div", {text: "loading…"});
    root.appendChild(holder);
    var jobs = holders.map(function (r) { return ensureCaseText(r, caseIndex(r).get(id)); });
    jobs.push(ensurePersonas(first));
    Promise.all(jobs).then(function (done) {
      var personas = done[done.length - 1];
      clear(holder);
      var text = first._text.cases[at] || [null, null, null, null];
      holder.appendChild(el("h3", {text: "Persona"}));
      holder.appendChild(el("div", {"class": "persona"}, [personas[user] ? renderValue(personas[user], 0)
        : el("p", {text: first.data_note})]));
      holder.appendChild(el("h3", {text: "Question"}));
      holder.appendChild(el("pre", {"class": "text question", text: text[0] === null ? first.data_note : text[0]}));
      holder.appendChild(el("div", {"class": "answers"}, [0, 1].map(function (side) {
        var answer = text[1 + side];
        return el("div", {"class": "answer", "data-answer": String(side)}, [
          el("h3", {text: first.answers[side] + " (" + (side ? c.len_b[at] : c.len_a[at]) + " chars)"}),
          el("pre", {"class": "text", text: answer === null || answer === undefined ? "–" : answer})]);
      })));
      if (text[3]) {
        holder.appendChild(el("h3", {text: "Human labels"}));
        holder.appendChild(el("pre", {"class": "text human", text: JSON.stringify(text[3], null, 2)}));
      }
      holder.appendChild(el("h3", {text: "Verdicts"}));
      holders.forEach(function (run) { holder.appendChild(verdictTable(run, caseIndex(run).get(id))); });
    }, function (e) { holder.textContent = String(e.message); });
  }
  function verdictTable(run, at) {
    var p = run.preds, rows = [];
    (predsOf(run).get(at) || []).forEach(function (i) {
      var t = (run._text && run._text.preds.get(i)) || [null, null, null];
      var order = p.order[i] ? "BA" : "AB";
      rows.push(el("tr", {"data-verdict": run.number + "-" + order}, [
        el("td", {text: judgeOf(run, i)}),
        el("td", {text: order + " (" + run.orders[order] + ")"}),
        el("td", {text: run.names.outcome[p.outcome[i]]}),
        el("td", {text: ["–", "A", "B"][p.choice[i]]}),
        el("td", null, [el("pre", {"class": "text raw", text: t[0] === null ? "–" : t[0]})]),
        el("td", {text: t[2] ? Object.keys(t[2]).map(function (k) { return k + " " + Number(t[2][k]).toPrecision(4); }).join(", ") : "–"}),
        el("td", {text: t[1] || "–"}),
        el("td", {text: fmt(p.latency[i], 3)}),
        el("td", {text: p.tokens_in[i] + "/" + p.tokens_out[i]}),
        el("td", {text: p.cost[i] === null ? "–" : Number(p.cost[i]).toFixed(5)}),
        el("td", {text: (p.cached[i] ? "cached" : "called") + (p.truncated[i] ? ", truncated" : "")})
      ]));
    });
    var head = ["judge", "order", "verdict", "picked", "output", "scores", "error", "latency s", "tokens in/out",
      "cost USD", "cache"].map(function (h) { return el("th", {text: h}); });
    return el("div", {"class": "verdicts"}, [el("h4", {text: run.label}),
      scroll(el("table", null, [el("thead", null, [el("tr", null, head)]), el("tbody", null, rows)]))]);
  }

  // --- comparison ----------------------------------------------------------------------------------------
  function setupCompare() {
    var pairwise = RUNS.filter(function (r) { return r.preds; });
    ["#compare-a", "#compare-b"].forEach(function (sel, k) {
      var s = $(sel);
      pairwise.forEach(function (r) { s.appendChild(el("option", {value: String(r.number), text: menuLabel(r)})); });
      if (pairwise[k]) { s.value = String(pairwise[k].number); }
    });
    $("#compare-form").addEventListener("change", function () {
      location.hash = hashFor("compare", {a: $("#compare-a").value, b: $("#compare-b").value});
    });
  }
  function renderCompare(params) {
    var root = clear($("#compare"));
    var pairwise = RUNS.filter(function (r) { return r.preds; });
    if (pairwise.length < 2) { root.appendChild(el("p", {text: "Open two runs or more to compare them."})); return; }
    var pick = function (key, fallback) {
      return pairwise.filter(function (r) { return String(r.number) === (params.get(key) || String(fallback)); })[0];
    };
    var a = pick("a", pairwise[0].number), b = pick("b", pairwise[1].number);
    if (!a || !b) { root.appendChild(el("p", {text: "Pick two runs."})); return; }
    $("#compare-a").value = String(a.number); $("#compare-b").value = String(b.number);
    if (a === b) { root.appendChild(el("p", {text: "Pick two different runs."})); return; }
    if (a.kind !== b.kind) {
      root.appendChild(el("p", {text: "A " + a.kind + " run and a " + b.kind + " run score different things: pick two runs of one kind."}));
      return;
    }
    var lo = Math.min(a.number, b.number), hi = Math.max(a.number, b.number), sign = a.number === lo ? 1 : -1;
    var rows = COMPARE[lo + "-" + hi];
    root.appendChild(el("h3", {text: "Paired difference A − B (tailor compare's figures)"}));
    if (rows && rows.reason) {
      root.appendChild(el("p", {"class": "warn", id: "compare-reason", text: "No paired comparison: " + rows.reason + "."}));
      return;
    }
    if (rows) {
      var head = ["split / tier", "shared cases", "A − B (points)", "95% CI, cases", "95% CI, users",
        "A higher : B higher", "McNemar p (exact)"];
      var interval = function (ci) {
        if (!ci || ci[0] === null) { return "–"; }
        var lohi = sign > 0 ? [ci[0], ci[1]] : [-ci[1], -ci[0]];
        return "[" + lohi.map(function (x) { return (100 * x).toFixed(1); }).join(", ") + "]";
      };
      root.appendChild(scroll(el("table", {"class": "paired"}, [el("thead", null, [el("tr", null, head.map(function (h) { return el("th", {text: h}); }))]),
        el("tbody", null, rows.map(function (r) {
          var m = r.mcnemar, counts = sign > 0 ? [m.a_only, m.b_only] : [m.b_only, m.a_only];
          return el("tr", null, [el("td", {text: r.cell}), el("td", {text: String(r.n)}),
            el("td", {text: r.difference === null ? "–" : (100 * sign * r.difference).toFixed(1)}),
            el("td", {text: interval(r.ci)}), el("td", {text: interval(r.ci_users)}),
            el("td", {text: counts[0] + " : " + counts[1]}),
            el("td", {text: m.p === null ? "–" : String(Number(Number(m.p).toPrecision(3)))})]);
        }))])));
      root.appendChild(el("p", {"class": "note", text: "A − B: the mean over shared cases of A's case score minus " +
        "B's, in points; 95% CI, cases / users: paired percentile bootstrap resampling cases / whole users (the " +
        "viewer's --n-boot and --seed, each cell seeded as tailor compare seeds it); A higher : B higher: the " +
        "discordant cases, where one run's case score is higher; McNemar p: the exact two-sided McNemar test on " +
        "them. tailor compare A B prints the same figures (docs/metrics.md, Comparing runs)."}));
    } else {
      root.appendChild(el("p", {text: "The paired bootstrap is computed for pairwise runs (tailor eval, train-rm's held-out evaluation)."}));
    }
    var sa = caseScores(a), sb = caseScores(b), atB = caseIndex(b), diff = [];
    a.cases.id.forEach(function (id, k) {
      var j = atB.get(id);
      if (j !== undefined && sa[k] !== sb[j]) { diff.push([id, k, j]); }
    });
    var count = el("p", {id: "disagree-count", "data-count": String(diff.length),
      text: diff.length + " cases where the two runs' case scores differ"});
    root.appendChild(el("h3", {text: "Cases where they disagree"}));
    root.appendChild(count);
    var body = el("tbody");
    diff.slice(0, 500).forEach(function (d) {
      body.appendChild(el("tr", null, [el("td", null, [link(hashFor("case", {run: a.number, id: d[0]}), d[0])]),
        el("td", {text: a.names.split[a.cases.split[d[1]]] + "/" + a.names.tier[a.cases.tier[d[1]]]}),
        el("td", {text: a.names.user[a.cases.user[d[1]]]}),
        el("td", {text: pct(sa[d[1]])}), el("td", {text: pct(sb[d[2]])})]));
    });
    root.appendChild(scroll(el("table", null, [el("thead", null, [el("tr", null, ["case", "split/tier", "user",
      "A score %", "B score %"].map(function (h) { return el("th", {text: h}); }))]), body])));
  }

  // --- users ---------------------------------------------------------------------------------------------
  function userRows(run) {
    var scores = caseScores(run), n = run.names.user.length, sum = new Float64Array(n), count = new Float64Array(n);
    run.cases.user.forEach(function (u, k) { if (!isNaN(scores[k])) { sum[u] += scores[k]; count[u] += 1; } });
    var rows = [];
    for (var u = 0; u < n; u++) { rows.push([run.names.user[u], count[u], count[u] ? sum[u] / count[u] : null]); }
    return rows.sort(function (x, y) { return (x[2] === null) - (y[2] === null) || x[2] - y[2] || y[1] - x[1]; });
  }
  function renderUsers() {
    var root = clear($("#users"));
    RUNS.filter(function (r) { return r.preds; }).forEach(function (run) {
      root.appendChild(el("h3", {text: run.label + " — users, lowest score first"}));
      var body = el("tbody");
      userRows(run).slice(0, 1000).forEach(function (r) {
        body.appendChild(el("tr", null, [el("td", null, [link(hashFor("user", {id: r[0]}), r[0])]),
          el("td", {text: String(r[1])}), el("td", {text: pct(r[2])})]));
      });
      root.appendChild(scroll(el("table", null, [el("thead", null, [el("tr", null, ["user", "cases", "score %"].map(function (h) { return el("th", {text: h}); }))]), body])));
    });
  }
  function renderUser(params) {
    var root = clear($("#user")), id = params.get("id") || "";
    root.appendChild(el("h2", {text: "User " + id}));
    var runs = RUNS.filter(function (r) { return r.preds && r.names.user.indexOf(id) >= 0; });
    if (!runs.length) { root.appendChild(el("p", {text: "No run holds this user."})); return; }
    var body = el("tbody");
    runs.forEach(function (run) {
      var u = run.names.user.indexOf(id), scores = caseScores(run), n = 0, s = 0;
      run.cases.user.forEach(function (x, k) { if (x === u && !isNaN(scores[k])) { n += 1; s += scores[k]; } });
      body.appendChild(el("tr", null, [el("td", {text: run.label}), el("td", {text: String(n)}),
        el("td", {text: pct(n ? s / n : null)}),
        el("td", null, [link(hashFor("cases", {run: run.number, user: id}), "browse the cases")])]));
    });
    root.appendChild(scroll(el("table", null, [el("thead", null, [el("tr", null, ["run", "cases", "score %", ""].map(function (h) { return el("th", {text: h}); }))]), body])));
    var persona = el("div", {"class": "persona", text: "loading…"});
    root.appendChild(el("h3", {text: "Persona"}));
    root.appendChild(persona);
    ensurePersonas(runs[0]).then(function (all) {
      clear(persona).appendChild(all[id] ? renderValue(all[id], 0) : el("p", {text: runs[0].data_note}));
    });
  }

  // --- runs page -----------------------------------------------------------------------------------------
  function renderRuns() {
    RUNS.forEach(function (run) {
      var box = document.querySelector("[data-manifest=\"" + run.number + "\"]");
      if (box && !box.firstChild) {
        box.appendChild(el("p", {text: run.data_note}));
        var d = el("details", null, [el("summary", {text: "manifest.json (secrets redacted)"}),
          el("pre", {"class": "text", text: JSON.stringify(run.manifest, null, 2)})]);
        box.appendChild(d);
      }
    });
  }

  // --- routing -------------------------------------------------------------------------------------------
  function currentParams() {
    var h = location.hash.replace(/^#\/?/, ""), at = h.indexOf("?");
    return new URLSearchParams(at >= 0 ? h.slice(at + 1) : "");
  }
  function route() {
    var h = location.hash.replace(/^#\/?/, ""), at = h.indexOf("?");
    var page = (at >= 0 ? h.slice(0, at) : h) || "leaderboard", params = currentParams();
    var sections = document.querySelectorAll("[data-page]");
    var known = false;
    sections.forEach(function (s) { if (s.dataset.page === page) { known = true; } });
    if (!known) { page = "leaderboard"; }
    sections.forEach(function (s) { s.hidden = s.dataset.page !== page; });
    document.querySelectorAll("[data-nav]").forEach(function (a) {
      a.classList.toggle("active", a.dataset.nav === page || (page === "case" && a.dataset.nav === "cases") ||
        (page === "user" && a.dataset.nav === "users"));
    });
    if (page === "cases") { shown = PAGE; renderCases(readState(params)); }
    else if (page === "case") { renderCase(params); }
    else if (page === "compare") { renderCompare(params); }
    else if (page === "users") { renderUsers(); }
    else if (page === "user") { renderUser(params); }
    else if (page === "runs") { renderRuns(); }
    document.body.dataset.route = page;
  }

  setupFilters();
  setupCompare();
  window.addEventListener("hashchange", route);
  route();
  document.body.dataset.readyMs = String(performance.now());
  document.body.dataset.ready = "1";
  // after the first paint: the texts, so search, export and case pages need not wait
  var later = window.requestIdleCallback || function (fn) { return setTimeout(fn, 200); };
  later(function () {
    var withText = RUNS.filter(function (r) { return r.preds; });
    ensureAllText(withText).then(function () {
      withText.forEach(haystacks);  // the search's lower-cased texts, once, before the first search needs them
      document.body.dataset.textMs = String(performance.now());
      document.body.dataset.text = "1";
    }, function (e) { status(String(e.message)); });
  });
})();
