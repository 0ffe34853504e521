"""The call cache: one SQLite file (WAL) shared by every model call of every process.

Why: re-running a finished eval, resuming a killed one, or re-judging with another metric must not pay for the
same calls twice. A call's key is a hash of backend, model, base URL (without credentials), the messages and
every generation parameter, so a changed parameter is a new call. API keys are never part of a key or a
stored value.

Writes are grouped: inside an event loop a put is written, with the others of the next `FLUSH_AFTER_S`
(20 ms) or up to `FLUSH_ROWS`, in one transaction (a WAL commit costs about 50 us, a fifth of a call's client
CPU when each call commits alone); a put outside an event loop is written at once, and `close()` and
interpreter exit write what is pending. A kill -9 can lose the answers of those 20 ms from the cache, never a
verdict: a run's prediction lines, written as verdicts land, are what `--resume` reads, so it still repeats
only the calls in flight.

Policies: `read-write` (default), `read-only` (use what is stored, store nothing), `off`.
Location: `$TAILORBENCH_CALL_CACHE` or `~/.cache/tailorbench/calls.sqlite`; policy: `$TAILORBENCH_CACHE_POLICY`.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import orjson

from tailorbench.errors import ConfigError
from tailorbench.redact import public_url

Policy = Literal["read-write", "read-only", "off"]
POLICIES: tuple[str, ...] = ("read-write", "read-only", "off")
#: bump when the stored value format changes; old rows then simply miss
KEY_VERSION = 1
#: puts made in an event loop are committed together: at most this long after the first ...
FLUSH_AFTER_S = 0.02
#: ... or as soon as this many are pending
FLUSH_ROWS = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    base_url TEXT,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


_INSERT = ("INSERT OR REPLACE INTO calls (key, backend, model, base_url, kind, response, created) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)")


def default_cache_path() -> Path:
    env = os.environ.get("TAILORBENCH_CALL_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "tailorbench" / "calls.sqlite"


def default_policy() -> Policy:
    return check_policy(os.environ.get("TAILORBENCH_CACHE_POLICY", "read-write"))


def check_policy(policy: str) -> Policy:
    if policy not in POLICIES:
        from tailorbench.registry import did_you_mean

        raise ConfigError(f"unknown cache policy {policy!r}{did_you_mean(policy, POLICIES)}; use one of "
                          f"{', '.join(POLICIES)}")
    return policy  # type: ignore[return-value]


def call_key(
    backend: str, model: str, base_url: str | None, kind: str, messages: Any, params: dict[str, Any]
) -> str:
    """sha256 of `[KEY_VERSION, backend, model, base URL, kind, messages, params]` as compact, key-sorted JSON
    (`reference_call_key`). The messages, the long part, are encoded by orjson, whose output for lists of
    string-keyed dicts of strings is byte-identical to the standard library's (tests/models/test_cache_key.py
    proves it over generated text); anything else goes through the standard encoder."""
    head = _head(backend, model, public_url(base_url), kind)
    try:
        if not _plain_messages(messages):
            raise TypeError
        encoded = orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        encoded = _dumps(messages).encode("utf-8")
    tail = _dumps(params).encode("utf-8")
    return hashlib.sha256(head + encoded + b"," + tail + b"]").hexdigest()


def reference_call_key(
    backend: str, model: str, base_url: str | None, kind: str, messages: Any, params: dict[str, Any]
) -> str:
    """The definition of a call key with the standard library alone (what `call_key` must equal)."""
    payload = _dumps([KEY_VERSION, backend, model, public_url(base_url), kind, messages, params])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


_HEADS: dict[tuple[str, str, str | None, str], bytes] = {}


def _head(backend: str, model: str, base_url: str | None, kind: str) -> bytes:
    """`[version,backend,model,base_url,kind,` as the standard encoder writes it (memoised: it rarely varies)."""
    key = (backend, model, base_url, kind)
    head = _HEADS.get(key)
    if head is None:
        head = _HEADS[key] = (_dumps([KEY_VERSION, backend, model, base_url, kind])[:-1] + ",").encode("utf-8")
    return head


def _plain_messages(messages: Any) -> bool:
    """A list of dicts with string keys and string values: the shape both encoders write identically."""
    return isinstance(messages, list) and all(
        type(m) is dict and all(type(k) is str and type(v) is str for k, v in m.items()) for m in messages
    )


class CallCache:
    """Get/put by key; safe with concurrent writers (WAL + busy timeout, each process its own connection)."""

    def __init__(self, path: str | Path | None = None, policy: str = "read-write") -> None:
        self.policy: Policy = check_policy(policy)
        self.path = Path(path).expanduser() if path else default_cache_path()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.transactions = 0
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        #: puts of the current event-loop turn, by key, written together by `flush`
        self._pending: dict[str, tuple[str, str, str, str | None, str, str, float]] = {}
        #: the event loop whose timer will write the pending puts
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        if self.policy != "off":
            self._db = self._open()
            _LIVE.add(self)

    def _open(self) -> sqlite3.Connection:
        if self.policy == "read-only" and not self.path.exists():
            return self._memory()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=60000")
            db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the call cache {self.path}: {exc}") from exc
        return db

    @staticmethod
    def _memory() -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.execute(_SCHEMA)
        return db

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def get(self, key: str) -> dict[str, Any] | None:
        if self._db is None:
            return None
        pending = self._pending.get(key)
        if pending is not None:
            text = pending[5]
        else:
            with self._lock:
                row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            text = row[0]
        self.hits += 1
        value: dict[str, Any] = orjson.loads(text)
        return value

    def contains(self, key: str) -> bool:
        if self._db is None:
            return False
        if key in self._pending:
            return True
        with self._lock:
            return self._db.execute("SELECT 1 FROM calls WHERE key = ?", (key,)).fetchone() is not None

    def put(
        self, key: str, backend: str, model: str, base_url: str | None, kind: str, response: dict[str, Any]
    ) -> None:
        if self._db is None or self.policy != "read-write":
            return
        value = orjson.dumps(response).decode("utf-8")
        first = not self._pending
        self._pending[key] = (key, backend, model, public_url(base_url), kind, value, time.time())
        self.writes += 1
        if len(self._pending) >= FLUSH_ROWS:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no event loop: nothing to group with
            return
        if first or self._timer_loop is not loop:  # (a loop that ended took its timer with it)
            self._timer_loop = loop
            loop.call_later(FLUSH_AFTER_S, self.flush)

    def flush(self) -> None:
        """Write the pending puts in one transaction."""
        if not self._pending or self._db is None:
            self._pending.clear()
            return
        rows = list(self._pending.values())
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(_INSERT, rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        self.transactions += 1
        for row in rows:
            if self._pending.get(row[0]) is row:
                del self._pending[row[0]]

    def close(self) -> None:
        if self._db is not None:
            self.flush()
            with self._lock:
                self._db.close()
            self._db = None

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "policy": self.policy, "hits": self.hits, "misses": self.misses,
                "writes": self.writes, "transactions": self.transactions}


#: open caches, flushed at interpreter exit (a put made in the last event-loop turn of `asyncio.run`)
_LIVE: weakref.WeakSet[CallCache] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for cache in list(_LIVE):
        if cache.enabled:
            cache.flush()


_OPEN: dict[tuple[str, str], CallCache] = {}


def shared_cache(path: str | Path | None = None, policy: str | None = None) -> CallCache:
    """One CallCache per (path, policy) in this process, so every model shares one connection."""
    resolved = str(Path(path).expanduser().resolve()) if path else str(default_cache_path())
    pol = check_policy(policy) if policy else default_policy()
    key = (resolved, pol)
    cache = _OPEN.get(key)
    if cache is None or (pol != "off" and not cache.enabled):
        cache = _OPEN[key] = CallCache(resolved, pol)
    return cache


def cache_stats(path: str | Path | None = None) -> dict[str, Any]:
    """What `tailor cache stats` prints: rows and bytes per backend/model/kind, oldest and newest entry."""
    db_path = Path(path).expanduser() if path else default_cache_path()
    if not db_path.exists():
        return {"path": str(db_path), "exists": False, "entries": 0, "bytes": 0, "models": []}
    db = sqlite3.connect(db_path, timeout=60)
    try:
        db.execute(_SCHEMA)
        rows = db.execute(
            "SELECT backend, model, base_url, kind, COUNT(*), SUM(LENGTH(response)), MIN(created), MAX(created) "
            "FROM calls GROUP BY backend, model, base_url, kind ORDER BY COUNT(*) DESC"
        ).fetchall()
    finally:
        db.close()
    size = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*") if p.is_file())
    return {
        "path": str(db_path),
        "exists": True,
        "entries": sum(r[4] for r in rows),
        "bytes": size,
        "models": [
            {"backend": r[0], "model": r[1], "base_url": r[2], "kind": r[3], "entries": r[4],
             "response_bytes": r[5] or 0, "oldest": r[6], "newest": r[7]}
            for r in rows
        ],
    }


def clear_cache(path: str | Path | None = None, model: str | None = None, older_than_days: float | None = None) -> int:
    """Delete entries (all, or one model's, or older than N days); returns how many were removed."""
    db_path = Path(path).expanduser() if path else default_cache_path()
    if not db_path.exists():
        return 0
    db = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=60000")
        db.execute(_SCHEMA)
        where: list[str] = []
        args: list[Any] = []
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if older_than_days is not None:
            where.append("created < ?")
            args.append(time.time() - older_than_days * 86400)
        sql = "DELETE FROM calls" + (" WHERE " + " AND ".join(where) if where else "")
        removed = db.execute(sql, args).rowcount
        if not where:
            db.execute("VACUUM")
    finally:
        db.close()
    for key in [k for k in _OPEN if k[0] == str(db_path.resolve())]:
        _OPEN.pop(key).close()
    return int(removed)


def forget_keys(keys: list[str], path: str | Path | None = None) -> int:
    """Delete the entries of these keys (a participant's deletion request in the arena: the requests that carried
    their profile and questions); returns how many were removed. Pending puts of this process are written first,
    so none of them comes back after the delete."""
    _flush_all()
    db_path = Path(path).expanduser() if path else default_cache_path()
    if not keys or not db_path.exists():
        return 0
    db = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=60000")
        db.execute(_SCHEMA)
        removed = 0
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            removed += db.execute(f"DELETE FROM calls WHERE key IN ({','.join('?' * len(chunk))})", chunk).rowcount
    finally:
        db.close()
    return int(removed)
