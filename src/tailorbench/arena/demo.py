"""`tailor arena init` (a commented arena.yaml, or with `example` the illustrative arena that runs with no model)
and `tailor arena demo` (that arena end to end: the server on 127.0.0.1, simulated persona participants through
its pages over HTTP, then the leaderboard), on SQLite by default or on the database `db` names. The demo's model is
the illustrative one (arena/demo_model.py) and its people are simulated: every page and output says so.

Both write through the files module's door: the folder is claimed before anything is made (a folder of someone
else's files is refused unless `force`), arena.yaml is written atomically, and the folder carries the marker of
the verb that made it, so a later demo on the same folder goes on with it (new simulated participants join).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tailorbench.arena import CONFIG_FILE
from tailorbench.errors import ConfigError
from tailorbench.files import MARKER, claim_output, is_ours, load_json, load_yaml

TEMPLATE = Path(__file__).resolve().parent / "example" / CONFIG_FILE
MADE_BY = "tailor arena init"
DEMO_MADE_BY = "tailor arena demo"
#: gold battles of the illustrative arena: the better answer takes up the question's words, the worse does not
GOLD = [
    {"question": "How many minutes are there in two hours?",
     "better": "Two hours have 120 minutes: each hour has 60 minutes.",
     "worse": "It is usually best to drink water during the day."},
    {"question": "What is the capital city of France?",
     "better": "The capital city of France is Paris.",
     "worse": "Many people enjoy gardening at the weekend."},
    {"question": "Which planet is closest to the sun?",
     "better": "Mercury is the planet closest to the sun.",
     "worse": "A good night's sleep helps concentration."},
]


def example_config(db: str | None = None) -> dict[str, Any]:
    """The illustrative arena: the template's settings, the illustrative model with and without the profile plus
    a second one, the default questionnaire, gold battles, labelled illustrative."""
    data = load_yaml(TEMPLATE, dict, "an arena config")
    data["name"] = "illustrative-arena"
    data["contestants"] = [
        {"name": "assistant-personalized", "model": "illustrative-arena:assistant", "profile": True},
        {"name": "assistant-generic", "model": "illustrative-arena:assistant", "profile": False},
        {"name": "other-generic", "model": "illustrative-arena:other", "profile": False},
    ]
    data["models"]["options"] = {"prices": {"assistant": [0.15, 0.6], "other": [2.5, 10.0]}}
    data.pop("profile", None)  # the default questionnaire (the simulated personas answer it)
    data["gold"] = {"rate": 0.25, "battles": GOLD}
    data["battles"]["repeat_rate"] = 0.15
    data["leaderboard"]["min_battles"] = 10  # a few simulated people: ranks from 10 battles on
    data["spend"] = {"per_participant": 0.5, "per_arena": 20.0}
    data["illustrative"] = True
    if db and make_url_password(db) is None:
        data["database"] = db  # a URL with a password stays out of the file: later verbs take it by --db
    return data


def make_url_password(db: str) -> str | None:
    """The password a database URL carries (None for a plain path or a URL without one)."""
    if "://" not in db:
        return None
    from sqlalchemy.engine import make_url

    try:
        return make_url(db).password
    except Exception:  # an unreadable URL is refused where it is opened, naming it
        return None


def init_arena(arena_dir: str | Path, force: bool = False, example: bool = False, demo: bool = False,
               db: str | None = None) -> dict[str, Any]:
    """Write arena.yaml into `arena_dir`: the commented template, or (`example`) the illustrative arena."""
    import yaml

    d = Path(arena_dir)
    if (d / CONFIG_FILE).is_file() and not force:
        raise ConfigError(f"{d / CONFIG_FILE} exists already (--force writes over it)")
    out = claim_output("ARENA_DIR", d, directory=True, force=force, made_by=DEMO_MADE_BY if demo else MADE_BY,
                       hint=" (or --force to write arena.yaml into it anyway)")
    if example or demo:
        text = ("# The illustrative arena (tailor arena demo): an illustrative model, labelled so everywhere.\n"
                + str(yaml.safe_dump(example_config(db), sort_keys=False, allow_unicode=True)))
    else:
        text = TEMPLATE.read_text(encoding="utf-8")
    out.write_text(CONFIG_FILE, text)
    return {"dir": str(d), "config": str(d / CONFIG_FILE), "files": [CONFIG_FILE]}


def _made_by_demo(d: Path) -> bool:
    if not d.is_dir() or not is_ours(d):
        return False
    return load_json(d / MARKER, dict, "a folder marker").get("made_by") == DEMO_MADE_BY


def run_demo(arena_dir: str | Path, participants: int = 12, seed: int = 0, db: str | None = None,
             say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """init (illustrative) -> server -> `participants` simulated people -> leaderboard; returns what it did."""
    from tailorbench.arena import leaderboard
    from tailorbench.arena.config import load_config
    from tailorbench.arena.simulate import cast, crowd, serving
    from tailorbench.arena.store import ArenaStore, resolve_url
    from tailorbench.arena.web import create_app

    started = time.perf_counter()
    d = Path(arena_dir)
    if not _made_by_demo(d):
        if d.is_dir() and any(d.iterdir()):
            raise ConfigError(f"{d}: the demo needs a new or empty directory, or one an earlier `tailor arena demo` "
                              "made (new simulated participants then join it)")
        init_arena(d, demo=True, db=db)
    elif not (d / CONFIG_FILE).is_file():
        init_arena(d, force=True, demo=True, db=db)
    config = load_config(d)
    if not config.illustrative:
        raise ConfigError(f"{d / CONFIG_FILE}: no longer the demo's arena (illustrative is not true): `tailor arena "
                          "run` serves it")
    store = ArenaStore(resolve_url(db or config.database, d))
    try:
        people = cast(participants, left=max(1, participants // 8), contrary=max(1, participants // 8))
        with serving(create_app(config, store, d)) as url:
            if say is not None:
                say(f"arena demo: serving on {url}; {participants} simulated participant(s)")
            outcomes = crowd(url, people, seed=seed)
        board, place = leaderboard.write(d, config, store)
        status = store.status_counts()
    finally:
        store.dispose()
    if say is not None:
        say(f"arena demo: {board.headline}")
    return {"dir": str(d), "illustrative": True, "leaderboard": str(place / "leaderboard.json"),
            "headline": board.headline, "status": status, "seconds": round(time.perf_counter() - started, 1),
            "participants": [{"participant": o.participant, "pid": o.pid, "rule": o.rule, "votes": o.votes,
                              "failed": o.failed, "status": o.status, "code": o.code} for o in outcomes]}
