"""The `pairwise` run kind (`tailor eval` runs, train-rm's held-out evaluations): how `report`, `compare`, the
viewer and the API read one, registered in `run_kinds.RUN_KINDS`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import DataError
from tailorbench.evaluate.report import render_html, render_html_body, render_markdown, run_title
from tailorbench.evaluate.results import (
    check_run,
    dataset_provenance,
    load_results,
    parse_predictions,
    read_manifest,
    read_predictions,
)
from tailorbench.files import whole_lines
from tailorbench.redact import redact
from tailorbench.run_kinds import RUN_KINDS, RunKind, ViewRow, ViewRows

#: the verdict outcomes a pairwise run's filter offers, in the column's code order
OUTCOMES = ("correct", "wrong", "invalid", "failed", "abstained")
#: the outcome code of a verdict that chose no answer, by its status
STATUS_OUTCOME = {"invalid": 2, "failed": 3, "abstain": 4}


def _html_body(run_dirs: Sequence[Path]) -> str:
    runs = [load_results(d) for d in run_dirs]
    return render_html_body(runs, "leaderboard" if len(runs) > 1 else run_title(runs))


def _key_files(run_dir: Path) -> list[Path]:
    return [run_dir / "manifest.json", run_dir / "predictions.jsonl"]


def _view_rows(run_dir: Path) -> ViewRows:
    """Every prediction line the run holds in full (a line being written is left out), with its case's classes."""
    manifest = read_manifest(run_dir)
    path = run_dir / "predictions.jsonl"
    if not path.is_file():
        raise DataError(path, None, None, "not a run directory: predictions.jsonl is missing")
    overlap: Mapping[str, str] = manifest.get("tier_overlap") or {}
    block = (manifest.get("config") or {}).get("training_overlap")
    classes: Mapping[str, str] | None = (block.get("cases") or {}) if isinstance(block, dict) else None
    rows = []
    for row in parse_predictions(path, whole_lines(path)):
        case_id = str(row["case_id"])
        outcome = STATUS_OUTCOME.get(str(row.get("status")), 0 if row.get("correct") else 1)
        training = None if classes is None else classes.get(case_id, "unseen")
        rows.append(ViewRow(row, outcome, row.get("len_chosen"), row.get("len_rejected"),
                            overlap.get(case_id, "unique"), training))
    labels = dataset_provenance(manifest)["labels"]
    chosen = "chosen (human-preferred)" if labels == "human-labelled" else f"chosen (labels: {labels})"
    return ViewRows(label=redact(f"{manifest['judge']} / {manifest['setting']}"),
                    answers=(chosen, "rejected"),
                    orders={"AB": "chosen shown as A", "BA": "chosen shown as B"}, outcomes=OUTCOMES,
                    manifest=manifest, rows=rows)


def _case_scores(run_dir: Path) -> dict[str, tuple[float, str, str, str]]:
    """Case id -> (case score, split, tier, user): what `tailor compare` pairs."""
    from tailorbench.evaluate.metrics import case_scores

    cs = case_scores(read_predictions(run_dir))
    return {str(c): (float(v), str(s), str(t), str(u))
            for c, v, s, t, u in zip(cs.ids, cs.score.tolist(), cs.split, cs.tier, cs.user)}


def _title(runs: Sequence[dict[str, Any]]) -> str:
    return f"tailorbench: {run_title(runs)}"


#: `tailor eval` runs: how `report`, `compare`, `view` and the API read them
PAIRWISE = RUN_KINDS.register("pairwise")(RunKind(
    html_body=_html_body, load_results=load_results, check=check_run, render_markdown=render_markdown,
    render_html=render_html, title=_title, merged_title="tailorbench leaderboard", key_files=_key_files,
    view_rows=_view_rows, case_scores=_case_scores))
