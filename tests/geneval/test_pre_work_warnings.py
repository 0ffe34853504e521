"""gen-eval says what its judge's pre-work check finds (inputs over max_length) before the judge's first
verdict, like `tailor eval` (issue 19: warnings that can be known before the work come before it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.models.encoder_hf import HFEncoder
from tests.helpers.truncation import COUNTED

MARK = "<<encoding starts>>"


def test_gen_eval_warns_before_its_judge_encodes(tiny_hf_model_dir: Path, call_cache: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    original = HFEncoder.encode

    def encode(self: HFEncoder, texts: Any) -> Any:
        print(MARK, file=sys.stderr)
        return original(self, texts)

    monkeypatch.setattr(HFEncoder, "encode", encode)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "gen-eval", "--data", "demo", "--model", f"hf:{tiny_hf_model_dir}", "--judge", "embedding",
        "--judge-option", "max_length=12", "--per-tier", "1", "--setting", "none", "--validate-cases", "0",
        "--max-tokens", "4", "--n-boot", "20", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    err = result.stderr
    match = COUNTED.search(err) or ("every one of the" in err and "exceeds max_length 12 tokens" in err)
    assert match, err
    first = err.index("max_length 12 tokens")
    assert MARK in err and first < err.index(MARK)  # said before the judge encoded anything
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("max_length 12 tokens" in w for w in manifest["warnings"])
