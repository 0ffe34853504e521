"""The runners `tb.eval` and `tb.gen_eval` hand a benchmark to, decided here from its layout's task, and suites.

- a pairwise layout (PersonaFeedback, native, Personalized RewardBench, PRISM ...): `tailor eval`'s judge loop
  (`api.pairwise.pairwise_runs`);
- a multiple-choice layout (PrefEval's classification task, PersonaMem): the model of each `llm:` judge answers
  in the benchmark's own messages and the benchmark's own rule scores it (`run_choice`); `task="pairwise"`
  judges the items' pair view with any judge instead;
- PrefEval under `tailor gen-eval`: its generation task, the four checks asked of the `llm:` judge's model;
- a suite (`tailor eval --suite`): every benchmark x judge x setting of a YAML file, one leaderboard.

Each kind's resume is here too (`tb.resume` dispatches on the run's kind).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from tailorbench.api.pairwise import eval_config, pairwise_runs
from tailorbench.api.results import ChoiceResult, EvalResult, PrefEvalGenerationResult, SuiteResult
from tailorbench.errors import ConfigError

__all__ = ["data_task"]

#: what `tailor eval --task` takes: `auto` is the layout's own task
TASKS = ("auto", "pairwise", "multiple-choice")
#: layouts whose benchmark has a generation task `tailor gen-eval` runs as its authors do
GENERATION_LAYOUTS = ("prefeval",)
#: EvalConfig fields a multiple-choice run takes (the rest must keep their defaults)
CHOICE_FIELDS = {"data", "judge", "setting", "seed", "limit", "n_boot", "skip_invalid", "batch_size", "judge_options",
                 "data_options", "max_failed"}
#: GenEvalConfig fields PrefEval's generation task takes (`per_tier=None`, i.e. `--all`, is what it does anyway)
GENERATION_FIELDS = {"data", "model", "judge", "seed", "skip_invalid", "n_boot", "temperature", "max_tokens",
                     "model_options", "judge_options", "batch_size", "max_failed"}


def data_task(data: str | Path, layout: str | None = None) -> tuple[str, str]:
    """(task, layout name) of a benchmark: `multiple-choice` for PrefEval and PersonaMem, else `pairwise`. A spec
    that names a benchmark tailorbench does not download (`prefeval`) is a ConfigError saying where to get it."""
    from tailorbench.datasets.layouts import all_layouts, get_layout
    from tailorbench.datasets.loader import DEMO, PERSONAFEEDBACK, find_layout, source_path

    spec = str(data)
    if spec in (DEMO, PERSONAFEEDBACK):
        return "pairwise", "personafeedback"
    path = source_path(spec)
    if not path.exists():
        named = next((x for x in all_layouts() if x.name == spec), None)
        source = dict(getattr(named, "card", {}) or {}).get("source") if named is not None else None
        if source:
            raise ConfigError(f"--data {spec}: tailorbench does not download the {spec} benchmark; get it from "
                              f"{source} and pass its folder (--data PATH); docs/benchmarks.md")
    reader = find_layout(path) if layout is None else get_layout(layout)
    return str(getattr(reader, "task", "pairwise")), reader.name


def _model_of(judge: str, what: str, hint: str = "") -> str:
    from tailorbench.benchmarks.suite import model_of

    model = model_of(judge)
    if model is None:
        raise ConfigError(f"--judge {judge}: {what} needs a model to answer, so the judge must be an llm: one "
                          f"(llm:openai:MODEL@URL){hint}")
    return model


def _not_taken(given: Any, default: Any, taken: set[str], what: str) -> None:
    """A ConfigError naming the options set away from their defaults that `what` has no use for."""
    wrong = sorted(f.name for f in fields(default) if f.name not in taken
                   and getattr(given, f.name) != getattr(default, f.name))
    if wrong:
        raise ConfigError(f"{what} does not take: {', '.join(wrong)} (it takes: {', '.join(sorted(taken))})")


def run_benchmark(data: str, judges: list[str], settings: list[str], *, out: str | Path, config: Any,
                  task: str, protocol: str, scorer_version: str | None, repeat: int, progress: bool,
                  fields: dict[str, Any]) -> list[EvalResult | ChoiceResult]:
    """`tb.eval` on a benchmark of any kind: a pairwise one (or `task="pairwise"`: a multiple-choice one's pair
    view) through `tailor eval`'s judge loop; a multiple-choice one (PrefEval, PersonaMem) answered by each `llm:`
    judge's model and scored by the benchmark's rule (`fields`: `data_options`, `limit`, `seed`, `n_boot`,
    `batch_size`, `skip_invalid`, `judge_options`: the model's backend options and `temperature`, `max_tokens`).

    `protocol` (benchmarks/protocols.py): `default`, or `authors` (asked as the benchmark's published scripts
    ask: PrefEval's 5-token caps, PersonaMem's messages and settings), recorded in the run; `scorer_version`:
    PersonaMem's upstream scorer (`041d82a`, the default, or `214bc36`)."""
    from tailorbench.benchmarks.protocols import NAMES

    if task not in TASKS:
        raise ConfigError(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    if protocol not in NAMES:
        raise ConfigError(f"option --protocol must be one of {', '.join(NAMES)}, got {protocol!r}")
    kind, layout = data_task(data) if task == "auto" else (task, None)
    if kind != "multiple-choice":
        if scorer_version is not None:
            raise ConfigError("--scorer-version applies to PersonaMem only")
        if protocol == "authors":
            settings, fields = pairwise_authors_protocol(layout or data_task(data)[1], judges, settings, fields)
        return list(pairwise_runs(data, judges, settings, out=out, config=config, repeat=repeat,
                                  progress=progress, fields=fields))
    if repeat != 1:
        raise ConfigError("--repeat applies to pairwise runs; a multiple-choice run is judged once")
    given = eval_config(config, {**fields, "data": data, "judge": judges[0], "setting": settings[0]})
    what = f"a multiple-choice benchmark ({layout or data})"
    _not_taken(given, type(given)(), CHOICE_FIELDS, what)
    if settings != ["persona"]:
        raise ConfigError(f"{what} is asked in its own messages: --setting does not apply")
    models = [_model_of(j, what, "; --task pairwise judges its pair view with any judge") for j in judges]
    return [_choice(given, model, Path(out) if len(models) == 1 else Path(out) / _slug(model), protocol,
                    scorer_version) for model in models]


#: the Personalized RewardBench authors' generation settings and parse (evaluation/pairwise.py, commit d8a0cdaa)
REWARDBENCH_LLM = {"parser": "result", "max_tokens": "512", "temperature": "0"}


def pairwise_authors_protocol(layout: str, judges: list[str], settings: list[str], fields_: dict[str, Any]
                              ) -> tuple[list[str], dict[str, Any]]:
    """`--protocol authors` on a pairwise benchmark, as (settings, fields) for `eval_many`: Personalized
    RewardBench only (the question alone: setting `none`; the authors' seed-42 order per case; an `llm:` judge with
    their prompt files, given as the judge options `system_file` and `user_file`, their `Result:` parse, 512
    tokens at temperature 0; an `rm:` judge at 8192 tokens). What it sets is recorded in the run (orders, judge
    options) and its report says so; an option that contradicts it is a ConfigError."""
    if layout != "personalized-rewardbench":
        raise ConfigError(f"--protocol authors: no authors' protocol is defined for the {layout} benchmark (the "
                          "multiple-choice PrefEval and PersonaMem, and Personalized RewardBench, have one)")
    if settings not in ([], ["persona"], ["none"]):
        raise ConfigError("--protocol authors shows the judge the question alone (setting none): drop --setting")
    if fields_.get("orders", "both") not in ("both", "authors"):
        raise ConfigError("--protocol authors judges the one order the authors draw: drop --orders")
    kinds = {j.split(":", 1)[0] for j in judges}
    if len(kinds) != 1 or not kinds <= {"llm", "rm"}:
        raise ConfigError("--protocol authors on Personalized RewardBench takes llm: judges or rm: judges, not both "
                          "nor other kinds")
    given = dict(fields_.get("judge_options") or {})
    wanted = REWARDBENCH_LLM if kinds == {"llm"} else {"max_length": "8192"}
    clash = sorted(k for k, v in wanted.items() if k in given and str(given[k]) != v)
    if clash:
        raise ConfigError(f"--protocol authors sets --judge-option {', '.join(f'{k}={wanted[k]}' for k in clash)}: "
                          "drop your values")
    if kinds == {"llm"} and not (given.get("system_file") and given.get("user_file")):
        raise ConfigError("--protocol authors asks with the authors' prompt files: give --judge-option "
                          "system_file=REPO/prompts/pairwise_system.txt and user_file=REPO/prompts/pairwise_user.txt "
                          "from a clone of github.com/Martin-qyma/Personalized-RewardBench")
    return ["none"], {**fields_, "orders": "authors", "judge_options": {**given, **wanted}}


def _slug(text: str) -> str:
    from tailorbench.evaluate.runner import slug

    return slug(text)


def _choice(given: Any, model: str, run_dir: Path, protocol: str = "default",
            scorer_version: str | None = None) -> ChoiceResult:
    from tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice

    options = dict(given.judge_options)
    generation = {k: options.pop(k) for k in ("temperature", "max_tokens") if k in options}
    if protocol == "authors" and generation:
        raise ConfigError(f"--protocol authors fixes the generation settings as the authors' scripts set them: "
                          f"drop --judge-option {', '.join(sorted(generation))}")
    config = ChoiceConfig(data=given.data, model=model, data_options=dict(given.data_options), model_options=options,
                          limit=given.limit, skip_invalid=given.skip_invalid, seed=given.seed, n_boot=given.n_boot,
                          protocol=protocol, scorer_version=scorer_version,
                          **({"batch_size": given.batch_size} if given.batch_size else {}))
    if "temperature" in generation:
        config.temperature = float(generation["temperature"])
    if "max_tokens" in generation:
        config.max_tokens = int(generation["max_tokens"])
    return ChoiceResult.model_validate(run_choice(config, run_dir)).located(run_dir)


def _config_of(run_dir: Path, cls: Any) -> Any:
    from tailorbench.run_kinds import read_manifest

    config = read_manifest(run_dir).get("config")
    if not isinstance(config, dict):
        raise ConfigError(f"{run_dir / 'manifest.json'}: no config to resume from")
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"{run_dir / 'manifest.json'}: its config is not a {cls.__name__} ({exc})") from None


def resume_choice(run_dir: Path, progress: bool, max_failed: float | None) -> ChoiceResult:
    """A multiple-choice run continues with the items not yet answered."""
    from tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice

    return ChoiceResult.model_validate(run_choice(_config_of(run_dir, ChoiceConfig), run_dir)).located(run_dir)


def prefeval_generation(config: Any, out: Path, data_options: Mapping[str, Any] | None,
                        layout: str) -> PrefEvalGenerationResult:
    """PrefEval's own generation task under `tb.gen_eval` (`config` a `GenEvalConfig`): the model answers after
    the preference and the filler turns of `data_options`, the `llm:` judge's model asks the four checks."""
    from tailorbench.benchmarks.prefeval_generation import GenerationConfig, run_generation

    what = f"{layout}'s generation task"
    defaults = type(config)(per_tier=config.per_tier if config.per_tier is None else type(config).per_tier)
    _not_taken(config, defaults, GENERATION_FIELDS, what)
    generation = GenerationConfig(
        data=config.data, model=config.model, judge=_model_of(config.judge, f"{what}'s checks"),
        data_options=dict(data_options or {}), model_options=dict(config.model_options),
        judge_options=dict(config.judge_options), max_tokens=config.max_tokens, temperature=config.temperature,
        skip_invalid=config.skip_invalid, seed=config.seed, n_boot=config.n_boot,
        **({"batch_size": config.batch_size} if config.batch_size else {}))
    return PrefEvalGenerationResult.model_validate(run_generation(generation, out)).located(out)


def resume_generation(run_dir: Path, progress: bool, max_failed: float | None) -> PrefEvalGenerationResult:
    """A PrefEval generation run continues with the items not yet answered and checked."""
    from tailorbench.benchmarks.prefeval_generation import GenerationConfig, run_generation

    results = run_generation(_config_of(run_dir, GenerationConfig), run_dir)
    return PrefEvalGenerationResult.model_validate(results).located(run_dir)


def run_suite_at(suite: str | Path, out: str | Path, *, data_root: str | Path | None = None,
                 judges: Sequence[str] | None = None, settings: Sequence[str] | None = None,
                 progress: bool = False, skip_missing: bool = False) -> SuiteResult:
    """`tb.eval(suite=NAME|PATH)`: every benchmark x judge x setting of a YAML suite (or the built-in
    `personalization`, every benchmark from its folder under `data_root`), each step its own resumable run
    directory under `out`, and leaderboard.json / .md / .html at `out` with a column per benchmark (`judges`,
    `settings`, `data_root` replace the file's). A benchmark whose data is missing is a ConfigError before any
    work, or with `skip_missing` left out and named with the reason in the leaderboard. `tb.resume(out)` (or the
    same call again) finishes a killed suite: finished steps are not redone."""
    from tailorbench.benchmarks.suite import load_suite, run_suite
    from tailorbench.options import check_writable

    check_writable("--out", out, directory=True)
    loaded = load_suite(suite, data_root=data_root, judges=list(judges) if judges else None,
                        settings=list(settings) if settings else None)
    return SuiteResult.model_validate(run_suite(loaded, out, progress=progress, skip_missing=skip_missing))


def resume_suite(run_dir: Path, progress: bool, max_failed: float | None) -> SuiteResult:
    """A suite's directory: the suite it ran (suite.json) run again, its finished steps not redone."""
    from tailorbench.benchmarks.suite import read_suite_record, run_suite

    suite, skip_missing = read_suite_record(run_dir)
    return SuiteResult.model_validate(run_suite(suite, run_dir, progress=progress, skip_missing=skip_missing))
