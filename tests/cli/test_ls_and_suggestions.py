"""`tailor ls [KIND]` lists what is registered (plugins included), and an unknown name anywhere says which known
name is closest."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError

runner = CliRunner()


def test_ls_lists_every_kind() -> None:
    from tailorbench.api.registries import KINDS
    from tailorbench.judges.base import JUDGES
    from tailorbench.models.backends import BACKENDS

    result = runner.invoke(app, ["ls", "--json"])
    assert result.exit_code == 0, result.output
    listed = {k["kind"]: [p["name"] for p in k["parts"]] for k in json.loads(result.output)}
    assert list(listed) == list(KINDS)
    assert listed["judges"] == JUDGES.names() and listed["backends"] == BACKENDS.names()
    assert {"persona", "none", "rag"} <= set(listed["settings"])
    assert {"pairwise", "attributes", "relevance", "ab_rating"} <= set(listed["task-types"])
    assert {"native", "prefeval", "personamem"} <= set(listed["layouts"])
    assert {"pairwise", "gen-eval", "stage"} <= set(listed["run-kinds"])
    assert {"accuracy", "neg-rmse"} <= set(listed["alignments"]) and listed["suites"] == ["personalization"]
    text = runner.invoke(app, ["ls"])
    assert text.exit_code == 0 and "judges: " in text.output and "entry-point group tailorbench.judges" in text.output


def test_ls_one_kind_and_an_installed_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    from tailorbench.judges.base import JUDGES

    point = importlib.metadata.EntryPoint(name="myjudge", value="my_pkg.judges:make", group="tailorbench.judges")
    monkeypatch.setattr(JUDGES, "_plugins", {"myjudge": point})
    result = runner.invoke(app, ["ls", "judge", "--json"])  # the singular is the kind too
    assert result.exit_code == 0, result.output
    (listing,) = json.loads(result.output)
    assert listing["group"] == "tailorbench.judges"
    assert {"name": "myjudge", "source": "plugin"} in listing["parts"]
    assert {"name": "longer", "source": "builtin"} in listing["parts"]
    plain = runner.invoke(app, ["ls", "judges"])
    assert "myjudge  (plugin)" in plain.output.splitlines() and "longer" in plain.output.splitlines()


def test_an_unknown_kind_suggests_the_closest() -> None:
    result = runner.invoke(app, ["ls", "judgs"])
    assert result.exit_code == 2
    assert "unknown kind 'judgs' (did you mean 'judges'?)" in result.output


def test_unknown_names_suggest_the_closest() -> None:
    from tailorbench.agreement.admissibility import margin
    from tailorbench.benchmarks.protocols import choice_protocol
    from tailorbench.benchmarks.suite import load_suite
    from tailorbench.datasets.layouts import LAYOUTS
    from tailorbench.evaluate.settings import SETTINGS
    from tailorbench.judges.base import make_judge
    from tailorbench.options import as_choice
    from tailorbench.registry import did_you_mean

    cases = [
        (lambda: make_judge("longr"), "unknown judge 'longr' (did you mean 'longer'?)"),
        (lambda: LAYOUTS.get("prefevl"), "unknown benchmark layout 'prefevl' (did you mean 'prefeval'?)"),
        (lambda: SETTINGS.get("persna"), "unknown setting 'persna' (did you mean 'persona'?)"),
        (lambda: load_suite("personalisation"), "(did you mean 'personalization'?)"),
        (lambda: as_choice("--task-type", "pairwse", ("pairwise", "relevance")), "(did you mean 'pairwise'?)"),
        (lambda: margin(None, "expret"), "(did you mean 'expert'?)"),
        (lambda: choice_protocol("prefeval", "author"), "(did you mean 'authors'?)"),
    ]
    for call, message in cases:
        with pytest.raises(ConfigError) as raised:
            call()
        assert message in str(raised.value)
    assert did_you_mean("zzz", ["judges", "backends"]) == ""
    assert did_you_mean("ranking", ["ab_rating", "pairwise"]) == ""  # a near word is not a typo
    assert did_you_mean("OpenAI", ["anthropic", "openai"]) == " (did you mean 'openai'?)"


def test_unknown_names_on_the_command_line(tmp_path: Path) -> None:
    cases = [
        (["annotate", "project", "create", "p", "--task-type", "pairwse", "--dir", str(tmp_path)],
         "did you mean 'pairwise'?"),
        (["gen-eval", "--model", "opnai:gpt", "--judge", "longer", "--out", str(tmp_path / "g")],
         "did you mean 'openai'?"),
        (["annotate", "export-items", "i.jsonl", "--task-type", "pairwise", "--output-format", "labelstudio",
          "--out", str(tmp_path / "x")], "did you mean 'label-studio'?"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)

