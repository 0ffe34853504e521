"""The viewer's index of one run directory: compact columns the browser filters in JavaScript (one small integer
per case and per verdict, names stored once), the case and verdict texts apart (loaded after the first paint),
and the report's own HTML of the run's tables. Built once and stored beside the run as `.view-index.json`, or
in the cache (`$TAILORBENCH_CACHE/view`) when the run directory is read-only; keyed by a hash of the verdicts
and the manifest, so a changed run is indexed again."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from tailorbench.errors import DataError, TailorError
from tailorbench.files import write_text_atomic
from tailorbench.logs import get_logger
from tailorbench.redact import MASK, SECRET_QUERY_KEYS, redact, redact_obj

log = get_logger(__name__)

#: bump when the index's shape changes (old indexes are then rebuilt)
FORMAT = 3
INDEX = ".view-index.json"
#: the verdict outcomes a pairwise run's filter offers, in the column's code order
PAIRWISE_OUTCOMES = ("correct", "wrong", "invalid", "failed", "abstained")
#: a gen-eval verdict: which answer the judge picked, or why none
GENEVAL_OUTCOMES = ("generated", "reference", "invalid", "failed", "abstained")
_STATUS = {"invalid": 2, "failed": 3, "abstain": 4}
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
    """`pairwise`, `gen-eval` or `stage` (a directory of stage reports, `STAGE.json`)."""
    from tailorbench.threestage.report import STAGES

    if (run_dir / "manifest.json").is_file():
        from tailorbench.run_kinds import run_kind

        return run_kind(run_dir)
    if any((run_dir / f"{stage}.json").is_file() for stage in STAGES):
        return "stage"
    raise DataError(run_dir, None, None, "not a run directory: no manifest.json and no stage report "
                                        f"({', '.join(f'{s}.json' for s in STAGES)})")


def expand_runs(paths: Sequence[Path]) -> list[Path]:
    """The run directories named, with a `train-rm` output directory standing for its held-out evaluations
    (`OUT/eval/epoch-N`, in epoch order)."""
    out: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise DataError(path, None, None, "no such run directory")
        epochs = sorted((p for p in (path / "eval").glob("epoch-*") if (p / "manifest.json").is_file()),
                        key=lambda p: int(p.name.split("-")[1]) if p.name.split("-")[1].isdigit() else 0)
        if not (path / "manifest.json").is_file() and epochs:
            out += epochs
        else:
            out.append(path)
    return out


def _key_files(run_dir: Path, kind: str) -> list[Path]:
    if kind == "stage":
        from tailorbench.threestage.report import STAGES

        reports = [run_dir / f"{s}.json" for s in STAGES]
        relevance = run_dir / "relevance.json"
        sources = json.loads(relevance.read_text(encoding="utf-8")).get("sources") or [] if relevance.is_file() else []
        return [*reports, *(Path(str(p)) for p in sources)]  # the per-item votes come from the sources
    if kind == "gen-eval":
        return [run_dir / "manifest.json", run_dir / "verdicts.jsonl", run_dir / "generations.jsonl",
                run_dir / "results.json"]
    return [run_dir / "manifest.json", run_dir / "predictions.jsonl"]


def index_path(run_dir: Path) -> Path:
    """Beside the run when it is writable, else in the cache under a hash of the run's absolute path."""
    if os.access(run_dir, os.W_OK):
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
            stored = orjson.loads(path.read_bytes())
            if isinstance(stored, dict) and stored.get("key") == key:
                return stored
        except orjson.JSONDecodeError:
            pass  # a torn index is rebuilt like a stale one
    index = build_index(run_dir, kind)
    index["key"] = key
    try:
        write_text_atomic(path, orjson.dumps(index).decode())
    except OSError as exc:  # the viewer still works, it only rebuilds next time
        log.warning("could not store the view index of %s (%s); it is rebuilt on the next start", run_dir, exc)
    return index


def build_index(run_dir: Path, kind: str) -> dict[str, Any]:
    if kind == "stage":
        return _stage_index(run_dir)
    if kind == "gen-eval":
        return _geneval_index(run_dir)
    if kind == "pairwise":
        return _pairwise_index(run_dir)
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


def _load_cases(manifest: Mapping[str, Any], wanted: set[str]) -> tuple[dict[str, Any], str]:
    """The benchmark's cases the run judged (by id) and a note on where their text came from; a benchmark that
    cannot be read any more leaves the viewer without case text, not broken."""
    from tailorbench.datasets import load_benchmark

    data = str(manifest.get("data") or "")
    layout = (manifest.get("data_stats") or {}).get("layout")
    try:
        benchmark = load_benchmark(data, skip_invalid=True, layout=layout if layout in ("native", "scored") else None)
    except (TailorError, OSError, ValueError) as exc:
        return {}, f"the case text is not shown: the run's data ({redact(data)}) could not be read ({redact(str(exc))})"
    found = {c.id: c for c in benchmark.cases if c.id in wanted}
    note = f"case text from {redact(data)}"
    if len(found) < len(wanted):
        note += f" ({len(wanted) - len(found)} of {len(wanted)} judged cases are no longer in it)"
    return found, note


def _human(meta: Mapping[str, Any]) -> Any:
    for key in HUMAN_KEYS:
        value = meta.get(key)
        if isinstance(value, list | dict) and value:
            return value
    return None


def _whole_lines(path: Path) -> bytes:
    """A file a run appends to, up to its last newline: the line a running or killed process is writing is left
    out (and left as it is: the viewer never changes a run directory)."""
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1]


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


# --- pairwise runs (tailor eval, train-rm's held-out evaluation) -------------------------------------------


def _pairwise_index(run_dir: Path) -> dict[str, Any]:
    from tailorbench.evaluate.results import parse_predictions, read_manifest

    manifest = read_manifest(run_dir)
    path = run_dir / "predictions.jsonl"
    if not path.is_file():
        raise DataError(path, None, None, "not a run directory: predictions.jsonl is missing")
    predictions = parse_predictions(path, _whole_lines(path))
    overlap: Mapping[str, str] = manifest.get("tier_overlap") or {}
    block = (manifest.get("config") or {}).get("training_overlap")
    classes: Mapping[str, str] | None = (block.get("cases") or {}) if isinstance(block, dict) else None
    builder = _Builder(PAIRWISE_OUTCOMES)
    for row in predictions:
        case_id = str(row["case_id"])
        case = builder.case(row, overlap.get(case_id, "unique"),
                            None if classes is None else classes.get(case_id, "unseen"),
                            row.get("len_chosen"), row.get("len_rejected"))
        status = str(row.get("status"))
        outcome = _STATUS.get(status, 0 if row.get("correct") else 1)
        builder.verdict(row, case, outcome)
    found, note = _load_cases(manifest, set(builder.case_at))
    texts, personas = _case_text(builder, found)
    return {
        "format": FORMAT, "kind": "pairwise", "label": redact(f"{manifest['judge']} / {manifest['setting']}"),
        "answers": ["chosen (human-preferred)", "rejected"], "orders": {"AB": "chosen shown as A",
                                                                          "BA": "chosen shown as B"},
        "manifest": _public_manifest(manifest), "data_note": note, "report": _report_html("pairwise", run_dir),
        **builder.columns(), "text": {"cases": texts, "preds": builder.pred_text, "personas": personas},
    }


# --- gen-eval runs -------------------------------------------------------------------------------------------


def _geneval_index(run_dir: Path) -> dict[str, Any]:
    from tailorbench.datasets.rows import InvalidRows, parse_jsonl
    from tailorbench.geneval.generate import GENERATIONS, MODEL, REFERENCE
    from tailorbench.geneval.run import VERDICTS

    def rows(path: Path) -> list[dict[str, Any]]:
        return [row for _, row in parse_jsonl(path, _whole_lines(path), InvalidRows())] if path.is_file() else []

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    generations, verdicts = rows(run_dir / GENERATIONS), rows(run_dir / VERDICTS)
    answers: dict[str, dict[str, str]] = {}
    for row in generations:
        answers.setdefault(str(row["case_id"]), {})[str(row.get("role"))] = str(row.get("answer") or "")
    builder = _Builder(GENEVAL_OUTCOMES)
    for row in verdicts:
        pair = answers.get(str(row["case_id"]), {})
        case = builder.case(row, "unique", None, len(pair.get(MODEL, "")), len(pair.get(REFERENCE, "")))
        status = str(row.get("status"))
        outcome = _STATUS.get(status, 0 if row.get("winner") == "generated" else 1)
        builder.verdict(row, case, outcome)
    found, note = _load_cases(manifest, set(builder.case_at))
    pairs = {k: (v.get(MODEL, ""), v.get(REFERENCE, "")) for k, v in answers.items()}
    texts, personas = _case_text(builder, found, pairs)
    label = redact(f"{manifest.get('model')} vs {manifest.get('reference')} (judge {manifest.get('judge')})")
    return {
        "format": FORMAT, "kind": "gen-eval", "label": label,
        "answers": ["generated", "reference"], "orders": {"AB": "generated shown as A", "BA": "generated shown as B"},
        "manifest": _public_manifest(manifest), "data_note": note, "report": _report_html("gen-eval", run_dir),
        **builder.columns(), "text": {"cases": texts, "preds": builder.pred_text, "personas": personas},
    }


# --- stage reports -------------------------------------------------------------------------------------------


def _stage_index(run_dir: Path) -> dict[str, Any]:
    from tailorbench.viewer.tables import stage_body

    stages = stage_body(run_dir)
    return {"format": FORMAT, "kind": "stage", "label": f"stage reports ({', '.join(s for s, _ in stages)})",
            "stages": [{"stage": s, "html": body} for s, body in stages]}
