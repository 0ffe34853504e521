"""Load benchmark of the arena (issue 46): time to first token through the arena against the stub's own, and no
vote lost or duplicated over a kill -9 of the server.

Two streaming stubs (perf/streaming_stub.py, each its own process: 200 tokens at 20 tokens/s after 250 ms) are
the two contestants of an arena served by `tailor arena run` (its own process, one uvicorn worker, call cache
off so every answer is streamed). 50 simulated participants (perf/arena_load_client.py: httpx on asyncio, no
browser) each wait 5-15 s (seeded) between battles, ask a question of their own, read both answers' event
streams and vote; at each ask the same client also streams one answer straight from a stub.

  1. latency (`--seconds`, default 120): the arena's time to first token (POST /ask -> redirect -> battle page
     -> event stream -> first `delta`) minus the stub's (POST -> first content chunk) in the same battle, per
     answer: p50/p95/p99 of the difference; goal <= 50 ms at p99 on the 2-core machine.
  2. kill (`--kill-seconds`, default 60): the same participants go on; a third of the way in, the server gets
     SIGKILL (battles streaming, votes being sent) and is started again on the same database and port; the
     participants reopen broken streams and resend votes that got no answer; at the end each finishes its
     battle and stops. Checked: every vote the server confirmed is in the database exactly once (lost 0,
     duplicated 0), no battle left streaming, and the in-flight battles regenerated or dropped (counted).

SQLite (a file in a scratch folder) always; PostgreSQL too with `--db postgres` (a fresh database on
TAILOR_TEST_PG_URL's server, dropped afterwards). Prints the figures and the load average, writes
runs/arena-load-<time>.json, exits 1 when a vote was lost or duplicated.

    .venv/bin/python perf/arena_load.py [--seconds 120] [--kill-seconds 60] [--participants 50] [--db postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from perf.arena_load_client import Tally, as_json, participant, quantiles

ROOT = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("TAILOR_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
GOAL_P99_MS = 50.0
ARENA_YAML = """name: arena-load
contestants:
  - {{name: stub-one, model: "openai:stub@{one}", profile: true}}
  - {{name: stub-two, model: "openai:stub@{two}", profile: false}}
models:
  max_tokens: 512
  temperature: 0.7
  options: {{concurrency: 128, cache_policy: "off", max_retries: 0}}
profile:
  fields:
    - {{key: age, label: Your age, choices: ["18-24", "35-44"]}}
questions:
  own: true
battles:
  per_participant: 1000
  on_restart: {on_restart}
vote:
  reason: false
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def stubs(count: int = 2) -> Iterator[list[str]]:
    """`count` streaming stubs, each its own process; yields their /v1 base URLs."""
    procs = [subprocess.Popen([sys.executable, str(ROOT / "perf" / "streaming_stub.py"), "--port", "0",
                               "--print-port"], stdout=subprocess.PIPE, text=True) for _ in range(count)]
    try:
        yield [f"http://127.0.0.1:{int(p.stdout.readline())}/v1" for p in procs if p.stdout is not None]
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


class ArenaServer:
    """`tailor arena run DIR --db URL` as a process of its own, so it can be killed with SIGKILL."""

    def __init__(self, arena_dir: Path, db_url: str, log: Path) -> None:
        self.arena_dir, self.db_url, self.log = arena_dir, db_url, log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self) -> float:
        """Start it and wait for /healthz; returns the seconds that took."""
        started = time.perf_counter()
        env = {**os.environ, "OPENAI_API_KEY": "stub", "TAILORBENCH_NO_UPDATE_CHECK": "1"}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([str(Path(sys.executable).parent / "tailor"), "arena", "run",
                                          str(self.arena_dir), "--port", str(self.port), "--db", self.db_url],
                                         stdout=log, stderr=log, env=env)
        await self.alive(timeout=60.0)
        return time.perf_counter() - started

    async def alive(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as c:
            while True:
                try:
                    if (await c.get(f"{self.base}/healthz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if self.proc is not None and self.proc.poll() is not None and self.proc.returncode != -9:
                    raise RuntimeError(f"the arena server exited ({self.proc.returncode}): see {self.log}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the arena server did not answer in {timeout:g} s: see {self.log}")
                await asyncio.sleep(0.2)

    def cpu_s(self) -> float:
        """The server process's CPU seconds so far (user + system, /proc)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def vote_check(db_url: str, confirmed: dict[str, int]) -> dict[str, Any]:
    """Confirmed votes against the database: lost (confirmed, not stored), duplicated (stored more than once),
    stored without a confirmation (the answer lost in the kill), battles left streaming, and the counters of
    battles a restart regenerated or dropped."""
    from sqlalchemy import create_engine, func, select

    from tailorbench.arena import tables as t

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            stored: dict[str, int] = {str(ref): int(n) for ref, n in conn.execute(
                select(t.battles.c.ref, func.count(t.votes.c.id)).join(t.votes, t.votes.c.battle_id == t.battles.c.id)
                .group_by(t.battles.c.ref)).all()}
            status: dict[str, int] = {str(k): int(n) for k, n in conn.execute(
                select(t.battles.c.status, func.count()).group_by(t.battles.c.status)).all()}
            counters = dict(conn.execute(select(t.meta.c.key, t.meta.c.number)).all())
    finally:
        engine.dispose()
    return {"votes_confirmed": len(confirmed), "votes_stored": sum(stored.values()),
            "lost": sum(1 for ref in confirmed if ref not in stored),
            "duplicated": sum(n - 1 for n in stored.values() if n > 1),
            "stored_unconfirmed": sum(1 for ref in stored if ref not in confirmed),
            "battles_by_status": status,
            "regenerated": int(counters.get("battles_regenerated", 0)),
            "dropped": int(counters.get("battles_dropped", 0)),
            "failed": int(counters.get("battles_failed", 0))}


async def run_load(server: ArenaServer, stub_urls: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Both phases against one database: latency, then kill -9 and restart."""
    tally = Tally()
    stop = asyncio.Event()
    chat_urls = [f"{u}/chat/completions" for u in stub_urls]
    load_before = os.getloadavg()
    cpu = (server.cpu_s(), os.times(), time.perf_counter())
    people = [asyncio.create_task(participant(server.base, chat_urls, i, args.seed, tally, stop, server.alive))
              for i in range(args.participants)]
    await asyncio.sleep(args.seconds)
    tally.measuring = False
    load_latency = os.getloadavg()
    now, wall = os.times(), time.perf_counter() - cpu[2]
    busy = {"server": (server.cpu_s() - cpu[0]) / wall,
            "client": (now.user + now.system - cpu[1].user - cpu[1].system) / wall}
    kill: dict[str, Any] = {}
    if args.kill_seconds > 0:
        await asyncio.sleep(args.kill_seconds / 3)
        server.kill()
        kill["restart_s"] = round(await server.start(), 2)
        await asyncio.sleep(args.kill_seconds * 2 / 3)
    stop.set()
    results = await asyncio.gather(*people, return_exceptions=True)
    crashed = [repr(r) for r in results if isinstance(r, BaseException)]
    kill.update(vote_check(server.db_url, tally.confirmed))
    kill.update(stream_reopened=tally.stream_reopened, vote_resent=tally.vote_resent)
    return {"ttft_overhead": quantiles(tally.paired), "arena_ttft": quantiles(tally.arena_ttft),
            "stub_ttft": quantiles(tally.stub_ttft), "ask_to_page": quantiles(tally.ask_to_page),
            "battles": tally.battles,
            "failed_battles": tally.failed_battles, "client_errors": tally.errors, "participants_crashed": crashed,
            "kill": kill, "cpu_share_latency": {k: round(v, 2) for k, v in busy.items()},
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_latency_end": [round(x, 2) for x in load_latency],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()]}


@contextmanager
def database(kind: str, scratch: Path) -> Iterator[str]:
    """A SQLite file in the scratch folder, or a fresh PostgreSQL database dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{scratch / 'arena.sqlite'}"
        return
    from sqlalchemy import create_engine, make_url, text

    base = make_url(PG_URL)
    name = f"tb_arena_load_{uuid.uuid4().hex[:8]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def one_database(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    from tailorbench.files import write_text_atomic

    with tempfile.TemporaryDirectory(prefix="arena-load-") as tmp, stubs() as urls, database(kind, Path(tmp)) as url:
        arena_dir = Path(tmp) / "arena"
        arena_dir.mkdir()
        write_text_atomic(arena_dir / "arena.yaml", ARENA_YAML.format(one=urls[0], two=urls[1],
                                                                      on_restart=args.on_restart))
        server = ArenaServer(arena_dir, url, Path(tmp) / "server.log")

        async def go() -> dict[str, Any]:
            await server.start()
            try:
                return await run_load(server, urls, args)
            finally:
                server.stop()

        try:
            got = asyncio.run(go())
        except BaseException:
            sys.stderr.write((Path(tmp) / "server.log").read_text(errors="replace")[-3000:])
            raise
    return {"database": kind, **got}


def say(result: dict[str, Any]) -> None:
    o, k = result["ttft_overhead"], result["kill"]
    print(f"[{result['database']}] TTFT arena - stub over {o['n']} answers: p50 {o['p50_ms']} ms, p95 {o['p95_ms']} "
          f"ms, p99 {o['p99_ms']} ms (goal <= {GOAL_P99_MS:g}); arena p99 {result['arena_ttft']['p99_ms']} ms, "
          f"stub p99 {result['stub_ttft']['p99_ms']} ms, ask -> page p50/p99 "
          f"{result['ask_to_page']['p50_ms']}/{result['ask_to_page']['p99_ms']} ms; "
          f"load {result['loadavg_latency_end']}; CPU share (cores) {result['cpu_share_latency']}")
    print(f"[{result['database']}] kill -9: votes confirmed {k.get('votes_confirmed')}, stored "
          f"{k.get('votes_stored')}, lost {k.get('lost')}, duplicated {k.get('duplicated')}, stored unconfirmed "
          f"{k.get('stored_unconfirmed')}; battles regenerated {k.get('regenerated')}, dropped {k.get('dropped')}, "
          f"failed {k.get('failed')}; streams reopened {k.get('stream_reopened')}, votes resent "
          f"{k.get('vote_resent')}; restart {k.get('restart_s')} s; by status {k.get('battles_by_status')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120.0, help="the latency phase (default 120)")
    parser.add_argument("--kill-seconds", type=float, default=60.0, help="the kill phase; 0: no kill (default 60)")
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--on-restart", choices=["regenerate", "drop"], default="regenerate")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="sqlite",
                        help="postgres: also PostgreSQL (TAILOR_TEST_PG_URL); both: the same")
    parser.add_argument("--out", type=Path, default=None, help="the JSON report (default runs/arena-load-TIME.json)")
    args = parser.parse_args(argv)
    from tailorbench.files import write_text_atomic

    kinds = ["sqlite"] + (["postgresql"] if args.db in ("postgres", "both") else [])
    results = []
    for kind in kinds:
        results.append(one_database(kind, args))
        say(results[-1])
    report = {"start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
              "args": {k: v for k, v in vars(args).items() if k != "out"}, "goal_p99_ms": GOAL_P99_MS,
              "results": results}
    out = args.out or ROOT / "runs" / f"arena-load-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, as_json(report) + "\n")
    print(f"report: {out}")
    bad = [r["database"] for r in results
           if r["kill"].get("lost") or r["kill"].get("duplicated") or r["participants_crashed"]]
    if bad:
        print(f"votes lost or duplicated, or a participant crashed, on: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
