"""`tailor eval`: judges x settings over a benchmark -> run directories with predictions and reports."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from tailorbench.cli.benchmark_options import DATA_OPTIONS, TURNS_OPTION, data_options, echo_benchmark_run, run_label
from tailorbench.cli.common import (
    BATCH_HELP,
    EXECUTOR_OPTIONS,
    JSON_HELP,
    MAX_FAILED_HELP,
    N_BOOT_HELP,
    RAY_ADDRESS_OPTION,
    VerbCommand,
    batch_option,
    exit_if_failed,
    parse_pairs,
    print_json,
    rag_options,
    split_csv,
    user_errors,
)


def registered_parts() -> str:
    """The registered judges and model backends, for `tailor eval --help` (computed only when shown)."""
    from tailorbench.api.evaluation import registered_parts as parts

    return parts()


class EvalCommand(VerbCommand):
    help_extra = staticmethod(registered_parts)


def eval_command(
    data: str = typer.Option("demo", "--data", "-d",
                             help="The benchmark: demo, personafeedback (hub), or a path in any layout"),
    turns: str | None = TURNS_OPTION,
    data_option: list[str] | None = DATA_OPTIONS,
    task: str = typer.Option(
        "auto", help="The task the benchmark is asked as: auto, its own task (PrefEval, PersonaMem: multiple choice, "
                     "answered by each llm: judge's model and scored by the benchmark's rule); pairwise: its pair "
                     "view, any judge"),
    protocol: str = typer.Option(
        "default", help="default: tailorbench's; authors: as the benchmark's published scripts ask and score "
                        "(PrefEval, PersonaMem), recorded in the run and its report (docs/benchmarks.md)"),
    scorer_version: str | None = typer.Option(
        None, help="PersonaMem: the upstream scorer version followed, 041d82a (the default) or 214bc36"),
    suite: str | None = typer.Option(
        None, help="a YAML suite (benchmarks x judges x settings) or a built-in one (personalization): every step "
                   "under --out, one leaderboard; run again to finish a killed suite"),
    data_root: Path | None = typer.Option(None, help="--suite: where the suite's relative data paths start"),
    skip_missing: bool = typer.Option(
        False, "--skip-missing", help="--suite: leave out a benchmark whose data is not there (the leaderboard "
                                      "says so) instead of stopping before any work"),
    judge: list[str] | None = typer.Option(None, "--judge", "-j", help="judge spec; repeat for several"),
    setting: list[str] | None = typer.Option(None, "--setting", "-s",
                                             help="The context the judge sees: persona | none | rag; repeatable"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="What the verb writes: the run directory (or parent, for several)"),
    orders: str = typer.Option("both", help="both: judge each case with chosen as A and as B; random: one order; "
                                              "authors: the one order the benchmark's authors draw (Personalized "
                                              "RewardBench's seed 42)"),
    split: list[str] | None = typer.Option(None, help="keep these splits (by name, e.g. specific, general)"),
    tier: list[str] | None = typer.Option(None, help="keep these tiers (by name, e.g. easy, medium, hard)"),
    limit: int | None = typer.Option(None, help="a seeded sample of this many cases"),
    seed: int = typer.Option(0, help="seed of sampling, random orders, the random judge and bootstraps"),
    repeat: int = typer.Option(1, help="judge N times, repeats 2..N without the call cache: determinism in the report"),
    calibration: bool = typer.Option(
        False, "--calibration", help="require ECE and Brier: a judge without probabilities is exit 2, nothing written"),
    persona_sections: str | None = typer.Option(
        None, help="keep only these persona sections, e.g. Demographics,Preference (field ablation)"),
    ci_unit: str = typer.Option("case", help="bootstrap unit: case, or user (cases cluster by user)"),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP + " (at least 1000 recommended)"),
    skip_invalid: bool = typer.Option(False, help="skip and count invalid rows (in the manifest) instead of "
                                                   "stopping"),
    resume: Path | None = typer.Option(None, help="continue an interrupted run directory"),
    batch_size: int | None = typer.Option(None, help="items per batch: judge inputs per call"),
    judge_option: list[str] | None = typer.Option(None, "--judge-option", help="KEY=VALUE passed to the judge"),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP + " (= --judge-option batch=true)"),
    retriever: str | None = typer.Option(None, help="rag setting: the retriever, bm25 (default) | dense | hybrid"),
    top_k: int | None = typer.Option(None, help="rag setting: memory items shown to the judge (default 5)"),
    memory: Path | None = typer.Option(
        None, help="rag setting: memory JSONL (user_id, id, text, ...); without it, persona facts are retrieved"),
    max_failed: float | None = typer.Option(
        None, "--max-failed", help=MAX_FAILED_HELP + " (with --resume: the run's own value unless given)"),
    executor: str = typer.Option(
        "local", help="where the work runs (the judge's): local (this process) or ray (workers on a Ray cluster, "
                      "docs/scale.md)"),
    ray_address: str | None = RAY_ADDRESS_OPTION,
    executor_option: list[str] | None = EXECUTOR_OPTIONS,
    progress: bool = typer.Option(True, help="progress bar on stderr"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": results.json (a list of them for several)"),
) -> None:
    """Evaluate judges on a personalization benchmark (pairwise; PrefEval and PersonaMem as multiple choice scored
    by their own rule), or on a suite of benchmarks (--suite).

    Each verdict is written as it lands; Ctrl-C finishes the calls in flight, writes their verdicts and prints
    the resume command (a second Ctrl-C quits at once). Exit code 3 when failed verdicts exceed --max-failed.
    """
    from tailorbench import api
    from tailorbench.api.evaluation import resumed_by
    from tailorbench.errors import ConfigError

    outcome: api.EvalResult | api.ChoiceResult | api.SuiteResult | list[api.EvalResult | api.ChoiceResult]
    with user_errors():
        if resume is not None:
            made_by = resumed_by(resume)
            if made_by != "eval":
                raise ConfigError(f"--resume {resume}: a run of `tailor {made_by}`; continue it with `tailor {made_by} "
                                  f"--resume {resume}`")
            resumed = api.resume(resume, progress=progress, max_failed=max_failed)
            assert isinstance(resumed, (api.EvalResult, api.ChoiceResult, api.SuiteResult))  # an eval run's kinds
            outcome = resumed
        elif suite is not None:
            if out is None:
                raise ConfigError("--suite needs --out (the suite's directory)")
            if protocol != "default" or scorer_version is not None:
                raise ConfigError("--protocol / --scorer-version: a suite's steps use the default protocol")
            outcome = api.eval(suite=suite, out=out, judge=judge, setting=setting, data_root=data_root,
                               progress=progress, skip_missing=skip_missing)
        else:
            if out is None:
                raise ConfigError("--out is required (or --resume RUN_DIR)")
            outcome = api.eval(
                data, judge or ["longer"], setting or ["persona"], out=out, progress=progress, task=task,
                protocol=protocol, scorer_version=scorer_version,
                data_options=data_options(turns, data_option), orders=orders,
                seed=seed, repeat=repeat, calibration=calibration, splits=split_csv(split), tiers=split_csv(tier),
                limit=limit,
                persona_sections=split_csv([persona_sections] if persona_sections else None),
                skip_invalid=skip_invalid, ci_unit=ci_unit, n_boot=n_boot,
                judge_options=batch_option(parse_pairs(judge_option, "--judge-option"), batch),
                batch_size=batch_size,
                setting_options=rag_options(retriever, top_k, memory), max_failed=max_failed or 0.0,
                executor=executor, ray_address=ray_address,
                executor_options=parse_pairs(executor_option, "--executor-option"))
        if isinstance(outcome, api.SuiteResult):
            if json_out:
                print_json(outcome)
            else:
                where = Path(resume or out or ".")
                typer.echo((where / "leaderboard.md").read_text(encoding="utf-8"))
                typer.echo(f"wrote {where / 'leaderboard.md'}, leaderboard.html and leaderboard.json, each run in its "
                           f"benchmark's folder; browse the cases: tailor view {shlex.quote(str(where))}")
            return
        results = outcome if isinstance(outcome, list) else [outcome]
        if json_out:
            print_json(results[0] if len(results) == 1 else results)
        else:
            for res in results:
                if isinstance(res, api.ChoiceResult):
                    echo_benchmark_run(res)
                    continue
                total = res.overall
                if total is None:  # (a finished run has judged at least one case)
                    continue
                retries = (res.failures or {}).get("retries", 0)
                typer.echo(
                    f"{res.judge} / {res.setting}: accuracy {100 * (total['accuracy'] or 0):.1f}% "
                    f"on {total['n']} cases (invalid {total['invalid']}, abstained {total['abstained']}, "
                    f"failed {total['failed']}, retries {retries}) -> {res.run_dir}", err=True)
        exit_if_failed(api.run_failures(res.run_dir, max_failed, what=run_label(res))
                       for res in results if res.run_dir is not None)


def register(app: typer.Typer) -> None:
    app.command("eval", cls=EvalCommand)(eval_command)
