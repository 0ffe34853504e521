"""The vLLM engine's options as one typed config, shared by the chat backend (`vllm:`, models/vllm_backend.py)
and the reward-model scorer (`rm:vllm:`, models/reward_vllm.py).

Why a dataclass: its fields are the options users may give (`--judge-option tensor_parallel_size=2`,
`model_options:` in configs); `models/backends.py` reads them from the backend's `config_type`, so the
accepted names, their types and their defaults are written once. A field left at None is left to vLLM's own
default. Engines are shared within a process (`acquire_engine`); vLLM itself is imported only when one starts
(`start_engine`).
"""

from __future__ import annotations

import threading
import time
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.options import as_bool, as_float, as_int


@dataclass(frozen=True)
class VLLMEngineConfig:
    """Arguments of `vllm.LLM(...)` that tailorbench passes through (None: vLLM's default)."""

    #: GPUs one engine shards the model over (tensor parallel)
    tensor_parallel_size: int = 1
    #: pipeline stages (multi-node engines)
    pipeline_parallel_size: int = 1
    #: context length the engine plans for (prompt + generation); smaller saves KV-cache memory
    max_model_len: int | None = None
    #: share of GPU memory the engine may take (on CPU: share of `VLLM_CPU_KVCACHE_SPACE`-bounded RAM; vLLM
    #: refuses to start on CPU without it)
    gpu_memory_utilization: float | None = None
    #: weights and activations: auto, float16, bfloat16, float32
    dtype: str = "auto"
    #: no CUDA graphs / compilation: slower steady state, faster and leaner start
    enforce_eager: bool = False
    #: sequences the scheduler runs at once
    max_num_seqs: int | None = None
    #: tokens one scheduler step may batch
    max_num_batched_tokens: int | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    enable_prefix_caching: bool | None = None
    trust_remote_code: bool = False
    tokenizer: str | None = None
    revision: str | None = None
    download_dir: str | None = None
    #: most alternatives a request may ask for (the LLM judge asks for 20)
    max_logprobs: int = 20
    #: the engine's random seed (sampling at temperature > 0)
    seed: int = 0
    #: guided JSON (`tailor build`'s structured output) without free whitespace between tokens: vLLM's
    #: `structured_outputs_config.disable_any_whitespace` on its xgrammar backend, an engine setting. Where any
    #: whitespace is allowed, a model can spend its whole budget on newlines (the tiny test model does)
    compact_json: bool = True

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_options(cls, options: Mapping[str, Any], owner: str = "vllm") -> VLLMEngineConfig:
        """Typed config from `KEY=VALUE` options (strings from the command line, or values from YAML); an
        unknown key or a bad value is one ConfigError naming it."""
        unknown = sorted(set(options) - cls.names())
        if unknown:
            raise ConfigError(f"unknown {owner} engine option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(cls.names()))}")
        hints = typing.get_type_hints(cls)
        values = {name: _typed(name, hints[name], value) for name, value in options.items()}
        return cls(**values)

    def answer_identity(self) -> str:
        """The options that change an engine's answers (not its speed or memory), as one compact string."""
        keys = ("dtype", "quantization", "kv_cache_dtype", "revision", "tokenizer", "trust_remote_code", "seed",
                "compact_json")
        return ",".join(f"{k}={getattr(self, k)}" for k in keys)

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `vllm.LLM` (those left at None are vLLM's to choose)."""
        out = {k: v for k, v in asdict(self).items() if v is not None and k != "compact_json"}
        if self.compact_json:
            out["structured_outputs_config"] = {"backend": "xgrammar", "disable_any_whitespace": True}
        return out


def _typed(name: str, hint: Any, value: Any) -> Any:
    """A value read as its field's type (`int | None` accepts "" and None as None)."""
    kinds = set(typing.get_args(hint)) if isinstance(hint, types.UnionType) else {hint}
    if value is None or value == "":
        if type(None) in kinds:
            return None
        raise ConfigError(f"{name} needs a value")
    if bool in kinds:
        return as_bool(name, value)
    if int in kinds:
        return as_int(name, value, minimum=1 if name != "seed" else None)
    if float in kinds:
        return as_float(name, value, minimum=0.0, maximum=1.0)
    return str(value)


@dataclass
class SharedEngine:
    """One `vllm.LLM` and the backends using it: in one process, the backends of one model with one config
    (gen-eval's generator and its judge, the judges of one `tailor eval`) share an engine, since two copies of
    a model rarely fit one GPU. `lock` serialises its calls (an engine runs one `generate` at a time)."""

    llm: Any
    key: tuple[Any, ...]
    users: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    start_s: float = 0.0


_ENGINES: dict[tuple[Any, ...], SharedEngine] = {}
_POOL = threading.Lock()


def acquire_engine(model: str, config: VLLMEngineConfig, spec: str, **extra: Any) -> SharedEngine:
    """The engine of (model, config, extra), started on first use; pair every call with `release_engine`."""
    key = (model, config, tuple(sorted(extra.items())))
    with _POOL:
        engine = _ENGINES.get(key)
        if engine is None:
            began = time.perf_counter()
            engine = SharedEngine(start_engine(model, config, spec, **extra), key)
            engine.start_s = round(time.perf_counter() - began, 1)
            _ENGINES[key] = engine
        engine.users += 1
        return engine


def release_engine(engine: SharedEngine) -> None:
    """One user fewer; the last one shuts the engine down (its memory back before the next model loads)."""
    with _POOL:
        engine.users -= 1
        if engine.users > 0 or _ENGINES.get(engine.key) is not engine:
            return
        del _ENGINES[engine.key]
    core = getattr(getattr(engine.llm, "llm_engine", None), "engine_core", None)
    shutdown = getattr(core, "shutdown", None)
    if callable(shutdown):
        shutdown()
    engine.llm = None


VLLM_MISSING = ("vLLM is not installed; pip install 'tailorbench[vllm]' in an environment of its own (vLLM pins "
                "its own transformers; docs/models.md, 'vLLM')")


def require_vllm(spec: str) -> None:
    """A ConfigError naming the [vllm] extra when vLLM is not importable here (checked without importing it)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(f"{spec}: {VLLM_MISSING}")


def start_engine(model: str, config: VLLMEngineConfig, spec: str, **extra: Any) -> Any:
    """`vllm.LLM(model, **config, **extra)`; a missing vLLM or an engine that cannot start is a ConfigError
    naming the spec (and the [vllm] extra)."""
    try:
        from vllm import LLM
    except ImportError as exc:
        raise ConfigError(f"{spec}: {VLLM_MISSING} ({exc})") from None
    try:
        return LLM(model=model, **config.engine_kwargs(), **extra)
    except (OSError, ValueError, RuntimeError, TypeError) as exc:
        raise ConfigError(f"{spec}: the vLLM engine did not start: {type(exc).__name__}: {exc}") from None
