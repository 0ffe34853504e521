"""`tailor estimate`, `tailor estimate sample`, `tailor estimate plan`: human-anchored estimates of what people
would say, from a proxy that labels every case and people who label a sample (docs/estimate.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tailorbench.api.results import EstimatePlanResult, EstimateResult, EstimateSampleResult

#: simulated pilots per (items, epsilon) of the alt-test power table of `estimate plan`
ALT_DRAWS = 200

__all__ = ["estimate", "estimate_plan", "estimate_sample"]


def _level(level: float) -> float:
    from tailorbench.options import as_float

    return as_float("--level", level, minimum=0.5, maximum=1.0, exclusive_maximum=True)


def _system(path: str | Path) -> Path:
    """RUN: a run directory, or a judge's ratings file (stage 3)."""
    system = Path(path)
    if system.is_file():
        return system
    run = _run_dir("RUN", system)
    assert run is not None
    return run


def _run_dir(flag: str, path: str | Path | None) -> Path | None:
    from tailorbench.errors import ConfigError

    if path is None:
        return None
    run = Path(path)
    if not run.is_dir() or not (run / "manifest.json").is_file():
        raise ConfigError(f"{flag} {run} is not a run directory (no manifest.json)")
    return run


def estimate(system: str | Path, proxy: str | Path | Sequence[str | Path] | None = None,
             labels: str | Path = "benchmark",
             sample: str | Path | None = None, versus: str | Path | None = None, assume_uniform: bool = False,
             level: float = 0.95, out: str | Path | None = None, check_library: bool = False) -> EstimateResult:
    """`tailor estimate RUN`: the system under test's run `system` (a pairwise run: its accuracy against people,
    with the proxy run `proxy` standing in for them, or a list of runs: the fold models of a proxy cross-fitted
    on people's labels, crossppi; a gen-eval run: the win rate people give, its own judge the
    proxy; a judge's ratings file, stage 3's `tailor stages judge-ab`: the mean rating people give, the judge
    the proxy), people's `labels` (an annotation export folder, a long-format ratings file, or `benchmark`: the
    benchmark's own labels on the sample), the sampling plan `sample` the labelled items came from (else
    `assume_uniform` must say they were a uniform sample), optionally as the difference with `versus`. Per
    split × tier: human-only, proxy-only and human-anchored (PPI++) estimates with their intervals at `level`,
    and the human labels the proxy was worth; with `out`, written there as JSON (`EstimateReport`), or as a
    Markdown page with the definitions when its name ends in `.md`.
    `check_library` recomputes the uniform cells with ppi-python (the [estimate] extra)."""
    from tailorbench.estimation.anchored import estimate_runs
    from tailorbench.files import claim_output

    level = _level(level)
    run = _system(system)
    given = [] if proxy is None else [proxy] if isinstance(proxy, str | Path) else list(proxy)
    proxies = [p for p in (_run_dir("--proxy", g) for g in given) if p is not None]
    versus_run = _run_dir("--versus", versus)
    sample_path = None if sample is None else Path(sample)
    label_source: str | Path = labels if str(labels) == "benchmark" else Path(labels)
    door = None if out is None else claim_output(
        "--out", out, inputs=[run, *proxies, versus_run, sample_path,
                              None if isinstance(label_source, str) else label_source])
    report = estimate_runs(run, proxies or None, label_source, sample_path, versus_run, assume_uniform, level,
                           check_library)
    if door is not None and door.root.suffix.lower() == ".md":
        from tailorbench.estimation.report import render_markdown

        with door.writing(None) as handle:
            handle.write(render_markdown(report, heading="#"))
    elif door is not None:
        door.write_json(None, report.model_dump(mode="json"))
    return EstimateResult.model_validate(report.model_dump(mode="json"))


def estimate_sample(data: str, out: str | Path, sampling: str = "stratified", size: int | None = None,
                    share: float | None = None, proxy: str | Path | None = None, seed: int = 0,
                    project: str | None = None, n: int = 3, directory: str | Path | None = None,
                    db: str | None = None) -> EstimateSampleResult:
    """`tailor estimate sample`: draw the cases people should label from the benchmark `data` (`n` of them, or a
    `share`) by `sampling` (uniform, stratified by split × tier, or active by the `proxy` run's uncertainty) and
    write them to `out` as an annotation import (PairCase JSONL whose `meta.estimate_plan` carries each case's
    inclusion probability); with `project`, also a pairwise annotation project of that name created (`n`
    annotators per item, in `directory` / `db` as `tailor annotate` takes them) with the plan imported."""
    from tailorbench.estimation.sample_plan import write_sample
    from tailorbench.files import check_output
    from tailorbench.options import as_choice, as_float, as_int

    as_choice("--sampling", sampling, ("uniform", "stratified", "active"))
    if size is not None:
        as_int("--size", size, minimum=2)
    if share is not None:
        as_float("--share", share, minimum=0.0, maximum=1.0, exclusive_minimum=True)
    proxy_run = _run_dir("--proxy", proxy)
    local = Path(data)
    target = check_output("--out", out, inputs=[local if local.exists() else None, proxy_run])
    if project is not None:
        from tailorbench.api.annotate import DEFAULT_DIR, database
        from tailorbench.errors import ConfigError

        as_int("--n", n, minimum=1)
        if not project.strip():
            raise ConfigError("--project must not be empty")
        store = database(directory if directory is not None else DEFAULT_DIR, db)  # [web] named before any work
        if any(p["name"] == project for p in _service_projects(store)):
            raise ConfigError(f"--project {project} already exists: name a new project (the plan's cases are "
                              "imported into a project of their own)")
    report = write_sample(data, target, sampling, size, share, proxy_run, seed)
    result = report.model_dump(mode="json")
    if project is not None:
        from tailorbench.api.annotate import DEFAULT_DIR, create_project, import_items

        where = directory if directory is not None else DEFAULT_DIR
        create_project(project, "pairwise", n, directory=where, db=db)
        imported = import_items(project, target, "paircase", directory=where, db=db)
        result["project"] = {"name": project, **imported.to_dict()}
    return EstimateSampleResult.model_validate(result)


def estimate_plan(system: str | Path, proxy: str | Path | None = None, labels: str | Path = "benchmark",
                  half_width: float = 0.03, level: float = 0.95, cases: int | None = None,
                  versus: str | Path | None = None, draws: int = 1000, seed: int = 0,
                  out: str | Path | None = None) -> EstimatePlanResult:
    """`tailor estimate plan`: from a pilot (the runs' cases people labelled in `labels`), the human labels a
    `half_width` interval at `level` needs, human-only and human-anchored, over the runs' cases (or `cases`),
    each checked by `draws` simulated samples from the pilot; with several raters per pilot item (pairwise), the
    alt-test's power for the proxy at each number of items and margin ε (up to ALT_DRAWS draws each)."""
    from tailorbench.errors import ConfigError
    from tailorbench.estimation.planning import plan_from_runs
    from tailorbench.files import claim_output
    from tailorbench.options import as_float, as_int

    level = _level(level)
    as_float("--half-width", half_width, minimum=0.0, maximum=1.0, exclusive_minimum=True)
    as_int("--draws", draws, minimum=0, maximum=100_000)
    if cases is not None:
        as_int("--cases", cases, minimum=3)
    if str(labels) == "benchmark":
        raise ConfigError("a plan needs a pilot of people's labels: --labels an annotation export or ratings file")
    run = _system(system)
    proxy_run, versus_run = _run_dir("--proxy", proxy), _run_dir("--versus", versus)
    door = None if out is None else claim_output("--out", out, inputs=[run, proxy_run, versus_run, Path(labels)])
    report = plan_from_runs(run, proxy_run, Path(labels), half_width, level, cases, versus_run, draws, seed,
                            min(draws, ALT_DRAWS))
    if door is not None:
        door.write_json(None, report.model_dump(mode="json"))
    return EstimatePlanResult.model_validate(report.model_dump(mode="json"))


def _service_projects(store: object) -> list[dict[str, object]]:
    from tailorbench.annotation import service

    projects: list[dict[str, object]] = service.list_projects(store)  # type: ignore[arg-type]
    return projects
