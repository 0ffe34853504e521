"""Model backends by name: `openai:MODEL[@URL]`, `hf:PATH`, `vllm:PATH`, or a plugin's (`tailorbench.backends`
entry points).

A backend is a `ModelAPI` class (models/model.py: one attempt of a call) registered with
`@BACKENDS.register("name")`. `make_chat_model` builds it as `cls(**cls.parse_arg(spec, arg), spec=spec,
**its options)` and wraps it in the one `Model` (cache, retries, concurrency, accounting). `parse_arg`
(optional; default `{"model": arg}`) reads what follows `name:`. The options a user may give
(`--judge-option KEY=VALUE`, `model_options:` in configs) are the keyword arguments of the class's `__init__`
plus the wrapper's (`model.REMOTE_OPTIONS` for remote APIs, `LOCAL_OPTIONS` for local models), so nothing
repeats them by hand. Built-in backends
are imported on first use, so `tailor --help` never pays for torch.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.base import ChatModel
from tailorbench.models.model import BATCH_OPTIONS, LOCAL_OPTIONS, REMOTE_OPTIONS, Model
from tailorbench.options import as_bool
from tailorbench.registry import Registry, did_you_mean

BACKENDS: Registry[type[Any]] = Registry(
    "model backend", "tailorbench.backends",
    lazy={"openai": "tailorbench.models.openai_compat", "hf": "tailorbench.models.hf_local",
          "vllm": "tailorbench.models.vllm_backend", "anthropic": "tailorbench.models.anthropic_backend"},
)
#: arguments of a backend's __init__ that come from the spec, not from options
_FROM_SPEC = frozenset({"self", "model", "spec", "base_url"})


@dataclass(frozen=True)
class ModelSpec:
    backend: str
    model: str
    base_url: str | None = None


def _split(spec: str) -> tuple[str, type[Any], str]:
    """(backend name, its class, what follows `name:`); a malformed spec or unknown backend is a ConfigError
    naming the known backends."""
    name, sep, rest = spec.strip().partition(":")
    name, rest = name.strip().lower(), rest.strip()
    if not sep or not rest:
        raise ConfigError(f"bad model spec {spec!r}: expected BACKEND:MODEL, e.g. openai:MODEL, openai:MODEL@URL "
                          f"or hf:PATH (backends: {', '.join(BACKENDS.names())})")
    if name not in BACKENDS:
        raise ConfigError(f"unknown model backend {name!r} in {spec!r}{did_you_mean(name, BACKENDS.names())}; known: "
                          f"{', '.join(BACKENDS.names())}")
    return name, BACKENDS.get(name), rest


def parse_model_spec(spec: str) -> ModelSpec:
    """`BACKEND:ARG` (e.g. `openai:MODEL@http://host:port/v1`, `hf:PATH_OR_HUB_ID`)."""
    name, cls, rest = _split(spec)
    parsed = _arguments(cls, spec, rest)
    return ModelSpec(name, str(parsed["model"]), parsed.get("base_url"))


def _arguments(cls: type[Any], spec: str, rest: str) -> dict[str, Any]:
    parse = getattr(cls, "parse_arg", None)
    return dict(parse(spec, rest)) if parse is not None else {"model": rest}


def _own_options(cls: type[Any]) -> set[str]:
    """The class's keyword arguments, and the fields of its `config_type` (a dataclass of engine options that
    its `**kwargs` take, e.g. the vllm backend's)."""
    params = inspect.signature(cls.__init__).parameters
    names = {n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD} - _FROM_SPEC
    config = getattr(cls, "config_type", None)
    return names | ({f.name for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else set())


def _wrapper_options(cls: type[Any]) -> frozenset[str]:
    return REMOTE_OPTIONS if getattr(cls, "remote", True) else LOCAL_OPTIONS


def backend_options(backend: str | type[Any]) -> set[str]:
    """The options a backend takes: its class's keyword arguments (less those the spec gives) and the
    wrapper's for its kind."""
    cls = BACKENDS.get(backend) if isinstance(backend, str) else backend
    return _own_options(cls) | _wrapper_options(cls)


def make_chat_model(spec: str, options: dict[str, Any] | None = None) -> ChatModel:
    """Build a chat model from its spec; backend options (concurrency, cache, prices ...) come in `options`."""
    name, cls, rest = _split(spec)
    arguments = _arguments(cls, spec, rest)  # the spec checked (e.g. the base URL) before any option
    options = dict(options or {})
    accepted = backend_options(cls)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(
            f"option(s) {', '.join(unknown)} do not apply to the {name} backend; "
            f"it takes: {', '.join(sorted(accepted))}"
        )
    own = _own_options(cls)
    api = cls(**arguments, spec=spec, **{k: v for k, v in options.items() if k in own})
    wrapper = {k: v for k, v in options.items() if k in _wrapper_options(cls) and k not in BATCH_OPTIONS}
    model = Model(api, **wrapper)
    batch = {k: v for k, v in options.items() if k in BATCH_OPTIONS}
    if batch.get("batch") is not None and as_bool("batch", batch["batch"]):
        from tailorbench.models.batch_engine import make_batcher

        stored = {k: v for k, v in options.items() if k in own and k not in ("api_key", "headers")}
        model.use_batches(make_batcher(name, api, model, batch, stored))
    chat: ChatModel = model
    return chat
