"""Anthropic's Message Batches API (`/v1/messages/batches`) for `anthropic:` models, through the `anthropic` SDK.

One batch = one create request of `{"custom_id", "params"}` items, `params` exactly the synchronous Messages
request (`AnthropicAPI.request_body`). Limits from the reference: 100,000 requests and 256 MB per batch.
Results are the JSONL file at the batch's `results_url`: `succeeded` (the message), `errored` (retryable
server errors go into a new batch, invalid requests are failed calls), `canceled` and `expired` (never run:
they go into a new batch). A batch carries no metadata, so a crash between its creation and the state write is
recovered by the one batch listed just after the entry was written with exactly its request count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import orjson

from tailorbench.models.anthropic_backend import AnthropicAPI
from tailorbench.models.base import GenParams, Message
from tailorbench.models.batch_control import ControlClient, check_support, control_call
from tailorbench.models.batch_lines import BATCH_APIS, LineError, Outcome, Poll, Results, read_lines

MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024
#: error types inside a batch result that another attempt may fix
_RETRYABLE = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})


@BATCH_APIS.register("anthropic")
class AnthropicBatches(ControlClient):
    """The Message Batches API of one `anthropic:` backend."""

    name = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    api: AnthropicAPI

    def line(self, custom_id: str, messages: Sequence[Message], params: GenParams) -> bytes:
        return orjson.dumps({"custom_id": custom_id, "params": self.api.request_body(messages, params)})

    async def _call(self, what: str, make: Callable[[], Any], submitting: bool = False) -> Any:
        import anthropic

        return await control_call(anthropic, self.api, what, make, submitting=submitting)

    async def check(self) -> None:
        import anthropic

        where = self.api.public_base_url or "api.anthropic.com"
        await check_support(anthropic, self.api, where, "/v1/messages/batches",
                            lambda: self.client().messages.batches.with_raw_response.list(limit=1))

    async def submit(self, chunk: str, lines: Sequence[bytes], note: Callable[..., None]) -> str:
        client = self.client()
        requests = [orjson.loads(line) for line in lines]
        batch = await self._call("batch", lambda: client.messages.batches.create(requests=requests), submitting=True)
        return str(batch.id)

    async def recover(self, entry: dict[str, Any]) -> str | None:
        """The one batch created within a minute after the entry was written with exactly its request count."""
        client = self.client()
        page = await self._call("listing batches", lambda: client.messages.batches.list(limit=100))
        found: list[str] = []
        async for batch in page:
            created = _timestamp(batch.created_at)
            if created < entry.get("created", 0) - 5:
                break  # listed newest first
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if total == len(entry["custom_ids"]) and created <= entry.get("created", 0) + 60:
                found.append(str(batch.id))
        return found[0] if len(found) == 1 else None

    async def poll(self, batch_id: str) -> Poll:
        client = self.client()
        batch = await self._call(f"batch {batch_id}", lambda: client.messages.batches.retrieve(batch_id))
        raw = batch.model_dump(mode="json")
        state = "ended" if batch.processing_status == "ended" else "running"
        return Poll(state, str(batch.processing_status), dict(raw.get("request_counts") or {}), "", raw)

    async def results(self, batch_id: str, poll: Poll) -> Results:
        import httpx2

        out = Results()
        url = poll.raw.get("results_url")
        if not url:
            out.malformed.append(f"batch {batch_id} ended without a results_url")
            return out
        client = self.client()
        response = await self._call(f"results of batch {batch_id}", lambda: client.get(
            url, cast_to=httpx2.Response, options={"headers": {"Accept": "application/binary"}}))
        read_lines(response.content, f"batch {batch_id} results", self._outcome, out)
        return out

    def _outcome(self, row: dict[str, Any]) -> tuple[str, Outcome]:
        custom_id = row["custom_id"]
        result = row["result"]
        kind = result["type"]
        if kind == "succeeded":
            return custom_id, self.api.parse_response(result["message"])
        if kind in ("canceled", "expired"):
            return custom_id, LineError("unanswered", f"the batch ended before this request ran ({kind})", True)
        if kind == "errored":
            error = (result.get("error") or {}).get("error") or {}
            etype = str(error.get("type"))
            retry = etype in _RETRYABLE
            return custom_id, LineError("server" if retry else "client", f"{etype}: {error.get('message')}", retry)
        raise KeyError(f"unknown result type {kind!r}")

    async def cancel(self, batch_id: str) -> None:
        client = self.client()
        await self._call(f"cancel of batch {batch_id}", lambda: client.messages.batches.cancel(batch_id))


def _timestamp(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
