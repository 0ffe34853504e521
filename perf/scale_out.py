"""The ray executor's cost and scaling against the 250 ms latency server of perf/llm_throughput.py (its harness:
`measure`, the server, the key check), every configuration through the judge loop `tailor eval` runs
(`evaluate/judging.judge_pairs`: verdicts appended to a predictions file as they land) with the `llm` judge on
the `lean` transport:

* overhead: the same total concurrency C (default 64) in one process (`one-process`, the judge streamed as
  `tailor eval` streams an API judge) and through the ray executor with 1 and 2 workers of C and C/2 calls each
  (`ray-1x64`, `ray-2x32`): the throughput ratio ray / one process (goal >= 0.85);
* scaling: 1, 2 and 4 workers at a fixed per-worker concurrency (default 32): throughput as a ratio to the ideal
  workers x concurrency / latency, and to 1 worker's throughput times the workers, with the CPU shares of the
  driver (`client_cpu_share`), the workers (`workers_cpu_share`, from /proc of their processes), the server
  and the whole machine (`machine_busy_share`: what bounds it on a 2-core machine).

Ray runs as a local cluster started for each configuration (`ray.init`, as `--executor ray` without an address);
workers reserve min(1, cores / workers) CPUs each. Worker start-up (about 5-10 s: Python, tailorbench, the SDK)
and a warm-up of C calls are not timed.

    .venv/bin/python perf/scale_out.py [--concurrency 64] [--per-worker 32] [--workers 1 2 4] [--runs 3]

Prints one JSON line per configuration (the fields of perf/llm_throughput.py's lines, plus the workers'), then a
summary line with the goal checks; exits non-zero when a call failed or the server refused one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_throughput as lt
from latency_server import raise_fd_limit

OVERHEAD_GOAL = 0.85


def _cpu_ticks(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _row(task: Any, verdict: Any, spec: str) -> dict[str, Any]:
    return {"case_id": task.input.case_id, "judge": spec, "choice": verdict.choice, "status": verdict.status,
            "latency_s": verdict.latency_s, "cached": verdict.cached}


class LoopHarness(lt.Harness):
    """`judge_pairs` over one local judge (`workers` None) or over the ray executor's pool of workers, each with
    `per_worker` calls in flight (all `concurrency` of them in one process)."""

    def __init__(self, workers: int | None, per_worker: int | None = None) -> None:
        self.workers = workers
        self.per_worker = per_worker
        self.errors = []
        self.judge: Any = None
        self.name = "one-process"
        self.worker_cpu = 0.0
        self.wall = 0.0
        self.count = 0

    async def open(self, base: str, concurrency: int, tmp: str) -> None:
        from tailorbench.evaluate.executors import RaySettings, make_ray_judge
        from tailorbench.judges.base import JudgeOptions, make_judge

        each = concurrency if self.workers is None else (self.per_worker or concurrency // self.workers)
        if self.workers is not None:
            self.name = f"ray-{self.workers}x{each}"
        cache = os.path.join(tmp, f"calls-{self.name}-{secrets.token_hex(4)}.sqlite")  # a fresh file each
        options = JudgeOptions(extra={"concurrency": str(each), "adaptive": "false", "max_concurrency": str(each),
                                      "cache_path": cache, "api_key_env": lt.KEY_ENV})
        self.tmp = Path(tmp)
        spec = f"llm:openai:bench@{base}/v1"
        if self.workers is None:
            self.judge = make_judge(spec, options)
            await self.judge.prepare(lt.inputs(1, tag="warm "))  # preflight: GET /models with the key
        else:
            cores = os.cpu_count() or 1
            settings = RaySettings(workers=self.workers, num_cpus=min(1.0, cores / self.workers))
            self.judge = make_ray_judge(spec, options, settings)
        await self.batch(lt.inputs(concurrency, tag="warm "))
        self.worker_cpu = self.wall = 0.0

    async def batch(self, items: list[Any]) -> int:
        from tailorbench.evaluate.judging import judge_pairs

        was_enabled = gc.isenabled()
        gc.disable()  # as run_eval judges
        pids = list(getattr(self.judge, "worker_pids", []))
        cpu0, t0 = _cpu_ticks(pids), time.perf_counter()
        try:
            if self.workers is not None:
                await self.judge.prepare(items)  # the pool sizes its batches by the run, as the runner has it
            self.count += 1
            rows = await judge_pairs(self.judge, [SimpleNamespace(input=i) for i in items], _row,
                                     self.tmp / f"{self.name}-{self.count}.jsonl")
        finally:
            self.wall += time.perf_counter() - t0
            self.worker_cpu += _cpu_ticks(pids) - cpu0
            if was_enabled:
                gc.enable()
        bad = [r for r in rows if r["status"] != "ok"]
        self.errors.extend(f"{r['status']}" for r in bad[:3])
        return len(rows) - len(bad)

    async def close(self) -> None:
        await self.judge.aclose()

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workers": self.workers or 0}
        if self.workers is not None:
            executor = self.judge.describe()["executor"]
            out.update(per_worker_concurrency=int(self.judge.describe()["model"]["concurrency"]["start"]),
                       workers_cpu_share=round(self.worker_cpu / self.wall, 3) if self.wall else None,
                       batch_size=executor["batch_size"], depth=executor["depth"],
                       num_cpus_each=executor["num_cpus"])
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=64, help="total concurrency of the overhead comparison")
    parser.add_argument("--per-worker", type=int, default=32, help="per-worker concurrency of the scaling series")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.25)
    args = parser.parse_args()
    lt.DELAY = args.delay
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    fds = raise_fd_limit()
    key = "sk-bench-" + secrets.token_urlsafe(24)
    os.environ[lt.KEY_ENV] = key  # the local Ray cluster started below, and so its workers, inherit it
    import ray

    print(json.dumps({"start": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg": lt.loadavg(), "cpus": os.cpu_count(),
                      "fds": fds, "ray": ray.__version__, "python": sys.version.split()[0], "delay_s": args.delay,
                      "runs": args.runs, "calibration_ms": lt.calibration_ms(),
                      "server": "perf/latency_server.py --require-key"}), flush=True)
    c = args.concurrency
    lines: dict[str, dict[str, Any]] = {}
    with lt.latency_server(args.delay, key) as base, tempfile.TemporaryDirectory() as tmp:
        lt.check_server_refuses(base, key)
        plan: list[tuple[str, LoopHarness, int]] = [
            ("overhead", LoopHarness(None), c), ("overhead", LoopHarness(1, c), c),
            ("overhead", LoopHarness(2, c // 2), c)]
        plan += [("scaling", LoopHarness(w, args.per_worker), w * args.per_worker) for w in args.workers]
        for series, harness, total in plan:
            line = asyncio.run(lt.measure(harness, base, total, 20 * total, args.runs, tmp))
            line = {"series": series, **line, "loadavg": lt.loadavg(), "calibration_ms": lt.calibration_ms()}
            lines[f"{series}:{line['harness']}"] = line
            print(json.dumps(line), flush=True)
    one = lines.get("overhead:one-process", {}).get("requests_per_s")
    goals: dict[str, Any] = {}
    for name in (f"ray-1x{c}", f"ray-2x{c // 2}"):
        rate = lines.get(f"overhead:{name}", {}).get("requests_per_s")
        value = round(rate / one, 3) if rate and one else None
        goals[f"{name} / one-process >= {OVERHEAD_GOAL}"] = {"value": value,
                                                             "met": None if value is None else value >= OVERHEAD_GOAL}
    single = lines.get(f"scaling:ray-1x{args.per_worker}", {}).get("requests_per_s")
    for w in args.workers:
        line = lines.get(f"scaling:ray-{w}x{args.per_worker}", {})
        rate = line.get("requests_per_s")
        goals[f"scaling {w} workers"] = {
            "ratio_to_ideal": line.get("ratio_to_ideal"),
            "vs_1_worker": round(rate / (w * single), 3) if rate and single else None,
            "machine_busy_share": line.get("machine_busy_share"), "workers_cpu_share": line.get("workers_cpu_share"),
            "client_cpu_share": line.get("client_cpu_share"), "server_cpu_share": line.get("server_cpu_share")}
    goals["conformance (refused == 0, every call valid)"] = {"value": len(lt.FAILURES), "met": not lt.FAILURES}
    print(json.dumps({"summary": {"end": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg": lt.loadavg(),
                                  "goals": goals, "failures": lt.FAILURES}}), flush=True)
    if lt.FAILURES:
        lt.fail(f"{len(lt.FAILURES)} configuration(s) failed (see above); the figures are not valid")
        sys.exit(1)


if __name__ == "__main__":
    main()
