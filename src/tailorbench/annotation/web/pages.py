"""What every router of the web app shares: `Site`, one per app, holding the database, the compiled templates,
the session cache, the login limiter and the plain-SQL submission path, with the helpers the routes call (the
logged-in identity, the CSRF check, form reading, rendering of message, task and done pages)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import BaseLoader, ChoiceLoader, Environment, TemplateNotFound
from sqlalchemy.orm import Session

from tailorbench.annotation import service, studies, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.submit_sql import SubmitSQL
from tailorbench.annotation.web.security import COOKIE, Denied, LoginLimiter, SessionCache

PACKAGE_FILES = resources.files("tailorbench.annotation")
#: the export files of every project; a task type adds its own (`TaskType.export_files`: pairwise's benchmark)
EXPORT_FILES = ("ratings.jsonl", "ratings.csv", "items.jsonl", "labels.jsonl")


def export_files(task: str) -> list[str]:
    """The export downloads of a project of task type `task`."""
    return [*EXPORT_FILES, *tasks.task_type(task).export_files]


def known_export_files() -> set[str]:
    """Every export file name some task type writes (a download of any other name is a 404 at once)."""
    return {*EXPORT_FILES, *(f for _, cls in tasks.TASK_TYPES.load_all() for f in cls.export_files)}


#: nesting below this depth is shown as JSON text (a persona is a few levels deep; this bounds the recursion)
PERSONA_DEPTH = 8


def readable(key: Any) -> str:
    """A persona key as a label: `favorite_music` -> "Favorite music" (keys in other scripts unchanged)."""
    words = " ".join(str(key).replace("_", " ").split())
    return words[:1].upper() + words[1:]


def _persona_text(value: Any, depth: int = 0) -> str:
    if isinstance(value, dict):
        if depth >= PERSONA_DEPTH:
            return json.dumps(value, ensure_ascii=False)
        return "; ".join(f"{readable(k)}: {_persona_text(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, list):
        if depth >= PERSONA_DEPTH:
            return json.dumps(value, ensure_ascii=False)
        return "; ".join(_persona_text(v, depth + 1) for v in value)
    return "" if value is None else str(value)


def persona_sections(persona: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """A persona profile as the task pages show it, one foldable section per top-level object: (title, [(label,
    text)]), labels readable, nested values as one line of text; top-level fields that are not objects come
    first, in a section "Profile". Texts are escaped by the template like every other model-written text."""
    if not isinstance(persona, dict):
        return []
    loose = [(readable(k), _persona_text(v)) for k, v in persona.items() if not isinstance(v, dict)]
    sections = [(readable(k), [(readable(sk), _persona_text(sv, 1)) for sk, sv in v.items()])
                for k, v in persona.items() if isinstance(v, dict)]
    return ([("Profile", loose)] if loose else []) + sections


class TaskTemplates(BaseLoader):
    """Finds a template in the `template_dir` of a task type loaded so far (after the package's own)."""

    def get_source(self, environment: Environment, template: str) -> tuple[str, str | None, Callable[[], bool]]:
        for _, cls in tasks.TASK_TYPES.loaded():
            if cls.template_dir is not None:
                path = Path(cls.template_dir) / template
                if path.is_file():
                    return path.read_text(encoding="utf-8"), str(path), lambda: True
        raise TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        return sorted({cls.page_template(cls()) for _, cls in tasks.TASK_TYPES.loaded() if cls.template_dir})


def compiled_templates() -> Jinja2Templates:
    """The package's templates (and those of task types' `template_dir`), each compiled once."""
    templates = Jinja2Templates(directory=str(PACKAGE_FILES / "templates"))
    # templates ship inside the package: compile each once, never stat the files again on every render
    # (auto_reload cost as much as the rendering itself in the profile)
    templates.env.auto_reload = False
    # a task type's template is the package's own or one in the task type's `template_dir` (plugins)
    assert templates.env.loader is not None
    templates.env.loader = ChoiceLoader([templates.env.loader, TaskTemplates()])
    templates.env.globals["task_title"] = tasks.task_title
    templates.env.globals["persona_sections"] = persona_sections
    for name in templates.env.list_templates(extensions=["html"]):
        templates.env.get_template(name)  # compiled now, not by the first request of each page
    return templates


class Site:
    """The state and helpers one app's routes share."""

    def __init__(self, db: Database, secure_cookies: bool | None, limiter: LoginLimiter,
                 sessions: SessionCache) -> None:
        self.db = db
        self.secure_cookies = secure_cookies
        self.limiter = limiter
        self.sessions = sessions
        #: a crowd study participant's current page (web/study.py sets it when its routes are added)
        self.participant_page: Callable[[Site, Request, service.Identity, int], Response] | None = None
        self.templates = compiled_templates()
        self.submit_sql = SubmitSQL(db)

    def page(self, request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    def denied_page(self, request: Request, exc: Denied) -> HTMLResponse:
        return self.page(request, "message.html", {"title": "Not available", "message": exc.message, "me": None},
                         exc.status)

    @contextmanager
    def tx(self) -> Iterator[Session]:
        with self.db.session() as s:
            yield s

    def who(self, s: Session, request: Request, admin: bool = False) -> service.Identity:
        ident = self.sessions.lookup(s, request.cookies.get(COOKIE))
        if ident is None:
            raise Denied(401, "You are not logged in. Open your personal login link to start.")
        if admin and ident.role != "admin":
            raise Denied(403, "This page is for admins only.")
        return ident

    def who_now(self, request: Request) -> service.Identity:
        """`who` for the per-submission paths: a cached session costs no transaction (and, on SQLite, no wait
        for the writer lock)."""
        cookie = request.cookies.get(COOKIE)
        ident = self.sessions.peek(cookie) if cookie else None
        if ident is not None:
            return ident
        with self.tx() as s:
            return self.who(s, request)

    @staticmethod
    def check_origin(request: Request) -> None:
        """A form posted from another site is refused (browsers send Origin with every POST)."""
        origin = request.headers.get("origin")
        if origin and origin != "null" and origin.rstrip("/") != str(request.base_url).rstrip("/"):
            raise Denied(403, "Cross-site form submission refused.")

    @classmethod
    def check_csrf(cls, request: Request, ident: service.Identity, form: dict[str, str]) -> None:
        cls.check_origin(request)
        if not secrets.compare_digest(form.get("csrf", ""), ident.csrf):
            raise Denied(403, "This form has expired (stale security token). Reload the page and try again.")

    @staticmethod
    async def read_form(request: Request) -> dict[str, str]:
        """The posted form's text fields; a field a database cannot store (NUL) is a 422 naming it, before any
        query (PostgreSQL answered such a note with a 500 and a reset connection)."""
        ctype = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if ctype == "application/x-www-form-urlencoded":  # what our forms send: parsed directly (cheaper)
            body = await request.body()
            fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        else:
            form = await request.form()
            fields = {k: v for k, v in form.items() if isinstance(v, str)}
        bad = service.unstorable_field(fields)
        if bad is not None:
            raise Denied(422, f"The field {bad!r} contains a NUL character, which cannot be stored. Go back, "
                              "remove it and submit again.")
        return fields

    def is_secure(self, request: Request) -> bool:
        return self.secure_cookies if self.secure_cookies is not None else request.url.scheme == "https"

    def task_page(self, request: Request, ident: service.Identity, ctx: dict[str, Any], error: str = "",
                  status: int = 200) -> HTMLResponse:
        p = ctx["project"]
        # page_url: where a reload should go (app.js puts it in the address bar after a POST answered with
        # this page, so a reload is a GET of the current assignment and never a second POST); a study
        # participant's page carries their assignment's opaque reference instead of its id (`ref`)
        url = f"/t/{ctx['ref']}" if ctx.get("ref") else f"/a/{ctx['assignment']['id']}"
        return self.page(request, tasks.task_type(p["task_type"]).page_template(),
                         {"me": ident, **ctx, "v": ctx["view"], "error": error, "page_url": url,
                          "action_url": url}, status)

    def done_page(self, request: Request, ident: service.Identity, project_id: int,
                  counts: dict[str, int]) -> HTMLResponse:
        return self.page(request, "done.html", {"me": ident, "counts": counts, "project_id": project_id,
                                                "page_url": f"/p/{project_id}"})

    def current_page(self, request: Request, ident: service.Identity, project_id: int) -> Response:
        """The annotator's current task page (resume, or a new assignment), or the done page; a crowd study's
        participant gets theirs from web/study.py (quota, time limit, the completion redirect)."""
        if ident.role == studies.ROLE and self.participant_page is not None:
            return self.participant_page(self, request, ident, project_id)
        with self.tx() as s:
            try:
                a = service.next_assignment(s, ident.user_id, project_id)
            except service.NotFound:
                raise Denied(404, "No such project.") from None
            if a is None:
                counts = service.my_counts(s, ident.user_id, project_id)
            else:
                ctx = service.assignment_view(s, ident.user_id, a.id, a.done_count)
        if a is None:
            return self.done_page(request, ident, project_id, counts)
        return self.task_page(request, ident, ctx)
