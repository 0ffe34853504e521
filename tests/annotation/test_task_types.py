"""A task type registered from outside tailorbench's code: a 3-way choice with its own import schema, page
(a template in its own folder), form validation, random option order and long-format export, served by the real
app on SQLite and PostgreSQL with no line of the service changed. Also: the built-ins are in the registry and
an unknown task type names the registered ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Label as LabelRow
from tailorbench.annotation.tasks import TASK_TYPES, FormError, task_type
from tailorbench.annotation.web import create_app
from tailorbench.errors import ConfigError, DataError
from tests.annotation.conftest import CSRF_RE, DATA, login
from tests.plugins.demo_plugin.tb_demo_plugin import LETTERS, ThreeWay


# the plugin package's task type (tests/plugins/demo_plugin), registered here in process; the plugin test
# installs the same package and finds it by entry point
@pytest.fixture
def three_way() -> Iterator[type[ThreeWay]]:
    TASK_TYPES.add("three_way", ThreeWay)
    yield ThreeWay
    TASK_TYPES.remove("three_way")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ITEMS = [
    {"id": "q1", "question": "Best tea for a cold evening?", "options": ["Sencha", "Chai <b>spiced</b>", "Mint"]},
    {"id": "q2", "question": "Best dog for a flat?", "options": ["Pug", "Husky", "Great Dane"]},
    {"id": "q3", "question": "Best first language?", "options": ["Python", "C", "Haskell"]},
    {"id": "g1", "question": "Which is a fruit?", "options": ["Apple", "Chair", "Cloud"], "gold": "A"},
]


def test_builtins_are_registered_and_unknown_names_list_them() -> None:
    assert {"pairwise", "attributes", "relevance", "ab_rating"} <= set(TASK_TYPES.names())
    assert task_type("pairwise").random_order and not task_type("relevance").random_order
    assert TASK_TYPES.source("pairwise") == "builtin"
    with pytest.raises(ConfigError, match=r"unknown task type 'ranking'; known: ab_rating, attributes, pairwise"):
        task_type("ranking")


def test_a_registered_task_type_imports_serves_validates_and_exports(
        db: Database, three_way: type[ThreeWay], make_annotator: Any, tmp_path: Path) -> None:
    assert "three_way" in TASK_TYPES.names()
    pid = service.create_project(db, "tw", "three_way", 2, "Pick the best option.", gold_every=2)

    # import: the task type's schema, with file, line and field on a bad row; nothing stored by a bad file
    bad = _write(tmp_path / "bad.jsonl", [ITEMS[0], {"id": "x", "question": "q", "options": ["a", "b"]}])
    with pytest.raises(DataError, match=r"bad\.jsonl:2.*options.*three non-empty strings"):
        service.import_items(db, "tw", bad)
    bad_gold = _write(tmp_path / "bad_gold.jsonl", [{**ITEMS[3], "gold": "D"}])
    with pytest.raises(DataError, match=r"bad_gold\.jsonl:1.*gold"):
        service.import_items(db, "tw", bad_gold)
    with pytest.raises(DataError, match="pairwise projects only"):
        service.import_items(db, "tw", DATA / "paircase.jsonl", "paircase")
    good = _write(tmp_path / "tw.jsonl", ITEMS)
    assert service.import_items(db, "tw", good) == {"project": "tw", "format": "items", "items": 3, "gold_items": 1}

    # the page: the task type's own template, options in the assignment's order, model text escaped
    app = create_app(db)
    ann = [make_annotator(app, name, ["tw"]) for name in ("ann", "bob")]
    aid, csrf, html = ann[0].page(pid)
    assert aid is not None
    assert 'data-task="three_way"' in html and "Three-way choice" in html and "Pick the best option." in html
    assert "Chai &lt;b&gt;spiced&lt;/b&gt;" in html and "<b>spiced</b>" not in html
    assert html.count('name="choice"') == 3

    # validation: a bad form is a 422 with the reason and stores nothing (the plain-SQL submission path)
    r = ann[0].submit(aid, csrf, choice="4")
    assert r.status_code == 422 and "option: choose one of 1, 2, 3" in r.text
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(LabelRow)) == 0
    with pytest.raises(FormError):
        three_way().parse_form({}, {"order": [0, 1, 2]}, {})

    # label everything: each POST is answered with the next task page of this task type
    for a in ann:
        aid, csrf, html = a.page(pid)
        n = 0
        while aid is not None:
            r = a.submit(aid, csrf, choice="1", note="ok")
            assert r.status_code == 200, r.text
            html = r.text
            m = CSRF_RE.search(html)
            assert m is not None
            csrf = m.group(1)
            aid = int(html.split('action="/a/')[1].split('"')[0]) if 'action="/a/' in html else None
            n += 1
        assert n == 4  # 3 regular items + the gold item

    # stored canonically: "1" is the first option shown, whatever the order
    labels = service.raw_labels(db, "tw")
    assert len(labels) == 8
    for rec in labels:
        assert rec["task_type"] == "three_way" and rec["value"] == {"choice": rec["shown_order"][0]}
        assert sorted(rec["shown_order"]) == list(LETTERS)
    prog = service.progress(db, "tw")
    assert prog["labels_done"] == 6 and all(u["gold_done"] == 1 for u in prog["annotators"])

    # export: long-format rows, gold left out; no pairwise-only files
    out = tmp_path / "export"
    summary = service.export(db, "tw", out)
    assert summary["files"] == ["ratings.jsonl", "ratings.csv", "items.jsonl", "labels.jsonl"]
    rows = [json.loads(line) for line in (out / "ratings.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6 and {r["item"] for r in rows} == {"q1", "q2", "q3"}
    by_key = {(r["rater"], r["item"]): r["label"] for r in rows}
    for rec in labels:
        if rec["item"] != "g1":
            assert by_key[(rec["rater"], rec["item"])] == rec["value"]["choice"]
    assert all(set(r) == {"item", "rater", "label", "group"} and r["group"] == "human" for r in rows)
    assert (out / "ratings.csv").read_text(encoding="utf-8").startswith("item,rater,label,group")
    assert not (out / "benchmark.jsonl").exists()

    # the admin pages know it too
    _, token = service.add_user(db, "boss", "admin")
    admin = login(app, token)
    page = admin.get(f"/admin/p/{pid}").text
    assert "Three-way choice" in page and "benchmark.jsonl" not in page
    assert admin.get(f"/admin/p/{pid}/export/ratings.jsonl").text.count("\n") == 6
    assert admin.get(f"/admin/p/{pid}/export/benchmark.jsonl").status_code == 404
    assert 'value="three_way"' in admin.get("/admin").text
