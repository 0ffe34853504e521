"""What the benchmark run kinds share: a `RunKind` built from a kind's results function and tables. results.json
is read or, when missing or unreadable, recomputed from the manifest and predictions alone; the report pages are
the tables in Markdown and HTML; a failed call counts against `--max-failed` (none by default)."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.datasets.rows import last_per_key, read_appended_jsonl
from tailorbench.errors import DataError
from tailorbench.failures import FailureCheck
from tailorbench.files import load_json, write_json_atomic
from tailorbench.reporting import html_page, html_table, inline_html, md_table, page_body
from tailorbench.run_kinds import RunKind

MANIFEST, PREDICTIONS, RESULTS = "manifest.json", "predictions.jsonl", "results.json"

Table = tuple[str, list[str], list[list[str]]]


def item_key(row: dict[str, Any]) -> str:
    """What one prediction line of a benchmark run answers: its item."""
    return str(row["item"])


def read_items(path: Path) -> list[dict[str, Any]]:
    """A benchmark run's prediction lines, the last per item (the predictions format rule, `rows.last_per_key`:
    a failed call retried by `--resume` appends its new line); a torn last line (kill -9) is cut off."""
    rows: list[dict[str, Any]] = read_appended_jsonl(path)
    return last_per_key(rows, item_key)
Runs = Sequence[Mapping[str, Any]]


def benchmark_kind(compute: Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]],
                   tables: Callable[[Runs], list[Table]], intro: str, title: Callable[[Runs], str],
                   merged_title: str, headline: Callable[[Runs], list[str]] | None = None) -> RunKind:
    """The `RunKind` of a benchmark run whose results `compute(manifest, predictions)` gives; `headline(runs)`:
    the paragraphs a report opens with (a `## Headline` section before the tables)."""

    def opening(runs: Runs) -> list[str]:
        return headline(runs) if headline is not None else []

    def load_results(run_dir: Path) -> dict[str, Any]:
        try:
            results: dict[str, Any] = load_json(run_dir / RESULTS, dict, "a run's results (a JSON object)")
        except DataError:  # missing or damaged: computed again from the manifest and the predictions
            manifest = load_json(run_dir / MANIFEST, dict, "a run manifest (a JSON object)")
            results = compute(manifest, read_items(run_dir / PREDICTIONS))
            write_json_atomic(run_dir / RESULTS, results)
        return {**results, "run": run_dir.name}

    def render_markdown(runs: Runs, heading: str) -> str:
        parts = [f"# {heading}", ""]
        if lines := opening(runs):
            parts += ["## Headline", ""] + [x for line in lines for x in (line, "")]
        parts += [intro, ""]
        for name, header, rows in tables(runs):
            parts += [f"## {name}", "", md_table(header, rows), ""]
        return "\n".join(parts)

    def render_html(runs: Runs, heading: str) -> str:
        body = "".join(f"<h2>{html.escape(name)}</h2>{html_table(header, rows)}" for name, header, rows in tables(runs))
        lines = opening(runs)
        top = ("<h2>Headline</h2>" + "".join(f"<p>{inline_html(line)}</p>" for line in lines)) if lines else ""
        return html_page(heading, f"<h1>{html.escape(heading)}</h1>{top}<p>{html.escape(intro)}</p>{body}")

    def check(results: Mapping[str, Any], max_failed: float | None, what: str | None) -> FailureCheck:
        overall = results["overall"]
        return FailureCheck(what or str(results.get("run", "run")), overall["failed"], overall["n"],
                            max_failed or 0.0, list(results.get("first_errors", [])), unit="items")

    def html_body(run_dirs: Sequence[Path]) -> str:
        runs = [load_results(d) for d in run_dirs]
        return page_body(render_html(runs, title(runs) if len(runs) == 1 else merged_title))

    def sections(run_dir: Path) -> list[tuple[str, str]]:
        """What `tailor view` shows of one run: its report (items are not pairs, so there are no verdict rows)."""
        return [(title([load_results(run_dir)]), html_body([run_dir]))]

    def key_files(run_dir: Path) -> list[Path]:
        return [run_dir / MANIFEST, run_dir / PREDICTIONS]

    return RunKind(load_results=load_results, check=check, render_markdown=render_markdown,
                   render_html=render_html, title=title, merged_title=merged_title, html_body=html_body,
                   sections=sections, key_files=key_files)
