"""A recording OpenAI-compatible server on loopback: stores every raw request it receives.

The conformance tests compare what tailorbench sends with what the `openai` SDK's default client sends, byte
source against byte source, so the server must see the requests exactly as they arrived: request line, header
names and values in order, body bytes. It answers `GET .../models` and `POST .../chat/completions` with a
fixed, valid chat completion (verdict `A`; or, with `reply`, the text `reply(request body)` returns: a model
whose answers a test scripts), over HTTP/1.1 keep-alive, optionally over TLS, optionally requiring
`Authorization: Bearer KEY` (401 otherwise, as hosted providers answer), optionally gzip-compressing answers
(as api.openai.com does). A chat request with `"stream": true` is answered as server-sent events (the text in
two pieces, the finish reason, the usage chunk when `stream_options.include_usage` asks for it, `[DONE]`), with a
Content-Length, gzip-compressed like the others when asked. A request whose target is an absolute URL (a client
using it as an HTTP proxy) is answered the same way and recorded with that target.
"""

from __future__ import annotations

import gzip
import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.helpers.loopback import LoopbackHTTPServer, LoopbackServer

COMPLETION = {
    "id": "chatcmpl-rec",
    "object": "chat.completion",
    "created": 0,
    "model": "rec-model",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"}}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
}


@dataclass(frozen=True)
class RawRequest:
    """One request as received."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def path(self) -> str:
        """Path and query of the target (an absolute proxy target reduced to its path)."""
        if self.target.startswith(("http://", "https://")):
            parts = urlsplit(self.target)
            return parts.path + (f"?{parts.query}" if parts.query else "")
        return self.target

    def header_set(self, ignore: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """Headers lower-cased by name, sorted, without the names in `ignore`."""
        return sorted((k.lower(), v) for k, v in self.headers if k.lower() not in ignore)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class RecordingServer(LoopbackServer):
    """Start with `.start()`, stop with `.stop()` (or use as a context manager)."""

    require_key: str | None = None
    ssl_context: ssl.SSLContext | None = None
    gzip_answers: bool = False
    model: str = "rec-model"
    #: the answer's text from the request's JSON body (None: the fixed `A`)
    reply: Callable[[Any], str] | None = None
    requests: list[RawRequest] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        host = "localhost" if self.ssl_context is not None else "127.0.0.1"
        return f"{scheme}://{host}:{self.port}"

    def chat_requests(self) -> list[RawRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0].endswith("/completions")]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def start(self) -> RecordingServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self, status: int, payload: Any, events: bytes | None = None) -> None:
                body = json.dumps(payload).encode() if events is None else events
                headers = {"Content-Type": "application/json" if events is None else "text/event-stream"}
                accepts = self.headers.get("Accept-Encoding", "")
                if owner.gzip_answers and "gzip" in accepts:
                    body = gzip.compress(body)
                    headers["Content-Encoding"] = "gzip"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RawRequest(self.command, self.path, list(self.headers.items()), body)
                with owner._lock:
                    owner.requests.append(request)
                expected = f"Bearer {owner.require_key}"
                if owner.require_key is not None and self.headers.get("Authorization") != expected:
                    # echoes what it got, as some providers do: the client must redact it
                    sent = self.headers.get("Authorization", "")
                    refusal = {"message": f"Incorrect API key provided: {sent}", "type": "invalid_request_error",
                               "code": "invalid_api_key"}
                    self._answer(401, {"error": refusal})
                    return
                path = request.path.split("?")[0]
                if self.command == "GET" and path.endswith("/models"):
                    self._answer(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
                elif self.command == "POST" and path.endswith("/chat/completions"):
                    completion: dict[str, Any] = {**COMPLETION, "model": owner.model}
                    text = "A" if owner.reply is None else owner.reply(request.json())
                    if owner.reply is not None:
                        completion["choices"] = [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}]
                    asked = request.json() or {}
                    if asked.get("stream"):
                        self._answer(200, None, _events(completion, text, asked))
                    else:
                        self._answer(200, completion)
                else:
                    self._answer(404, {"error": {"message": f"no route {path}"}})

            do_GET = _handle
            do_POST = _handle

        server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        if self.ssl_context is not None:
            server.socket = self.ssl_context.wrap_socket(server.socket, server_side=True)
        self._serve(server)
        return self


def _events(completion: dict[str, Any], text: str, request: dict[str, Any]) -> bytes:
    """A completion as OpenAI streams it: chunks of the text, the finish reason, the usage chunk if asked."""
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": completion["model"]}
    half = len(text) // 2
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece},
                                    "finish_reason": None}]} for piece in (text[:half], text[half:])]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()
