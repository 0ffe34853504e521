"""`tailor annotate ...`: the annotation service from the command line (everything the admin pages do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from tailorbench.cli.agree_cmd import MAP
from tailorbench.cli.annotate_options import (
    BASE_URL,
    DATABASE_VERB,
    DB,
    DIR,
    JSON,
    LINK_VALID_FOR,
    PREDICTIONS,
    SERVER_VERB,
    stored_in,
    twins,
)
from tailorbench.cli.annotate_tables import progress_table
from tailorbench.cli.common import JSON_HELP, emit, print_json, text_or_file, user_errors
from tailorbench.cli.vocabulary import duration

annotate_app = typer.Typer(help="Annotation web service: serve, projects, imports, annotators, progress, export.",
                           no_args_is_help=True)
project_app = typer.Typer(help="Create and list projects.", no_args_is_help=True)
annotator_app = typer.Typer(help="Create annotators and admins, print login links, deactivate accounts.",
                             no_args_is_help=True)
annotate_app.add_typer(project_app, name="project")
annotate_app.add_typer(annotator_app, name="annotator")

@annotate_app.command("serve")
def serve(
    directory: Path = DIR,
    db: str | None = DB,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (an interface of this machine)."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                        help="Always mark cookies Secure (set when a TLS proxy is in front)."),
    proxy_headers: bool = typer.Option(False, "--proxy-headers",
                                       help="Trust X-Forwarded-Proto/For from the proxy (for https detection)."),
    max_form_kib: int = typer.Option(64, "--max-form-kib", help="Largest request body (forms, submissions), in "
                                     "KiB: a larger one is answered 413 before it is read."),
    max_import_mib: int = typer.Option(100, "--max-import-mib", help="Largest admin import upload, in MiB."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {url, database}, before serving"),
) -> None:
    """Run the web service (migrations are applied on start); prints its URL and how to log in as admin."""

    def announce(where: dict[str, Any]) -> None:
        url = where["url"]
        typer.echo(f"tailor annotate serve: {url} (database {where['database']}; Ctrl-C stops it)")
        store = f"--dir {directory}" if db is None else "--db DATABASE_URL"
        typer.echo(f"admin login: `tailor annotate annotator add NAME --admin {store} --base-url {url}` prints a "
                   "login link (it logs in once)")

    with user_errors():
        twins().serve(directory, db, host, port, secure_cookies, proxy_headers, max_form_kib, max_import_mib,
                       announce=print_json if json_out else announce)


@project_app.command("create")
def project_create(
    name: str = typer.Argument(..., help="Project name."),
    task: str = typer.Option(..., "--task-type", help="A task type: pairwise | attributes | relevance | ab_rating, "
                             "or one a plugin registers (group tailorbench.task_types)."),
    n: int = typer.Option(3, "--n", help="Annotators per item (distinct)."),
    instructions: str = typer.Option("", "--instructions", help="Instructions text, or @FILE to read them."),
    gold_every: int = typer.Option(5, "--gold-every", help="One gold item after every K regular items."),
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Create a project."""
    with user_errors():  # options checked before the database is opened (or created)
        text = text_or_file(instructions, "--instructions")
        emit(twins().create_project(name, task, n, text, gold_every, directory, db), json_out)
    stored_in(directory, db, json_out)


@project_app.command("list")
def project_list(directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """List projects with their progress."""
    with user_errors():
        emit(twins().list_projects(directory, db), json_out)


@annotate_app.command("import")
def import_(
    project: str = typer.Argument(..., help="Project name."),
    file: Path = typer.Argument(..., help="JSONL file."),
    fmt: str = typer.Option("auto", "--input-format",
                            help="Format of the files read: auto | paircase | pipeline | items | benchmark (any "
                                 "registered layout)"),
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Import items (all or nothing: a bad line stops the import and stores nothing)."""
    with user_errors():
        emit(twins().import_items(project, file, fmt, directory, db), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("add")
def annotator_add(
    name: str = typer.Argument(..., help="Annotator name."),
    project: list[str] = typer.Option([], "--project", help="Annotation project(s) this annotator works on."),
    admin: bool = typer.Option(False, "--admin", help="Create an admin instead of an annotator."),
    base_url: str = BASE_URL,
    link_valid_for: float = LINK_VALID_FOR,
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Create an annotator (or admin) and print their personal login link (shown once; it logs in once)."""
    with user_errors():
        emit(twins().add_annotator(name, project, admin, base_url, directory, db,
                                   link_valid_for / 86400), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("join")
def annotator_join(name: str = typer.Argument(..., help="Annotator name."),
                   project: str = typer.Option(..., "--project", help="Annotation project to add them to."),
                   directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """Add an existing annotator to a project."""
    with user_errors():
        emit(twins().join(name, project, directory, db), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("link")
def annotator_link(name: str = typer.Argument(..., help="Annotator name."), base_url: str = BASE_URL,
                   link_valid_for: float = LINK_VALID_FOR, directory: Path = DIR, db: str | None = DB,
                   json_out: bool = JSON) -> None:
    """Issue a new login link, e.g. for a lost cookie (the old link and open sessions stop working)."""
    with user_errors():
        emit(twins().link(name, base_url, directory, db, link_valid_for / 86400), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("deactivate")
def annotator_deactivate(name: str = typer.Argument(..., help="Annotator name."), directory: Path = DIR,
                         db: str | None = DB, json_out: bool = JSON) -> None:
    """Deactivate an account: no more logins, its sessions end, its unfinished items go back to the queue."""
    with user_errors():
        emit(twins().deactivate(name, directory, db), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("activate")
def annotator_activate(name: str = typer.Argument(..., help="Annotator name."), directory: Path = DIR,
                       db: str | None = DB, json_out: bool = JSON) -> None:
    """Reactivate a deactivated account (`annotator link NAME` gives it a new login link if needed)."""
    with user_errors():
        emit(twins().activate(name, directory, db), json_out)
    stored_in(directory, db, json_out)


@annotator_app.command("list")
def annotator_list(directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """List users, roles and projects."""
    with user_errors():
        emit(twins().list_annotators(directory, db), json_out)


@annotate_app.command("progress")
def progress(
    project: str = typer.Argument(..., help="Project name."),
    agreement: bool = typer.Option(False, "--agreement", help="Add the agreement report so far."),
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Progress overall and per annotator (with gold scores and quality) as a table, flagged items, optionally
    agreement (--json: every figure)."""
    with user_errors():
        got = twins().progress(project, agreement, directory, db)
        if json_out:
            emit(got, True)
        else:
            typer.echo(progress_table(got))


@annotate_app.command("release")
def release(
    project: str = typer.Argument(..., help="Project name."),
    older_than: float = duration("24h", "--older-than", "Age of the unfinished assignments to release"),
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Return unfinished assignments older than the given age to the queue (finished labels are kept)."""
    with user_errors():
        emit(twins().release(project, older_than / 3600, directory, db), json_out)
    stored_in(directory, db, json_out)


@annotate_app.command("export")
def export(
    project: str = typer.Argument(..., help="Project name."),
    out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: a directory for ratings.jsonl/.csv, "
                                                      "items.jsonl, labels.jsonl (and benchmark.jsonl, tiers.json for"
                                                      " pairwise projects)."),
    include_gold: bool = typer.Option(False, "--include-gold", help="Also export labels of gold items."),
    min_ratings: int | None = typer.Option(None, "--min-ratings", help="Tiering: ratings an item needs."),
    easy: float = typer.Option(0.75, "--easy", help="Tiering: minimum P_i for the easy tier."),
    medium: float = typer.Option(0.6, "--medium", help="Tiering: minimum P_i for the medium tier."),
    fmt: str = typer.Option("native", "--output-format", help="Format written: native (the long format and the files "
                                                              "above) | label-studio | argilla | potato: the "
                                                              "project's items as that tool's project."),
    seed: int = typer.Option(0, "--seed", help="Seed of the answer sides drawn per item (tool formats)."),
    predictions: list[Path] = PREDICTIONS,
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Export labels in the long rating format (and, for pairwise, a tiered benchmark), or the items as a Label
    Studio, Argilla or Potato project."""
    with user_errors():  # options and --out checked before the database is opened
        emit(twins().export(project, out, include_gold, min_ratings, easy, medium, directory, db, fmt, seed,
                              predictions), json_out)


@annotate_app.command("export-items")
def export_items(
    items: Path = typer.Argument(..., help="Items JSONL of the task type (what `annotate import` reads)."),
    task: str = typer.Option(..., "--task-type", help="A task type: pairwise | attributes | relevance | ab_rating"),
    fmt: str = typer.Option(..., "--output-format", help="Format written: label-studio | argilla | potato"),
    out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: a directory for the tool's project "
                                                      "files."),
    seed: int = typer.Option(0, "--seed", help="Seed of the answer sides drawn per item."),
    min_submitted: int = typer.Option(3, "--min-submitted",
                                      help="Argilla: annotators per record (TaskDistribution min_submitted)."),
    predictions: list[Path] = PREDICTIONS,
    json_out: bool = JSON,
) -> None:
    """Write an items file as a Label Studio, Argilla or Potato project (no database needed)."""
    with user_errors():
        emit(twins().export_items(items, task, fmt, out, seed, min_submitted, predictions), json_out)


@annotate_app.command("import-labels")
def import_labels(
    file: Path = typer.Argument(..., help="A Label Studio JSON export, Argilla records (or a to_disk folder), or "
                                          "a Potato project folder."),
    out: Path = typer.Option(..., "--out", "-o", help="What the verb writes: long-format ratings JSONL."),
    fmt: str = typer.Option("auto", "--input-format", help="Format of the files read: auto (detected from the "
                                                           "content) | label-studio | argilla | potato"),
    mapping: str | None = MAP,
    json_out: bool = JSON,
) -> None:
    """Read an annotation tool's export into the long rating format; prints what was not a rating, by reason."""
    with user_errors():
        emit(twins().import_labels(file, out, fmt, mapping), json_out)


#: the annotate verbs that work on files alone (an items file in, a tool's project or export out): no [web] extra
FILE_VERBS = ("export-items", "import-labels")


def register(app: typer.Typer) -> None:
    """`tailor annotate ...`; every verb but FILE_VERBS opens the database (`serve` also serves it), so without
    the [web] extra it says so before any work, a verb added later included."""
    from tailorbench.cli.annotate_study_cmd import study_app

    annotate_app.add_typer(study_app, name="crowd")
    annotate_app.add_typer(study_app, name="study", hidden=True)  # the old name, one release (CHANGELOG.md)
    for group in (annotate_app, project_app, annotator_app, study_app):
        for info in group.registered_commands:
            if info.name not in FILE_VERBS and info.cls in (None, TyperCommand):
                info.cls = SERVER_VERB if info.name == "serve" else DATABASE_VERB
    app.add_typer(annotate_app, name="annotate")
