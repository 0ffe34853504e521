"""Load benchmark of the annotation service on loopback, on SQLite and PostgreSQL (issue 6).

Every client is an annotator logged in with their link who does the real page flow as a browser does: GET the
task page once, then for each label POST the form with the assignment id and CSRF token of the page on screen;
the POST answers (200) with the next task page, whose form the next submission uses. One request per
submission. Three runs per database:
  (a) open loop: 100 clients, each with Poisson arrivals at 3 submissions/s, for 30 s: achieved submissions/s
      and p50/p99 latency of a submission (measured from the scheduled arrival, so queueing counts);
  (b) closed loop: 32 clients back to back: the sustained submissions/s, and its ratio to a bare FastAPI endpoint
      that validates the same form body and inserts one row (same database, measured in the same run, right
      before and right after the service, to the mean of the two);
  (c) restart: 80 clients label a project with gold items (N = 3, a gold item due after every 5 regular ones)
      back to back to the end, with the server stopped (SIGTERM) and started again when half the labels are in;
      a client whose request failed re-sends the same POST (even-numbered clients) or reloads its task page
      (odd). Checked: labels the clients saw confirmed but the database lacks (lost), labels or assignments
      stored twice (duplicated), regular items without exactly N labels, gold labels missing (every annotator
      labels every gold item before the done page), assignments left open; goal 0 for each.
The clients run in this process on uvloop (when installed) with a lean HTTP/1.1 client on asyncio streams
(`LeanHttp`), which takes far less CPU from the server on a small machine than httpx (`--client httpx`).
Run: .venv/bin/python perf/annotate_load.py [--db sqlite|postgres|both] [--quick] [--only restart]
     [--http h11|httptools|bounded] [--loop asyncio|uvloop] [--workers N]   (uvicorn flags for both servers;
     default: auto choice, 1 worker; bounded: the protocol `tailor annotate serve` runs) [--client lean|httpx]
It exits with an error naming every goal of (c) a database missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
from sqlalchemy import create_engine, func, select, text

from tailorbench.annotation import service
from tailorbench.annotation.db import Database, resolve_url
from tailorbench.annotation.models import Assignment, Item, Label

PG_URL = os.environ.get("TAILOR_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
ASSIGNMENT_RE = re.compile(rb'action="/a/(\d+)"')
CSRF_RE = re.compile(rb'name="csrf" value="([^"]+)"')
NONCE_RE = re.compile(rb'name="nonce" value="([^"]+)"')


# --- the bare reference endpoint ---------------------------------------------------------------------


def _bare_table() -> Any:
    from sqlalchemy import Column, Integer, MetaData, String, Table

    return Table("bare_labels", MetaData(), Column("id", Integer, primary_key=True), Column("choice", String(2)),
                 Column("csrf", String(64)))


def create_bare_table(db_url: str) -> None:
    """Made once by the bench process, not by the bare app (its workers would race to create it)."""
    db = Database(db_url, run_migrations=False)
    try:
        _bare_table().metadata.create_all(db.engine)
    finally:
        db.dispose()


def bare_app() -> Any:
    """POST /bare: validate the same form body (csrf + choice) and insert one row; nothing else."""
    from fastapi import FastAPI, Form, HTTPException

    db = Database(os.environ["TAILOR_ANNOTATE_DB"], run_migrations=False)
    table = _bare_table()
    app = FastAPI()

    @app.post("/bare")
    def bare(csrf: str = Form(...), choice: str = Form(...)) -> dict[str, str]:
        if choice not in ("1", "2") or not csrf:
            raise HTTPException(422)
        with db.session() as s:
            s.execute(table.insert().values(choice=choice, csrf=csrf))
        return {"ok": "1"}

    return app


# --- server processes --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: extra uvicorn flags for both servers (the service and the bare endpoint), from --http / --loop
UVICORN_FLAGS: list[str] = []
#: `--http bounded`: the protocol `tailor annotate serve` runs (httptools with bounded request heads)
BOUNDED = "tailorbench.annotation.web.bounded_http:BoundedHttpToolsProtocol"


class Server:
    def __init__(self, db_url: str, factory: str, port: int) -> None:
        self.db_url, self.factory, self.port = db_url, factory, port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "TAILOR_ANNOTATE_DB": self.db_url}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", self.factory, "--host", "127.0.0.1", "--port",
             str(self.port), "--log-level", "warning", "--no-access-log", "--app-dir", str(Path(__file__).parent),
             *UVICORN_FLAGS],
            env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
            self.proc = None


# --- clients ------------------------------------------------------------------------------------------


class HttpError(Exception):
    """A failed request (connection refused or closed, a bad answer): the client counts it and retries."""


class LeanHttp:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams, for the load generator only: one connection,
    one request at a time, a cookie jar of one cookie. It sends what a browser's form flow sends (cookie,
    urlencoded body) and reads Content-Length or chunked answers. It exists because httpx, on the same 2 cores
    as the server, spent about as much CPU per request as the server did (measured with py-spy; see
    docs/performance.md); `--client httpx` still runs the old client."""

    def __init__(self, base: str, timeout: float = 30.0) -> None:
        hostport = base.split("://", 1)[1].rstrip("/")
        host, port = hostport.rsplit(":", 1)
        self.host, self.port, self.timeout = host, int(port), timeout
        self._head = f"Host: {hostport}\r\nUser-Agent: annotate-load\r\n".encode()
        self.cookie: bytes = b""
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._r is not None and self._r.at_eof():  # the server closed it while idle (a restart)
            self._drop()
        if self._r is None or self._w is None:
            try:
                self._r, self._w = await asyncio.open_connection(self.host, self.port)
            except OSError as exc:
                raise HttpError(str(exc)) from exc
        return self._r, self._w

    def _drop(self) -> None:
        if self._w is not None:
            self._w.close()
        self._r = self._w = None

    async def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, bytes]:
        """(status, body); a Set-Cookie in the answer replaces the cookie sent from then on."""
        body = urlencode(form).encode() if form is not None else b""
        head = [f"{method} {path} HTTP/1.1\r\n".encode(), self._head]
        if self.cookie:
            head.append(b"Cookie: " + self.cookie + b"\r\n")
        if form is not None:
            head.append(b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n" % len(body))
        head.append(b"\r\n")
        try:
            r, w = await self._connect()
            w.write(b"".join(head) + body)
            return await asyncio.wait_for(self._answer(r), self.timeout)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ValueError) as exc:
            self._drop()
            raise HttpError(repr(exc)) from exc

    async def _answer(self, r: asyncio.StreamReader) -> tuple[int, bytes]:
        head = await r.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = -1
        chunked = close = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = value.strip().lower() == b"close"
            elif name == b"set-cookie":
                self.cookie = value.strip().split(b";", 1)[0]
        if chunked:
            parts = []
            while True:
                size = int((await r.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                data = await r.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(data[:-2])
            data = b"".join(parts)
        elif length >= 0:
            data = await r.readexactly(length)
        else:
            data = await r.read()
            close = True
        if close:
            self._drop()
        return status, data

    async def aclose(self) -> None:
        self._drop()


class HttpxHttp:
    """The same interface over httpx (the generator before the lean client; `--client httpx`)."""

    def __init__(self, base: str, timeout: float = 30.0) -> None:
        import httpx

        self._httpx = httpx
        self.http = httpx.AsyncClient(base_url=base, timeout=timeout)

    async def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, bytes]:
        try:
            r = await self.http.request(method, path, data=form, follow_redirects=False)
        except self._httpx.TransportError as exc:
            raise HttpError(repr(exc)) from exc
        return r.status_code, r.content

    async def aclose(self) -> None:
        await self.http.aclose()


#: which HTTP client the load generator uses (--client)
HTTP_CLIENT: dict[str, Any] = {"lean": LeanHttp, "httpx": HttpxHttp}
CLIENT_KIND = ["lean"]


def make_http(base: str) -> LeanHttp | HttpxHttp:
    return HTTP_CLIENT[CLIENT_KIND[0]](base, 30.0)


class Client:
    """One annotator's browser. After a failed request it either reloads the task page (`resend=False`, the
    page flow resumes the same assignment) or re-sends the very POST that failed (`resend=True`: a retry or a
    resubmitted reload; the server answers a repeat of a stored label with the current page and stores
    nothing)."""

    def __init__(self, base: str, token: str, pid: int, resend: bool = False) -> None:
        self.http = make_http(base)
        self.token, self.pid, self.resend = token, pid, resend
        self.confirmed: list[int] = []
        #: the form on screen: (assignment id, CSRF token); None = fetch the current page first
        self.form: tuple[int, str] | None = None
        #: a POST that got no answer, re-sent as it was (`resend`)
        self.unanswered: tuple[int, dict[str, str]] | None = None
        self.finished = False
        self.resent = self.reloaded = 0

    async def login(self) -> None:
        """Log in with the link (its confirmation page, then the confirming POST), then open the first task page
        (as the browser does before the first label): the clock of a run starts with a page on every screen."""
        status, body = await self.http.request("GET", f"/login/{self.token}")
        nonce = NONCE_RE.search(body)
        assert status == 200 and nonce is not None, status
        status, _ = await self.http.request("POST", f"/login/{self.token}", {"nonce": nonce.group(1).decode()})
        assert status == 303, status
        status, body = await self.http.request("GET", f"/p/{self.pid}")
        assert status == 200, status
        self._read(body)

    def _read(self, body: bytes) -> None:
        m = ASSIGNMENT_RE.search(body)
        if m is None:
            self.form, self.finished = None, True
            return
        csrf = CSRF_RE.search(body)
        assert csrf is not None
        self.form = (int(m.group(1)), csrf.group(1).decode())

    async def one(self) -> float | None:
        """One submission by the page flow; its seconds (a GET of the page first only when a failed request
        left no page on screen and the client reloads), or None once the done page is on screen."""
        t0 = time.perf_counter()
        if self.finished:  # the done page is on screen: the annotator stops there
            return None
        if self.unanswered is not None:
            aid, form = self.unanswered
            self.resent += 1
        else:
            if self.form is None:
                self.reloaded += 1
                status, body = await self.http.request("GET", f"/p/{self.pid}")
                if status != 200:
                    raise HttpError(f"GET page: {status}")
                self._read(body)
            if self.form is None:
                return None
            aid, csrf = self.form
            form = {"csrf": csrf, "choice": random.choice("12")}
            self.form = None  # until the answer arrives: after an error the next try reloads the page ...
            if self.resend:  # ... or sends this POST again
                self.unanswered = (aid, form)
        status, body = await self.http.request("POST", f"/a/{aid}", form)
        if status != 200:
            raise HttpError(f"POST submission: {status}")
        self.unanswered = None
        self.confirmed.append(aid)
        self._read(body)
        return time.perf_counter() - t0


def _pct(xs: list[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(xs) * 1000, q)) if xs else None


async def open_loop(clients: list[Client], rate: float, duration: float) -> dict[str, Any]:
    lat: list[float] = []
    start = time.perf_counter()

    async def run(c: Client) -> None:
        due = start + random.expovariate(rate)
        while due < start + duration:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            got = await c.one()
            if got is None:
                return
            lat.append(time.perf_counter() - due)  # from the scheduled arrival: queueing delay counts
            due += random.expovariate(rate)

    await asyncio.gather(*(run(c) for c in clients))
    elapsed = time.perf_counter() - start
    return {"clients": len(clients), "offered_per_s": rate * len(clients), "duration_s": round(elapsed, 1),
            "submissions": len(lat), "achieved_per_s": round(len(lat) / elapsed, 1),
            "p50_ms": _pct(lat, 50), "p99_ms": _pct(lat, 99)}


async def closed_loop(clients: list[Client], duration: float) -> dict[str, Any]:
    done = 0
    start = time.perf_counter()

    async def run(c: Client) -> None:
        nonlocal done
        while time.perf_counter() - start < duration:
            if await c.one() is None:
                return
            done += 1

    await asyncio.gather(*(run(c) for c in clients))
    elapsed = time.perf_counter() - start
    return {"clients": len(clients), "duration_s": round(elapsed, 1), "submissions": done,
            "per_s": round(done / elapsed, 1)}


async def restart_run(clients: list[Client], server: Server, labels: int, limit_s: float) -> dict[str, Any]:
    """Every client labels back to back until its done page; the server is stopped and started again once
    half of the project's `labels` are confirmed. Failed requests are retried by each client's own way
    (`Client.resend`). Stops at `limit_s` if the clients have not all finished (the audit then shows it)."""
    errors = 0
    start = time.perf_counter()

    async def run(c: Client) -> None:
        nonlocal errors
        while time.perf_counter() - start < limit_s:
            try:
                if await c.one() is None:
                    return
            except HttpError:
                errors += 1  # the server is restarting: try again (re-send or reload)
                await asyncio.sleep(0.05)

    tasks = [asyncio.create_task(run(c)) for c in clients]
    while sum(len(c.confirmed) for c in clients) < labels // 2 and not all(t.done() for t in tasks):
        await asyncio.sleep(0.01)
    at = sum(len(c.confirmed) for c in clients)
    t0 = time.perf_counter()
    await asyncio.to_thread(server.stop)
    await asyncio.to_thread(server.start)
    down_s = time.perf_counter() - t0
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    return {"clients": len(clients), "resending_clients": sum(c.resend for c in clients),
            "duration_s": round(elapsed, 1), "restart_after_labels": at, "restart_s": round(down_s, 1),
            "failed_requests": errors, "posts_resent": sum(c.resent for c in clients),
            "pages_reloaded": sum(c.reloaded for c in clients),
            "finished_clients": sum(c.finished for c in clients)}


async def bare_loop(base: str, n_clients: int, duration: float) -> float:
    """Submissions/s of the bare endpoint with `n_clients` back to back. The clients are made and connected
    (one request each) before the clock starts, as the service's clients are logged in before theirs."""
    done = 0
    clients = [make_http(base) for _ in range(n_clients)]

    async def post(http: LeanHttp | HttpxHttp) -> None:
        status, _ = await http.request("POST", "/bare", {"csrf": uuid.uuid4().hex, "choice": random.choice("12")})
        assert status == 200, status

    async def run(http: LeanHttp | HttpxHttp) -> None:
        nonlocal done
        while time.perf_counter() - start < duration:
            await post(http)
            done += 1

    try:
        await asyncio.gather(*(post(c) for c in clients))
        start = time.perf_counter()
        await asyncio.gather(*(run(c) for c in clients))
        return done / (time.perf_counter() - start)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def uvicorn_impl() -> dict[str, str]:
    """What uvicorn's `auto` picks here (httptools / uvloop when installed), or the flags given."""
    import importlib.util

    flags = dict(zip(UVICORN_FLAGS[::2], UVICORN_FLAGS[1::2], strict=True))
    auto_http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    auto_loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return {"http": flags.get("--http", auto_http), "loop": flags.get("--loop", auto_loop),
            "workers": flags.get("--workers", "1")}


# --- one database --------------------------------------------------------------------------------------


N_PER_ITEM = 3


def setup(db_url: str, n_items: int, n_clients: int, name: str, n_gold: int = 0,
          gold_every: int = 1_000_000) -> tuple[int, list[str]]:
    db = Database(db_url)
    try:
        pid = service.create_project(db, name, "pairwise", N_PER_ITEM, "", gold_every)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "items.jsonl"
            with path.open("w") as f:
                for i in range(n_items + n_gold):
                    gold = {"gold": "A"} if i >= n_items else {}
                    f.write(json.dumps({"id": f"{name}-{i}", "split": "general", "user_id": f"u{i % 50}",
                                        "persona": {"age": 30 + i % 40, "likes": "tea"}, "question": f"Q {i}?",
                                        "answer_a": f"Answer A {i} " * 20, "answer_b": f"Answer B {i} " * 20,
                                        **gold})
                            + "\n")
            service.import_items(db, name, path)
        tokens = [service.add_user(db, f"{name}-ann{i}", "annotator", [name])[1] for i in range(n_clients)]
    finally:
        db.dispose()
    return pid, tokens


def audit(db_url: str, pid: int, clients: list[Client]) -> dict[str, int]:
    """What the database holds against what the clients saw confirmed, and the assignment rules at the end."""
    db = Database(db_url, run_migrations=False)
    try:
        with db.session() as s:
            stored = set(s.scalars(select(Label.assignment_id).where(Label.project_id == pid)))
            n_labels = s.scalar(select(func.count()).select_from(Label).where(Label.project_id == pid)) or 0
            pairs = s.execute(select(Assignment.item_id, Assignment.user_id).where(Assignment.project_id == pid)).all()
            n_open = s.scalar(select(func.count()).select_from(Assignment).where(
                Assignment.project_id == pid, Assignment.done.is_(False))) or 0
            items = dict(s.execute(select(Item.id, Item.is_gold).where(Item.project_id == pid)).all())
            labelled = s.execute(select(Label.item_id, Label.user_id).where(Label.project_id == pid)).all()
    finally:
        db.dispose()
    confirmed = [a for c in clients for a in c.confirmed]
    per_item = Counter(i for i, _ in labelled)
    users = {u for _, u in labelled}
    gold = [i for i, g in items.items() if g]
    gold_seen = set(labelled)
    return {"labels_expected": N_PER_ITEM * (len(items) - len(gold)) + len(gold) * len(clients),
            "confirmed": len(confirmed), "stored": n_labels, "lost": len(set(confirmed) - stored),
            "duplicated": (n_labels - len(stored)) + (len(pairs) - len(set(pairs))),
            "regular_items_not_n": sum(per_item[i] != N_PER_ITEM for i, g in items.items() if not g),
            "gold_labels_missing": sum((i, u) not in gold_seen for i in gold for u in users)
            + len(gold) * (len(clients) - len(users)),
            "open_assignments": n_open}


#: the restart run (c): clients, and a gold item due after every GOLD_EVERY regular ones
RESTART_CLIENTS, GOLD_EVERY = 80, 5
#: what (c) must show as 0 (`finished_clients` must be all of them)
RESTART_GOALS = ("lost", "duplicated", "regular_items_not_n", "gold_labels_missing", "open_assignments")


async def restart_check(db_url: str, server: Server, quick: bool) -> dict[str, Any]:
    """(c): a project with gold items labelled to the end by 80 clients across a server restart, then audited."""
    n_items, n_gold = (400, 10) if quick else (2000, 20)
    pid, tokens = setup(db_url, n_items, RESTART_CLIENTS, "restart", n_gold, GOLD_EVERY)
    server.start()
    try:
        clients = [Client(f"http://127.0.0.1:{server.port}", t, pid, resend=i % 2 == 0) for i, t in enumerate(tokens)]
        await asyncio.gather(*(c.login() for c in clients))
        out = await restart_run(clients, server, N_PER_ITEM * n_items + n_gold * RESTART_CLIENTS, 600.0)
        out["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    finally:
        server.stop()
    out["project"] = {"regular_items": n_items, "gold_items": n_gold, "n_per_item": N_PER_ITEM,
                      "gold_every": GOLD_EVERY}
    out.update(audit(db_url, pid, clients))
    return out


def restart_failures(result: dict[str, Any]) -> list[str]:
    """The goals of (c) that a result misses, in words (empty when all are met)."""
    c = result["c_restart"]
    missed = [f"{result['database']}: {goal} = {c[goal]}" for goal in RESTART_GOALS if c[goal]]
    if c["finished_clients"] != c["clients"]:
        missed.append(f"{result['database']}: only {c['finished_clients']} of {c['clients']} clients finished")
    return missed


async def bench_db(kind: str, db_url: str, quick: bool, only_restart: bool = False) -> dict[str, Any]:
    scale = 0.2 if quick else 1.0
    port = free_port()
    server = Server(db_url, "tailorbench.annotation.web:app_from_env", port)
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"database": kind, "uvicorn": uvicorn_impl(), "client": CLIENT_KIND[0]}
    if only_restart:
        out["c_restart"] = await restart_check(db_url, server, quick)
        return out
    pid, tokens = setup(db_url, 8000, 100, "load")  # 24,000 labels: (a) and (b) never run out of work
    server.start()
    try:
        clients = [Client(base, t, pid) for t in tokens]
        await asyncio.gather(*(c.login() for c in clients))
        out["a_open_loop"] = await open_loop(clients, 3.0, 30 * scale)
        out["a_open_loop"]["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    finally:
        server.stop()
    # the bare endpoint runs right before and right after the service's closed loop (this machine is shared:
    # its load drifts); the ratio is to the mean of the two
    create_bare_table(db_url)
    bare = Server(db_url, "annotate_load:bare_app", free_port())
    bare_rates = []
    for phase in ("before", "after"):
        if phase == "after":
            server.start()
            try:
                out["b_closed_loop"] = await closed_loop(clients[:32], 10 * scale)
                out["b_closed_loop"]["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
            finally:
                server.stop()
        bare.start()
        try:
            bare_rates.append(await bare_loop(f"http://127.0.0.1:{bare.port}", 32, 5 * scale))
        finally:
            bare.stop()
    bare_rate = sum(bare_rates) / 2
    out["b_closed_loop"]["bare_endpoint_per_s"] = round(bare_rate, 1)
    out["b_closed_loop"]["bare_before_after_per_s"] = [round(r, 1) for r in bare_rates]
    out["b_closed_loop"]["ratio"] = round(out["b_closed_loop"]["per_s"] / bare_rate, 2)
    out["c_restart"] = await restart_check(db_url, server, quick)
    return out


def run_async(coro: Any) -> Any:
    """The load generator runs on uvloop when it is installed (less CPU per request taken from the server)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--quick", action="store_true",
                    help="a fifth of the durations and a fifth of the restart run's items (smoke run)")
    ap.add_argument("--only", choices=["restart"], help="run only (c), the restart run")
    ap.add_argument("--http", choices=["auto", "h11", "httptools", "bounded"], default="auto",
                    help="uvicorn --http (bounded: the protocol `tailor annotate serve` runs, web/bounded_http.py)")
    ap.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto", help="uvicorn --loop")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn --workers, for both servers (default 1)")
    ap.add_argument("--client", choices=sorted(HTTP_CLIENT), default="lean",
                    help="the load generator's HTTP client (default: lean, on raw asyncio streams)")
    args = ap.parse_args()
    CLIENT_KIND[0] = args.client
    if args.workers != 1:
        UVICORN_FLAGS.extend(["--workers", str(args.workers)])
    for flag, value in (("--http", BOUNDED if args.http == "bounded" else args.http), ("--loop", args.loop)):
        if value != "auto":
            UVICORN_FLAGS.extend([flag, value])
    results = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run_async(bench_db("sqlite", resolve_url(None, tmp), args.quick, bool(args.only))))
    if args.db in ("postgres", "both"):
        schema = f"tb_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            url = f"{PG_URL}?options=-csearch_path%3D{schema}"
            results.append(run_async(bench_db("postgres", url, args.quick, bool(args.only))))
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    print(json.dumps(results, indent=2))
    missed = [m for r in results for m in restart_failures(r)]
    if missed:
        sys.exit("restart run (c) missed its goals: " + "; ".join(missed))


if __name__ == "__main__":
    main()
