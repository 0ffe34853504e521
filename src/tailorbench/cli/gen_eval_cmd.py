"""`tailor gen-eval`: a model answers benchmark questions; a validated judge compares them with references."""

from __future__ import annotations

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
    exit_if_failed,
    parse_pairs,
    print_json,
    rag_options,
    split_csv,
    user_errors,
)


def gen_eval_command(
    model: str | None = typer.Option(
        None, "--model", "-m", help="model spec of the model under test: openai:MODEL, openai:MODEL@URL or "
                                   "hf:PATH"),
    data: str = typer.Option("demo", "--data", "-d", help="the benchmark: demo, personafeedback (hub), or a path in "
                                                          "any layout; PrefEval: its generation task, checked by the "
                                                          "llm: judge"),
    turns: str | None = TURNS_OPTION,
    data_option: list[str] | None = DATA_OPTIONS,
    reference: str = typer.Option("chosen", help="chosen (the human-preferred answer) or a model spec"),
    judge: str = typer.Option("longer", "--judge", "-j", help="judge spec: llm:..., rm:..., longer, ..."),
    setting: str = typer.Option(
        "persona", "--setting", "-s", help="the context the generating models see: persona, none, rag"),
    judge_setting: str = typer.Option("persona", help="context the judge sees"),
    out: Path | None = typer.Option(None, "--out", "-o", help="what the verb writes: the run directory"),
    per_tier: int = typer.Option(50, help="seeded sample of this many cases per split x tier"),
    all_cases: bool = typer.Option(False, "--all", help="every case instead of a sample"),
    split: list[str] | None = typer.Option(None, help="keep these splits (by name, e.g. specific, general)"),
    tier: list[str] | None = typer.Option(None, help="keep these tiers (by name, e.g. easy, medium, hard)"),
    seed: int = typer.Option(0, help="seed of the sample, generation and bootstraps"),
    persona_sections: str | None = typer.Option(None, help="keep only these persona sections"),
    temperature: float = typer.Option(0.0, help="sampling temperature of the generations"),
    max_tokens: int = typer.Option(512, help="token budget per answer generated"),
    model_option: list[str] | None = typer.Option(None, "--model-option", help="KEY=VALUE for the model backend (each "
                                                                               "generating model's)"),
    judge_option: list[str] | None = typer.Option(None, "--judge-option", help="KEY=VALUE passed to the judge"),
    batch: bool = typer.Option(
        False, "--batch", help=BATCH_HELP + " for the judge and the generating models whose backend has one"),
    judge_run: Path | None = typer.Option(None, help="a `tailor eval` run of this judge, for its validation"),
    validate_cases: int = typer.Option(50, help="without --judge-run: validate the judge on this many cases (0: no)"),
    n_boot: int = typer.Option(1000, "--n-boot", help=N_BOOT_HELP),
    batch_size: int | None = typer.Option(None, help="items per batch: generations and verdicts"),
    skip_invalid: bool = typer.Option(False, help="skip and count invalid rows of the benchmark instead of stopping"),
    retriever: str | None = typer.Option(None, help="rag setting: the retriever, bm25 | dense | hybrid"),
    top_k: int | None = typer.Option(None, help="rag setting: memory items shown"),
    memory: Path | None = typer.Option(None, help="rag setting: memory JSONL"),
    resume: Path | None = typer.Option(None, help="continue an interrupted gen-eval run directory"),
    max_failed: float | None = typer.Option(
        None, "--max-failed", help=MAX_FAILED_HELP + "; counts failed generations and verdicts"),
    executor: str = typer.Option(
        "local", help="where the work runs (the judge's): local, or ray (workers on a Ray cluster; a vllm: model "
                      "generates on Ray Data LLM replicas there, any other model here)"),
    ray_address: str | None = RAY_ADDRESS_OPTION,
    executor_option: list[str] | None = EXECUTOR_OPTIONS,
    progress: bool = typer.Option(True, help="progress bar on stderr (one per phase)"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": results.json"),
) -> None:
    """Evaluate how well a model personalizes its own answers (win rates vs a reference, length-controlled)."""
    from tailorbench import api
    from tailorbench.api.evaluation import resumed_by
    from tailorbench.errors import ConfigError

    with user_errors():
        if resume is not None:
            made_by = resumed_by(resume)
            if made_by != "gen-eval":
                raise ConfigError(f"--resume {resume}: a run of `tailor {made_by}`; continue it with `tailor {made_by} "
                                  f"--resume {resume}`")
            results = api.resume(resume, progress=progress, max_failed=max_failed)
        else:
            if out is None:
                raise ConfigError("--out is required (or --resume RUN_DIR)")
            config = api.GenEvalConfig(
                data=data, model=model or "", reference=reference, judge=judge, setting=setting,
                judge_setting=judge_setting, seed=seed, per_tier=None if all_cases else per_tier,
                splits=split_csv(split), tiers=split_csv(tier),
                persona_sections=split_csv([persona_sections] if persona_sections else None),
                skip_invalid=skip_invalid, n_boot=n_boot, temperature=temperature, max_tokens=max_tokens,
                model_options=parse_pairs(model_option, "--model-option"),
                judge_options=parse_pairs(judge_option, "--judge-option"),
                setting_options=rag_options(retriever, top_k, memory), batch_size=batch_size,
                judge_run=str(judge_run) if judge_run else None, validate_cases=validate_cases,
                max_failed=max_failed or 0.0, executor=executor, ray_address=ray_address, batch=batch,
                executor_options=parse_pairs(executor_option, "--executor-option"),
            )
            results = api.gen_eval(out=out, config=config, progress=progress,
                                   data_options=data_options(turns, data_option))
    assert isinstance(results, (api.GenEvalResult, api.PrefEvalGenerationResult))  # resumed_by checked the kind
    run = results.run_dir
    if json_out:
        print_json(results)
    elif isinstance(results, api.PrefEvalGenerationResult):
        echo_benchmark_run(results)
    else:
        total = results.metrics["all"]
        rate = "–" if total["win_rate"] is None else f"{100 * total['win_rate']:.1f}%"
        lc = "–" if total["lc_win_rate"] is None else f"{100 * total['lc_win_rate']:.1f}%"
        typer.echo(f"{results.model} vs {results.reference} ({results.judge}): win rate {rate}, "
                   f"length-controlled {lc} on {total['n']} cases -> {run}", err=True)
    exit_if_failed([api.run_failures(str(run), max_failed, what=run_label(results))])


def register(app: typer.Typer) -> None:
    app.command("gen-eval")(gen_eval_command)
