"""The held-out evaluation of a reward model in training: the held-out cases written as native JSONL, each
epoch's `rm:` judge (and the `longer` baseline) run through the evaluation runner, its per split x tier
table, and the `tailor eval` command that repeats it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.datasets import Benchmark
from tailorbench.files import Output
from tailorbench.schema import PairCase
from tailorbench.train.config import RMTrainConfig


def tier_table(results: dict[str, Any]) -> dict[str, Any]:
    """{split/tier: {accuracy, balanced_accuracy, n}} from a run's results.json."""
    out: dict[str, Any] = {}
    for split, block in results["metrics"].items():
        if split == "all":
            continue
        for tier, cell in block.items():
            out[f"{split}/{tier}"] = {"n": cell["n"], "accuracy": cell["accuracy"],
                                      "balanced_accuracy": cell["length"]["balanced_accuracy"]}
    cell = results["metrics"]["all"]
    out["all"] = {"n": cell["n"], "accuracy": cell["accuracy"],
                  "balanced_accuracy": cell["length"]["balanced_accuracy"]}
    return out


def evaluate_cases(cases: list[PairCase], judge: Any, spec: str, cfg: RMTrainConfig, out: Path,
                   label: str, benchmark: Benchmark | None = None) -> dict[str, Any]:
    """Per split x tier metrics of a judge on held-out cases, via the evaluation runner (same metrics,
    same run directory layout as `tailor eval`). With `benchmark` (the held-out file, `label` its path) the run
    is exactly what `tailor eval --data LABEL` repeats."""
    from tailorbench.evaluate.results import load_results
    from tailorbench.evaluate.runner import EvalConfig, run_eval

    config = EvalConfig(data=label, judge=spec, setting=cfg.setting, seed=cfg.seed, n_boot=cfg.n_boot)
    if judge is not None:
        judge.spec = spec
    run_eval(config, out, progress=False, benchmark=benchmark or Benchmark(label, "memory", cases), judge=judge)
    return tier_table(load_results(out))


#: the held-out cases of a checkpoint, as native PairCase JSONL (`tailor eval --data` reads it)
HELDOUT = "heldout.jsonl"


def heldout_benchmark(cases: list[PairCase], out: Output) -> tuple[Path, Benchmark]:
    """Write the held-out cases to OUT/eval/heldout.jsonl and load them back as `tailor eval` will."""
    from tailorbench.datasets import load_benchmark, write_native

    path = out.ensure("eval") / HELDOUT
    write_native(cases, path)
    return path, load_benchmark(str(path))


def reproduce_command(cfg: RMTrainConfig, out: Path, data: Path) -> str:
    """The `tailor eval` command that repeats the held-out evaluation of a checkpoint."""
    import shlex

    return (f"tailor eval --data {shlex.quote(str(data))} --judge {shlex.quote(f'rm:{out}')} --setting "
            f"{cfg.setting} --seed {cfg.seed} --n-boot {cfg.n_boot} --out {shlex.quote(str(out / 'eval' / 'rerun'))}")


