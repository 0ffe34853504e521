"""The README works as written: every `bash tested` block runs unchanged in a fresh directory, and every other
bash block is marked `bash template` with a first comment saying what to substitute.

The one substitution: in the local-model block, the lines `LLM_URL=...` and `MODEL=...` are pointed at the
llama.cpp server the tests start (the block's comment tells a reader to do the same for their server). The fresh
directory holds a copy of the repository's `examples/` and `configs/`, which the commands name by relative path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, LlamaServer

README = REPO_ROOT / "README.md"
_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    """(info string, body) of every fenced block in the README."""
    return [(m.group("info").strip(), m.group("body")) for m in _FENCE.finditer(README.read_text(encoding="utf-8"))]


def readme_tested_blocks() -> list[str]:
    return [body for info, body in blocks() if info == "bash tested"]


def test_every_bash_block_is_marked() -> None:
    bash = [(info, body) for info, body in blocks() if info.split()[:1] == ["bash"]]
    assert bash, "the README has no bash blocks"
    for info, body in bash:
        assert info in ("bash tested", "bash template"), f"unmarked block ```{info}:\n{body}"
        if info == "bash template":
            assert body.lstrip().startswith("#"), f"a template block must say what to substitute:\n{body}"
    assert len(readme_tested_blocks()) >= 2


def _run(block: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    for folder in ("examples", "configs"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def _local(block: str) -> bool:
    return bool(re.search(r"^LLM_URL=", block, re.MULTILINE))


@pytest.mark.slow
def test_demo_blocks_run_as_written(tmp_path: Path, call_cache: Path) -> None:
    plain = [b for b in readme_tested_blocks() if not _local(b)]
    assert plain
    for k, block in enumerate(plain):
        result = _run(block, tmp_path / f"block{k}")
        assert result.returncode == 0, f"README block failed:\n{block}\n--- stderr ---\n{result.stderr[-3000:]}"
    assert (tmp_path / "block0" / "runs" / "board" / "report.md").is_file()


@pytest.mark.server
@pytest.mark.slow
def test_local_model_block_runs_against_a_real_server(tmp_path: Path, llama_server: LlamaServer,
                                                      call_cache: Path) -> None:
    local = [b for b in readme_tested_blocks() if _local(b)]
    assert len(local) == 1
    block = re.sub(r"^LLM_URL=.*$", f"LLM_URL={llama_server.base_url}", local[0], flags=re.MULTILINE)
    block = re.sub(r"^MODEL=.*$", f"MODEL={llama_server.model}", block, flags=re.MULTILINE)
    llama_server.reset()
    result = _run(block, tmp_path)
    assert result.returncode == 0, f"README block failed:\n{block}\n--- stderr ---\n{result.stderr[-3000:]}"
    assert llama_server.count() > 0
    for run in ("judge", "gen"):
        assert (tmp_path / "runs" / run / "results.json").is_file()
    assert (tmp_path / "runs" / "build" / "export" / "pairs.jsonl").is_file()
