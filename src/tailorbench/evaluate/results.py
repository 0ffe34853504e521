"""Turn a run directory's predictions into results.json and its reports. Reads only the run directory, so
every reported number can be recomputed from it alone (`tailor report RUN` does exactly that)."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.datasets.rows import InvalidRows, last_per_key, parse_jsonl
from tailorbench.errors import ConfigError, DataError
from tailorbench.evaluate.lock import run_state
from tailorbench.evaluate.metrics import compute_metrics
from tailorbench.failures import FailureCheck, check_max_failed, first_causes
from tailorbench.files import load_json
from tailorbench.judges.verdict_rules import authors_pairwise_summary
from tailorbench.logs import get_logger
from tailorbench.runlog import EvalResults, read_run_file
from tailorbench.schema import PREDICTION_KEYS, PairCase, RunManifest, benchmark_names, check_prediction_line

log = get_logger(__name__)

RESULTS = "results.json"
#: `tailor eval --repeat N`'s figures (evaluate/repeats.py)
DETERMINISM = "determinism.json"
_KIND = re.compile(r"[a-z_]+")


def prediction_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """What one prediction line answers: (case id, order). A run holds one verdict per key, its last line."""
    return row["case_id"], row["order"]


def parse_predictions(path: Path, data: bytes, note: str = "", required: Sequence[str] = PREDICTION_KEYS
                      ) -> list[dict[str, Any]]:
    """The predictions in bytes of predictions.jsonl (read through `datasets.rows`, the one JSONL reader), the
    last line per (case, order) (`rows.last_per_key`: a failed call retried by `--resume` appends its new line),
    or a DataError naming file, line and field (`note` is added to its message, e.g. that the run is left as it
    is). Every reader of a pairwise run (results, report, compare, view, reliability, resume) reads it here; a
    format-1 line (no `format_version`) holds at least the `required` keys (`read_predictions`, which results
    are computed from, asks for `METRIC_KEYS`)."""
    rows = []
    try:
        settings = known_setting_names()
        for number, row in parse_jsonl(path, data, InvalidRows()):
            check_prediction(path, number, row, settings, required)
            rows.append(row)
    except DataError as exc:
        raise DataError(exc.path, exc.line, exc.field, f"{exc.message}{note}") from None
    return last_per_key(rows, prediction_key)


#: what a format-1 prediction line (no `format_version`) must hold for results to be computed from it: the
#: metrics read each of these (`evaluate.columns`, `evaluate.metrics`)
METRIC_KEYS = ("case_id", "order", "choice", "status", "correct", "split", "tier", "user_id", "len_chosen",
               "len_rejected")


def check_prediction(path: Path, number: int, row: Mapping[str, Any], settings: frozenset[str],
                     required: Sequence[str] = PREDICTION_KEYS) -> None:
    """One predictions.jsonl line checked strictly against `schema.Prediction` (`schema.check_prediction_line`),
    its setting one of `settings` (`known_setting_names`); a format-1 line (no `format_version`) holds at least
    the `required` keys. A DataError naming file, line and field otherwise."""
    check_prediction_line(path, number, row, settings, required)


def known_setting_names() -> frozenset[str]:
    """Every setting a run may have used (registered, built-in and installed plugins), lower case."""
    from tailorbench.evaluate import settings  # noqa: F401  (parts registered at run time are known too)
    from tailorbench.registry import setting_names

    return setting_names()


def read_predictions(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "predictions.jsonl"
    if not path.exists():
        raise DataError(path, None, None, "not a run directory: predictions.jsonl is missing")
    if not path.is_file():
        raise DataError(path, None, None, "not a run directory: predictions.jsonl is not a file")
    return parse_predictions(path, path.read_bytes(), required=METRIC_KEYS)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.exists():
        raise DataError(path, None, None, "not a run directory: manifest.json is missing")
    data: dict[str, Any] = load_json(path, dict, "a run manifest (a JSON object)")
    for key in ("judge", "setting"):
        if not isinstance(data.get(key), str):
            raise DataError(path, None, key, "missing or not text: not a run manifest")
    data = check_manifest_fields(path, data)
    stats = data.get("data_stats") or {}
    for key in ("splits", "tiers"):
        names = stats.get(key)
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise DataError(path, None, f"data_stats.{key}", "expected a list of names: not a run manifest")
    return data


def check_manifest_fields(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """A pairwise run's manifest read as `schema.RunManifest`, strictly (`runlog.read_run_file`: every field of
    its type, no other key); a format-1 manifest (no `format_version`) is read as the current format when adding
    the version is all it takes, and refused otherwise naming the field and the tailorbench that wrote it. Returns
    the manifest as the current format writes it; a DataError otherwise (reports and the viewer read it typed)."""
    written_by = data.get("tailorbench_version")
    manifest = read_run_file(RunManifest, path, data, what="run manifest",
                             written_by=written_by if isinstance(written_by, str) else None, rerun=_rerun(data))
    return manifest.to_file()


def _rerun(manifest: Mapping[str, Any]) -> str:
    """What to do with a run this tailorbench cannot read: the command that runs it again."""
    spec = {key: manifest.get(key) for key in ("data", "judge", "setting")}
    if not all(isinstance(v, str) for v in spec.values()):
        return "rerun it with `tailor eval`"
    args = " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in spec.items())
    return f"rerun it: `tailor eval {args} --out NEW_DIR`"


def predictions_digest(run_dir: Path) -> str | None:
    """sha256 of predictions.jsonl as it is on disk (None when there is none): results.json records it, and a
    results.json whose digest differs was computed from other predictions (the stale-results check)."""
    import hashlib

    path = run_dir / "predictions.jsonl"
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def compute_results(run_dir: Path, predictions: list[dict[str, Any]] | None = None,
                    cases: Mapping[str, PairCase] | None = None) -> dict[str, Any]:
    """Results of a run from its manifest and predictions (read from predictions.jsonl unless the runner
    passes the very lines it just wrote, and its cases, whose texts the example verdicts show; tests check both
    give the same numbers), as results.json holds them:
    `runlog.EvalResults` made from them and written out (`to_file`), so what is written is what the reader takes."""
    manifest = read_manifest(run_dir)
    if predictions is None:
        predictions = read_predictions(run_dir)
    config = manifest.get("config", {})
    stats = manifest.get("data_stats", {})
    names = benchmark_names(stats)
    from tailorbench.evaluate.columns import columns
    from tailorbench.evaluate.reliability import judge_probability, reliability

    cols = columns(predictions)  # read once for both tables
    body = compute_metrics(
        predictions,
        ci_unit=config.get("ci_unit", "case"),
        n_boot=int(config.get("n_boot", 1000)),
        seed=int(manifest.get("seed", 0)),
        user_attributes=manifest.get("user_attributes", {}),
        tier_overlap=manifest.get("tier_overlap", {}),
        cols=cols,
        **names,
    )
    body["reliability"] = reliability(predictions, judge_probability(config.get("judge_description")),
                                      n_boot=int(config.get("n_boot", 1000)), seed=int(manifest.get("seed", 0)),
                                      cols=cols, **names)
    from tailorbench.evaluate.headline import vs_longer
    from tailorbench.evaluate.metrics import case_scores

    trained = config.get("training_overlap")
    classes = (trained.get("cases") or {}) if isinstance(trained, dict) else None
    if classes is not None and all(kind == "unseen" for kind in classes.values()):
        classes = None  # nothing shared with training: one row as usual
    paired = vs_longer(case_scores(predictions, cols), int(config.get("n_boot", 1000)), int(manifest.get("seed", 0)),
                       None if classes is None else lambda case: classes.get(case, "unseen") == "unseen")
    if paired is not None:
        body["vs_longer"] = paired
    repeated = read_determinism(run_dir)
    if repeated is not None:
        body["determinism"] = repeated
    batch = batch_costs(run_dir)
    if batch is not None:
        body["usage"]["batch"] = batch
    expected = manifest.get("n_cases", 0)
    seen = len({r["case_id"] for r in predictions})
    status = run_state(run_dir, manifest.get("status"))
    warnings = [str(w) for w in config.get("warnings") or []]
    if repeated is not None and repeated.get("note"):
        warnings.append(str(repeated["note"]))
    if status != "finished":
        warnings.append(_unfinished_warning(run_dir, status, manifest.get("error"), seen, expected))
    training = training_rows(predictions, manifest)
    if training and training.get("line"):
        warnings.insert(0, training["line"])
    return EvalResults(**{
        "judge": manifest["judge"],
        "setting": manifest["setting"],
        "data": manifest.get("data"),
        "dataset_fingerprint": manifest.get("dataset_fingerprint"),
        "orders": manifest.get("orders"),
        "ci_unit": config.get("ci_unit", "case"),
        "n_boot": int(config.get("n_boot", 1000)),
        "status": status,
        "error": manifest.get("error"),
        "cases_planned": expected,
        "cases_judged": seen,
        "skipped_rows": stats.get("skipped_rows", 0),
        "warnings": warnings,
        "failures": failure_summary(predictions, config),
        "predictions_sha256": predictions_digest(run_dir),
        "dataset": dataset_provenance(manifest),
        **({"benchmark_names": names} if names else {}),
        "training_overlap": training,
        "examples": verdict_examples(predictions, int(manifest.get("seed", 0)),
                                     classes=(config.get("training_overlap") or {}).get("cases"),
                                     cases=_example_cases(manifest, predictions, int(manifest.get("seed", 0)),
                                                          cases)),
        **({"authors_report": authors_report(predictions)} if manifest.get("orders") == "authors" else {}),
        **body,
    }).to_file()


def authors_report(predictions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run judged in the authors' one order per case (`--orders authors`): the fields their summary prints
    (Personalized RewardBench's evaluation/pairwise.py: a verdict that is not a valid pick counts as A and as a
    failed parse); failed calls are left out and counted apart."""
    judged = [r for r in predictions if r.get("status") != "failed"]
    verdicts = [(r["order"] == "AB", r["choice"] if r.get("status") == "ok" and r.get("choice") in ("A", "B")
                 else None) for r in judged]
    return {**authors_pairwise_summary(verdicts), "failed_calls": len(predictions) - len(judged)}


def batch_costs(run_dir: Path) -> dict[str, Any] | None:
    """A batch-mode run's provider batches and what they cost, beside what the same answers would have cost
    synchronously (from the run's batch state files, so every process of a resumed run counts); None without
    batch mode."""
    from tailorbench.models.batch_state import run_costs
    from tailorbench.models.pricing import BATCH_DISCOUNT

    costs = run_costs(run_dir)
    return None if costs is None else {**costs, "discount": BATCH_DISCOUNT}


def dataset_provenance(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What data a run is about: name, layout, fingerprint, and whose labels it holds, as its layout declares them
    (`Layout.labels`, `Layout.chosen_is`: human-labelled for PersonaFeedback and PRISM, constructed for PrefEval,
    PersonaMem and Personalized RewardBench, not stated for native JSONL), illustrative for the bundled demo."""
    from tailorbench.datasets.layouts import LAYOUTS

    stats = manifest.get("data_stats") or {}
    data, layout = str(manifest.get("data")), str(stats.get("layout") or "")
    if data == "demo":
        labels, note = "illustrative", "the bundled demo: invented personas, labels set by construction, not by people"
    else:
        try:
            declared = LAYOUTS.get(layout or "native")
            labels, note = str(declared.labels), f"chosen is {declared.chosen_is}"
        except ConfigError:  # a plugin's layout that is not installed here any more
            labels, note = "not stated", f"the {layout} layout does not say who set the labels"
    return {"name": data, "layout": layout or None, "fingerprint": manifest.get("dataset_fingerprint"),
            "rows": stats.get("rows"), "labels": labels, "labels_note": note}


def training_rows(predictions: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """For a judge that declared its training data (manifest `training_overlap`): the counts and each class's
    metrics (in-training, persona-seen, unseen), so reports show them as separate rows."""
    from tailorbench.leakage import CLASSES, describe_overlap

    config = manifest.get("config", {})
    block = config.get("training_overlap")
    if not isinstance(block, dict):
        return None
    classes: Mapping[str, str] = block.get("cases") or {}
    out: dict[str, Any] = {k: v for k, v in block.items() if k != "cases"}
    out["line"] = describe_overlap(block, str(manifest.get("judge")))
    if not classes:
        return out
    rows: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    for kind in CLASSES:
        subset = [r for r in predictions if classes.get(r["case_id"], "unseen") == kind]
        if subset:
            body = compute_metrics(subset, ci_unit=config.get("ci_unit", "case"),
                                   n_boot=int(config.get("n_boot", 1000)), seed=int(manifest.get("seed", 0)))
            rows[kind], ratios[kind] = body["metrics"], body["by_length_ratio"]
    out["rows"] = rows
    out["by_length_ratio"] = ratios
    return out


#: how many characters of each text (persona, question, answers) an example verdict keeps (docs/metrics.md)
EXAMPLE_TEXT_CHARS = 300


def clip(text: str, limit: int = EXAMPLE_TEXT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def example_texts(case: PairCase) -> dict[str, str]:
    """What a reader needs to judge an example verdict: the persona, the question and both answers, each cut to
    EXAMPLE_TEXT_CHARS."""
    from tailorbench.personas import render_persona

    return {"persona": clip(render_persona(case.persona)), "question": clip(case.question),
            "chosen": clip(case.chosen), "rejected": clip(case.rejected)}


def verdict_examples(predictions: Sequence[Mapping[str, Any]], seed: int, k: int = 3,
                     raw_chars: int = 400, classes: Mapping[str, str] | None = None,
                     cases: Mapping[str, PairCase] | None = None) -> dict[str, list[dict[str, Any]]]:
    """A few right and a few wrong verdicts with the judge's raw output (or scores), picked by a seeded hash of
    (case id, order) so they are spread over the data and the same on every recomputation, each with its case's
    texts (`cases`: the run's cases by id; a case not among them has none). With `classes` (a judge's training
    overlap) each example says whether its case was in training."""
    import hashlib
    import heapq

    def rank(row: Mapping[str, Any]) -> bytes:
        return hashlib.blake2b(f"{seed}\x1f{row['case_id']}\x1f{row['order']}".encode(), digest_size=8).digest()

    out: dict[str, list[dict[str, Any]]] = {}
    for name, wanted in (("right", True), ("wrong", False)):
        picked = heapq.nsmallest(k, (r for r in predictions if bool(r.get("correct")) is wanted), key=rank)
        out[name] = [{"case_id": r["case_id"], "split": r.get("split"), "tier": r.get("tier"), "order": r["order"],
                      "choice": r.get("choice"), "status": r.get("status"), "scores": r.get("scores"),
                      "raw": None if r.get("raw") is None else str(r["raw"])[:raw_chars],
                      "error": r.get("error"), "len_chosen": r.get("len_chosen"),
                      "len_rejected": r.get("len_rejected"),
                      **({"texts": example_texts(cases[r["case_id"]])} if cases and r["case_id"] in cases else {}),
                      **({"training": classes.get(r["case_id"], "unseen")} if classes is not None else {})}
                     for r in picked]
    return out


def _example_cases(manifest: Mapping[str, Any], predictions: Sequence[Mapping[str, Any]], seed: int,
                   cases: Mapping[str, PairCase] | None) -> Mapping[str, PairCase]:
    """The cases the example verdicts show: from the run's own cases when the runner hands them over, else read
    again from the run's data (nothing when it cannot be read: the examples stand without their texts)."""
    if cases is not None:
        return cases
    from tailorbench.datasets.loader import load_run_cases

    wanted = {e["case_id"] for rows in verdict_examples(predictions, seed).values() for e in rows}
    return load_run_cases(manifest, wanted)[0] if wanted else {}


def _unfinished_warning(run_dir: Path, status: str, error: str | None, seen: int, expected: int) -> str:
    how = {"running": "in progress", "stopped": f"stopped by an error ({error})"}.get(status, status)
    return (f"run {how}: {seen} of {expected} cases judged; continue it with "
            f"`tailor eval --resume {shlex.quote(str(run_dir))}`")


def error_kind(error: str | None) -> str:
    """The kind a failed verdict's error starts with (`server: HTTP 500 ...` -> `server`), else `other`."""
    head = (error or "").split(":", 1)[0].strip()
    return head if _KIND.fullmatch(head) else "other"


def failure_summary(predictions: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Any]:
    """Failed verdicts (calls that never returned a usable answer) by kind with the first errors, the model's
    requests, retries and errors per kind (`call_stats`: every process of the run), and whether the failures
    exceed the run's `max_failed`. `invalid` and `abstain` verdicts are the judge's doing: not counted here."""
    failed = [r for r in predictions if r.get("status") == "failed"]
    description = config.get("judge_description") or {}
    model = description.get("model") if isinstance(description, dict) else None
    stats = config.get("call_stats") or (model.get("stats") if isinstance(model, dict) else None) or {}
    check = FailureCheck("run", len(failed), len(predictions), check_max_failed(config.get("max_failed", 0.0)),
                         first_causes(r.get("error") for r in failed))
    return {
        "failed": check.failed,
        "verdicts": check.total,
        "share": check.share,
        "max_failed": check.max_failed,
        "exceeded": check.exceeded,
        "by_kind": dict(sorted(Counter(error_kind(r.get("error")) for r in failed).items())),
        "first_errors": check.causes,
        "requests": stats.get("requests"),
        "retries": int(stats.get("retries") or 0),
        "call_errors": dict(sorted((stats.get("errors") or {}).items())),
    }


def check_run(results: Mapping[str, Any], max_failed: float | None = None, what: str | None = None) -> FailureCheck:
    """The exit-code-3 rule for one run's results: more failed verdicts than `max_failed` (the run's own
    `max_failed` when None), or all of them. The Python twin of the CLI's decision."""
    block = results.get("failures") or {}
    total = results.get("metrics", {}).get("all", {})
    failed = int(block.get("failed", total.get("failed", 0)))
    verdicts = int(block.get("verdicts", results.get("verdicts", {}).get("total", 0)))
    limit = check_max_failed(block.get("max_failed", 0.0) if max_failed is None else max_failed)
    name = what or f"{results.get('judge')} / {results.get('setting')}"
    return FailureCheck(name, failed, verdicts, limit, list(block.get("first_errors", [])))


def read_determinism(run_dir: Path) -> dict[str, Any] | None:
    """The run's determinism figures (`tailor eval --repeat N`), or None for a run judged once."""
    from tailorbench.files import load_json

    path = run_dir / DETERMINISM
    if not path.is_file():
        return None
    data: dict[str, Any] = load_json(path, dict, "the determinism figures of tailor eval --repeat")
    return data


def load_results(run_dir: Path) -> dict[str, Any]:
    """results.json of a run, read strictly (`runlog.EvalResults`), or recomputed from its predictions: when it is
    missing (an interrupted run), unreadable, of format 1 (written before the run format had a version: derived
    data, so rebuilt rather than migrated), computed from other predictions (its `predictions_sha256`), or not as
    tailorbench writes it (a field of another type or a key the model does not know: a hand edit, said in a
    warning). The status is read live (a `running` run whose lock no process holds is `interrupted`)."""
    path = run_dir / RESULTS
    results: dict[str, Any] | None = None
    if path.exists():
        try:
            data: dict[str, Any] = load_json(path, dict, "a run's results (a JSON object)")
            if "format_version" in data:
                stored = read_run_file(EvalResults, path, data, what="run's results.json").to_file()
                if stored["predictions_sha256"] == predictions_digest(run_dir):
                    results = stored  # else stale: never trusted over the predictions
        except DataError as exc:
            log.warning(f"{exc}; the results are recomputed from {run_dir / 'predictions.jsonl'}")
    if results is None:
        results = compute_results(run_dir)
    results["status"] = run_state(run_dir, results.get("status"))
    return results
