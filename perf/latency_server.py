"""A benchmark instrument, not a test fixture: an OpenAI-compatible endpoint that answers every chat completion
with a fixed verdict after a fixed delay, so a client's throughput can be compared with concurrency / latency.

Written on raw asyncio protocols (no framework) so that the server spends little CPU per request; it reports its
own CPU time at `GET /stats` so a benchmark can tell whether the server was the bottleneck.

With `--require-key KEY` every chat and models request without `Authorization: Bearer KEY` is answered at once
with a 401 in OpenAI's error shape (`{"error": {"message", "type", "param", "code"}}`) and counted as `refused`
in /stats (which itself needs no key), so a benchmark can prove that its calls were authenticated.

    python perf/latency_server.py --port 8765 --delay 0.25 [--require-key KEY]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import time

_BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
    }
).encode()
_MODELS = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model", "owned_by": "bench"}]}).encode()


def _response(body: bytes, status: bytes = b"200 OK") -> bytes:
    head = b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (status, len(body))
    return head + body


def _refusal(message: str) -> bytes:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}
    return _response(json.dumps({"error": error}).encode(), b"401 Unauthorized")


_CHAT = _response(_BODY)
_MODELS_RESPONSE = _response(_MODELS)
_NO_KEY = _refusal("You didn't provide an API key. You need to provide your API key in an Authorization header "
                   "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
_WRONG_KEY = _refusal("Incorrect API key provided. You can find your API key at your provider.")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
_LENGTH_REQUIRED = b"HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class Stats:
    requests = 0
    models = 0
    refused = 0
    started = time.monotonic()


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (a thousand concurrent connections need more than the
    usual 1,024 descriptors); returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


def _header(head: bytes, lower: bytes, name: bytes) -> bytes | None:
    """The value of header `name` (given lower-case with its leading CRLF and colon) in `head`, found on its
    lower-cased copy `lower`; None when absent."""
    at = lower.find(name)
    if at < 0:
        return None
    start = at + len(name)
    stop = lower.find(b"\r\n", start)
    return head[start:stop if stop >= 0 else len(head)].strip()


class BenchProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive; requests are read by Content-Length and answered after `delay` seconds."""

    delay = 0.25
    #: the expected credential (the token after `Bearer `), or None when every request is accepted
    key: bytes | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = b""
        self.loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        self.buffer = self.buffer + data if self.buffer else data
        while True:
            buffer = self.buffer
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = buffer[:end]
            lower = head.lower()
            value = _header(head, lower, b"\r\ncontent-length:")
            if value is None and b"\r\ntransfer-encoding:" in lower:
                self._send(_LENGTH_REQUIRED)  # every client benched sends Content-Length
                self.transport.close()
                return
            length = int(value) if value else 0
            if len(buffer) < end + 4 + length:
                return
            self.buffer = buffer[end + 4 + length :]
            space = head.find(b" ")
            path = head[space + 1 : head.find(b" ", space + 1)].split(b"?", 1)[0]
            if path.endswith(b"/stats"):
                self._send(_stats())
                continue
            chat = path.endswith(b"/chat/completions")
            if not chat and not path.endswith(b"/models"):
                self._send(_NOT_FOUND)
                continue
            if self.key is not None:
                refusal = self._check(head, lower)
                if refusal is not None:
                    Stats.refused += 1
                    self._send(refusal)
                    continue
            if chat:
                Stats.requests += 1
                self.loop.call_later(self.delay, self._send, _CHAT)
            else:
                Stats.models += 1
                self._send(_MODELS_RESPONSE)

    def _check(self, head: bytes, lower: bytes) -> bytes | None:
        """None when the request carries `Authorization: Bearer KEY`, else the 401 to answer with."""
        value = _header(head, lower, b"\r\nauthorization:")
        if not value:
            return _NO_KEY
        scheme, _, token = value.partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return _NO_KEY
        return None if token.strip() == self.key else _WRONG_KEY

    def _send(self, payload: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(payload)


def _stats() -> bytes:
    cpu = os.times()
    return _response(json.dumps({
        "requests": Stats.requests,
        "models": Stats.models,
        "refused": Stats.refused,
        "cpu_s": cpu.user + cpu.system,
        "wall_s": time.monotonic() - Stats.started,
    }).encode())


async def serve(host: str, port: int, delay: float, key: str | None) -> None:
    BenchProtocol.delay = delay
    BenchProtocol.key = key.encode() if key else None
    fds = raise_fd_limit()
    server = await asyncio.get_running_loop().create_server(BenchProtocol, host, port, backlog=4096)
    auth = "key required" if key else "no key required"
    print(f"listening on http://{host}:{port}/v1 delay={delay} ({auth}; {fds} file descriptors)", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--require-key", metavar="KEY", default=None,
                        help="answer 401 to chat and models requests without `Authorization: Bearer KEY`")
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port, args.delay, args.require_key))


if __name__ == "__main__":
    main()
