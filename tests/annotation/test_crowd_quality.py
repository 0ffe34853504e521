"""Quality at crowd quotas (issue 33, point 4), on SQLite and PostgreSQL: the time per item is the server's
(assignment served -> label), stored beside the page's forgeable `elapsed_ms` on both submission paths; each
annotator's agreement with the leave-self-out majority is given from one shared item on, with a bootstrap
interval; MACE competences come for the whole study."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from tailorbench.annotation import quality, service, studies
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Label, utcnow
from tests.annotation.test_study import _by_ref, _enter, _project


def _items(path: Path, n: int) -> Path:
    rows = [{"id": f"q{i}", "split": "specific", "user_id": "u", "persona": {"age": 30}, "question": f"Q{i}?",
             "answer_a": f"A{i}", "answer_b": f"B{i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _age(db: Database, assignment_id: int, seconds: float) -> None:
    """Make an assignment look served `seconds` ago."""
    with db.session() as s:
        s.execute(update(Assignment).where(Assignment.id == assignment_id)
                  .values(created_at=utcnow() - timedelta(seconds=seconds)))


def _label(db: Database, assignment_id: int) -> Label:
    with db.session() as s:
        label = s.scalar(select(Label).where(Label.assignment_id == assignment_id))
        assert label is not None
        return label


def test_server_timing_beside_the_forged_one(db: Database, app: Any, tmp_path: Path, make_annotator: Any) -> None:
    """A form that claims 1 ms for an item served 7 s before: both the annotator's plain-SQL submission and the
    participant's reference path store the server's 7 s beside the claimed 1 ms, and the median time is the
    server's (before the fix it was the forged 0.0 s)."""
    pid = _project(db, tmp_path, n_regular=6, n=3)
    ann = make_annotator(app, "ann", ["crowd"])
    aid, csrf, _ = ann.page(pid)
    assert aid is not None
    _age(db, aid, 7)
    assert ann.submit(aid, csrf, choice="1", elapsed_ms="1").status_code == 200
    _, secret = studies.create_study(db, "crowd", quota=2, max_participants=2, completion_code="C")
    part = _enter(app, secret, "p1", pid)
    ref, pcsrf = part.current()
    _age(db, _by_ref(db, ref).id, 7)
    assert part.client.post(f"/t/{ref}", data={"csrf": pcsrf, "choice": "1", "elapsed_ms": "1"}).status_code == 200
    for label in (_label(db, aid), _label(db, _by_ref(db, ref).id)):
        assert label.duration_ms == 1 and label.server_ms is not None and 7000 <= label.server_ms < 60_000
    got = quality.annotator_quality(db, pid)
    for name in ("ann", "p1"):
        assert got[name]["median_client_seconds"] == 0.0 and 7.0 <= got[name]["median_seconds"] < 60
    assert service.raw_labels(db, "crowd")[0]["server_ms"] >= 7000


def test_majority_agreement_at_crowd_quotas(db: Database, tmp_path: Path) -> None:
    """Twelve items, N = 3, nine annotators with three items each (a crowd quota): kappa is "n/a" for all (under
    10 shared items), but every annotator has an agreement with the others' majority and its interval, equal to
    a count by hand, and a MACE competence; the one who answers against everyone scores lowest on both."""
    pid = service.create_project(db, "few", "pairwise", 3, gold_every=100)
    service.import_items(db, "few", _items(tmp_path / "items.jsonl", 12))
    rng = random.Random(1)
    truth = {f"q{i}": rng.choice("AB") for i in range(12)}
    given: dict[str, dict[str, str]] = {}
    for k in range(9):
        name = f"w{k}"
        uid, _ = service.add_user(db, name, "annotator", ["few"])
        given[name] = {}
        for _ in range(3):
            with db.session() as s:
                a = service.next_assignment(s, uid, pid)
                assert a is not None and a.item is not None
                ext = a.item[0]
                want = truth[ext] if name != "w4" else ("B" if truth[ext] == "A" else "A")
                given[name][ext] = want
                service.submit(s, uid, a.id, {"choice": "1" if (want == "A") != bool(a.layout.get("swap")) else "2"})
    got = quality.annotator_quality(db, pid)
    for name, mine in given.items():
        q = got[name]
        assert q["kappa"] is None and q["shared_items"] == 3
        hits = units = 0
        for ext, label in mine.items():
            others = [g[ext] for o, g in given.items() if o != name and ext in g]
            top = max(set(others), key=others.count)
            if others.count(top) * 2 > len(others):
                units += 1
                hits += label == top
        assert q["majority_units"] == units
        if units:  # (two others who disagree give no majority: an annotator can have none)
            assert q["majority_agreement"] == pytest.approx(hits / units)
            lo, hi = q["majority_ci"]
            assert lo <= q["majority_agreement"] <= hi
        assert 0.0 <= q["mace_competence"] <= 1.0
    assert sum(q["majority_agreement"] is not None for q in got.values()) >= 7
    assert got["w4"]["majority_agreement"] == 0.0
    assert got["w4"]["mace_competence"] == min(q["mace_competence"] for q in got.values())
