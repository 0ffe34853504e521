"""Where an annotator stands in a project: the task page's "item X of N · M remaining".

X is the item on screen (their finished labels + 1), M what is left for them after it, N = X + M. What is left
is their quota when they have one, else the items still open to them: their unfinished assignments plus the
items they have not had that still take an annotator (gold items, and regular items with fewer than N
assignments), `free` below. `free` is project-wide, a pass over the project's open items: too dear for every
page of the submission path. So `Remaining` counts it for an annotator at most every `FREE_TTL_S` (with the
project's part reused for `OPEN_ITEMS_TTL_S`) and in between takes off one per assignment they were given since
(each takes one item out of what is free to them, whatever others do). Others' work since that count is not
seen until the next one: M is then high by what they took.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

#: how long the project's count of open items is reused (seconds)
OPEN_ITEMS_TTL_S = 1.0
#: how long an annotator's count of free items is carried forward by their own assignments (seconds)
FREE_TTL_S = 5.0

#: the project's items that may still go to someone (gold, or regular with fewer than :n assignments); two
#: counts so that each is a range of the queue index
OPEN_ITEMS_SQL = """SELECT (SELECT count(*) FROM tb_items WHERE project_id = :p AND is_gold = true)
     + (SELECT count(*) FROM tb_items WHERE project_id = :p AND is_gold = false AND n_assigned < :n)"""
#: the annotator's items among those (what they have had is not free to them)
MINE_OPEN_SQL = """SELECT count(*) FROM tb_assignments a JOIN tb_items i ON i.id = a.item_id
WHERE a.user_id = :u AND a.project_id = :p AND (i.is_gold = true OR i.n_assigned < :n)"""

#: runs one of the queries above with its parameters and returns the count
Run = Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class Place:
    """`item` of `total` on screen, `remaining` after it."""

    item: int
    total: int
    remaining: int


def place(done: int, unfinished: int, free: int, quota: int | None = None) -> Place:
    """The annotator's place with an item on screen: `done`/`unfinished` of their assignments in the project
    (the one on screen is unfinished), `free` items they could still be given, `quota` their number of items
    when they have one."""
    left = max(1, unfinished + free)  # with the one on screen
    if quota is not None:
        left = max(1, min(left, quota - done))
    return Place(done + 1, done + left, left - 1)


class Remaining:
    """The `free` figure of one database's annotators (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], tuple[float, int]] = {}
        self._free: dict[tuple[int, int], tuple[float, int, int]] = {}

    def free(self, project_id: int, user_id: int, n_per_item: int, assigned: int, run: Run) -> int:
        """Items the annotator could still be given. `assigned`: their assignments in the project so far
        (finished or not); `run` counts with the caller's connection when a count is due."""
        now, key = time.monotonic(), (project_id, user_id)
        with self._lock:
            kept = self._free.get(key)
        if kept is not None and now - kept[0] < FREE_TTL_S:
            return kept[1] - (assigned - kept[2])
        params = {"p": project_id, "u": user_id, "n": n_per_item}
        value = self._open_items(project_id, n_per_item, run, now) - int(run(MINE_OPEN_SQL, params))
        with self._lock:
            self._free[key] = (now, value, assigned)
        return value

    def _open_items(self, project_id: int, n_per_item: int, run: Run, now: float) -> int:
        key = (project_id, n_per_item)
        with self._lock:
            kept = self._open.get(key)
        if kept is not None and now - kept[0] < OPEN_ITEMS_TTL_S:
            return kept[1]
        value = int(run(OPEN_ITEMS_SQL, {"p": project_id, "n": n_per_item}))
        with self._lock:
            self._open[key] = (now, value)
        return value


_PER_ENGINE: WeakKeyDictionary[Any, Remaining] = WeakKeyDictionary()
_PER_ENGINE_LOCK = threading.Lock()


def remaining(engine: Any) -> Remaining:
    """The `Remaining` of one database engine (each database has its own projects)."""
    with _PER_ENGINE_LOCK:
        got = _PER_ENGINE.get(engine)
        if got is None:
            got = _PER_ENGINE[engine] = Remaining()
        return got
