"""Load benchmark of the annotation service on loopback, on SQLite and PostgreSQL (issue 6).

Every client is an annotator logged in with their link who does the real page flow as a browser does: GET the
task page once, then for each label POST the form with the assignment id and CSRF token of the page on screen;
the POST answers (200) with the next task page, whose form the next submission uses. One request per
submission; after a failed request (server restart) the client GETs its current page again. Three runs per
database:
  (a) open loop: 100 clients, each with Poisson arrivals at 3 submissions/s, for 30 s: achieved submissions/s
      and p50/p99 latency of a submission (measured from the scheduled arrival, so queueing counts);
  (b) closed loop: 32 clients back to back: the sustained submissions/s, and its ratio to a bare FastAPI endpoint
      that validates the same form body and inserts one row (same database, measured in the same run, right
      before and right after the service, to the mean of the two);
  (c) closed loop with a server restart (SIGTERM + start) in the middle: labels the clients saw confirmed but
      the database lacks (lost) and labels stored twice (duplicated); goal 0 and 0.
Run: .venv/bin/python bench/annotate_load.py [--db sqlite|postgres|both] [--quick] [--http h11|httptools]
     [--loop asyncio|uvloop] [--workers N]   (uvicorn flags for both servers; default: auto choice, 1 worker)
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
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from sqlalchemy import create_engine, func, select, text

from tailorbench.annotate import service
from tailorbench.annotate.db import Database, resolve_url
from tailorbench.annotate.models import Assignment, Label

PG_URL = os.environ.get("TAILOR_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
ASSIGNMENT_RE = re.compile(rb'action="/a/(\d+)"')
CSRF_RE = re.compile(rb'name="csrf" value="([^"]+)"')


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


class Client:
    def __init__(self, base: str, token: str, pid: int) -> None:
        self.http = httpx.AsyncClient(base_url=base, timeout=30)
        self.token, self.pid = token, pid
        self.confirmed: list[int] = []
        #: the form on screen: (assignment id, CSRF token); None = fetch the current page first
        self.form: tuple[int, str] | None = None
        self.finished = False

    async def login(self) -> None:
        r = await self.http.get(f"/login/{self.token}", follow_redirects=False)
        assert r.status_code == 303, r.status_code

    def _read(self, body: bytes) -> None:
        m = ASSIGNMENT_RE.search(body)
        if m is None:
            self.form, self.finished = None, True
            return
        csrf = CSRF_RE.search(body)
        assert csrf is not None
        self.form = (int(m.group(1)), csrf.group(1).decode())

    async def one(self) -> float | None:
        """One submission by the page flow; its seconds (a GET of the page first only when no page is on
        screen: the first time and after an error), or None when no work is left."""
        t0 = time.perf_counter()
        if self.form is None:
            r = await self.http.get(f"/p/{self.pid}")
            assert r.status_code == 200, r.status_code
            self._read(r.content)
        if self.finished or self.form is None:
            return None
        aid, csrf = self.form
        self.form = None  # until the answer arrives: after an error the next try reloads the page
        r = await self.http.post(f"/a/{aid}", data={"csrf": csrf, "choice": random.choice("12")})
        assert r.status_code == 200, r.status_code
        self.confirmed.append(aid)
        self._read(r.content)
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


async def closed_loop(clients: list[Client], duration: float, restart: Server | None = None) -> dict[str, Any]:
    done = 0
    errors = 0
    start = time.perf_counter()

    async def run(c: Client) -> None:
        nonlocal done, errors
        while time.perf_counter() - start < duration:
            try:
                got = await c.one()
            except (httpx.TransportError, AssertionError):
                errors += 1  # the server is restarting: retry (the page flow resumes the same assignment)
                await asyncio.sleep(0.05)
                continue
            if got is None:
                return
            done += 1

    tasks = [asyncio.create_task(run(c)) for c in clients]
    if restart is not None:
        await asyncio.sleep(duration / 2)
        await asyncio.to_thread(restart.stop)
        await asyncio.to_thread(restart.start)
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    return {"clients": len(clients), "duration_s": round(elapsed, 1), "submissions": done,
            "per_s": round(done / elapsed, 1), "retried_errors": errors}


async def bare_loop(base: str, n_clients: int, duration: float) -> float:
    """Submissions/s of the bare endpoint with `n_clients` back to back. The clients are made and connected
    (one request each) before the clock starts, as the service's clients are logged in before theirs."""
    done = 0
    clients = [httpx.AsyncClient(base_url=base, timeout=30) for _ in range(n_clients)]

    async def post(http: httpx.AsyncClient) -> None:
        r = await http.post("/bare", data={"csrf": uuid.uuid4().hex, "choice": random.choice("12")})
        assert r.status_code == 200, r.status_code

    async def run(http: httpx.AsyncClient) -> None:
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


def setup(db_url: str, n_items: int, n_clients: int, name: str) -> tuple[int, list[str]]:
    db = Database(db_url)
    try:
        pid = service.create_project(db, name, "pairwise", 3, "", 1_000_000)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "items.jsonl"
            with path.open("w") as f:
                for i in range(n_items):
                    f.write(json.dumps({"id": f"{name}-{i}", "split": "general", "user_id": f"u{i % 50}",
                                        "persona": {"age": 30 + i % 40, "likes": "tea"}, "question": f"Q {i}?",
                                        "answer_a": f"Answer A {i} " * 20, "answer_b": f"Answer B {i} " * 20})
                            + "\n")
            service.import_items(db, name, path)
        tokens = [service.add_user(db, f"{name}-ann{i}", "annotator", [name])[1] for i in range(n_clients)]
    finally:
        db.dispose()
    return pid, tokens


def audit(db_url: str, pid: int, clients: list[Client]) -> dict[str, int]:
    db = Database(db_url, run_migrations=False)
    try:
        with db.session() as s:
            stored = set(s.scalars(select(Label.assignment_id).where(Label.project_id == pid)))
            n_labels = s.scalar(select(func.count()).select_from(Label).where(Label.project_id == pid)) or 0
            pairs = s.execute(select(Assignment.item_id, Assignment.user_id).where(Assignment.project_id == pid)).all()
    finally:
        db.dispose()
    confirmed = [a for c in clients for a in c.confirmed]
    return {"confirmed": len(confirmed), "stored": n_labels, "lost": len(set(confirmed) - stored),
            "duplicated": (n_labels - len(stored)) + (len(pairs) - len(set(pairs)))}


async def bench_db(kind: str, db_url: str, quick: bool) -> dict[str, Any]:
    scale = 0.2 if quick else 1.0
    port = free_port()
    server = Server(db_url, "tailorbench.annotate.web:app_from_env", port)
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"database": kind, "uvicorn": uvicorn_impl()}
    pid, tokens = setup(db_url, 5000, 100, "load")
    server.start()
    try:
        clients = [Client(base, t, pid) for t in tokens]
        await asyncio.gather(*(c.login() for c in clients))
        out["a_open_loop"] = await open_loop(clients, 3.0, 30 * scale)
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
    pid2, tokens2 = setup(db_url, 3000, 32, "restart")
    server.start()
    try:
        clients2 = [Client(base, t, pid2) for t in tokens2]
        await asyncio.gather(*(c.login() for c in clients2))
        out["c_restart"] = await closed_loop(clients2, 16 * scale, restart=server)
    finally:
        server.stop()
    out["c_restart"].update(audit(db_url, pid2, clients2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="a fifth of the durations (smoke run)")
    ap.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto", help="uvicorn --http")
    ap.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto", help="uvicorn --loop")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn --workers, for both servers (default 1)")
    args = ap.parse_args()
    if args.workers != 1:
        UVICORN_FLAGS.extend(["--workers", str(args.workers)])
    for flag, value in (("--http", args.http), ("--loop", args.loop)):
        if value != "auto":
            UVICORN_FLAGS.extend([flag, value])
    results = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(asyncio.run(bench_db("sqlite", resolve_url(None, tmp), args.quick)))
    if args.db in ("postgres", "both"):
        schema = f"tb_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            url = f"{PG_URL}?options=-csearch_path%3D{schema}"
            results.append(asyncio.run(bench_db("postgres", url, args.quick)))
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
