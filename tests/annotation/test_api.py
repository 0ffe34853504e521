"""HTTP tests of every route, the refusals included, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import func, select

from tailorbench.annotation import quality, service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Label
from tailorbench.annotation.web import create_app
from tests.annotation.conftest import CSRF_RE, DATA, Annotator, confirm_login, login


def _pairwise(db: Database, n: int = 2, gold_every: int = 5) -> int:
    pid = service.create_project(db, "pw", "pairwise", n, "Pick the answer that fits the person.", gold_every)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    return pid


def _label_all(ann: Annotator, pid: int, limit: int = 100, **fields: str) -> int:
    n = 0
    for _ in range(limit):
        aid, csrf, _html = ann.page(pid)
        if aid is None:
            return n
        r = ann.submit(aid, csrf, **(fields or {"choice": "1"}))
        assert r.status_code == 200, r.text  # the next task page (or the done page)
        n += 1
    return n


def test_no_session_is_refused_everywhere(db: Database, app: Any) -> None:
    pid = _pairwise(db)
    client = login.__globals__["TestClient"](app)
    for path in ("/", f"/p/{pid}", "/a/1", "/admin", f"/admin/p/{pid}", "/admin/users",
                 f"/admin/p/{pid}/export/ratings.jsonl", f"/admin/p/{pid}/agreement.json"):
        assert client.get(path, follow_redirects=False).status_code == 401, path
    for path in ("/a/1", "/logout", "/admin/projects", f"/admin/p/{pid}/members", "/admin/users"):
        assert client.post(path, data={"csrf": "x"}, follow_redirects=False).status_code == 401, path


def test_bad_login_link_and_rate_limit(db: Database) -> None:
    app = create_app(db, login_failures=3, login_window_s=60)
    _, token = service.add_user(db, "ann", "annotator")
    client = login.__globals__["TestClient"](app)
    for _ in range(3):
        assert client.get("/login/not-a-token", follow_redirects=False).status_code == 403
    # bad links are blocked now, until the window passes; a valid link still logs in
    assert client.get("/login/not-a-token", follow_redirects=False).status_code == 429
    assert confirm_login(client, token).status_code == 303
    app.state.limiter.window_s = 0.0
    assert client.get("/login/not-a-token", follow_redirects=False).status_code == 403


def test_cookie_flags(db: Database, app: Any) -> None:
    client = login.__globals__["TestClient"](app)
    cookie = confirm_login(client, service.add_user(db, "ann", "annotator")[1]).headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie
    secure = login.__globals__["TestClient"](app, base_url="https://testserver")
    cookie = confirm_login(secure, service.rotate_link(db, "ann")).headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "; secure" in cookie
    forced = login.__globals__["TestClient"](create_app(db, secure_cookies=True))  # (its http never logs in)
    assert "; secure" in forced.get(f"/login/{service.rotate_link(db, 'ann')}").headers["set-cookie"].lower()


def test_security_headers_and_escaping(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    r = ann.client.get(f"/p/{pid}")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert "<script>window" not in r.text and "&lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in r.text


def test_annotator_never_sees_admin_pages(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    _, csrf, _ = ann.page(pid)
    for path in ("/admin", f"/admin/p/{pid}", "/admin/users", f"/admin/p/{pid}/export/ratings.jsonl",
                 f"/admin/p/{pid}/agreement.json"):
        assert ann.client.get(path).status_code == 403, path
    for path in ("/admin/projects", f"/admin/p/{pid}/members", "/admin/users"):
        assert ann.client.post(path, data={"csrf": csrf, "name": "x", "user": "ann"}).status_code == 403, path
    r = ann.client.post(f"/admin/p/{pid}/import", data={"csrf": csrf}, files={"file": ("a.jsonl", b"{}")})
    assert r.status_code == 403
    assert ann.client.get("/", follow_redirects=False).status_code == 200


def test_someone_elses_assignment_and_labels(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    alice = make_annotator(app, "alice", ["pw"])
    bob = make_annotator(app, "bob", ["pw"])
    aid, csrf, _ = alice.page(pid)
    assert alice.submit(aid, csrf, choice="2", note="ALICE-SECRET-NOTE").status_code == 200
    aid2, _, _ = alice.page(pid)
    _, bob_csrf, _ = bob.page(pid)
    assert bob.client.get(f"/a/{aid}").status_code == 404
    assert bob.client.get(f"/a/{aid2}").status_code == 404
    assert bob.submit(aid2, bob_csrf, choice="1").status_code == 404
    for path in ("/", f"/p/{pid}"):
        assert "ALICE-SECRET-NOTE" not in bob.client.get(path).text
    # a project the annotator is not a member of does not exist for them
    service.create_project(db, "other", "relevance", 1)
    other = service.list_projects(db)[-1]["id"]
    assert bob.client.get(f"/p/{other}").status_code == 404
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 1


def test_csrf_missing_stale_and_cross_origin(db: Database, app: Any) -> None:
    pid = _pairwise(db)
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    first = Annotator(login(app, token), "ann")
    aid, old_csrf, _ = first.page(pid)
    assert first.submit(aid, "").status_code == 403
    second = Annotator(login(app, service.rotate_link(db, "ann")), "ann")  # a new session has its own token
    aid2, new_csrf, _ = second.page(pid)
    assert aid2 == aid
    assert second.submit(aid, old_csrf, choice="1").status_code == 403
    r = second.client.post(f"/a/{aid}", data={"csrf": new_csrf, "choice": "1"},
                           headers={"origin": "https://evil.example"}, follow_redirects=False)
    assert r.status_code == 403
    assert second.submit(aid, new_csrf, choice="1").status_code == 200
    # logging out kills the session: its token is stale afterwards
    assert second.client.post("/logout", data={"csrf": new_csrf}, follow_redirects=False).status_code == 303
    assert second.submit(aid, new_csrf, choice="1").status_code == 401


def test_duplicate_submit_stores_one_label(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    results = []

    def post() -> None:
        results.append(ann.submit(aid, csrf, choice="1").status_code)

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 4
    assert ann.submit(aid, csrf, choice="2").status_code == 200
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label).where(Label.assignment_id == aid)) == 1
        assert s.scalar(select(Label.value).where(Label.assignment_id == aid))["choice"] in ("A", "B")


def test_invalid_form_is_refused_without_storing(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    r = ann.submit(aid, csrf, choice="3")
    assert r.status_code == 422 and "choose one of" in r.text
    assert ann.submit(aid, csrf, choice="1", confidence="9").status_code == 422
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0
    assert ann.page(pid)[0] == aid


def test_balanced_assignment_never_twice(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db, n=2, gold_every=100)
    anns = [make_annotator(app, f"a{i}", ["pw"]) for i in range(3)]
    active = list(anns)
    while active:  # round robin, like annotators working side by side
        for ann in list(active):
            aid, csrf, _ = ann.page(pid)
            if aid is None:
                active.remove(ann)
                continue
            assert ann.submit(aid, csrf, choice="1").status_code == 200
    with db.session() as s:
        rows = s.execute(select(Assignment.item_id, Assignment.user_id, Assignment.is_gold)).all()
    regular = [(i, u) for i, u, g in rows if not g]
    assert len(set(regular)) == len(regular)
    per_item = Counter(i for i, _ in regular)
    assert set(per_item.values()) == {2} and len(per_item) == 5
    per_user = Counter(u for _, u in regular)
    assert max(per_user.values()) - min(per_user.values()) <= 1
    # gold items go to everyone (after the regular work here, since gold_every is large)
    assert Counter(u for _, u, g in rows if g) == Counter({u: 1 for u in per_user})


def test_gold_items_and_scores(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db, n=1, gold_every=2)
    ann = make_annotator(app, "ann", ["pw"])
    seen = []
    for _ in range(10):
        aid, csrf, html = ann.page(pid)
        if aid is None:
            break
        item = html.split('data-item="')[1].split('"')[0]
        seen.append(item)
        # pick the source's chosen answer (A) whatever the shown order
        with db.session() as s:
            swap = s.get(Assignment, aid).layout["swap"]
        ann.submit(aid, csrf, choice="2" if swap else "1")
    assert seen.index("pc5") == 2  # one gold item after every 2 regular items
    prog = service.progress(db, "pw")
    assert prog["annotators"][0]["gold_done"] == 1 and prog["annotators"][0]["gold_score"] == 1.0
    assert prog["items"] == 5 and prog["gold_items"] == 1 and prog["labels_done"] == 5


def test_resume_after_restart(db_url: str, db: Database, make_annotator: Any) -> None:
    pid = _pairwise(db)
    app = create_app(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    assert ann.submit(aid, csrf, choice="1").status_code == 200
    current, _, _ = ann.page(pid)
    assert ann.page(pid)[0] == current  # a reload shows the same item
    db.dispose()
    restarted = Database(db_url)  # a new process: migrations run again, nothing is lost
    try:
        client = login.__globals__["TestClient"](create_app(restarted))
        client.cookies.update(ann.client.cookies)
        again = Annotator(client, "ann")
        assert again.page(pid)[0] == current
        assert service.progress(restarted, "pw")["labels_done"] == 1
    finally:
        restarted.dispose()


def test_admin_pages_and_export(db: Database, app: Any, make_annotator: Any) -> None:
    _, token = service.add_user(db, "boss", "admin")
    admin = login(app, token)
    r = admin.get("/admin")
    assert r.status_code == 200
    csrf = CSRF_RE.search(r.text).group(1)  # type: ignore[union-attr]
    r = admin.post("/admin/projects", data={"csrf": csrf, "name": "pw", "task_type": "pairwise", "n_per_item": "2",
                                            "gold_every": "5", "instructions": "Be careful."},
                   follow_redirects=False)
    assert r.status_code == 303
    pid = int(r.headers["location"].rsplit("/", 1)[1])
    body = (DATA / "paircase.jsonl").read_bytes()
    r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf, "format": "auto"},
                   files={"file": ("paircase.jsonl", body)})
    assert r.status_code == 200  # the import runs as a job: its result shows on the project page
    app.state.imports.wait()
    assert "imported 5 items and 1 gold items" in admin.get(f"/admin/p/{pid}").text
    r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf}, files={"file": ("paircase.jsonl", body)})
    app.state.imports.wait()
    page = admin.get(f"/admin/p/{pid}").text
    assert "Nothing was imported: paircase.jsonl:1: field" in page and "is already in project" in page
    r = admin.post("/admin/users", data={"csrf": csrf, "name": "carol", "role": "annotator", "project": "pw"})
    link = r.text.split('id="login-link">')[1].split("<")[0]
    carol = Annotator(login(app, link.split("/login/")[1]), "carol")
    dave = make_annotator(app, "dave", [])
    assert dave.client.get(f"/p/{pid}").status_code == 404
    assert admin.post(f"/admin/p/{pid}/members", data={"csrf": csrf, "user": "dave"},
                      follow_redirects=False).status_code == 303
    _label_all(carol, pid, choice="1", note="weird item", flag="1")
    _label_all(dave, pid, choice="1")
    page = admin.get(f"/admin/p/{pid}").text
    assert "carol" in page and "weird item" in page and "Fleiss" in page
    assert admin.get(f"/admin/p/{pid}/agreement.json").json()["available"] is True
    ratings = admin.get(f"/admin/p/{pid}/export/ratings.jsonl")
    assert ratings.status_code == 200 and ratings.text.count("\n") == 10
    assert admin.get(f"/admin/p/{pid}/export/ratings.csv").text.startswith("item,rater,label,group")
    bench = admin.get(f"/admin/p/{pid}/export/benchmark.jsonl")
    assert bench.status_code == 200
    assert admin.get(f"/admin/p/{pid}/export/nope.txt").status_code == 404
    assert admin.get("/admin/users").status_code == 200
    assert admin.get("/admin/p/999").status_code == 404


@pytest.mark.parametrize("task", ["attributes", "relevance", "ab_rating"])
def test_attribute_tasks_roundtrip(db: Database, app: Any, make_annotator: Any, task: str) -> None:
    pid = service.create_project(db, task, task, 1, "", 2)
    got = service.import_items(db, task, DATA / f"{task}.jsonl")
    assert got == {"project": task, "format": "items", "items": 3, "gold_items": 1}
    ann = make_annotator(app, "ann", [task])
    fields = {
        "attributes": {"j_1": "accepted", "j_job": "uncertain", "j_3": "rejected", "n_3": "not said", "missing": "x"},
        "relevance": {"r_1": "yes", "r_2": "no", "r_3": "no"},
        "ab_rating": {"s_veg": "5", "s_night": "2"},
    }[task]
    aid, csrf, _ = ann.page(pid)
    assert ann.submit(aid, csrf, **{k: v for k, v in list(fields.items())[:1]}).status_code == 422
    assert _label_all(ann, pid, **fields) == 4
    rs = service.ratings(db, task)
    labels = {r.item.split("::")[1]: r.label for r in rs.ratings}
    if task == "attributes":
        assert labels == {"1": "accepted", "job": "uncertain", "3": "rejected"}
        assert len(rs.ratings) == 9
    elif task == "relevance":
        assert labels == {"1": True, "2": False, "3": False}
    else:
        raw = service.raw_labels(db, task)
        for row in raw:  # canonical: personalized vs generic, whatever order was shown
            sign = -1 if row["shown_order"] == "BA" else 1
            assert row["value"]["ratings"] == {"veg": 2 * sign, "night": -1 * sign}
    prog = service.progress(db, task)
    assert prog["annotators"][0]["gold_done"] == 1


def test_release_stale_assignments(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db, n=1)
    alice = make_annotator(app, "alice", ["pw"])
    aid, csrf, _ = alice.page(pid)
    assert alice.submit(aid, csrf, choice="1").status_code == 200
    held, _, _ = alice.page(pid)  # opened, never finished
    assert service.release_stale(db, "pw", 3600) == 0
    assert service.release_stale(db, "pw", 0) == 1
    with db.session() as s:
        assert s.get(Assignment, held) is None and s.get(Assignment, aid).done
        assert s.scalar(select(func.count()).select_from(Label)) == 1
    bob = make_annotator(app, "bob", ["pw"])
    _, _, html = bob.page(pid)
    assert 'data-item="pc1"' in html  # the released item is back in the queue


def test_concurrent_annotators_never_exceed_n(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db, n=2, gold_every=100)
    anns = [make_annotator(app, f"c{i}", ["pw"]) for i in range(5)]
    errors: list[str] = []

    def work(ann: Annotator) -> None:
        try:
            _label_all(ann, pid)
        except AssertionError as exc:  # pragma: no cover - reported below
            errors.append(str(exc))

    threads = [threading.Thread(target=work, args=(a,)) for a in anns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with db.session() as s:
        rows = s.execute(select(Assignment.item_id, Assignment.user_id, Assignment.done)
                         .where(Assignment.is_gold.is_(False))).all()
    assert len({(i, u) for i, u, _ in rows}) == len(rows)
    assert Counter(i for i, _, _ in rows) == Counter({i: 2 for i, _, _ in rows}) and all(d for _, _, d in rows)
    assert len({i for i, _, _ in rows}) == 5


def _form(html: str) -> tuple[int | None, str]:
    m = re.search(r'action="/a/(\d+)"', html)
    csrf = CSRF_RE.search(html)
    assert csrf is not None
    return (int(m.group(1)) if m else None), csrf.group(1)


def _counts(db: Database) -> tuple[int, int]:
    with db.session() as s:
        return (s.scalar(select(func.count()).select_from(Label)) or 0,
                s.scalar(select(func.count()).select_from(Assignment)) or 0)


def test_submit_answers_with_the_next_page(db: Database, app: Any, make_annotator: Any) -> None:
    """One request per submission: the POST stores the label and answers 200 with the next task page, its
    assignment and its CSRF token, so a browser (and the load client) never needs a GET between labels."""
    pid = _pairwise(db, n=1, gold_every=100)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    seen = [aid]
    for _ in range(20):
        r = ann.submit(seen[-1], csrf, choice="1")
        assert r.status_code == 200 and "location" not in r.headers, r.text
        nxt, csrf = _form(r.text)
        if nxt is None:
            break
        assert nxt not in seen and f'data-url="/a/{nxt}"' in r.text
        seen.append(nxt)
    assert 'id="all-done"' in r.text and f'data-url="/p/{pid}"' in r.text
    assert len(seen) == 6  # 5 regular items + 1 gold, one POST each after the first GET
    assert _counts(db) == (6, 6)
    # one "done": finished items, gold included, as the quality block counts them (it used to leave gold out)
    row = service.progress(db, "pw")["annotators"][0]
    assert row["done"] == 6 and row["gold_done"] == 1
    assert row["done"] == quality.annotator_quality(db, "pw")[row["annotator"]]["labels"]


def test_resent_submit_stores_nothing_and_shows_the_same_next_page(db: Database, app: Any,
                                                                   make_annotator: Any) -> None:
    """A reload of the POST's answer resends the same form: it must not store a second label nor make another
    assignment; it answers with the same next page."""
    pid = _pairwise(db, n=1, gold_every=100)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    first = ann.submit(aid, csrf, choice="1", note="first")
    again = ann.submit(aid, csrf, choice="2", note="again")
    assert first.status_code == again.status_code == 200
    assert _form(first.text)[0] == _form(again.text)[0] is not None
    assert _counts(db) == (1, 2)
    with db.session() as s:
        assert s.scalar(select(Label.note).where(Label.assignment_id == aid)) == "first"
    # the page's own URL (what app.js puts in the address bar) shows the current assignment
    nxt = _form(again.text)[0]
    assert ann.client.get(f"/a/{nxt}").status_code == 200
    assert ann.client.get(f"/a/{aid}", follow_redirects=False).headers["location"] == f"/p/{pid}"


def test_one_request_flow_still_checks_csrf(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db, n=1, gold_every=100)
    ann = make_annotator(app, "ann", ["pw"])
    other = make_annotator(app, "other", ["pw"])
    aid, csrf, _ = ann.page(pid)
    _, other_csrf, _ = other.page(pid)
    before = _counts(db)
    assert ann.submit(aid, other_csrf, choice="1").status_code == 403
    assert ann.submit(aid, "", choice="1").status_code == 403
    r = ann.client.post(f"/a/{aid}", data={"csrf": csrf, "choice": "1"}, headers={"origin": "http://evil.example"},
                        follow_redirects=False)
    assert r.status_code == 403
    assert _counts(db) == before  # refused before anything was stored or assigned
    r = ann.submit(aid, csrf, choice="1")
    nxt, page_csrf = _form(r.text)
    assert r.status_code == 200 and page_csrf == csrf and nxt is not None
    assert ann.submit(nxt, other_csrf, choice="1").status_code == 403
    assert ann.submit(nxt, page_csrf, choice="1").status_code == 200


def test_session_cache_expires_and_can_be_off(db: Database) -> None:
    """Sessions ended elsewhere (`annotator link` rotates the link and ends every session) stop working once
    the cache entry is older than session_cache_s; with 0 at once."""
    pid = _pairwise(db)
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    for ttl in (0.0, 0.3):
        app = create_app(db, session_cache_s=ttl)
        ann = Annotator(login(app, service.rotate_link(db, "ann") if ttl else token), "ann")
        assert ann.client.get(f"/p/{pid}").status_code == 200
        service.rotate_link(db, "ann")
        if ttl:
            assert ann.client.get(f"/p/{pid}").status_code == 200  # still cached
            time.sleep(ttl + 0.05)
        assert ann.client.get(f"/p/{pid}").status_code == 401
