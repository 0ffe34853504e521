"""The viewer's files, the same whether served or written as a bundle: `index.html` (the page, with the reports'
tables rendered by the reports themselves), `view.js` and `view.css` (shipped in the package), and the data as
scripts that assign to a global (`data-N.js` per run, read before the first paint; `text-N-K.js` shards of case
and verdict text and `personas-N.js`, loaded after it), so the bundle opens from disk (`file://`) with nothing
fetched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from tailorbench.files import Output, check_output, only_names
from tailorbench.viewer.index import expand_runs, load_index

#: cases per text shard (a case page loads one shard per run)
SHARD = 2000
#: the page's static files, shipped in the package
STATIC = ("view.js", "view.css")
#: every name a bundle writes: a directory holding only these (and view.js) is an earlier bundle, rewritten
BUNDLE_FILES = ("index.html", *STATIC, "compare.js", "data-*.js", "text-*.js", "personas-*.js")


@dataclass
class Site:
    """Every file of the viewer, by name (bytes), and the runs it shows."""

    files: dict[str, bytes] = field(default_factory=dict)
    runs: list[Path] = field(default_factory=list)


def _script(glob: str, key: str, value: Any) -> bytes:
    """A data file: `(window.GLOB = window.GLOB || {})[KEY] = JSON;` (JSON is a JavaScript expression)."""
    body = orjson.dumps(value).replace(b"</", b"<\\/")  # inert inside a script, even if inlined later
    return (f"(window.{glob}=window.{glob}||{{}})[{orjson.dumps(key).decode()}]=".encode() + body + b";\n")


def _shards(number: int, index: dict[str, Any]) -> tuple[dict[str, bytes], int]:
    text = index.get("text") or {}
    cases, preds = text.get("cases") or [], text.get("preds") or []
    case_of = (index.get("preds") or {}).get("case") or []
    n = -(-len(cases) // SHARD)
    per_shard: list[list[Any]] = [[] for _ in range(n)]
    for k, case in enumerate(case_of):
        if preds[k] != [None, None, None]:
            per_shard[case // SHARD].append([k, *preds[k]])
    files = {f"text-{number}-{s}.js": _script("TB_TEXT", f"{number}-{s}", {
        "start": s * SHARD, "cases": cases[s * SHARD:(s + 1) * SHARD], "preds": per_shard[s]}) for s in range(n)}
    files[f"personas-{number}.js"] = _script("TB_TEXT", f"{number}-personas", text.get("personas") or {})
    return files, n


def _comparisons(dirs: Sequence[Path], kinds: Sequence[str], n_boot: int, seed: int) -> dict[str, Any]:
    """The comparison of every two pairwise runs by split x tier and in all: `tailor compare`'s own cells
    (`evaluate.compare.compare_pair`: the paired bootstrap with the same per-cell seeds, the exact McNemar test),
    so the viewer and the CLI print the same numbers for the same pair, `n_boot` and `seed`. Runs over different
    data (their dataset fingerprints differ) or sharing no case get the reason instead of figures."""
    from tailorbench.evaluate.compare import compare_pair
    from tailorbench.run_kinds import RUN_KINDS, read_manifest
    from tailorbench.schema import benchmark_names

    pairwise = [k for k, kind in enumerate(kinds) if kind == "pairwise"]
    if len(pairwise) < 2:
        return {}
    read = RUN_KINDS.get("pairwise").case_scores
    assert read is not None
    scores = {k: read(dirs[k]) for k in pairwise}
    manifests = {k: read_manifest(dirs[k]) for k in pairwise}
    out: dict[str, Any] = {}
    for i in pairwise:
        for j in pairwise:
            if i >= j:
                continue
            prints = [str(manifests[k].get("dataset_fingerprint")) for k in (i, j)]
            if prints[0] != prints[1]:
                out[f"{i}-{j}"] = {"reason": f"these runs are over different data ({manifests[i].get('data')}, "
                                             f"fingerprint {prints[0][:12]}; {manifests[j].get('data')}, fingerprint "
                                             f"{prints[1][:12]}): a paired comparison needs the same cases"}
            elif not set(scores[i]) & set(scores[j]):
                out[f"{i}-{j}"] = {"reason": "these runs share no judged case"}
            else:
                names = benchmark_names(manifests[i].get("data_stats") or {})
                out[f"{i}-{j}"] = compare_pair(scores[i], scores[j], names, n_boot, seed)
    return out


def data_name(data: Any) -> str:
    """A run's dataset as its menus show it beside `judge / setting`: the `--data` spec, a path by its last two
    parts (two datasets' runs must not look alike, and a menu must stay short)."""
    if not data:
        return ""
    parts = str(data).replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:])


def _template() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("tailorbench.viewer", "templates"), autoescape=select_autoescape(["html"]))
    return env.get_template("index.html")


def build_site(paths: Sequence[Path], n_boot: int = 1000, seed: int = 0) -> Site:
    """Index every run (stored indexes reused) and lay out the viewer's files."""
    from tailorbench.viewer.tables import report_body

    dirs = expand_runs(paths)
    indexes = [load_index(d) for d in dirs]
    site = Site(runs=dirs)
    kinds = [str(i["kind"]) for i in indexes]
    runs_meta = []
    for k, (run_dir, index) in enumerate(zip(dirs, indexes, strict=True)):
        meta: dict[str, Any] = {"number": k, "kind": index["kind"], "label": index["label"], "dir": run_dir.name,
                                "data": data_name((index.get("manifest") or {}).get("data")), "shards": 0,
                                "shard_size": SHARD}
        if index["kind"] != "stage":
            shard_files, meta["shards"] = _shards(k, index)
            site.files.update(shard_files)
            columns = {key: index[key] for key in ("names", "cases", "preds", "answers", "orders", "manifest",
                                                  "data_note")}
            site.files[f"data-{k}.js"] = _script("TB_DATA", str(k), {**meta, **columns})
        runs_meta.append(meta)
    boards = []
    for kind in ("pairwise", "gen-eval"):
        members = [k for k, x in enumerate(kinds) if x == kind]
        if len(members) == 1:
            boards.append(indexes[members[0]]["report"])
        elif members:
            boards.append(report_body(kind, [dirs[k] for k in members]))
    site.files["compare.js"] = _script("TB_DATA", "compare", _comparisons(dirs, kinds, n_boot, seed))
    page = _template().render(
        runs=[{**m, "report": indexes[m["number"]].get("report", ""), "stages": indexes[m["number"]].get("stages", [])}
              for m in runs_meta],
        boards=boards,
        data_files=[f"data-{m['number']}.js" for m in runs_meta if m["kind"] != "stage"],
        title="tailor view: " + ", ".join(str(m["label"]) for m in runs_meta)[:200],
    )
    site.files["index.html"] = page.encode()
    static = resources.files("tailorbench.viewer") / "static"
    for name in STATIC:
        site.files[name] = (static / name).read_bytes()
    return site


def check_bundle(out: Path, runs: Sequence[str | Path]) -> Path:
    """`--bundle DIR` before any run is read: not a run directory given, a new or empty directory or an earlier
    bundle (nothing but the files a bundle writes), and creatable (the output rule, `files.check_output`)."""
    return check_output("--bundle", out, inputs=runs, directory=True, ours=only_names(BUNDLE_FILES, "view.js"))


def write_bundle(site: Site, out: Path) -> Path:
    """The site as files in `out` (opens from disk: `out/index.html`); data files an earlier bundle left there
    are removed first, so a smaller run's bundle holds no shard of a larger one."""
    door = Output("--bundle", out, directory=True, made_by="tailor view --bundle")
    door.ensure()
    for pattern in ("data-*.js", "text-*.js", "personas-*.js"):
        for stale in out.glob(pattern):
            if stale.name not in site.files:
                door.remove(stale.name)
    for name, data in site.files.items():
        door.write_text(name, data.decode())
    return out / "index.html"
