"""An admin import runs off the event loop: while a 50,000-row import is in progress on a real server, the
health check, an annotator's task page and submission, and the admin's pages all answer, and the import ends
stored in full with its progress and result on the project page. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Item, Label
from tailorbench.annotation.web.security import COOKIE
from tests.annotation.conftest import ASSIGNMENT_RE, CSRF_RE, DATA, LiveServer, browser_login, login
from tests.annotation.test_browser import browser  # noqa: F401  (the fixture)

N_ROWS = 50_000


def _big_file(path: Path) -> bytes:
    rows = [{"id": f"big{i}", "split": "general", "user_id": f"u{i % 97}",
             "persona": {"demographics": {"age": 20 + i % 50}, "preferences": {"food": "any"}},
             "question": f"Question number {i}?", "answer_a": f"first answer {i}", "answer_b": f"second answer {i}"}
            for i in range(N_ROWS)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _client(app: Any, server: LiveServer, token: str) -> httpx.Client:
    """An httpx client of the live server with the session of `token` (logged in through the real flow)."""
    session = login(app, token, base_url=server.url).cookies[COOKIE]
    return httpx.Client(base_url=server.url, cookies={COOKIE: session}, timeout=120)


def test_server_answers_while_a_large_import_runs(db: Database, app: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    _, admin_token = service.add_user(db, "boss", "admin")
    _, ann_token = service.add_user(db, "ann", "annotator", ["pw"])
    body = _big_file(tmp_path)

    # the job waits, once every row is read and checked, until the requests below have been answered: so they
    # are answered while it is provably running (without the job, the upload request itself would not return)
    real = service.import_items
    read_done, release = threading.Event(), threading.Event()
    reported: list[tuple[int, int]] = []

    def gated(*args: Any, progress: Any = None, **kwargs: Any) -> Any:
        def report(read: int, stored: int) -> None:
            progress(read, stored)
            reported.append((read, stored))
            if (read, stored) == (N_ROWS, 0):
                read_done.set()
                assert release.wait(120), "the test never released the import"
        return real(*args, progress=report, **kwargs)

    monkeypatch.setattr(service, "import_items", gated)
    with LiveServer(app) as server, _client(app, server, admin_token) as admin, \
            _client(app, server, ann_token) as ann:
        csrf = CSRF_RE.search(admin.get("/admin").text)
        assert csrf is not None
        r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf.group(1)},
                       files={"file": ("big.jsonl", body)}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/admin/p/{pid}#imports"
        assert read_done.wait(120), "the import job never got through reading the file"
        try:
            assert ann.get("/healthz").json() == {"status": "ok"}
            page = ann.get(f"/p/{pid}")
            assert page.status_code == 200
            aid = ASSIGNMENT_RE.search(page.text)
            token = CSRF_RE.search(page.text)
            assert aid is not None and token is not None
            r = ann.post(f"/a/{aid.group(1)}", data={"csrf": token.group(1), "choice": "1"})
            assert r.status_code == 200, r.text
            status = admin.get(f"/admin/p/{pid}/imports.json").json()["jobs"][0]
            assert status["state"] == "running" and status["read"] == N_ROWS and status["stored"] == 0, status
            project_page = admin.get(f"/admin/p/{pid}").text
            assert 'data-state="running"' in project_page and f'<td class="read">{N_ROWS}</td>' in project_page
        finally:
            release.set()
        app.state.imports.wait()
        status = admin.get(f"/admin/p/{pid}/imports.json").json()["jobs"][0]
        assert status == {**status, "state": "done", "read": N_ROWS, "stored": N_ROWS,
                          "message": f"imported {N_ROWS} items and 0 gold items (items)"}, status
        project_page = admin.get(f"/admin/p/{pid}").text
        assert f"imported {N_ROWS} items" in project_page and 'data-state="done"' in project_page
    assert (1000, 0) in reported  # rows read, reported while reading
    assert (N_ROWS, 1000) in reported and reported[-1] == (N_ROWS, N_ROWS)  # then stored in batches
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Item).where(Item.ext_id.like("big%"))) == N_ROWS
        assert s.scalar(select(func.count()).select_from(Label)) == 1
        seqs = s.scalars(select(Item.seq).order_by(Item.seq)).all()
    assert seqs == list(range(len(seqs)))  # import order kept, no gaps after the earlier import


def test_project_page_follows_the_job_in_a_browser(db: Database, app: Any, browser: Any,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """In chromium: the admin uploads a file on the project page, lands on it with the job running (the job
    is held after reading), and, without touching the page, sees it end: app.js polls imports.json (allowed by
    the CSP) and reloads once the job is done, so the result and the new item count show."""
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    _, token = service.add_user(db, "boss", "admin")
    real = service.import_items
    read_done, release = threading.Event(), threading.Event()

    def gated(*args: Any, progress: Any = None, **kwargs: Any) -> Any:
        def report(read: int, stored: int) -> None:
            progress(read, stored)
            if stored == 0:
                read_done.set()
                assert release.wait(120), "the test never released the import"
        return real(*args, progress=report, **kwargs)

    monkeypatch.setattr(service, "import_items", gated)
    with LiveServer(app) as server:
        context = browser.new_context()
        page = context.new_page()
        errors: list[str] = []  # script errors (a fetch the CSP blocked included) and failed requests
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None)
        page.on("response", lambda r: errors.append(r.url) if r.status >= 400 and "favicon" not in r.url else None)
        browser_login(page, server.url, token)
        page.goto(f"{server.url}/admin/p/{pid}")
        page.set_input_files('input[name="file"]', files=[{"name": "pairwise.jsonl", "mimeType": "application/json",
                                                           "buffer": (DATA / "pairwise.jsonl").read_bytes()}])
        with page.expect_navigation():
            page.click('form[action$="/import"] button[type=submit]')
        try:
            assert read_done.wait(60)
            assert page.locator("#imports tr[data-job]").first.get_attribute("data-state") in ("queued", "running")
        finally:
            release.set()
        page.wait_for_selector('#imports tr[data-state="done"]')  # after app.js's reload
        assert "imported" in page.locator("#imports .result").first.inner_text()
        prog = service.progress(db, pid)
        assert prog["items"] + prog["gold_items"] == 4  # the file's rows, stored
        assert page.locator("#overall").inner_text().startswith(f"{prog['items']} items ({prog['gold_items']} gold)")
        assert errors == []
        context.close()
