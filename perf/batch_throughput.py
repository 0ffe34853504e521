"""Batch mode at PersonaFeedback size against the conformance test server (tests/helpers/batch_server.py, in a
process of its own): the same cases judged synchronously and in batch mode, and a batch run killed (-9) while
its batches run, then resumed.

The cases are the development data's General split (`../shared/data/personafeedback-general-dev`, 2,287 real
cases) repeated to `--cases` (8,298 by default: the size of PersonaFeedback, 16,596 calls with both orders),
each copy's question tagged so that every call is a distinct request. Runs, all `tailor eval` processes:

* `sync`    `llm:openai:gpt-4o-mini@URL` with the cache off (the synchronous fast path, the `lean` transport);
* `batch`   the same with `batch=true` and a fresh cache: verdicts must equal `sync`'s, requests submitted must
            equal the unique uncached calls, the cost must be half of `sync`'s;
* `resume`  `batch=true` with 4,000 requests per batch against a server whose batches take `--process-s`
            seconds: killed -9 once every batch id is recorded, then `tailor eval --resume`: 0 custom_ids
            submitted twice (the server's record), 0 lost verdicts, the same verdicts as `sync`;
* `outage`  the same batch run, but the provider is killed (-9) once every batch id is recorded, while
            `tailor eval` polls: it waits (a progress line at least every 30 s saying on what), gives the calls
            up after its failed polls (exit 3, every verdict failed, the batches recorded); the provider is
            started again on the same port and state, then `tailor eval --resume`: every verdict, 0 custom_ids
            submitted twice, the same verdicts as `sync`.

Client CPU is the `tailor eval` process's user + system time (getrusage of the children), per call; the goal is
batch mode's at most the synchronous fast path's. Prints one JSON line per run and a summary line.

    .venv/bin/python perf/batch_throughput.py [--cases 8298] [--process-s 30] [--per-batch 4000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from listening import check_loopback, free_port

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "personafeedback-general-dev"
TAILOR = str(Path(sys.executable).parent / "tailor")
MODEL = "gpt-4o-mini"
KEY = "bench-key"


def make_cases(source: Path, n: int, out: Path) -> Path:
    """The development cases repeated to `n`, each copy's question tagged (a distinct request per call)."""
    from tailorbench.datasets.loader import load_benchmark
    from tailorbench.datasets.native import write_native

    base = load_benchmark(str(source)).cases
    cases = []
    for i in range(n):
        case = base[i % len(base)]
        copy = i // len(base)
        cases.append(case.model_copy(update={"id": f"{case.id}#{copy}",
                                             "question": case.question + (f" ({copy})" if copy else "")}))
    path = out / "cases.jsonl"
    write_native(cases, path)
    return path


def start_server(state: Path, process_s: float, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.helpers.batch_server", "--state", str(state), "--key", KEY,
                             "--process-s", str(process_s), "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    check_loopback(proc.pid, "batch test server")  # its sockets, read from /proc
    return proc, url


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tailor(args: list[str], env: dict[str, str], kill_when: Any = None) -> dict[str, Any]:
    """One `tailor` process: exit code, wall and CPU seconds; `kill_when()` true -> kill -9 it."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.Popen([TAILOR, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killed = False
    if kill_when is not None:
        while proc.poll() is None and not kill_when():
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            killed = True
    _, stderr = proc.communicate()
    return {"rc": proc.returncode, "killed": killed, "wall_s": round(time.perf_counter() - t0, 2),
            "cpu_s": round(children_cpu() - cpu0, 2), "stderr_tail": stderr[-400:]}


def outage(base: list[str], batch_opts: list[str], env: dict[str, str], tmp: Path, process_s: float,
           per_batch: int, batches: int) -> dict[str, Any]:
    """The `outage` run: a batch run whose provider is killed once every batch is recorded; the provider back on
    the same port and state; `tailor eval --resume`. Returns the figures (both processes, stderr line gaps)."""
    state, port, run = tmp / "server3", free_port(), tmp / "outage"
    server, url = start_server(state, process_s, port)
    args = [TAILOR, *base, "--judge", f"llm:openai:{MODEL}@{url}/v1", *batch_opts, "--judge-option",
            f"batch_max_requests={per_batch}", "--out", str(run)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter(), line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while proc.poll() is None and recorded(run) < batches:
        time.sleep(0.05)
    killed_at = time.perf_counter()
    server.kill()  # the provider goes down mid-batch: every connection drops
    server.wait()
    proc.wait()
    reader.join()
    ended = time.perf_counter()
    during = [t for t, _ in lines if t >= killed_at]
    stamps = [killed_at, *during, ended]
    first = {"rc": proc.returncode, "submitted_before_outage": len(submitted(state)),
             "outage_to_exit_s": round(ended - killed_at, 1), "lines_during_outage": len(during),
             "waiting_lines": sum("has not answered" in line for _, line in lines),
             "max_gap_between_lines_s": round(max(b - a for a, b in itertools.pairwise(stamps)), 1),
             "wall_s": round(ended - t0, 1), "stderr_tail": "\n".join(line for _, line in lines[-3:])[-600:]}
    rows = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines() if x.strip()]
    first["failed_lines"] = sum(r["status"] == "failed" for r in rows)
    server, _ = start_server(state, 0.0, port)  # the provider is back; its batches have ended
    try:
        second = tailor(["eval", "--resume", str(run), "--no-progress"], env)
    finally:
        server.kill()
    sent = submitted(state)
    described = json.loads((run / "manifest.json").read_text())["config"]["judge_description"]["model"]["batch"]
    return {"run": "outage", "first": first, "second": second, "submitted": len(sent),
            "duplicates": len(sent) - len(set(sent)), "attached": described["batches"]["attached"],
            "submitted_on_resume": described["requests"]["submitted"], "choices": choices(run)}


def choices(run: Path) -> dict[tuple[str, str], Any]:
    rows = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines() if x.strip()]
    return {(r["case_id"], r["order"]): r["choice"] for r in rows}


def cost(run: Path) -> float:
    return float(json.loads((run / "results.json").read_text())["usage"]["cost_usd"])


def submitted(state: Path) -> list[str]:
    return list(json.loads((state / "state.json").read_text())["submitted"])


def recorded(run: Path) -> int:
    files = sorted((run / "batches").glob("*.json")) if (run / "batches").exists() else []
    try:
        entries = json.loads(files[0].read_text())["entries"] if files else []
    except ValueError:
        return 0
    return sum(1 for e in entries if e.get("batch_id"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="the development cases (default: %(default)s)")
    parser.add_argument("--cases", type=int, default=8298)
    parser.add_argument("--process-s", type=float, default=30.0)
    parser.add_argument("--per-batch", type=int, default=4000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    data = make_cases(args.data, args.cases, tmp)
    calls = 2 * args.cases
    env = {**os.environ, "OPENAI_API_KEY": KEY, "TAILORBENCH_CALL_CACHE": str(tmp / "calls.sqlite")}
    base = ["eval", "--data", str(data), "--n-boot", "20", "--no-progress", "--max-failed", "0"]
    failures: list[str] = []
    server, url = start_server(tmp / "server", 0.0)
    judge = f"llm:openai:{MODEL}@{url}/v1"
    try:
        sync = tailor([*base, "--judge", judge, "--judge-option", "cache_policy=off", "--out", str(tmp / "sync")], env)
        sync.update(run="sync", calls=calls, cpu_ms_per_call=round(1000 * sync["cpu_s"] / calls, 3))
        print(json.dumps(sync), flush=True)
        batch_opts = ["--judge-option", "batch=true", "--judge-option", "batch_poll_s=0.5",
                      "--judge-option", "batch_wait_s=0.5"]
        batch = tailor([*base, "--judge", judge, *batch_opts, "--out", str(tmp / "batch")], env)
        sent = submitted(tmp / "server")
        stats = json.loads((tmp / "batch" / "manifest.json").read_text())["config"]["judge_description"]["model"]
        # identical prompts (the data repeats some (user, question, answers)) are one call: sent once
        unique = stats["stats"]["calls"] - stats["stats"]["cache_hits"] - stats["stats"]["deduplicated"]
        batch.update(run="batch", calls=calls, cpu_ms_per_call=round(1000 * batch["cpu_s"] / calls, 3),
                     unique_uncached_calls=unique, submitted=len(sent), unique_submitted=len(set(sent)),
                     batch=stats["batch"])
        if batch["rc"] == 0 and sync["rc"] == 0:
            batch["verdicts_equal"] = choices(tmp / "batch") == choices(tmp / "sync")
            batch["cost_ratio"] = round(cost(tmp / "batch") / cost(tmp / "sync"), 6)
        print(json.dumps(batch), flush=True)
    finally:
        server.kill()
    server, url = start_server(tmp / "server2", args.process_s)
    judge = f"llm:openai:{MODEL}@{url}/v1"
    run = tmp / "resume"
    env2 = {**env, "TAILORBENCH_CALL_CACHE": str(tmp / "calls2.sqlite")}
    expected = -(-int(batch.get("unique_uncached_calls") or calls) // args.per_batch)  # batches to record
    try:
        first = tailor([*base, "--judge", judge, *batch_opts, "--judge-option", f"batch_max_requests={args.per_batch}",
                        "--out", str(run)], env2, kill_when=lambda: recorded(run) >= expected)
        before = len(submitted(tmp / "server2"))
        second = tailor(["eval", "--resume", str(run), "--no-progress"], env2)
        sent = submitted(tmp / "server2")
        resumed = {"run": "resume", "calls": calls, "batches": expected, "killed": first["killed"],
                   "submitted_before_kill": before, "submitted": len(sent), "duplicates": len(sent) - len(set(sent)),
                   "first": first, "second": second}
        if second["rc"] == 0:
            got = choices(run)
            resumed["lost_verdicts"] = calls - len(got)
            resumed["verdicts_equal_sync"] = got == choices(tmp / "sync")
        print(json.dumps(resumed), flush=True)
    finally:
        server.kill()
    env3 = {**env, "TAILORBENCH_CALL_CACHE": str(tmp / "calls3.sqlite")}
    down = outage(base, batch_opts, env3, tmp, args.process_s, args.per_batch, expected)
    got = down.pop("choices")
    down["lost_verdicts"] = calls - sum(1 for v in got.values() if v is not None)
    down["verdicts_equal_sync"] = got == choices(tmp / "sync")
    print(json.dumps(down), flush=True)
    if sync["rc"] or batch["rc"] or second["rc"]:
        failures.append("a run failed")
    if down["first"]["rc"] != 3 or down["second"]["rc"] != 0 or down["duplicates"] or down["lost_verdicts"] \
            or not down["verdicts_equal_sync"] or down["first"]["max_gap_between_lines_s"] > 30.5:
        failures.append("outage / resume")
    if not batch.get("verdicts_equal") or not batch.get("unique_submitted") == batch.get("submitted") \
            == batch.get("unique_uncached_calls"):
        failures.append("batch verdicts or submissions differ")
    if batch.get("cost_ratio") != 0.5:
        failures.append(f"cost ratio {batch.get('cost_ratio')}")
    if not first["killed"] or resumed["duplicates"] or resumed.get("lost_verdicts") != 0 \
            or not resumed.get("verdicts_equal_sync"):
        failures.append("kill -9 / resume")
    cpu_ok = batch["cpu_ms_per_call"] <= sync["cpu_ms_per_call"]
    print(json.dumps({"summary": True, "calls": calls, "sync_cpu_ms_per_call": sync["cpu_ms_per_call"],
                      "batch_cpu_ms_per_call": batch["cpu_ms_per_call"], "cpu_goal_met": cpu_ok,
                      "failures": failures, "loadavg": os.getloadavg()}), flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
