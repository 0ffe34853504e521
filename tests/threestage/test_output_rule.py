"""The output rule at the entry of every `tailor stages` verb (files.py's one door, issue 42 point 1): an --out that
is one of the verb's inputs or a folder holding one, or a non-empty folder no verb made, is exit 2 naming it, and
nothing on disk changes; a folder a verb made (its marker), a report folder of stage reports, and a file output
stay rewritable by a rerun.

At the base commit 97f6c24 each refused case here ran with exit 0: `stages baseline --out` naming a --human file
and `stages export-tasks --out` naming its --items replaced the input with their output, `stages report-relevance` and
`stages example` wrote their files among a stranger's, and `stages train-verifier` into a folder holding its
--items."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.files import MARKER
from tailorbench.threestage import verbs

EX = verbs.example_dir()
HUMANS1 = sorted(EX.glob("ann_*_task1.jsonl"))
HUMANS3 = sorted(EX.glob("ann_*_task3.jsonl"))
VOTES = EX / "illustrative-llm_relevance.jsonl"


def tree(root: Path) -> dict[str, str]:
    """Every file under `root` with its content hash."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def refused(args: list[str], root: Path, *names: str) -> str:
    """Run `tailor stages ...`: exit 2 with one error naming `names`, and no file under `root` changed."""
    before = tree(root)
    result = CliRunner().invoke(app, ["stages", *args])
    assert result.exit_code == 2, result.output
    assert result.output.count("error:") == 1 and "Traceback" not in result.output, result.output
    for name in names:
        assert name in result.output, result.output
    assert tree(root) == before
    return result.output


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """The example's stage-2 inputs copied into tmp_path/inputs, and a stranger's folder tmp_path/thesis."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for source in [EX / "relevance_items.jsonl", EX / "stage1_items.jsonl", *HUMANS3, VOTES]:
        shutil.copyfile(source, inputs / source.name)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("\\chapter{Results}\n", encoding="utf-8")
    return tmp_path


def humans(root: Path) -> list[str]:
    return [str(root / "inputs" / h.name) for h in HUMANS3]


def test_an_out_that_is_an_input_is_refused(study: Path) -> None:
    inputs = study / "inputs"
    human = humans(study)
    refused(["baseline", "--items", str(inputs / "relevance_items.jsonl"), "--human", *human, "--method", "bm25",
             "--out", human[0]], study, "--out", "input")
    refused(["export-tasks", "--items", str(inputs / "stage1_items.jsonl"), "--out",
             str(inputs / "stage1_items.jsonl")], study, "--out", "stage1_items.jsonl")
    refused(["export-relevance", "--items", str(inputs / "relevance_items.jsonl"), "--out",
             str(inputs / "relevance_items.jsonl")], study, "--out")


def test_an_out_folder_holding_an_input_is_refused(study: Path) -> None:
    inputs = study / "inputs"
    refused(["relevance", "--human", *humans(study), "--votes", str(inputs / VOTES.name), "--out", str(inputs)],
            study, "--out", "holds this command's input")
    refused(["train-verifier", "--items", str(inputs / "stage1_items.jsonl"), "--human", *map(str, HUMANS1),
             "--out", str(inputs)], study, "holds this command's input")


def test_a_foreign_folder_is_refused(study: Path) -> None:
    thesis = str(study / "thesis")
    inputs = study / "inputs"
    refused(["relevance", "--human", *humans(study), "--votes", str(inputs / VOTES.name), "--out", thesis],
            study, "--out", "already holds files")
    refused(["train-relevance", "--items", str(inputs / "relevance_items.jsonl"), "--human", *humans(study),
             "--out", thesis], study, "already holds files")
    refused(["summary", thesis], study, "already holds files")
    pytest.importorskip("bm25s")
    refused(["example", "--out", thesis, "--no-interventions"], study, "already holds files")


def test_a_rerun_rewrites_its_own_outputs(study: Path) -> None:
    """A report folder the verb made (its marker), a folder of stage reports written before the marker, and a
    file output are the verb's own: a second run replaces them."""
    inputs = study / "inputs"
    args = ["relevance", "--human", *humans(study), "--votes", str(inputs / VOTES.name), "--resamples", "20"]
    rep = study / "rep"
    for _ in range(2):
        result = CliRunner().invoke(app, ["stages", *args, "--out", str(rep)])
        assert result.exit_code == 0, result.output
    assert (rep / MARKER).is_file() and (rep / "relevance.json").is_file()
    (rep / MARKER).unlink()  # as a report folder written before folders carried the marker
    result = CliRunner().invoke(app, ["stages", *args, "--out", str(rep)])
    assert result.exit_code == 0, result.output
    (rep / MARKER).unlink()
    result = CliRunner().invoke(app, ["stages", "summary", str(rep)])
    assert result.exit_code == 0 and (rep / "summary.md").is_file(), result.output
    votes = study / "bm25.jsonl"
    for _ in range(2):
        info = verbs.baseline(inputs / "relevance_items.jsonl", humans(study), "bm25", votes)
        assert info["out"] == str(votes)
    assert json.loads(votes.read_text(encoding="utf-8").splitlines()[0])["model"] == "bm25"


@pytest.mark.parametrize(("field", "value"), [("n_items", "many"), ("bootstrap", [1, 2]), ("notes", "one note")])
def test_a_wrong_typed_figure_of_a_stage_report_is_named(study: Path, field: str, value: object) -> None:
    """Found by the CLI fuzz walk: a figure of the wrong type in a hand-edited stage report was a traceback
    (ValidationError of the summary's result model) at 97f6c24; now exit 2 naming the file and the field, and no
    summary is written."""
    inputs = study / "inputs"
    rep = study / "rep"
    result = CliRunner().invoke(app, ["stages", "report-relevance", "--human", *humans(study), "--votes",
                                      str(inputs / VOTES.name), "--resamples", "20", "--out", str(rep)])
    assert result.exit_code == 0, result.output
    for name in ("summary.md", "summary.html"):
        (rep / name).unlink(missing_ok=True)
    report = json.loads((rep / "relevance.json").read_text(encoding="utf-8"))
    report[field] = value
    (rep / "relevance.json").write_text(json.dumps(report), encoding="utf-8")
    result = CliRunner().invoke(app, ["stages", "summary", str(rep)])
    assert result.exit_code == 2, result.output
    assert "relevance.json" in result.output and field in result.output
    assert not (rep / "summary.md").exists()
