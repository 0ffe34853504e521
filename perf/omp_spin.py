"""What two test workers' torch cost each other on a 2-core machine, with OpenMP's default wait policy and with
OMP_WAIT_POLICY=PASSIVE (the Makefile's pytest sets it).

A worker process runs small torch steps (the shape of the tests' MiniLM-sized models: a two-layer head over a
16 x 64 x 384 batch, forward, backward, AdamW) with short pauses between, as a test does between its calls. The
script times one such process alone (the baseline), then two at once with each policy, and prints each
process's wall and CPU seconds and their ratios to the baseline. torch's OpenMP threads spin after a parallel
region while they wait for the next: with two processes of two threads on two cores, a spinning thread holds the
core another process's thread needs.

Run: .venv/bin/python perf/omp_spin.py [--steps 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

WORKER = """
import json, time, torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(384, 384), torch.nn.ReLU(), torch.nn.Linear(384, 1))
opt = torch.optim.AdamW(m.parameters())
x = torch.randn(16, 64, 384)
t0, c0 = time.perf_counter(), time.process_time()
for i in range({steps}):
    loss = m(x).mean(); loss.backward(); opt.step(); opt.zero_grad()
    if i % 20 == 0:
        time.sleep(0.01)
print(json.dumps({{"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}}))
"""


def _run(copies: int, steps: int, policy: str | None) -> list[dict[str, float]]:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    procs = [subprocess.Popen([sys.executable, "-c", WORKER.format(steps=steps)], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(copies)]
    out: list[dict[str, float]] = [json.loads(p.communicate()[0]) for p in procs]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    base = _run(1, args.steps, None)[0]
    rows: list[dict[str, Any]] = [{"case": "one process, default policy (baseline)", **base}]
    for policy in (None, "PASSIVE"):
        for n, got in enumerate(_run(2, args.steps, policy)):
            rows.append({"case": f"two at once, {policy or 'default'} policy, process {n + 1}", **got})
    print(f"cores: {os.cpu_count()}, steps: {args.steps}")
    for row in rows:
        print(f"{row['case']:48} wall {row['wall']:6.2f} s ({row['wall'] / base['wall']:4.2f}x)  "
              f"cpu {row['cpu']:6.2f} s ({row['cpu'] / base['cpu']:4.2f}x)")


if __name__ == "__main__":
    main()
