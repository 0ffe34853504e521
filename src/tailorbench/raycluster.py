"""The one way tailorbench reaches a Ray cluster: `import_ray` (a clear line when the extra is missing) and
`connect` (to `--ray-address`, `$RAY_ADDRESS`, or a local Ray started for the run).

Shared by the executor's actor pool (evaluate/executors.py) and the `vllm:` backend's Ray Data LLM engines
(models/vllm_ray_data.py), so both connect, name their actors' namespace and hand the driver's environment to
the workers in one way. `ray` is imported only when a run asks for it (the `[ray]` extra).
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

from tailorbench.errors import ConfigError

NAMESPACE = "tailorbench"
#: environment variables of the driver that its workers get too (cache location and policy, offline hub, vLLM's
#: CPU settings ...); API keys are not among them: the cluster's nodes hold their own
WORKER_ENV_PREFIXES = ("TAILORBENCH_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "VLLM_")


def import_ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'tailorbench[ray]'") from None
    return ray


def worker_env() -> dict[str, str]:
    """The driver's variables that travel to every worker (`WORKER_ENV_PREFIXES`)."""
    return {k: v for k, v in os.environ.items() if k.startswith(WORKER_ENV_PREFIXES)}


#: users of the connection `connect` made (the last `disconnect` ends it)
_users = 0


def connect(address: str | None) -> bool:
    """Connect to the cluster (start a local one for the run when neither an address nor $RAY_ADDRESS is
    given). True: the caller holds the connection this module made and calls `disconnect` when done (the last
    one ends it, so a judge finishing first does not cut off another's engines); False: the process had its own
    connection (a benchmark's, a notebook's), which stays."""
    global _users
    ray = import_ray()
    if ray.is_initialized():
        if _users:
            _users += 1
            return True
        return False
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False, "namespace": NAMESPACE}
    try:
        if address is None and not os.environ.get("RAY_ADDRESS"):
            ray.init(include_dashboard=False, **quiet)
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = address or os.environ.get("RAY_ADDRESS")
        raise ConfigError(f"--ray-address {where}: cannot connect to a Ray cluster ({exc})") from None
    _users = 1
    return True


def disconnect() -> None:
    """One holder of `connect`'s connection fewer; the last ends it (a local Ray stops with it)."""
    global _users
    if _users <= 0:
        return
    _users -= 1
    if _users == 0:
        import_ray().shutdown()


def cluster_resources() -> tuple[float, float]:
    """The connected cluster's CPUs and GPUs."""
    resources = import_ray().cluster_resources()
    return float(resources.get("CPU", 0.0)), float(resources.get("GPU", 0.0))


def fitting_workers(requested: int | None, num_cpus: float, num_gpus: float) -> int:
    """Workers (actors, engine replicas) of `num_cpus` and `num_gpus` each that a run gets on the connected
    cluster: `requested`, else as many as its CPUs (GPUs when `num_gpus` > 0) allow; more than the cluster has
    is a ConfigError naming what it has."""
    cpus, gpus = cluster_resources()
    if requested is None:
        fits = [math.floor(cpus / num_cpus + 1e-9) if num_cpus else None,
                math.floor(gpus / num_gpus + 1e-9) if num_gpus else None]
        bounded = [n for n in fits if n is not None]
        workers = min(bounded) if bounded else max(1, int(cpus))
    else:
        workers = requested
    if workers < 1 or workers * num_cpus > cpus + 1e-9 or workers * num_gpus > gpus + 1e-9:
        raise ConfigError(
            f"the ray executor asks for {max(workers, 1)} worker(s) of num_cpus={num_cpus:g}, "
            f"num_gpus={num_gpus:g} each, but the cluster has {cpus:g} CPUs and {gpus:g} GPUs: lower "
            "--executor-option workers, num_cpus or num_gpus (fractions are allowed), or add nodes")
    return workers
