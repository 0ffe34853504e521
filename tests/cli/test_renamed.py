"""Renamed verbs and Python names (CHANGELOG.md): for one release each old name still works. An old verb is the
same command under its old name, hidden from `--help`; an old Python name gives the new object with a
DeprecationWarning that names the new one, and is in no `__all__`."""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tests.threestage.helpers import write_jsonl

runner = CliRunner()


def listed(group: list[str]) -> list[str]:
    """The verbs `tailor GROUP --help` lists."""
    out = runner.invoke(app, [*group, "--help"], terminal_width=200).output
    return re.findall(r"^│ (\S+)\s", out, re.MULTILINE)


def _incorporation_inputs(tmp_path: Path) -> list[str]:
    tasks = [{"id": f"t{i}", "user_id": f"u{i % 3}", "prompt": "Plan dinner.", "generic": "Eat food.",
              "personalized": "As a vegetarian, try this.", "attributes": ["The user keeps a vegetarian diet."],
              "meta": {"condition": "gold"}} for i in range(6)]
    ratings = [{"item": f"t{i}::1", "rater": rater, "label": (i + k) % 5 - 2, "group": group}
               for i in range(6) for k, (rater, group) in enumerate((("h1", "human"), ("h2", "human"),
                                                                    ("judge", "model")))]
    return ["--tasks", str(write_jsonl(tmp_path / "tasks.jsonl", tasks)),
            "--ratings", str(write_jsonl(tmp_path / "ratings.jsonl", ratings)), "--n-boot", "20", "--json"]


@pytest.mark.parametrize("stage", ["extraction", "relevance", "incorporation"])
def test_an_old_stage_analysis_name_is_hidden_and_runs_the_analysis(stage: str, tmp_path: Path) -> None:
    verbs = listed(["stages"])
    assert f"report-{stage}" in verbs and stage not in verbs
    if stage == "incorporation":  # the whole analysis, under both names
        args = _incorporation_inputs(tmp_path)
        old, new = (runner.invoke(app, ["stages", name, *args]) for name in (stage, f"report-{stage}"))
        assert old.exit_code == new.exit_code == 0, old.output + new.output
        assert json.loads(old.stdout) == json.loads(new.stdout)
    else:  # the same verb: the same reading of the same bad input
        args = ["--items", str(tmp_path / "absent.jsonl")] if stage == "extraction" else []
        args += ["--human", str(tmp_path / "absent-human.jsonl")]
        old, new = (runner.invoke(app, ["stages", name, *args]) for name in (stage, f"report-{stage}"))
        assert old.exit_code == new.exit_code == 2 and "absent" in old.output
        assert old.output == new.output


def test_annotate_study_is_a_hidden_alias_of_annotate_crowd(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy")
    verbs = listed(["annotate"])
    assert "crowd" in verbs and "study" not in verbs
    assert listed(["annotate", "study"]) == listed(["annotate", "crowd"])
    d = str(tmp_path / "ann")
    assert runner.invoke(app, ["annotate", "project", "create", "p", "--task", "pairwise", "--dir", d]).exit_code == 0
    made = runner.invoke(app, ["annotate", "study", "create", "p", "--quota", "2", "--max-participants", "3",
                               "--completion-code", "C1", "--dir", d, "--json"])
    assert made.exit_code == 0, made.output
    old, new = (runner.invoke(app, ["annotate", group, "list", "--dir", d, "--json"]) for group in ("study", "crowd"))
    assert old.exit_code == new.exit_code == 0
    assert json.loads(old.stdout) == json.loads(new.stdout) and json.loads(new.stdout)[0]["id"] == json.loads(
        made.stdout)["id"]


OLD_PYTHON_NAMES = [
    *((tb.stages, stage, f"report_{stage}") for stage in ("extraction", "relevance", "incorporation")),
    *((tb.annotate, f"study_{verb}", f"crowd_{verb}")
      for verb in ("create", "list", "participants", "link", "close", "release", "reissue")),
]


@pytest.mark.parametrize(("module", "old", "new"), OLD_PYTHON_NAMES, ids=[o for _, o, _ in OLD_PYTHON_NAMES])
def test_an_old_python_name_warns_and_gives_the_new_one(module: object, old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"{old} is renamed {new}\b"):
        value = getattr(module, old)
    assert value is getattr(module, new)
    assert old not in module.__all__ and new in module.__all__  # type: ignore[attr-defined]


@pytest.mark.parametrize(("module", "old", "new"), OLD_PYTHON_NAMES, ids=[o for _, o, _ in OLD_PYTHON_NAMES])
def test_an_old_async_twin_warns_and_runs_the_new_verb(module: object, old: str, new: str) -> None:
    """The `*_async` twins are gone (the blocking verbs work inside a running loop); an old name's twin still
    imports for one release, an awaitable of the new verb, with a warning naming the new verb."""
    with pytest.warns(DeprecationWarning, match=rf"{old}_async is deprecated .*: use \S+\.{new} \("):
        value = getattr(module, f"{old}_async")
    assert asyncio.iscoroutinefunction(value) and value.__wrapped__ is getattr(module, new)
    assert f"{new}_async" not in module.__all__  # type: ignore[attr-defined]


def test_old_python_names_import_and_unknown_names_still_fail() -> None:
    with pytest.warns(DeprecationWarning, match="report_extraction"):
        from tailorbench.api.stages import extraction
    with pytest.warns(DeprecationWarning, match="crowd_create"):
        from tailorbench.api.annotate import study_create
    assert extraction is tb.stages.report_extraction and study_create is tb.annotate.crowd_create
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn nothing
        assert tb.stages.report_relevance is not None and tb.annotate.crowd_list is not None
        for module, typo in ((tb.stages, "extractoin"), (tb.annotate, "study_creat")):
            with pytest.raises(AttributeError, match=f"no attribute '{typo}'"):
                getattr(module, typo)
