"""The scripted attacks of the service audit, on SQLite and PostgreSQL: oversized bodies (refused before they are
read and before any login check), ids no column holds, numbers and text past the form's bounds, odd upload names
and hostile nesting in imports, and error pages: every one a clean 4xx with the security headers, never a 500,
never a server path or traceback."""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Item, Label, Project
from tailorbench.annotation.web import create_app
from tailorbench.annotation.web.security import COOKIE, CSP
from tests.annotation.conftest import CSRF_RE, DATA, LiveServer, login

HUGE_IDS = [2**63, 2**63 - 1, 99999999999999999999, 2**31]


def _pairwise(db: Database) -> int:
    pid = service.create_project(db, "pw", "pairwise", 2, "Pick one.", 5)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    return pid


def _admin(db: Database, app: Any) -> tuple[TestClient, str]:
    _, token = service.add_user(db, "boss", "admin")
    client = login(app, token)
    csrf = CSRF_RE.search(client.get("/admin").text)
    assert csrf is not None
    return client, csrf.group(1)


def _guarded(r: Any) -> None:
    """The security headers are on the answer, and it shows no server path or traceback."""
    assert r.headers["content-security-policy"] == CSP
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-store"
    for leak in ("Traceback", tempfile.gettempdir() + "/", "site-packages", "tb-import-"):
        assert leak not in r.text


def _raw(port: int, head: str, *parts: bytes) -> bytes:
    """Send a request head and body parts over one connection; everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode("latin-1"))
        for part in parts:
            sock.sendall(part)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


# --- request bodies -----------------------------------------------------------------------------------


def test_huge_form_body_is_refused_before_it_is_sent(db: Database, app: Any) -> None:
    """No cookie and a 300 MiB form body announced: the 413 comes back while not one byte of the body has been
    sent (so the server cannot have read it), and the connection is closed."""
    with LiveServer(app) as server:
        answer = _raw(server.port, "POST /a/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/x-www-form-urlencoded\r\n"
                                   f"Content-Length: {300 * 1024 * 1024}\r\n\r\n")
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
    assert head.startswith("http/1.1 413"), head
    assert "connection: close" in head and "content-security-policy:" in head
    assert b"at most 64 KiB" in answer


def test_streamed_body_is_cut_off_at_the_limit(db: Database) -> None:
    """A chunked body (no Content-Length) is counted while it arrives: past the limit the server answers 413
    and closes, without waiting for the rest."""
    app = create_app(db, max_form_bytes=1000)
    with LiveServer(app) as server:
        answer = _raw(server.port, "POST /a/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/x-www-form-urlencoded\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n",
                      b"258\r\n" + b"n" * 600 + b"\r\n", b"258\r\n" + b"n" * 600 + b"\r\n")  # no last chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"at most 1000 bytes" in answer


def test_body_within_the_limit_still_works(db: Database, app: Any) -> None:
    """Small bodies reach the routes: a POST without a cookie is the usual 401."""
    r = TestClient(app).post("/a/1", data={"csrf": "x", "note": "n" * 1000})
    assert r.status_code == 401
    _guarded(r)


def test_oversized_import_is_refused_and_writes_nothing(db: Database, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An import over its limit is a 413 with or without an admin session, and no temporary file is written;
    other POSTs keep the small limit (an upload to them is a 413 too)."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    app = create_app(db, max_import_bytes=256 * 1024)
    pid = _pairwise(db)
    admin, csrf = _admin(db, app)
    big = b'{"id": "x"}\n' * 40_000  # 480 KB
    for client in (TestClient(app), admin):
        r = client.post(f"/admin/p/{pid}/import", data={"csrf": csrf}, files={"file": ("big.jsonl", big)})
        assert r.status_code == 413, r.text
        assert "at most 256 KiB" in r.text
        _guarded(r)
    r = admin.post("/admin/projects", data={"csrf": csrf}, files={"file": ("big.jsonl", big)})
    assert r.status_code == 413
    assert list(spool.iterdir()) == []
    with LiveServer(app) as server:  # a 1 GiB upload announced: answered before a byte of it is sent
        answer = _raw(server.port, f"POST /admin/p/{pid}/import HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: multipart/form-data; boundary=xyz\r\n"
                                   f"Content-Length: {1 << 30}\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413")
    assert list(spool.iterdir()) == []
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Item)) == 6  # the fixture's items only


# --- ids ----------------------------------------------------------------------------------------------


def test_ids_no_column_holds_are_404_everywhere(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    _, ann_csrf, _ = ann.page(pid)
    admin, csrf = _admin(db, app)
    for n in HUGE_IDS:
        for path in (f"/a/{n}", f"/p/{n}"):
            r = ann.client.get(path)
            assert r.status_code == 404, (path, r.status_code)
            _guarded(r)
        r = ann.submit(n, ann_csrf, choice="1")
        assert r.status_code == 404, (n, r.text)
        _guarded(r)
        for path in (f"/admin/p/{n}", f"/admin/p/{n}/agreement.json", f"/admin/p/{n}/imports.json",
                     f"/admin/p/{n}/export/ratings.jsonl"):
            r = admin.get(path)
            assert r.status_code == 404, (path, r.status_code)
            _guarded(r)
        for path in (f"/admin/p/{n}/members", f"/admin/p/{n}/import"):
            r = admin.post(path, data={"csrf": csrf, "user": "ann"}, files={"file": ("a.jsonl", b"{}")})
            assert r.status_code == 404, (path, r.status_code)
    # the largest id a column holds, and ids that are simply absent: 404 from the routes themselves
    for n in (2**31 - 1, 999):
        assert ann.client.get(f"/a/{n}").status_code == 404
        assert ann.client.get(f"/p/{n}").status_code == 404
        assert ann.submit(n, ann_csrf, choice="1").status_code == 404
        for path in (f"/admin/p/{n}", f"/admin/p/{n}/agreement.json", f"/admin/p/{n}/export/ratings.jsonl"):
            r = admin.get(path)
            assert r.status_code == 404, (path, r.status_code)
            _guarded(r)
        r = admin.post(f"/admin/p/{n}/import", data={"csrf": csrf}, files={"file": ("a.jsonl", b"{}")})
        assert r.status_code == 404
    for path in ("/a/abc", "/p/-1", "/a/1.5", "/admin/p/0x10", "/nowhere"):
        r = ann.client.get(path)
        assert r.status_code == 404, path
        _guarded(r)


# --- form fields --------------------------------------------------------------------------------------


@pytest.mark.parametrize("field,value", [
    ("n_per_item", "1e30"), ("n_per_item", str(10**30)), ("n_per_item", "2.5"), ("n_per_item", "-1"),
    ("n_per_item", "0"), ("n_per_item", "abc"), ("n_per_item", "101"), ("gold_every", "1e30"),
    ("gold_every", str(2**63)), ("gold_every", "0"), ("name", "p" * 201),
])
def test_create_project_numbers_out_of_bounds_are_422(db: Database, app: Any, field: str, value: str) -> None:
    admin, csrf = _admin(db, app)
    form = {"csrf": csrf, "name": "proj", "task_type": "pairwise", "n_per_item": "3", "gold_every": "5", field: value}
    r = admin.post("/admin/projects", data=form, follow_redirects=False)
    assert r.status_code == 422, r.text
    assert "Project not created" in r.text
    _guarded(r)
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Project)) == 0
    ok = admin.post("/admin/projects", data={**form, field: "proj" if field == "name" else "7"},
                    follow_redirects=False)
    assert ok.status_code == 303


def _labels(db: Database) -> list[tuple[str, int | None]]:
    with db.session() as s:
        return [(n, d) for n, d in s.execute(select(Label.note, Label.duration_ms).order_by(Label.id))]


@pytest.mark.parametrize("fields", [
    {"elapsed_ms": "1e25"}, {"elapsed_ms": "99999999999"}, {"elapsed_ms": "-5"}, {"elapsed_ms": "86400001"},
    {"elapsed_ms": "1.5"}, {"elapsed_ms": "soon"}, {"elapsed_ms": "9" * 5000}, {"note": "n" * 2001},
    {"note": "x" * 1000 + "\u00e9" * 1001},
])
def test_label_fields_out_of_bounds_are_422_with_nothing_stored(db: Database, app: Any, make_annotator: Any,
                                                                fields: dict[str, str]) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    assert aid is not None
    r = ann.submit(aid, csrf, choice="1", **fields)
    assert r.status_code == 422, r.text
    assert "elapsed_ms" in r.text or "note" in r.text
    _guarded(r)
    assert _labels(db) == []
    again, csrf, _ = ann.page(pid)
    assert again == aid  # the same assignment, still open


def test_label_fields_at_their_bounds_are_stored(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    for fields in ({"elapsed_ms": "86400000", "note": "n" * 2000}, {"elapsed_ms": "0"}, {"elapsed_ms": ""}):
        aid, csrf, _ = ann.page(pid)
        assert aid is not None
        assert ann.submit(aid, csrf, choice="1", **fields).status_code == 200
    assert _labels(db) == [("n" * 2000, 86_400_000), ("", 0), ("", None)]


def test_note_of_five_million_characters_is_refused(db: Database, app: Any, make_annotator: Any) -> None:
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    assert aid is not None
    r = ann.submit(aid, csrf, choice="1", note="n" * 5_000_000)
    assert r.status_code == 413
    _guarded(r)
    assert _labels(db) == []


# --- imports ------------------------------------------------------------------------------------------


def _rows(prefix: str, n: int = 2) -> bytes:
    rows = [{"id": f"{prefix}{i}", "split": "general", "user_id": "u", "persona": {"age": 30},
             "question": f"Q{i}?", "answer_a": f"a{i}", "answer_b": f"b{i}"} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _import(app: Any, admin: TestClient, csrf: str, pid: int, name: str, body: bytes) -> dict[str, Any]:
    """Upload, wait for the job, and return its status from imports.json."""
    r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf}, files={"file": (name, body)},
                   follow_redirects=False)
    assert r.status_code == 303, (name, r.status_code, r.text)
    app.state.imports.wait()
    jobs = admin.get(f"/admin/p/{pid}/imports.json").json()["jobs"]
    return dict(jobs[0])


@pytest.mark.parametrize("name", ["..", ".", "../../etc/passwd", "/abs/path.jsonl", "a/../b.jsonl",
                                  "..\\..\\win.jsonl", "semi;colon name.jsonl", "\u00fcml\u00e4ut.jsonl",
                                  "x" * 400 + ".jsonl", ".hidden.jsonl", "CON"])
def test_odd_upload_names_import_cleanly(db: Database, app: Any, tmp_path: Path, name: str) -> None:
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    admin, csrf = _admin(db, app)
    job = _import(app, admin, csrf, pid, name, _rows("r"))
    assert job["state"] == "done", job
    assert "/" not in job["file"] and not job["file"].startswith(".")
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Item)) == 2
    page = admin.get(f"/admin/p/{pid}")
    assert page.status_code == 200
    _guarded(page)


def test_empty_upload_name_is_a_clean_422(db: Database, app: Any) -> None:
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    admin, csrf = _admin(db, app)
    r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf}, files={"file": ("", _rows("r"))})
    assert r.status_code == 422 and "Choose a JSONL file to import." in r.text  # a file part without a name
    _guarded(r)


def test_deep_persona_fails_the_import_with_its_line(db: Database, app: Any) -> None:
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    admin, csrf = _admin(db, app)
    persona: dict[str, Any] = {"age": 30}
    for _ in range(300):
        persona = {"k": persona}
    deep = {"id": "deep", "split": "general", "user_id": "u", "persona": persona, "question": "Q?",
            "answer_a": "a", "answer_b": "b"}
    job = _import(app, admin, csrf, pid, "deep.jsonl", _rows("ok") + json.dumps(deep).encode() + b"\n")
    assert job["state"] == "failed"
    assert job["message"].startswith("Nothing was imported: deep.jsonl:3:"), job
    assert "nested more than 64 levels deep" in job["message"]  # the bounded reader (files.py) stops it first
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Item)) == 0
    page = admin.get(f"/admin/p/{pid}")
    assert "deep.jsonl:3" in page.text
    _guarded(page)


def test_import_errors_name_the_upload_never_the_temp_path(db: Database, app: Any) -> None:
    pid = service.create_project(db, "pw", "pairwise", 2, "", 5)
    admin, csrf = _admin(db, app)
    twice = (DATA / "paircase.jsonl").read_bytes().splitlines(keepends=True)[0] * 2  # a paircase duplicate id
    for body, what in ((b"not json\n", "bad.jsonl:1"), (_rows("r") + _rows("r"), "bad.jsonl:3: field 'id'"),
                       (b"", "bad.jsonl: file has no rows"),
                       (twice, "(first at bad.jsonl:1)"),
                       (json.dumps({"id": "i" * 301, "persona": {}}).encode(), "bad.jsonl:1")):
        job = _import(app, admin, csrf, pid, "bad.jsonl", body)
        assert job["state"] == "failed" and what in job["message"], job
        assert tempfile.gettempdir() not in job["message"] and "tb-import-" not in job["message"]
    page = admin.get(f"/admin/p/{pid}")
    _guarded(page)
    r = admin.post(f"/admin/p/{pid}/import", data={"csrf": csrf, "format": "nope"},
                   files={"file": ("x.jsonl", _rows("z"))}, follow_redirects=False)
    assert r.status_code == 303
    app.state.imports.wait()
    job = admin.get(f"/admin/p/{pid}/imports.json").json()["jobs"][0]
    assert job["state"] == "failed" and "unknown import format 'nope'" in job["message"]


def test_agreement_of_a_missing_project_is_404(db: Database, app: Any) -> None:
    admin, _ = _admin(db, app)
    r = admin.get("/admin/p/999/agreement.json")
    assert r.status_code == 404
    _guarded(r)


# --- error pages --------------------------------------------------------------------------------------


def test_every_error_page_carries_the_security_headers(db: Database, monkeypatch: pytest.MonkeyPatch,
                                                       make_annotator: Any) -> None:
    app = create_app(db, login_failures=1, max_form_bytes=2000)
    pid = _pairwise(db)
    ann = make_annotator(app, "ann", ["pw"])
    aid, csrf, _ = ann.page(pid)
    answers = {
        404: ann.client.get("/a/99999999999999999999"),
        405: ann.client.put("/a/1"),
        413: ann.client.post("/a/1", data={"csrf": csrf, "note": "n" * 3000}),
        422: ann.submit(aid or 0, csrf, choice="1", elapsed_ms="1e25"),
    }
    stranger = TestClient(app)
    for _ in range(3):
        last = stranger.get("/login/not-a-token", follow_redirects=False)
    answers[429] = last

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("/srv/secret/path.py exploded")

    monkeypatch.setattr(service, "list_projects", broken)
    failing = TestClient(app, raise_server_exceptions=False)
    failing.cookies.set(COOKIE, ann.client.cookies[COOKIE])
    answers[500] = failing.get("/")
    for status, r in answers.items():
        assert r.status_code == status, (status, r.status_code, r.text[:300])
        _guarded(r)
        assert r.headers["content-type"].startswith("text/html"), status
        assert "/srv/secret" not in r.text and "exploded" not in r.text
