"""mypy run by a test as a subprocess, with a cache that outlives the run.

A fresh clone has no `.mypy_cache`, and each test that ran mypy over a script importing `tailorbench` checked the
whole package from nothing: 65 s of wall time each in a durations report of the full suite (2026-12-06). The cache
goes with the heavy assets (`$TAILORBENCH_TEST_ASSETS/mypy/tests-NAME`, as `make typecheck` keeps its own under
`$(CACHE)/mypy`); mypy trusts a cached module only when its content hash and the options match, so a warm cache
changes the time and never the verdict. One folder per caller, since other options invalidate the entries.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def mypy_cache(name: str) -> Path:
    """The persistent cache folder of one caller (`name`), under the test assets' cache."""
    base = os.environ.get("TAILORBENCH_TEST_ASSETS") or str(Path.home() / ".cache" / "tailorbench")
    return Path(base) / "mypy" / f"tests-{name}"


def run_mypy(name: str, args: Sequence[str], env: Mapping[str, str] | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python -m mypy ARGS` from the repository root with the caller's persistent cache; never raises on errors."""
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(mypy_cache(name)), *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                          env=dict(env) if env is not None else None, timeout=timeout)
