"""Privacy by default: pseudonyms in every export, the arena's event log, and deletion with a receipt.

- Exports name a participant by `pseudonym(key, pid)`: an HMAC of their pid under the arena's own random key
  (kept in its database), so two exports of one arena agree and nobody without the database can undo it;
  `--reveal-ids` writes the pids instead, and the export is recorded so.
- The event log (ARENA_DIR/logs/events.jsonl) records battles and votes with the pid and the battle reference, so
  the researcher can follow the arena; a deletion rewrites it without those lines.
- `delete_participant`: their profile, questions, battles, votes and flags leave the database (one cascading
  DELETE, the child tables emptied explicitly too), the call-cache entries of their battles' requests (the keys
  recorded per battle) leave the cache, their lines leave the event log, and a receipt
  (ARENA_DIR/deletions/NNNN.json) lists what was removed and every export made before the request, for the
  researcher to redo; the receipt itself names no id of theirs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, insert, select

from tailorbench.arena import tables as t
from tailorbench.arena.store import ArenaStore, utcnow
from tailorbench.errors import ConfigError

LOG_DIR = "logs"
EVENTS = "events.jsonl"
RECEIPTS = "deletions"


def pseudonym(key: str, pid: str) -> str:
    return "v-" + hmac.new(key.encode(), pid.encode(), hashlib.sha256).hexdigest()[:16]


class EventLog:
    """ARENA_DIR/logs/events.jsonl, one JSON object per line, appended through the files module's door."""

    def __init__(self, arena_dir: str | Path) -> None:
        self.path = Path(arena_dir) / LOG_DIR / EVENTS
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        from tailorbench.files import appending, ensure_dir

        line = json.dumps({"at": utcnow().isoformat(), **record}, ensure_ascii=False) + "\n"
        with self._lock:
            ensure_dir(self.path.parent)
            with appending(self.path) as handle:
                handle.write(line.encode("utf-8"))


def _scrub_log(path: Path, marks: set[str]) -> int:
    """The log without the lines naming any of `marks` (a pid, a battle reference); returns lines removed."""
    from tailorbench.files import load_bytes, write_text_atomic

    if not path.is_file() or not marks:
        return 0
    lines = load_bytes(path, "the arena's event log", limit=1 << 31).decode("utf-8", errors="replace").splitlines()
    kept = [line for line in lines if not any(m in line for m in marks)]
    if len(kept) != len(lines):
        write_text_atomic(path, "".join(line + "\n" for line in kept))
    return len(lines) - len(kept)


def delete_participant(arena_dir: str | Path, store: ArenaStore, participant: str,
                       cache_path: str | Path | None = None) -> dict[str, Any]:
    """Remove every trace of one participant (their pid or crowd id); returns the receipt (also written)."""
    from tailorbench.files import ensure_dir, write_json_atomic
    from tailorbench.models.cache import forget_keys

    with store.tx() as conn:
        who = store.participant(conn, participant)
        if who is None:
            raise ConfigError(f"--participant {participant!r}: no such participant in this arena (a pid such as "
                              "p-0123abcd..., or their crowd id)")
        pid_id = who["id"]
        rows = conn.execute(select(t.battles.c.ref, t.battles.c.key_a, t.battles.c.key_b).where(
            t.battles.c.participant_id == pid_id)).all()
        n_votes = conn.execute(select(func.count()).select_from(t.votes).where(
            t.votes.c.participant_id == pid_id)).scalar_one()
        for table in (t.flags, t.votes):
            conn.execute(delete(table).where(table.c.participant_id == pid_id))
        conn.execute(delete(t.battles).where(t.battles.c.participant_id == pid_id))
        conn.execute(delete(t.questions).where(t.questions.c.participant_id == pid_id))
        conn.execute(delete(t.participants).where(t.participants.c.id == pid_id))
    keys = sorted({k for r in rows for k in (r.key_a, r.key_b) if k})
    removed_cache = forget_keys(keys, cache_path)
    marks = {who["pid"], *(r.ref for r in rows)}
    if who["external_id"]:
        marks.add(who["external_id"])
    removed_lines = _scrub_log(Path(arena_dir) / LOG_DIR / EVENTS, marks)
    exports = store.exports_made()
    receipt: dict[str, Any] = {
        "deleted_at": utcnow().isoformat(), "battles": len(rows), "votes": int(n_votes),
        "cache_entries": removed_cache, "cache_keys": len(keys), "log_lines": removed_lines,
        "exports_to_redo": exports,
        "note": ("the participant's profile, questions, battles, votes and flags were removed from the arena "
                 "database, their requests from the call cache and their lines from the event log; the exports "
                 "listed were made before this request and may hold their data: make them again"),
    }
    folder = ensure_dir(Path(arena_dir) / RECEIPTS)
    with store.tx() as conn:
        number = int(conn.execute(select(func.count()).select_from(t.deletions)).scalar_one()) + 1
        place = folder / f"{number:04d}.json"
        conn.execute(insert(t.deletions).values(created_at=utcnow(), battles=len(rows), votes=int(n_votes),
                                                cache_entries=removed_cache, receipt=str(place)))
    write_json_atomic(place, receipt)
    return {**receipt, "receipt": str(place)}
