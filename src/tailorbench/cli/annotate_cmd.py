"""`tailor annotate ...`: the annotation service from the command line (everything the admin pages do)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tailorbench.cli.common import JSON_HELP, emit, print_json, user_errors

if TYPE_CHECKING:
    from types import ModuleType

    from tailorbench.api_models import Output

annotate_app = typer.Typer(help="Annotation web service: serve, projects, imports, annotators, progress, export.",
                           no_args_is_help=True)
project_app = typer.Typer(help="Create and list projects.", no_args_is_help=True)
annotator_app = typer.Typer(help="Create annotators and admins, print login links, deactivate accounts.",
                             no_args_is_help=True)
annotate_app.add_typer(project_app, name="project")
annotate_app.add_typer(annotator_app, name="annotator")
study_app = typer.Typer(help="Crowd studies (Prolific or another redirect-based platform): open, list, close, "
                             "release, reissue links.", no_args_is_help=True)
annotate_app.add_typer(study_app, name="study")

_DIR = typer.Option(Path("annotation"), "--dir", help="Project directory (holds annotate.sqlite when no --db).")
_DB = typer.Option(None, "--db", help="Database URL, e.g. postgresql+psycopg://USER@HOST:PORT/DB "
                                      "(default: SQLite under --dir; env TAILOR_ANNOTATE_DB).")
_BASE = typer.Option("http://127.0.0.1:8000", "--base-url", help="Address annotators reach the server at.")
_LINK_DAYS = typer.Option(7.0, "--link-days", help="Days the login link stays valid (it logs in once).")
_PREDICTIONS = typer.Option([], "--predictions", help="Tool formats: judge verdicts (long format or run "
                            "directory) attached as Label Studio predictions / Argilla suggestions.")
#: the verbs call their Python twins (`tailorbench.api_annotate`) and print the result: JSON with --json
_JSON = typer.Option(False, "--json", help=JSON_HELP)


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
    max_form_kib: int = typer.Option(64, "--max-form-kib", help="Largest request body (forms, submissions), in "
                                     "KiB: a larger one is answered 413 before it is read."),
    max_import_mib: int = typer.Option(100, "--max-import-mib", help="Largest admin import upload, in MiB."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ": {url, database}, before serving"),
) -> None:
    """Run the web service (migrations are applied on start)."""
    import uvicorn

    from tailorbench.annotate.web import create_app

    with user_errors():
        limits = _twins().serve_limits(port, max_form_kib, max_import_mib)
        store = _twins().database(directory, db)
        app = create_app(store, secure_cookies=True if secure_cookies else None, **limits)
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
    with user_errors():  # options checked before the database is opened (or created)
        text = Path(instructions[1:]).read_text(encoding="utf-8") if instructions.startswith("@") else instructions
        _emit(_twins().create_project(name, task, n, text, gold_every, directory, db), json_out)


@project_app.command("list")
def project_list(directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """List projects with their progress."""
    with user_errors():
        _emit(_twins().list_projects(directory, db), json_out)


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
    with user_errors():
        _emit(_twins().import_items(project, file, fmt, directory, db), json_out)


@annotator_app.command("add")
def annotator_add(
    name: str = typer.Argument(..., help="Annotator name."),
    project: list[str] = typer.Option([], "--project", help="Project(s) this annotator works on."),
    admin: bool = typer.Option(False, "--admin", help="Create an admin instead of an annotator."),
    base_url: str = _BASE,
    link_days: float = _LINK_DAYS,
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Create an annotator (or admin) and print their personal login link (shown once; it logs in once)."""
    with user_errors():
        _emit(_twins().add_annotator(name, project, admin, base_url, directory, db, link_days), json_out)


@annotator_app.command("join")
def annotator_join(name: str = typer.Argument(..., help="Annotator name."),
                   project: str = typer.Option(..., "--project", help="Project to add them to."),
                   directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Add an existing annotator to a project."""
    with user_errors():
        _emit(_twins().join(name, project, directory, db), json_out)


@annotator_app.command("link")
def annotator_link(name: str = typer.Argument(..., help="Annotator name."), base_url: str = _BASE,
                   link_days: float = _LINK_DAYS, directory: Path = _DIR, db: str | None = _DB,
                   json_out: bool = _JSON) -> None:
    """Issue a new login link, e.g. for a lost cookie (the old link and open sessions stop working)."""
    with user_errors():
        _emit(_twins().link(name, base_url, directory, db, link_days), json_out)


@annotator_app.command("deactivate")
def annotator_deactivate(name: str = typer.Argument(..., help="Annotator name."), directory: Path = _DIR,
                         db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Deactivate an account: no more logins, its sessions end, its unfinished items go back to the queue."""
    with user_errors():
        _emit(_twins().deactivate(name, directory, db), json_out)


@annotator_app.command("activate")
def annotator_activate(name: str = typer.Argument(..., help="Annotator name."), directory: Path = _DIR,
                       db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Reactivate a deactivated account (`annotator link NAME` gives it a new login link if needed)."""
    with user_errors():
        _emit(_twins().activate(name, directory, db), json_out)


@annotator_app.command("list")
def annotator_list(directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """List users, roles and projects."""
    with user_errors():
        _emit(_twins().list_annotators(directory, db), json_out)


@annotate_app.command("progress")
def progress(
    project: str = typer.Argument(..., help="Project name."),
    agreement: bool = typer.Option(False, "--agreement", help="Add the agreement report so far."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Progress overall and per annotator (with gold scores), flagged items, optionally agreement."""
    with user_errors():
        _emit(_twins().progress(project, agreement, directory, db), json_out)


@annotate_app.command("release")
def release(
    project: str = typer.Argument(..., help="Project name."),
    older_than_hours: float = typer.Option(24.0, "--older-than-hours", help="Age of unfinished assignments."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Return unfinished assignments older than the given age to the queue (finished labels are kept)."""
    with user_errors():
        _emit(_twins().release(project, older_than_hours, directory, db), json_out)


@annotate_app.command("export")
def export(
    project: str = typer.Argument(..., help="Project name."),
    out: Path = typer.Option(..., "--out", help="Directory for ratings.jsonl/.csv, items.jsonl, labels.jsonl "
                                                "(and benchmark.jsonl, tiers.json for pairwise projects)."),
    include_gold: bool = typer.Option(False, "--include-gold", help="Also export labels of gold items."),
    min_ratings: int | None = typer.Option(None, "--min-ratings", help="Tiering: ratings an item needs."),
    easy: float = typer.Option(0.75, "--easy", help="Tiering: minimum P_i for the easy tier."),
    medium: float = typer.Option(0.6, "--medium", help="Tiering: minimum P_i for the medium tier."),
    fmt: str = typer.Option("native", "--format", help="native (the long format and the files above) | "
                            "label-studio | argilla | potato: the project's items as that tool's project."),
    seed: int = typer.Option(0, "--seed", help="Tool formats: the seed of the answer sides drawn per item."),
    predictions: list[Path] = _PREDICTIONS,
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Export labels in the long rating format (and, for pairwise, a tiered benchmark), or the items as a Label
    Studio, Argilla or Potato project."""
    with user_errors():  # options and --out checked before the database is opened
        _emit(_twins().export(project, out, include_gold, min_ratings, easy, medium, directory, db, fmt, seed,
                              predictions), json_out)


@annotate_app.command("export-items")
def export_items(
    items: Path = typer.Argument(..., help="Items JSONL of the task type (what `annotate import` reads)."),
    task: str = typer.Option(..., "--task", help="pairwise | attributes | relevance | ab_rating"),
    fmt: str = typer.Option(..., "--format", help="label-studio | argilla | potato"),
    out: Path = typer.Option(..., "--out", help="Directory for the tool's project files."),
    seed: int = typer.Option(0, "--seed", help="Seed of the answer sides drawn per item."),
    min_submitted: int = typer.Option(3, "--min-submitted",
                                      help="Argilla: annotators per record (TaskDistribution min_submitted)."),
    predictions: list[Path] = _PREDICTIONS,
    json_out: bool = _JSON,
) -> None:
    """Write an items file as a Label Studio, Argilla or Potato project (no database needed)."""
    with user_errors():
        _emit(_twins().export_items(items, task, fmt, out, seed, min_submitted, predictions), json_out)


@annotate_app.command("import-labels")
def import_labels(
    file: Path = typer.Argument(..., help="A Label Studio JSON export, Argilla records (or a to_disk folder), or "
                                          "a Potato project folder."),
    out: Path = typer.Option(..., "--out", help="Long-format ratings JSONL to write."),
    fmt: str = typer.Option("auto", "--format", help="auto (detected from the content) | label-studio | argilla "
                                                     "| potato"),
    json_out: bool = _JSON,
) -> None:
    """Read an annotation tool's export into the long rating format; prints what was not a rating, by reason."""
    with user_errors():
        _emit(_twins().import_labels(file, out, fmt), json_out)


@study_app.command("create")
def study_create(
    project: str = typer.Argument(..., help="Project name."),
    quota: int = typer.Option(..., "--quota", help="Items (gold included) one participant gets at most."),
    max_participants: int = typer.Option(..., "--max-participants", help="Participants working or done at most."),
    completion_code: str = typer.Option(..., "--completion-code", help="The platform's completion code."),
    screenout_code: str | None = typer.Option(None, "--screenout-code",
                                              help="The platform's screen-out code (with --screenout-gold-below)."),
    screenout_gold_below: float | None = typer.Option(None, "--screenout-gold-below",
                                                      help="Screen out when the mean gold score is below this."),
    screenout_after_gold: int = typer.Option(2, "--screenout-after-gold",
                                             help="Gold items answered before the screen-out rule applies."),
    time_limit_min: int = typer.Option(60, "--time-limit-min",
                                       help="Minutes after which an unfinished participant's items are released."),
    completion_url: str | None = typer.Option(None, "--completion-url", help="Completion URL, {code} replaced "
                                              "(default: https://app.prolific.com/submissions/complete?cc={code})."),
    param_id: str = typer.Option("PROLIFIC_PID", "--param-id", help="URL parameter of the participant id."),
    param_study: str = typer.Option("STUDY_ID", "--param-study", help="URL parameter of the platform's study id."),
    param_session: str = typer.Option("SESSION_ID", "--param-session",
                                      help="URL parameter of the platform's session id."),
    consent: str = typer.Option("", "--consent", help="Your consent and information text, or @FILE to read it "
                                "(the consent page shows it first)."),
    base_url: str = _BASE,
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Open a project to a crowd platform and print the study URL to give it (shown once)."""
    with user_errors():
        text = Path(consent[1:]).read_text(encoding="utf-8") if consent.startswith("@") else consent
        _emit(_twins().study_create(project, quota, max_participants, completion_code, screenout_code,
                                    screenout_gold_below, screenout_after_gold, time_limit_min, completion_url,
                                    param_id, param_study, param_session, text, base_url, directory, db), json_out)


@study_app.command("list")
def study_list(directory: Path = _DIR, db: str | None = _DB, json_out: bool = _JSON) -> None:
    """List studies with their settings and participants by status."""
    with user_errors():
        _emit(_twins().study_list(directory, db), json_out)


@study_app.command("close")
def study_close(study: int = typer.Argument(..., help="Study id (from `study list`)."), directory: Path = _DIR,
                db: str | None = _DB, json_out: bool = _JSON) -> None:
    """Close a study: its link lets nobody in any more (participants already in keep working)."""
    with user_errors():
        _emit(_twins().study_close(study, directory, db), json_out)


@study_app.command("release")
def study_release(
    study: int = typer.Argument(..., help="Study id (from `study list`)."),
    returned: list[str] = typer.Option([], "--returned", help="Participant id(s) the platform reports returned."),
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Release participants past the time limit (and returned ones): their unfinished items and places."""
    with user_errors():
        _emit(_twins().study_release(study, returned, directory, db), json_out)


@study_app.command("reissue")
def study_reissue(
    participant: str = typer.Argument(..., help="The participant's platform id (Prolific: PROLIFIC_PID)."),
    study: int | None = typer.Option(None, "--study", help="Study id, when the participant is in several."),
    base_url: str = _BASE,
    directory: Path = _DIR,
    db: str | None = _DB,
    json_out: bool = _JSON,
) -> None:
    """Print a personal login link for a participant who lost their cookie (old sessions end)."""
    with user_errors():
        _emit(_twins().study_reissue(participant, study, base_url, directory, db), json_out)


def _twins() -> ModuleType:
    """`tailorbench.api_annotate`, imported when a verb runs (pydantic and SQLAlchemy stay out of `--help`)."""
    from tailorbench import api_annotate

    return api_annotate


def _emit(result: Output | list[Any], as_json: bool) -> None:
    """A twin's result as the verb prints it (`common.emit`)."""
    emit([r.to_dict() for r in result] if isinstance(result, list) else result.to_dict(), as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(annotate_app, name="annotate")
