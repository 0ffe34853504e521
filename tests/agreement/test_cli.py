"""`tailor agree` and `tailor tiers` end to end through the real Typer app."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tailorbench.cli.app import app

Writer = Callable[[str, list[dict[str, Any]]], Path]
runner = CliRunner()


def _ratings() -> list[dict[str, Any]]:
    rows = []
    for i in range(20):
        for r in range(4):
            label = ["chosen", "rejected"][(i + (r == 3 and i % 3 == 0)) % 2]
            rows.append({"item": f"c{i}", "rater": f"h{r}", "label": label, "group": "human"})
    return rows


def test_agree_json_is_the_only_stdout(write_jsonl: Writer, tmp_path: Path) -> None:
    humans = write_jsonl("h.jsonl", _ratings())
    preds = [
        {"case_id": f"c{i}", "judge": "j", "setting": "persona", "order": "AB", "choice": "A", "status": "ok"}
        for i in range(20)
    ]
    preds[0]["status"], preds[0]["choice"] = "invalid", None
    write_jsonl("run/predictions.jsonl", preds)
    out = tmp_path / "agree.json"
    res = runner.invoke(
        app, ["agree", str(humans), str(tmp_path / "run"), "--json", "--resamples", "200", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj == json.loads(out.read_text())
    assert obj["n_items"] == 20 and obj["n_raters"] == 5
    assert obj["missing_ratings"] == {"verdict invalid": 1}
    assert {"value", "ci"} <= set(obj["fleiss_kappa"])
    assert {"a", "b", "n", "kappa"} <= set(obj["pairwise_cohen_kappa"][0])
    assert "human-model" in obj["cohen_kappa_by_pair_type"]
    judge = next(v for v in obj["vs_majority"] if v["rater"] == "j@persona")
    assert judge["n"] == 19


def test_agree_table(write_jsonl: Writer) -> None:
    res = runner.invoke(app, ["agree", str(write_jsonl("h.jsonl", _ratings())), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    assert "Fleiss' kappa" in res.stdout and "human-human" in res.stdout


def test_bad_input_exits_2_with_location(write_jsonl: Writer) -> None:
    path = write_jsonl("bad.jsonl", [{"item": "a", "rater": "x", "label": "ok"}, {"item": "a", "label": "ok"}])
    res = runner.invoke(app, ["agree", str(path), "--json"])
    assert res.exit_code == 2
    assert "bad.jsonl:2" in res.stderr and "rater" in res.stderr
    assert res.stdout == ""
    res = runner.invoke(app, ["agree", str(write_jsonl("ok.jsonl", _ratings())), "--label-order", "chosen"])
    assert res.exit_code == 2 and "not in --label-order" in res.stderr


def test_tiers_end_to_end(write_jsonl: Writer, tmp_path: Path) -> None:
    items = [
        {"id": f"c{i}", "split": "specific", "user_id": "u", "question": "q?", "answer_a": "a", "answer_b": "b"}
        for i in range(20)
    ]
    ab = [{"item": r["item"], "rater": r["rater"], "label": "A" if r["label"] == "chosen" else "B"} for r in _ratings()]
    out = tmp_path / "bench.jsonl"
    args = ["tiers", str(write_jsonl("ab.jsonl", ab)), "--items", str(write_jsonl("items.jsonl", items))]
    res = runner.invoke(app, [*args, "--out", str(out), "--json", "--resamples", "100"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["n_cases"] == len(out.read_text().splitlines()) == 20
    assert summary["tiers"]["easy"]["n"] + summary["tiers"]["hard"]["n"] == 20
    res = runner.invoke(app, [*args, "--out", str(out), "--easy", "0.2"])
    assert res.exit_code == 2 and "thresholds" in res.stderr
