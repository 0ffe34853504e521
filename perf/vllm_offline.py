"""vLLM offline (`llm:vllm:DIR`) vs the same model behind `vllm serve` (`llm:openai:NAME@URL`), in one run.

Both sides get distinct judge prompts of the same shape (the demo benchmark's cases in both orders, repeated
with numbered questions: no prompt twice, so neither side's prefix cache holds a whole prompt from an earlier
round), the same greedy parameters, the call cache off, and go through the one `Model` wrapper and the LLM
judge's `judge_stream` (how `tailor eval` drives a judge). Offline: one engine in this process, chunks of
`--chunk-size`. Served: vLLM's OpenAI-compatible server (`vllm serve`) started here
with the same engine options, the OpenAI-compatible backend at `--concurrency` calls in flight. Both stay up
and the rounds alternate (offline, served, offline, ...), so the shared machine's changing load falls on both
alike. Printed: calls/s of every round, each side's median and their ratio (offline / served); each side's
start (engine, or server ready) is reported apart and not timed.

`--ray-data` adds a third side: the same backend with its engine as one Ray Data LLM replica on a local Ray (what
`--executor ray` runs, models/vllm_ray_data.py). There every round is one dataset, and a dataset starts its
replica's engine, so that side's calls/s include an engine start per round: the price of one chunk.

Run it with the vLLM venv's python (scripts/ensure_vllm_venv.py builds it; vLLM spawns processes, hence the
`__main__` guard):

    VLLM_CPU_KVCACHE_SPACE=1 PYTHONPATH=src ~/.cache/tailorbench/vllm-venv/bin/python perf/vllm_offline.py \\
        --model ~/.cache/tailorbench/models/tiny-llama64-hf [--calls 512] [--rounds 3] [--verdict text|logprobs]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ENGINE = {"dtype": "float32", "max_model_len": 2048, "gpu_memory_utilization": 0.1, "enforce_eager": True}


def _inputs(n: int, offset: int = 0) -> list[Any]:
    """`n` distinct judge inputs: the demo's tasks, each repeat with a numbered question (identical calls in
    flight would be answered once by the wrapper's de-duplication, and a prompt seen in an earlier round would
    hit vLLM's prefix cache, on both sides); `offset` numbers a round's inputs apart from the others'."""
    from dataclasses import replace

    from tailorbench.datasets.loader import load_benchmark
    from tailorbench.evaluate.runner import plan
    from tailorbench.evaluate.settings import SettingOptions

    tasks = plan(load_benchmark("demo").cases, "persona", "both", 0, SettingOptions())
    out = []
    for k in range(offset, offset + n):
        item = tasks[k % len(tasks)].input
        out.append(replace(item, question=f"{item.question} (#{k})") if k >= len(tasks) else item)
    return out


async def _open(spec: str, options: dict[str, Any]) -> tuple[Any, float]:
    """The judge with its model started (engine or server connection): (judge, seconds to start)."""
    from tailorbench.judges.base import JudgeOptions, make_judge

    judge: Any = make_judge(spec, JudgeOptions(extra={**options, "cache_policy": "off"}))
    began = time.perf_counter()
    await judge.model.preflight()
    return judge, time.perf_counter() - began


async def _round(judge: Any, inputs: list[Any]) -> dict[str, Any]:
    """Every input through `judge_stream` (as `tailor eval` drives a judge): calls/s."""
    began = time.perf_counter()
    statuses: dict[str, int] = {}
    async for _, verdict in judge.judge_stream(inputs, asyncio.Event()):
        statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
    seconds = time.perf_counter() - began
    return {"seconds": round(seconds, 2), "calls_per_s": round(len(inputs) / seconds, 2), "statuses": statuses,
            "load": round(os.getloadavg()[0], 2)}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(model: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    # `vllm serve` itself: the `vllm` command looks up the distribution "vllm", which the CPU build
    # (distribution "vllm-cpu") is not, so the server's module is run directly
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
           "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port),
           "--dtype", str(ENGINE["dtype"]), "--max-model-len", str(ENGINE["max_model_len"]),
           "--gpu-memory-utilization", str(ENGINE["gpu_memory_utilization"]), "--enforce-eager",
           "--disable-log-stats"]
    return subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT)


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 600.0) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"vllm serve exited {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return time.perf_counter() - began
        except OSError:
            time.sleep(1.0)
    raise SystemExit(f"vllm serve not ready after {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a local model directory (the tiny head_dim-64 Llama)")
    parser.add_argument("--calls", type=int, default=512, help="calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side, alternating")
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--verdict", choices=("text", "logprobs"), default="text")
    parser.add_argument("--log", type=Path, default=Path("vllm_serve.log"))
    parser.add_argument("--ray-data", action="store_true", help="a third side: one Ray Data LLM replica")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    verdict = {"verdict": args.verdict}
    print(json.dumps({"start": time.strftime("%Y-%m-%d %H:%M:%S"), "calls": args.calls, "rounds": args.rounds,
                      "verdict": args.verdict, "load": os.getloadavg(), "cpus": os.cpu_count()}), flush=True)
    port = _free_port()
    proc = _serve(args.model, port, args.log)
    try:
        asyncio.run(_compare(args, verdict, port, proc))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _compare(args: argparse.Namespace, verdict: dict[str, str], port: int,
                   proc: subprocess.Popen[bytes]) -> None:
    """Both sides up at once (the tiny model fits twice), rounds alternating, so that the shared machine's
    changing load falls on both alike; the median round of each side and their ratio."""
    offline, offline_start = await _open(f"llm:vllm:{args.model}", {**ENGINE, **verdict,
                                                                     "chunk_size": args.chunk_size})
    ready_s = await asyncio.to_thread(_wait_ready, port, proc)
    served, _ = await _open(f"llm:openai:tiny@http://127.0.0.1:{port}/v1",
                            {**verdict, "concurrency": args.concurrency, "adaptive": "false"})
    print(json.dumps({"offline_start_s": round(offline_start, 1), "served_ready_s": round(ready_s, 1)}), flush=True)
    sides = [("offline", offline), ("served", served)]
    if args.ray_data:
        from tailorbench.models.vllm_ray_data import RayDataSettings

        on_ray, connect_s = await _open(f"llm:vllm:{args.model}", {
            **ENGINE, **verdict, "ray_data": RayDataSettings(replicas=1, num_cpus=1.0)})
        print(json.dumps({"ray_data_connect_s": round(connect_s, 1)}), flush=True)
        sides.append(("ray_data", on_ray))
    rates: dict[str, list[float]] = {side: [] for side, _ in sides}
    for k in range(args.rounds):
        for n, (side, judge) in enumerate(sides):
            row = await _round(judge, _inputs(args.calls, (len(sides) * k + n) * args.calls))
            if side == "ray_data":  # the dataset's time to its first row: the replica's engine start, mostly
                row["dataset"] = judge.model.describe()["engine_on"]["last_datasets"][-1]
            rates[side].append(row["calls_per_s"])
            print(json.dumps({"round": k + 1, "side": side, **row}), flush=True)
    for _, judge in sides:
        await judge.aclose()
    median = {side: statistics.median(values) for side, values in rates.items()}
    ratios = {"ratio_offline_to_served": round(median["offline"] / median["served"], 2)}
    if args.ray_data:
        ratios["ratio_ray_data_to_offline"] = round(median["ray_data"] / median["offline"], 3)
    print(json.dumps({"median_calls_per_s": median, "rounds": rates, **ratios, "load": os.getloadavg()}),
          flush=True)


if __name__ == "__main__":
    main()
