"""Reports of multiple-choice runs: one table per run (overall, per split, per tier, with 95% bootstrap CIs, the
answered / invalid / failed counts and chance) and, for several runs, one leaderboard row each. The functions
have the shapes a `run_kinds.RunKind` takes (`load_results`, `render_markdown`, `render_html`), so the kind
registers with them."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.benchmarks.choice_results import MANIFEST, PREDICTIONS, RESULTS, compute_results
from tailorbench.datasets.rows import read_appended_jsonl
from tailorbench.errors import DataError
from tailorbench.failures import FailureCheck
from tailorbench.files import write_json_atomic, write_text_atomic
from tailorbench.reporting import html_page, html_table, md_table, page_body, with_ci
from tailorbench.run_kinds import RUN_KINDS, RunKind

Table = tuple[str, list[str], list[list[str]]]
HEADER = ["cell", "items", "accuracy [95% CI]", "answered", "no valid pick", "failed", "chance"]


def load_results(run_dir: Path) -> dict[str, Any]:
    """results.json of a run, recomputed from its manifest and predictions when missing or unreadable; the run
    directory's name goes in `run`."""
    path = run_dir / RESULTS
    try:
        results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest_path = run_dir / MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(manifest_path, None, None, f"not a readable manifest ({exc})") from None
        results = compute_results(manifest, read_appended_jsonl(run_dir / PREDICTIONS))
        write_json_atomic(path, results)
    return {**results, "run": run_dir.name}


def _row(label: str, cell: Mapping[str, Any]) -> list[str]:
    chance = cell.get("chance")
    return [label, str(cell["n"]), with_ci(cell["accuracy"], cell["ci"]), str(cell["answered"]),
            str(cell["invalid"]), str(cell["failed"]), "–" if chance is None else f"{chance:.3f}"]


def tables(runs: Sequence[Mapping[str, Any]]) -> list[Table]:
    """(title, header, rows): a leaderboard of several runs, then each run's cells."""
    out: list[Table] = []
    if len(runs) > 1:
        out.append(("Runs", ["run", "benchmark", "model", "items", "accuracy [95% CI]"],
                    [[r.get("run", ""), r["benchmark"], r["model"], str(r["overall"]["n"]),
                      with_ci(r["overall"]["accuracy"], r["overall"]["ci"])] for r in runs]))
    for run in runs:
        rows = [_row("all", run["overall"])]
        rows += [_row(f"split {name}", cell) for name, cell in run["by_split"].items()]
        rows += [_row(f"tier {name}", cell) for name, cell in run["by_tier"].items()]
        rows += [_row(name, cell) for name, cell in run["by_split_tier"].items()]
        out.append((f"{run['benchmark']} · {run['model']} ({run.get('run', '')})", HEADER, rows))
    return out


def render_markdown(runs: Sequence[Mapping[str, Any]], title: str) -> str:
    parts = [f"# {title}", "", "Accuracy over the answered items, scored by each benchmark's own rule (an answer "
             "without a valid pick is wrong, a failed call is counted apart).", ""]
    for name, header, rows in tables(runs):
        parts += [f"## {name}", "", md_table(header, rows), ""]
    return "\n".join(parts)


def render_html(runs: Sequence[Mapping[str, Any]], title: str) -> str:
    body = "".join(f"<h2>{html.escape(name)}</h2>{html_table(header, rows)}" for name, header, rows in tables(runs))
    return html_page(title, f"<h1>{html.escape(title)}</h1>{body}")


def title(runs: Sequence[Mapping[str, Any]]) -> str:
    return f"{runs[0]['benchmark']}: {runs[0]['model']}" if runs else "multiple-choice run"


def write_reports(runs: Sequence[Mapping[str, Any]], out: Path, heading: str | None = None) -> None:
    """report.md and report.html of `runs` at `out`."""
    heading = heading or (title(runs) if len(runs) == 1 else MERGED_TITLE)
    write_text_atomic(out / "report.md", render_markdown(runs, heading))
    write_text_atomic(out / "report.html", render_html(runs, heading))


def merge(run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """Several multiple-choice runs side by side at `out` (what `tailor report RUN...` writes for this kind)."""
    runs = [load_results(d) for d in run_dirs]
    write_reports(runs, out)
    return runs


def check(results: Mapping[str, Any], max_failed: float | None, what: str | None) -> FailureCheck:
    """The exit-code-3 rule: failed calls against `max_failed` (none allowed by default)."""
    overall = results["overall"]
    return FailureCheck(what or str(results.get("run", "run")), overall["failed"], overall["n"], max_failed or 0.0,
                        list(results.get("first_errors", [])), unit="items")


def html_body(run_dirs: Sequence[Path]) -> str:
    runs = [load_results(d) for d in run_dirs]
    return page_body(render_html(runs, title(runs) if len(runs) == 1 else MERGED_TITLE))


MERGED_TITLE = "Multiple-choice runs"

#: `run_choice` runs: how `report`, `view` and the API read them (the registry's lazy table names this module)
MULTIPLE_CHOICE = RUN_KINDS.register("multiple-choice")(RunKind(
    load_results=load_results, check=check, render_markdown=render_markdown, render_html=render_html,
    title=title, merged_title=MERGED_TITLE, html_body=html_body))
