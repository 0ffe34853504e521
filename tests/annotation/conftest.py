"""Fixtures for the annotation service: a fresh database per test on SQLite and on the real PostgreSQL (each
test in its own schema of its worker's own database, tests/conftest.py `pg_url`; dropped afterwards), an app
with helpers to log in and label, and a real uvicorn server on a free loopback port for the browser tests. A
missing PostgreSQL or chromium fails, never skips."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from tailorbench.annotation import service
from tailorbench.annotation.db import Database, resolve_url
from tailorbench.annotation.web import create_app

DATA = Path(__file__).parent / "data"
OUTPUT = Path(os.environ.get("TAILORBENCH_TEST_OUTPUT", Path(__file__).resolve().parents[2] / "runs" / "test-output"))


def _pg_schema_url(url: str, schema: str) -> str:
    return f"{url}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL with an empty database: a SQLite file, or a fresh PostgreSQL schema in this worker's
    database, dropped afterwards."""
    if request.param == "sqlite":
        yield resolve_url(None, tmp_path / "proj")
        return
    admin = request.getfixturevalue("pg_admin")
    schema = f"tb_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _pg_schema_url(request.getfixturevalue("pg_url"), schema)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    store = Database(db_url)
    yield store
    store.dispose()


CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
ASSIGNMENT_RE = re.compile(r'action="/a/(\d+)"')


class Annotator:
    """A logged-in TestClient with helpers for the real page flow (fetch the task page, post its form)."""

    def __init__(self, client: TestClient, name: str) -> None:
        self.client = client
        self.name = name

    def page(self, project_id: int) -> tuple[int | None, str, str]:
        """(assignment id or None when done, csrf token, html) of the current task page."""
        r = self.client.get(f"/p/{project_id}")
        assert r.status_code == 200, r.text
        m = ASSIGNMENT_RE.search(r.text)
        csrf = CSRF_RE.search(r.text)
        assert csrf is not None
        return (int(m.group(1)) if m else None), csrf.group(1), r.text

    def submit(self, assignment_id: int, csrf: str, **fields: str) -> Any:
        return self.client.post(f"/a/{assignment_id}", data={"csrf": csrf, **fields}, follow_redirects=False)


NONCE_RE = re.compile(r'name="nonce" value="([^"]+)"')


def confirm_login(client: TestClient, token: str) -> Any:
    """Open a login link and confirm it as the browser does (GET the confirmation page, POST its form); the
    POST's response."""
    page = client.get(f"/login/{token}", follow_redirects=False)
    assert page.status_code == 200, page.text
    nonce = NONCE_RE.search(page.text)
    assert nonce is not None, page.text
    return client.post(f"/login/{token}", data={"nonce": nonce.group(1)}, follow_redirects=False)


def login(app: Any, token: str, base_url: str = "http://testserver") -> TestClient:
    client = TestClient(app, base_url=base_url)
    r = confirm_login(client, token)
    assert r.status_code == 303, r.text
    return client


def browser_login(page: Any, base_url: str, token: str) -> None:
    """Open a login link in a Playwright page and confirm it (the button of the confirmation page)."""
    page.goto(f"{base_url}/login/{token}")
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")


@pytest.fixture
def make_annotator(db: Database) -> Any:
    """make_annotator(app, name, project) -> Annotator logged in through their personal link."""

    def make(app: Any, name: str, projects: list[str]) -> Annotator:
        _, token = service.add_user(db, name, "annotator", projects)
        return Annotator(login(app, token), name)

    return make


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving the app in a thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def app(db: Database) -> Any:
    return create_app(db)


def vote_all(db: Database, project: str, votes: dict[str, str]) -> None:
    """Each annotator in `votes` (already a member of `project`) answers every item it is given with the answer in
    that source position ("1": answer A, "2": answer B), whatever side the page showed it on."""
    uids = {u["name"]: u["id"] for u in service.list_users(db)}
    pid = next(p["id"] for p in service.list_projects(db) if p["name"] == project)
    for name, choice in votes.items():
        while True:
            with db.session() as s:
                a = service.next_assignment(s, uids[name], pid)
                if a is None:
                    break
                shown = choice if not a.layout["swap"] else {"1": "2", "2": "1"}[choice]
                service.submit(s, uids[name], a.id, {"choice": shown})
