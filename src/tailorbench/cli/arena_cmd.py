"""`tailor arena ...`: the first-person personalization arena over one config (ARENA_DIR/arena.yaml; docs/arena.md).
Every verb is a call into `tailorbench.api.arena` (`tb.arena.*`); progress goes to stderr, the result to stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.annotate_options import DATABASE_VERB, SERVER_VERB
from tailorbench.cli.common import JSON_OPTION, emit, print_json, user_errors

arena_app = typer.Typer(help="A first-person personalization arena: people judge two answers to their own "
                             "question, made with and without their profile; Bradley-Terry leaderboards.",
                        no_args_is_help=True)
ARENA_DIR = typer.Argument(..., help="The arena directory (its arena.yaml, database, logs and leaderboard).")
DB = typer.Option(None, "--db", help="Annotation database URL the arena's tables go into, beside the annotation "
                                     "service's (default: arena.yaml's database, else SQLite ARENA_DIR/arena.sqlite).")


def _api() -> Any:
    """`tailorbench.api.arena`, imported when a verb runs (so `tailor --help` stays light)."""
    from tailorbench.api import arena

    return arena


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


@arena_app.command("init")
def init(arena_dir: Path = ARENA_DIR,
         example: bool = typer.Option(False, "--example", help="The illustrative example arena (runs with no "
                                      "model: an illustrative one, labelled so) instead of the commented template."),
         force: bool = typer.Option(False, "--force", help="Write over an existing arena.yaml."),
         as_json: bool = JSON_OPTION) -> None:
    """Write a commented arena.yaml into ARENA_DIR to edit (or, with --example, the illustrative arena)."""
    with user_errors():
        emit(_api().init(arena_dir, example=example, force=force), as_json)


@arena_app.command("plan")
def plan(arena_dir: Path = ARENA_DIR, as_json: bool = JSON_OPTION) -> None:
    """Contestants, pairs, caps and the estimated cost; opens no database and calls no model."""
    with user_errors():
        got = _api().plan(arena_dir)
    if as_json:
        print_json(got.to_dict())
        return
    for c in got.contestants:
        typer.echo(f"contestant {c['name']:28} {c['model']}  profile={'yes' if c['profile'] else 'no'}  "
                   f"per call {_money(c['cost_per_call_usd'])}")
    typer.echo(f"pairs: {len(got.pairs)} (uniform); personalized vs generic: "
               f"{', '.join(' vs '.join(p) for p in got.pairs_personalized_generic) or 'none'}")
    typer.echo(f"battles per participant: {got.battles_per_participant}; places: {got.places or 'open'}; "
               f"caps: {got.spend_caps_usd}")
    typer.echo(f"cost per battle: {_money(got.cost_per_battle_usd)}; estimated cost: "
               f"{_money(got.estimated_cost_usd)}")


@arena_app.command("run", cls=SERVER_VERB)
def run(arena_dir: Path = ARENA_DIR,
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
        port: int = typer.Option(8000, "--port", help="Port to listen on."),
        db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """Serve the participant's pages (consent, profile, ask, battles, vote, completion) until Ctrl-C."""
    with user_errors():
        got = _api().run(arena_dir, host=host, port=port, db=db, say=_say)
    emit(got, as_json)


@arena_app.command("status", cls=DATABASE_VERB)
def status(arena_dir: Path = ARENA_DIR, db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """Participants, battles (complete / failed / in flight), votes, flags and spend."""
    with user_errors():
        got = _api().status(arena_dir, db=db)
    if as_json:
        print_json(got.to_dict())
        return
    b = got.battles
    typer.echo(f"{got.arena}: {got.participants} participant(s); battles complete {b.get('complete', 0)}, failed "
               f"{b.get('failed', 0)}, in flight {b.get('streaming', 0)}, dropped {b.get('dropped', 0)}; "
               f"votes {got.votes}; flags {got.flags}; spend ${got.spend_usd:.4f}")


@arena_app.command("leaderboard", cls=DATABASE_VERB)
def leaderboard(arena_dir: Path = ARENA_DIR,
                out: Path | None = typer.Option(None, "--out", "-o", help="What the verb writes: the leaderboard "
                                                "folder (default ARENA_DIR/leaderboard)."),
                reveal_ids: bool = typer.Option(False, "--reveal-ids", help="Participant ids as they are, not "
                                                "pseudonymised (the export is recorded so)."),
                db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """leaderboard.json / .md / .html: ratings with intervals, segments, personalized vs generic, voter quality."""
    with user_errors():
        got = _api().leaderboard(arena_dir, out=out, reveal_ids=reveal_ids, db=db)
    if as_json:
        print_json(got.to_dict())
        return
    typer.echo(got.headline)
    typer.echo(f"written to {got.out}/ (leaderboard.md, leaderboard.html, leaderboard.json)")


@arena_app.command("export", cls=DATABASE_VERB)
def export(arena_dir: Path = ARENA_DIR,
           out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: the native benchmark JSONL "
                                    "(runs with `tailor eval --data`, imports with `tailor annotate import`)."),
           reveal_ids: bool = typer.Option(False, "--reveal-ids", help="Participant ids as they are, not "
                                           "pseudonymised (the export is recorded so)."),
           fmt: str = typer.Option("benchmark", "--output-format", help="Format written: benchmark (native "
                                   "JSONL) or annotate (pairwise items for `tailor annotate import` and "
                                   "OUT.first_person.jsonl, the voters' own labels for `tailor agree`)."),
           db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """The decisive votes as a native pairwise benchmark: the voter's profile as persona, their choice as chosen,
    confidence as tier; ties, both-bad, gold battles and excluded voters left out and counted."""
    with user_errors():
        got = _api().export(arena_dir, out, reveal_ids=reveal_ids, db=db, format=fmt)
    if as_json:
        print_json(got.to_dict())
        return
    left = ", ".join(f"{k} {v}" for k, v in got.left_out.items()) or "none"
    typer.echo(f"{got.exported} pair(s) written to {got.out}; left out: {left}")


@arena_app.command("delete", cls=DATABASE_VERB)
def delete(arena_dir: Path = ARENA_DIR,
           participant: str = typer.Option(..., "--participant", help="The participant whose data is deleted: "
                                           "their arena id (p-...) or crowd id."),
           db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """A deletion request: the participant's profile, battles, votes and flags, their call-cache entries and log
    lines; the receipt lists the exports made before it, to redo."""
    with user_errors():
        got = _api().delete(arena_dir, participant, db=db)
    if as_json:
        print_json(got.to_dict())
        return
    typer.echo(f"deleted: {got.battles} battle(s), {got.votes} vote(s), {got.cache_entries} cache entr(ies), "
               f"{got.log_lines} log line(s); receipt {got.receipt}")
    for e in got.exports_to_redo:
        typer.echo(f"redo: {e['kind']} {e['path']} ({e['at']})")


@arena_app.command("demo", cls=SERVER_VERB)
def demo(arena_dir: Path = ARENA_DIR,
         participants: int = typer.Option(12, "--participants", help="How many simulated participants take "
                                          "part."),
         seed: int = typer.Option(0, "--seed", help="Seed of the simulated participants' votes."),
         db: str | None = DB, as_json: bool = JSON_OPTION) -> None:
    """The illustrative arena end to end: server, simulated persona participants over HTTP, leaderboard
    (illustrative figures, labelled so)."""
    with user_errors():
        got = _api().demo(arena_dir, participants=participants, seed=seed, db=db, say=_say)
    if as_json:
        print_json(got.to_dict())
        return
    typer.echo(f"finished in {got.seconds:.0f} s: the illustrative leaderboard is in {Path(got.leaderboard).parent}/")


def register(app: typer.Typer) -> None:
    app.add_typer(arena_app, name="arena")
