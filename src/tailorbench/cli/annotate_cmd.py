"""`tailor annotate ...`: the annotation service from the command line (everything the admin pages do)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.common import JSON_HELP, print_json, user_errors

annotate_app = typer.Typer(help="Annotation web service: serve, projects, imports, annotators, progress, export.",
                           no_args_is_help=True)
project_app = typer.Typer(help="Create and list projects.", no_args_is_help=True)
annotator_app = typer.Typer(help="Create annotators and admins, print login links.", no_args_is_help=True)
annotate_app.add_typer(project_app, name="project")
annotate_app.add_typer(annotator_app, name="annotator")

_DIR = typer.Option(Path("annotation"), "--dir", help="Project directory (holds annotate.sqlite when no --db).")
_DB = typer.Option(None, "--db", help="Database URL, e.g. postgresql+psycopg://USER@HOST:PORT/DB "
                                      "(default: SQLite under --dir; env TAILOR_ANNOTATE_DB).")
_BASE = typer.Option("http://127.0.0.1:8000", "--base-url", help="Address annotators reach the server at.")
#: every annotate verb prints its result object as JSON, with or without --json (the flag is the shared vocabulary)
_JSON = typer.Option(False, "--json", help=JSON_HELP)


def _db(directory: Path, db: str | None) -> Any:
    from tailorbench.annotate.db import Database, resolve_url

    return Database(resolve_url(db or os.environ.get("TAILOR_ANNOTATE_DB"), directory))


@annotate_app.command("serve")
def serve(
    directory: Path = _DIR,
    db: str | None = _DB,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                        help="Always mark cookies Secure (set when a TLS proxy is in front)."),
    proxy_headers: bool = typer.Option(False, "--proxy-headers",
                                       help="Trust X-Forwarded-Proto/For from the proxy (for https detection)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {url, database}, before serving"),
) -> None:
    """Run the web service (migrations are applied on start)."""
    import uvicorn

    from tailorbench.annotate.web import create_app

    with user_errors():
        from tailorbench.options import as_int

        as_int("--port", port, minimum=1, maximum=65535)
        store = _db(directory, db)
        app = create_app(store, secure_cookies=True if secure_cookies else None)
    if json_out:
        from tailorbench.redact import public_url

        print_json({"url": f"http://{host}:{port}", "database": public_url(str(store.url))})
    uvicorn.run(app, host=host, port=port, proxy_headers=proxy_headers, log_level="warning", access_log=False)


@project_app.command("create")
def project_create(
    name: str = typer.Argument(..., help="Project name."),
    task: str = typer.Option(..., "--task", help="A task type: pairwise | attributes | relevance | ab_rating, "
                             "or one a plugin registers (group tailorbench.task_types)."),
    n: int = typer.Option(3, "--n", help="Distinct annotators per item."),
    instructions: str = typer.Option("", "--instructions", help="Instructions text, or @FILE to read them."),
    gold_every: int = typer.Option(5, "--gold-every", help="One gold item after every K regular items."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Create a project."""
    from tailorbench.annotate import service

    with user_errors():  # options checked before the database is opened (or created)
        from tailorbench.annotate.tasks import TASK_TYPES
        from tailorbench.options import as_choice, as_int

        task = as_choice("--task", task.strip().lower(), tuple(TASK_TYPES.names()))
        as_int("--n", n, minimum=1)
        as_int("--gold-every", gold_every, minimum=1)
        text = Path(instructions[1:]).read_text(encoding="utf-8") if instructions.startswith("@") else instructions
        pid = service.create_project(_db(directory, db), name, task, n, text, gold_every)
    print_json({"project": name, "id": pid, "task_type": task, "n_per_item": n})


@project_app.command("list")
def project_list(directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """List projects with their progress."""
    from tailorbench.annotate import service

    with user_errors():
        store = _db(directory, db)
        print_json([service.progress(store, p["id"]) for p in service.list_projects(store)])


@annotate_app.command("import")
def import_(
    project: str = typer.Argument(..., help="Project name."),
    file: Path = typer.Argument(..., help="JSONL file."),
    fmt: str = typer.Option("auto", "--format", help="auto | paircase | pipeline | items"),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Import items (all or nothing: a bad line stops the import and stores nothing)."""
    from tailorbench.annotate import service

    with user_errors():
        from tailorbench.annotate.importer import FORMATS
        from tailorbench.options import as_choice

        as_choice("--format", fmt, FORMATS)
        print_json(service.import_items(_db(directory, db), project, file, fmt))


@annotator_app.command("add")
def annotator_add(
    name: str = typer.Argument(..., help="Annotator name."),
    project: list[str] = typer.Option([], "--project", help="Project(s) this annotator works on."),
    admin: bool = typer.Option(False, "--admin", help="Create an admin instead of an annotator."),
    base_url: str = _BASE,
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Create an annotator (or admin) and print their personal login link (shown once)."""
    from tailorbench.annotate import service

    with user_errors():
        _, token = service.add_user(_db(directory, db), name, "admin" if admin else "annotator", project)
    print_json({"name": name, "role": "admin" if admin else "annotator", "projects": project,
                "login_link": f"{base_url.rstrip('/')}/login/{token}"})


@annotator_app.command("join")
def annotator_join(name: str = typer.Argument(..., help="Annotator name."),
                   project: str = typer.Option(..., "--project", help="Project to add them to."),
                   directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Add an existing annotator to a project."""
    from tailorbench.annotate import service

    with user_errors():
        service.add_member(_db(directory, db), project, name)
    print_json({"name": name, "project": project})


@annotator_app.command("link")
def annotator_link(name: str = typer.Argument(..., help="Annotator name."), base_url: str = _BASE,
                   directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Issue a new login link (the old link and open sessions stop working)."""
    from tailorbench.annotate import service

    with user_errors():
        token = service.rotate_link(_db(directory, db), name)
    print_json({"name": name, "login_link": f"{base_url.rstrip('/')}/login/{token}"})


@annotator_app.command("list")
def annotator_list(directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """List users, roles and projects."""
    from tailorbench.annotate import service

    with user_errors():
        print_json(service.list_users(_db(directory, db)))


@annotate_app.command("progress")
def progress(
    project: str = typer.Argument(..., help="Project name."),
    agreement: bool = typer.Option(False, "--agreement", help="Add the agreement report so far."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Progress overall and per annotator (with gold scores), flagged items, optionally agreement."""
    from tailorbench.annotate import service

    with user_errors():
        store = _db(directory, db)
        out = service.progress(store, project)
        out["flagged"] = service.flagged(store, project)
        if agreement:
            out["agreement"] = service.agreement_so_far(store, project, resamples=1000)
    print_json(out)


@annotate_app.command("release")
def release(
    project: str = typer.Argument(..., help="Project name."),
    older_than_hours: float = typer.Option(24.0, "--older-than-hours", help="Age of unfinished assignments."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Return unfinished assignments older than the given age to the queue (finished labels are kept)."""
    from tailorbench.annotate import service

    with user_errors():
        from tailorbench.options import as_float

        as_float("--older-than-hours", older_than_hours, minimum=0.0)
        n = service.release_stale(_db(directory, db), project, older_than_hours * 3600)
    print_json({"project": project, "released": n})


@annotate_app.command("export")
def export(
    project: str = typer.Argument(..., help="Project name."),
    out: Path = typer.Option(..., "--out", help="Directory for ratings.jsonl/.csv, items.jsonl, labels.jsonl "
                                                "(and benchmark.jsonl, tiers.json for pairwise projects)."),
    include_gold: bool = typer.Option(False, "--include-gold", help="Also export labels of gold items."),
    min_ratings: int | None = typer.Option(None, "--min-ratings", help="Tiering: ratings an item needs."),
    easy: float = typer.Option(0.75, "--easy", help="Tiering: minimum P_i for the easy tier."),
    medium: float = typer.Option(0.6, "--medium", help="Tiering: minimum P_i for the medium tier."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Export labels in the long rating format (and, for pairwise, a tiered benchmark)."""
    from tailorbench.annotate import service

    with user_errors():  # options and --out checked before the database is opened
        from tailorbench.agreement.tiers import TierRule
        from tailorbench.options import as_float, as_int, check_writable

        as_float("--easy", easy, minimum=0.0, maximum=1.0)
        as_float("--medium", medium, minimum=0.0, maximum=1.0)
        TierRule(easy=easy, medium=medium,
                 min_ratings=3 if min_ratings is None else as_int("--min-ratings", min_ratings, minimum=2))
        check_writable("--out", out, directory=True)
        print_json(service.export(_db(directory, db), project, out, include_gold, min_ratings, easy, medium))


def register(app: typer.Typer) -> None:
    app.add_typer(annotate_app, name="annotate")
