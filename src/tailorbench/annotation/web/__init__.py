"""The annotation web app (FastAPI + Jinja2, no front-end build). Pages for annotators (one per task type,
keyboard-first) and for admins (progress, agreement so far, flags, imports, export).

One router per area, each a module of this package: `auth` (login by link, logout), `annotator` (the task pages and
the submission), `admin`, `users` (accounts, login links, deactivation), `health` (health check and static files);
`pages.Site` is what they share (the database, the compiled templates, the session cache, the login limiter, the
plain-SQL submission path and the page helpers) and `security` what guards every request, `limits` the cap on
request bodies (checked before a body is read, so before any login check), `ids` the `{name:id}` path parameter (a
number an id column holds, else 404), `import_jobs` the admin imports running off the event loop.

Security model: login by personal link -> server-side session whose random id lives in an HttpOnly, SameSite=Lax
cookie (Secure over https); every form carries the session's CSRF token; annotators reach only their own
assignments (anything else is a 404, so ids leak nothing) and never /admin; Jinja autoescapes every
model-written text; a strict Content-Security-Policy allows only our own script and style files.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from tailorbench.annotation.db import Database

# `ids` registers the `{name:id}` path convertor the routers use
from tailorbench.annotation.web import admin, admin_studies, annotator, auth, health, ids, study, users  # noqa: F401
from tailorbench.annotation.web.import_jobs import ImportJobs
from tailorbench.annotation.web.limits import MAX_FORM_BYTES, MAX_IMPORT_BYTES, BodyLimit
from tailorbench.annotation.web.pages import Site
from tailorbench.annotation.web.security import Denied, LoginLimiter, SecurityHeaders, SessionCache

__all__ = ["app_from_env", "create_app"]


def create_app(db: Database, secure_cookies: bool | None = None, login_failures: int = 10,
               login_window_s: float = 60.0, session_cache_s: float = 10.0, max_form_bytes: int = MAX_FORM_BYTES,
               max_import_bytes: int = MAX_IMPORT_BYTES) -> FastAPI:
    """The app over `db`. `secure_cookies`: None = Secure when the request came over https, True = always.
    `session_cache_s`: how long a looked-up session is reused without asking the database (0 = never).
    `max_form_bytes`: the largest request body (every form and submission); `max_import_bytes`: the largest
    admin import upload; a larger body is answered 413 before it is read."""
    app = FastAPI(title="tailorbench annotation", docs_url=None, redoc_url=None, openapi_url=None)
    site = Site(db, secure_cookies, LoginLimiter(login_failures, login_window_s), SessionCache(session_cache_s))
    health.mount_static(app)
    app.state.db = db
    app.state.limiter = site.limiter
    app.state.sessions = site.sessions
    app.state.site = site
    imports = app.state.imports = ImportJobs(db)

    def message_html(status: int, message: str) -> bytes:
        return site.templates.get_template("message.html").render(
            title=HTTPStatus(status).phrase, message=message, me=None).encode("utf-8")

    # outermost first: the security headers go on every answer (413 and 500 included); the body limit comes
    # before everything that reads a body or looks at a session
    app.add_middleware(BodyLimit, page=message_html, max_form_bytes=max_form_bytes,
                       max_import_bytes=max_import_bytes)
    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Denied)
    async def _denied(request: Request, exc: Denied) -> Response:
        return site.denied_page(request, exc)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        """The router's own answers (no such page, wrong method, an unreadable form) as message pages."""
        message = {404: "No such page.", 405: "This page does not take that request method."}.get(
            exc.status_code, "The request could not be read." if exc.status_code == 400 else exc.detail)
        response = site.denied_page(request, Denied(exc.status_code, message))
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        """FastAPI's parameter check: a plain message, never its details (they echo the input)."""
        return site.denied_page(request, Denied(422, "The request is not valid."))

    for area in (health.router(), auth.router(site), annotator.router(site), admin.router(site, imports),
                 admin_studies.router(site), study.router(site), users.router(site)):
        # the areas' routes go into the app's own route list, in this order: `app.include_router` would match
        # every request through FastAPI's nested-router layer, measured at 90-190 µs more per request
        app.router.routes.extend(area.routes)
    return app


def app_from_env() -> FastAPI:
    """`uvicorn --factory tailorbench.annotation.web:app_from_env`: database from TAILOR_ANNOTATE_DB (URL or
    SQLite path) or TAILOR_ANNOTATE_DIR; for running under an external process manager or several workers."""
    import os

    from tailorbench.annotation.db import resolve_url

    url = resolve_url(os.environ.get("TAILOR_ANNOTATE_DB"), os.environ.get("TAILOR_ANNOTATE_DIR", "annotation"))
    secure = os.environ.get("TAILOR_ANNOTATE_SECURE_COOKIES") == "1"
    return create_app(Database(url), secure_cookies=True if secure else None)
