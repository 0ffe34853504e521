"""Python twins of `tailor arena ...` (`tb.arena.*`): the first-person personalization arena (arena/,
docs/arena.md). Each verb reads ARENA_DIR/arena.yaml first (a ConfigError naming the key before any work) and
returns the pydantic model of api.output_arena that mirrors what the CLI prints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tailorbench.api.output_arena import (
    ArenaDeletion,
    ArenaDemo,
    ArenaExport,
    ArenaInit,
    ArenaLeaderboard,
    ArenaPlan,
    ArenaRun,
    ArenaStatus,
)
from tailorbench.errors import require_web

if TYPE_CHECKING:
    from tailorbench.arena.config import ArenaConfig
    from tailorbench.arena.store import ArenaStore

Say = Callable[[str], None] | None


def init(arena_dir: str | Path, example: bool = False, force: bool = False) -> ArenaInit:
    """`tailor arena init DIR [--example]`: a commented arena.yaml to edit, or the illustrative example arena."""
    from tailorbench.arena.demo import init_arena

    return ArenaInit.model_validate(init_arena(arena_dir, force=force, example=example))


def plan(arena_dir: str | Path) -> ArenaPlan:
    """`tailor arena plan DIR`: contestants, pairs, caps and the estimated cost (opens nothing, calls nothing)."""
    from tailorbench.arena.config import load_config
    from tailorbench.arena.plan import arena_plan

    return ArenaPlan.model_validate(arena_plan(load_config(arena_dir), arena_dir))


def _store(arena_dir: str | Path, db: str | None, read_only: bool = False) -> tuple[ArenaConfig, ArenaStore]:
    """The config and its database (`db` over arena.yaml's `database`, else ARENA_DIR/arena.sqlite)."""
    from tailorbench.arena.config import load_config
    from tailorbench.arena.store import ArenaStore, resolve_url

    config = load_config(arena_dir)
    return config, ArenaStore(resolve_url(db or config.database, arena_dir), run_migrations=not read_only)


def status(arena_dir: str | Path, db: str | None = None) -> ArenaStatus:
    """`tailor arena status DIR`: participants, battles (complete / failed / in flight), votes, flags, spend."""
    require_web("tailorbench.api.arena.status (the arena database)")
    from tailorbench.arena.plan import arena_status

    config, store = _store(arena_dir, db, read_only=True)
    try:
        return ArenaStatus.model_validate(arena_status(config, store))
    finally:
        store.dispose()


def run(arena_dir: str | Path, host: str = "127.0.0.1", port: int = 8000, db: str | None = None,
        say: Say = None) -> ArenaRun:
    """`tailor arena run DIR`: serve the participant's pages until interrupted (Ctrl-C); prints the URL."""
    require_web("tailorbench.api.arena.run (the arena server)", server=True)
    import uvicorn

    from tailorbench.arena.plan import arena_status
    from tailorbench.arena.web import create_app
    from tailorbench.options import as_int

    as_int("--port", port, minimum=0, maximum=65535)
    config, store = _store(arena_dir, db)
    try:
        url = f"http://{host}:{port}"
        if say is not None:
            say(f"arena {config.name}: participants start at {url}/ (Ctrl-C stops)")
        server = uvicorn.Server(uvicorn.Config(create_app(config, store, arena_dir), host=host, port=port,
                                               log_level="warning"))
        server.run()
        return ArenaRun.model_validate({"arena": config.name, "url": url,
                                        "status": arena_status(config, store)})
    finally:
        store.dispose()


def leaderboard(arena_dir: str | Path, out: str | Path | None = None, reveal_ids: bool = False,
                db: str | None = None) -> ArenaLeaderboard:
    """`tailor arena leaderboard DIR`: leaderboard.json / .md / .html from the counted votes (voters by
    pseudonym unless `reveal_ids`)."""
    require_web("tailorbench.api.arena.leaderboard (the arena database)")
    from tailorbench.arena import leaderboard as board_files

    config, store = _store(arena_dir, db)
    try:
        board, place = board_files.write(arena_dir, config, store, reveal_ids, out)
    finally:
        store.dispose()
    return ArenaLeaderboard.model_validate({
        "out": str(place), "headline": board.headline, "votes": board.votes, "votes_counted": board.votes_counted,
        "contestants": board.ratings["contestants"], "excluded_voters": board.voter_quality["excluded"]})


def export(arena_dir: str | Path, out: str | Path, reveal_ids: bool = False, db: str | None = None,
           format: str = "benchmark") -> ArenaExport:
    """`tailor arena export DIR --out PATH`: the decisive votes as a native pairwise benchmark (voters by
    pseudonym unless `reveal_ids`), which `tailor eval --data` runs and `tailor annotate import` takes for
    third-person judgments; `format="annotate"`: pairwise items for `tailor annotate import` and the voters'
    own labels beside them (arena/third_person.py). The export is recorded for later deletions."""
    require_web("tailorbench.api.arena.export (the arena database)")
    from tailorbench.arena.export import write_benchmark_export
    from tailorbench.arena.third_person import write_annotate_export
    from tailorbench.errors import ConfigError

    writers = {"benchmark": write_benchmark_export, "annotate": write_annotate_export}
    if format not in writers:
        raise ConfigError(f"option --output-format must be one of {', '.join(writers)}, got {format!r}")
    _config, store = _store(arena_dir, db)
    try:
        return ArenaExport.model_validate(writers[format](store, out, reveal_ids))
    finally:
        store.dispose()


def delete(arena_dir: str | Path, participant: str, db: str | None = None) -> ArenaDeletion:
    """`tailor arena delete DIR --participant ID`: a participant's deletion request (database, call cache, logs)
    with a receipt listing the exports made before it."""
    require_web("tailorbench.api.arena.delete (the arena database)")
    from tailorbench.arena.privacy import delete_participant

    _config, store = _store(arena_dir, db)
    try:
        return ArenaDeletion.model_validate(delete_participant(arena_dir, store, participant))
    finally:
        store.dispose()


def demo(arena_dir: str | Path, participants: int = 12, seed: int = 0, db: str | None = None,
         say: Say = None) -> ArenaDemo:
    """`tailor arena demo DIR`: the illustrative arena end to end (server, simulated participants, leaderboard)."""
    require_web("tailorbench.api.arena.demo (the arena server)", server=True)
    from tailorbench.arena.demo import run_demo
    from tailorbench.options import as_int

    as_int("--participants", participants, minimum=1, maximum=500)
    return ArenaDemo.model_validate(run_demo(arena_dir, participants, seed, db, say))


__all__ = ["delete", "demo", "export", "init", "leaderboard", "plan", "run", "status"]
