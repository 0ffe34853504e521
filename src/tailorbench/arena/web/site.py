"""What the arena's routes share: the config, the store, the answer generator, the compiled templates, who is
asking (their session), the CSRF and origin checks, and the message pages."""

from __future__ import annotations

import asyncio
import hmac
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from tailorbench.arena.config import ArenaConfig
from tailorbench.arena.store import ArenaStore, utcnow

COOKIE = "tb_arena"
CONSENT_COOKIE = "tb_arena_consent"
PACKAGE = Path(__file__).resolve().parents[1]


class Denied(Exception):
    """Answer with a message page: a status, a title and a message (never a path or a traceback)."""

    def __init__(self, status: int, message: str, title: str = "Not here") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.title = title


class ArenaSite:
    def __init__(self, config: ArenaConfig, store: ArenaStore, generator: Any, events: Any) -> None:
        self.config = config
        self.store = store
        self.generator = generator
        self.events = events
        self.templates = Environment(loader=FileSystemLoader(str(PACKAGE / "templates")),
                                     autoescape=select_autoescape(default=True, default_for_string=True))
        self.pool = config.pool_questions()

    async def recover(self) -> None:
        """Battles a dead server left mid-answer: regenerated (started again here) or dropped, as configured."""
        for ref in await run_in_threadpool(self.store.recover, self.config.battles.on_restart):
            self.generator.start(ref)
        await asyncio.sleep(0)

    def page(self, request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
        body = self.templates.get_template(name).render(config=self.config, illustrative=self.config.illustrative,
                                                        **context)
        return HTMLResponse(body, status_code=status)

    def message(self, request: Request, title: str, message: str, status: int = 200,
                extra: dict[str, Any] | None = None) -> HTMLResponse:
        return self.page(request, "message.html", {"title": title, "message": message, **(extra or {})}, status)

    def who(self, request: Request) -> dict[str, Any]:
        """The participant behind the session cookie; no session -> back to the consent page (a 401 page with
        its link); a crowd participant past the time limit -> "time is up"."""
        me = self.store.identify(request.cookies.get(COOKIE))
        if me is None:
            raise Denied(401, "Your session has ended or never began: start again from the arena's link.",
                         "Not signed in")
        crowd = self.config.crowd
        if crowd.kind == "prolific" and me["finished_at"] is None:
            consent = me["consent_at"]
            if consent.tzinfo is None:
                from datetime import timezone

                consent = consent.replace(tzinfo=timezone.utc)
            if utcnow() - consent > timedelta(minutes=crowd.time_limit_min):
                raise Denied(410, f"The time limit of {crowd.time_limit_min} minutes has passed: thank you for "
                                  "taking part. Return the study on the platform.", "Time is up")
        return me

    @staticmethod
    def check_origin(request: Request) -> None:
        """A POST from another origin is refused (a browser always sends Origin on a cross-site POST)."""
        origin = request.headers.get("origin")
        if origin is None or origin == "null":
            return
        host = request.headers.get("host", "")
        if origin.split("://", 1)[-1] != host:
            raise Denied(403, "This form was sent from another site.", "Refused")

    def check_csrf(self, request: Request, me: dict[str, Any], form: Any) -> None:
        self.check_origin(request)
        if not hmac.compare_digest(str(form.get("csrf", "")), str(me["csrf"])):
            raise Denied(403, "This form has expired: go back, reload the page and send it again.", "Refused")
