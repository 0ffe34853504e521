"""The `gen-eval` run kind (`tailor gen-eval` runs): how `report`, the viewer and the API read one, registered
in `run_kinds.RUN_KINDS`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tailorbench.datasets.rows import InvalidRows, last_per_key, parse_jsonl
from tailorbench.files import whole_lines
from tailorbench.geneval.generate import GENERATIONS, MODEL, REFERENCE, VERDICTS, generation_key, verdict_key
from tailorbench.geneval.report import render_html, render_markdown, run_label
from tailorbench.geneval.results import check_run, load_results
from tailorbench.redact import redact
from tailorbench.reporting import page_body
from tailorbench.run_kinds import RUN_KINDS, RunKind, ViewRow, ViewRows, read_manifest

#: a gen-eval verdict: which answer the judge picked, or why none
OUTCOMES = ("generated", "reference", "invalid", "failed", "abstained")
STATUS_OUTCOME = {"invalid": 2, "failed": 3, "abstain": 4}


def _html_body(run_dirs: Sequence[Path]) -> str:
    runs = [load_results(d) for d in run_dirs]
    title = "gen-eval" if len(runs) > 1 else f"gen-eval: {runs[0].get('model')}"
    return page_body(render_html(runs, title))


def _key_files(run_dir: Path) -> list[Path]:
    return [run_dir / "manifest.json", run_dir / VERDICTS, run_dir / GENERATIONS, run_dir / "results.json"]


def _rows(path: Path, key: Callable[[dict[str, Any]], tuple[str, str]]) -> list[dict[str, Any]]:
    """The whole lines of a run file, the last per key (the predictions format rule, `rows.last_per_key`)."""
    if not path.is_file():
        return []
    return last_per_key([row for _, row in parse_jsonl(path, whole_lines(path), InvalidRows())], key)


def _view_rows(run_dir: Path) -> ViewRows:
    """The verdicts the run holds in full, each with the lengths of the generated and the reference answer."""
    manifest = read_manifest(run_dir)
    answers: dict[str, dict[str, str]] = {}
    for row in _rows(run_dir / GENERATIONS, generation_key):
        answers.setdefault(str(row["case_id"]), {})[str(row.get("role"))] = str(row.get("answer") or "")
    rows = []
    for row in _rows(run_dir / VERDICTS, verdict_key):
        pair = answers.get(str(row["case_id"]), {})
        outcome = STATUS_OUTCOME.get(str(row.get("status")), 0 if row.get("winner") == "generated" else 1)
        rows.append(ViewRow(row, outcome, len(pair.get(MODEL, "")), len(pair.get(REFERENCE, ""))))
    label = redact(f"{manifest.get('model')} vs {manifest.get('reference')} (judge {manifest.get('judge')})")
    return ViewRows(label=label, answers=("generated", "reference"),
                    orders={"AB": "generated shown as A", "BA": "generated shown as B"}, outcomes=OUTCOMES,
                    manifest=manifest, rows=rows,
                    answer_text={k: (v.get(MODEL, ""), v.get(REFERENCE, "")) for k, v in answers.items()})


def _case_scores(run_dir: Path) -> dict[str, tuple[float, str, str, str]]:
    """Case id -> (win score of the generated answer: 1 won, 0 lost, 0.5 tie, the mean over its valid verdicts;
    split, tier, user), for every case with a score: what `tailor compare` pairs."""
    from tailorbench.geneval.results import case_table

    records = case_table(_rows(run_dir / GENERATIONS, generation_key), _rows(run_dir / VERDICTS, verdict_key))
    return {str(r["case_id"]): (float(r["score"]), str(r["split"]), str(r["tier"]), str(r["user_id"]))
            for r in records if r["score"] is not None}


def _title(runs: Sequence[dict[str, Any]]) -> str:
    return f"tailorbench gen-eval: {run_label(runs[0])}"


#: `tailor gen-eval` runs: how `report`, `view` and the API read them
GEN_EVAL = RUN_KINDS.register("gen-eval")(RunKind(
    html_body=_html_body, load_results=load_results, check=check_run, render_markdown=render_markdown,
    render_html=render_html, title=_title, merged_title="tailorbench gen-eval: side by side",
    key_files=_key_files, view_rows=_view_rows, case_scores=_case_scores))
