"""Read a tailorbench run directory (`predictions.jsonl`) as ratings, so judges meet humans on the same items.

A prediction's label is read through its order: choice "A" in order "AB" (chosen shown as A) is "chosen".
The rater is `judge@setting`; when a run holds both orders for a case, each order is its own rater
(`judge@setting/AB`, `judge@setting/BA`) so order consistency shows up as their agreement. A verdict that is
not ok (abstain, invalid, failed) is a missing rating, counted by status.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from tailorbench.agreement.records import Rating, RatingSet
from tailorbench.datasets.rows import InvalidRows, last_per_key, read_jsonl
from tailorbench.errors import DataError
from tailorbench.files import load_json
from tailorbench.registry import setting_names
from tailorbench.schema import RunManifest, check_fields, check_prediction_line

PREDICTIONS = "predictions.jsonl"
MANIFEST = "manifest.json"
_REQUIRED = ("case_id", "judge", "setting", "order", "choice", "status")


def _label(choice: str, order: str) -> str:
    """Map a positional choice back to the answer it named."""
    return "chosen" if (choice == "A") == (order == "AB") else "rejected"


def _parse(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The lines of predictions.jsonl with their numbers, the last per (judge, setting, case, order): the
    predictions format rule (`rows.last_per_key`; a failed call retried by `--resume` appends its new line).
    Each line is checked strictly against `schema.Prediction` (`schema.check_prediction_line`, as every reader of
    runs does), and the run's manifest.json, when there is one, against `schema.RunManifest`."""
    _check_manifest(path.parent / MANIFEST)
    settings = setting_names()
    rows: list[tuple[int, dict[str, Any]]] = []
    for line_no, row in read_jsonl(path, InvalidRows()):
        check_prediction_line(path, line_no, row, settings)
        for key in _REQUIRED:
            if key not in row:
                raise DataError(path, line_no, key, "missing")
        if row["status"] == "ok" and row["choice"] not in ("A", "B"):
            raise DataError(path, line_no, "choice", f"an ok verdict needs 'A' or 'B', got {row['choice']!r}")
        rows.append((line_no, row))
    return last_per_key(rows, lambda item: (item[1]["judge"], item[1]["setting"], str(item[1]["case_id"]),
                                            item[1]["order"]))


def _check_manifest(path: Path) -> None:
    """A run's manifest.json read strictly: a JSON object whose fields have `schema.RunManifest`'s types."""
    if not path.exists():
        return
    data: dict[str, Any] = load_json(path, dict, "a run manifest (a JSON object)")
    check_fields(RunManifest, path, None, data, "run manifest")


def read_run_dir(run_dir: str | Path, group: str = "model") -> RatingSet:
    """Turn a run directory's predictions into ratings (item = case_id, label = chosen/rejected)."""
    run_dir = Path(run_dir)
    path = run_dir / PREDICTIONS
    if not path.is_file():
        raise DataError(path, None, None, f"a run directory must contain {PREDICTIONS}")
    rows = _parse(path)
    orders: dict[tuple[str, str], set[str]] = defaultdict(set)
    for _, row in rows:
        orders[row["judge"], row["setting"]].add(row["order"])
    out = RatingSet(sources=[str(run_dir)])
    for line_no, row in rows:  # one line per (rater, case): `_parse` keeps the last
        rater = f"{row['judge']}@{row['setting']}"
        if len(orders[row["judge"], row["setting"]]) > 1:
            rater += f"/{row['order']}"
        if row["status"] != "ok":
            out.missing[f"verdict {row['status']}"] += 1
            continue
        out.ratings.append(Rating(str(row["case_id"]), rater, _label(row["choice"], row["order"]), group, str(path),
                                  line_no))
    return out


def read_run_tiers(paths: list[str | Path]) -> dict[str, str]:
    """case_id -> tier of every run directory among `paths` (predictions carry the tier), so a judge's
    admissibility is also given per tier; runs disagreeing on a case's tier are an error naming both."""
    out: dict[str, tuple[str, str]] = {}
    for run_dir in paths:
        path = Path(run_dir) / PREDICTIONS
        if not Path(run_dir).is_dir() or not path.is_file():
            continue
        for line_no, row in _parse(path):
            tier = row.get("tier")
            if not isinstance(tier, str) or not tier:
                continue
            case = str(row["case_id"])
            prev = out.setdefault(case, (tier, f"{path}:{line_no}"))
            if prev[0] != tier:
                raise DataError(path, line_no, "tier", f"case {case!r} has tier {prev[0]!r} in {prev[1]}")
    return {case: tier for case, (tier, _) in out.items()}
