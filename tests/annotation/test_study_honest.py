"""Crowd studies give codes only for work and keep gold items unguessable (issue 33, point 3), on SQLite and
PostgreSQL: when no item is left the link admits nobody ("No items left", the researcher sees "items
exhausted") and a participant who got in but found nothing gets no code; `study create` refuses settings under
which the gold items or the screen-out rule can never apply, saying why; each participant's gold items come at
random places from the study's recorded seed; a participant's page names no item, tier or gold status."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from tailorbench.annotation import service, studies
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Study
from tailorbench.cli.app import app as cli_app
from tailorbench.errors import ConfigError
from tests.annotation.test_study import (
    DATA,
    _by_ref,
    _consent_page,
    _enter,
    _label_until_done,
    _participant,
    _project,
    _query,
)


def test_no_code_without_work(db: Database, app: Any, tmp_path: Path) -> None:
    """Two items, N = 1: the first participant labels both (fewer than the quota: a code for the work done);
    someone who entered meanwhile finds nothing and gets no code (before the fix: redirected straight to the
    completion code with 0 labels); a newcomer is refused at the link, and the study reads "items exhausted"."""
    pid = _project(db, tmp_path, n_regular=2, n=1)
    sid, secret = studies.create_study(db, "crowd", quota=5, max_participants=5, completion_code="PAID")
    first = _enter(app, secret, "first", pid)
    late = _enter(app, secret, "late", pid)  # in while items are left, but takes none yet
    n, last = _label_until_done(first)
    assert n == 2 and 'id="completion-code">PAID<' in last.text  # the code on the page too, with a copy button
    assert 'id="copy-code"' in last.text
    r = late.page()
    assert r.status_code == 410 and "No items left" in r.text and "PAID" not in r.text
    assert _participant(db, "late").status == "no_items"
    done = late.client.get("/s/complete", follow_redirects=False)  # no code from the completion route either
    assert done.status_code == 303 and "PAID" not in done.headers["location"]
    r = _consent_page(TestClient(app), secret, _query("newcomer"))
    assert r.status_code == 410 and "No items left" in r.text
    row = studies.list_studies(db, sid)[0]
    assert row["state"] == "items exhausted" and row["items_left"] == 0
    assert row["participants"]["no_items"] == 1 and row["participants"]["finished"] == 1


@pytest.mark.parametrize(("quota", "gold_every", "n_gold", "after", "why"), [
    (10, 5, 3, 2, "10 // 6 = 1 gold item(s)"),  # the settings: one gold item each, the rule needs 2
    (10, 5, 0, 2, "no gold items"),
    (20, 3, 1, 2, "at least 2 gold items"),  # 5 blocks, but one gold item in the project
    (5, 5, 3, None, "would never be shown"),  # gold items and no room for one in the quota
])
def test_create_refuses_rules_that_never_apply(db: Database, tmp_path: Path, quota: int, gold_every: int,
                                               n_gold: int, after: int | None, why: str) -> None:
    _project(db, tmp_path, n_regular=30, n_gold=n_gold, gold_every=gold_every)
    screen = {"screenout_code": "OUT", "screenout_gold_below": 0.5, "screenout_after_gold": after} if after else {}
    with pytest.raises(ConfigError, match="never") as got:
        studies.create_study(db, "crowd", quota=quota, max_participants=5, completion_code="C", **screen)
    assert why in str(got.value)
    with db.session() as s:
        assert s.scalar(select(Study.id)) is None


def test_create_accepts_reachable_rules_and_the_cli_says_why(db_url: str, tmp_path: Path) -> None:
    store = Database(db_url)
    _project(store, tmp_path, n_regular=30, n_gold=3, gold_every=5)
    sid, _ = studies.create_study(store, "crowd", quota=12, max_participants=5, completion_code="C",
                                  screenout_code="OUT", screenout_gold_below=0.5, screenout_after_gold=2)
    with store.session() as s:
        study = s.get(Study, sid)
        assert study is not None and study.gold_seed is not None  # the seed of the gold schedules, recorded
    store.dispose()
    r = CliRunner().invoke(cli_app, ["annotate", "crowd", "create", "crowd", "--quota", "10", "--max-participants",
                                     "5", "--completion-code", "C", "--screenout-code", "OUT",
                                     "--screenout-gold-below", "0.5", "--db", db_url])
    assert r.exit_code == 2, r.output
    assert "can never be reached" in r.output and "--quota 12 or more" in r.output


def test_gold_at_random_places_from_the_recorded_seed(db: Database, tmp_path: Path) -> None:
    """Eight participants, a gold item in each block of 3 of a quota of 9: the gold items and their places differ
    between participants (before the fix all got the same first gold item at the same place), and each
    participant's are those `gold_plan` gives for the study's recorded seed."""
    pid = _project(db, tmp_path, n_regular=60, n_gold=6, n=8, gold_every=2)
    sid, secret = studies.create_study(db, "crowd", quota=9, max_participants=10, completion_code="C")
    with db.session() as s:
        seed = s.get(Study, sid).gold_seed  # type: ignore[union-attr]
        gold_ids = s.scalars(select(Item.id).where(Item.is_gold.is_(True))).all()
    first_gold: Counter[tuple[int, int]] = Counter()
    for k in range(8):
        ids = studies.EntryParams(f"p{k}", "S", "x")
        studies.enter(db, secret, ids)
        part = _participant(db, f"p{k}")
        shown: list[tuple[int, bool]] = []
        while True:
            with db.session() as s:
                step = studies.next_assignment(s, part.user_id, pid)
                if not isinstance(step, service.Current):
                    break
                a = s.get(Assignment, step.id)
                assert a is not None
                shown.append((a.item_id, a.is_gold))
                service.submit(s, part.user_id, step.id, {"choice": "1"})
        assert len(shown) == 9
        plan = {i: item for i, (item, gold) in enumerate(shown) if gold}
        assert len(plan) == 3 and all(pos // 3 == block for block, pos in enumerate(sorted(plan)))
        assert plan == studies.gold_plan(seed or 0, part.id, 9, 2, gold_ids)
        first_gold[min(plan.items())] += 1
    assert len(first_gold) >= 4  # 8 participants: the same first gold item at the same place for all is gone


def test_a_participants_page_names_no_item(db: Database, app: Any, tmp_path: Path) -> None:
    """Item ids that carry the tier (as the demo's do) and gold items: a participant's task pages show neither,
    and their URLs carry an opaque reference, not an assignment id."""
    lines = (DATA / "paircase.jsonl").read_text(encoding="utf-8").splitlines()
    regular, gold = json.loads(lines[0]), json.loads(lines[5])
    rows = [{**regular, "id": f"demo/specific/tier7/{i:02d}"} for i in range(4)]
    rows += [{**gold, "id": f"demo/gold/tier7/{i:02d}"} for i in range(2)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pid = service.create_project(db, "crowd", "pairwise", 1, "Pick one.", 1)
    service.import_items(db, "crowd", tmp_path / "items.jsonl")
    _, secret = studies.create_study(db, "crowd", quota=4, max_participants=2, completion_code="C")
    part = _enter(app, secret, "p1", pid)
    seen_gold = False
    for _ in range(4):
        r = part.page()
        if r.status_code != 200:
            break
        ref, csrf = part.current()
        a = _by_ref(db, ref)
        seen_gold |= a.is_gold
        for page in (r.text, part.client.get(f"/t/{ref}").text):
            assert "demo/" not in page and "tier7" not in page and "gold" not in page.lower()
            assert f"/a/{a.id}" not in page and "Log out" not in page and 'id="later-link"' in page
        later = part.client.get("/s/later")  # "continue later": the place is kept, the session too
        assert later.status_code == 200 and "kept until" in later.text
        assert part.current()[0] == ref
        part.submit(ref, csrf)
    assert seen_gold


def test_the_researchers_view(db_url: str, tmp_path: Path) -> None:
    """`annotate progress` is a table (before: one long JSON line of annotators) with one "done" (gold
    included, as the quality block counts it); `study participants` gives each participant's state, items,
    gold score, time and code; `study link` prints the link again (before: shown once); the admin's study
    pages show the same figures."""
    from tailorbench.annotation.web import create_app
    from tests.annotation.conftest import login

    store = Database(db_url)
    pid = _project(store, tmp_path, n_regular=6, n_gold=2, n=1, gold_every=1)
    sid, secret = studies.create_study(store, "crowd", quota=4, max_participants=5, completion_code="PAID",
                                       screenout_code="OUT", screenout_gold_below=0.5, screenout_after_gold=1)
    app = create_app(store)
    good = _enter(app, secret, "good", pid)
    _label_until_done(good)  # gold answer A is shown as 1 unless swapped: "1" is right half the time
    _enter(app, secret, "idle", pid)
    runner = CliRunner()
    r = runner.invoke(cli_app, ["annotate", "progress", "crowd", "--db", db_url])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    header = next(line for line in lines if line.startswith("annotator"))
    assert "done" in header and "majority agreement" in header and "MACE" in header
    row = next(line for line in lines if line.startswith("good "))
    done = service.progress(store, "crowd")["annotators"]
    mine = next(a for a in done if a["annotator"] == "good")
    assert mine["done"] == len(service.raw_labels(store, "crowd")) and row.split()[1] == str(mine["done"])
    r = runner.invoke(cli_app, ["annotate", "progress", "crowd", "--json", "--db", db_url])
    assert r.exit_code == 0 and json.loads(r.output)["annotators"]
    r = runner.invoke(cli_app, ["annotate", "crowd", "participants", str(sid), "--db", db_url])
    assert r.exit_code == 0, r.output
    table = {line.split()[0]: line for line in r.output.splitlines()[1:]}
    part = _participant(store, "good")
    code = "OUT" if part.status == "screened_out" else "PAID"
    assert table["good"].split()[-1] == code and "idle" in table and "active" in table["idle"]
    rows = json.loads(runner.invoke(cli_app, ["annotate", "crowd", "participants", str(sid), "--json", "--db",
                                              db_url]).output)
    assert {r["external_id"]: r["status"] for r in rows} == {"good": part.status, "idle": "active"}
    r = runner.invoke(cli_app, ["annotate", "crowd", "link", str(sid), "--base-url", "https://h.example",
                                "--json", "--db", db_url])
    assert r.exit_code == 0 and json.loads(r.output)["link"].startswith(f"https://h.example/s/{secret}?")
    _, token = service.add_user(store, "boss", "admin")
    admin = login(app, token)
    index = admin.get("/admin/studies")
    assert index.status_code == 200 and f"/s/{secret}?" in index.text and 'class="state">open<' in index.text
    page = admin.get(f"/admin/studies/{sid}")
    assert page.status_code == 200 and 'data-participant="good"' in page.text and f"<td>{code}</td>" in page.text
    assert admin.get("/admin/studies/999").status_code == 404
    assert good.client.get("/admin/studies").status_code == 403
    store.dispose()
