"""Database access: one engine per URL, SQLite (WAL, file under the project directory) or PostgreSQL, and the
Alembic migrations run on start so a server always meets the schema it expects.

A database that cannot be opened or is not an annotation database (a garbage or foreign SQLite file, a directory,
an unreachable or refusing PostgreSQL, a schema at a revision this version does not know or missing its tables)
is a ConfigError naming it (`where`: the SQLite file, or the URL without its password), raised when `Database` is
made, so every verb that opens one (`tailor annotate *`, `tailor study *`) says so in one line with exit 2.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tailorbench.annotation import DB_FILENAME
from tailorbench.errors import ConfigError


def resolve_url(db: str | None, directory: str | Path | None, create: bool = True) -> str:
    """`--db URL` wins; otherwise SQLite in `DIR/annotate.sqlite` (the directory is created, unless not
    `create`)."""
    if db:
        if "://" not in db:  # a plain path means a SQLite file
            if create:
                _make_folder(Path(db).parent, db)
            return f"sqlite:///{Path(db).resolve()}"
        return db
    base = Path(directory or ".")
    if create:
        _make_folder(base, base / DB_FILENAME)
    return f"sqlite:///{(base / DB_FILENAME).resolve()}"


def check_exists(url: str) -> None:
    """A SQLite database that is not there: a ConfigError naming it (for readers, which must create nothing:
    SQLite would make an empty database where the file is missing)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    if not Path(parsed.database).exists():
        raise ConfigError(f"annotation database {parsed.database}: is missing (it was removed or moved); "
                          "nothing was created")


def _make_folder(folder: Path, db: str | Path) -> None:
    """The folder of a SQLite file, created; a ConfigError naming the database when it cannot be (a regular
    file where the folder goes, no permission)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"annotation database {db}: its folder {folder} cannot be created: "
                          f"{exc.strerror or exc}") from None


#: the first bytes of every SQLite database file
SQLITE_HEADER = b"SQLite format 3\x00"


def where(url: str) -> str:
    """How an error names a database: the SQLite file, or the URL without its password."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    if parsed.get_backend_name() == "sqlite":
        return parsed.database or url
    return parsed.render_as_string(hide_password=True)


def _check_sqlite_file(url: str) -> None:
    """A SQLite path that is a directory, or a file that is not a SQLite database: said before SQLite tries."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    path = Path(parsed.database)
    if path.is_dir():
        raise ConfigError(f"annotation database {path}: is a directory, not a SQLite file")
    if path.is_file() and path.stat().st_size > 0:
        try:
            with path.open("rb") as handle:
                head = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise ConfigError(f"annotation database {path}: cannot be read: {exc.strerror or exc}") from None
        if head != SQLITE_HEADER:
            raise ConfigError(f"annotation database {path}: not a SQLite database (its first bytes are not "
                              "SQLite's header): name another file, or move this one away")
        _check_sqlite_schema(path)


def _migrations() -> Any:
    """The Alembic configuration of the migrations that ship inside the package."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("tailorbench.annotation") / "migrations"))
    return cfg


def _check_sqlite_schema(path: Path) -> None:
    """An existing SQLite file read (read-only: opening it for work would turn on WAL, which rewrites its header)
    before it is used: tables with no migration record are another application's database, never migrated into;
    a migration record naming a revision this version does not ship is a newer or a foreign schema."""
    import sqlite3

    from alembic.script import ScriptDirectory

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
            revisions = ({str(row[0]) for row in conn.execute("select version_num from alembic_version")}
                         if "alembic_version" in tables else set())
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ConfigError(f"annotation database {path}: cannot be read: {exc}") from None
    if tables and "alembic_version" not in tables:
        raise ConfigError(f"annotation database {path}: holds tables of another application "
                          f"({', '.join(sorted(tables)[:3])}) and no annotation schema: name another file")
    known = {script.revision for script in ScriptDirectory.from_config(_migrations()).walk_revisions()}
    unknown = sorted(revisions - known)
    if unknown:
        raise ConfigError(f"annotation database {path}: its schema is not one this version knows (revision "
                          f"{unknown[0]!r}): a newer tailorbench's, or another application's")


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
        # an unreachable server is an error after connect_timeout seconds, not after the system's TCP timeout
        connect = {} if "connect_timeout" in parsed.query else {"connect_timeout": 10}
        return create_engine(url, pool_size=40, max_overflow=8, pool_pre_ping=False, pool_recycle=3600,
                             connect_args=connect)
    raise ConfigError(f"--db: only sqlite and postgresql are supported, got {parsed.get_backend_name()!r}")


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (migrations ship inside the package)."""
    from alembic import command

    cfg = _migrations()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def check_schema(engine: Engine) -> None:
    """After the migrations: every table and column of the models is there (a database whose alembic_version
    claims the newest revision while its tables were changed by hand is refused here, not mid-request)."""
    from tailorbench.annotation.models import Base

    found = inspect(engine)
    tables = set(found.get_table_names())
    for table in Base.metadata.sorted_tables:
        if table.name not in tables:
            raise ConfigError(f"annotation database {where(str(engine.url))}: table {table.name} is missing: not "
                              "an annotation database of this version")
        have = {c["name"] for c in found.get_columns(table.name)}
        missing = sorted(c.name for c in table.columns if c.name not in have)
        if missing:
            raise ConfigError(f"annotation database {where(str(engine.url))}: table {table.name} lacks "
                              f"column(s) {', '.join(missing)}: not an annotation database of this version")


def _first_line(exc: BaseException) -> str:
    """An error's own message, first line only (drivers add SQL and background links below it)."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_engine(url: str, run_migrations: bool = True) -> Engine:
    """An engine on a database that opens and holds the annotation schema (migrated to the newest revision when
    `run_migrations`); a ConfigError naming the database otherwise."""
    from alembic.util import CommandError

    from tailorbench.redact import redact

    _check_sqlite_file(url)
    engine = make_engine(url)
    try:
        if run_migrations:
            migrate(engine)
        check_schema(engine)
    except ConfigError:
        engine.dispose()
        raise
    except CommandError as exc:  # a revision this version does not know: a newer or a foreign schema
        engine.dispose()
        raise ConfigError(f"annotation database {where(url)}: its schema is not one this version knows "
                          f"({redact(_first_line(exc))})") from None
    except (SQLAlchemyError, OSError) as exc:
        engine.dispose()
        raise ConfigError(f"annotation database {where(url)}: cannot be opened: {redact(_first_line(exc))}") from None
    return engine


class Database:
    """Engine + session factory; `session()` is one transaction, committed on success, rolled back on error.
    Made only on a database that opens and holds the annotation schema (`open_engine`)."""

    def __init__(self, url: str, run_migrations: bool = True) -> None:
        self.url = url
        self.engine = open_engine(url, run_migrations)
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
