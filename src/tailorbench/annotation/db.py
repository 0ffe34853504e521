"""Database access: one engine per URL, SQLite (WAL, file under the project directory) or PostgreSQL, and the
Alembic migrations run on start so a server always meets the schema it expects."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from tailorbench.annotation import DB_FILENAME
from tailorbench.errors import ConfigError


def resolve_url(db: str | None, directory: str | Path | None) -> str:
    """`--db URL` wins; otherwise SQLite in `DIR/annotate.sqlite` (the directory is created)."""
    if db:
        if "://" not in db:  # a plain path means a SQLite file
            Path(db).parent.mkdir(parents=True, exist_ok=True)
            return f"sqlite:///{Path(db).resolve()}"
        return db
    base = Path(directory or ".")
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(base / DB_FILENAME).resolve()}"


def _sqlite_setup(engine: Engine) -> None:
    """WAL (readers never block the writer), foreign keys on, and BEGIN IMMEDIATE so two writers never meet
    mid-transaction (a deferred SQLite transaction that reads then writes can fail when another commits)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    """An engine for `url` (sqlite:///... or postgresql+psycopg://...), with a clear error for a bad URL."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"--db: not a database URL: {url!r}") from exc
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=8)
        _sqlite_setup(engine)
        return engine
    if parsed.get_backend_name() == "postgresql":
        # one pooled connection per thread-pool worker (anyio: 40): overflow connections are closed when given
        # back, and the profile showed a fresh PostgreSQL connection per request beyond the pool. No ping per
        # checkout (a round trip on every request): a connection found dead raises once, SQLAlchemy then
        # invalidates the whole pool, and the next request reconnects; the idempotent submit makes a retry safe.
        return create_engine(url, pool_size=40, max_overflow=8, pool_pre_ping=False, pool_recycle=3600)
    raise ConfigError(f"--db: only sqlite and postgresql are supported, got {parsed.get_backend_name()!r}")


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (migrations ship inside the package)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("tailorbench.annotation") / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class Database:
    """Engine + session factory; `session()` is one transaction, committed on success, rolled back on error."""

    def __init__(self, url: str, run_migrations: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        if run_migrations:
            migrate(self.engine)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one writer at a time: queueing threads on a lock is fairer and faster than letting
        # them sleep in SQLite's busy handler (other processes still meet busy_timeout)
        self._lock: threading.Lock | None = threading.Lock() if self.dialect == "sqlite" else None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        if self._lock is None:
            with self._factory() as s, s.begin():
                yield s
            return
        with self._lock, self._factory() as s, s.begin():
            yield s

    def dispose(self) -> None:
        self.engine.dispose()
