"""`tailor eval --repeat N`: repeats 2..N are judged with the call cache off (the llama.cpp server sees every
call again), the determinism figures equal a hand computation, a judge at temperature 0 whose repeats differ is
named, and the wrong uses are refused with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.evaluate.repeats import determinism
from tests.conftest import LlamaServer

runner = CliRunner()


def _p(case: str, order: str, choice: str, correct: bool) -> dict[str, Any]:
    return {"case_id": case, "order": order, "status": "ok", "choice": choice, "correct": correct}


def test_determinism_figures_equal_a_hand_computation() -> None:
    one = [_p("a", "AB", "A", True), _p("a", "BA", "B", True), _p("b", "AB", "A", False), _p("b", "BA", "A", True)]
    two = [*one[:3], _p("b", "BA", "B", False)]  # one verdict of four changes
    three = [*one, _p("c", "AB", "A", True)]  # a verdict only one repeat has is not compared
    d = determinism([one, two, three], temperature=0.0)
    assert (d["verdicts_compared"], d["verdicts_identical"], d["agreement"]) == (4, 3, 0.75)
    accuracies = [np.mean([1.0, 0.5]), np.mean([1.0, 0.0]), np.mean([1.0, 0.5, 1.0])]
    assert d["accuracy"] == pytest.approx(accuracies)
    assert d["accuracy_spread"] == pytest.approx(max(accuracies) - min(accuracies))
    assert d["accuracy_sd"] == pytest.approx(float(np.std(accuracies, ddof=1)))
    assert "1 of 4 verdicts differ between the 3 repeats" in d["note"]
    assert "note" not in determinism([one, one], temperature=0.0)
    assert "note" not in determinism([one, two], temperature=0.7)  # sampling: differences are expected


def test_repeats_rejudge_without_the_cache(llama_server: LlamaServer, tmp_path: Path) -> None:
    judge = f"llm:openai:{llama_server.model}@{llama_server.base_url}"
    llama_server.reset()
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--data", "demo", "--no-progress", "--json", "--judge", judge,
                                 "--limit", "3", "--repeat", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert llama_server.count() == 3 * 6  # 3 cases x 2 orders, and again in each repeat: nothing from the cache
    results = json.loads(result.stdout)
    d = results["determinism"]
    assert d["repeats"] == 3 and d["verdicts_compared"] == 6 and d["runs"] == [".", "repeats/2", "repeats/3"]
    assert d["temperature"] == 0.0 and d["agreement"] is not None
    for k in (2, 3):
        assert len((out / "repeats" / str(k) / "predictions.jsonl").read_text().splitlines()) == 6
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "over 3 repeats without the cache" in report
    assert json.loads((out / "results.json").read_text())["determinism"] == d
    # the first run's calls were cached as usual: a plain rerun sends nothing
    llama_server.reset()
    again = runner.invoke(app, ["eval", "--data", "demo", "--no-progress", "--judge", judge, "--limit", "3",
                                "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    assert llama_server.count() == 0


@pytest.mark.parametrize(("args", "says"), [
    (["--repeat", "0"], "--repeat must be an integer >= 1"),
    (["--repeat", "2", "--executor", "ray"], "--repeat runs its repeats in this process"),
])
def test_wrong_uses_exit_2_and_write_nothing(tmp_path: Path, args: list[str], says: str) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--data", "demo", "--no-progress", "--limit", "2", "--out", str(out),
                                 *args])
    assert result.exit_code == 2 and says in result.output
    assert not out.exists()
