"""Training leakage is shown, never hidden: a `tailor train-rm` checkpoint stores content hashes of its training
personas and pairs; evaluating it on data that overlaps them says so before the work, records it in the manifest
and reports in-training, persona-seen and unseen cases as separate rows. The same holds for any judge whose
description declares training data. A tiny real reward model, trained here on toy pairs."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.api import train_rm as train_rm_verb
from tailorbench.cli.app import app
from tailorbench.datasets import load_benchmark, write_native
from tailorbench.evaluate.results import compute_results
from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.judges.base import JudgeBase
from tailorbench.leakage import CONTENT_FILE, TrainingContent, pair_hash, persona_hash
from tailorbench.logs import showing_notes
from tailorbench.schema import JudgeInput, PairCase, Verdict
from tests.helpers.pf_data import make_hub, make_mirror
from tests.helpers.rm_models import tiny_bert, toy_cases


def train_rm(**fields: Any) -> dict[str, Any]:
    """`tb.train_rm`'s summary.json, as the dict these tests read."""
    return train_rm_verb(**fields).to_dict()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    root = tmp_path_factory.mktemp("leak")
    data = root / "pairs.jsonl"
    write_native(toy_cases(n_users=8, per_user=6), data)
    out = root / "rm"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), showing_notes():  # notes are INFO records, shown as under `tailor`
        summary = train_rm(model=tiny_bert(root / "base"), data=str(data), out=str(out), eval_fraction=0.25,
                           max_length=64, batch_size=8, epochs=2, learning_rate=3e-3, warmup_ratio=0.0,
                           precision="fp32", n_boot=20, seed=0)
    return out, summary, err.getvalue()


def _train_users(out: Path) -> list[str]:
    held = {c.user_id for c in load_benchmark(str(out / "eval" / "heldout.jsonl")).cases}
    return sorted({c.user_id for c in toy_cases(n_users=8, per_user=6)} - held)


def test_checkpoint_stores_content_hashes_of_what_it_was_fitted_on(trained: tuple[Path, dict, str]) -> None:
    out, summary, _ = trained
    stored = json.loads((out / CONTENT_FILE).read_text())
    assert stored["recipe"] == 1 and "NFC" in stored["recipe_text"]
    train_users = _train_users(out)
    assert len(train_users) == 6
    train = [c for c in toy_cases(n_users=8, per_user=6) if c.user_id in train_users]
    assert stored["counts"] == {"personas": 6, "pairs": 36}
    assert set(stored["pairs"]) == {pair_hash(c.question, c.chosen, c.rejected) for c in train}
    assert set(stored["personas"]) == {persona_hash(c.persona) for c in train}
    assert not any(u in (out / CONTENT_FILE).read_text() for u in train_users)  # content, not user ids
    assert summary["training_content"]["pairs"] == 36


def test_hashes_are_of_content_not_layout(tmp_path: Path) -> None:
    hub = load_benchmark(str(make_hub(tmp_path / "hub"))).cases
    mirror = load_benchmark(str(make_mirror(tmp_path / "mirror"))).cases
    assert {c.user_id for c in hub} != {c.user_id for c in mirror}  # line numbers vs name keys
    def same(question: str) -> str:  # the fixtures prefix questions with the file they are in
        return question.replace("spedific", "specific").replace("/mid]", "/medium]")

    by_question = {same(c.question): c for c in hub}
    assert len(by_question) == len(mirror) == 18
    for case in mirror:
        twin = by_question[case.question]
        assert persona_hash(twin.persona) == persona_hash(case.persona) is not None
        assert pair_hash(same(twin.question), twin.chosen, twin.rejected) == \
            pair_hash(case.question, case.chosen, case.rejected)
    # normalisation: NFC and surrounding white space do not change a hash; key order does not either
    assert pair_hash(" Caf\u00e9?\n", "a", "b") == pair_hash("Cafe\u0301?", " a", "b ")
    assert persona_hash({"b": {"y": 1, "x": "é"}, "a": 2}) == persona_hash({"a": 2, "b": {"x": "e\u0301 ", "y": 1}})
    assert persona_hash({}) is None


def test_train_rm_prints_where_the_heldout_evaluation_is_and_how_to_reproduce_it(
    trained: tuple[Path, dict, str]
) -> None:
    out, summary, stderr = trained
    held = summary["heldout"]
    assert held["eval_dir"] == str(out / "eval" / "epoch-2") and held["cases"] == 12
    assert f"{out / 'eval' / 'epoch-2'}/report.md" in stderr and held["command"] in stderr
    command = shlex.split(held["command"])
    assert command[:2] == ["tailor", "eval"]
    result = CliRunner().invoke(app, [*command[1:], "--no-progress"])
    assert result.exit_code == 0, result.output
    rerun = json.loads((out / "eval" / "rerun" / "results.json").read_text())
    original = json.loads((out / "eval" / "epoch-2" / "results.json").read_text())
    assert rerun["metrics"]["all"]["accuracy"] == original["metrics"]["all"]["accuracy"]
    assert rerun["dataset_fingerprint"] == original["dataset_fingerprint"]
    # the held-out users share nothing with training: all unseen, and one row as usual
    assert rerun["training_overlap"]["counts"] == {"unseen": 12, "persona-seen": 0, "in-training": 0}
    assert "rows" not in rerun["training_overlap"]
    report = (out / "eval" / "rerun" / "report.md").read_text()
    assert "persona \\| unseen" not in report and "| 36 | 6 | 0 | 0 | 12 |" in report  # checked, nothing shared


def _overlapping_data(out: Path) -> tuple[list[PairCase], dict[str, str]]:
    """Half of the training users' pairs, one pair with its labels swapped, a new question for a training
    persona, and the held-out users' pairs; with the class each case must get."""
    train_users = _train_users(out)
    every = toy_cases(n_users=8, per_user=6)
    half = [c for c in every if c.user_id in train_users[:3]]
    swapped = half[0].model_copy(update={"id": "swapped", "chosen": half[0].rejected, "rejected": half[0].chosen})
    new_question = half[1].model_copy(update={"id": "new-question", "question": "Which film tonight?"})
    held = load_benchmark(str(out / "eval" / "heldout.jsonl")).cases
    cases = [*half, swapped, new_question, *held]
    expected = {c.id: "in-training" for c in half} | {"swapped": "in-training", "new-question": "persona-seen"}
    return cases, expected | {c.id: "unseen" for c in held}


def test_evaluating_on_overlapping_data_reports_the_classes_as_separate_rows(
    trained: tuple[Path, dict, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, _ = trained
    cases, expected = _overlapping_data(out)
    data = tmp_path / "overlap.jsonl"
    write_native(cases, data)
    run = run_eval(EvalConfig(data=str(data), judge=f"rm:{out}", n_boot=50, judge_options={"precision": "fp32"}),
                   tmp_path / "run", progress=False)
    stderr = capsys.readouterr().err
    assert f"rm:{out} was trained on part of this data: 19 of 32 cases are training pairs" in stderr
    assert "1 with the labels swapped" in stderr and "1 more share a training persona" in stderr

    manifest = json.loads((run / "manifest.json").read_text())
    block = manifest["config"]["training_overlap"]
    assert block["counts"] == {"unseen": 12, "persona-seen": 1, "in-training": 19} and block["swapped"] == 1
    assert {k: block["cases"].get(k, "unseen") for k in expected} == expected
    assert manifest["config"]["judge_description"]["training_data"]["pairs"] == 36

    results = json.loads((run / "results.json").read_text())
    rows = results["training_overlap"]["rows"]
    assert {k: v["all"]["n"] for k, v in rows.items()} == {"unseen": 12, "persona-seen": 1, "in-training": 19}
    # each row's figures are those of its cases alone
    predictions = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    for kind, metrics in rows.items():
        mine = [p for p in predictions if expected[p["case_id"]] == kind]
        score: dict[str, list[bool]] = {}
        for p in mine:
            score.setdefault(p["case_id"], []).append(p["correct"])
        assert metrics["all"]["accuracy"] == pytest.approx(sum(sum(v) / len(v) for v in score.values()) / len(score))
    assert results["warnings"][0].startswith(f"rm:{out} was trained on part of this data")
    examples = [e for kind in ("right", "wrong") for e in results["examples"][kind]]
    assert examples and all(e["training"] == expected[e["case_id"]] for e in examples)
    assert compute_results(run) == results
    ratio = results["training_overlap"]["by_length_ratio"]
    assert {k: sum(b["n"] for b in v) for k, v in ratio.items()} == {"unseen": 12, "persona-seen": 1, "in-training": 19}

    report = (run / "report.md").read_text()
    headline = report.split("## Data")[0]  # its figures are the unseen row's: never the memorised cases'
    assert f"Best judge: `rm:{out} / persona | unseen`" in headline
    assert f"| rm:{out} | persona \\| unseen | 12 |" in headline
    board = [line for line in report[report.index("## Leaderboard"):].splitlines()
             if line.startswith(f"| rm:{out} | persona")][:3]
    assert [re.split(r" \\\| | \| ", line)[2] for line in board] == ["unseen", "persona-seen", "in-training"]
    assert "## Training data of the judges" in report and "| 19 (1 with labels swapped) | 1 | 12 |" in report
    html = (run / "report.html").read_text()
    assert "persona | in-training" in html and "persona | unseen" in html and "Training data of the judges" in html
    assert re.search(r"<tr class='warn'><td>[^<]+</td><td>persona \| in-training</td>", html)  # marked
    assert not re.search(r"<tr class='warn'><td>[^<]+</td><td>persona \| unseen</td>", html)
    assert "persona \\| in-training | " in report.split("### Accuracy by length ratio")[1].split("##")[0]
    bars = re.findall(r"<rect [^>]*><title>([^<]+)</title>", html)  # the chart: one series per row, none mixed
    assert bars and all(re.search(r"persona \| (unseen|persona-seen|in-training) ", t) for t in bars)


class _DeclaringJudge(JudgeBase):
    """Any judge: it declares its training data only in its description, and fails in prepare (so whatever the
    runner printed came before any work)."""

    spec = "declaring"

    def __init__(self, content: Path) -> None:
        super().__init__()
        self.content = content

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "training_data": {"content": str(self.content)}}

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        raise RuntimeError("prepare failed")

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        return [Verdict(choice="A") for _ in inputs]


def test_any_judge_that_declares_training_data_is_checked_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = load_benchmark("demo").cases
    TrainingContent.of_cases(cases[:10], "").write(tmp_path)
    judge = _DeclaringJudge(tmp_path)  # the directory: its training_content.json is read
    with pytest.raises(RuntimeError, match="prepare failed"):
        run_eval(EvalConfig(judge="declaring", n_boot=20), tmp_path / "run", progress=False, judge=judge)
    assert "declaring was trained on part of this data: 10 of 72 cases" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "stopped"
    assert manifest["config"]["training_overlap"]["counts"]["in-training"] == 10


def test_declared_training_content_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    from tailorbench.errors import DataError

    with pytest.raises(DataError, match="cannot be read"):
        run_eval(EvalConfig(judge="declaring", n_boot=20), tmp_path / "run", progress=False,
                 judge=_DeclaringJudge(tmp_path / "missing"))
    (tmp_path / CONTENT_FILE).write_text("{not json")
    with pytest.raises(DataError, match=f"{CONTENT_FILE}:1: malformed training content"):
        run_eval(EvalConfig(judge="declaring", n_boot=20), tmp_path / "run2", progress=False,
                 judge=_DeclaringJudge(tmp_path))


def test_a_checkpoint_older_than_training_content_gets_it_rebuilt_from_its_config(
    trained: tuple[Path, dict, str], tmp_path: Path
) -> None:
    import shutil

    from tailorbench.judges.base import JudgeOptions, make_judge

    out, _, _ = trained
    old = tmp_path / "old"
    shutil.copytree(out, old, ignore=shutil.ignore_patterns("eval", CONTENT_FILE))
    judge: Any = make_judge(f"rm:{old}", JudgeOptions(extra={"precision": "fp32"}))
    original = TrainingContent.read(out / CONTENT_FILE)
    assert judge.training.pairs == original.pairs and judge.training.personas == original.personas
    assert "rebuilt" in judge.describe()["training_data"]["content"] and not judge.warnings
    # its data gone: said, not hidden
    config = (old / "train_config.yaml").read_text()
    (old / "train_config.yaml").write_text(config.replace(str(out.parent / "pairs.jsonl"), str(tmp_path / "gone")))
    judge = make_judge(f"rm:{old}", JudgeOptions(extra={"precision": "fp32"}))
    assert judge.training_content() is None  # type: ignore[attr-defined]
    assert any("cannot be rebuilt" in w and "overlap with this data is not checked" in w for w in judge.warnings)
