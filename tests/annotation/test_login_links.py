"""Login links on SQLite and PostgreSQL: single use, expiry, a login only by the confirming POST (never by a GET,
never by a cross-site POST), a second user's link in a logged-in browser, deactivation (sessions end at once,
open assignments go back to the queue), throttling of bad links only, the CLI verbs, the upgrade of a database
made before links expired, and the confirmation page in a real browser."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient
from sqlalchemy import func, insert, select, update
from typer.testing import CliRunner

from tailorbench.annotation import service
from tailorbench.annotation.db import Database, make_engine
from tailorbench.annotation.models import Assignment, Item, User, WebSession, utcnow
from tailorbench.annotation.web import create_app
from tailorbench.cli.app import app as cli_app
from tests.annotation.conftest import CSRF_RE, DATA, NONCE_RE, LiveServer, browser_login, confirm_login, login
from tests.annotation.test_browser import SHOTS, browser  # noqa: F401  (the module's chromium fixture)


def _user(db: Database, name: str) -> dict[str, Any]:
    return next(u for u in service.list_users(db) if u["name"] == name)


def _about(stamp: str | None, from_now: timedelta) -> bool:
    """Whether an ISO timestamp is `from_now` after now, give or take the minute a test may take."""
    return stamp is not None and abs(datetime.fromisoformat(stamp) - (utcnow() + from_now)) < timedelta(minutes=1)


def _home(client: TestClient) -> int:
    return client.get("/", follow_redirects=False).status_code


def _nonce(page_html: str) -> str:
    m = NONCE_RE.search(page_html)
    assert m is not None, page_html
    return m.group(1)


def _admin(db: Database, app: Any) -> tuple[TestClient, str]:
    _, token = service.add_user(db, "boss", "admin")
    client = login(app, token)
    csrf = CSRF_RE.search(client.get("/admin/users").text)
    assert csrf is not None
    return client, csrf.group(1)


def test_a_link_logs_in_once_and_not_after_logout(db: Database, app: Any) -> None:
    _, token = service.add_user(db, "Zoë", "annotator")
    client = TestClient(app)
    page = client.get(f"/login/{token}")
    assert page.status_code == 200 and 'id="login-name">Zoë<' in page.text
    assert "tb_session" not in client.cookies and _home(client) == 401  # the GET logged nobody in
    assert _user(db, "Zoë")["link_used_at"] is None  # ... and did not use the link up
    r = client.post(f"/login/{token}", data={"nonce": _nonce(page.text)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/" and _home(client) == 200
    assert _user(db, "Zoë")["link_used_at"] is not None
    # the same link in another browser: refused, with what to do
    other = TestClient(app)
    refused = other.get(f"/login/{token}")
    assert refused.status_code == 403 and "used already" in refused.text and "ask your admin" in refused.text
    assert "Zoë" not in refused.text  # a used link does not say whose it was
    # the browser that used it, clicking it again: it is logged in already, so it just goes on
    assert client.get(f"/login/{token}", follow_redirects=False).headers["location"] == "/"
    # after logging out, the old link does not log in again
    csrf = CSRF_RE.search(client.get("/").text)
    assert csrf is not None
    assert client.post("/logout", data={"csrf": csrf.group(1)}, follow_redirects=False).status_code == 303
    assert client.get(f"/login/{token}").status_code == 403 and _home(client) == 401
    # a new link (the admin's answer to a lost cookie) logs in once more
    assert confirm_login(client, service.rotate_link(db, "Zoë")).status_code == 303 and _home(client) == 200


def test_two_uses_of_one_link_at_once_log_in_once(db: Database) -> None:
    _, token = service.add_user(db, "ann", "annotator")
    results: list[str] = []
    start = threading.Barrier(4)

    def use() -> None:
        start.wait()
        try:
            with db.session() as s:
                service.login(s, token)
            results.append("in")
        except service.LinkRefused as exc:
            results.append(exc.why)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["in", "used", "used", "used"]
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(WebSession)) == 1


def test_links_expire(db: Database, app: Any) -> None:
    _, token = service.add_user(db, "ann", "annotator", link_days=2)
    assert _about(_user(db, "ann")["link_expires_at"], timedelta(days=2))
    admin, _ = _admin(db, app)
    assert "unused, valid until" in admin.get("/admin/users").text
    client = TestClient(app)
    page = client.get(f"/login/{token}")  # the page was opened while the link was live ...
    with db.session() as s:
        s.execute(update(User).where(User.name == "ann").values(link_expires_at=utcnow() - timedelta(seconds=1)))
    r = client.post(f"/login/{token}", data={"nonce": _nonce(page.text)}, follow_redirects=False)
    assert r.status_code == 403 and "expired" in r.text and _home(client) == 401  # ... and confirmed too late
    assert "expired 20" in admin.get("/admin/users").text
    assert client.get(f"/login/{token}").status_code == 403
    with pytest.raises(service.ConfigError, match="at most 365 days"):
        service.rotate_link(db, "ann", link_days=400)


def test_get_never_logs_in_and_a_cross_site_post_is_refused(db: Database, app: Any) -> None:
    _, token = service.add_user(db, "ann", "annotator")
    victim = TestClient(app)
    # another site navigating the browser to the link: a page, no session, the link unused
    nav = victim.get(f"/login/{token}", headers={"sec-fetch-site": "cross-site", "referer": "https://evil.example/"})
    assert nav.status_code == 200 and "tb_session" not in victim.cookies
    nonce = _nonce(nav.text)
    # a cross-site POST (the browser sends the page's cookie only on a same-site one; Origin tells anyway)
    r = victim.post(f"/login/{token}", data={"nonce": nonce}, headers={"origin": "https://evil.example"},
                    follow_redirects=False)
    assert r.status_code == 403 and "Cross-site" in r.text
    # a POST without the confirmation page's cookie, with a nonce read by someone else (the attacker's own page)
    attacker = TestClient(app)
    forged = _nonce(attacker.get(f"/login/{token}").text)
    fresh = TestClient(app)
    r = fresh.post(f"/login/{token}", data={"nonce": forged}, follow_redirects=False)
    assert r.status_code == 403 and "Open your login link again" in r.text
    fresh.get(f"/login/{token}")  # with its own cookie now, but still the attacker's nonce
    assert fresh.post(f"/login/{token}", data={"nonce": forged}, follow_redirects=False).status_code == 403
    # a nonce is bound to its link: the page of one link does not confirm another
    _, other = service.add_user(db, "bob", "annotator")
    assert victim.post(f"/login/{other}", data={"nonce": nonce}, follow_redirects=False).status_code == 403
    assert "tb_session" not in victim.cookies and "tb_session" not in fresh.cookies
    assert _user(db, "ann")["link_used_at"] is None and _user(db, "bob")["link_used_at"] is None
    # the real confirmation still works
    assert victim.post(f"/login/{token}", data={"nonce": nonce}, follow_redirects=False).status_code == 303


def test_another_users_link_in_a_logged_in_browser(db: Database, app: Any) -> None:
    _, alice_token = service.add_user(db, "alice", "annotator")
    _, bob_token = service.add_user(db, "bob", "annotator")
    browser_ = login(app, alice_token)
    alice_cookie = browser_.cookies["tb_session"]
    page = browser_.get(f"/login/{bob_token}")
    assert page.status_code == 200 and 'id="other-session"' in page.text and "<b>alice</b>" in page.text
    assert 'id="login-name">bob<' in page.text
    assert "alice" in browser_.get("/").text  # looking at bob's link changed nothing
    r = browser_.post(f"/login/{bob_token}", data={"nonce": _nonce(page.text)}, follow_redirects=False)
    assert r.status_code == 303 and "bob" in browser_.get("/").text
    # alice's session in this browser ended with the switch: her cookie no longer works anywhere
    stale = TestClient(app, cookies={"tb_session": alice_cookie})
    assert _home(stale) == 401


def test_deactivation_ends_sessions_at_once_and_releases_work(db: Database, app: Any, make_annotator: Any) -> None:
    service.create_project(db, "pw", "pairwise", 2, "", 100)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(1)
    assert aid is not None and ann.submit(aid, csrf, choice="1").status_code == 200  # one label, one open item
    assert ann.page(1)[0] is not None and _home(ann.client) == 200  # the session is in the cache now
    with db.session() as s:
        assigned_before = s.scalar(select(func.sum(Item.n_assigned)))
    admin, admin_csrf = _admin(db, app)
    r = admin.post("/admin/users/active", data={"csrf": admin_csrf, "name": "ann", "active": "0"})
    assert r.status_code == 200 and "1 unfinished assignments went back to the queue" in r.text
    assert _home(ann.client) == 401 and ann.client.get("/p/1").status_code == 401  # at once, cache or not
    with db.session() as s:
        rows = s.execute(select(Assignment.done)).scalars().all()
        assert rows == [True] and s.scalar(select(func.sum(Item.n_assigned))) == assigned_before - 1
        assert s.scalar(select(func.count()).select_from(WebSession).join(User).where(User.name == "ann")) == 0
    assert len(service.raw_labels(db, "pw")) == 1  # finished work stays
    # a deactivated account's link does not log in, not even a new one
    refused = TestClient(app).get(f"/login/{service.rotate_link(db, 'ann')}")
    assert refused.status_code == 403 and "deactivated" in refused.text
    assert "deactivated" in admin.get("/admin/users").text
    # an admin cannot lock themselves out from the page
    r = admin.post("/admin/users/active", data={"csrf": admin_csrf, "name": "boss", "active": "0"})
    assert r.status_code == 422 and _user(db, "boss")["active"]
    r = admin.post("/admin/users/link", data={"csrf": admin_csrf, "name": "boss"})
    assert r.status_code == 422 and admin.get("/admin").status_code == 200  # still logged in
    # reactivated: a new link logs in and the annotator goes on
    assert admin.post("/admin/users/active", data={"csrf": admin_csrf, "name": "ann", "active": "1"}).status_code == 200
    r = admin.post("/admin/users/link", data={"csrf": admin_csrf, "name": "ann", "link_days": "1"})
    link = r.text.split('id="login-link">')[1].split("<")[0]
    again = login(app, link.split("/login/")[1])
    assert again.get("/p/1").status_code == 200


def test_deactivation_from_another_process_drops_the_session(db: Database, app: Any, make_annotator: Any) -> None:
    """`annotator deactivate` in the CLI: the sessions are gone from the database at once (a web process that
    cached one forgets it within its session cache's lifetime; this app's cache is the default 10 s, so the
    uncached request below must see it)."""
    ann = make_annotator(app, "ann", [])
    assert _home(ann.client) == 200
    app.state.sessions.drop_user(_user(db, "ann")["id"])  # as if another process served the earlier request
    service.set_active(db, "ann", False)
    assert _home(ann.client) == 401


def test_only_bad_links_are_throttled(db: Database) -> None:
    app = create_app(db, login_failures=3, login_window_s=3600)
    _, token = service.add_user(db, "ann", "annotator")
    shared = TestClient(app, client=("10.0.0.1", 1000))  # everyone behind one proxy address
    for i in range(3):
        assert shared.get(f"/login/guess-{i}").status_code == 403
    # guesses are capped now: every further bad link is refused without a word about it
    for i in range(20):
        r = shared.get(f"/login/more-{i}")
        assert r.status_code == 429 and "valid link still works" in r.text
    assert shared.post("/login/more-x", data={"nonce": "x"}).status_code == 403  # (no page, no nonce)
    # a valid link from the throttled address is never refused
    page = shared.get(f"/login/{token}")
    assert page.status_code == 200
    r = shared.post(f"/login/{token}", data={"nonce": _nonce(page.text)}, follow_redirects=False)
    assert r.status_code == 303 and _home(shared) == 200
    # used up, it is a bad link like any other now; another address is not throttled
    assert shared.get(f"/login/{token}", follow_redirects=False).status_code == 303  # its own browser: go on
    assert TestClient(app, client=("10.0.0.1", 1001)).get(f"/login/{token}").status_code == 429
    assert TestClient(app, client=("10.0.0.2", 1000)).get(f"/login/{token}").status_code == 403


def test_limiter_forgets_quiet_addresses() -> None:
    from tailorbench.annotation.web.security import LoginLimiter

    limiter = LoginLimiter(max_failures=2, window_s=0.0, max_addresses=5)
    for i in range(50):
        limiter.failed(f"10.0.0.{i}")
    assert len(limiter._fails) <= 5


def test_cli_link_days_deactivate_activate(db_url: str) -> None:
    runner = CliRunner()

    def cli(*args: str, ok: bool = True) -> Any:
        result = runner.invoke(cli_app, ["annotate", *args, "--db", db_url, "--json"])
        assert (result.exit_code == 0) == ok, result.output
        return json.loads(result.stdout) if ok else result.output

    cli("project", "create", "pw", "--task", "pairwise", "--n", "1")
    cli("import", "pw", str(DATA / "paircase.jsonl"))
    added = cli("annotator", "add", "ann", "--project", "pw", "--link-days", "3")
    assert added["login_link"] and added["link_used_at"] is None and added["projects"] == ["pw"]
    assert _about(added["link_expires_at"], timedelta(days=3))
    assert "--link-valid-for" in cli("annotator", "link", "ann", "--link-valid-for", "0", ok=False)
    assert "--link-valid-for" in cli("annotator", "link", "ann", "--link-days", "0", ok=False)  # the old spelling
    store = Database(db_url)
    try:
        uid = _user(store, "ann")["id"]
        with store.session() as s:  # ann holds one open assignment
            assert service.next_assignment(s, uid, 1) is not None
        off = cli("annotator", "deactivate", "ann")
        assert off["active"] is False and off["released"] == 1
        with store.session() as s:
            assert s.scalar(select(func.count()).select_from(Assignment)) == 0
            assert s.scalar(select(func.sum(Item.n_assigned))) == 0
        on = cli("annotator", "activate", "ann")
        assert on["active"] is True and on["released"] == 0
        fresh = cli("annotator", "link", "ann", "--link-days", "0.5")
        assert fresh["login_link"] != added["login_link"]
        assert "no user 'nobody'" in cli("annotator", "deactivate", "nobody", ok=False)
    finally:
        store.dispose()


def test_a_database_from_before_expiring_links_upgrades(db_url: str) -> None:
    """Links made before revision 0002_login_links never expired: after the upgrade they log in once, within 7
    days of it."""
    engine = make_engine(db_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("tailorbench.annotation") / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
    with engine.begin() as conn:
        conn.execute(insert(User.__table__).values(name="old", role="annotator", active=True,
                                                   token_hash=service.token_hash("old-link"), created_at=utcnow()))
    engine.dispose()
    store = Database(db_url)  # migrates to head
    try:
        old = _user(store, "old")
        assert old["link_used_at"] is None and old["link_expires_at"] is not None
        assert _about(old["link_expires_at"], timedelta(days=7))
        client = login(create_app(store), "old-link")
        assert _home(client) == 200
        assert TestClient(create_app(store)).get("/login/old-link").status_code == 403
    finally:
        store.dispose()


@pytest.fixture
def live(db: Database) -> Iterator[tuple[Database, LiveServer]]:
    with LiveServer(create_app(db)) as server:
        yield db, server


def test_confirmation_page_in_a_browser(browser: Any, live: tuple[Database, LiveServer]) -> None:  # noqa: F811
    db, server = live
    _, ann_token = service.add_user(db, "ann", "annotator")
    _, bob_token = service.add_user(db, "bob", "annotator")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/login/{ann_token}")
    assert page.inner_text("#login-name") == "ann" and page.title() == "Log in"
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(Path(SHOTS) / "login_confirm.png"), full_page=True)
    assert [c["name"] for c in context.cookies()] == ["tb_login"]  # no session from opening the link
    # the button has the focus: Enter confirms
    assert page.evaluate("document.activeElement.type") == "submit"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{server.url}/" and page.inner_text(".who") == "ann"
    # another user's link in this browser says whose session it is
    page.goto(f"{server.url}/login/{bob_token}")
    assert "logged in as ann" in page.inner_text("#other-session")
    page.screenshot(path=str(Path(SHOTS) / "login_other_session.png"), full_page=True)
    page.goto(f"{server.url}/")
    assert page.inner_text(".who") == "ann"  # looking changed nothing
    browser_login(page, server.url, bob_token)
    assert page.inner_text(".who") == "bob"
    # a used link, in a fresh browser
    other = browser.new_context()
    p2 = other.new_page()
    p2.goto(f"{server.url}/login/{ann_token}")
    assert "used already" in p2.inner_text("#message")
    other.close()
    context.close()
