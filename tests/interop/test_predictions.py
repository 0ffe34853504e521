"""Judge verdicts exported beside the items: a run that judged more cases than are exported, and a judge's two
answer orders, as Label Studio predictions and Argilla suggestions."""

from __future__ import annotations

import json
from pathlib import Path

from tailorbench.interop import export_items
from tests.interop.conftest import items_file, read_json, shown, unit_key


def _run_dir(tmp_path: Path) -> Path:
    """A run directory that judged it0..it3 in both orders and two cases that are not exported."""
    run = tmp_path / "run"
    run.mkdir()
    rows = []
    for case in ["it0", "it1", "it2", "it3", "other-1", "other-2"]:
        for order in ("AB", "BA"):
            # the chosen answer (A in order AB, B in BA) but in it1's BA, where the judge picked the other one
            choice = "A" if order == "AB" or (case, order) == ("it1", "BA") else "B"
            rows.append({"case_id": case, "judge": "longer", "setting": "persona", "order": order, "choice": choice,
                         "status": "ok"})
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run


def test_a_run_that_judged_more_is_exported_and_the_others_counted(tmp_path: Path) -> None:
    summary = export_items(items_file("pairwise"), "pairwise", "label-studio", tmp_path / "ls", seed=3,
                           predictions=[_run_dir(tmp_path)])
    assert summary["predictions"] == 8 and summary["predictions_not_exported"] == 4
    key = unit_key(tmp_path / "ls")
    for t in read_json(tmp_path / "ls" / "tasks.json"):
        preds = t["predictions"]
        unit = key[t["data"]["tb_ref"]]
        assert [p["model_version"] for p in preds] == ["longer@persona/AB", "longer@persona/BA"]
        want = ["A", "A" if unit["tb_unit"] != "it1" else "B"]
        assert [p["result"][0]["value"]["selected"] for p in preds] == [
            shown("pairwise", unit["tb_swap"], w) for w in want]


def test_argilla_keeps_both_orders_in_its_one_suggestion(tmp_path: Path) -> None:
    summary = export_items(items_file("pairwise"), "pairwise", "argilla", tmp_path / "rg", seed=3,
                           predictions=[_run_dir(tmp_path)])
    assert summary["predictions_not_exported"] == 4
    key = unit_key(tmp_path / "rg")
    for record in read_json(tmp_path / "rg" / "records.json"):
        suggestion = record["suggestions"]["choice"]
        unit = key[record["metadata"]["tb_ref"]]
        assert suggestion["agent"] == "longer@persona/AB, longer@persona/BA"
        assert suggestion["value"] == shown("pairwise", unit["tb_swap"], "A")
        assert suggestion["score"] == (0.5 if unit["tb_unit"] == "it1" else 1.0)
