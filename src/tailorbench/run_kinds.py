"""Run kinds: what a run directory holds (its manifest's `kind`), and the one place that dispatches on it.

`pairwise` (`tailor eval`; its manifests carry no kind) and `gen-eval` (`tailor gen-eval`) are the built-in
kinds. Each registers a `RunKind` in the module that owns its reports: how its results are read
(`load_results`), its exit-code-3 rule (`check`), how several of its runs are put side by side
(`merge(run_dirs, out) -> results`, what `tailor report RUN...` writes) and how the viewer reads it (`view`:
its report body as HTML, its verdict rows). `report`, `view` and the API look the kind up here, so none of them
imports a capability: a run kind registers itself, like a judge (plugins: entry-point group
`tailorbench.run_kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError, DataError
from tailorbench.failures import FailureCheck
from tailorbench.registry import Registry

#: the kind of a run whose manifest names none (every `tailor eval` run)
DEFAULT_KIND = "pairwise"

MergeReport = Callable[[Sequence[Path], Path], list[dict[str, Any]]]


Runs = Sequence[dict[str, Any]]


@dataclass(frozen=True)
class ViewRow:
    """One verdict as the viewer lists it: the verdict's own line (`case_id`, `split`, `tier`, `user_id`,
    `order`, `judge`, `choice`, timings, tokens, `raw`, `error`, `scores`), the case's tier-overlap and
    training-overlap classes, the two answers' lengths, and the outcome (an index into `ViewRows.outcomes`)."""

    row: Mapping[str, Any]
    outcome: int
    len_a: int | None = None
    len_b: int | None = None
    overlap: str = "unique"
    training: str | None = None


@dataclass(frozen=True)
class ViewRows:
    """What a run kind hands the viewer of one run directory: its label, the names of answers a and b, of the
    two orders and of the outcomes, its manifest, the verdicts, and (when the answers are the run's own, as in
    gen-eval) the two answers' text per case."""

    label: str
    answers: tuple[str, str]
    orders: dict[str, str]
    outcomes: tuple[str, ...]
    manifest: Mapping[str, Any]
    rows: list[ViewRow]
    answer_text: dict[str, tuple[str, str]] | None = None


def _unsupported(what: str) -> Callable[..., Any]:
    def refuse(*_: Any) -> Any:
        raise ConfigError(f"this kind of run directory has no {what}")

    return refuse


_NO_RESULTS = _unsupported("results.json")
_NO_CHECK = _unsupported("verdicts")
_NO_REPORT = _unsupported("merged report")


@dataclass(frozen=True)
class RunKind:
    """How one kind of run directory is read and reported: `load_results` is its results.json (recomputed when
    stale or missing), `check(results, max_failed, what)` its exit-code-3 rule (`max_failed`: the run's own when
    None), `render_markdown` / `render_html` (runs, title) its report pages, `title(runs)` the title of a one-run
    report, `merged_title` that of several side by side, `html_body(run_dirs)` the report's body the viewer
    shows. For the viewer and `compare`: `key_files(run_dir)` (what the viewer's index is keyed by),
    `view_rows(run_dir)` (its verdicts; None: the kind shows no cases), `case_scores(run_dir)` (case id ->
    (score, split, tier, user), what two runs are compared on), `sections(run_dir)` ((title, HTML) sections of a kind
    without cases) and, for a kind whose directories carry no manifest, `detect(run_dir)` and what it `expects`."""

    html_body: Callable[[Sequence[Path]], str]
    load_results: Callable[[Path], dict[str, Any]] = _NO_RESULTS
    check: Callable[[Mapping[str, Any], float | None, str | None], FailureCheck] = _NO_CHECK
    render_markdown: Callable[[Runs, str], str] = _NO_REPORT
    render_html: Callable[[Runs, str], str] = _NO_REPORT
    title: Callable[[Runs], str] = _NO_REPORT
    merged_title: str = ""
    key_files: Callable[[Path], list[Path]] | None = None
    view_rows: Callable[[Path], ViewRows] | None = None
    case_scores: Callable[[Path], dict[str, tuple[float, str, str, str]]] | None = None
    sections: Callable[[Path], list[tuple[str, str]]] | None = None
    detect: Callable[[Path], bool] | None = None
    expects: str = ""

    def merge(self, run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
        """One report over several run directories of this kind at `out`; returns their results."""
        runs = [self.load_results(d) for d in run_dirs]
        write_reports(self, runs, out, self.merged_title)
        return runs


def write_reports(kind: RunKind, runs: Runs, out: Path, title: str | None = None) -> None:
    """report.md and report.html of runs of one kind at `out` (a one-run report is titled by `kind.title`)."""
    from tailorbench.files import write_text_atomic

    title = title or (kind.title(runs) if len(runs) == 1 else kind.merged_title)
    write_text_atomic(out / "report.md", kind.render_markdown(runs, title))
    write_text_atomic(out / "report.html", kind.render_html(runs, title))


RUN_KINDS: Registry[RunKind] = Registry(
    "run kind",
    "tailorbench.run_kinds",
    lazy={"pairwise": "tailorbench.evaluate.run_kind", "gen-eval": "tailorbench.geneval.run_kind",
          "stage": "tailorbench.threestage.run_kind", "multiple-choice": "tailorbench.benchmarks.choice_report",
          "prefeval-generation": "tailorbench.benchmarks.generation_report",
          "estimate": "tailorbench.estimation.run_kind"},
)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """A run directory's manifest.json as an object (a DataError naming the file when it is not one)."""
    from tailorbench.files import load_json

    path = run_dir / "manifest.json"
    if not path.exists():
        raise DataError(path, None, None, "not a run directory: manifest.json is missing")
    manifest: dict[str, Any] = load_json(path, dict, "a run manifest (a JSON object)")
    return manifest


def run_kind(run_dir: Path) -> str:
    """The kind a run directory's manifest.json names (`pairwise` when it names none or is missing)."""
    if not (run_dir / "manifest.json").exists():
        return DEFAULT_KIND  # the kind's own loader reports the missing file with its own clear message
    return str(read_manifest(run_dir).get("kind", DEFAULT_KIND))


def detect_kind(run_dir: Path) -> str:
    """The kind of any run directory the viewer is given: its manifest's, else the first kind without a manifest
    that recognises it (stage reports); a DataError saying what was expected otherwise."""
    if (run_dir / "manifest.json").is_file():
        return run_kind(run_dir)
    expected = []
    for name in RUN_KINDS.names():
        kind = RUN_KINDS.get(name)
        if kind.detect is not None:
            if kind.detect(run_dir):
                return name
            expected.append(kind.expects)
    raise DataError(run_dir, None, None, "not a run directory: no manifest.json"
                    + "".join(f" and no {e}" for e in expected if e))


def is_run(path: Path) -> bool:
    """Whether a directory is a run directory of some kind: it has a manifest.json, or a kind without manifests
    recognises its files (stage reports)."""
    if not path.is_dir():
        return False
    if (path / "manifest.json").is_file():
        return True
    return any(kind.detect is not None and kind.detect(path) for kind in map(RUN_KINDS.get, RUN_KINDS.names()))


#: how deep `runs_in` looks below a folder (a suite's folder holds BENCHMARK/JUDGE__SETTING)
RUNS_DEPTH = 3


def runs_in(folder: Path) -> list[Path]:
    """The run directories a folder that is not one holds, in path order: `tailor eval`'s `--out` with several
    judges or settings, a suite's folder (each benchmark's runs), a study's folder (its stage reports, `report/`;
    the copies its steps keep are not counted twice). A run directory is not looked into (its `repeats/`), nor are
    hidden folders; an empty list when there is none."""
    if (folder / "study.yaml").is_file():
        return [folder / "report"] if is_run(folder / "report") else []
    found: list[Path] = []

    def walk(path: Path, depth: int) -> None:
        try:
            children = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:  # a folder this user may not read holds no run it could report
            return
        for child in children:
            if is_run(child):
                found.append(child)
            elif (child / "study.yaml").is_file():
                found.extend(runs_in(child))
            elif depth < RUNS_DEPTH:
                walk(child, depth + 1)

    if folder.is_dir():
        walk(folder, 1)
    return found


def describe_runs(runs: Sequence[Path], shown: int = 8) -> str:
    """`N runs: A, B, ...` (the first `shown` by path) for a message naming what a folder holds."""
    names = ", ".join(str(r) for r in runs[:shown]) + (f", and {len(runs) - shown} more" if len(runs) > shown else "")
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}: {names}"


def kind_of(run_dir: Path) -> RunKind:
    """The registered `RunKind` of a run directory."""
    return RUN_KINDS.get(run_kind(run_dir))


def write_merged_report(run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """One report over several run directories of one kind (what `tailor report RUN...` writes); runs of
    different kinds cannot share a table and are refused."""
    kinds = sorted({run_kind(d) for d in run_dirs})
    if len(kinds) > 1:
        raise ConfigError(f"cannot merge {' runs with '.join(kinds)} runs in one report; report them separately")
    return RUN_KINDS.get(kinds[0] if kinds else DEFAULT_KIND).merge(run_dirs, out)
