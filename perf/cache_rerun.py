"""Re-running a finished eval must cost nothing: time and chat-completion requests (counted at the server) of
a second `tailor eval` with the same judge on the same data, vs the first run. Goal: 0 requests, < 5% time.

    .venv/bin/python perf/cache_rerun.py [--cases 500] [--delay 0.25] [--concurrency 16]

Uses the latency server (perf/latency_server.py) and a synthetic native JSONL benchmark; prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_throughput import latency_server, server_stats


def write_cases(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(json.dumps({
                "id": f"c{i}", "split": "general", "tier": "easy", "user_id": f"u{i % 50}",
                "persona": {"Demographics": {"age": 30 + i % 20, "city": "Hangzhou"}, "Preference": "tea, hiking"},
                "question": f"What should I do this weekend ({i})?", "chosen": "Hike near the lake, then tea.",
                "rejected": "Rest at home.",
            }) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with latency_server(args.delay) as base:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "cases.jsonl"
            write_cases(data, args.cases)
            env = dict(os.environ, TAILORBENCH_CALL_CACHE=str(Path(tmp) / "calls.sqlite"))
            tailor = str(Path(sys.executable).parent / "tailor")
            runs = []
            for name in ("first", "rerun"):
                before = server_stats(base)["requests"]
                t0 = time.perf_counter()
                subprocess.run([tailor, "eval", "--data", str(data), "--judge", f"llm:openai:bench@{base}/v1",
                                "--judge-option", f"concurrency={args.concurrency}", "--judge-option", "adaptive=false",
                                "--out", str(Path(tmp) / name), "--no-progress"], env=env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                runs.append((time.perf_counter() - t0, server_stats(base)["requests"] - before))
        (t1, r1), (t2, r2) = runs
        print(json.dumps({"cases": args.cases, "calls": 2 * args.cases, "concurrency": args.concurrency,
                          "delay_s": args.delay, "first_s": round(t1, 2), "first_requests": r1,
                          "rerun_s": round(t2, 2), "rerun_requests": r2, "time_ratio": round(t2 / t1, 4)}))


if __name__ == "__main__":
    main()
