"""Compare the run directories under two folders (e.g. `make demo`'s runs/demo written by two versions): each run's
results.json and predictions.jsonl must be equal, apart from what varies from one run to the next and the run
format's version.

    python scripts/compare_runs.py BEFORE AFTER

Left out of the comparison: `format_version` (format 2 adds it to every file), timings (`latency_s` per
prediction; results' latency figures), any text holding either folder's path (written as `RUN`) and results'
`predictions_sha256` (the digest of predictions.jsonl's bytes, which hold the version): each side's digest is
checked against its own predictions.jsonl instead. Prints one
line per run and file (`equal`, or the first differences with their JSON paths) and exits 1 when any differs.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

#: keys whose values vary between two runs of the same command
VARYING = frozenset({"format_version", "latency_s", "created_at", "wall_seconds", "duration_s"})


def normalise(value: Any, roots: tuple[str, ...]) -> Any:
    """`value` without the varying keys, each root path written as `RUN`."""
    if isinstance(value, dict):
        return {k: normalise(v, roots) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [normalise(v, roots) for v in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "RUN")
    return value


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """The JSON paths where `a` and `b` differ, each with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in {'before' if k in a else 'after'}" for k in sorted(set(a) ^ set(b))]
        for key in a:
            if key in b:
                out += differences(a[key], b[key], f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for k, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{k}]")]
    return [] if a == b else [f"{where or '.'}: {a!r} != {b!r}"]


def read(path: Path, roots: tuple[str, ...]) -> Any:
    if path.suffix == ".jsonl":
        return [normalise(json.loads(line), roots) for line in path.read_text("utf-8").splitlines() if line]
    return normalise(json.loads(path.read_text("utf-8")), roots)


def digest_matches(run: Path) -> bool:
    """Whether results.json's `predictions_sha256` is the sha256 of the run's predictions.jsonl."""
    recorded = json.loads((run / "results.json").read_text("utf-8")).get("predictions_sha256")
    return recorded == hashlib.sha256((run / "predictions.jsonl").read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = (Path(a).resolve() for a in argv)
    runs = sorted(p.parent.relative_to(before) for p in before.rglob("results.json"))
    if not runs:
        print(f"no run directory (no results.json) under {before}", file=sys.stderr)
        return 2
    failed = 0
    for run in runs:
        for name in ("results.json", "predictions.jsonl"):
            old, new = before / run / name, after / run / name
            if not new.is_file():
                print(f"{run}/{name}: missing after")
                failed += 1
                continue
            found = differences(read(old, (str(before / run), str(before))), read(new, (str(after / run), str(after))))
            if name == "results.json":
                found = [d for d in found if not d.startswith(".predictions_sha256:")]
                found += [f"{side}: predictions_sha256 is not its predictions.jsonl's digest"
                          for side, root in (("before", before), ("after", after)) if not digest_matches(root / run)]
            print(f"{run}/{name}: " + ("equal" if not found else f"{len(found)} differences: " + "; ".join(found[:5])))
            failed += bool(found)
    print(f"{len(runs)} runs, {2 * len(runs) - failed} of {2 * len(runs)} files equal "
          f"(apart from {', '.join(sorted(VARYING))}, the run folders' paths and predictions_sha256, each checked "
          "against its own predictions.jsonl)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
