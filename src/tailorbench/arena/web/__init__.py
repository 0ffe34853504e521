"""The participant's pages of the arena (FastAPI + Jinja, no front-end build), served by `tailor arena run`.

consent -> profile -> ask (their own question, or one from the pool) -> a battle: two anonymous answers streamed
side by side (server-sent events read by the app's own script; the left/right order drawn and recorded per
battle) -> vote (keys 1/2/3/4 or A/B/T/X, a confidence 1-3, an optional reason) -> the next question -> the
completion code. `pages.py` holds the routes, `stream.py` the event streams.

Security model, as the annotation service's (annotation/web): a session whose random token lives in an HttpOnly,
SameSite=Lax cookie (`tb_arena`); every form carries the participant's CSRF token, and a POST from another
origin is refused; the consent form, posted before any session, carries a nonce repeated in a SameSite=Strict
cookie; a battle is reachable only by the participant it belongs to (anything else is a 404); Jinja autoescapes
every model-written text and the script writes answers with `textContent`; the Content-Security-Policy allows
only the app's own script and style files. The server itself refuses a vote before both answers have finished.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from tailorbench.arena.config import ArenaConfig
from tailorbench.arena.store import ArenaStore

PACKAGE = Path(__file__).resolve().parents[1]

__all__ = ["create_app"]


def create_app(config: ArenaConfig, store: ArenaStore, arena_dir: str | Path | None = None) -> FastAPI:
    """The arena's app over `store`. On start, battles a dead server left mid-answer are regenerated or dropped
    (arena.yaml `battles.on_restart`, counted); on stop, the answers in flight are cancelled."""
    from tailorbench.annotation.web.security import SecurityHeaders
    from tailorbench.arena.battles import Generator
    from tailorbench.arena.privacy import EventLog
    from tailorbench.arena.web import pages
    from tailorbench.arena.web.site import ArenaSite, Denied

    events = EventLog(arena_dir) if arena_dir is not None else None
    generator = Generator(config, store, events)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await generator.warm()
        await site.recover()
        try:
            yield
        finally:
            await generator.aclose()

    app = FastAPI(title="tailorbench arena", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    site = ArenaSite(config, store, generator, events)
    app.state.site = site
    app.mount("/static", StaticFiles(directory=str(PACKAGE / "static")), name="static")
    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Denied)
    async def _denied(request: Request, exc: Denied) -> Response:
        return site.message(request, exc.title, exc.message, exc.status)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        message = {404: "No such page.", 405: "This page does not take that request method."}.get(
            exc.status_code, "The request could not be read.")
        return site.message(request, "Not here", message, exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, _exc: Any) -> Response:
        return site.message(request, "Not valid", "The request is not valid.", 422)

    app.router.routes.extend(pages.router(site).routes)
    return app
