"""`tailor annotate crowd ...`: crowd studies (Prolific or another redirect-based platform) on a project. The group
is registered as `crowd` and, hidden from `--help`, under its old name `study` (annotate_cmd.register)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from tailorbench.cli.annotate_options import BASE_URL, DB, DIR, JSON, stored_in, twins
from tailorbench.cli.annotate_tables import participants_table
from tailorbench.cli.common import emit, text_or_file, user_errors
from tailorbench.cli.vocabulary import duration

study_app = typer.Typer(help="Crowd studies (Prolific or another redirect-based platform): open, list, show "
                             "participants and the link, close, release, reissue links.", no_args_is_help=True)


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
    time_limit: float = duration("60m", "--time-limit", "How long a participant may take: after it their "
                                 "unfinished items are released (whole minutes, rounded up)"),
    completion_url: str | None = typer.Option(None, "--completion-url", help="Completion URL, {code} replaced "
                                              "(default: https://app.prolific.com/submissions/complete?cc={code})."),
    param_id: str = typer.Option("PROLIFIC_PID", "--param-id", help="URL parameter of the participant id."),
    param_study: str = typer.Option("STUDY_ID", "--param-study", help="URL parameter of the platform's study id."),
    param_session: str = typer.Option("SESSION_ID", "--param-session",
                                      help="URL parameter of the platform's session id."),
    consent: str = typer.Option("", "--consent", help="Your consent and information text, or @FILE to read it "
                                "(the consent page shows it first)."),
    base_url: str = BASE_URL,
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Open a project to a crowd platform and print the study URL to give it (shown once)."""
    with user_errors():
        text = text_or_file(consent, "--consent")
        emit(twins().crowd_create(project, quota, max_participants, completion_code, screenout_code,
                                    screenout_gold_below, screenout_after_gold, math.ceil(time_limit / 60),
                                    completion_url,
                                    param_id, param_study, param_session, text, base_url, directory, db), json_out)
    stored_in(directory, db, json_out)


@study_app.command("list")
def study_list(directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """List studies with their settings and participants by status."""
    with user_errors():
        emit(twins().crowd_list(directory, db), json_out)


@study_app.command("participants")
def study_participants(study: int = typer.Argument(..., help="Study id (from `crowd list`)."),
                       directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """Each participant's state, items, gold score, time and code, as a table (--json: the rows)."""
    with user_errors():
        rows = twins().crowd_participants(study, directory, db)
        if json_out:
            emit(rows, True)
        else:
            typer.echo(participants_table(rows))


@study_app.command("link")
def study_link(study: int = typer.Argument(..., help="Study id (from `crowd list`)."), base_url: str = BASE_URL,
               directory: Path = DIR, db: str | None = DB, json_out: bool = JSON) -> None:
    """Print the study URL to give the platform again."""
    with user_errors():
        emit(twins().crowd_link(study, base_url, directory, db), json_out)


@study_app.command("close")
def study_close(study: int = typer.Argument(..., help="Study id (from `crowd list`)."), directory: Path = DIR,
                db: str | None = DB, json_out: bool = JSON) -> None:
    """Close a study: its link lets nobody in any more (participants already in keep working)."""
    with user_errors():
        emit(twins().crowd_close(study, directory, db), json_out)
    stored_in(directory, db, json_out)


@study_app.command("release")
def study_release(
    study: int = typer.Argument(..., help="Study id (from `crowd list`)."),
    returned: list[str] = typer.Option([], "--returned", help="Participant id(s) the platform reports returned."),
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Release participants past the time limit (and returned ones): their unfinished items and places."""
    with user_errors():
        emit(twins().crowd_release(study, returned, directory, db), json_out)
    stored_in(directory, db, json_out)


@study_app.command("reissue")
def study_reissue(
    participant: str = typer.Argument(..., help="The participant's platform id (Prolific: PROLIFIC_PID)."),
    study: int | None = typer.Option(None, "--study", help="Study id, when the participant is in several."),
    base_url: str = BASE_URL,
    directory: Path = DIR,
    db: str | None = DB,
    json_out: bool = JSON,
) -> None:
    """Print a personal login link for a participant who lost their cookie (old sessions end)."""
    with user_errors():
        emit(twins().crowd_reissue(participant, study, base_url, directory, db), json_out)
    stored_in(directory, db, json_out)
