"""A run's configuration: `EvalConfig` (everything that decides a run's predictions, stored in manifest.json), its
validation (every option typed and in range, once, before any work: `validate_config`) and reading it back from a
run's manifest for `--resume` (`load_config`)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tailorbench.errors import ConfigError, DataError
from tailorbench.evaluate.settings import get_setting
from tailorbench.failures import check_max_failed
from tailorbench.schema import PairCase

MANIFEST = "manifest.json"
#: set on the copy `validate_config` returns, so a config checked once is not checked again
_CHECKED = "_tailorbench_checked"


@dataclass
class EvalConfig:
    """Everything that decides a run's predictions; stored in manifest.json so `--resume` can continue it."""

    data: str = "demo"
    judge: str = "longer"
    setting: str = "persona"
    orders: Literal["both", "random", "authors"] = "both"
    seed: int = 0
    splits: list[str] | None = None
    tiers: list[str] | None = None
    #: a seeded sample of this many cases (source order kept), after the split/tier filters
    limit: int | None = None
    persona_sections: list[str] | None = None
    skip_invalid: bool = False
    ci_unit: Literal["case", "user"] = "case"
    n_boot: int = 1000
    judge_options: dict[str, Any] = field(default_factory=dict)
    setting_options: dict[str, Any] = field(default_factory=dict)
    #: the layout's options (`load_benchmark(options=...)`: PrefEval's turns, PRISM's strata, ...)
    data_options: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    #: the run fails (exit code 3) when more than this share of its verdicts failed (calls that never returned
    #: a usable answer); not a property of the predictions, kept here so `--resume` applies the same rule
    max_failed: float = 0.0
    #: where the judge's batches run: `local` (this process) or `ray` (actors on a Ray cluster,
    #: evaluate/executors.py); not a property of the predictions, kept so that `--resume` runs the same way
    executor: Literal["local", "ray"] = "local"
    #: the Ray cluster (`HOST:PORT`, `ray://HOST:PORT`, `auto`); None: $RAY_ADDRESS, else a local one for the run
    ray_address: str | None = None
    #: the executor's options (`--executor-option KEY=VALUE`: workers, num_cpus, num_gpus, depth, ...)
    executor_options: dict[str, Any] = field(default_factory=dict)
    #: the calibration figures are required (`--calibration`): a judge that yields no probability is refused
    #: before any verdict (otherwise its `calibration` is null)
    calibration: bool = False



def read_manifest_file(path: Path) -> dict[str, Any]:
    """A pairwise run's manifest read strictly (`results.check_manifest_fields`: `schema.RunManifest`, a format-1
    manifest migrated or refused), or a DataError naming the file and the field; another kind's run is a
    ConfigError naming the verb that resumes it."""
    from tailorbench.evaluate.results import check_manifest_fields
    from tailorbench.files import load_json

    data: dict[str, Any] = load_json(path, dict, "a run manifest (a JSON object)")
    kind = data.get("kind", "pairwise")
    if kind != "pairwise":
        raise ConfigError(f"{path.parent} is a {kind} run: resume it with `tailor {kind} --resume`")
    return check_manifest_fields(path, data)


def load_config(run_dir: Path) -> EvalConfig:
    """The EvalConfig a run was started with (for --resume); a directory that is not one run (missing, a
    parent of several runs, a manifest that is not a run's) is a clear error before anything is touched."""
    if not run_dir.exists():
        raise ConfigError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is not a run directory (it is a file)")
    path = run_dir / MANIFEST
    if not path.is_file():
        inner = sorted(p.parent.name for p in run_dir.glob(f"*/{MANIFEST}"))
        if inner:
            shown = ", ".join(inner[:5]) + (f" and {len(inner) - 5} more" if len(inner) > 5 else "")
            raise ConfigError(
                f"{run_dir} holds {len(inner)} runs ({shown}), not one: resume each, e.g. "
                f"tailor eval --resume {shlex.quote(str(run_dir / inner[0]))}")
        raise ConfigError(f"{run_dir} is not a run directory: {MANIFEST} is missing")
    manifest = read_manifest_file(path)
    stored = manifest.get("config")
    if not isinstance(stored, dict):
        raise DataError(path, None, "config", "missing or not an object: not a run manifest")
    known = EvalConfig.__dataclass_fields__
    try:
        return validate_config(EvalConfig(**{k: v for k, v in stored.items() if k in known}))
    except ConfigError as exc:
        raise DataError(path, None, "config", str(exc)) from None


def absolute_data(data: str) -> str:
    """The data spec a manifest records: a path made absolute (so `--resume` works from any directory); the
    names `demo` and `personafeedback` kept as they are."""
    from tailorbench.datasets.loader import DEMO, PERSONAFEEDBACK

    if data in (DEMO, PERSONAFEEDBACK):
        return data
    path = Path(data).expanduser()
    return str(path.resolve()) if path.exists() else data


def validate_config(config: EvalConfig) -> EvalConfig:
    """Every option of a run checked (typed, in range) before any work: a ConfigError naming the option. Returns
    a copy with typed values and the data path made absolute, marked as checked: given that copy again (the runner,
    a matrix of runs, a resumed run) it returns it as it is, so a run's config is validated once."""
    if getattr(config, _CHECKED, False):
        return config
    from tailorbench.options import as_bool, as_choice, as_float, as_int

    if not isinstance(config.data, str) or not config.data.strip():
        raise ConfigError(f"--data must be demo, personafeedback, hf:OWNER/NAME or a path, got {config.data!r}")
    get_setting(str(config.setting))  # an unknown setting fails here, naming the known ones
    for name, values in (("--split", config.splits), ("--tier", config.tiers),
                         ("--persona-sections", config.persona_sections)):
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            raise ConfigError(f"{name} must be a list of names, got {values!r}")
    for name, value in (("--judge-option", config.judge_options), ("setting options", config.setting_options)):
        if not isinstance(value, dict):
            raise ConfigError(f"{name} must be KEY=VALUE pairs, got {value!r}")
    top_k = config.setting_options.get("top_k")
    typed = replace(
        config,
        data=absolute_data(config.data),
        orders=as_choice("--orders", config.orders, ("both", "random", "authors")),  # type: ignore[arg-type]
        ci_unit=as_choice("--ci-unit", config.ci_unit, ("case", "user")),  # type: ignore[arg-type]
        seed=as_int("--seed", config.seed),
        n_boot=as_int("--n-boot", config.n_boot, minimum=1),
        limit=None if config.limit is None else as_int("--limit", config.limit, minimum=1),
        batch_size=None if config.batch_size is None else as_int("--batch-size", config.batch_size, minimum=1),
        skip_invalid=as_bool("--skip-invalid", config.skip_invalid),
        max_failed=check_max_failed(as_float("--max-failed", config.max_failed, minimum=0.0, maximum=1.0)),
    )
    from tailorbench.evaluate.executors import check_executor  # (imports Ray's shim only when asked for)

    check_executor(config.executor, config.ray_address, config.executor_options)
    if top_k is not None:
        typed.setting_options = {**config.setting_options, "top_k": as_int("--top-k", top_k, minimum=1)}
    setattr(typed, _CHECKED, True)  # not a dataclass field: never in the manifest, lost by `replace`
    return typed


def check_sections(sections: Sequence[str] | None, cases: Sequence[PairCase]) -> None:
    """`--persona-sections` must name sections the data has: a typo would hand every judge an empty persona."""
    if not sections:
        return
    from tailorbench.personas import canonical_key

    present: dict[str, None] = {}
    for case in cases:
        for key in case.persona:
            present.setdefault(key, None)
    missing = [s for s in sections if s.strip() and canonical_key(s.strip()) not in present]
    if missing or not any(s.strip() for s in sections):
        known = ", ".join(present) or "none (the cases carry no persona)"
        raise ConfigError(f"--persona-sections: unknown section(s) {', '.join(missing) or repr(sections)}; "
                          f"the personas of this data have: {known}")

