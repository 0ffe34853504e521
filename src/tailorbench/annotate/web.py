"""The annotation web app (FastAPI + Jinja2, no front-end build). Pages for annotators (one per task type,
keyboard-first) and for admins (progress, agreement so far, flags, imports, export).

Security model: login by personal link -> server-side session whose random id lives in an HttpOnly, SameSite=Lax
cookie (Secure over https); every form carries the session's CSRF token; annotators reach only their own
assignments (anything else is a 404, so ids leak nothing) and never /admin; Jinja autoescapes every
model-written text; a strict Content-Security-Policy allows only our own script and style files.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import BaseLoader, ChoiceLoader, Environment, TemplateNotFound
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from tailorbench.annotate import service, tasks
from tailorbench.annotate.db import Database
from tailorbench.annotate.fast import Conflict, FastPath
from tailorbench.annotate.fast import Gone as FastGone
from tailorbench.annotate.models import utcnow
from tailorbench.errors import TailorError

COOKIE = "tb_session"
_PKG = resources.files("tailorbench.annotate")
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'")
#: the export files of every project; a task type adds its own (`TaskType.export_files`: pairwise's benchmark)
EXPORT_FILES = ("ratings.jsonl", "ratings.csv", "items.jsonl", "labels.jsonl")


def export_files(task: str) -> list[str]:
    """The export downloads of a project of task type `task`."""
    return [*EXPORT_FILES, *tasks.task_type(task).export_files]


def known_export_files() -> set[str]:
    """Every export file name some task type writes (a download of any other name is a 404 at once)."""
    return {*EXPORT_FILES, *(f for _, cls in tasks.TASK_TYPES.load_all() for f in cls.export_files)}


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


class LoginLimiter:
    """At most `max_failures` bad login links per client address in `window_s`; then every login attempt from
    that address is refused (429) until the window has passed. Guesses are thus capped; good links are free."""

    def __init__(self, max_failures: int = 10, window_s: float = 60.0) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._fails: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        q = self._fails[key]
        while q and now - q[0] > self.window_s:
            q.popleft()
        return q

    def blocked(self, key: str) -> bool:
        with self._lock:
            n = len(self._recent(key, time.monotonic()))
            if n == 0:
                self._fails.pop(key, None)  # forget quiet addresses: the table never grows without bound
            return n >= self.max_failures

    def failed(self, key: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._recent(key, now).append(now)


class SecurityHeaders:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware on every request): CSP, no framing, no sniffing,
    no referrer (login links carry tokens), and no caching of pages that hold labels or tokens."""

    _COMMON: tuple[tuple[bytes, bytes], ...] = (
        (b"content-security-policy", _CSP.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
    )

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(self._COMMON)
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SessionCache:
    """Recently seen sessions by cookie hash, for `ttl_s` seconds: the session lookup runs on every request, so
    a hit saves a query (and, on PostgreSQL, a round trip). Logging out in this process drops the entry at once;
    a session ended elsewhere (`annotator link` in the CLI, another worker) stays usable here for at most
    `ttl_s`. Expiry is checked on every hit. Only found sessions are cached; the table is bounded."""

    def __init__(self, ttl_s: float = 10.0, max_entries: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, service.Identity]] = {}
        self._lock = threading.Lock()

    def peek(self, cookie: str) -> service.Identity | None:
        """The cached, unexpired session behind `cookie`, without asking the database."""
        if self.ttl_s <= 0:
            return None
        with self._lock:
            hit = self._entries.get(service.token_hash(cookie))
        if hit is None or time.monotonic() - hit[0] >= self.ttl_s:
            return None
        ident = hit[1]
        if ident.expires_at is not None and ident.expires_at <= utcnow():
            return None
        return ident

    def lookup(self, s: Session, cookie: str | None) -> service.Identity | None:
        if not cookie:
            return None
        ident = self.peek(cookie)
        if ident is not None:
            return ident
        ident = service.identify(s, cookie)
        if ident is not None and self.ttl_s > 0:
            with self._lock:
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()  # crude but bounded: everyone pays one lookup again
                self._entries[ident.session_hash] = (time.monotonic(), ident)
        return ident

    def drop(self, session_hash: str) -> None:
        with self._lock:
            self._entries.pop(session_hash, None)


class Denied(Exception):
    """Raised inside a request to answer with a page and a status (401 / 403 / 404)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def create_app(db: Database, secure_cookies: bool | None = None, login_failures: int = 10,
               login_window_s: float = 60.0, session_cache_s: float = 10.0) -> FastAPI:
    """The app over `db`. `secure_cookies`: None = Secure when the request came over https, True = always.
    `session_cache_s`: how long a looked-up session is reused without asking the database (0 = never)."""
    app = FastAPI(title="tailorbench annotation", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=str(_PKG / "templates"))
    # templates ship inside the package: compile each once, never stat the files again on every render
    # (auto_reload cost as much as the rendering itself in the profile)
    templates.env.auto_reload = False
    # a task type's template is the package's own or one in the task type's `template_dir` (plugins)
    assert templates.env.loader is not None
    templates.env.loader = ChoiceLoader([templates.env.loader, TaskTemplates()])
    templates.env.globals["task_title"] = tasks.task_title
    for name in templates.env.list_templates(extensions=["html"]):
        templates.env.get_template(name)  # compiled now, not by the first request of each page
    sessions = SessionCache(session_cache_s)
    fast = FastPath(db)
    app.mount("/static", StaticFiles(directory=str(_PKG / "static")), name="static")
    limiter = LoginLimiter(login_failures, login_window_s)
    app.state.db = db
    app.state.limiter = limiter
    app.state.sessions = sessions

    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Denied)
    async def _denied(request: Request, exc: Denied) -> Response:
        return templates.TemplateResponse(request, "message.html", {"title": "Not available",
                                                                     "message": exc.message, "me": None},
                                          status_code=exc.status)

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    @contextmanager
    def tx() -> Iterator[Session]:
        with db.session() as s:
            yield s

    def who(s: Session, request: Request, admin: bool = False) -> service.Identity:
        ident = sessions.lookup(s, request.cookies.get(COOKIE))
        if ident is None:
            raise Denied(401, "You are not logged in. Open your personal login link to start.")
        if admin and ident.role != "admin":
            raise Denied(403, "This page is for admins only.")
        return ident

    def who_now(request: Request) -> service.Identity:
        """`who` for the per-submission paths: a cached session costs no transaction (and, on SQLite, no wait
        for the writer lock)."""
        cookie = request.cookies.get(COOKIE)
        ident = sessions.peek(cookie) if cookie else None
        if ident is not None:
            return ident
        with tx() as s:
            return who(s, request)

    def check_csrf(request: Request, ident: service.Identity, form: dict[str, str]) -> None:
        origin = request.headers.get("origin")
        if origin and origin != "null" and origin.rstrip("/") != str(request.base_url).rstrip("/"):
            raise Denied(403, "Cross-site form submission refused.")
        if not secrets.compare_digest(form.get("csrf", ""), ident.csrf):
            raise Denied(403, "This form has expired (stale security token). Reload the page and try again.")

    async def read_form(request: Request) -> dict[str, str]:
        ctype = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if ctype == "application/x-www-form-urlencoded":  # what our forms send: parsed directly (cheaper)
            body = await request.body()
            return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        form = await request.form()
        return {k: v for k, v in form.items() if isinstance(v, str)}

    def is_secure(request: Request) -> bool:
        return secure_cookies if secure_cookies is not None else request.url.scheme == "https"

    # --- login ------------------------------------------------------------------------------------

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/login/{token}")
    def login(request: Request, token: str) -> Response:
        client = request.client.host if request.client else "?"
        if limiter.blocked(client):
            raise Denied(429, "Too many failed login attempts. Wait a minute and use your own link.")
        with tx() as s:
            got = service.login(s, token)
        if got is None:
            limiter.failed(client)
            raise Denied(403, "This login link is not valid. Ask your admin for a new one.")
        cookie, user = got
        response = RedirectResponse("/admin" if user.role == "admin" else "/", status_code=303)
        response.set_cookie(COOKIE, cookie, max_age=service.SESSION_DAYS * 86400, httponly=True,
                            secure=is_secure(request), samesite="lax", path="/")
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        form = await read_form(request)
        with tx() as s:
            ident = who(s, request)
            check_csrf(request, ident, form)
            service.logout(s, ident.session_hash)
        sessions.drop(ident.session_hash)
        response = RedirectResponse("/bye", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.get("/bye")
    def bye(request: Request) -> HTMLResponse:
        return page(request, "message.html", {"title": "Logged out", "message": "You are logged out.", "me": None})

    # --- annotator pages --------------------------------------------------------------------------

    @app.get("/")
    def home(request: Request) -> Response:
        with tx() as s:
            ident = who(s, request)
        if ident.role == "admin":
            return RedirectResponse("/admin", status_code=303)
        projects = service.list_projects(db, user_id=ident.user_id)
        with tx() as s:
            for p in projects:
                p["mine"] = service.my_counts(s, ident.user_id, p["id"])
        return page(request, "home.html", {"me": ident, "projects": projects})

    def task_page(request: Request, ident: service.Identity, ctx: dict[str, Any], error: str = "",
                  status: int = 200) -> HTMLResponse:
        p = ctx["project"]
        # page_url: where a reload should go (app.js puts it in the address bar after a POST answered with
        # this page, so a reload is a GET of the current assignment and never a second POST)
        return page(request, tasks.task_type(p["task_type"]).page_template(),
                    {"me": ident, **ctx, "v": ctx["view"], "error": error,
                     "page_url": f"/a/{ctx['assignment']['id']}"}, status)

    def done_page(request: Request, ident: service.Identity, project_id: int, counts: dict[str, int]) -> HTMLResponse:
        return page(request, "done.html", {"me": ident, "counts": counts, "project_id": project_id,
                                           "page_url": f"/p/{project_id}"})

    def current_page(request: Request, ident: service.Identity, project_id: int) -> HTMLResponse:
        """The annotator's current task page (resume, or a new assignment), or the done page."""
        with tx() as s:
            try:
                a = service.next_assignment(s, ident.user_id, project_id)
            except service.NotFound:
                raise Denied(404, "No such project.") from None
            if a is None:
                counts = service.my_counts(s, ident.user_id, project_id)
            else:
                ctx = service.assignment_view(s, ident.user_id, a.id, a.done_count)
        if a is None:
            return done_page(request, ident, project_id, counts)
        return task_page(request, ident, ctx)

    @app.get("/p/{project_id}")
    def work(request: Request, project_id: int) -> Response:
        ident = who_now(request)
        return current_page(request, ident, project_id)

    @app.get("/a/{assignment_id}")
    def show_assignment(request: Request, assignment_id: int) -> Response:
        with tx() as s:
            ident = who(s, request)
            try:
                ctx = service.assignment_view(s, ident.user_id, assignment_id)
            except service.NotFound:
                raise Denied(404, "No such assignment.") from None
        if ctx["assignment"]["done"]:
            return RedirectResponse(f"/p/{ctx['project']['id']}", status_code=303)
        return task_page(request, ident, ctx)

    def submit_sync(request: Request, assignment_id: int, form: dict[str, str]) -> Response:
        """One request and one transaction per submission: store the label and answer with the next task page
        (200), in plain SQL (fast.py). Idempotent: a repeated POST of a finished assignment (double click,
        retry, resubmitted reload) stores nothing and answers with the current page, like the first."""
        ident = who_now(request)
        check_csrf(request, ident, form)
        try:
            got = fast.submit_and_next(ident.user_id, assignment_id, form)
        except FastGone:
            raise Denied(404, "No such assignment.") from None
        except tasks.FormError as exc:  # rolled back: nothing stored; show the page again with the reason
            with tx() as s:
                ctx = service.assignment_view(s, ident.user_id, assignment_id)
            return task_page(request, ident, ctx, error=str(exc), status=422)
        except Conflict:  # a concurrent double submit lost the race: its twin stored the label
            with tx() as s:
                project_id = service.assignment_project(s, assignment_id)
            return current_page(request, ident, project_id)
        if got.view is None:  # duplicate, an older open assignment, or nothing left: the reference path
            return current_page(request, ident, got.project_id)
        return task_page(request, ident, got.view)

    async def submit(request: Request) -> Response:
        form = await read_form(request)
        # the database work runs in the thread pool, never on the event loop
        return await run_in_threadpool(submit_sync, request, request.path_params["assignment_id"], form)

    # the submission is a plain Starlette route: FastAPI's parameter and dependency handling cost more per
    # request than the route needs (measured: about a tenth of the server's CPU per submission)
    app.add_route("/a/{assignment_id:int}", submit, methods=["POST"])

    # --- admin pages ------------------------------------------------------------------------------

    @app.get("/admin")
    def admin_index(request: Request) -> HTMLResponse:
        with tx() as s:
            ident = who(s, request, admin=True)
        projects = service.list_projects(db)
        for p in projects:
            p["progress"] = service.progress(db, p["id"])
        return page(request, "admin_index.html", {"me": ident, "projects": projects,
                                                  "task_types": tasks.TASK_TYPES.names()})

    @app.post("/admin/projects")
    async def admin_create_project(request: Request) -> Response:
        form = await read_form(request)
        with tx() as s:
            ident = who(s, request, admin=True)
            check_csrf(request, ident, form)
        try:
            pid = service.create_project(db, form.get("name", ""), form.get("task_type", ""),
                                         int(form.get("n_per_item") or 3), form.get("instructions", ""),
                                         int(form.get("gold_every") or 5))
        except (TailorError, ValueError) as exc:
            raise Denied(422, f"Project not created: {exc}") from None
        return RedirectResponse(f"/admin/p/{pid}", status_code=303)

    @app.get("/admin/p/{project_id}")
    def admin_project(request: Request, project_id: int) -> HTMLResponse:
        with tx() as s:
            ident = who(s, request, admin=True)
        try:
            prog = service.progress(db, project_id)
        except service.NotFound:
            raise Denied(404, "No such project.") from None
        agreement = service.agreement_so_far(db, project_id)
        users = [u for u in service.list_users(db) if u["role"] == "annotator"]
        return page(request, "admin_project.html", {
            "me": ident, "project_id": project_id, "prog": prog, "agreement": agreement,
            "flagged": service.flagged(db, project_id), "users": users, "files": export_files(prog["task_type"]),
            "formats": ["auto", *tasks.task_type(prog["task_type"]).import_formats],
            "message": request.query_params.get("msg", ""),
        })

    @app.get("/admin/p/{project_id}/agreement.json")
    def admin_agreement(request: Request, project_id: int) -> JSONResponse:
        with tx() as s:
            who(s, request, admin=True)
        return JSONResponse(service.agreement_so_far(db, project_id))

    @app.post("/admin/p/{project_id}/import")
    async def admin_import(request: Request, project_id: int) -> Response:
        form = await request.form()
        with tx() as s:
            ident = who(s, request, admin=True)
            check_csrf(request, ident, {"csrf": str(form.get("csrf", ""))})
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise Denied(422, "Choose a JSONL file to import.")
        name = Path(upload.filename or "upload.jsonl").name
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(await upload.read())
            try:
                got = service.import_items(db, project_id, path, str(form.get("format") or "auto"))
            except TailorError as exc:
                raise Denied(422, f"Nothing was imported: {exc}") from None
        msg = f"imported {got['items']} items and {got['gold_items']} gold items ({got['format']})"
        return RedirectResponse(f"/admin/p/{project_id}?msg={msg}", status_code=303)

    @app.post("/admin/p/{project_id}/members")
    async def admin_members(request: Request, project_id: int) -> Response:
        form = await read_form(request)
        with tx() as s:
            ident = who(s, request, admin=True)
            check_csrf(request, ident, form)
        try:
            service.add_member(db, project_id, form.get("user", ""))
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        return RedirectResponse(f"/admin/p/{project_id}", status_code=303)

    @app.get("/admin/p/{project_id}/export/{name}")
    def admin_export(request: Request, project_id: int, name: str) -> Response:
        with tx() as s:
            who(s, request, admin=True)
        if name not in known_export_files():
            raise Denied(404, "No such export file.")
        tmp = tempfile.mkdtemp(prefix="tb-export-")
        try:
            written = service.export(db, project_id, tmp)
        except service.NotFound:
            shutil.rmtree(tmp)
            raise Denied(404, "No such project.") from None
        path = Path(tmp) / name
        if name not in written["files"] or not path.is_file():
            shutil.rmtree(tmp)
            raise Denied(404, f"{name} is not written for this project's task type.")
        media = "text/csv" if name.endswith(".csv") else "application/json"
        return FileResponse(path, media_type=media, filename=name, background=BackgroundTask(shutil.rmtree, tmp))

    @app.get("/admin/users")
    def admin_users(request: Request) -> HTMLResponse:
        with tx() as s:
            ident = who(s, request, admin=True)
        return page(request, "admin_users.html", {"me": ident, "users": service.list_users(db),
                                                  "projects": service.list_projects(db), "link": None})

    @app.post("/admin/users")
    async def admin_add_user(request: Request) -> HTMLResponse:
        form = await read_form(request)
        with tx() as s:
            ident = who(s, request, admin=True)
            check_csrf(request, ident, form)
        projects = [form["project"]] if form.get("project") else []
        try:
            _, token = service.add_user(db, form.get("name", ""), form.get("role") or "annotator", projects)
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        link = f"{str(request.base_url).rstrip('/')}/login/{token}"
        return page(request, "admin_users.html", {"me": ident, "users": service.list_users(db),
                                                  "projects": service.list_projects(db), "link": link,
                                                  "link_name": form.get("name", "")})

    return app


def app_from_env() -> FastAPI:
    """`uvicorn --factory tailorbench.annotate.web:app_from_env`: database from TAILOR_ANNOTATE_DB (URL or
    SQLite path) or TAILOR_ANNOTATE_DIR; for running under an external process manager or several workers."""
    import os

    from tailorbench.annotate.db import resolve_url

    url = resolve_url(os.environ.get("TAILOR_ANNOTATE_DB"), os.environ.get("TAILOR_ANNOTATE_DIR", "annotation"))
    secure = os.environ.get("TAILOR_ANNOTATE_SECURE_COOKIES") == "1"
    return create_app(Database(url), secure_cookies=True if secure else None)
