"""Throughput of the LLM judge against a 250 ms latency server: achieved requests/s as a ratio to the ideal
concurrency / latency, for fixed concurrency 16, 64, 256 and once with adaptive concurrency, plus a plain
`openai`-SDK loop with a semaphore on the same calls and Inspect AI's `eval()` through its OpenAI-compatible
provider (when `inspect-ai` is installed: the `[bench]` extra), measured in the same run.

    .venv/bin/python bench/llm_throughput.py [--requests 2000] [--delay 0.25]

Prints one JSON line per configuration. `server_cpu_share` is the latency server's CPU time over the wall time
of the configuration: near 1.0 means the server, not the client, was the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_stats(base: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{base}/stats", timeout=5) as resp:
        data: dict[str, float] = json.loads(resp.read())
        return data


@contextmanager
def latency_server(delay: float) -> Iterator[str]:
    """Start bench/latency_server.py on a free port with the given per-request delay, wait (up to 100 x 50 ms)
    until its /stats answers, yield its base URL, and terminate it on exit."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--delay", str(delay)], stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                server_stats(base)
                break
            except OSError:
                time.sleep(0.05)
        yield base
    finally:
        server.terminate()
        server.wait(10)


def inputs(n: int, tag: str = "") -> list[Any]:
    from tailorbench.schema import JudgeInput

    persona = "Demographics: 34, engineer, lives in Hangzhou. Preferences: hiking, tea, short answers. " * 6
    return [
        JudgeInput(case_id=f"c{i}", setting="persona", question=f"{tag}Question {i}: what should I do this weekend?",
                   answer_a="Go hiking in the hills near the West Lake, then a tea house." * 3,
                   answer_b="Stay at home and rest." * 3, context=persona)
        for i in range(n)
    ]


async def run_tailorbench(base: str, concurrency: int, adaptive: bool, n: int, cache: str) -> dict[str, Any]:
    from tailorbench.judges.base import JudgeOptions, make_judge

    options = {"concurrency": str(16 if adaptive else concurrency), "adaptive": str(adaptive).lower(),
               "max_concurrency": str(concurrency), "cache_path": cache}
    judge = make_judge(f"llm:openai:bench@{base}/v1", JudgeOptions(extra=options))
    items = inputs(n)
    await judge.prepare(items[:1])
    await judge.judge(items[:concurrency])  # warm the connections (distinct keys: not cached for the run)
    items = inputs(n, tag="run ")
    before = server_stats(base)
    cpu0, t0 = time.process_time(), time.perf_counter()
    verdicts = await judge.judge(items)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = server_stats(base)
    model = judge.describe()["model"]
    await judge.aclose()
    ok = sum(1 for v in verdicts if v.status == "ok")
    return {"harness": "tailorbench", "concurrency": concurrency, "adaptive": adaptive, "requests": n,
            "ok": ok, "wall_s": round(wall, 3), "requests_per_s": round(n / wall, 1),
            "ratio_to_ideal": round(n / wall / (concurrency / DELAY), 3),
            "client_cpu_ms_per_request": round(1000 * cpu / n, 3),
            "server_cpu_share": round((after["cpu_s"] - before["cpu_s"]) / wall, 3),
            "final_limit": model["concurrency"]["final"], "retries": model["stats"]["retries"],
            "cache": "read-write (fresh file)"}


async def run_openai_loop(base: str, concurrency: int, n: int) -> dict[str, Any]:
    import openai

    limits = openai.DefaultAsyncHttpxClient.__mro__[1]  # the SDK's httpx flavour
    httpx = sys.modules[limits.__module__.split(".")[0]]
    client = openai.AsyncOpenAI(
        base_url=f"{base}/v1", api_key="x", max_retries=0,
        http_client=httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency,
                                                          max_keepalive_connections=concurrency), timeout=60),
    )
    sem = asyncio.Semaphore(concurrency)
    items = inputs(n)

    async def one(i: int) -> str | None:
        item = items[i]
        async with sem:
            r = await client.chat.completions.create(
                model="bench", temperature=0, max_tokens=16,
                messages=[{"role": "user", "content": f"{item.context}\n{item.question}\nA: {item.answer_a}\n"
                                                      f"B: {item.answer_b}"}])
            return r.choices[0].message.content

    await asyncio.gather(*(one(i) for i in range(concurrency)))
    before = server_stats(base)
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = server_stats(base)
    await client.close()
    return {"harness": "openai-loop", "concurrency": concurrency, "adaptive": False, "requests": n,
            "wall_s": round(wall, 3), "requests_per_s": round(n / wall, 1),
            "ratio_to_ideal": round(n / wall / (concurrency / DELAY), 3),
            "client_cpu_ms_per_request": round(1000 * cpu / n, 3),
            "server_cpu_share": round((after["cpu_s"] - before["cpu_s"]) / wall, 3)}


def run_inspect(base: str, concurrency: int, n: int, log_dir: str) -> dict[str, Any]:
    """Inspect AI's `eval()` of a task with the same prompts, through its OpenAI-compatible provider
    (`openai-api/<service>/<model>`), `max_connections` = concurrency; wall time of the whole eval."""
    try:
        from inspect_ai import Task
        from inspect_ai import eval as inspect_eval
        from inspect_ai.dataset import Sample
        from inspect_ai.solver import generate
    except ImportError:
        return {"harness": "inspect", "concurrency": concurrency,
                "skipped": "inspect-ai not installed: pip install -c constraints.txt -e '.[bench]'"}
    os.environ["BENCH_API_KEY"] = "x"
    os.environ["BENCH_BASE_URL"] = f"{base}/v1"
    items = inputs(n, tag=f"inspect {concurrency} ")
    task = Task(dataset=[Sample(input=f"{i.context}\n{i.question}\nA: {i.answer_a}\nB: {i.answer_b}", target="A")
                         for i in items], solver=generate())
    before = server_stats(base)
    cpu0, t0 = time.process_time(), time.perf_counter()
    logs = inspect_eval(task, model="openai-api/bench/bench", max_connections=concurrency, max_tokens=16,
                        temperature=0, log_dir=log_dir, display="none", max_samples=concurrency, fail_on_error=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = server_stats(base)
    samples = logs[0].samples or []
    ok = sum(1 for sample in samples if not sample.error)
    return {"harness": "inspect", "concurrency": concurrency, "adaptive": False, "requests": n, "ok": ok,
            "wall_s": round(wall, 3), "requests_per_s": round(n / wall, 1),
            "ratio_to_ideal": round(n / wall / (concurrency / DELAY), 3),
            "client_cpu_ms_per_request": round(1000 * cpu / n, 3),
            "server_cpu_share": round((after["cpu_s"] - before["cpu_s"]) / wall, 3),
            "server_requests": int(after["requests"] - before["requests"])}


DELAY = 0.25


def main() -> None:
    global DELAY
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[16, 64, 256])
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--skip-inspect", action="store_true")
    args = parser.parse_args()
    DELAY = args.delay
    with latency_server(args.delay) as base, tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            cache = os.path.join(tmp, f"calls-{c}.sqlite")
            print(json.dumps(asyncio.run(run_tailorbench(base, c, False, args.requests, cache))), flush=True)
        cap = max(args.concurrency)
        cache = os.path.join(tmp, "calls-adaptive.sqlite")
        print(json.dumps(asyncio.run(run_tailorbench(base, cap, True, args.requests, cache))), flush=True)
        if not args.skip_baseline:
            for c in args.concurrency:
                print(json.dumps(asyncio.run(run_openai_loop(base, c, args.requests))), flush=True)
        if not args.skip_inspect:
            for c in args.concurrency:
                print(json.dumps(run_inspect(base, c, args.requests, os.path.join(tmp, f"inspect-{c}"))),
                      flush=True)


if __name__ == "__main__":
    main()
