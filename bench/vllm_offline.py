"""vLLM offline (`llm:vllm:DIR`) vs the same model behind `vllm serve` (`llm:openai:NAME@URL`), in one run.

Both sides get the same judge prompts (the demo benchmark's cases in both orders, repeated to `--calls`), the
same greedy parameters, the call cache off, and go through the one `Model` wrapper and the LLM judge's
`judge_stream` (how `tailor eval` drives a judge). Offline: one engine in this process, chunks of
`--chunk-size`. Served: `vllm serve` started here with the same engine options, the OpenAI-compatible backend
at `--concurrency` calls in flight. Printed: calls/s of each and their ratio (offline / served); the engine
start of each is reported apart and not timed in the calls/s.

Run it with the vLLM venv's python (scripts/ensure_vllm_venv.py builds it; vLLM spawns processes, hence the
`__main__` guard):

    VLLM_CPU_KVCACHE_SPACE=1 PYTHONPATH=src ~/.cache/tailorbench/vllm-venv/bin/python bench/vllm_offline.py \\
        --model ~/.cache/tailorbench/models/tiny-llama64-hf [--calls 512] [--verdict text|logprobs]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ENGINE = {"dtype": "float32", "max_model_len": 2048, "gpu_memory_utilization": 0.1, "enforce_eager": True}


def _inputs(n: int) -> list[Any]:
    from tailorbench.datasets.loader import load_benchmark
    from tailorbench.evaluate.runner import plan
    from tailorbench.evaluate.settings import SettingOptions

    tasks = plan(load_benchmark("demo").cases, "persona", "both", 0, SettingOptions())
    return [tasks[k % len(tasks)].input for k in range(n)]


async def _judge_all(spec: str, options: dict[str, Any], inputs: list[Any]) -> dict[str, Any]:
    """Start the model (untimed), then every input through `judge_stream`; calls/s of that part."""
    from tailorbench.judges.base import JudgeOptions, make_judge

    judge: Any = make_judge(spec, JudgeOptions(extra={**options, "cache_policy": "off"}))
    began = time.perf_counter()
    await judge.model.preflight()
    start_s = time.perf_counter() - began
    began = time.perf_counter()
    statuses: dict[str, int] = {}
    async for _, verdict in judge.judge_stream(inputs, asyncio.Event()):
        statuses[verdict.status] = statuses.get(verdict.status, 0) + 1
    seconds = time.perf_counter() - began
    await judge.aclose()
    return {"calls": len(inputs), "seconds": round(seconds, 2), "calls_per_s": round(len(inputs) / seconds, 2),
            "start_s": round(start_s, 1), "statuses": statuses}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(model: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    vllm = Path(sys.executable).parent / "vllm"
    cmd = [str(vllm), "serve", model, "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port),
           "--dtype", ENGINE["dtype"], "--max-model-len", str(ENGINE["max_model_len"]),
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
    parser.add_argument("--calls", type=int, default=512)
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--verdict", choices=("text", "logprobs"), default="text")
    parser.add_argument("--log", type=Path, default=Path("vllm_serve.log"))
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    inputs = _inputs(args.calls)
    verdict = {"verdict": args.verdict}
    print(json.dumps({"start": time.strftime("%Y-%m-%d %H:%M:%S"), "calls": args.calls, "verdict": args.verdict,
                      "load": os.getloadavg(), "cpus": os.cpu_count()}), flush=True)

    offline = asyncio.run(_judge_all(f"llm:vllm:{args.model}", {**ENGINE, **verdict,
                                                                 "chunk_size": args.chunk_size}, inputs))
    print(json.dumps({"side": "offline", "chunk_size": args.chunk_size, **offline, "load": os.getloadavg()}),
          flush=True)

    port = _free_port()
    proc = _serve(args.model, port, args.log)
    try:
        ready_s = _wait_ready(port, proc)
        served = asyncio.run(_judge_all(f"llm:openai:tiny@http://127.0.0.1:{port}/v1",
                                        {**verdict, "concurrency": args.concurrency, "adaptive": "false"}, inputs))
        served["start_s"] = round(ready_s, 1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print(json.dumps({"side": "served", "concurrency": args.concurrency, **served, "load": os.getloadavg()}),
          flush=True)
    ratio = offline["calls_per_s"] / served["calls_per_s"]
    print(json.dumps({"ratio_offline_to_served": round(ratio, 2)}), flush=True)


if __name__ == "__main__":
    main()
