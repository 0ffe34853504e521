"""Build (once) and cache the venv that runs LMArena's arena-rank, the reference of the arena's leaderboard.

arena-rank 0.1.1 pins numpy 2.3.3 and jax 0.8.1, which the project venv's numpy does not meet, so it gets a venv
of its own under the test cache (``$TAILORBENCH_CACHE`` or ``~/.cache/tailorbench``, ``arena-rank-venv/``), as
the vLLM venv does (scripts/ensure_vllm_venv.py). tailorbench is not installed there: tests/arena/
arena_rank_checks.py, run with that venv's python, reads battles from a JSON file and writes arena-rank's ratings
to another, which tests/arena/test_arena_rank.py compares with the arena's own fit.

Run with the project venv: ``.venv/bin/python scripts/ensure_arena_rank_venv.py`` (``make assets`` does).
Idempotent: a second run only checks the stamp. tests/arena/test_arena_rank.py imports this file for the paths.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ensure_test_assets as assets  # the cache root, the lock, `run`

ARENA_RANK_REQUIREMENT = "arena-rank==0.1.1"
# Bump when the venv recipe changes (packages, install steps).
VENV_RECIPE = 1


@dataclass(frozen=True)
class ArenaRankPaths:
    """Where the arena-rank venv lives (shared with the tests)."""

    cache: Path

    @property
    def venv(self) -> Path:
        return self.cache / "arena-rank-venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def stamp(self) -> Path:
        return self.venv / ".tailorbench-arena-rank.json"


def arena_rank_paths() -> ArenaRankPaths:
    return ArenaRankPaths(assets.asset_paths().cache)


def log(msg: str) -> None:
    print(f"[arena-rank-venv] {msg}", flush=True)


def _want() -> dict[str, object]:
    return {"arena_rank": ARENA_RANK_REQUIREMENT, "recipe": VENV_RECIPE}


def venv_current(paths: ArenaRankPaths) -> bool:
    """True when the venv exists and was built by this recipe (the tests ask before running it)."""
    if not (paths.python.is_file() and paths.stamp.is_file()):
        return False
    try:
        stamp = json.loads(paths.stamp.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and all(stamp.get(k) == v for k, v in _want().items())


def ensure_venv(paths: ArenaRankPaths) -> None:
    if venv_current(paths):
        log(f"venv cached: {paths.venv}")
        return
    if paths.venv.exists():
        log(f"rebuilding {paths.venv} (stamp missing or out of date)")
        shutil.rmtree(paths.venv)
    began = time.monotonic()
    # the interpreter the project venv was made from (a venv of a venv would point at the same base)
    base = Path(sys.base_prefix) / "bin" / "python3"
    assets.run([str(base if base.is_file() else sys.executable), "-m", "venv", str(paths.venv)],
               what="creating the arena-rank venv")
    assets.run([str(paths.python), "-m", "pip", "--disable-pip-version-check", "install", "-q", "-c",
                str(assets.CONSTRAINTS), ARENA_RANK_REQUIREMENT], what=f"installing {ARENA_RANK_REQUIREMENT}")
    paths.stamp.write_text(json.dumps({**_want(), "build_seconds": round(time.monotonic() - began, 1)}, indent=2)
                           + "\n")
    log(f"built {paths.venv} in {time.monotonic() - began:.0f} s")


def main() -> int:
    paths = arena_rank_paths()
    try:
        with assets.cache_lock(assets.AssetPaths(paths.cache)):
            ensure_venv(paths)
    except assets.AssetError as exc:
        print(f"[arena-rank-venv] ERROR: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
