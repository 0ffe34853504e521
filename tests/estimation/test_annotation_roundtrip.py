"""The plan's inclusion probabilities travel through the real annotation service: `tailor estimate sample`'s
file imported into a pairwise project (SQLite), labelled by three annotators, exported, and read back by
`tailor estimate --labels EXPORT` with no --sample and no --assume-uniform."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailorbench import api


def test_plan_survives_import_and_export(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy", reason="the [web] extra runs the annotation service")
    from tailorbench.annotation import service
    from tailorbench.annotation.db import Database, resolve_url

    runs = tmp_path / "runs"
    for judge in ("longer", "shorter"):
        api.eval("demo", judge=judge, out=runs / judge, n_boot=20)
    plan = tmp_path / "sample.jsonl"
    api.estimate_sample("demo", plan, sampling="stratified", share=0.5, seed=1)
    db = Database(resolve_url(None, tmp_path / "annotation"))
    try:
        service.create_project(db, "study", "pairwise", 3)
        service.import_items(db, "study", plan)
        uids = {name: service.add_user(db, name, projects=["study"])[0] for name in ("ann", "bob", "cy")}
        pid = next(p["id"] for p in service.list_projects(db) if p["name"] == "study")
        for k, uid in enumerate(uids.values()):
            while True:
                with db.session() as s:
                    a = service.next_assignment(s, uid, pid)
                    if a is None:
                        break
                    want_a = k < 2  # two of three pick the source's chosen answer (A): majority A everywhere
                    shown = "1" if want_a != bool(a.layout.get("swap")) else "2"
                    service.submit(s, uid, a.id, {"choice": shown})
        service.export(db, "study", tmp_path / "export")
    finally:
        db.dispose()
    items = [json.loads(line) for line in (tmp_path / "export" / "items.jsonl").read_text().splitlines()]
    assert all(it["meta"]["estimate_plan"]["sampling"] == "stratified" for it in items)
    result = api.estimate(runs / "longer", runs / "shorter", tmp_path / "export")
    assert result.design == "stratified" and not result.assumed_uniform and result.n_labels == 36
    assert any("raters per labelled item: 3-3" in note for note in result.notes)
    # majority A = chosen everywhere: the human-only estimate of a tier is longer's accuracy on its sampled cases
    from tailorbench.estimation.items import read_items

    read = read_items(runs / "longer", runs / "shorter")
    sampled = {it["id"] for it in items}
    cell = result.cells[0]
    split, tier = cell["cell"].split("/")
    scores = [s for c, s, sp, t in zip(read.ids, read.system[:, 0], read.split, read.tier)
              if c in sampled and sp == split and t == tier]
    assert cell["human_only"]["estimate"] == pytest.approx(sum(scores) / len(scores))


def test_sample_creates_the_project_directly(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy", reason="the [web] extra runs the annotation service")
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    args = ["estimate", "sample", "--data", "demo", "--share", "0.25", "--out", str(tmp_path / "s.jsonl"),
            "--project", "study", "--n", "2", "--dir", str(tmp_path / "annotation"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["project"]["name"] == "study" and info["project"]["items"] == info["sampled"] == 18
    projects = api.annotate.list_projects(tmp_path / "annotation")
    assert [p.to_dict()["project"] for p in projects] == ["study"]
    again = CliRunner().invoke(app, [*args[:7], str(tmp_path / "t.jsonl"), *args[8:]])
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert not (tmp_path / "t.jsonl").exists()
