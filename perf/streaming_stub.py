"""A stub, not a model: an OpenAI-compatible chat endpoint that streams a made-up answer with a fixed timing shape,
standing in for a provider in the arena's load test (perf/arena_load.py) and in the streaming tests.

`POST /v1/chat/completions` with `"stream": true` answers `text/event-stream` (chunked): after a first-token
delay D it sends N tokens at R tokens per second (each token due at start + D + i / R, so a slow loop does not
stretch the answer), a chunk with the finish reason, the usage chunk when `stream_options.include_usage` asks for
it, and `data: [DONE]`. N is `--tokens`, or the request's `max_tokens` when smaller (finish reason `length`).
Without `stream` the whole answer comes as one JSON body when the last token would have been sent. The words
are drawn from a small list by a generator seeded with the request's messages, so one question always gets
the same answer and two questions different ones. `GET /v1/models` lists the one model; `GET /stats` counts
requests and reports the stub's own CPU time (so a load test can tell whether the stub was the bottleneck).

Defaults: 200 tokens, 20 tokens/s, 250 ms to the first token. Raw asyncio streams, no framework: the stub must
cost little CPU next to what it stands in front of.

    python perf/streaming_stub.py --port 0 --print-port [--tokens 200 --rate 20 --first-token-ms 250]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root is not on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perf.latency_server import raise_fd_limit

WORDS = (
    "the", "answer", "depends", "on", "what", "you", "prefer", "and", "how", "much", "time", "there", "is", "for",
    "a", "walk", "in", "park", "quiet", "evening", "with", "tea", "books", "music", "friends", "plan", "week",
    "morning", "light", "simple", "recipe", "budget", "travel", "city", "garden", "coffee", "practice", "habit",
)


@dataclass(frozen=True)
class StubConfig:
    """The timing shape of every streamed answer."""

    tokens: int = 200
    rate: float = 20.0
    first_token_s: float = 0.25
    model: str = "stub"


@dataclass
class StubStats:
    requests: int = 0
    streams: int = 0
    tokens_sent: int = 0
    started: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, Any]:
        cpu = os.times()
        return {"requests": self.requests, "streams": self.streams, "tokens_sent": self.tokens_sent,
                "cpu_s": cpu.user + cpu.system, "wall_s": time.monotonic() - self.started}


def answer_words(messages: Any, count: int) -> list[str]:
    """`count` tokens (a word and its space) drawn by a generator seeded with the messages."""
    seed = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).digest()
    rng = random.Random(seed)
    return [rng.choice(WORDS) + " " for _ in range(count)]


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None,
           usage: dict[str, int] | None = None) -> bytes:
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    payload = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": choices, "usage": usage}
    event = b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


def _response(status: bytes, body: bytes, content_type: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (status, content_type, len(body),
                                                                                 body)


class StreamingStub:
    """The server: `await stub.start(host, port)`, `stub.port`, `await stub.close()`."""

    def __init__(self, config: StubConfig | None = None) -> None:
        self.config = config or StubConfig()
        self.stats = StubStats()
        self._server: asyncio.AbstractServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> StreamingStub:
        self._server = await asyncio.start_server(self._connection, host, port, backlog=4096)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length") or 0))
        path = path.split("?", 1)[0]
        self.stats.requests += 1
        if method == "GET" and path.endswith("/models"):
            data = {"object": "list", "data": [{"id": self.config.model, "object": "model", "owned_by": "stub"}]}
            writer.write(_response(b"200 OK", json.dumps(data).encode()))
        elif method == "GET" and path.endswith("/stats"):
            writer.write(_response(b"200 OK", json.dumps(self.stats.as_dict()).encode()))
        elif method == "POST" and path.endswith("/chat/completions"):
            await self._chat(json.loads(body or b"{}"), writer)
        else:
            writer.write(_response(b"404 Not Found", b'{"error": {"message": "not found"}}'))
        await writer.drain()
        return headers.get("connection", "").lower() != "close"

    async def _chat(self, request: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        config = self.config
        limit = request.get("max_tokens") or request.get("max_completion_tokens")
        count = min(config.tokens, int(limit)) if limit else config.tokens
        finish = "length" if count < config.tokens else "stop"
        words = answer_words(request.get("messages"), count)
        prompt = sum(len(str(m.get("content", "")).split()) for m in request.get("messages") or [])
        usage = {"prompt_tokens": prompt, "completion_tokens": count, "total_tokens": prompt + count}
        loop = asyncio.get_running_loop()
        start = loop.time()
        if not request.get("stream"):
            await asyncio.sleep(config.first_token_s + max(count - 1, 0) / config.rate)
            message = {"role": "assistant", "content": "".join(words)}
            data = {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": config.model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                    "usage": usage}
            writer.write(_response(b"200 OK", json.dumps(data, ensure_ascii=False).encode()))
            return
        self.stats.streams += 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for i, word in enumerate(words):
            due = start + config.first_token_s + i / config.rate
            await asyncio.sleep(max(0.0, due - loop.time()))
            delta = {"role": "assistant", "content": word} if i == 0 else {"content": word}
            writer.write(_chunk(config.model, delta))
            self.stats.tokens_sent += 1
            await writer.drain()
        writer.write(_chunk(config.model, {}, finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            writer.write(_chunk(config.model, {}, usage=usage))
        writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")


@contextlib.contextmanager
def running_stub(config: StubConfig | None = None) -> Iterator[StreamingStub]:
    """The stub on a free loopback port, served by an event loop of its own in a thread (so a caller's loop, or
    a caller without one, can reach it); stopped on exit."""
    stub = StreamingStub(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(stub.start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(stub.close())
        loop.close()

    thread = threading.Thread(target=serve, name="streaming-stub", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield stub
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


async def _serve(args: argparse.Namespace) -> None:
    config = StubConfig(tokens=args.tokens, rate=args.rate, first_token_s=args.first_token_ms / 1000,
                        model=args.model)
    raise_fd_limit()
    stub = await StreamingStub(config).start(args.host, args.port)
    if args.print_port:
        print(stub.port, flush=True)
    else:
        print(f"streaming stub on http://{args.host}:{stub.port}/v1: {config.tokens} tokens at {config.rate:g}/s "
              f"after {args.first_token_ms:g} ms", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (see --print-port)")
    parser.add_argument("--print-port", action="store_true", help="print only the port, on one line, when listening")
    parser.add_argument("--tokens", type=int, default=StubConfig.tokens)
    parser.add_argument("--rate", type=float, default=StubConfig.rate, help="tokens per second")
    parser.add_argument("--first-token-ms", type=float, default=StubConfig.first_token_s * 1000)
    parser.add_argument("--model", default=StubConfig.model)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
