"""Where a run's judge batches are computed: in this process (`local`, the default) or on a Ray cluster (`ray`).

`ray` starts N actors (`JudgeWorker`), each building its own judge from the run's spec (one model replica per
worker), and hands the runner one object, `RayJudgePool`, that is a batched `PairJudge`: its `judge(batch)` runs
on the least busy worker. So the one judge loop (`judging.judge_pairs`) drives a cluster as it drives a local
judge, and the driver alone writes predictions.jsonl with the runner's row mapper, each batch the moment it
lands: the run directory, `--resume` (by `(case_id, order)`), the manifest and the lock are those of one
process, and a killed driver loses only the batches in flight. The workers call their models through the same
wrapper (`models/model.py`), so they share the call cache where its file is shared (every worker of one machine;
shared storage across machines).

A worker that dies (node lost, out of memory, `ray.kill`) is replaced and its unfinished batches are redone on
the new one; the manifest's judge description counts both (`executor.replaced_workers`, `redone_batches`,
`redone_verdicts`). An error the judge itself raises (rejected credentials, a model that cannot be loaded) is
not a dead worker: it stops the run as it would in one process.

A `vllm:` model is the exception: an `llm:vllm:` judge (and gen-eval's or build's `vllm:` generator,
`generator_options`) stays in the driver, behind the one wrapper, and only its engines go to the cluster, as
Ray Data LLM replicas (models/vllm_ray_data.py), Ray's maintained way to run vLLM: it places each replica's
devices (tensor-parallel bundles), restarts a dead engine and streams the rows back, while the call cache and
the counters stay in one process.

`ray` is imported only when a run asks for it (the `[ray]` extra; the connection: tailorbench/raycluster.py).
"""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.evaluate.counters import add_counts
from tailorbench.judges.base import (
    JudgeOptions,
    PairJudge,
    make_judge,
    parse_spec,
    pre_work_warnings,
    split_spec_options,
)
from tailorbench.logs import get_logger
from tailorbench.models.vllm_ray_data import RayDataSettings
from tailorbench.raycluster import NAMESPACE, connect, disconnect, fitting_workers, import_ray, worker_env
from tailorbench.redact import redact, redact_obj
from tailorbench.schema import JudgeInput, Verdict

log = get_logger(__name__)

EXECUTORS = ("local", "ray")
#: `--executor-option KEY=VALUE` keys of the ray executor
RAY_OPTIONS = ("workers", "num_cpus", "num_gpus", "depth", "max_replacements", "start_timeout")


@dataclass(frozen=True)
class RaySettings:
    """The ray executor's typed options."""

    address: str | None = None
    #: actors; None: as many as the cluster's CPUs (GPUs when `num_gpus` > 0) allow
    workers: int | None = None
    #: resources each actor reserves
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    #: batches each worker holds at once (the next one is there when a batch ends)
    depth: int = 2
    #: dead workers replaced before the run stops (None: 2 x workers + 2)
    max_replacements: int | None = None
    #: seconds to wait for the workers to start (a cluster without the resources asked for never starts them)
    start_timeout: float = 600.0


def check_executor(executor: str, address: str | None, options: dict[str, Any]) -> RaySettings | None:
    """`--executor`, `--ray-address` and `--executor-option` checked before any work: the ray settings, or
    None for the local executor (which takes neither an address nor options)."""
    from tailorbench.options import as_choice, as_float, as_int

    kind = as_choice("--executor", executor, EXECUTORS)
    if not isinstance(options, dict):
        raise ConfigError(f"--executor-option must be KEY=VALUE pairs, got {options!r}")
    if kind == "local":
        if address:
            raise ConfigError("--ray-address needs --executor ray")
        if options:
            raise ConfigError(f"--executor-option {', '.join(sorted(options))}: the local executor takes none "
                              "(they are the ray executor's)")
        return None
    unknown = sorted(set(options) - set(RAY_OPTIONS))
    if unknown:
        raise ConfigError(f"unknown ray executor option(s) {', '.join(unknown)}; known: {', '.join(RAY_OPTIONS)}")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ConfigError(f"--ray-address must be an address (HOST:PORT, ray://HOST:PORT or auto), got {address!r}")
    get = options.get
    return RaySettings(
        address=address.strip() if address else None,
        workers=None if get("workers") in (None, "") else as_int("workers", get("workers"), minimum=1),
        num_cpus=as_float("num_cpus", get("num_cpus", 1.0), minimum=0.0),
        num_gpus=as_float("num_gpus", get("num_gpus", 0.0), minimum=0.0),
        depth=as_int("depth", get("depth", 2), minimum=1),
        max_replacements=None if get("max_replacements") in (None, "")
        else as_int("max_replacements", get("max_replacements"), minimum=0),
        start_timeout=as_float("start_timeout", get("start_timeout", 600.0), minimum=1.0),
    )


class JudgeWorker:
    """One Ray actor's state: its own judge, built from the spec in `start` (so that an error building it, e.g.
    a model that cannot be loaded, reaches the driver as that error, and the actor stays a plain process)."""

    def __init__(self, spec: str, options: JudgeOptions) -> None:
        self.spec = spec
        self.options = options
        self.judge: PairJudge | None = None
        self.prepared = False
        self.pre_work: set[str] = set()
        self.lock = asyncio.Lock()

    def start(self) -> dict[str, Any]:
        import ray

        self.judge = make_judge(self.spec, self.options)
        return {"batch_size": self.judge.batch_size, "warnings": list(self.judge.warnings),
                "node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "description": redact_obj(self.judge.describe())}

    def check_inputs(self, inputs: Sequence[JudgeInput]) -> list[str]:
        assert self.judge is not None
        return pre_work_warnings(self.judge, inputs)

    def training_content(self) -> Any:
        method = getattr(self.judge, "training_content", None)
        return method() if callable(method) else None

    async def judge_batch(self, inputs: Sequence[JudgeInput]) -> tuple[list[Verdict], list[str], dict[str, Any]]:
        """The verdicts of one batch, the judge's warnings (less the pre-work ones of its first batch, which the
        driver says for the whole run) and its description (call counters) after the batch."""
        async with self.lock:  # the first batch prepares the judge (a remote model's preflight) once
            if self.judge is None:  # a replacement worker builds its judge with its first batch
                self.start()
            assert self.judge is not None
            if not self.prepared:
                self.pre_work.update(pre_work_warnings(self.judge, inputs))
                await self.judge.prepare(inputs)
                self.prepared = True
        verdicts = await self.judge.judge(inputs)
        warnings = [w for w in self.judge.warnings if w not in self.pre_work]
        return verdicts, warnings, redact_obj(self.judge.describe())

    async def close(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()


@dataclass
class _Slot:
    """One worker position of the pool: its current actor (replaced when it dies) and its batches in flight."""

    actor: Any
    name: str
    busy: int = 0


class RayJudgePool:
    """A batched `PairJudge` whose batches run on Ray actors (module docstring). Built with the cluster
    connected and the workers started; `aclose` ends them and the connection this pool opened."""

    def __init__(self, spec: str, options: JudgeOptions, settings: RaySettings) -> None:
        ray = import_ray()
        self.spec = redact(spec)
        self.settings = settings
        self.warnings: list[str] = []
        self._spec, self._options = spec, options
        self._token = uuid.uuid4().hex[:8]
        self._generation = 0
        self._closed = False
        self._owns_connection = connect(settings.address)
        try:
            self.workers = fitting_workers(settings.workers, settings.num_cpus, settings.num_gpus)
            self._remote = ray.remote(JudgeWorker)
            self._slots = [_Slot(*self._spawn(k)) for k in range(self.workers)]
            infos = self._start_all(ray)
        except BaseException:
            self._shutdown(ray)
            raise
        self._nodes = {info["node"] for info in infos}
        #: the first workers' process ids (what a benchmark reads their CPU time by)
        self.worker_pids = [int(info["pid"]) for info in infos]
        first = infos[0]
        self._inner_batch = int(first["batch_size"])
        explicit = (options.batch_size is not None or "batch_size" in options.extra
                    or "batch_size" in split_spec_options(spec)[1])
        #: the pool's batch size: the judge's own, unless a run is too small to keep every worker busy with it
        self.batch_size = self._inner_batch
        self._explicit_batch = explicit
        self.max_inflight = self.workers * settings.depth
        self.warnings.extend(first["warnings"])
        self._described: dict[str, dict[str, Any]] = {slot.name: info["description"]
                                                      for slot, info in zip(self._slots, infos)}
        self.replaced = 0
        self.redone_batches = 0
        self.redone_verdicts = 0
        self._errors: list[str] = []
        self._limit = settings.max_replacements if settings.max_replacements is not None else 2 * self.workers + 2
        log.info(f"ray executor: {self.workers} workers of {self.spec} on {len(self._nodes)} node(s)")

    # -- start and stop --------------------------------------------------------------------------------------

    def _spawn(self, slot: int) -> tuple[Any, str]:
        self._generation += 1
        name = f"judge-{self._token}-{slot}.{self._generation}"
        env = worker_env()
        actor = self._remote.options(
            name=name, namespace=NAMESPACE, num_cpus=self.settings.num_cpus, num_gpus=self.settings.num_gpus,
            scheduling_strategy="SPREAD", runtime_env={"env_vars": env} if env else None,
        ).remote(self._spec, self._options)
        return actor, name

    def _start_all(self, ray: Any) -> list[dict[str, Any]]:
        refs = [slot.actor.start.remote() for slot in self._slots]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.settings.start_timeout)
        if len(ready) < len(refs):
            raise ConfigError(
                f"{len(refs) - len(ready)} of {len(refs)} ray workers did not start within "
                f"{self.settings.start_timeout:g} s (the cluster may lack the resources asked for: "
                f"num_cpus={self.settings.num_cpus:g}, num_gpus={self.settings.num_gpus:g} each)")
        return [_get(ray, ref) for ref in refs]

    async def aclose(self) -> None:
        """End the workers (after each flushed its judge: cache writes on disk) and the connection this pool
        opened; a second call does nothing (gen-eval closes its judge after the verdicts and at the end)."""
        if self._closed:
            return
        self._closed = True
        ray = import_ray()
        closing = [slot.actor.close.remote() for slot in self._slots]
        try:
            await asyncio.gather(*closing, return_exceptions=True)  # flush each worker's cache writes
        finally:
            self._shutdown(ray)

    def _shutdown(self, ray: Any) -> None:
        for slot in getattr(self, "_slots", []):
            ray.kill(slot.actor)
        if self._owns_connection:
            self._owns_connection = False
            disconnect()

    # -- the judge protocol ----------------------------------------------------------------------------------

    def check_inputs(self, inputs: Sequence[JudgeInput]) -> list[str]:
        """The judge's pre-work warnings for the whole run, from one worker."""
        ray = import_ray()
        return list(_get(ray, self._slots[0].actor.check_inputs.remote(list(inputs))))

    def training_content(self) -> Any:
        ray = import_ray()
        return _get(ray, self._slots[0].actor.training_content.remote())

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        """Size the batches so that every worker gets several (each worker prepares its judge on its first)."""
        if not self._explicit_batch and inputs:
            self.batch_size = max(1, min(self._inner_batch, math.ceil(len(inputs) / (2 * self.max_inflight))))

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        """One batch on the least busy worker; on a dead worker, again on its replacement."""
        ray = import_ray()
        items = list(inputs)
        while True:
            slot = min(self._slots, key=lambda s: s.busy)
            actor = slot.actor
            slot.busy += 1
            ref = actor.judge_batch.remote(items)
            try:
                verdicts, warnings, description = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except ray.exceptions.RayActorError as exc:
                self._replace(slot, actor, exc, len(items))
                continue
            except ray.exceptions.RayTaskError as exc:  # the judge's own error: as it would be in one process
                cause = exc.cause if isinstance(exc.cause, BaseException) else exc
                raise cause from None
            finally:
                slot.busy -= 1
            self._described[slot.name] = description
            self.warnings.extend(w for w in warnings if w not in self.warnings)
            return list(verdicts)

    def _replace(self, slot: _Slot, dead: Any, exc: BaseException, n: int) -> None:
        """A batch's worker died: start a new actor in its slot (once, however many of its batches fail) and
        count the batch as redone; past the limit of replacements the run stops with the last error."""
        self.redone_batches += 1
        self.redone_verdicts += n
        if slot.actor is dead:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self._errors.append(f"{slot.name}: {first_line}")
            if self.replaced >= self._limit:
                raise RuntimeError(f"ray workers of {self.spec} died {self.replaced + 1} times (more than "
                                   f"max_replacements={self._limit}); last: {first_line}") from None
            self.replaced += 1
            slot.actor, slot.name = self._spawn(self._slots.index(slot))
            log.warning(f"ray worker {self._errors[-1]}; replaced by {slot.name}, its unfinished batches are redone")

    def describe(self) -> dict[str, Any]:
        """The first worker's description of the judge, with the call counters (`model.stats`), the verdict
        parse counts and the scored inputs summed over every worker this run had, and the executor's block."""
        described = list(self._described.values())
        out = dict(described[0])
        for key in ("parse", "unique_inputs_scored"):
            values = [d[key] for d in described if key in d]
            if values and all(isinstance(v, dict) for v in values):
                total: dict[str, Any] = {}
                for value in values:
                    total = add_counts(total, value)
                out[key] = total
            elif values and all(isinstance(v, int) for v in values):
                out[key] = sum(values)
        models = [d["model"] for d in described if isinstance(d.get("model"), dict)]
        if models and all(isinstance(m.get("stats"), dict) for m in models):
            stats: dict[str, Any] = {}
            for model in models:
                stats = add_counts(stats, model["stats"])
            out["model"] = {**models[0], "stats": stats}
        out["spec"] = self.spec
        s = self.settings
        out["executor"] = {
            "kind": "ray", "address": redact(s.address) if s.address else None, "workers": self.workers,
            "nodes": len(self._nodes), "num_cpus": s.num_cpus, "num_gpus": s.num_gpus, "depth": s.depth,
            "batch_size": self.batch_size, "replaced_workers": self.replaced, "redone_batches": self.redone_batches,
            "redone_verdicts": self.redone_verdicts, "worker_errors": self._errors[:5],
        }
        return out


def build_judge(spec: str, options: JudgeOptions, executor: str = "local", address: str | None = None,
                executor_options: dict[str, Any] | None = None) -> PairJudge:
    """The judge of a run on its executor: built here (`local`), or a pool of Ray workers that each build it
    (`ray`); the judge loop drives either the same way. `tailor eval` and gen-eval's judging build it here."""
    settings = check_executor(executor, address, executor_options or {})
    if settings is None:
        return make_judge(spec, options)
    if runs_on_vllm(spec):
        return make_judge(spec, on_ray_data(options, settings, executor_options or {}))
    return make_ray_judge(spec, options, settings)


def generator_options(model: str, options: dict[str, Any], executor: str = "local", address: str | None = None,
                      executor_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A generating model's backend options under the run's executor: under `--executor ray` a `vllm:` model's
    engines are Ray Data LLM replicas on the cluster; any other model generates in this process."""
    from tailorbench.models.backends import parse_model_spec

    settings = check_executor(executor, address, executor_options or {})
    if settings is None or parse_model_spec(model).backend != "vllm":
        return options
    return {**options, "ray_data": ray_data_settings(settings, executor_options or {})}


def runs_on_vllm(spec: str) -> bool:
    """An LLM judge on the `vllm:` backend: under `--executor ray` its engines are Ray Data LLM's replicas."""
    from tailorbench.models.backends import parse_model_spec

    name, arg = parse_spec(split_spec_options(spec)[0])
    return name == "llm" and bool(arg) and parse_model_spec(str(arg)).backend == "vllm"


def on_ray_data(options: JudgeOptions, settings: RaySettings, given: dict[str, Any]) -> JudgeOptions:
    """The judge's options with its `vllm:` model's engines on the cluster (models/vllm_ray_data.py)."""
    return replace(options, extra={**options.extra, "ray_data": ray_data_settings(settings, given)})


#: the `--executor-option`s that a vllm: model's Ray Data engines take (the others are the actor pool's)
RAY_DATA_OPTIONS = ("workers", "num_cpus", "num_gpus")


def ray_data_settings(settings: RaySettings, given: dict[str, Any]) -> RayDataSettings:
    """The executor's settings as a `vllm:` model's Ray Data engine settings: one replica per worker;
    `num_gpus` 0 (the default) is one GPU per device where the cluster has GPUs. An actor-pool option given
    (depth, max_replacements, start_timeout) is refused: it would do nothing there."""
    unused = sorted(set(given) - set(RAY_DATA_OPTIONS))
    if unused:
        raise ConfigError(f"--executor-option {', '.join(unused)}: a vllm: model's engines run as Ray Data LLM "
                          f"replicas, which take only {', '.join(RAY_DATA_OPTIONS)} (docs/scale.md)")
    return RayDataSettings(replicas=settings.workers, num_cpus=settings.num_cpus,
                           num_gpus=settings.num_gpus or None, address=settings.address)


def make_ray_judge(spec: str, options: JudgeOptions, settings: RaySettings) -> RayJudgePool:
    """The judge of a run with `--executor ray`: a pool of workers on the cluster at `settings.address` (a
    local one started for the run when there is none and $RAY_ADDRESS is unset)."""
    return RayJudgePool(spec, options, settings)


def _get(ray: Any, ref: Any) -> Any:
    """`ray.get` with the judge's own error (a RayTaskError's cause) raised as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        raise cause from None
