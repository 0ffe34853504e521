"""Crowd studies' exact rules under concurrency and with hostile input (issue 33), on SQLite and PostgreSQL: one
participant racing submits and page loads from several connections never holds more than one open assignment
and never labels past the quota; text a database refuses (NUL) is a 422 naming the field; a participant whose
time ran out is told "Time is up" on every route; the platform's study and session ids are checked on resume."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from tailorbench.annotation import studies
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Label, Participant, utcnow
from tailorbench.annotation.web.security import COOKIE
from tests.annotation.conftest import CSRF_RE
from tests.annotation.test_study import REF_RE, _consent_page, _enter, _participant, _project, _query


def _open_count(db: Database, user_id: int) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(Assignment).where(
            Assignment.user_id == user_id, Assignment.done.is_(False))) or 0


def test_one_participant_racing_submits_and_page_loads(db: Database, app: Any, tmp_path: Path) -> None:
    """Five connections of one participant, each loading the task page and submitting what it shows as fast as
    it can, while a sixth loads the page: the quota (10) is exact, and there is never more than one open
    assignment (before the fix, PostgreSQL held up to 5 and ended at 12 labels)."""
    pid = _project(db, tmp_path, n_regular=40, n=3)
    _, secret = studies.create_study(db, "crowd", quota=10, max_participants=5, completion_code="C")
    part = _enter(app, secret, "racer", pid)
    user_id = _participant(db, "racer").user_id
    cookie = part.client.cookies.get(COOKIE)
    assert cookie
    stop = threading.Event()
    most_open = [0]
    errors: list[str] = []

    def client() -> TestClient:
        c = TestClient(app)
        c.cookies.set(COOKIE, cookie)
        return c

    def worker(submits: bool) -> None:
        c = client()
        for _ in range(60):
            if stop.is_set():
                return
            r = c.get(f"/p/{pid}", follow_redirects=False)
            if r.status_code == 303:  # done: sent to the completion page
                stop.set()
                return
            if r.status_code != 200:
                errors.append(f"GET {r.status_code}")
                return
            m, csrf = REF_RE.search(r.text), CSRF_RE.search(r.text)
            if submits and m is not None and csrf is not None:
                s = c.post(f"/t/{m.group(1)}", data={"csrf": csrf.group(1), "choice": "1"}, follow_redirects=False)
                if s.status_code not in (200, 303):
                    errors.append(f"POST {s.status_code}")

    def watch() -> None:
        while not stop.is_set():
            most_open[0] = max(most_open[0], _open_count(db, user_id))

    threads = [threading.Thread(target=worker, args=(i < 5,)) for i in range(6)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert not errors, errors
    with db.session() as s:
        labels = s.scalar(select(func.count()).select_from(Label).where(Label.user_id == user_id))
        made = s.scalar(select(func.count()).select_from(Assignment).where(Assignment.user_id == user_id))
    assert (labels, made) == (10, 10)
    assert most_open[0] <= 1
    assert _participant(db, "racer").status == "finished"


def test_nul_in_a_text_field_is_a_422_naming_it(db: Database, app: Any, tmp_path: Path) -> None:
    """PostgreSQL refuses NUL in text (before the fix: a 500 and a reset connection); both databases now answer
    422 naming the field, store nothing, and the participant goes on."""
    pid = _project(db, tmp_path)
    _, secret = studies.create_study(db, "crowd", quota=3, max_participants=2, completion_code="C")
    part = _enter(app, secret, "nul", pid)
    aid, csrf = part.current()
    r = part.client.post(f"/t/{aid}", data={"csrf": csrf, "choice": "1", "note": "a\x00b"})
    assert r.status_code == 422 and "note" in r.text
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0
    assert part.submit(aid, csrf).status_code == 200  # the same item again, stored once
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 1


def test_time_is_up_on_every_route(db: Database, app: Any, tmp_path: Path) -> None:
    """Past the time limit (released or not yet), the task page, the assignment page and a submit all say "Time
    is up" (410), and the late submit stores nothing (before the fix: 404 "No such assignment")."""
    pid = _project(db, tmp_path, n_regular=4)
    sid, secret = studies.create_study(db, "crowd", quota=3, max_participants=2, completion_code="C",
                                       time_limit_min=30)
    part = _enter(app, secret, "late", pid)
    aid, csrf = part.current()
    with db.session() as s:
        s.execute(update(Participant).values(started_at=utcnow() - timedelta(minutes=31)))
    # not released yet: the submit is refused, nothing stored
    r = part.submit(aid, csrf)
    assert r.status_code == 410 and "Time is up" in r.text
    assert studies.release(db, sid)["released"] == 0  # (the refused submit released them already)
    for r in (part.page(), part.client.get(f"/t/{aid}"), part.submit(aid, csrf)):
        assert r.status_code == 410 and "Time is up" in r.text
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0
    assert _participant(db, "late").status == "timed_out"


def test_resume_checks_the_platform_study_id(db: Database, app: Any, tmp_path: Path) -> None:
    """The same browser with another platform study id is refused (it is another study's link, or a forged
    one); a new session id is kept (Prolific gives one per attempt)."""
    pid = _project(db, tmp_path)
    _, secret = studies.create_study(db, "crowd", quota=3, max_participants=2, completion_code="C")
    part = _enter(app, secret, "p1", pid)
    r = _consent_page(part.client, secret, _query("p1", study="OTHER"))
    assert r.status_code == 403 and "study" in r.text.lower()
    r = _consent_page(part.client, secret, _query("p1", session="sess-new"))
    assert r.status_code == 303 and r.headers["location"] == f"/p/{pid}"
    assert _participant(db, "p1").external_session_id == "sess-new"
    r = _consent_page(part.client, secret, _query("p1", session="bad session!"))
    assert r.status_code == 400
