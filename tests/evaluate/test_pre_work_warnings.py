"""Warnings that can be known before the work come before it (issue 19, point 4): inputs over a judge's token
limit are counted by the judge's own encoding before any scoring, encoding or call, printed first, recorded in
the manifest, and the counts are the ones the scoring reports afterwards."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import Benchmark
from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.models.reward_hf import HFRewardModel
from tailorbench.schema import PairCase
from tests.helpers.pf_data import native_row, write_jsonl
from tests.helpers.rm_models import tiny_bert
from tests.helpers.truncation import COUNTED
from tests.helpers.truncation import long_cases as _cases

MARK = "<<scoring starts>>"


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_bert(tmp_path_factory.mktemp("rm") / "m")


@pytest.fixture
def scoring_marked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every call of the reward model's scoring writes MARK on stderr first (and is counted)."""
    calls: list[int] = []
    original = HFRewardModel.score

    def score(self: HFRewardModel, triples: Any, dedup: bool = True) -> Any:
        print(MARK, file=sys.stderr)
        calls.append(len(triples))
        return original(self, triples, dedup)

    monkeypatch.setattr(HFRewardModel, "score", score)
    return calls


def _rm_run(tmp_path: Path, bert: str, max_length: int, cases: list[PairCase]) -> tuple[Path, dict[str, Any]]:
    config = EvalConfig(data="toy", judge=f"rm:{bert}", n_boot=20,
                        judge_options={"precision": "fp32", "max_length": max_length})
    out = run_eval(config, tmp_path / "run", progress=False, benchmark=Benchmark("toy", "memory", cases))
    return out, json.loads((out / "manifest.json").read_text())


def _truncated_inputs(manifest: dict[str, Any]) -> int:
    """What the scoring counted: the rm judge's `truncated.inputs` as the manifest records it."""
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            block = node.get("truncated")
            if isinstance(block, dict) and "inputs" in block:
                found.append(int(block["inputs"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(manifest)
    assert found, manifest
    return found[0]


def test_rm_truncation_is_counted_and_said_before_any_scoring(
    tmp_path: Path, bert: str, scoring_marked: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    _, manifest = _rm_run(tmp_path, bert, 48, _cases())
    err = capsys.readouterr().err
    match = COUNTED.search(err)
    assert match, err
    cut, total, limit = map(int, match.groups())
    assert limit == 48 and 0 < cut < total
    assert total == 12  # 6 cases x (chosen, rejected), both orders share their triples
    assert "--judge-option max_length=N" in err
    assert scoring_marked and err.index(match.group(0)) < err.index(MARK)  # the warning came first
    assert cut == _truncated_inputs(manifest)  # exactly what the scoring counted
    assert any(match.group(0) in w for w in manifest["config"]["warnings"])


def test_rm_every_input_truncated_says_so_more_strongly(
    tmp_path: Path, bert: str, scoring_marked: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [c.model_copy(update={"rejected": c.chosen + " Also rest."}) for c in _cases(4, long_every=1)]
    _, manifest = _rm_run(tmp_path, bert, 24, cases)
    err = capsys.readouterr().err
    line = "every one of the 8 scored inputs exceeds max_length 24 tokens"
    assert line in err and err.index(line) < err.index(MARK)
    assert _truncated_inputs(manifest) == 8


def test_rm_no_warning_when_nothing_is_truncated(
    tmp_path: Path, bert: str, scoring_marked: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    _, manifest = _rm_run(tmp_path, bert, 128, _cases(4, long_every=99))
    err = capsys.readouterr().err
    assert "max_length" not in err, err
    assert _truncated_inputs(manifest) == 0
    assert not any("max_length" in w for w in manifest["config"]["warnings"])


def test_through_tailor_eval(tmp_path: Path, bert: str, scoring_marked: list[int]) -> None:
    rows = [native_row(id=f"c{k}", user_id=f"u{k}", question=f"Where should I go? ({k})",
                       persona={"Preference": {"travel": "trains"}},
                       chosen=("A slow train trip along the coast, stopping in small towns. " * (10 if k % 2 else 1)))
            for k in range(4)]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    result = CliRunner().invoke(app, ["eval", "--data", str(data), "--judge", f"rm:{bert}", "--judge-option",
                                      "max_length=40", "--judge-option", "precision=fp32", "--n-boot", "20",
                                      "--no-progress", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.stderr
    err = result.stderr
    match = COUNTED.search(err)
    assert match and err.index(match.group(0)) < err.index(MARK), err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert int(match.group(1)) == _truncated_inputs(manifest)
