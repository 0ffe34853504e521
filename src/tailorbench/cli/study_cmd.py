"""`tailor study ...`: a whole human study from one config (STUDY_DIR/study.yaml; docs/study.md). Every verb is a
call into `tailorbench.api.study` (`tb.study.*`); progress goes to stderr, the result to stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tailorbench.cli.annotate_options import DATABASE_VERB, SERVER_VERB
from tailorbench.cli.common import JSON_OPTION, emit, print_json, user_errors
from tailorbench.cli.vocabulary import duration

study_app = typer.Typer(help="A whole human study from one config: init, plan, run (until people are needed), "
                             "status, report; demo runs the bundled example with simulated people.",
                        no_args_is_help=True)
STUDY_DIR = typer.Argument(..., help="The study directory (its study.yaml, state and outputs).")


def _api() -> Any:
    """`tailorbench.api.study`, imported when a verb runs (so `tailor --help` stays light)."""
    from tailorbench.api import study

    return study


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


@study_app.command("init")
def init(study_dir: Path = STUDY_DIR,
         force: bool = typer.Option(False, "--force", help="Write over an existing study.yaml."),
         as_json: bool = JSON_OPTION) -> None:
    """Write the bundled example study (study.yaml and its inputs) into STUDY_DIR, to edit."""
    with user_errors():
        emit(_api().init(study_dir, force=force), as_json)


@study_app.command("plan")
def plan(study_dir: Path = STUDY_DIR, as_json: bool = JSON_OPTION) -> None:
    """Every step with its inputs, outputs, model calls and estimated cost, and the crowd cost; writes nothing."""
    with user_errors():
        got = _api().plan(study_dir)
    if as_json:
        print_json(got.to_dict())
        return
    for s in got.steps:
        calls = "" if s["kind"] != "model" else f"  calls={'?' if s['calls'] is None else s['calls']}"
        cost = f"  cost={_money(s['cost_usd'])}" if s["kind"] == "model" and s["calls"] is not None else ""
        typer.echo(f"{s['status']:8} {s['id']:32} {s['what']}{calls}{cost}")
        typer.echo(f"{'':8} in: {', '.join(s['deps'] + s['inputs']) or '-'}  out: {', '.join(s['outputs'])}")
    known = "" if got.model_calls_known else " (so far: the others are counted once their inputs exist)"
    typer.echo(f"model calls: {got.model_calls}{known}; estimated cost: {_money(got.estimated_cost_usd)}")
    for stage, c in got.crowd_cost.items():
        who = (f"{c['places']} places x {c['reward']} {c['currency']}" if "places" in c
               else f"{c['annotators']} own annotator(s)")
        typer.echo(f"crowd {stage}: {who} = {c['cost']}")
    if got.stale:
        typer.echo(f"changed since they ran (will be redone): {', '.join(got.stale)}")


@study_app.command("run", cls=DATABASE_VERB)
def run(study_dir: Path = STUDY_DIR,
        watch: bool = typer.Option(False, "--watch", help="Keep going: check again every --interval "
                                   "while people are needed, until the study is finished."),
        interval: float = duration("30s", "--interval", "Time between checks with --watch"),
        max_wait: float | None = duration(None, "--max-wait", "With --watch: give up waiting after this long "
                                          "(exit 0, still waiting)"),
        as_json: bool = JSON_OPTION) -> None:
    """Advance the study as far as it can go; stop where people are needed, saying how many labels are
    missing (exit 0: run again, or --watch, to continue)."""
    with user_errors():
        got = _api().run(study_dir, watch=watch, interval_s=interval, max_wait_s=max_wait, say=_say)
    if as_json:
        print_json(got.to_dict())
        return
    if got.finished:
        typer.echo(f"finished: the report is in {study_dir}/ (tailor study report {study_dir})")
    elif got.waiting is not None:
        w = got.waiting
        typer.echo(f"waiting for people: {w['stage']}: {w['missing']} label(s) missing ({w['labels_done']} of "
                   f"{w['labels_wanted']})" + (f"; study link: {w['link']}" if w.get("link") else ""))


@study_app.command("status", cls=DATABASE_VERB)
def status(study_dir: Path = STUDY_DIR, as_json: bool = JSON_OPTION) -> None:
    """Per stage: the step, labels done / wanted, each annotator's quality and the crowd's open places."""
    with user_errors():
        got = _api().status(study_dir)
    if as_json:
        print_json(got.to_dict())
        return
    for stage, e in got.stages.items():
        labels = f"  labels {e['labels_done']}/{e['labels_wanted']}" if "labels_done" in e else ""
        places = f"  open places {e['crowd']['open_places']}/{e['crowd']['places']}" if "crowd" in e else ""
        typer.echo(f"{stage}: {e['step']}{labels}{places}")
        for name, q in (e.get("annotators") or {}).items():
            typer.echo(f"  {name}: {q['labels']} labels, median {q['median_seconds']} s, kappa {q['kappa']}, "
                       f"majority agreement {q['majority_agreement']}, gold {q['gold_agreement']}")
    typer.echo("finished" if got.finished else "not finished")


@study_app.command("report")
def report(study_dir: Path = STUDY_DIR, as_json: bool = JSON_OPTION) -> None:
    """The study report (study.json / study.md, the stage reports and their summary) of a finished study."""
    with user_errors():
        got = _api().report(study_dir)
    if as_json:
        print_json(got.to_dict())
        return
    typer.echo(Path(got.out, "study.md").read_text(encoding="utf-8"))


@study_app.command("demo", cls=SERVER_VERB)
def demo(study_dir: Path = STUDY_DIR,
         seed: int = typer.Option(0, "--seed", help="Seed of the simulated participants' answers."),
         as_json: bool = JSON_OPTION) -> None:
    """The bundled example from init to report on SQLite with an illustrative model and simulated
    participants over HTTP (illustrative figures, labelled so)."""
    with user_errors():
        got = _api().demo(study_dir, seed=seed, say=_say)
    if as_json:
        print_json(got.to_dict())
        return
    typer.echo(f"finished: the illustrative report is in {study_dir}/report (study.md)")


def register(app: typer.Typer) -> None:
    app.add_typer(study_app, name="study")
