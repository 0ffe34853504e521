"""The options the `tailor annotate` verbs share (`annotate_cmd.py`, `annotate_study_cmd.py`), declared once, and
the API module every one of them calls."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import typer

from tailorbench.cli.common import JSON_HELP, needs_extra
from tailorbench.cli.vocabulary import duration
from tailorbench.errors import DATABASE_MODULES, SERVER_MODULES

DIR = typer.Option(Path("annotation"), "--dir", help="Annotation project directory (holds annotate.sqlite when no "
                                                     "--db).")
DB = typer.Option(None, "--db", help="Annotation database URL, e.g. postgresql+psycopg://USER@HOST:PORT/DB "
                                      "(default: SQLite under --dir; env TAILOR_ANNOTATE_DB).")
BASE_URL = typer.Option("http://127.0.0.1:8000", "--base-url", help="Address annotators reach the server at.")
LINK_VALID_FOR = duration("7d", "--link-valid-for", "How long a new login link stays valid (it logs in once)")
PREDICTIONS = typer.Option([], "--predictions", help="Tool formats: judge verdicts (long format or run "
                            "directory) attached as Label Studio predictions / Argilla suggestions.")
#: the command classes of the verbs that open the annotation database (SQLAlchemy, Alembic's migrations) and of
#: those that also serve it (FastAPI, uvicorn): without the [web] extra they say so before any work
DATABASE_VERB = needs_extra("web", DATABASE_MODULES, "the annotation database")
SERVER_VERB = needs_extra("web", SERVER_MODULES, "the annotation server")
#: the verbs call their Python twins (`tailorbench.api.annotate`) and print the result: JSON with --json
JSON = typer.Option(False, "--json", help=JSON_HELP)


def twins() -> ModuleType:
    """`tailorbench.api.annotate`, imported when a verb runs (pydantic and SQLAlchemy stay out of `--help`)."""
    from tailorbench.api import annotate as api_annotate

    return api_annotate


def stored_in(directory: Path, db: str | None, json_out: bool) -> None:
    """After a verb that wrote to the annotation database: where it is (`database: PLACE`; not with --json, whose
    output is the JSON object alone)."""
    if not json_out:
        typer.echo(f"database: {twins().database_place(directory, db)}")
