"""Crowd studies (annotate/studies.py, web/study.py) over HTTP on SQLite and PostgreSQL: the study link's consent
page and entry, the quota, the cap on participants, resuming, the time limit's release, the completion and
screen-out redirects, configurable parameter names, the platform ids in the exports, and what a leaked study
link does not allow; and the `tailor annotate crowd` verbs."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from tailorbench.annotation import service, studies
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Label, Participant, User, utcnow
from tailorbench.annotation.web.security import COOKIE
from tailorbench.cli.app import app as cli_app
from tests.annotation.conftest import ASSIGNMENT_RE, CSRF_RE, DATA

NONCE_RE = re.compile(r'name="nonce" value="([^"]+)"')
#: a participant's form posts to their assignment's opaque reference, never to an id
REF_RE = re.compile(r'action="/t/([A-Za-z0-9_-]+)"')
DONE = "https://app.prolific.com/submissions/complete?cc="


def _items(path: Path, n_regular: int, n_gold: int) -> Path:
    """A pairwise items file: `n_regular` items and `n_gold` gold ones (gold answer A), from the test data."""
    lines = (DATA / "paircase.jsonl").read_text(encoding="utf-8").splitlines()
    regular, gold = json.loads(lines[0]), json.loads(lines[5])
    rows = [{**regular, "id": f"r{i}"} for i in range(n_regular)]
    rows += [{**gold, "id": f"g{i}"} for i in range(n_gold)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _project(db: Database, tmp_path: Path, n_regular: int = 8, n_gold: int = 0, n: int = 1,
             gold_every: int = 100) -> int:
    pid = service.create_project(db, "crowd", "pairwise", n, "Pick the answer that fits the person.", gold_every)
    service.import_items(db, "crowd", _items(tmp_path / "items.jsonl", n_regular, n_gold))
    return pid


def _query(pid: str, params: tuple[str, str, str] = studies.PROLIFIC_PARAMS, study: str = "STUDY1",
           session: str | None = None) -> str:
    return urlencode({params[0]: pid, params[1]: study, params[2]: session or f"sess-{pid}"})


class Participant_:
    """A browser of one participant: a TestClient that entered the study through its link."""

    def __init__(self, client: TestClient, project_id: int) -> None:
        self.client = client
        self.project_id = project_id

    def page(self) -> Any:
        return self.client.get(f"/p/{self.project_id}", follow_redirects=False)

    def current(self) -> tuple[str, str]:
        """(the opaque reference of the assignment on screen, the CSRF token)."""
        r = self.page()
        assert r.status_code == 200, r.text
        m, csrf = REF_RE.search(r.text), CSRF_RE.search(r.text)
        assert m is not None and csrf is not None, r.text
        assert ASSIGNMENT_RE.search(r.text) is None
        return m.group(1), csrf.group(1)

    def submit(self, ref: str, csrf: str, choice: str = "1") -> Any:
        return self.client.post(f"/t/{ref}", data={"csrf": csrf, "choice": choice}, follow_redirects=False)


def _consent_page(client: TestClient, secret: str, query: str) -> Any:
    return client.get(f"/s/{secret}?{query}", follow_redirects=False)


def _enter(app: Any, secret: str, pid: str, project_id: int, **kw: Any) -> Participant_:
    """Open the study link as a new participant and accept the consent page."""
    client = TestClient(app)
    query = _query(pid, **kw)
    r = _consent_page(client, secret, query)
    assert r.status_code == 200 and 'id="consent-form"' in r.text, r.text
    nonce = NONCE_RE.search(r.text)
    assert nonce is not None
    r = client.post(f"/s/{secret}?{query}", data={"nonce": nonce.group(1), "consent": "yes"},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{project_id}", r.text
    return Participant_(client, project_id)


def _left(r: Any) -> bool:
    """Whether an answer sends the participant away: the page after their last submission (it refreshes to the
    completion page), or any answer but a task page."""
    return r.status_code != 200 or 'id="study-complete"' in r.text


def _label_until_done(part: Participant_, limit: int = 50) -> tuple[int, Any]:
    """Label items until the service sends the participant away; (items labelled, the final answer)."""
    for n in range(limit):
        r = part.page()
        if _left(r):
            return n, r
        aid, csrf = part.current()
        r = part.submit(aid, csrf)
        if _left(r):
            return n + 1, r
    raise AssertionError("never done")


def _completion(part: Participant_, last: Any) -> str:
    """Where the page after the last submission leads: /s/complete, and from there the platform's URL."""
    assert last.status_code == 200 and '<meta http-equiv="refresh" content="0;url=/s/complete">' in last.text
    r = part.client.get("/s/complete", follow_redirects=False)
    assert r.status_code == 303
    return str(r.headers["location"])


def _by_ref(db: Database, ref: str) -> Assignment:
    with db.session() as s:
        a = s.scalar(select(Assignment).where(Assignment.ref == ref))
        assert a is not None
        return a


def _participant(db: Database, external_id: str) -> Participant:
    with db.session() as s:
        part = s.scalar(select(Participant).where(Participant.external_id == external_id))
        assert part is not None
        return part


def test_quota_completion_and_consent(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path)
    sid, secret = studies.create_study(db, "crowd", quota=3, max_participants=5, completion_code="CODE-1")
    part = _enter(app, secret, "5f0c0ffee0c0ffee0c0ffee0", pid)
    aid, _ = part.current()
    for page in (part.page(), part.client.get(f"/t/{aid}")):  # their place counts down from the quota
        assert 'id="place-total">3<' in page.text and 'id="place-remaining">2<' in page.text
    n, last = _label_until_done(part)
    assert n == 3  # the quota, though 8 items are there
    # the last submission answers with a page that moves on to the completion page, and that to the platform
    assert _completion(part, last) == DONE + "CODE-1"
    # coming back later: the same redirect, never another item
    assert part.page().headers["location"] == "/s/complete"
    row = _participant(db, "5f0c0ffee0c0ffee0c0ffee0")
    assert row.status == "finished" and row.consent_at is not None and row.finished_at is not None
    assert (row.external_study_id, row.external_session_id) == ("STUDY1", "sess-5f0c0ffee0c0ffee0c0ffee0")
    with db.session() as s:
        user = s.get(User, row.user_id)
        assert user is not None and user.role == studies.ROLE and user.name == "5f0c0ffee0c0ffee0c0ffee0"
        assert s.scalar(select(func.count()).select_from(Label).where(Label.user_id == row.user_id)) == 3
        assert s.scalar(select(func.count()).select_from(Assignment).where(Assignment.user_id == row.user_id)) == 3
    assert studies.list_studies(db)[0]["participants"]["finished"] == 1 and sid == 1


def test_consent_is_required_and_bound_to_the_browser(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path)
    _, secret = studies.create_study(db, "crowd", quota=2, max_participants=5, completion_code="C",
                                     consent="<b>Ethics</b> approval 42; contact the researcher via the platform.")
    client = TestClient(app)
    query = _query("p1")
    r = _consent_page(client, secret, query)
    assert "up to <b>2</b>" in r.text and "Pick the answer that fits the person." in r.text
    assert "&lt;b&gt;Ethics&lt;/b&gt; approval 42" in r.text  # the researcher's text, as text
    assert "samesite=strict" in r.headers["set-cookie"].lower()
    nonce = NONCE_RE.search(r.text)
    assert nonce is not None
    # the box not ticked: nothing made
    assert client.post(f"/s/{secret}?{query}", data={"nonce": nonce.group(1)}).status_code == 422
    # another browser (no consent cookie), a wrong nonce, another site: refused
    assert TestClient(app).post(f"/s/{secret}?{query}", data={"nonce": nonce.group(1), "consent": "yes"},
                                follow_redirects=False).status_code == 403
    assert client.post(f"/s/{secret}?{query}", data={"nonce": "x", "consent": "yes"}).status_code == 403
    r = client.post(f"/s/{secret}?{query}", data={"nonce": nonce.group(1), "consent": "yes"},
                    headers={"origin": "https://evil.example"}, follow_redirects=False)
    assert r.status_code == 403
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Participant)) == 0
    r = client.post(f"/s/{secret}?{query}", data={"nonce": nonce.group(1), "consent": "yes"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/p/{pid}" and COOKIE in r.cookies


def test_participant_cap(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path)
    _, secret = studies.create_study(db, "crowd", quota=2, max_participants=2, completion_code="C")
    late = TestClient(app)
    r = _consent_page(late, secret, _query("p3"))  # saw the consent page while a place was free
    assert r.status_code == 200
    nonce = NONCE_RE.search(r.text)
    assert nonce is not None
    _enter(app, secret, "p1", pid)
    _enter(app, secret, "p2", pid)
    r = late.post(f"/s/{secret}?{_query('p3')}", data={"nonce": nonce.group(1), "consent": "yes"},
                  follow_redirects=False)
    assert r.status_code == 403 and "Study full" in r.text and COOKIE not in r.cookies
    r = _consent_page(TestClient(app), secret, _query("p4"))
    assert r.status_code == 403 and "This study is full" in r.text
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Participant)) == 2


def test_cap_holds_when_participants_enter_at_once(db: Database, app: Any, tmp_path: Path) -> None:
    _project(db, tmp_path)
    _, secret = studies.create_study(db, "crowd", quota=2, max_participants=2, completion_code="C")
    forms = []
    for i in range(6):  # six browsers on the consent page while the places are free
        client = TestClient(app)
        nonce = NONCE_RE.search(_consent_page(client, secret, _query(f"p{i}")).text)
        assert nonce is not None
        forms.append((client, f"/s/{secret}?{_query(f'p{i}')}", nonce.group(1)))
    codes: list[int] = []

    def accept(client: TestClient, url: str, nonce: str) -> None:
        codes.append(client.post(url, data={"nonce": nonce, "consent": "yes"}, follow_redirects=False).status_code)

    threads = [threading.Thread(target=accept, args=form) for form in forms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [303, 303, 403, 403, 403, 403]
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Participant)) == 2


def test_resume_same_participant_and_reissue(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path)
    sid, secret = studies.create_study(db, "crowd", quota=4, max_participants=3, completion_code="C")
    part = _enter(app, secret, "p1", pid)
    aid, csrf = part.current()
    assert part.submit(aid, csrf).status_code == 200
    open_aid, _ = part.current()
    first = _participant(db, "p1")
    # the same link in the same browser: straight back to the same open item, no second consent
    r = _consent_page(part.client, secret, _query("p1", session="sess-2"))
    assert r.status_code == 303 and r.headers["location"] == f"/p/{pid}"
    assert part.current()[0] == open_aid
    again = _participant(db, "p1")
    assert (again.id, again.user_id, again.external_session_id) == (first.id, first.user_id, "sess-2")
    # a lost cookie: the link does not reopen the account; the admin's personal link does
    lost = TestClient(app)
    r = _consent_page(lost, secret, _query("p1"))
    assert r.status_code == 403 and "Already started" in r.text
    row, name, token = studies.reissue(db, "p1", sid)
    assert (row.id, name) == (first.id, "p1")
    r = lost.get(f"/login/{token}")
    nonce = NONCE_RE.search(r.text)
    assert nonce is not None
    assert lost.post(f"/login/{token}", data={"nonce": nonce.group(1)}, follow_redirects=False).status_code == 303
    assert Participant_(lost, pid).current()[0] == open_aid
    app.state.sessions.ttl_s = 0  # (a session ended by the CLI stays in a server's cache for its few seconds)
    assert part.page().status_code == 401  # the old browser's session ended
    with pytest.raises(service.NotFound):
        studies.reissue(db, "nobody")


def test_time_limit_releases_items_and_place(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, n_regular=2, n=1)
    sid, secret = studies.create_study(db, "crowd", quota=2, max_participants=1, completion_code="C",
                                       time_limit_min=30)
    slow = _enter(app, secret, "slow", pid)
    slow.current()  # holds the first item
    assert _consent_page(TestClient(app), secret, _query("next")).status_code == 403  # full
    with db.session() as s:  # 31 minutes pass
        s.execute(update(Participant).values(started_at=utcnow() - timedelta(minutes=31)))
    fresh = _enter(app, secret, "next", pid)  # the place is free again, and the held item is back
    aid, _ = fresh.current()
    gone = _participant(db, "slow")
    assert gone.status == "timed_out" and gone.released_at is not None
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Assignment).where(Assignment.user_id == gone.user_id)) == 0
        assert s.scalar(select(func.sum(Item.n_assigned))) == 1
    r = slow.page()
    assert r.status_code == 410 and "Time is up" in r.text
    late = slow.client.get(f"/t/{aid}")  # someone else's item now: "Time is up", nothing of theirs shown
    assert late.status_code == 410 and "Time is up" in late.text
    # the admin's release: a participant the platform reports as returned
    assert studies.release(db, sid, ["next"]) == {"id": sid, "timed_out": 0, "returned": 1, "released": 1}
    assert _participant(db, "next").status == "returned"
    assert fresh.page().status_code == 410


def test_screen_out_by_gold(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path, n_regular=4, n_gold=2, gold_every=1)
    _, secret = studies.create_study(db, "crowd", quota=6, max_participants=2, completion_code="GOOD",
                                     screenout_code="SCREENED", screenout_gold_below=0.5, screenout_after_gold=1)
    part = _enter(app, secret, "careless", pid)
    for _ in range(2):  # the gold item comes first or second (a random place in each block of 2), answered wrong
        ref, csrf = part.current()
        a = _by_ref(db, ref)
        wrong = ("1" if a.layout.get("swap") else "2") if a.is_gold else "1"  # gold answer A, shown 1 unswapped
        r = part.submit(ref, csrf, wrong)
        if a.is_gold:
            break
    assert _completion(part, r) == DONE + "SCREENED"
    assert _participant(db, "careless").status == "screened_out"
    with db.session() as s:  # nothing left open, and the place is free
        assert s.scalar(select(func.count()).select_from(Assignment).where(Assignment.done.is_(False))) == 0


def test_configurable_parameter_names(db: Database, app: Any, tmp_path: Path) -> None:
    pid = _project(db, tmp_path)
    params = ("workerId", "hitId", "assignmentId")
    _, secret = studies.create_study(db, "crowd", quota=1, max_participants=2, completion_code="MT",
                                     completion_url="https://platform.example/done?code={code}", params=params)
    assert _consent_page(TestClient(app), secret, _query("w1")).status_code == 400  # Prolific's names: missing
    bad = urlencode({"workerId": "<script>", "hitId": "h"})
    r = _consent_page(TestClient(app), secret, bad)
    assert r.status_code == 400 and "<script>" not in r.text
    part = _enter(app, secret, "w1", pid, params=params, study="hit-9", session="asg-3")
    n, last = _label_until_done(part)
    assert n == 1 and _completion(part, last) == "https://platform.example/done?code=MT"
    row = _participant(db, "w1")
    assert (row.external_study_id, row.external_session_id) == ("hit-9", "asg-3")
    with pytest.raises(Exception, match="three distinct names"):
        studies.create_study(db, "crowd", 1, 1, "C", params=("a", "a", "b"))


def test_exports_carry_the_platform_ids(db: Database, app: Any, tmp_path: Path, make_annotator: Any) -> None:
    pid = _project(db, tmp_path, n=2)
    _, secret = studies.create_study(db, "crowd", quota=2, max_participants=2, completion_code="C")
    _label_until_done(_enter(app, secret, "5f0c0ffee0c0ffee0c0ffee0", pid))
    ann = make_annotator(app, "alice", ["crowd"])
    aid, csrf, _ = ann.page(pid)
    assert ann.submit(aid, csrf, choice="1").status_code == 200
    out = tmp_path / "export"
    service.export(db, "crowd", out)
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text(encoding="utf-8").splitlines()]
    crowd = [r for r in labels if r["rater"] == "5f0c0ffee0c0ffee0c0ffee0"]
    assert len(crowd) == 2 and all(r["external_id"] == "5f0c0ffee0c0ffee0c0ffee0" and
                                   r["external_study_id"] == "STUDY1" and
                                   r["external_session_id"] == "sess-5f0c0ffee0c0ffee0c0ffee0" for r in crowd)
    assert [r["external_id"] for r in labels if r["rater"] == "alice"] == [None]
    raters = {json.loads(line)["rater"] for line in (out / "ratings.jsonl").read_text(encoding="utf-8").splitlines()}
    assert "5f0c0ffee0c0ffee0c0ffee0" in raters  # the long format's rater is the platform id


def test_a_leaked_study_link(db: Database, app: Any, tmp_path: Path) -> None:
    """Whoever has the link can take a free place under a new id, and nothing more: not another participant's
    account, items or labels, not the admin pages; a closed study or an unknown secret lets nobody in."""
    pid = _project(db, tmp_path, n=2)
    sid, secret = studies.create_study(db, "crowd", quota=4, max_participants=3, completion_code="C")
    victim = _enter(app, secret, "victim", pid)
    aid, csrf = victim.current()
    assert victim.submit(aid, csrf).status_code == 200
    victim_open, _ = victim.current()
    stranger = TestClient(app)
    r = _consent_page(stranger, secret, _query("victim"))
    assert r.status_code == 403 and COOKIE not in r.cookies
    nonce = NONCE_RE.search(_consent_page(stranger, secret, _query("other")).text)
    assert nonce is not None
    r = stranger.post(f"/s/{secret}?{_query('victim')}", data={"nonce": nonce.group(1), "consent": "yes"},
                      follow_redirects=False)
    assert r.status_code == 403 and COOKIE not in r.cookies
    attacker = _enter(app, secret, "attacker", pid)
    _, attacker_csrf = attacker.current()
    for path in (f"/t/{aid}", f"/t/{victim_open}"):
        assert attacker.client.get(path).status_code == 404
    assert attacker.submit(victim_open, attacker_csrf).status_code == 404
    assert attacker.client.get("/admin").status_code == 403
    assert attacker.client.get(f"/admin/p/{pid}/export/labels.jsonl").status_code == 403
    victim_row = _participant(db, "victim")
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label).where(Label.user_id == victim_row.user_id)) == 1
    assert _consent_page(TestClient(app), "not-the-secret", _query("x")).status_code == 404
    studies.close_study(db, sid)
    r = _consent_page(TestClient(app), secret, _query("late"))
    assert r.status_code == 410 and "closed" in r.text
    assert victim.current()[0] == victim_open  # participants already in keep working


def test_study_verbs(tmp_path: Path) -> None:
    runner = CliRunner()
    d = str(tmp_path / "ann")
    assert runner.invoke(cli_app, ["annotate", "project", "create", "crowd", "--task", "pairwise", "--dir", d]
                         ).exit_code == 0
    (tmp_path / "consent.txt").write_text("Approved by the ethics board (ref. 42).", encoding="utf-8")
    r = runner.invoke(cli_app, ["annotate", "crowd", "create", "crowd", "--quota", "5", "--max-participants", "20",
                                "--completion-code", "C0DE", "--time-limit-min", "45", "--consent",
                                f"@{tmp_path / 'consent.txt'}", "--dir", d, "--json"])
    assert r.exit_code == 0, r.output
    made = json.loads(r.output)
    assert made["consent"] == "Approved by the ethics board (ref. 42)."
    assert re.fullmatch(r"http://127\.0\.0\.1:8000/s/[\w-]+\?PROLIFIC_PID=\{\{%PROLIFIC_PID%\}\}"
                        r"&STUDY_ID=\{\{%STUDY_ID%\}\}&SESSION_ID=\{\{%SESSION_ID%\}\}", made["link"])
    assert made["quota"] == 5 and made["completion_url"] == studies.PROLIFIC_COMPLETION_URL
    r = runner.invoke(cli_app, ["annotate", "crowd", "list", "--dir", d, "--json"])
    listed = json.loads(r.output)
    assert [s["id"] for s in listed] == [made["id"]] and "link" not in listed[0]  # the secret is not kept
    r = runner.invoke(cli_app, ["annotate", "crowd", "close", str(made["id"]), "--dir", d])
    assert r.exit_code == 0 and "open: false" in r.output
    r = runner.invoke(cli_app, ["annotate", "crowd", "reissue", "nobody", "--dir", d])
    assert r.exit_code != 0 and "no participant 'nobody'" in r.output
    r = runner.invoke(cli_app, ["annotate", "crowd", "create", "crowd", "--quota", "0", "--max-participants", "1",
                                "--completion-code", "C", "--dir", d])
    assert r.exit_code == 2 and "--quota" in r.output
    r = runner.invoke(cli_app, ["annotate", "crowd", "create", "crowd", "--quota", "1", "--max-participants", "1",
                                "--completion-code", "C", "--screenout-code", "S", "--dir", d])
    assert r.exit_code != 0 and "--screenout-gold-below" in r.output
