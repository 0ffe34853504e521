"""Stage 2 through the real annotation service: relevance tasks exported in its import format, labelled, exported,
and read back into the stage-2 analysis next to the Re-Centering shapes, giving the same numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.annotation.importer import read_import
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError, DataError
from tailorbench.threestage import verbs as api
from tests.threestage.helpers import service_round_trip

EX = api.example_dir()
ITEMS = EX / "relevance_items.jsonl"
HUMANS = sorted(EX.glob("ann_*_task3.jsonl"))
VOTES = EX / "illustrative-llm_relevance.jsonl"


def _labels() -> dict[tuple[str, int, str], bool]:
    """(annotator, index, attribute text) -> relevant, from the example's Re-Centering task-3 files."""
    out = {}
    for path in HUMANS:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            for j in rec["relevance_judgments"]:
                out[rec["annotator"], rec["index"], j["attribute"]] = j["relevant"]
    return out


def test_relevance_tasks_round_trip_through_the_service(tmp_path: Path) -> None:
    tasks = tmp_path / "relevance_tasks.jsonl"
    res = CliRunner().invoke(app, ["stages", "export-relevance", "--items", str(ITEMS), "--out", str(tasks), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tasks"] == 18
    assert read_import(tasks, "relevance")[0] == "items"
    labels = _labels()

    def answer(name: str, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, str]:
        index = int(payload["id"])
        return {f"r_{a['key']}": "yes" if labels[name, index, a["text"]] else "no" for a in payload["attributes"]}

    export = service_round_trip(tmp_path, "relevance", tasks, answer, ["ann_1", "ann_2", "ann_3"], 3)
    from_files = api.relevance(HUMANS, [VOTES], n_resamples=50)
    res = CliRunner().invoke(app, ["stages", "report-relevance", "--export", str(export / "ratings.jsonl"), "--items",
                                   str(ITEMS), "--model", str(VOTES), "--json", "--resamples", "50"])
    assert res.exit_code == 0, res.output
    from_service = json.loads(res.stdout)
    for key in ("raters", "group_kappa", "f1_vs_human_majority", "human_majority", "n_items"):
        assert from_service[key] == from_files[key], key
    assert ({(p["a"], p["b"]): p["kappa"] for p in from_service["pairwise_kappa"]}
            == {(p["a"], p["b"]): p["kappa"] for p in from_files["pairwise_kappa"]})
    # the CSV export reads the same
    csv_rep = api.relevance(export=[export / "ratings.csv"], items=ITEMS, model=[VOTES], n_resamples=50)
    assert csv_rep["f1_vs_human_majority"] == from_files["f1_vs_human_majority"]


def test_service_export_lines_that_do_not_line_up(tmp_path: Path) -> None:
    rows = [{"item": "0::1", "rater": "x", "label": True, "group": "human"},
            {"item": "0::9", "rater": "x", "label": True, "group": "human"},
            {"item": "77::1", "rater": "x", "label": False, "group": "human"},
            {"item": "1::2", "rater": "x", "label": None, "group": "human"}]
    export = tmp_path / "ratings.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = api.relevance(HUMANS, export=[export], items=ITEMS, min_shared=1, n_resamples=10)
    assert rep["alignment"]["lines_for_unknown_items"] == 2
    assert rep["missing_ratings"] == {"null label": 1, "rating for an unknown task or attribute position": 2}
    assert rep["raters"]["x"]["n"] == 1
    with pytest.raises(ConfigError, match="--export needs --items"):
        api.relevance(export=[export])
    with pytest.raises(ConfigError, match="give stage-2 human labels"):
        api.relevance()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item": "0::1", "rater": "x", "label": 2}) + "\n")
    with pytest.raises(DataError, match="true or false"):
        api.relevance(export=[bad], items=ITEMS)
