"""PrefEval's own development rows through `tailor`, end to end, against a llama.cpp server with the tiny test
model: `tailor eval --data DEV --judge llm:... --turns 0,10` (the multiple-choice task) killed with SIGKILL part way
and finished by `--resume`, compared item by item with an uninterrupted run of the same command (a fresh call
cache for the first, so its calls are real; the uninterrupted run reads them back from the cache); then `tailor
gen-eval` on PrefEval (the generation task and its four checks) on a few topics. Prints the wall times, the items
written, the accuracy per filler-turn count and the failed / invalid counts as one JSON object.

The tiny model answers nothing PrefEval can parse (no `<choice>` tag), so its accuracy is 0 by the benchmark's
own rule: the figures check the plumbing on the real rows (every item asked once, reported per turn count,
nothing lost after kill -9), not a model. Not a test: it needs ../shared/data and takes minutes.

    .venv/bin/python perf/prefeval_dev_run.py [--data ../shared/data/prefeval-dev] [--limit 60] [--topics ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from listening import check_loopback, free_port

ROOT = Path(__file__).resolve().parents[1]
TAILOR = str(Path(sys.executable).with_name("tailor"))
GGUF = Path(os.environ.get("TAILORBENCH_CACHE", Path.home() / ".cache" / "tailorbench")) / "models" / \
    "tiny-llama-f32.gguf"
NOT_COMPARED = ("latency_s", "cached")


def start_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 only, with a context long enough for 10 filler turns."""
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--model_alias", "tiny-llama", "--host",
           "127.0.0.1", "--port", str(port), "--n_ctx", "20480", "--n_threads", "2", "--seed", "0"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            check_loopback(proc.pid, "llama.cpp server")  # its sockets, read from /proc
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the llama.cpp server did not start: {log.read_text()[-2000:]}")


def lines(run: Path) -> list[dict[str, Any]]:
    path = run / "predictions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def tailor(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    done = subprocess.run([TAILOR, *args, "--no-progress", "--json"], capture_output=True, text=True, env=env)
    if done.returncode not in (0, 3):
        raise SystemExit(f"tailor {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout), time.perf_counter() - start


def per_turns(results: dict[str, Any], metric: str) -> dict[str, Any]:
    return {tier: {"n": c["n"], metric: c[metric], "ci": c["ci"], "failed": c["failed"],
                   **({"invalid": c["invalid"]} if "invalid" in c else {})} for tier, c in results["by_tier"].items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "prefeval-dev"))
    parser.add_argument("--limit", type=int, default=60, help="multiple-choice items (a seeded sample)")
    parser.add_argument("--kill-after", type=int, default=20, help="SIGKILL once this many items are written")
    parser.add_argument("--topics", default="travel_hotel", help="the generation task's topics")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="prefeval-dev-"))
    env = {**os.environ, "TAILORBENCH_CALL_CACHE": str(work / "calls.sqlite")}
    port = free_port()
    server = start_server(port, work / "server.log")
    judge = f"llm:openai:tiny-llama@http://127.0.0.1:{port}/v1"
    common = ["--data", args.data, "--judge", judge, "--turns", "0,10", "--judge-option", "max_tokens=16",
              "--judge-option", "concurrency=2", "--limit", str(args.limit), "--n-boot", "1000"]
    try:
        killed, whole = work / "killed", work / "whole"
        start = time.perf_counter()
        proc = subprocess.Popen([TAILOR, "eval", *common, "--out", str(killed), "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        while proc.poll() is None and len(lines(killed)) < args.kill_after:
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        before_kill = len(lines(killed))
        resumed, resume_s = tailor(["eval", "--resume", str(killed)], env)
        first_s = time.perf_counter() - start
        uninterrupted, whole_s = tailor(["eval", *common, "--out", str(whole)], env)
        same = {r["item"]: {k: v for k, v in r.items() if k not in NOT_COMPARED} for r in lines(killed)} == {
            r["item"]: {k: v for k, v in r.items() if k not in NOT_COMPARED} for r in lines(whole)}
        rows = lines(killed)
        generation, gen_s = tailor(["gen-eval", "--data", args.data, "--model", judge.removeprefix("llm:"),
                                    "--judge", judge, "--turns", "0,10", "--data-option", f"topics={args.topics}",
                                    "--max-tokens", "32", "--model-option", "concurrency=2", "--judge-option",
                                    "concurrency=2", "--out", str(work / "gen")], env)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps({
        "data": args.data, "work": str(work),
        "multiple_choice": {
            "items": resumed["overall"]["n"], "written": len(rows), "distinct": len({r["item"] for r in rows}),
            "written_before_kill": before_kill, "kill_and_resume_s": round(first_s, 1),
            "resume_s": round(resume_s, 1), "same_as_uninterrupted": same,
            "uninterrupted_from_cache_s": round(whole_s, 1),
            "overall": {k: resumed["overall"][k] for k in ("n", "accuracy", "ci", "invalid", "failed", "chance")},
            "by_turns": per_turns(resumed, "accuracy"),
            "equal_to_uninterrupted_results": resumed["overall"] == uninterrupted["overall"]},
        "generation": {
            "topics": args.topics, "items": generation["overall"]["n"], "wall_s": round(gen_s, 1),
            "overall": {k: generation["overall"][k] for k in ("n", "preference_following_accuracy", "ci", "failed",
                                                              "error_unhelpful", "preference_unaware_violation")},
            "by_turns": per_turns(generation, "preference_following_accuracy")},
    }, indent=2))


if __name__ == "__main__":
    main()
