"""vLLM replicas on a Ray cluster through Ray Data LLM (`ray.data.llm.vLLMEngineProcessorConfig` with
`build_processor`, Ray's maintained way to run vLLM engines as a stage of a Ray Dataset): the engine of the
`vllm:` backend (models/vllm_backend.py) when a run has `--executor ray`.

Why behind the backend: the run keeps its one judge loop and its one model wrapper (cache, resume, call
accounting) in the driver; only the engine moves to the cluster. Each chunk of the backend's requests becomes
one Ray Dataset of token-id prompts (rendered and tokenized in the driver, exactly as for the local engine) and
sampling parameters; the processor runs it over `replicas` engine actors (Ray Data's actor pool, with its own
batching, retries and restarts of a dead actor), and the rows stream back batch by batch (`batch_size` rows), each
call answered the moment its row lands, so a killed driver loses only the rows in flight. A row the engine fails
(`__inference_error__`) fails its call alone, counted; a row that never comes back fails its call too.

Costs: a processor's actor pool lives for one dataset, so every chunk starts the engines again; the chunk is
large by default (`DEFAULT_CHUNK`), one start per replica for any run up to it. Ray Data's rows carry no finish
reason: it is "length" when the answer used all of `max_tokens` without the end-of-sequence token, else "stop".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.vllm_engine import VLLMEngineConfig
from tailorbench.raycluster import cluster_resources, connect, disconnect, fitting_workers, import_ray, worker_env

#: requests per dataset (one engine start per replica each): the backend's chunk under Ray Data
DEFAULT_CHUNK = 16384
#: the column that carries a request's position in its chunk through the processor
POSITION = "tailorbench_position"


@dataclass(frozen=True)
class RayDataSettings:
    """Where the engines run: set by `--executor ray` for a `vllm:` model (evaluate/executors.py)."""

    #: engine replicas (data parallel), each `tensor_parallel_size` x `pipeline_parallel_size` devices; None:
    #: as many as the cluster holds
    replicas: int | None = None
    #: resources of each device bundle of a replica; `num_gpus` None: 1 on a cluster with GPUs, else 0 (vLLM's
    #: CPU build)
    num_cpus: float = 1.0
    num_gpus: float | None = None
    #: rows per Ray Data batch: the unit that streams back to the driver
    batch_size: int = 16
    address: str | None = None


@dataclass
class RowLogprob:
    """A vLLM `Logprob`, as a Ray Data row holds it."""

    logprob: float
    decoded_token: str | None = None


@dataclass
class RowCompletion:
    """`RequestOutput.outputs[0]`'s fields that the backend reads, from a processor's output row."""

    text: str
    token_ids: list[int]
    finish_reason: str
    stop_reason: None = None
    logprobs: list[dict[int, RowLogprob]] | None = None


@dataclass
class RowOutput:
    """A processor's output row in the shape of vLLM's `RequestOutput` (what the local engine returns)."""

    outputs: list[RowCompletion]

    @classmethod
    def from_row(cls, row: dict[str, Any], max_tokens: int, eos_token_id: int | None) -> RowOutput:
        tokens = [int(t) for t in _listed(row.get("generated_tokens"))]
        rows = row.get("logprobs")
        logprobs = None
        if rows is not None:
            logprobs = [{int(t): RowLogprob(float(lp["logprob"]), lp.get("decoded_token"))
                         for t, lp in dict(entry).items() if lp is not None} if entry is not None else {}
                        for entry in _listed(rows)]  # one per generated token, in order
        ended = bool(tokens) and eos_token_id is not None and tokens[-1] == eos_token_id
        finish = "length" if not ended and len(tokens) >= max_tokens else "stop"
        text = str(row.get("generated_text") or "")
        return cls([RowCompletion(text, tokens, finish, None, logprobs)])


def _listed(value: Any) -> list[Any]:
    """A list column as a list (Ray Data hands numpy arrays back)."""
    if value is None:
        return []
    tolist = getattr(value, "tolist", None)
    return list(tolist()) if callable(tolist) else list(value)


@dataclass
class RayDataEngine:
    """One processor for one model and engine config; `generate` runs a chunk through it."""

    model: str
    config: VLLMEngineConfig
    settings: RayDataSettings
    spec: str
    eos_token_id: int | None = None
    #: replicas and GPUs per device bundle, resolved on the cluster
    replicas: int = 0
    num_gpus: float = 0.0
    datasets: int = 0
    #: processors built again because Ray refused one from an earlier session (`_rows`)
    rebuilt: int = 0
    rows: int = 0
    failed_rows: int = 0
    errors: list[str] = field(default_factory=list)
    #: each dataset's rows, seconds to its first row (the replicas' engine start, mostly) and in all
    timings: list[dict[str, float]] = field(default_factory=list)
    _processor: Any = None
    _owns_connection: bool = False

    def start(self) -> None:
        """Connect and build the processor (the engines themselves start with each dataset)."""
        if self._processor is not None:
            return
        if not self._owns_connection:  # once, however often a start that failed is retried
            self._owns_connection = connect(self.settings.address)
        try:
            import ray.data
            from ray.data.llm import build_processor, vLLMEngineProcessorConfig
        except ImportError as exc:
            raise ConfigError(f"{self.spec}: --executor ray with a vllm: model needs Ray Data LLM "
                              f"(pip install 'ray[data,serve]' beside vLLM) ({exc})") from None
        # the run's own progress display says how far it is; Ray Data's operator progress would interleave
        ray.data.DataContext.get_current().enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        engine = self.config.engine_kwargs()
        devices = engine.get("tensor_parallel_size", 1) * engine.get("pipeline_parallel_size", 1)
        gpus = self.settings.num_gpus
        self.num_gpus = (1.0 if cluster_resources()[1] > 0 else 0.0) if gpus is None else gpus
        self.replicas = fitting_workers(self.settings.replicas, self.settings.num_cpus * devices,
                                        self.num_gpus * devices)
        bundle = {"CPU": self.settings.num_cpus, **({"GPU": self.num_gpus} if self.num_gpus else {})}
        # explicit bundles: without them Ray Data asks one whole GPU per device, which a CPU cluster lacks
        placement = {"bundles": [bundle] * devices}
        env = worker_env()
        try:
            config = vLLMEngineProcessorConfig(
                model_source=self.model, engine_kwargs=engine, concurrency=self.replicas,
                batch_size=self.settings.batch_size, chat_template_stage=False, tokenize_stage=False,
                detokenize_stage=False, placement_group_config=placement, should_continue_on_error=True,
                log_engine_metrics=False, runtime_env={"env_vars": env} if env else None)
            self._processor = build_processor(config)
        except (ValueError, TypeError, OSError) as exc:
            raise ConfigError(f"{self.spec}: Ray Data LLM refused the engine config: {exc}") from None

    def generate(self, prompts: Sequence[list[int]], sampling: Sequence[dict[str, Any]],
                 deliver: Callable[[int, RowOutput | str], None]) -> None:
        """Run one chunk; `deliver(position, output)` as each row lands (a str: that row's error). Every
        position is delivered once, the rows that never came back with an error."""
        import numpy as np

        self.start()
        ray = import_ray()
        items = [{POSITION: i, "tokenized_prompt": np.asarray(ids, dtype=np.int64), "sampling_params": params}
                 for i, (ids, params) in enumerate(zip(prompts, sampling))]
        self.datasets += 1
        seen: set[int] = set()
        began = time.perf_counter()
        timing = {"rows": float(len(items)), "first_row_s": 0.0, "seconds": 0.0}
        self.timings = [*self.timings, timing][-5:]  # complete when the last row is delivered
        for row in self._rows(ray, items):
            timing["seconds"] = round(time.perf_counter() - began, 2)
            timing["first_row_s"] = timing["first_row_s"] or timing["seconds"]
            position = int(row[POSITION])
            if position in seen:
                continue
            seen.add(position)
            self.rows += 1
            error = row.get("__inference_error__")
            if error:
                self._failed(str(error))
                deliver(position, str(error))
                continue
            deliver(position, RowOutput.from_row(row, int(sampling[position]["max_tokens"]), self.eos_token_id))
        for position in range(len(items)):
            if position not in seen:
                self._failed("the row did not come back from the processor")
                deliver(position, "the row did not come back from the processor")

    def _rows(self, ray: Any, items: list[dict[str, Any]]) -> Any:
        """The processor's output rows. A processor built in an earlier Ray session of this process (another
        holder's `disconnect` ended it in between) refers to objects the new session does not own, and Ray refuses
        the dataset before its first row ("owner is unknown"): the processor is then built again, once, and the
        restart counted (`describe()["rebuilt"]`)."""
        rows = iter(self._processor(ray.data.from_items(items)).iter_rows())
        try:
            first = next(rows, None)
        except ValueError as exc:
            if "owner is unknown" not in str(exc):
                raise
            self.rebuilt += 1
            self.errors.append(f"processor built again: {str(exc).splitlines()[0][:200]}")
            self._processor = None
            self.start()
            rows = iter(self._processor(ray.data.from_items(items)).iter_rows())
            first = next(rows, None)
        if first is None:
            return
        yield first
        yield from rows

    def _failed(self, error: str) -> None:
        self.failed_rows += 1
        if len(self.errors) < 5:
            self.errors.append(error.strip().splitlines()[0][:300] if error.strip() else "unknown error")

    def close(self) -> None:
        self._processor = None
        if self._owns_connection:
            self._owns_connection = False
            disconnect()

    def describe(self) -> dict[str, Any]:
        return {"kind": "ray_data", "replicas": self.replicas, "num_cpus": self.settings.num_cpus,
                "num_gpus": self.num_gpus, "batch_size": self.settings.batch_size,
                "datasets": self.datasets, "engine_starts": self.datasets * self.replicas,
                "rows": self.rows, "failed_rows": self.failed_rows, "rebuilt": self.rebuilt, "errors": self.errors,
                "last_datasets": self.timings}
