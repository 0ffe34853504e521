"""The cap on request bodies, enforced before the app reads a byte and so before any login check: a client
without a session cannot make the server hold or spool more than the limit.

Pure ASGI middleware: a declared `Content-Length` over the limit is answered 413 at once (the body is never
read); a body that arrives without one (chunked) is counted while the app reads it and cut off with a 413 as
soon as it passes the limit. The 413 closes the connection, so the server reads nothing more of that body. So
does any answer the app gives before it has read the whole body (a 401 or 403 to an upload without a session):
uvicorn would otherwise read and throw away the rest of it to keep the connection alive (an unauthenticated
1 GiB chunked import was answered 401 only once all of it had been sent).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: what every request body may hold (forms, submissions): the largest form our pages send is a few KiB
MAX_FORM_BYTES = 64 * 1024
#: what an admin import upload may hold
MAX_IMPORT_BYTES = 100 * 1024 * 1024
#: the admin import route, the one that takes the larger limit
IMPORT_PATH = re.compile(r"^/admin/p/[0-9]+/import$")


class BodyTooLarge(Exception):
    """Raised inside the app's `receive` once a body passes the limit (the middleware answers 413)."""


def describe(n_bytes: int) -> str:
    """A limit as people write it: 64 KiB, 100 MiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n_bytes >= size and n_bytes % size == 0:
            return f"{n_bytes // size} {unit}"
    return f"{n_bytes} bytes"


class BodyLimit:
    """At most `max_form_bytes` per request body, `max_import_bytes` for the admin import; `page(status,
    message)` renders the HTML of the 413 answer."""

    def __init__(self, app: Any, page: Callable[[int, str], bytes], max_form_bytes: int = MAX_FORM_BYTES,
                 max_import_bytes: int = MAX_IMPORT_BYTES) -> None:
        if max_form_bytes < 1 or max_import_bytes < 1:
            raise ValueError("body limits must be at least 1 byte")
        self.app = app
        self.page = page
        self.max_form_bytes = max_form_bytes
        self.max_import_bytes = max_import_bytes

    def limit_for(self, scope: Any) -> int:
        if scope["method"] == "POST" and IMPORT_PATH.match(scope["path"]):
            return self.max_import_bytes
        return self.max_form_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._refuse(send, limit)
            return

        received = 0
        exceeded = False
        started = False
        # a body is coming (declared, or chunked) and not all of it has been read yet
        pending = (declared is not None and declared != b"0") or any(
            k == b"transfer-encoding" for k, _ in scope["headers"])

        async def limited_receive() -> Any:
            nonlocal received, exceeded, pending
            if exceeded:
                raise BodyTooLarge
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                pending = pending and bool(message.get("more_body"))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Any) -> None:
            nonlocal started
            if exceeded:  # the app caught BodyTooLarge and answered (e.g. a 400): the answer is the 413
                return
            if message["type"] == "http.response.start":
                started = True
                if pending:  # answered before the body was read: close, never drain the rest
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLarge:
            if started:
                raise
        if exceeded and not started:
            await self._refuse(send, limit)

    async def _refuse(self, send: Any, limit: int) -> None:
        body = self.page(413, f"The request is too large: at most {describe(limit)} is accepted here.")
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
            # close the connection: the server reads nothing more of a body it refused
            (b"connection", b"close"),
        ]})
        await send({"type": "http.response.body", "body": body})
