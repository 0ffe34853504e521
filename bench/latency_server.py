"""A benchmark instrument, not a test fixture: an OpenAI-compatible endpoint that answers every chat completion
with a fixed verdict after a fixed delay, so a client's throughput can be compared with concurrency / latency.

Written on raw asyncio protocols (no framework) so that the server spends little CPU per request; it reports its
own CPU time at `GET /stats` so a benchmark can tell whether the server was the bottleneck.

    python bench/latency_server.py --port 8765 --delay 0.25
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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


def _response(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


_CHAT = _response(_BODY)
_MODELS_RESPONSE = _response(_MODELS)


class Stats:
    requests = 0
    started = time.monotonic()


class BenchProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive; requests are read by Content-Length and answered after `delay` seconds."""

    delay = 0.25

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = b""
        self.loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            path = head.split(" ", 2)[1]
            if path.endswith("/chat/completions"):
                Stats.requests += 1
                self.loop.call_later(self.delay, self._send, _CHAT)
            elif path.endswith("/models"):
                self._send(_MODELS_RESPONSE)
            elif path.endswith("/stats"):
                cpu = os.times()
                body = json.dumps(
                    {
                        "requests": Stats.requests,
                        "cpu_s": cpu.user + cpu.system,
                        "wall_s": time.monotonic() - Stats.started,
                    }
                ).encode()
                self._send(_response(body))
            else:
                self._send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    def _send(self, payload: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(payload)


async def serve(host: str, port: int, delay: float) -> None:
    BenchProtocol.delay = delay
    server = await asyncio.get_running_loop().create_server(BenchProtocol, host, port, backlog=4096)
    print(f"listening on http://{host}:{port}/v1 delay={delay}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--delay", type=float, default=0.25)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port, args.delay))


if __name__ == "__main__":
    main()
