"""Python twins of `tailor annotate ...` (`tb.annotate.*`): the annotation service's projects, imports,
annotators, progress and export, on the database of a project directory (or `db`, a database URL). Each
returns the object the verb prints (with `--json`) as a pydantic model of `api_models`. FastAPI and
SQLAlchemy are imported on the first call."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.api.renamed import renamed
from tailorbench.api.results import (
    AnnotationExport,
    Annotator,
    CrowdStudy,
    ItemsImported,
    LabelsImported,
    Membership,
    ParticipantLink,
    ProjectCreated,
    ProjectProgress,
    Released,
    StudyLink,
    StudyParticipant,
    StudyReleased,
)
from tailorbench.errors import require_web

__all__ = [
    "activate",
    "add_annotator",
    "create_project",
    "crowd_close",
    "crowd_create",
    "crowd_link",
    "crowd_list",
    "crowd_participants",
    "crowd_reissue",
    "crowd_release",
    "database",
    "deactivate",
    "export",
    "export_items",
    "import_items",
    "import_labels",
    "join",
    "link",
    "list_annotators",
    "list_projects",
    "progress",
    "release",
    "serve",
    "serve_limits",
]

DEFAULT_DIR = Path("annotation")
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def _service() -> Any:
    """The annotation service (annotation/service.py), once the [web] extra's database modules are known to be
    there: every verb on the database reaches it through here, so without them it is one line naming the extra
    (the CLI's verbs check the same list, errors.require_web), never a ModuleNotFoundError."""
    require_web("the annotation database")
    from tailorbench.annotation import service

    return service


def database(directory: str | Path = DEFAULT_DIR, db: str | None = None) -> Any:
    """The service's database: `db` (a URL; else env TAILOR_ANNOTATE_DB), else SQLite under `directory`."""
    require_web("the annotation database")
    from tailorbench.annotation.db import Database, resolve_url

    return Database(resolve_url(db or os.environ.get("TAILOR_ANNOTATE_DB"), Path(directory)))


def database_place(directory: str | Path = DEFAULT_DIR, db: str | None = None) -> str:
    """Where `database(directory, db)` is, as a verb that wrote to it names it: the SQLite file's path, or the
    database URL without its password (for the CLI: it opens nothing)."""
    from tailorbench.redact import public_url

    url = db or os.environ.get("TAILOR_ANNOTATE_DB")
    if not url:
        from tailorbench.annotation import DB_FILENAME

        return str(Path(directory) / DB_FILENAME)
    return (public_url(url) or url) if "://" in url else url


def create_project(name: str, task: str, n: int = 3, instructions: str = "", gold_every: int = 5,
                   directory: str | Path = DEFAULT_DIR, db: str | None = None) -> ProjectCreated:
    """`tailor annotate project create NAME --task-type TASK`."""
    service = _service()
    from tailorbench.annotation.tasks import TASK_TYPES
    from tailorbench.options import as_choice, as_int

    task = as_choice("--task-type", task.strip().lower(), tuple(TASK_TYPES.names()))
    as_int("--n", n, minimum=1)
    as_int("--gold-every", gold_every, minimum=1)
    pid = service.create_project(database(directory, db), name, task, n, instructions, gold_every)
    return ProjectCreated(project=name, id=pid, task_type=task, n_per_item=n)


def list_projects(directory: str | Path = DEFAULT_DIR, db: str | None = None) -> list[ProjectProgress]:
    """`tailor annotate project list`: every project with its progress."""
    service = _service()

    store = database(directory, db)
    return [ProjectProgress.model_validate(service.progress(store, p["id"])) for p in service.list_projects(store)]


def import_items(project: str, file: str | Path, fmt: str = "auto", directory: str | Path = DEFAULT_DIR,
                 db: str | None = None) -> ItemsImported:
    """`tailor annotate import PROJECT FILE` (all or nothing)."""
    service = _service()
    from tailorbench.annotation.importer import FORMATS
    from tailorbench.options import as_choice

    as_choice("--input-format", fmt, FORMATS)
    return ItemsImported.model_validate(service.import_items(database(directory, db), project, file, fmt))


def _with_link(store: Any, name: str, token: str, base_url: str) -> Annotator:
    """The account as `annotator list` shows it, with its new login link (shown once)."""
    service = _service()

    row = next(u for u in service.list_users(store) if u["name"] == name)
    return Annotator.model_validate({**row, "login_link": f"{base_url.rstrip('/')}/login/{token}"})


def _link_days(link_days: float) -> float:
    from tailorbench.annotation.service import MAX_LINK_DAYS
    from tailorbench.options import as_float

    return as_float("--link-valid-for (in days)", link_days, minimum=0, maximum=MAX_LINK_DAYS, exclusive_minimum=True)


def _base_url(value: str) -> str:
    """`--base-url`, checked before any work: the links built on it go to people, so http(s) only."""
    from tailorbench.options import as_url

    return as_url("--base-url", value)


def add_annotator(name: str, projects: Sequence[str] = (), admin: bool = False, base_url: str = DEFAULT_BASE_URL,
                  directory: str | Path = DEFAULT_DIR, db: str | None = None, link_days: float = 7.0) -> Annotator:
    """`tailor annotate annotator add NAME`: the personal login link is in the result (shown once); it logs in
    once, within `link_days`."""
    service = _service()

    _base_url(base_url)
    role = "admin" if admin else "annotator"
    store = database(directory, db)
    _, token = service.add_user(store, name.strip(), role, list(projects), _link_days(link_days))
    return _with_link(store, name.strip(), token, base_url)


def join(name: str, project: str, directory: str | Path = DEFAULT_DIR, db: str | None = None) -> Membership:
    """`tailor annotate annotator join NAME --project P`."""
    service = _service()

    service.add_member(database(directory, db), project, name)
    return Membership(name=name, project=project)


def link(name: str, base_url: str = DEFAULT_BASE_URL, directory: str | Path = DEFAULT_DIR,
         db: str | None = None, link_days: float = 7.0) -> Annotator:
    """`tailor annotate annotator link NAME`: a new login link, logging in once within `link_days` (the old link
    and the account's sessions stop working)."""
    service = _service()

    _base_url(base_url)
    store = database(directory, db)
    return _with_link(store, name, service.rotate_link(store, name, _link_days(link_days)), base_url)


def deactivate(name: str, directory: str | Path = DEFAULT_DIR, db: str | None = None) -> Annotator:
    """`tailor annotate annotator deactivate NAME`: the account cannot log in, its sessions end, and its
    unfinished assignments go back to the queue (`released`); its labels stay."""
    return _set_active(name, False, directory, db)


def activate(name: str, directory: str | Path = DEFAULT_DIR, db: str | None = None) -> Annotator:
    """`tailor annotate annotator activate NAME`: a deactivated account may log in again (with a live link:
    `annotator link NAME` issues one)."""
    return _set_active(name, True, directory, db)


def _set_active(name: str, active: bool, directory: str | Path, db: str | None) -> Annotator:
    service = _service()

    store = database(directory, db)
    done = service.set_active(store, name, active)
    row = next(u for u in service.list_users(store) if u["id"] == done.user_id)
    return Annotator.model_validate({**row, "released": done.released})


def list_annotators(directory: str | Path = DEFAULT_DIR, db: str | None = None) -> list[Annotator]:
    """`tailor annotate annotator list`."""
    service = _service()

    return [Annotator.model_validate(u) for u in service.list_users(database(directory, db))]


def progress(project: str, agreement: bool = False, directory: str | Path = DEFAULT_DIR,
             db: str | None = None) -> ProjectProgress:
    """`tailor annotate progress PROJECT [--agreement]`."""
    service = _service()
    from tailorbench.annotation.quality import annotator_quality

    store = database(directory, db)
    out: dict[str, Any] = service.progress(store, project)
    out["flagged"] = service.flagged(store, project)
    out["quality"] = annotator_quality(store, project)
    if agreement:
        out["agreement"] = service.agreement_so_far(store, project, resamples=1000)
    return ProjectProgress.model_validate(out)


def release(project: str, older_than_hours: float = 24.0, directory: str | Path = DEFAULT_DIR,
            db: str | None = None) -> Released:
    """`tailor annotate release PROJECT`: unfinished assignments older than this go back to the queue."""
    service = _service()
    from tailorbench.options import as_float

    as_float("--older-than (in hours)", older_than_hours, minimum=0.0)
    return Released(project=project, released=service.release_stale(database(directory, db), project,
                                                                    older_than_hours * 3600))


def export(project: str, out: str | Path, include_gold: bool = False, min_ratings: int | None = None,
           easy: float = 0.75, medium: float = 0.6, directory: str | Path = DEFAULT_DIR,
           db: str | None = None, fmt: str = "native", seed: int = 0,
           predictions: Sequence[str | Path] = ()) -> AnnotationExport:
    """`tailor annotate export PROJECT --out DIR`: long-format ratings (and a tiered benchmark for pairwise); with
    `fmt` label-studio | argilla | potato, the project's items as that tool's project instead (docs/interop.md)."""
    from tailorbench.agreement.tiers import TierRule
    service = _service()
    from tailorbench.options import as_float, as_int, check_writable

    if fmt != "native":
        from tailorbench.interop import FORMATS, check_format

        check_format(fmt, ("native", *FORMATS), "--output-format")
        check_writable("--out", out, directory=True)
        return _export_tool(project, Path(out), fmt, seed, predictions, database(directory, db))
    if predictions:  # never dropped in silence: the native export has no place for judge verdicts
        from tailorbench.errors import ConfigError

        raise ConfigError("--predictions attaches judge verdicts to a Label Studio or Argilla project: give "
                          "--output-format label-studio or argilla (the native export writes the humans' ratings; "
                          "compare them with a run through `tailor agree`)")
    as_float("--easy", easy, minimum=0.0, maximum=1.0)
    as_float("--medium", medium, minimum=0.0, maximum=1.0)
    TierRule(easy=easy, medium=medium,
             min_ratings=3 if min_ratings is None else as_int("--min-ratings", min_ratings, minimum=2))
    check_writable("--out", out, directory=True)
    return AnnotationExport.model_validate(service.export(database(directory, db), project, Path(out), include_gold,
                                                          min_ratings, easy, medium))


def _export_tool(project: str, out: Path, fmt: str, seed: int, predictions: Sequence[str | Path],
                 store: Any) -> AnnotationExport:
    """A project's items (as `export` writes items.jsonl) through `export_items`, `min_submitted` = its n."""
    service = _service()
    from tailorbench.files import scratch, write_jsonl_atomic

    with store.session() as s:
        p = service.find_project(s, project)
        task, n = p.task_type, p.n_per_item
    with scratch("tb-export-items-") as tmp:
        items = tmp / "items.jsonl"
        write_jsonl_atomic(items, service.items_records(store, project))
        return export_items(items, task, fmt, out, seed, n, predictions)


def export_items(items: str | Path, task: str, fmt: str, out: str | Path, seed: int = 0, min_submitted: int = 3,
                 predictions: Sequence[str | Path] = ()) -> AnnotationExport:
    """`tailor annotate export-items ITEMS --task-type T --output-format F --out DIR`: an items file (no database)
    as a Label Studio, Argilla or Potato project; answer sides drawn per item with `seed`; judge verdicts (long-format
    files, `predictions`) as Label Studio predictions / Argilla suggestions."""
    from tailorbench.interop import export_items as write
    from tailorbench.options import as_int, check_writable

    as_int("--min-submitted", min_submitted, minimum=1)
    # a folder of the user's (a Label Studio project holding tasks.json, a Potato folder) is never written over
    check_writable("--out", out, directory=True, inputs=[items, *predictions])
    return AnnotationExport.model_validate(write(items, task, fmt, out, seed, min_submitted, list(predictions)))


def import_labels(file: str | Path, out: str | Path, fmt: str = "auto", mapping: str | None = None) -> LabelsImported:
    """`tailor annotate import-labels FILE --out ratings.jsonl`: a Label Studio, Argilla or Potato export (detected,
    or `fmt`) -> the long rating format, with the counts of everything that is not a rating. A project tailorbench
    did not make is read through `mapping` (`--map`) or its detected shape; the mapping used is printed and
    written beside the ratings (`OUT.meta.json`). An import that maps nothing is exit 2 with the reasons."""
    from tailorbench.agreement.ratings import merge_ratings, write_ratings_jsonl
    from tailorbench.files import check_output, write_json_atomic
    from tailorbench.interop import FORMATS, check_format, read_export, require_ratings

    check_format(fmt, ("auto", *FORMATS))
    check_output("--out", out, inputs=[file])
    check_output("--out", Path(out).with_suffix(".meta.json"), inputs=[file])
    ratings, report = read_export(file, fmt, mapping)
    require_ratings(report, file)
    merge_ratings([ratings])  # one label type, as every reader of the long format requires
    write_ratings_jsonl(ratings.ratings, out)
    summary = {**report.to_dict(), "out": str(out)}
    write_json_atomic(Path(out).with_suffix(".meta.json"), {k: v for k, v in summary.items() if k != "unmappable"})
    return LabelsImported.model_validate(summary)


def crowd_create(project: str, quota: int, max_participants: int, completion_code: str,
                 screenout_code: str | None = None, screenout_gold_below: float | None = None,
                 screenout_after_gold: int = 2, time_limit_min: int = 60, completion_url: str | None = None,
                 param_id: str = "PROLIFIC_PID", param_study: str = "STUDY_ID", param_session: str = "SESSION_ID",
                 consent: str = "", base_url: str = DEFAULT_BASE_URL, directory: str | Path = DEFAULT_DIR,
                 db: str | None = None) -> CrowdStudy:
    """`tailor annotate crowd create PROJECT --quota N --max-participants M --completion-code CODE`: open the
    project to a crowd platform; the study URL to give the platform is in the result (shown once)."""
    from tailorbench.annotation import studies
    from tailorbench.options import as_int

    as_int("--quota", quota, minimum=1)
    as_int("--max-participants", max_participants, minimum=1)
    as_int("--time-limit (in minutes)", time_limit_min, minimum=1)
    _base_url(base_url)
    params = (param_id, param_study, param_session)
    store = database(directory, db)
    sid, secret = studies.create_study(store, project, quota, max_participants, completion_code, screenout_code,
                                       screenout_gold_below, screenout_after_gold, time_limit_min,
                                       completion_url or studies.PROLIFIC_COMPLETION_URL, params, consent)
    row = next(s for s in studies.list_studies(store) if s["id"] == sid)
    return CrowdStudy.model_validate({**row, "link": studies.study_url(base_url, secret, params)})


def crowd_list(directory: str | Path = DEFAULT_DIR, db: str | None = None) -> list[CrowdStudy]:
    """`tailor annotate crowd list`: every study, its settings and its participants by status."""
    from tailorbench.annotation import studies

    return [CrowdStudy.model_validate(s) for s in studies.list_studies(database(directory, db))]


def crowd_participants(study: int, directory: str | Path = DEFAULT_DIR,
                       db: str | None = None) -> list[StudyParticipant]:
    """`tailor annotate crowd participants STUDY`: each participant's state, items, gold score, time and code."""
    from tailorbench.annotation import studies

    return [StudyParticipant.model_validate(p) for p in studies.participants(database(directory, db), study)]


def crowd_link(study: int, base_url: str = DEFAULT_BASE_URL, directory: str | Path = DEFAULT_DIR,
               db: str | None = None) -> StudyLink:
    """`tailor annotate crowd link STUDY`: the study URL to give the platform (ConfigError for a study made
    before links were kept)."""
    from tailorbench.annotation import studies

    return StudyLink(id=study, link=studies.link(database(directory, db), study, base_url))


def crowd_close(study: int, directory: str | Path = DEFAULT_DIR, db: str | None = None) -> CrowdStudy:
    """`tailor annotate crowd close STUDY`: the link lets nobody in any more (participants in keep working)."""
    from tailorbench.annotation import studies

    return CrowdStudy.model_validate(studies.close_study(database(directory, db), study))


def crowd_release(study: int, returned: Sequence[str] = (), directory: str | Path = DEFAULT_DIR,
                  db: str | None = None) -> StudyReleased:
    """`tailor annotate crowd release STUDY [--returned ID ...]`: participants past the time limit (and those
    reported as returned) give their unfinished items back to the queue and their places to others."""
    from tailorbench.annotation import studies

    return StudyReleased.model_validate(studies.release(database(directory, db), study, list(returned)))


def crowd_reissue(participant: str, study: int | None = None, base_url: str = DEFAULT_BASE_URL,
                  directory: str | Path = DEFAULT_DIR, db: str | None = None) -> ParticipantLink:
    """`tailor annotate crowd reissue PARTICIPANT_ID`: a personal login link for a participant (their platform
    id) who lost their cookie; their old sessions end."""
    from tailorbench.annotation import studies

    _base_url(base_url)
    part, name, token = studies.reissue(database(directory, db), participant, study)
    return ParticipantLink(external_id=part.external_id, study=part.study_id, name=name, status=part.status,
                           login_link=f"{base_url.rstrip('/')}/login/{token}")


def serve(directory: str | Path = DEFAULT_DIR, db: str | None = None, host: str = "127.0.0.1", port: int = 8000,
          secure_cookies: bool = False, proxy_headers: bool = False, max_form_kib: int = 64,
          max_import_mib: int = 100, announce: Callable[[dict[str, Any]], None] | None = None) -> None:
    """`tailor annotate serve`: run the web service until interrupted (blocks). A request body over
    `max_form_kib` KiB (an import upload: `max_import_mib` MiB) is answered 413 before it is read. `announce`
    gets {url, database} once the app is built, before it serves."""
    import uvicorn

    from tailorbench.annotation.web import create_app
    from tailorbench.annotation.web.bounded_http import server_config
    from tailorbench.redact import public_url

    limits = serve_limits(port, max_form_kib, max_import_mib)
    store = database(directory, db)
    app = create_app(store, secure_cookies=True if secure_cookies else None, **limits)
    if announce is not None:
        announce({"url": f"http://{host}:{port}", "database": public_url(str(store.url))})
    # request heads bounded before any work (431 / 408: web/bounded_http.py), bodies by the app (limits.py)
    uvicorn.Server(server_config(app, host, port, proxy_headers=proxy_headers)).run()


def serve_limits(port: int, max_form_kib: int, max_import_mib: int) -> dict[str, int]:
    """`serve`'s numbers checked (ConfigError naming the option): create_app's body limits in bytes."""
    from tailorbench.options import as_int

    as_int("--port", port, minimum=1, maximum=65535)
    return {"max_form_bytes": as_int("--max-form-kib", max_form_kib, minimum=1, maximum=100 << 10) << 10,
            "max_import_bytes": as_int("--max-import-mib", max_import_mib, minimum=1, maximum=10 << 10) << 20}


#: the verbs (their `*_async` twins are gone: each only ran the verb in a worker thread)
_VERBS = ("create_project", "list_projects", "import_items", "add_annotator", "join", "link", "deactivate", "activate",
          "list_annotators", "progress", "release", "export", "export_items", "import_labels", "crowd_create",
          "crowd_list", "crowd_close", "crowd_participants", "crowd_link", "crowd_release", "crowd_reissue")

#: the old names of the crowd-study verbs (`tb.annotate.study_create`, ...), kept for one release
_RENAMED = {f"study_{verb}": f"crowd_{verb}"
            for verb in ("create", "list", "participants", "link", "close", "release", "reissue")}
if not TYPE_CHECKING:
    __getattr__ = renamed(__name__, _RENAMED, twins=_VERBS)
