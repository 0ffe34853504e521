"""The layer contracts of pyproject.toml (`[tool.importlinter]`, docs/architecture.md "Layers") hold on the
package, and they bite: the same contracts on a scratch copy of the package with one forbidden import added
(the CLI reaching into `evaluate/`, `datasets/` importing `models/`) fail, naming the contract and the line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT), "--no-cache", "--config", str(cwd / "pyproject.toml")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_contracts_hold() -> None:
    result = _lint(REPO_ROOT / "src", REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("cli/common.py", "from tailorbench.evaluate import runner  # noqa", "the CLI imports only the API"),
    ("datasets/rows.py", "from tailorbench.models import cache  # noqa", "datasets never import models"),
    ("schema.py", "from tailorbench.judges import base  # noqa", "layers"),
])
def test_a_forbidden_import_fails(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copytree(REPO_ROOT / "src" / "tailorbench", tmp_path / "src" / "tailorbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "tailorbench" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = _lint(tmp_path / "src", tmp_path)
    assert result.returncode != 0, result.stdout
    assert contract in result.stdout and "BROKEN" in result.stdout, result.stdout
