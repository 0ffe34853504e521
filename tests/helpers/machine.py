"""How fast the machine was during a test run, for the durations report: the same code took 14.6 and 19.9
minutes on this 2-core machine (docs/testing.md, "Measured"), and a report should say whether the machine or the
tests changed. Two readings: a fixed pure-Python loop timed before and after the run (its speed does not depend
on the tests), and the cores' busy share over the run from /proc/stat (user + system + steal over all ticks)."""

from __future__ import annotations

import time
from pathlib import Path

#: iterations of the probe loop: about 0.1 s on the 2-core machine when it is idle
PROBE_LOOPS = 2_000_000


def probe_seconds() -> float:
    """The best of three timings of a fixed pure-Python loop (the best: a timing is only ever slowed down)."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        total = 0
        for n in range(PROBE_LOOPS):
            total += n
        best = min(best, time.perf_counter() - began)
    return best


def cpu_ticks() -> dict[str, int] | None:
    """The machine's CPU ticks so far (all cores): busy (user, nice, system, irq, softirq), steal and all; None
    where /proc/stat cannot be read."""
    try:
        first = Path("/proc/stat").read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    return {"busy": user + nice + system + irq + softirq, "steal": steal,
            "all": user + nice + system + idle + iowait + irq + softirq + steal}


def summary(before_s: float, after_s: float, ticks_before: dict[str, int] | None,
            ticks_after: dict[str, int] | None) -> dict[str, float | None]:
    """The report's machine line: the probe before and after, and the busy and steal shares over the run."""
    out: dict[str, float | None] = {"probe_before_s": round(before_s, 3), "probe_after_s": round(after_s, 3),
                                    "busy_share": None, "steal_share": None}
    if ticks_before and ticks_after and ticks_after["all"] > ticks_before["all"]:
        spent = ticks_after["all"] - ticks_before["all"]
        out["busy_share"] = round((ticks_after["busy"] - ticks_before["busy"]) / spent, 3)
        out["steal_share"] = round((ticks_after["steal"] - ticks_before["steal"]) / spent, 3)
    return out
