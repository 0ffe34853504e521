"""What guards every request of the annotation web app: the security headers (pure ASGI middleware), the cap on
bad login links per client address, the in-process cache of looked-up sessions, and `Denied`, the exception a
route raises to answer with a message page and a status."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any

from sqlalchemy.orm import Session

from tailorbench.annotation import service
from tailorbench.annotation.models import utcnow

#: the session cookie (HttpOnly, SameSite=Lax, Secure over https)
COOKIE = "tb_session"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
#: the answer to an unexpected error (no template: the page must not depend on what may have failed)
ERROR_PAGE = (b"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Server error</title>"
              b"<link rel=\"stylesheet\" href=\"/static/app.css\"></head><body><main><h1>Server error</h1>"
              b"<p id=\"message\">Something went wrong on the server. Try again; if it happens again, tell "
              b"the study's organiser.</p></main></body></html>")


class LoginLimiter:
    """At most `max_failures` bad login links per client address in `window_s`; then that address's further bad
    links are answered 429 until the window has passed. Only bad attempts are throttled: the routes look a link
    up first, so a live link always logs in, even from a throttled address (behind a proxy without
    --proxy-headers every annotator shares one). A link's 192 random bits are what make it unguessable; the cap
    keeps a guesser loud and slow. The table holds at most `max_addresses` addresses."""

    def __init__(self, max_failures: int = 10, window_s: float = 60.0, max_addresses: int = 10_000) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_addresses = max_addresses
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
            if key not in self._fails and len(self._fails) >= self.max_addresses:
                for quiet in [k for k, q in self._fails.items() if not q or now - q[-1] > self.window_s]:
                    del self._fails[quiet]
            self._recent(key, now).append(now)


class SecurityHeaders:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware on every request): CSP, no framing, no sniffing,
    no referrer (login links carry tokens), and no caching of pages that hold labels or tokens. On every
    answer, error pages included: an unexpected exception is answered here with a plain 500 page carrying
    them (Starlette's own 500 comes from its outermost middleware, outside this one), then re-raised so the
    server logs it; the page shows no traceback or path."""

    _COMMON: tuple[tuple[bytes, bytes], ...] = (
        (b"content-security-policy", CSP.encode()),
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
        started = False

        async def send_with_headers(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers.extend(self._COMMON)
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if not started:
                await send_with_headers({"type": "http.response.start", "status": 500, "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(ERROR_PAGE)).encode())]})
                await send_with_headers({"type": "http.response.body", "body": ERROR_PAGE})
            raise


class SessionCache:
    """Recently seen sessions by cookie hash, for `ttl_s` seconds: the session lookup runs on every request, so
    a hit saves a query (and, on PostgreSQL, a round trip). Logging out in this process drops the entry at once;
    deactivating a user or giving them a new link in this process drops theirs; a session ended
    elsewhere (`annotator link` or `deactivate` in the CLI, another worker) stays usable here for at most `ttl_s`.
    Expiry is checked on every hit. Only found sessions are cached; the table is bounded."""

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

    def drop_user(self, user_id: int) -> None:
        """Forget every cached session of a user (deactivated, or given a new link, in this process)."""
        with self._lock:
            for key in [k for k, (_, ident) in self._entries.items() if ident.user_id == user_id]:
                del self._entries[key]


class Denied(Exception):
    """Raised inside a request to answer with a message page and a status (401 / 403 / 404 / 422 / 429); the
    message is shown as it is, so it must never hold a server path or a traceback."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
