"""Fault injection in front of a real server: a share of chat-completion requests get a 429 with Retry-After,
a 500, a hang past the client's timeout, or a dropped connection. Built on CountingProxy's intercept hook, so
the proxy also counts what reached the server. Draws come from a seeded generator (reproducible shares)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Sequence

from tests.helpers.counting_proxy import DROP, CountingProxy, Reply

FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "drop")


class FaultPlan:
    """Decides per request: forward (None), or one fault of `kinds` with probability `share`."""

    def __init__(
        self,
        share: float = 0.2,
        seed: int = 0,
        kinds: Sequence[str] = FAULT_KINDS,
        retry_after: str = "1",
        hang_s: float = 3.0,
        path: str = "/v1/chat/completions",
    ) -> None:
        self.share = share
        self.kinds = tuple(kinds)
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.path = path
        self.injected: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes) -> Reply | str | None:
        if path != self.path:
            return None
        with self._lock:
            if self._rng.random() >= self.share:
                return None
            kind = self._rng.choice(self.kinds)
            self.injected[kind] += 1
        if kind == "429":
            return Reply(429, b'{"error": {"message": "rate limited (injected)", "type": "rate_limit"}}',
                         {"Retry-After": self.retry_after, "Content-Type": "application/json"})
        if kind == "500":
            return Reply(500, b'{"error": {"message": "internal error (injected)"}}',
                         {"Content-Type": "application/json"})
        if kind == "400":  # not in the default mix: a client error that must not be retried
            return Reply(400, b'{"error": {"message": "bad request (injected)"}}', {"Content-Type": "application/json"})
        if kind == "timeout":
            time.sleep(self.hang_s)  # the client has given up by now
            return DROP
        return DROP


def fault_proxy(upstream: str, plan: FaultPlan) -> CountingProxy:
    """A started proxy to `upstream` (http://host:port) that injects `plan`'s faults."""
    return CountingProxy(upstream, intercept=plan).start()
