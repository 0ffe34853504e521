"""Stage 1 importers (Re-Centering shapes and the annotation service's export), rates, taxonomy; stage-2
baselines (threshold on validation users) and the answer parsers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tailorbench.agreement.ratings import Rating, write_ratings_jsonl
from tailorbench.annotation.tasks import to_ratings
from tailorbench.cli.app import app
from tailorbench.threestage import verbs as api
from tailorbench.threestage.extraction.categorise import parse_category
from tailorbench.threestage.extraction.extract import parse_attributes
from tailorbench.threestage.incorporation.judge import parse_rating
from tailorbench.threestage.relevance.judge import parse_yes_no
from tailorbench.threestage.statistics import choose_threshold, split_users
from tests.threestage.helpers import human_rows, write_jsonl

ITEMS = [
    {"index": 0, "user_id": "u1", "attributes": ["a0", "a1", "a2"], "conversations": [[{"role": "user",
     "content": "hi"}]], "extractor": "ex", "source": "real"},
    {"index": 1, "user_id": "u2", "attributes": ["b0", "b1"], "conversations": [], "extractor": "ex",
     "source": "synthetic"},
]


def _task1(name: str, judged: dict[int, list[str]]) -> list[dict[str, object]]:
    return [{"task": "1", "index": i, "attr_judgments": [{"judgment": j, "note": ""} for j in js],
             "missing_attrs": "", "overall_note": "", "flagged": False, "annotator": name} for i, js in judged.items()]


def test_stage1_rates_agreement_and_mismatches(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    a = write_jsonl(tmp_path / "a.jsonl", _task1("a", {0: ["ok", "bad", "bad"], 1: ["ok", "unsure", "ok"], 7: ["ok"]}))
    b = write_jsonl(tmp_path / "b.jsonl", _task1("b", {0: ["ok", "bad", "ok"], 1: ["ok"]}))
    c = write_jsonl(tmp_path / "c.jsonl", _task1("c", {0: ["ok", "unsure", "bad"], 1: ["bad", "unsure"]}))
    tax = write_jsonl(tmp_path / "tax.jsonl", [
        {"index": 0, "user_id": "u1", "attribute": "a1", "category": "overgeneralization", "rater": "h"},
        {"index": 0, "user_id": "u1", "attribute": "a2", "category": None, "rater": "h"},
    ])
    res = CliRunner().invoke(app, ["stages", "report-extraction", "--items", str(items), "--human", str(a), str(b),
                                   str(c), "--taxonomy", str(tax), "--json", "--resamples", "20"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    # majorities: a0 accepted, a1 rejected, a2 rejected, b0 accepted, b1 uncertain
    assert r["by_source"]["real"] == {"n": 3, "no_majority": 0, "accepted": pytest.approx(1 / 3),
                                      "uncertain": 0.0, "rejected": pytest.approx(2 / 3),
                                      "problematic": pytest.approx(2 / 3)}
    assert r["by_source"]["synthetic"]["uncertain"] == 0.5
    al = r["alignment"]
    assert al["judgments_without_attribute"] == 1 and al["attributes_without_judgment"] == 1
    assert al["lines_for_unknown_items"] == 1
    assert r["missing_ratings"] == {"judgment without an attribute": 1,
                                    "judgments for an index missing from the item file": 1}
    assert r["taxonomy"]["h"]["counts"]["overgeneralization"] == 1 and r["taxonomy"]["h"]["invalid"] == 1
    assert r["agreement"]["n_raters"] == 3


def test_stage1_from_annotation_service_export(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    out = tmp_path / "tasks.jsonl"
    assert api.export_tasks(items, out)["tasks"] == 2
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert tasks[0]["id"] == "0" and tasks[0]["attributes"] == ["a0", "a1", "a2"]
    # what the service exports for a submitted attributes form (canonical label -> long format)
    value = {"attributes": {"1": {"judgment": "accepted"}, "2": {"judgment": "rejected"},
                            "3": {"judgment": "rejected"}}}
    rows = [Rating(item, who, label, "human") for who in ("x", "y") for item, label in to_ratings("attributes", "0",
                                                                                                 value)]
    rows.append(Rating("9::1", "x", "accepted", "human"))
    write_ratings_jsonl(rows, tmp_path / "export.jsonl")
    r = api.extraction(items, export=[tmp_path / "export.jsonl"], n_resamples=10)
    assert r["by_source"]["real"]["rejected"] == pytest.approx(2 / 3)
    assert r["alignment"]["lines_for_unknown_items"] == 1


def test_bm25_baseline_threshold_on_validation_users(tmp_path: Path) -> None:
    rows, labels = [], np.zeros((12, 2), dtype=int)
    for i in range(12):
        rows.append({"index": i, "user_id": f"u{i % 7}", "prompt": "plan a vegetarian dinner",
                     "attributes": [f"The user of item {i} has trait 0.", f"The user of item {i} has trait 1."]})
    # make attribute 1 lexically match the prompt and be the relevant one
    for i, row in enumerate(rows):
        row["attributes"][1] = f"The user of item {i} has trait 1 vegetarian dinner."
        labels[i, 1] = 1
    items = write_jsonl(tmp_path / "items.jsonl", rows)
    from tests.threestage import helpers

    humans = []
    for h in ("a", "b", "c"):
        hr = helpers.human_rows(h, labels, 2)
        for r_, row in zip(hr, rows):
            r_["relevance_judgments"][1]["attribute"] = row["attributes"][1]
        humans.append(write_jsonl(tmp_path / f"{h}.jsonl", hr))
    info = api.baseline(items, humans, "bm25", tmp_path / "bm25.jsonl", seed=1)
    assert set(info["validation"]["users"]).isdisjoint(info["test"]["users"])
    assert info["validation"]["f1"] == 1.0
    rep = api.relevance(humans, [tmp_path / "bm25.jsonl"], min_shared=1, n_resamples=10)
    assert rep["f1_vs_human_majority"]["bm25"] == 1.0
    assert rep["raters"]["bm25"]["n"] == 2 * info["test"]["n_items"]


def test_threshold_and_split_helpers() -> None:
    t, f1 = choose_threshold(np.array([0.1, 0.9, 0.5, 0.4]), np.array([False, True, True, False]))
    assert t == 0.5 and f1 == 1.0
    assert split_users(["a", "b", "c", "d"], 0.5, 0) == split_users(["d", "c", "b", "a"], 0.5, 0)
    assert len(split_users(["a", "b", "c", "d"], 0.5, 0)) == 2


def test_parsers_never_guess() -> None:
    assert parse_yes_no("YES") is True and parse_yes_no("No.") is False and parse_yes_no("是") is True
    assert parse_yes_no("A") is None and parse_yes_no("Hello from tiny llama.") is None
    assert parse_rating("4") == 4 and parse_rating("**2**") == 2 and parse_rating("A") is None
    assert parse_rating("10") is None
    assert parse_category("Overgeneralization.") == "overgeneralization"
    assert parse_category("unsupported or other") is None
    assert parse_attributes('{"attributes": [{"text": "The user runs.", "evidence": [1]}]}') == [
        ("The user runs.", [1])]
    assert parse_attributes("- The user runs. [1, 2]") == [("The user runs.", [1, 2])]
    assert parse_attributes("Hello from tiny llama.") is None


def test_relevance_human_rows_reused(tmp_path: Path) -> None:
    """A stage-1 line given to the stage-2 reader is refused with its file and line."""
    p = write_jsonl(tmp_path / "x.jsonl", [*human_rows("a", np.ones((1, 1), dtype=int), 1), {"task": "1"}])
    res = CliRunner().invoke(app, ["stages", "report-relevance", "--human", str(p)])
    assert res.exit_code == 2 and f"{p}:2" in res.output
