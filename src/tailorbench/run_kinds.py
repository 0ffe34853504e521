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

import json
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
class RunKind:
    """How one kind of run directory is read and reported: `load_results` is its results.json (recomputed when
    stale or missing), `check(results, max_failed, what)` its exit-code-3 rule (`max_failed`: the run's own when
    None), `render_markdown` / `render_html` (runs, title) its report pages, `title(runs)` the title of a one-run
    report, `merged_title` that of several side by side, `html_body(run_dirs)` the report's body the viewer
    shows."""

    load_results: Callable[[Path], dict[str, Any]]
    check: Callable[[Mapping[str, Any], float | None, str | None], FailureCheck]
    render_markdown: Callable[[Runs, str], str]
    render_html: Callable[[Runs, str], str]
    title: Callable[[Runs], str]
    merged_title: str
    html_body: Callable[[Sequence[Path]], str]

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
    lazy={"pairwise": "tailorbench.evaluate.report", "gen-eval": "tailorbench.geneval.report"},
)


def run_kind(run_dir: Path) -> str:
    """The kind a run directory's manifest.json names (`pairwise` when it names none or is missing)."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return DEFAULT_KIND  # the kind's own loader reports the missing file with its own clear message
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(path, None, None, f"not a readable manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise DataError(path, None, None, "a manifest is a JSON object")
    return str(manifest.get("kind", DEFAULT_KIND))


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
