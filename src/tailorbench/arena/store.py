"""The arena's database: participants, questions, battles, votes, flags, counters and exports, on SQLite (a file
in ARENA_DIR by default, WAL) or PostgreSQL, with the annotation service's conventions (annotation/db.py: one
engine per URL, errors naming the database, exit 2) and the arena's own Alembic chain run on open.

Safe under concurrent writers: on SQLite every transaction begins IMMEDIATE (and threads of one process queue on
a lock), on PostgreSQL a vote is one INSERT guarded by the unique battle id, so two submissions of one battle
store one vote, in threads or processes; counters are `UPDATE ... SET number = number + x`. A battle left
`streaming` by a server that died is regenerated or dropped on the next start (`recover`), and counted.

The read API the exports and perf build on: `voted_battles()` -> one `VotedBattle` per counted vote (the ratings'
`BattleOutcome`, the voter's profile, the question, both answers).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, inspect, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from tailorbench.arena import DB_FILENAME
from tailorbench.arena import tables as t
from tailorbench.errors import ConfigError

#: a vote's outcomes (model_a's answer, model_b's, a tie, both bad)
OUTCOMES = ("a", "b", "tie", "both_bad")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def resolve_url(db: str | None, arena_dir: str | Path) -> str:
    """`--db URL` or arena.yaml's `database` wins (a plain path is a SQLite file); else ARENA_DIR/arena.sqlite."""
    if db:
        return db if "://" in db else f"sqlite:///{Path(db).resolve()}"
    return f"sqlite:///{(Path(arena_dir) / DB_FILENAME).resolve()}"


def _check_sqlite(url: str, must_exist: bool = False) -> None:
    """A SQLite path that is a directory or not a SQLite file (or, for a reader, `must_exist`, a file that is
    missing or empty, where SQLite would make a database): said before SQLite tries."""
    from sqlalchemy.engine import make_url

    from tailorbench.annotation.db import SQLITE_HEADER

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    path = Path(parsed.database)
    if path.is_dir():
        raise ConfigError(f"arena database {path}: is a directory, not a SQLite file")
    if not path.parent.is_dir():
        raise ConfigError(f"arena database {path}: its folder does not exist")
    if must_exist and (not path.is_file() or path.stat().st_size == 0):
        raise ConfigError(f"arena database {path}: is missing or empty (nothing has been served from this arena "
                          "yet, or it was moved); nothing was created")
    if path.is_file() and path.stat().st_size > 0:
        with path.open("rb") as handle:
            if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise ConfigError(f"arena database {path}: not a SQLite database: name another file")


def migrate(engine: Engine) -> None:
    """The arena's schema brought to its newest revision (its own chain, its own version table)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("tailorbench.arena") / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


@dataclass(frozen=True)
class VotedBattle:
    """One counted vote with what an export needs: the outcome as the ratings read it, the voter's pid and
    profile, the question and both answers (model_a's first)."""

    outcome: Any  # arena.ratings.BattleOutcome
    pid: str
    profile: dict[str, Any]
    question: str
    question_source: str
    answer_a: str
    answer_b: str
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ArenaStore:
    """The arena database: `tx()` is one transaction (a Connection), committed on success."""

    def __init__(self, url: str, run_migrations: bool = True) -> None:
        """`run_migrations=False` is a reader's open: the database must exist with the arena's tables, and nothing
        is created or migrated."""
        from tailorbench.annotation.db import make_engine, where

        self.url = url
        self.where = where(url)
        _check_sqlite(url, must_exist=not run_migrations)
        self.engine = make_engine(url)
        try:
            if run_migrations:
                migrate(self.engine)
            missing = [n for n in t.metadata.tables if n not in set(inspect(self.engine).get_table_names())]
            if missing:
                raise ConfigError(f"arena database {self.where}: table {missing[0]} is missing: not an arena "
                                  "database of this version")
        except ConfigError:
            self.engine.dispose()
            raise
        except (SQLAlchemyError, OSError, Exception) as exc:
            from tailorbench.redact import redact

            self.engine.dispose()
            text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            raise ConfigError(f"arena database {self.where}: cannot be opened: "
                              f"{redact(text[0] if text else type(exc).__name__)}") from None
        self._lock: threading.Lock | None = threading.Lock() if self.dialect == "sqlite" else None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        if self._lock is None:
            with self.engine.begin() as conn:
                yield conn
            return
        with self._lock, self.engine.begin() as conn:
            yield conn

    def dispose(self) -> None:
        self.engine.dispose()

    # -- counters ---------------------------------------------------------------------------------------------

    def add(self, conn: Connection, key: str, amount: float) -> None:
        """Add `amount` to the arena counter `key` (made at 0 on first use)."""
        done = conn.execute(update(t.meta).where(t.meta.c.key == key).values(number=t.meta.c.number + amount))
        if done.rowcount == 0:
            try:
                with conn.begin_nested():
                    conn.execute(insert(t.meta).values(key=key, number=amount))
            except IntegrityError:  # made by another writer meanwhile
                conn.execute(update(t.meta).where(t.meta.c.key == key).values(number=t.meta.c.number + amount))

    def counter(self, key: str) -> float:
        with self.tx() as conn:
            got = conn.execute(select(t.meta.c.number).where(t.meta.c.key == key)).scalar()
        return float(got or 0.0)

    def secret(self) -> str:
        """The arena's pseudonym key (made once, random): exports name participants by an HMAC of their pid."""
        with self.tx() as conn:
            got = conn.execute(select(t.meta.c.text).where(t.meta.c.key == "pseudonym_key")).scalar()
            if got:
                return str(got)
            key = secrets.token_hex(32)
            try:
                with conn.begin_nested():
                    conn.execute(insert(t.meta).values(key="pseudonym_key", number=0.0, text=key))
            except IntegrityError:
                key = str(conn.execute(select(t.meta.c.text).where(t.meta.c.key == "pseudonym_key")).scalar())
            return key

    # -- participants -----------------------------------------------------------------------------------------

    def new_participant(self, external_id: str | None = None) -> tuple[str, str]:
        """A participant who consented: (pid, session token). A crowd id seen before gets a new session on the
        same participant."""
        token = secrets.token_urlsafe(32)
        with self.tx() as conn:
            if external_id is not None:
                row = conn.execute(select(t.participants.c.pid).where(
                    t.participants.c.external_id == external_id)).first()
                if row is not None:
                    conn.execute(update(t.participants).where(t.participants.c.pid == row.pid).values(
                        session_hash=token_hash(token)))
                    return str(row.pid), token
            pid = "p-" + secrets.token_hex(8)
            conn.execute(insert(t.participants).values(
                pid=pid, external_id=external_id, session_hash=token_hash(token), csrf=secrets.token_urlsafe(24),
                profile=None, consent_at=utcnow(), spend_usd=0.0))
        return pid, token

    def identify(self, token: str | None) -> dict[str, Any] | None:
        if not token:
            return None
        with self.tx() as conn:
            row = conn.execute(select(t.participants).where(
                t.participants.c.session_hash == token_hash(token))).mappings().first()
        return None if row is None else dict(row)

    def participant(self, conn: Connection, pid: str) -> dict[str, Any] | None:
        row = conn.execute(select(t.participants).where(
            (t.participants.c.pid == pid) | (t.participants.c.external_id == pid))).mappings().first()
        return None if row is None else dict(row)

    def profile_of(self, participant_id: int) -> tuple[str, dict[str, Any]]:
        """(pid, profile) of a participant (an empty profile before they gave one)."""
        with self.tx() as conn:
            row = conn.execute(select(t.participants.c.pid, t.participants.c.profile).where(
                t.participants.c.id == participant_id)).first()
        if row is None:
            return "", {}
        return str(row.pid), json.loads(row.profile) if row.profile else {}

    def set_profile(self, participant_id: int, profile: dict[str, Any]) -> None:
        with self.tx() as conn:
            conn.execute(update(t.participants).where(t.participants.c.id == participant_id).values(
                profile=json.dumps(profile, ensure_ascii=False, sort_keys=True)))

    def finish(self, participant_id: int) -> None:
        with self.tx() as conn:
            conn.execute(update(t.participants).where((t.participants.c.id == participant_id)
                                                      & t.participants.c.finished_at.is_(None)).values(
                finished_at=utcnow()))

    # -- battles ----------------------------------------------------------------------------------------------

    def progress(self, participant_id: int) -> dict[str, int]:
        """A participant's battles: `started` (every battle they were given, their sequence) and `voted`."""
        with self.tx() as conn:
            started = conn.execute(select(func.count()).select_from(t.battles).where(
                t.battles.c.participant_id == participant_id)).scalar_one()
            voted = conn.execute(select(func.count()).select_from(t.votes).where(
                t.votes.c.participant_id == participant_id)).scalar_one()
        return {"started": int(started), "voted": int(voted)}

    def open_battle(self, participant_id: int) -> str | None:
        """The participant's latest battle that is neither voted nor failed: they go back to it."""
        with self.tx() as conn:
            row = conn.execute(
                select(t.battles.c.ref).outerjoin(t.votes, t.votes.c.battle_id == t.battles.c.id)
                .where((t.battles.c.participant_id == participant_id) & t.votes.c.id.is_(None)
                       & t.battles.c.status.in_(("streaming", "complete")))
                .order_by(t.battles.c.seq.desc())).first()
        return None if row is None else str(row.ref)

    def create_battle(self, participant_id: int, question: str, source: str, model_a: str, model_b: str,
                      a_left: bool, gold: tuple[str, str, str] | None = None) -> str:
        """A new battle (its answers streaming, or a gold battle's two fixed answers, complete at once);
        returns its reference."""
        ref = "b-" + secrets.token_hex(10)
        now = utcnow()
        with self.tx() as conn:
            seq = conn.execute(select(func.coalesce(func.max(t.battles.c.seq), 0)).where(
                t.battles.c.participant_id == participant_id)).scalar_one()
            made = conn.execute(insert(t.questions).values(participant_id=participant_id, source=source,
                                                           text=question, created_at=now)).inserted_primary_key
            assert made is not None
            qid = made[0]
            values: dict[str, Any] = {"ref": ref, "participant_id": participant_id, "question_id": qid,
                                      "seq": int(seq) + 1, "model_a": model_a, "model_b": model_b, "a_left": a_left,
                                      "gold": False, "status_a": "streaming", "status_b": "streaming",
                                      "status": "streaming", "cost_usd": 0.0, "regenerated": 0, "created_at": now}
            if gold is not None:
                better, answer_a, answer_b = gold
                values.update(gold=True, gold_better=better, answer_a=answer_a, answer_b=answer_b,
                              status_a="complete", status_b="complete", status="complete", finished_at=now)
            conn.execute(insert(t.battles).values(**values))
        return ref

    def repeat_battle(self, participant_id: int, pick: Any) -> str | None:
        """Show one of the participant's earlier voted battles again (not a gold battle, not a repeat): `pick`
        chooses among their references (oldest first); the copy is complete at once, its sides drawn anew by the
        caller's `pick` too (`pick(None)` -> a_left). None when they have no such battle."""
        with self.tx() as conn:
            rows = conn.execute(
                select(t.battles).join(t.votes, t.votes.c.battle_id == t.battles.c.id)
                .where((t.battles.c.participant_id == participant_id) & t.battles.c.gold.is_(False)
                       & t.battles.c.repeat_of.is_(None)).order_by(t.battles.c.seq)).mappings().all()
            if not rows:
                return None
            first = rows[pick(len(rows))]
            seq = conn.execute(select(func.max(t.battles.c.seq)).where(
                t.battles.c.participant_id == participant_id)).scalar_one()
            ref = "b-" + secrets.token_hex(10)
            now = utcnow()
            keep = ("participant_id", "question_id", "model_a", "model_b", "answer_a", "answer_b", "key_a", "key_b")
            conn.execute(insert(t.battles).values(
                ref=ref, seq=int(seq) + 1, a_left=bool(pick(None)), gold=False, status_a="complete",
                status_b="complete", status="complete", cost_usd=0.0, regenerated=0, created_at=now,
                finished_at=now, repeat_of=first["ref"], **{k: first[k] for k in keep}))
        return ref

    def battle(self, ref: str) -> dict[str, Any] | None:
        with self.tx() as conn:
            row = conn.execute(
                select(t.battles, t.questions.c.text.label("question"), t.questions.c.source,
                       t.votes.c.outcome.label("voted"))
                .join(t.questions, t.questions.c.id == t.battles.c.question_id)
                .outerjoin(t.votes, t.votes.c.battle_id == t.battles.c.id)
                .where(t.battles.c.ref == ref)).mappings().first()
        return None if row is None else dict(row)

    def finish_side(self, ref: str, side: str, text: str | None, error: str | None, key: str | None,
                    cost: float) -> str:
        """One answer ended (text, or an error); the battle is complete once both are, failed when either
        failed (the failure counted). Returns the battle's status."""
        status = "complete" if error is None else "failed"
        with self.tx() as conn:
            query = select(t.battles).where(t.battles.c.ref == ref)
            if self.dialect == "postgresql":  # the two sides end at once: the second must see the first's end
                query = query.with_for_update()
            row = conn.execute(query).mappings().first()
            if row is None or row["status"] not in ("streaming", "failed"):
                return "gone" if row is None else str(row["status"])
            conn.execute(update(t.battles).where(t.battles.c.id == row["id"]).values(
                **{f"answer_{side}": text, f"status_{side}": status, f"error_{side}": error, f"key_{side}": key,
                   "cost_usd": t.battles.c.cost_usd + cost}))
            other = row["status_b" if side == "a" else "status_a"]
            whole = "failed" if "failed" in (status, other) else "complete" if other == "complete" else "streaming"
            if whole != "streaming":
                conn.execute(update(t.battles).where(t.battles.c.id == row["id"]).values(status=whole,
                                                                                        finished_at=utcnow()))
                if whole == "failed" and row["status"] != "failed":
                    self.add(conn, "battles_failed", 1)
            if cost:
                conn.execute(update(t.participants).where(t.participants.c.id == row["participant_id"]).values(
                    spend_usd=t.participants.c.spend_usd + cost))
                self.add(conn, "spend_usd", cost)
        return whole

    def vote(self, ref: str, participant_id: int, outcome: str, confidence: int, reason: str | None) -> str:
        """Record a vote once: `recorded`, `already` (this battle has its vote), `not_ready` (an answer is still
        streaming), `failed` (an answer failed: the battle is not counted), `gone` (no such battle of theirs)."""
        with self.tx() as conn:
            query = select(t.battles.c.id, t.battles.c.status).where(
                (t.battles.c.ref == ref) & (t.battles.c.participant_id == participant_id))
            if self.dialect == "postgresql":
                query = query.with_for_update()
            row = conn.execute(query).first()
            if row is None:
                return "gone"
            if row.status in ("failed", "dropped"):
                return "failed"
            if row.status != "complete":
                return "not_ready"
            try:
                with conn.begin_nested():
                    conn.execute(insert(t.votes).values(battle_id=row.id, participant_id=participant_id,
                                                        outcome=outcome, confidence=confidence, reason=reason,
                                                        created_at=utcnow()))
            except IntegrityError:
                return "already"
        return "recorded"

    def flag(self, ref: str, participant_id: int, side: str, reason: str | None) -> bool:
        with self.tx() as conn:
            bid = conn.execute(select(t.battles.c.id).where(
                (t.battles.c.ref == ref) & (t.battles.c.participant_id == participant_id))).scalar()
            if bid is None:
                return False
            conn.execute(insert(t.flags).values(battle_id=bid, participant_id=participant_id, side=side,
                                                reason=reason, created_at=utcnow()))
        return True

    def recover(self, on_restart: str) -> list[str]:
        """Battles a server left `streaming` (it died mid-answer): dropped and counted (`drop`), or reset to be
        generated again (`regenerate`, counted); returns the references to generate."""
        with self.tx() as conn:
            rows = conn.execute(select(t.battles.c.id, t.battles.c.ref).where(
                (t.battles.c.status == "streaming") & t.battles.c.gold.is_(False))).all()
            if not rows:
                return []
            ids = [r.id for r in rows]
            if on_restart == "drop":
                conn.execute(update(t.battles).where(t.battles.c.id.in_(ids)).values(status="dropped",
                                                                                    finished_at=utcnow()))
                self.add(conn, "battles_dropped", len(ids))
                return []
            conn.execute(update(t.battles).where(t.battles.c.id.in_(ids)).values(
                status_a="streaming", status_b="streaming", answer_a=None, answer_b=None, error_a=None,
                error_b=None, regenerated=t.battles.c.regenerated + 1))
            self.add(conn, "battles_regenerated", len(ids))
        return [str(r.ref) for r in rows]

    # -- exports and reading ----------------------------------------------------------------------------------

    def record_export(self, kind: str, path: str | Path, reveal_ids: bool) -> None:
        with self.tx() as conn:
            conn.execute(insert(t.exports).values(kind=kind, path=str(path), reveal_ids=reveal_ids,
                                                  created_at=utcnow()))

    def exports_made(self) -> list[dict[str, Any]]:
        with self.tx() as conn:
            rows = conn.execute(select(t.exports).order_by(t.exports.c.id)).mappings().all()
        return [{"kind": r["kind"], "path": r["path"], "reveal_ids": bool(r["reveal_ids"]),
                 "at": r["created_at"].isoformat() if r["created_at"] else None} for r in rows]

    def status_counts(self) -> dict[str, Any]:
        """Participants (consented, with a profile, finished), battles by status, votes, flags, spend, and the
        counters of failed, dropped and regenerated battles."""
        with self.tx() as conn:
            people = conn.execute(select(func.count(), func.count(t.participants.c.profile),
                                         func.count(t.participants.c.finished_at))).first()
            by_status = {str(r[0]): int(r[1]) for r in conn.execute(
                select(t.battles.c.status, func.count()).group_by(t.battles.c.status)).all()}
            gold = conn.execute(select(func.count()).select_from(t.battles).where(t.battles.c.gold.is_(True))
                                ).scalar_one()
            n_votes = conn.execute(select(func.count()).select_from(t.votes)).scalar_one()
            n_flags = conn.execute(select(func.count()).select_from(t.flags)).scalar_one()
            counters = {str(r[0]): float(r[1]) for r in conn.execute(select(t.meta.c.key, t.meta.c.number)).all()}
        assert people is not None
        return {"participants": int(people[0]), "profiles": int(people[1]), "finished": int(people[2]),
                "battles": {s: int(by_status.get(s, 0)) for s in ("streaming", "complete", "failed", "dropped")},
                "gold_battles": int(gold), "votes": int(n_votes), "flags": int(n_flags),
                "spend_usd": round(float(counters.get("spend_usd", 0.0)), 6),
                "failed_total": int(counters.get("battles_failed", 0)),
                "dropped_total": int(counters.get("battles_dropped", 0)),
                "regenerated_total": int(counters.get("battles_regenerated", 0))}

    def voted_battles(self, segment_fields: list[str] | None = None) -> list[VotedBattle]:
        """Every counted vote (complete battles with a vote), oldest first, as `VotedBattle`s."""
        from tailorbench.arena.ratings import BattleOutcome

        with self.tx() as conn:
            rows = conn.execute(
                select(t.battles, t.votes.c.outcome, t.votes.c.confidence, t.votes.c.reason,
                       t.participants.c.pid, t.participants.c.profile, t.questions.c.text.label("question"),
                       t.questions.c.source)
                .join(t.votes, t.votes.c.battle_id == t.battles.c.id)
                .join(t.participants, t.participants.c.id == t.battles.c.participant_id)
                .join(t.questions, t.questions.c.id == t.battles.c.question_id)
                .where(t.battles.c.status == "complete")
                .order_by(t.votes.c.id)).mappings().all()
        out = []
        for r in rows:
            profile = json.loads(r["profile"]) if r["profile"] else {}
            segments = {k: str(v) for k, v in _flat(profile).items()
                        if segment_fields is None or k in segment_fields}
            outcome = BattleOutcome(
                battle_id=r["ref"], voter=r["pid"], model_a=r["model_a"], model_b=r["model_b"],
                outcome=r["outcome"], confidence=int(r["confidence"]), len_a=len(r["answer_a"] or ""),
                len_b=len(r["answer_b"] or ""), segments=segments, gold=bool(r["gold"]),
                gold_better=r["gold_better"], position_a_left=bool(r["a_left"]), repeat_of=r["repeat_of"])
            out.append(VotedBattle(outcome, r["pid"], profile, r["question"], r["source"], r["answer_a"] or "",
                                   r["answer_b"] or "", r["reason"]))
        return out


def _flat(profile: dict[str, Any]) -> dict[str, Any]:
    """A profile's answers by field key, whatever section they are under."""
    out: dict[str, Any] = {}
    for value in profile.values():
        if isinstance(value, dict):
            out.update(value)
    return out
