"""Judge validation: before trusting a judge's win rates, check it on the human-labelled pairwise benchmark.

Either read a `tailor eval` run directory of the judge (`--judge-run`), or run the pairwise runner on a seeded
sample on the spot (into `<run>/judge_validation/`, resumable and cached like any eval run). The summary —
accuracy, position consistency, and the `longer` baseline on the very same cases (from the lengths each
prediction line carries) — is written to judge_validation.json, so the report is rebuilt from the run
directory alone. Warnings: accuracy below `longer`, or inconsistent on more than 20% of cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.geneval.config import GenEvalConfig

VALIDATION = "judge_validation.json"
VALIDATION_DIR = "judge_validation"
#: more than this share of position-inconsistent cases earns a warning
MAX_INCONSISTENT = 0.20


def _longer_accuracy(predictions: list[dict[str, Any]]) -> float | None:
    """Accuracy of the `longer` baseline on the run's cases: right when chosen is strictly longer (equal
    lengths abstain and score 0, as the baseline does)."""
    seen: dict[str, float] = {}
    for row in predictions:
        seen.setdefault(row["case_id"], float(row["len_chosen"] > row["len_rejected"]))
    return float(np.mean(list(seen.values()))) if seen else None


def summarise_run(run_dir: Path, expected_judge: str | None = None) -> dict[str, Any]:
    """Accuracy, consistency and the longer baseline of a pairwise run directory, plus warnings."""
    from tailorbench.evaluate.results import load_results, read_manifest, read_predictions

    read_manifest(run_dir)  # the judge's run checked against schema.RunManifest, as report and view check it
    results = load_results(run_dir)
    predictions = read_predictions(run_dir)
    total = results["metrics"]["all"]
    summary: dict[str, Any] = {
        "source": str(run_dir),
        "judge": results.get("judge"),
        "setting": results.get("setting"),
        "n": total["n"],
        "accuracy": total["accuracy"],
        "ci": total["ci"],
        "consistency": total["consistency"],
        "n_consistency": total["n_consistency"],
        "invalid": total["invalid"],
        "failed": total["failed"],
        "longer_accuracy": _longer_accuracy(predictions),
        "per_split": {
            split: {"n": block["all"]["n"], "accuracy": block["all"]["accuracy"],
                    "consistency": block["all"]["consistency"]}
            for split, block in results["metrics"].items() if split != "all"
        },
        "warnings": [],
    }
    warnings: list[str] = summary["warnings"]
    if expected_judge is not None and results.get("judge") != expected_judge:
        warnings.append(f"the validation run judged with {results.get('judge')!r}, not with {expected_judge!r}")
    acc, longer = summary["accuracy"], summary["longer_accuracy"]
    if acc is not None and longer is not None and acc < longer:
        warnings.append(f"the judge is below the `longer` baseline on the pairwise benchmark "
                        f"({100 * acc:.1f}% < {100 * longer:.1f}%): its win rates may only reward length")
    consistency = summary["consistency"]
    if consistency is not None and 1 - consistency > MAX_INCONSISTENT:
        warnings.append(f"the judge is position-inconsistent on {100 * (1 - consistency):.1f}% of validation cases "
                        f"(> {100 * MAX_INCONSISTENT:.0f}%)")
    if consistency is None and total["n"]:
        warnings.append("position consistency unknown: the validation run did not judge both orders")
    return summary


def validate_judge(config: GenEvalConfig, out: Path, progress: bool = False) -> dict[str, Any]:
    """The validation summary of this run's judge (see the module docstring)."""
    if config.judge_run:
        return summarise_run(Path(config.judge_run), expected_judge=config.judge)
    if config.validate_cases <= 0:
        return {"source": None, "warnings": ["the judge was not validated (--validate-cases 0, no --judge-run)"]}
    from tailorbench.evaluate.runner import EvalConfig, run_eval

    eval_config = EvalConfig(
        data=config.data, judge=config.judge, setting=config.judge_setting, orders="both", seed=config.seed,
        splits=config.splits, tiers=config.tiers, limit=config.validate_cases,
        persona_sections=config.persona_sections, skip_invalid=config.skip_invalid, n_boot=config.n_boot,
        judge_options=config.judge_extra(), setting_options=dict(config.setting_options),
        batch_size=config.batch_size, executor=config.executor,  # type: ignore[arg-type]
        ray_address=config.ray_address, executor_options=dict(config.executor_options),
    )
    run_dir = out / VALIDATION_DIR
    run_eval(eval_config, run_dir, resume=True, progress=progress)
    summary = summarise_run(run_dir, expected_judge=config.judge)
    summary["source"] = VALIDATION_DIR  # relative: the run directory stays movable
    return summary
