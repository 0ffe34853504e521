"""The tests that start Ray (marked `ray`) run in a network namespace with loopback alone (tests/helpers/netns.py:
Ray binds `::` and the machine's address whatever it is told), as one pytest run whose result is this test's.
tests/conftest.py deselects them from the main run when this test is collected with them and the namespace can
be made; otherwise they run in the main process, with a warning that their servers are not loopback-only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import netns

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(1800)
def test_ray_tests_in_a_loopback_only_network(request: pytest.FixtureRequest) -> None:
    ids: list[str] = request.config.stash.get(RAY_IDS, [])
    if not ids:
        pytest.skip("no Ray test selected in this run, or they run in this process (see the warning)")
    cmd = [*(netns.prefix() or ()), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ids]
    env = {**os.environ, netns.ENV_FLAG: "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, f"{len(ids)} Ray tests in the namespace:\n{proc.stdout[-8000:]}\n{proc.stderr[-3000:]}"
    assert f"{len(ids)} passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


RAY_IDS = pytest.StashKey[list[str]]()
