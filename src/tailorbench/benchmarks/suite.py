"""A suite: several benchmarks x judges x settings in one command, one leaderboard with a column per benchmark.

A suite is a YAML file (or a built-in name: `personalization`, `suites/personalization.yaml`):

    name: personalization
    data_root: ../shared/data          # relative data paths start here (default: the file's folder)
    benchmarks:
      - {name: personafeedback, data: personafeedback-general-dev}
      - {name: prefeval, data: prefeval-dev, task: multiple-choice, options: {turns: "0,10"}}
      - {name: prefeval-pairs, data: prefeval-dev, options: {turns: "0"}}
    judges: [longer, "llm:openai:MODEL@URL"]
    settings: [persona]
    limit: 200                         # optional: a seeded sample per benchmark

`task` is `pairwise` (the default: every benchmark or a multiple-choice one's pair view, judged by every judge in
every setting, `tailor eval`'s runner) or `multiple-choice` (answered by each `llm:` judge's model, scored by the
benchmark's own rule: `choice_run`). Every step is a run directory of its own under `OUT/<benchmark>/`, which
resumes by itself, so a suite killed at any point is run again with the same command and redoes nothing.

Every benchmark is read from its folder under `data_root` (the built-in suite names no hub dataset, so it runs
offline). A benchmark whose data is not there stops the suite before any work, naming every missing one, unless
`skip_missing` (`--skip-missing`): then it is left out and leaderboard.md / .json / .html say why, as they say
why a judge has no figure on a benchmark (a multiple-choice one needs an `llm:` judge). Figures are accuracy in
percent with its 95% CI, as every other report shows them.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice
from tailorbench.errors import ConfigError
from tailorbench.evaluate.results import load_results
from tailorbench.evaluate.runner import EvalConfig, run_eval, slug
from tailorbench.files import load_json, load_yaml, write_json_atomic, write_text_atomic
from tailorbench.redact import redact
from tailorbench.reporting import html_page, html_table, md_table, pct
from tailorbench.runlog import Leaderboard, SuiteRecord, SuiteSpec, read_run_file

TASKS = ("pairwise", "multiple-choice")
#: what a suite's directory records of the suite it runs (the benchmarks resolved), so `tb.resume` can finish it
SUITE_FILE = "suite.json"
SUITE_KEYS = {"name", "data_root", "benchmarks", "judges", "settings", "limit", "seed", "n_boot"}
BENCHMARK_KEYS = {"name", "data", "task", "options", "layout"}


@dataclass(frozen=True)
class SuiteBenchmark:
    name: str
    data: str
    task: str = "pairwise"
    options: dict[str, Any] = field(default_factory=dict)
    layout: str | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    benchmarks: list[SuiteBenchmark]
    judges: list[str]
    settings: list[str] = field(default_factory=lambda: ["persona"])
    limit: int | None = None
    seed: int = 0
    n_boot: int = 1000


def builtin_suite(name: str) -> Path | None:
    path = Path(__file__).parent / "suites" / f"{name}.yaml"
    return path if path.is_file() else None


def builtin_suites() -> list[str]:
    """The names of the built-in suites (`--suite NAME`, `tailor ls suites`)."""
    return sorted(p.stem for p in (Path(__file__).parent / "suites").glob("*.yaml"))


def load_suite(spec: str | Path, data_root: str | Path | None = None, judges: list[str] | None = None,
               settings: list[str] | None = None) -> Suite:
    """A suite from a YAML file or a built-in name; every key checked (an unknown or mistyped one is a
    ConfigError naming it and the file). `data_root`, `judges` and `settings` replace the file's."""
    path = builtin_suite(str(spec)) or Path(spec)
    if not path.is_file():
        from tailorbench.registry import did_you_mean

        raise ConfigError(f"--suite {spec}: no such file and no built-in suite of that name"
                          f"{did_you_mean(str(spec), builtin_suites())}; built-in: {', '.join(builtin_suites())}")
    raw = load_yaml(path, None, "a suite (a YAML mapping)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a suite is a mapping of {', '.join(sorted(SUITE_KEYS))}")
    _known(raw, SUITE_KEYS, str(path))
    root = Path(data_root) if data_root is not None else path.parent / str(raw.get("data_root", "."))
    entries = raw.get("benchmarks")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: benchmarks must be a non-empty list")
    benchmarks = [_benchmark(entry, n, root, path) for n, entry in enumerate(entries)]
    names = [b.name for b in benchmarks]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: benchmark names must be distinct, got {names}")
    judges = _texts(judges if judges is not None else raw.get("judges"), "judges", path)
    settings = _texts(settings if settings is not None else raw.get("settings", ["persona"]), "settings", path)
    limit = raw.get("limit")
    for key, value in (("limit", limit), ("seed", raw.get("seed", 0)), ("n_boot", raw.get("n_boot", 1000))):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ConfigError(f"{path}: {key} must be a whole number >= 0, got {value!r}")
    return Suite(str(raw.get("name", path.stem)), benchmarks, judges, settings, limit, int(raw.get("seed", 0)),
                 int(raw.get("n_boot", 1000)))


def _known(raw: dict[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(keys))})")


def _texts(value: Any, key: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{path}: {key} must be a non-empty list of names")
    return list(value)


def _benchmark(entry: Any, index: int, root: Path, path: Path) -> SuiteBenchmark:
    where = f"{path}: benchmarks[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping of {', '.join(sorted(BENCHMARK_KEYS))}")
    _known(entry, BENCHMARK_KEYS, where)
    name, data = entry.get("name"), entry.get("data")
    if not isinstance(name, str) or not isinstance(data, str) or not name.strip() or not data.strip():
        raise ConfigError(f"{where}: name and data are required texts")
    task = entry.get("task", "pairwise")
    if task not in TASKS:
        raise ConfigError(f"{where}: task must be one of {', '.join(TASKS)}, got {task!r}")
    options = entry.get("options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: options must be a mapping")
    named = is_named(data)
    resolved = data if named or Path(data).is_absolute() else str((root / data).resolve())
    return SuiteBenchmark(name, resolved, task, {str(k): v for k, v in options.items()}, entry.get("layout"))


def is_named(data: str) -> bool:
    """A data spec that names a dataset (the demo, the hub) rather than a path under `data_root`."""
    return data in ("demo", "personafeedback") or data.startswith("hf:")


def missing_data(suite: Suite) -> dict[str, str]:
    """benchmark -> why its data cannot be read: a path that does not exist."""
    return {b.name: f"no data at {b.data}" for b in suite.benchmarks if not is_named(b.data) and not
            Path(b.data).exists()}


NO_LLM = "a multiple-choice benchmark is answered by an llm: judge's model; this judge has none"


def model_of(judge: str) -> str | None:
    """The chat model an `llm:` judge asks (what answers a multiple-choice benchmark); None for other judges."""
    spec = judge.split("[", 1)[0]
    return spec[len("llm:"):] if spec.startswith("llm:") else None


def run_suite(suite: Suite, out: str | Path, progress: bool = False, skip_missing: bool = False) -> dict[str, Any]:
    """Every step of the suite (each resumes if its directory holds a run), then leaderboard.json, .md and .html at
    `out`: one row per judge x setting, one column per benchmark, and why any cell or column has no figure. A
    benchmark without its data is a ConfigError before any work, or, with `skip_missing`, left out and said so."""
    out = Path(out)
    missing = missing_data(suite)
    if missing and not skip_missing:
        raise ConfigError("the suite's data is not all there: " + "; ".join(f"{k}: {v}" for k, v in missing.items())
                          + " (give --data-root, or --skip-missing to run the others and say so)")
    out.mkdir(parents=True, exist_ok=True)
    record = SuiteRecord(suite=cast(SuiteSpec, asdict(suite)), skip_missing=skip_missing)
    write_json_atomic(out / SUITE_FILE, record.to_file())  # the run log's model (`runlog`), read back strictly
    board: dict[str, dict[str, Any]] = {}
    not_run: dict[str, dict[str, str]] = {}
    for bench in suite.benchmarks:
        if bench.name in missing:
            continue
        for judge in suite.judges:
            for setting in suite.settings if bench.task == "pairwise" else ["-"]:
                shown = redact(judge)
                name = f"{shown} · {setting}" if bench.task == "pairwise" else f"{shown} · mc"
                row = board.setdefault(name, {})
                row[bench.name] = _step(suite, bench, judge, setting, out / slug(bench.name), progress)
                if row[bench.name] is None:
                    not_run.setdefault(name, {})[bench.name] = NO_LLM
    leaderboard = Leaderboard(suite=suite.name, benchmarks=[b.name for b in suite.benchmarks], rows=board,
                              missing=missing, not_run=not_run).to_file()  # the run log's model (`runlog`)
    write_json_atomic(out / "leaderboard.json", leaderboard)
    header, rows, notes = leaderboard_table(leaderboard)
    intro = ("Accuracy in percent with its 95% CI; one row per judge · setting (`mc`: a multiple-choice "
             "benchmark answered by the judge's model).")
    md_notes = "".join(f"- {n}\n" for n in notes)
    headline = suite_headline(leaderboard)
    md_headline = "".join(f"- {line}\n" for line in headline)
    write_text_atomic(out / "leaderboard.md", f"# Suite {suite.name}\n\n## Headline\n\n{md_headline}\n"
                      f"## Leaderboard\n\n{intro}\n\n{md_table(header, rows)}\n"
                      + (f"\n## Not run\n\n{md_notes}" if notes else ""))
    html_notes = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    html_headline = "".join(f"<li>{html.escape(line)}</li>" for line in headline)
    write_text_atomic(out / "leaderboard.html", html_page(
        f"Suite {suite.name}", f"<h1>Suite {html.escape(suite.name)}</h1><h2>Headline</h2><ul>{html_headline}</ul>"
        f"<h2>Leaderboard</h2><p>{html.escape(intro)}</p>"
        + html_table(header, rows) + (f"<h2>Not run</h2><ul>{html_notes}</ul>" if notes else "")))
    return leaderboard


def read_suite_record(out: str | Path) -> tuple[Suite, bool]:
    """The suite a suite's directory ran and its `skip_missing`, from its suite.json, read strictly
    (`runlog.SuiteRecord`; a DataError naming the file and the field when it is not one)."""
    path = Path(out) / SUITE_FILE
    data = load_json(path, dict, "a suite's record (a JSON object)")
    record = read_run_file(SuiteRecord, path, data, what="suite record",
                           rerun="run the suite again into a new folder (`tailor eval --suite ... --out NEW_DIR`)")
    spec = record.suite
    benchmarks = [SuiteBenchmark(**b) for b in spec["benchmarks"]]
    return Suite(name=spec["name"], benchmarks=benchmarks, judges=spec["judges"], settings=spec["settings"],
                 limit=spec["limit"], seed=spec["seed"], n_boot=spec["n_boot"]), record.skip_missing


def suite_headline(board: dict[str, Any]) -> list[str]:
    """One line per benchmark: its best judge · setting with the accuracy and 95% CI the leaderboard's cell shows
    (the tied ones named too), or why it has no figure (docs/benchmarks.md, "A suite")."""
    missing: dict[str, str] = board.get("missing", {})
    lines = []
    for b in board["benchmarks"]:
        cells = {name: cells[b] for name, cells in board["rows"].items()
                 if cells.get(b) and cells[b].get("accuracy") is not None}
        if not cells:
            lines.append(f"{b}: no figure ({'no data' if b in missing else 'no judge of the suite answers it'}).")
            continue
        top = max(pct(c["accuracy"]) for c in cells.values())
        best = [name for name, c in cells.items() if pct(c["accuracy"]) == top]
        first = cells[best[0]]
        ci = f" [{pct(first['ci'][0])}, {pct(first['ci'][1])}] (95% CI)" if first["ci"][0] is not None else ""
        tied = f" (tied with {', '.join(best[1:])})" if len(best) > 1 else ""
        lines.append(f"{b}: best {best[0]}{tied}, {top}{ci}.")
    return lines


def leaderboard_table(board: dict[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, notes) of a leaderboard: a cell is `73.4 [70.1, 76.2]`, or `–` with its reason below."""
    missing: dict[str, str] = board.get("missing", {})
    not_run: dict[str, dict[str, str]] = board.get("not_run", {})
    header = ["judge · setting", *board["benchmarks"]]
    rows = []
    for name, cells in board["rows"].items():
        row = [name]
        for b in board["benchmarks"]:
            cell = cells.get(b)
            if cell:
                row.append(f"{pct(cell['accuracy'])} [{pct(cell['ci'][0])}, {pct(cell['ci'][1])}]"
                           if cell["ci"][0] is not None else pct(cell["accuracy"]))
            else:
                row.append("– (no data)" if b in missing else "– (not run)" if b in not_run.get(name, {}) else "–")
        rows.append(row)
    notes = [f"{b}: skipped, {why}" for b, why in missing.items()]
    notes += [f"{name} on {b}: {why}" for name, cells in not_run.items() for b, why in cells.items()]
    return header, rows, notes


def _step(suite: Suite, bench: SuiteBenchmark, judge: str, setting: str, folder: Path,
          progress: bool) -> dict[str, Any] | None:
    """One run; its accuracy and CI, with its run directory (None: the judge cannot answer this task)."""
    if bench.task == "multiple-choice":
        model = model_of(judge)
        if model is None:
            return None
        run_dir = folder / slug(model)
        results = run_choice(ChoiceConfig(data=bench.data, model=model, layout=bench.layout,
                                          data_options=bench.options, limit=suite.limit, seed=suite.seed,
                                          n_boot=suite.n_boot), run_dir)
        cell = results["overall"]
        return {"accuracy": cell["accuracy"], "ci": cell["ci"], "n": cell["n"], "run": str(run_dir)}
    run_dir = folder / f"{slug(judge)}__{setting}"
    config = EvalConfig(data=bench.data, judge=judge, setting=setting, limit=suite.limit, seed=suite.seed,
                        n_boot=suite.n_boot, data_options=bench.options)
    run_eval(config, run_dir, resume=(run_dir / "manifest.json").exists(), progress=progress)
    total = load_results(run_dir)["metrics"]["all"]  # read strictly (`runlog.EvalResults`), as `report` reads it
    return {"accuracy": total["accuracy"], "ci": total["ci"], "n": total["n"], "run": str(run_dir)}
