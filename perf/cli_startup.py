"""`tailor --help` must answer in under a second: heavy imports (torch, transformers, numpy, openai,
sqlalchemy) stay inside the backends. Prints one JSON line with the median wall time of `tailor --help` over
N runs and its ratio to a bare `python -c pass` measured in the same run.

    .venv/bin/python perf/cli_startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def wall(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    bare = wall([sys.executable, "-c", "pass"], args.runs)
    help_s = wall([sys.executable, "-m", "tailorbench.cli.app", "--help"], args.runs)
    print(json.dumps({"bench": "cli_startup", "runs": args.runs, "python_bare_s": round(bare, 3),
                      "tailor_help_s": round(help_s, 3), "ratio_to_bare": round(help_s / bare, 2), "goal_s": 1.0}))


if __name__ == "__main__":
    main()
