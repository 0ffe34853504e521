"""The annotation web app (FastAPI + Jinja2, no front-end build). Pages for annotators (one per task type,
keyboard-first) and for admins (progress, agreement so far, flags, imports, export).

One router per area, each a module of this package: `auth` (login by link, logout), `annotator` (the task pages
and the submission), `admin`, `health` (health check and static files); `pages.Site` is what they share (the
database, the compiled templates, the session cache, the login limiter, the plain-SQL submission path and the
page helpers) and `security` what guards every request.

Security model: login by personal link -> server-side session whose random id lives in an HttpOnly, SameSite=Lax
cookie (Secure over https); every form carries the session's CSRF token; annotators reach only their own
assignments (anything else is a 404, so ids leak nothing) and never /admin; Jinja autoescapes every
model-written text; a strict Content-Security-Policy allows only our own script and style files.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from tailorbench.annotate.db import Database
from tailorbench.annotate.web import admin, annotator, auth, health
from tailorbench.annotate.web.pages import Site
from tailorbench.annotate.web.security import Denied, LoginLimiter, SecurityHeaders, SessionCache

__all__ = ["app_from_env", "create_app"]


def create_app(db: Database, secure_cookies: bool | None = None, login_failures: int = 10,
               login_window_s: float = 60.0, session_cache_s: float = 10.0) -> FastAPI:
    """The app over `db`. `secure_cookies`: None = Secure when the request came over https, True = always.
    `session_cache_s`: how long a looked-up session is reused without asking the database (0 = never)."""
    app = FastAPI(title="tailorbench annotation", docs_url=None, redoc_url=None, openapi_url=None)
    site = Site(db, secure_cookies, LoginLimiter(login_failures, login_window_s), SessionCache(session_cache_s))
    health.mount_static(app)
    app.state.db = db
    app.state.limiter = site.limiter
    app.state.sessions = site.sessions
    app.state.site = site

    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Denied)
    async def _denied(request: Request, exc: Denied) -> Response:
        return site.denied_page(request, exc)

    for area in (health.router(), auth.router(site), annotator.router(site), admin.router(site)):
        # the areas' routes go into the app's own route list, in this order: `app.include_router` would match
        # every request through FastAPI's nested-router layer, measured at 90-190 µs more per request
        app.router.routes.extend(area.routes)
    return app


def app_from_env() -> FastAPI:
    """`uvicorn --factory tailorbench.annotate.web:app_from_env`: database from TAILOR_ANNOTATE_DB (URL or
    SQLite path) or TAILOR_ANNOTATE_DIR; for running under an external process manager or several workers."""
    import os

    from tailorbench.annotate.db import resolve_url

    url = resolve_url(os.environ.get("TAILOR_ANNOTATE_DB"), os.environ.get("TAILOR_ANNOTATE_DIR", "annotation"))
    secure = os.environ.get("TAILOR_ANNOTATE_SECURE_COOKIES") == "1"
    return create_app(Database(url), secure_cookies=True if secure else None)
