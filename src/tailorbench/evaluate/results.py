"""Turn a run directory's predictions into results.json and its reports. Reads only the run directory, so
every reported number can be recomputed from it alone (`tailor report RUN` does exactly that)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from tailorbench.errors import DataError
from tailorbench.evaluate.metrics import compute_metrics
from tailorbench.files import load_or_compute, write_json_atomic

RESULTS = "results.json"


def read_predictions(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "predictions.jsonl"
    if not path.exists():
        raise DataError(path, None, None, "not a run directory: predictions.jsonl is missing")
    rows = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(orjson.loads(line))
                except orjson.JSONDecodeError as exc:
                    raise DataError(path, number, None, f"malformed JSON: {exc.msg}") from None
    return rows


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.exists():
        raise DataError(path, None, None, "not a run directory: manifest.json is missing")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def compute_results(run_dir: Path, predictions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Results of a run from its manifest and predictions (read from predictions.jsonl unless the runner
    passes the very lines it just wrote; tests check both give the same numbers)."""
    manifest = read_manifest(run_dir)
    if predictions is None:
        predictions = read_predictions(run_dir)
    config = manifest.get("config", {})
    body = compute_metrics(
        predictions,
        ci_unit=config.get("ci_unit", "case"),
        n_boot=int(config.get("n_boot", 1000)),
        seed=int(manifest.get("seed", 0)),
        user_attributes=manifest.get("user_attributes", {}),
        tier_overlap=manifest.get("tier_overlap", {}),
    )
    expected = manifest.get("n_cases", 0)
    seen = len({r["case_id"] for r in predictions})
    stats = manifest.get("data_stats", {})
    return {
        "judge": manifest["judge"],
        "setting": manifest["setting"],
        "data": manifest.get("data"),
        "dataset_fingerprint": manifest.get("dataset_fingerprint"),
        "orders": manifest.get("orders"),
        "ci_unit": config.get("ci_unit", "case"),
        "n_boot": int(config.get("n_boot", 1000)),
        "status": manifest.get("status"),
        "cases_planned": expected,
        "cases_judged": seen,
        "skipped_rows": stats.get("skipped_rows", 0),
        "warnings": config.get("warnings", []),
        **body,
    }


def finalize_run(run_dir: Path, predictions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write results.json, report.md and report.html for one run."""
    from tailorbench.evaluate.report import write_run_reports

    results = compute_results(run_dir, predictions)
    write_json_atomic(run_dir / RESULTS, results)
    write_run_reports([results], run_dir)
    return results


def load_results(run_dir: Path) -> dict[str, Any]:
    """results.json of a run, recomputed from predictions when it is missing (e.g. an interrupted run)."""
    return load_or_compute(run_dir / RESULTS, lambda: compute_results(run_dir))
