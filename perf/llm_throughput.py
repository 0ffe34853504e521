"""Throughput of the LLM judge against a 250 ms latency server that checks an API key: achieved requests/s as a
ratio to the ideal concurrency / latency, at concurrency 64, 256 and 1024 by default.

Configurations, all in the same run and against the same server (`perf/latency_server.py --require-key`):

* `tailorbench`        the `llm` judge on the default `lean` transport (the fast path), key from $BENCH_API_KEY
                       through the judge option `api_key_env`, driven through `judge_stream` as `tailor eval`
                       drives an API judge (with the cyclic garbage collector paused, as `run_eval` does; the
                       baselines run as their users' loops would, with it on);
* `tailorbench-httpx`  the same judge with `transport=httpx` (every call through the SDK's own client);
* `tailorbench-gather` (only when asked for) the fast path through `judge.judge()`, one gather over every item;
* `sdk-httpx`          a plain `openai.AsyncOpenAI` loop with a semaphore on its default client
                       (`openai.DefaultAsyncHttpxClient`, limits sized to the concurrency), key through `api_key=`;
* `sdk-aiohttp`        the same loop on the SDK's official aiohttp client (`openai.DefaultAioHttpClient`);
* `inspect`            Inspect AI's `eval()` through its OpenAI-compatible provider, when `inspect-ai` is installed
                       (the `[perf]` extra), otherwise a `skipped` line.

Each point makes max(20 x concurrency, --min-requests) calls per run, 3 runs (after a warm-up of `concurrency`
calls that is not timed; the baselines make 3 runs up to concurrency 256 and 1 above, see --baseline-runs); a
line reports the median ratio, the ratios of the runs, the median client CPU per call and the shares of CPU the
client and the server took of the wall time. A configuration fails, loudly and with a
non-zero exit, when the server refused any of its requests (an authentication that silently went wrong) or any
call did not come back with a valid verdict.

    .venv/bin/python perf/llm_throughput.py [--concurrency 64 256 1024] [--min-requests 0] [--runs 3]

Prints one JSON line per configuration and point, then a summary line with the goal checks.
`server_cpu_share` is the latency server's CPU time over the wall time (near 1.0: the server was the
bottleneck), `client_cpu_share` the same for the client (near 1.0: its one event-loop thread was the
bottleneck); `cores_busy_share` is client plus server CPU over wall time and the number of cores, and
`machine_busy_share` the busy share of all cores from /proc/stat (other processes included).
`calibration_ms` (best of 5 of `sum(range(10**6))`) tells how fast the machine's Python was at the time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency_server import raise_fd_limit

HERE = Path(__file__).resolve().parent
KEY_ENV = "BENCH_API_KEY"
DELAY = 0.25
#: goals: ratio to ideal per concurrency, and client CPU per call of the fast path
RATIO_GOALS = {64: 0.95, 256: 0.9, 1024: 0.8}
CPU_GOAL_MS = 0.3
FAILURES: list[str] = []
DEFAULT_HARNESSES = ["tailorbench", "tailorbench-httpx", "sdk-httpx", "sdk-aiohttp", "inspect"]


def fail(message: str) -> None:
    FAILURES.append(message)
    banner = "!" * 100
    print(f"{banner}\nBENCH FAILED: {message}\n{banner}", file=sys.stderr, flush=True)


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def calibration_ms() -> float:
    """Best of 5 of `sum(range(10**6))` in ms: how fast this machine's Python is at the moment (a shared VM's
    cores slow down when their neighbours are busy)."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        sum(range(10**6))
        best = min(best, time.perf_counter() - t0)
    return round(1000 * best, 1)


def machine_ticks() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine from /proc/stat, None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_stats(base: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{base}/stats", timeout=5) as resp:
        data: dict[str, float] = json.loads(resp.read())
        return data


@contextmanager
def latency_server(delay: float, key: str) -> Iterator[str]:
    """Start perf/latency_server.py on a free port with the given per-request delay and required key, wait (up
    to 100 x 50 ms) until its /stats answers, yield its base URL, and terminate it on exit."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "latency_server.py"), "--port", str(port),
                               "--delay", str(delay), "--require-key", key], stdout=subprocess.DEVNULL)
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


def check_server_refuses(base: str, key: str) -> None:
    """The server must answer 401 to a request without the key and with a wrong one, and 200 with it: else the
    bench would not test authentication at all."""
    def status(headers: dict[str, str]) -> int:
        request = urllib.request.Request(f"{base}/v1/models", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read())
            assert set(body["error"]) >= {"message", "type", "code"}, body
            return int(exc.code)

    before = server_stats(base)["refused"]
    seen = (status({}), status({"Authorization": "Bearer wrong"}), status({"Authorization": f"Bearer {key}"}))
    refused = server_stats(base)["refused"] - before
    if seen != (401, 401, 200) or refused != 2:
        fail(f"the latency server does not check the key: statuses {seen}, refused {refused} (want 401, 401, 200; 2)")
        sys.exit(1)


def inputs(n: int, tag: str = "") -> list[Any]:
    from tailorbench.schema import JudgeInput

    persona = "Demographics: 34, engineer, lives in Hangzhou. Preferences: hiking, tea, short answers. " * 6
    return [
        JudgeInput(case_id=f"c{i}", setting="persona", question=f"{tag}Question {i}: what should I do this weekend?",
                   answer_a="Go hiking in the hills near the West Lake, then a tea house." * 3,
                   answer_b="Stay at home and rest." * 3, context=persona)
        for i in range(n)
    ]


def prompt(item: Any) -> str:
    return f"{item.context}\n{item.question}\nA: {item.answer_a}\nB: {item.answer_b}"


class Harness:
    """One configuration: `open` builds the client and sends the untimed warm-up, `batch` makes the timed calls
    and returns how many came back valid, `close` releases the client."""

    name = ""
    errors: list[str]

    async def open(self, base: str, concurrency: int, tmp: str) -> None:
        raise NotImplementedError

    async def batch(self, items: list[Any]) -> int:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def extra(self) -> dict[str, Any]:
        return {}


class TailorbenchHarness(Harness):
    def __init__(self, transport: str, api: str = "stream") -> None:
        self.transport = transport
        self.api = api
        self.name = "tailorbench" if transport == "lean" else f"tailorbench-{transport}"
        if api != "stream":
            self.name += f"-{api}"
        self.errors = []
        self.judge: Any = None

    async def open(self, base: str, concurrency: int, tmp: str) -> None:
        from tailorbench.judges.base import JudgeOptions, make_judge

        options = {"concurrency": str(concurrency), "adaptive": "false", "max_concurrency": str(concurrency),
                   "cache_path": os.path.join(tmp, f"calls-{self.name}-{concurrency}.sqlite"),
                   "api_key_env": KEY_ENV, "transport": self.transport}
        self.judge = make_judge(f"llm:openai:bench@{base}/v1", JudgeOptions(extra=options))
        warm = inputs(concurrency, tag="warm ")
        await self.judge.prepare(warm[:1])  # preflight: GET /models with the key
        await self.batch(warm)
        model = self.judge.describe()["model"]
        if model["transport"] != self.transport:
            fail(f"{self.name}: asked for transport {self.transport}, got {model['transport']} (a proxy variable?)")

    async def batch(self, items: list[Any]) -> int:
        # `tailor eval` judges with the cyclic garbage collector paused (evaluate/runner.run_eval): so here
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return await self._batch(items)
        finally:
            if was_enabled:
                gc.enable()

    async def _batch(self, items: list[Any]) -> int:
        from tailorbench.errors import CredentialsError

        try:
            if self.api == "stream":  # what `tailor eval` runs for an API judge (evaluate/runner.py)
                verdicts = [verdict async for _, verdict in self.judge.judge_stream(items, asyncio.Event())]
            else:  # one gather over every item
                verdicts = await self.judge.judge(items)
        except CredentialsError as exc:
            self.errors.append(f"CredentialsError: {exc}")
            return 0
        bad = [v for v in verdicts if v.status != "ok"]
        self.errors.extend(f"{v.status}: {getattr(v, 'error', '')}" for v in bad[:3])
        return len(verdicts) - len(bad)

    async def close(self) -> None:
        await self.judge.aclose()

    def extra(self) -> dict[str, Any]:
        model = self.judge.describe()["model"]
        return {"api": f"judge.{'judge_stream' if self.api == 'stream' else 'judge'}",
                "transport": model["transport"], "api_key_env": model["api_key_env"],
                "final_limit": model["concurrency"]["final"], "retries": model["stats"]["retries"],
                "cache": "read-write (fresh file)"}


class SdkHarness(Harness):
    """`openai.AsyncOpenAI` with a semaphore, on the SDK's default httpx client or its aiohttp client."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = f"sdk-{kind}"
        self.errors = []
        self.client: Any = None
        self.sem: asyncio.Semaphore | None = None

    async def open(self, base: str, concurrency: int, tmp: str) -> None:
        import openai

        from tailorbench.models.http_transport import httpx_module

        httpx = httpx_module()
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        http = (openai.DefaultAsyncHttpxClient(limits=limits) if self.kind == "httpx"
                else openai.DefaultAioHttpClient(limits=limits))
        # the judge's default timeout (120 s, connect included) rather than the SDK's 5 s connect timeout, which
        # a saturated event loop misses while it opens a thousand connections
        self.client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key=os.environ[KEY_ENV], max_retries=0,
                                         timeout=120.0, http_client=http)
        self.sem = asyncio.Semaphore(concurrency)
        await self.batch(inputs(concurrency, tag="warm "))

    async def _one(self, item: Any) -> str | None:
        assert self.sem is not None
        async with self.sem:
            r = await self.client.chat.completions.create(
                model="bench", temperature=0, max_tokens=16, messages=[{"role": "user", "content": prompt(item)}])
            content: str | None = r.choices[0].message.content
            return content

    async def batch(self, items: list[Any]) -> int:
        results = await asyncio.gather(*(self._one(item) for item in items), return_exceptions=True)
        bad = [r for r in results if r != "A"]
        self.errors.extend(f"{type(r).__name__}: {r}"[:300] for r in bad[:3])
        return len(results) - len(bad)

    async def close(self) -> None:
        await self.client.close()

    def extra(self) -> dict[str, Any]:
        import openai

        return {"openai": openai.__version__}


async def measure(harness: Harness, base: str, concurrency: int, n: int, runs: int, tmp: str) -> dict[str, Any]:
    """Warm-up, then `runs` timed batches of `n` calls; one JSON-able line with medians and per-run values."""
    start = server_stats(base)
    per_run: list[dict[str, float]] = []
    ok = 0
    try:
        await harness.open(base, concurrency, tmp)
        for r in range(runs):
            items = inputs(n, tag=f"run {r} ")
            before, ticks0 = server_stats(base), machine_ticks()
            sys0, cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime, time.process_time(), time.perf_counter()
            good = await harness.batch(items)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            kernel = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
            after, ticks1 = server_stats(base), machine_ticks()
            ok += good
            server_cpu = after["cpu_s"] - before["cpu_s"]
            run = {"wall_s": wall, "ratio": n / wall / (concurrency / DELAY), "cpu_ms": 1000 * cpu / n,
                   "sys_ms": 1000 * kernel / n,
                   "client_share": cpu / wall, "server_share": server_cpu / wall,
                   "cores_busy": (cpu + server_cpu) / wall / (os.cpu_count() or 1),
                   "server_requests": after["requests"] - before["requests"]}
            if ticks0 and ticks1 and ticks1[1] > ticks0[1]:
                run["machine_busy"] = (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1])
            per_run.append(run)
        extra = harness.extra()
        await harness.close()
    except Exception as exc:  # a configuration that breaks is a failed bench, not a crash of the others
        harness.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        extra = {}
    end = server_stats(base)
    refused = int(end["refused"] - start["refused"])

    def med(key: str, digits: int = 3) -> float | None:
        values = [run[key] for run in per_run if key in run]
        return round(statistics.median(values), digits) if values else None

    line: dict[str, Any] = {
        "harness": harness.name, "concurrency": concurrency, "requests": n, "runs": len(per_run),
        "ratio_to_ideal": med("ratio"), "ratios": [round(run["ratio"], 3) for run in per_run],
        "requests_per_s": round(n / statistics.median(run["wall_s"] for run in per_run), 1) if per_run else None,
        "client_cpu_ms_per_request": med("cpu_ms"), "client_cpu_ms": [round(run["cpu_ms"], 3) for run in per_run],
        "client_sys_ms_per_request": med("sys_ms"),
        "client_cpu_share": med("client_share"), "server_cpu_share": med("server_share"),
        "cores_busy_share": med("cores_busy"), "machine_busy_share": med("machine_busy"),
        "ok": ok, "of": n * runs, "refused": refused,
        "server_chat_requests": int(sum(run["server_requests"] for run in per_run)),
        "loadavg": loadavg(), **extra,
    }
    if refused:
        fail(f"{harness.name} c={concurrency}: the server refused {refused} requests (the key did not go through)")
    served = sum(run["server_requests"] for run in per_run)
    if per_run and served != n * len(per_run):
        fail(f"{harness.name} c={concurrency}: the server saw {served} chat requests for {n * len(per_run)} calls")
    if ok != n * runs or len(per_run) != runs:
        fail(f"{harness.name} c={concurrency}: {ok} of {n * runs} calls valid; first errors: {harness.errors[:3]}")
    if harness.errors:
        line["errors"] = harness.errors[:3]
    return line


def run_inspect(base: str, concurrency: int, n: int, log_dir: str) -> dict[str, Any]:
    """Inspect AI's `eval()` of a task with the same prompts, through its OpenAI-compatible provider
    (`openai-api/<service>/<model>`: key from $BENCH_API_KEY, URL from $BENCH_BASE_URL), `max_connections` =
    concurrency; wall time of the whole eval, one run."""
    try:
        from inspect_ai import Task
        from inspect_ai import eval as inspect_eval
        from inspect_ai.dataset import Sample
        from inspect_ai.solver import generate
    except ImportError:
        return {"harness": "inspect", "concurrency": concurrency,
                "skipped": "inspect-ai not installed: pip install -c constraints.txt -e '.[perf]'"}
    os.environ["BENCH_BASE_URL"] = f"{base}/v1"
    items = inputs(n, tag=f"inspect {concurrency} ")
    task = Task(dataset=[Sample(input=prompt(i), target="A") for i in items], solver=generate())
    before = server_stats(base)
    cpu0, t0 = time.process_time(), time.perf_counter()
    logs = inspect_eval(task, model="openai-api/bench/bench", max_connections=concurrency, max_tokens=16,
                        temperature=0, log_dir=log_dir, display="none", max_samples=concurrency, fail_on_error=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    after = server_stats(base)
    samples = logs[0].samples or []
    ok = sum(1 for sample in samples if not sample.error)
    refused = int(after["refused"] - before["refused"])
    if refused or ok != n:
        fail(f"inspect c={concurrency}: {ok} of {n} samples valid, {refused} requests refused")
    return {"harness": "inspect", "concurrency": concurrency, "requests": n, "runs": 1, "ok": ok, "of": n,
            "refused": refused, "wall_s": round(wall, 3), "requests_per_s": round(n / wall, 1),
            "ratio_to_ideal": round(n / wall / (concurrency / DELAY), 3),
            "client_cpu_ms_per_request": round(1000 * cpu / n, 3),
            "server_cpu_share": round((after["cpu_s"] - before["cpu_s"]) / wall, 3),
            "server_chat_requests": int(after["requests"] - before["requests"]), "loadavg": loadavg()}


def goal_checks(lines: list[dict[str, Any]]) -> dict[str, Any]:
    fast = {line["concurrency"]: line for line in lines if line.get("harness") == "tailorbench"}
    goals: dict[str, Any] = {}
    for c, goal in RATIO_GOALS.items():
        value = fast[c]["ratio_to_ideal"] if c in fast else None
        goals[f"ratio_c{c}>={goal}"] = {"value": value, "met": None if value is None else value >= goal}
    cpu = [line["client_cpu_ms_per_request"] for line in fast.values() if line["client_cpu_ms_per_request"]]
    worst = max(cpu) if cpu else None
    goals[f"client_cpu_ms<={CPU_GOAL_MS}"] = {"value": worst, "met": None if worst is None else worst <= CPU_GOAL_MS}
    goals["conformance (refused == 0, every call valid)"] = {"value": len(FAILURES), "met": not FAILURES}
    for c, goal in RATIO_GOALS.items():
        line = fast.get(c)
        if line and line["ratio_to_ideal"] is not None and line["ratio_to_ideal"] < goal:
            # what held it back: the client's one thread (share near 1), the server, or the machine's cores
            goals[f"ratio_c{c}>={goal}"]["cpu"] = {
                key: line[key] for key in ("client_cpu_ms_per_request", "client_cpu_share", "server_cpu_share",
                                           "cores_busy_share", "machine_busy_share")}
    return goals


def main() -> None:
    global DELAY
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--min-requests", type=int, default=0, help="calls per run: max(20 x concurrency, this)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per point of the fast path")
    parser.add_argument("--baseline-runs", type=int, default=None,
                        help="timed runs per point of the baselines (default: --runs up to concurrency 256, 1 above: "
                             "the SDK's httpx client needs about 15-20 ms of CPU per call at 1024)")
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--harness", nargs="+", default=DEFAULT_HARNESSES,
                        choices=[*DEFAULT_HARNESSES, "tailorbench-gather"])
    args = parser.parse_args()
    DELAY = args.delay
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated bench still stops its server
    fds = raise_fd_limit()
    key = "sk-bench-" + secrets.token_urlsafe(24)
    os.environ[KEY_ENV] = key  # tailorbench reads it through api_key_env, Inspect through its provider
    import openai

    try:
        import aiohttp
        aiohttp_version = aiohttp.__version__
    except ImportError:
        aiohttp_version = None
    print(json.dumps({"start": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg": loadavg(), "cpus": os.cpu_count(),
                      "fds": fds, "openai": openai.__version__, "aiohttp": aiohttp_version,
                      "python": sys.version.split()[0], "delay_s": DELAY, "runs": args.runs,
                      "calibration_ms": calibration_ms(),
                      "server": "perf/latency_server.py --require-key"}), flush=True)
    factories: dict[str, Callable[[], Harness]] = {
        "tailorbench": lambda: TailorbenchHarness("lean"),
        "tailorbench-httpx": lambda: TailorbenchHarness("httpx"),
        "sdk-httpx": lambda: SdkHarness("httpx"),
        "sdk-aiohttp": lambda: SdkHarness("aiohttp"),
        "tailorbench-gather": lambda: TailorbenchHarness("lean", api="gather"),
    }
    lines: list[dict[str, Any]] = []
    with latency_server(args.delay, key) as base, tempfile.TemporaryDirectory() as tmp:
        check_server_refuses(base, key)
        for c in args.concurrency:
            n = max(20 * c, args.min_requests)
            print(json.dumps({"point": c, "requests_per_run": n, "loadavg": loadavg(),
                              "calibration_ms": calibration_ms()}), flush=True)
            for name in args.harness:
                if name == "inspect":
                    line = run_inspect(base, c, n, os.path.join(tmp, f"inspect-{c}"))
                elif name == "sdk-aiohttp" and aiohttp_version is None:
                    line = {"harness": name, "concurrency": c, "skipped": "aiohttp not installed (the [dev] extra)"}
                else:
                    runs = args.runs
                    if name not in ("tailorbench", "tailorbench-gather"):
                        runs = args.baseline_runs or (args.runs if c <= 256 else 1)
                    line = asyncio.run(measure(factories[name](), base, c, n, runs, tmp))
                lines.append(line)
                print(json.dumps(line), flush=True)
    goals = goal_checks(lines)
    print(json.dumps({"summary": {"end": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg": loadavg(),
                                  "goals": goals, "failures": FAILURES}}), flush=True)
    if FAILURES:
        fail(f"{len(FAILURES)} configuration(s) failed conformance (see above); the figures are not valid")
        sys.exit(1)


if __name__ == "__main__":
    main()
