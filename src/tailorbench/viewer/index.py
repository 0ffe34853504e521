"""The viewer's index of one run directory: compact columns the browser filters in JavaScript (one small integer
per case and per verdict, names stored once), the case and verdict texts apart (loaded after the first paint),
and the report's own HTML of the run's tables. Built once and stored beside the run as `.view-index.json`, or
in the cache (`$TAILORBENCH_CACHE/view`) when the run directory is read-only; keyed by a hash of the verdicts
and the manifest, so a changed run is indexed again."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from tailorbench.errors import DataError
from tailorbench.files import load_json, write_text_atomic
from tailorbench.logs import get_logger
from tailorbench.redact import MASK, SECRET_QUERY_KEYS, redact, redact_obj
from tailorbench.run_kinds import ViewRows

log = get_logger(__name__)

#: bump when the index's shape or the report HTML it stores changes (old indexes are then rebuilt)
FORMAT = 5
INDEX = ".view-index.json"
#: meta keys under which a benchmark carries per-annotator labels of a case
HUMAN_KEYS = ("annotator_labels", "annotations", "human_labels", "labels", "votes")


def cache_root() -> Path:
    """Where indexes of read-only run directories go."""
    base = os.environ.get("TAILORBENCH_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "tailorbench") / "view"


def _digest(*paths: Path) -> str:
    digest = hashlib.sha256(f"view-index {FORMAT}".encode())
    for path in paths:
        digest.update(path.name.encode())
        if path.is_file():
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def detect_kind(run_dir: Path) -> str:
    """The run kind of a directory (`run_kinds.detect_kind`): its manifest's, or one recognised by its files."""
    from tailorbench.run_kinds import detect_kind as detect

    return detect(run_dir)


def expand_runs(paths: Sequence[Path]) -> list[Path]:
    """The run directories named, with a `train-rm` output directory standing for its held-out evaluations
    (`OUT/eval/epoch-N`, in epoch order) and any other folder that is not a run directory for the runs in it
    (`run_kinds.runs_in`); a .json file is an estimate file (`tailor estimate --out`)."""
    from tailorbench.run_kinds import is_run, runs_in

    out: list[Path] = []
    for path in paths:
        if path.is_file() and path.suffix.lower() == ".json":  # an estimate file (estimate/run_kind.py)
            out.append(path)
            continue
        if not path.is_dir():
            raise DataError(path, None, None, "no such run directory (or estimate file, tailor estimate --out "
                                              "FILE.json)")
        epochs = sorted((p for p in (path / "eval").glob("epoch-*") if (p / "manifest.json").is_file()),
                        key=lambda p: int(p.name.split("-")[1]) if p.name.split("-")[1].isdigit() else 0)
        if not (path / "manifest.json").is_file() and epochs:
            out += epochs
        elif not is_run(path) and runs_in(path):
            out += runs_in(path)  # a folder of runs: eval's with several judges or settings, a suite's, a study's
        else:
            out.append(path)
    return out


def _key_files(run_dir: Path, kind: str) -> list[Path]:
    from tailorbench.run_kinds import RUN_KINDS

    files = RUN_KINDS.get(kind).key_files
    return files(run_dir) if files is not None else [run_dir / "manifest.json"]


def index_path(run_dir: Path) -> Path:
    """Beside the run when it is writable, else (and for a file: an estimate) in the cache under a hash of the
    run's absolute path."""
    if run_dir.is_dir() and os.access(run_dir, os.W_OK):
        return run_dir / INDEX
    name = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:24]
    return cache_root() / f"{name}.json"


def load_index(run_dir: Path) -> dict[str, Any]:
    """The run's index: the stored one when its key matches the run's files, else built and stored."""
    kind = detect_kind(run_dir)
    key = _digest(*_key_files(run_dir, kind))
    path = index_path(run_dir)
    if path.is_file():
        try:
            stored = load_json(path, dict, "the viewer's index of a run (a JSON object)")
            if stored.get("key") == key:
                return stored
        except DataError:
            pass  # a torn or damaged index is rebuilt like a stale one
    index = build_index(run_dir, kind)
    index["key"] = key
    try:
        write_text_atomic(path, orjson.dumps(index).decode())
    except OSError as exc:  # the viewer still works, it only rebuilds next time
        log.warning("could not store the view index of %s (%s); it is rebuilt on the next start", run_dir, exc)
    return index


def build_index(run_dir: Path, kind: str) -> dict[str, Any]:
    """The index of a run of any registered kind: its verdicts as columns (`RunKind.view_rows`), or its report
    sections (`RunKind.sections`, a kind without cases)."""
    from tailorbench.run_kinds import RUN_KINDS

    run_kind = RUN_KINDS.get(kind)
    if run_kind.view_rows is not None:
        return _rows_index(kind, run_dir, run_kind.view_rows(run_dir))
    if run_kind.sections is not None:
        sections = run_kind.sections(run_dir)
        what = {"stage": "stage reports", "estimate": "estimate"}.get(kind, f"{kind} run")
        return {"format": FORMAT, "kind": "stage", "label": f"{what} ({', '.join(s for s, _ in sections)})",
                "stages": [{"stage": s, "html": body} for s, body in sections]}
    raise DataError(run_dir, None, None, f"the viewer does not know runs of kind {kind!r}")


# --- shared pieces ----------------------------------------------------------------------------------------


class _Names:
    """Strings stored once; columns hold their positions."""

    def __init__(self, first: Sequence[str] = ()) -> None:
        self.names: list[str] = list(first)
        self._at = {n: k for k, n in enumerate(self.names)}

    def code(self, name: Any) -> int:
        text = "" if name is None else str(name)
        at = self._at.get(text)
        if at is None:
            at = self._at[text] = len(self.names)
            self.names.append(text)
        return at


def _public_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What the run page shows of a manifest: redacted, without the per-case blocks (they are columns)."""
    config = {k: v for k, v in (manifest.get("config") or {}).items() if k != "training_overlap"}
    block = (manifest.get("config") or {}).get("training_overlap")
    if isinstance(block, dict):
        config["training_overlap"] = {k: v for k, v in block.items() if k != "cases"}
    keep = {k: v for k, v in manifest.items() if k not in ("config", "tier_overlap", "user_attributes")}
    return dict(_mask_keys(redact_obj({**keep, "config": config})))


def _mask_keys(value: Any) -> Any:
    """Values under credential-like keys (`api_key`, `token`, ...) masked, beyond what `redact` masks."""
    if isinstance(value, dict):
        return {k: MASK if str(k).strip().lower().replace("-", "_") in SECRET_QUERY_KEYS and v else _mask_keys(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_keys(v) for v in value]
    return value


def _human(meta: Mapping[str, Any]) -> Any:
    for key in HUMAN_KEYS:
        value = meta.get(key)
        if isinstance(value, list | dict) and value:
            return value
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _report_html(kind: str, run_dir: Path) -> str:
    """The run's tables as the report renders them (one rendering: `tailor report` writes the same)."""
    from tailorbench.viewer.tables import report_body

    return report_body(kind, [run_dir])


class _Builder:
    """Columns of cases and verdicts of one run, filled row by row."""

    def __init__(self, outcomes: Sequence[str]) -> None:
        self.split, self.tier, self.user = _Names(), _Names(), _Names()
        self.overlap, self.training, self.judge = _Names(["unique"]), _Names(), _Names()
        self.outcomes = list(outcomes)
        self.case_at: dict[str, int] = {}
        self.cases: dict[str, list[Any]] = {k: [] for k in ("id", "split", "tier", "user", "overlap", "training",
                                                            "len_a", "len_b")}
        self.preds: dict[str, list[Any]] = {k: [] for k in ("case", "order", "judge", "outcome", "choice",
                                                            "latency", "tokens_in", "tokens_out", "cost", "cached",
                                                            "truncated")}
        self.pred_text: list[list[Any]] = []

    def case(self, row: Mapping[str, Any], overlap: str, training: str | None, len_a: Any, len_b: Any) -> int:
        case_id = str(row["case_id"])
        at = self.case_at.get(case_id)
        if at is None:
            at = self.case_at[case_id] = len(self.cases["id"])
            c = self.cases
            c["id"].append(case_id)
            c["split"].append(self.split.code(row.get("split")))
            c["tier"].append(self.tier.code(row.get("tier")))
            c["user"].append(self.user.code(row.get("user_id")))
            c["overlap"].append(self.overlap.code(overlap))
            c["training"].append(-1 if training is None else self.training.code(training))
            c["len_a"].append(int(len_a or 0))
            c["len_b"].append(int(len_b or 0))
        return at

    def verdict(self, row: Mapping[str, Any], case: int, outcome: int) -> None:
        p = self.preds
        p["case"].append(case)
        p["order"].append(0 if row.get("order") == "AB" else 1)
        p["judge"].append(self.judge.code(redact(str(row.get("judge", "")))))
        p["outcome"].append(outcome)
        p["choice"].append({"A": 1, "B": 2}.get(str(row.get("choice")), 0))
        p["latency"].append(_number(row.get("latency_s")))
        p["tokens_in"].append(int(row.get("prompt_tokens") or 0))
        p["tokens_out"].append(int(row.get("completion_tokens") or 0))
        p["cost"].append(_number(row.get("cost_usd")))
        p["cached"].append(1 if row.get("cached") else 0)
        p["truncated"].append(1 if row.get("truncated") else 0)
        scores = row.get("scores")
        self.pred_text.append([row.get("raw"), row.get("error"),
                               scores if isinstance(scores, dict) and scores else None])

    def inconsistent(self, first_of_pair: Sequence[int]) -> list[int]:
        """Per case: 1 when two valid verdicts in the two orders disagree on which answer is better (the
        outcome codes 0 and 1 are the two answers), else 0."""
        seen: dict[tuple[int, int], list[int]] = {}
        for k, (case, judge) in enumerate(zip(self.preds["case"], self.preds["judge"], strict=True)):
            seen.setdefault((case, judge), []).append(self.preds["outcome"][k])
        out = [0] * len(self.cases["id"])
        for (case, _), outcomes in seen.items():
            if len(outcomes) == 2 and all(o in first_of_pair for o in outcomes) and outcomes[0] != outcomes[1]:
                out[case] = 1
        return out

    def columns(self) -> dict[str, Any]:
        return {
            "names": {"split": self.split.names, "tier": self.tier.names, "user": self.user.names,
                      "overlap": self.overlap.names, "training": self.training.names, "judge": self.judge.names,
                      "outcome": self.outcomes},
            "cases": {**self.cases, "inconsistent": self.inconsistent((0, 1))},
            "preds": self.preds,
        }


def _case_text(builder: _Builder, found: Mapping[str, Any], answers: Mapping[str, tuple[str, str]] | None = None
               ) -> tuple[list[Any], dict[str, Any]]:
    """[question, answer a, answer b, human labels] per case and the persona of each user; pairwise: a is the
    chosen answer, b the rejected one; gen-eval (`answers`): a is the generated answer, b the reference."""
    texts: list[Any] = []
    personas: dict[str, Any] = {}
    for case_id in builder.cases["id"]:
        case = found.get(case_id)
        if case is None:
            a, b = (answers or {}).get(case_id, (None, None))
            texts.append([None, a, b, None])
            continue
        personas.setdefault(case.user_id, case.persona)
        a, b = answers[case_id] if answers and case_id in answers else (case.chosen, case.rejected)
        texts.append([case.question, a, b, _human(case.meta)])
    return texts, personas


# --- a run of any kind with verdicts ------------------------------------------------------------------------


def _rows_index(kind: str, run_dir: Path, view: ViewRows) -> dict[str, Any]:
    builder = _Builder(view.outcomes)
    for r in view.rows:
        builder.verdict(r.row, builder.case(r.row, r.overlap, r.training, r.len_a, r.len_b), r.outcome)
    from tailorbench.datasets.loader import load_run_cases

    found, note = load_run_cases(view.manifest, set(builder.case_at))
    texts, personas = _case_text(builder, found, view.answer_text)
    return {
        "format": FORMAT, "kind": kind, "label": view.label, "answers": list(view.answers), "orders": view.orders,
        "manifest": _public_manifest(view.manifest), "data_note": note, "report": _report_html(kind, run_dir),
        **builder.columns(), "text": {"cases": texts, "preds": builder.pred_text, "personas": personas},
    }
