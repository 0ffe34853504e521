"""OpenAI's Files + Batch API (`/v1/files`, `/v1/batches`) for `openai:` models, through the `openai` SDK.

Any server that implements both works the same (OpenAI, Azure, hosted providers, vLLM's batch format). One
batch = one uploaded JSONL file of `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`
lines, the body exactly the synchronous request (`OpenAICompatAPI.request_body`). Limits from the reference:
50,000 requests and 200 MB per file. Crash safety: the uploaded file's id is recorded before the batch is
created and the batch carries `metadata.tailorbench_chunk`, so a resume finds a batch whose id never reached
the state file (`recover`) instead of creating a second one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from tailorbench.models.base import GenParams, Message
from tailorbench.models.batch_control import ControlClient, check_support, control_call
from tailorbench.models.batch_lines import BATCH_APIS, LineError, Outcome, Poll, Results, read_lines, status_outcome
from tailorbench.models.openai_compat import OpenAICompatAPI

ENDPOINT = "/v1/chat/completions"
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
#: statuses after which a batch answers no more requests
_ENDED = {"completed": "ended", "expired": "ended", "cancelled": "ended", "failed": "failed"}
#: error codes of requests a batch never ran (they go into a new batch)
_UNANSWERED = frozenset({"batch_expired", "batch_cancelled"})


@BATCH_APIS.register("openai")
class OpenAIBatches(ControlClient):
    """The Batch API of one `openai:` backend."""

    name = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    api: OpenAICompatAPI

    def line(self, custom_id: str, messages: Sequence[Message], params: GenParams) -> bytes:
        body = self.api.request_body(messages, params)
        return orjson.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body})

    async def _call(self, what: str, make: Callable[[], Any], submitting: bool = False) -> Any:
        import openai

        return await control_call(openai, self.api, what, make, submitting=submitting)

    async def check(self) -> None:
        import openai

        where = self.api.public_base_url or "api.openai.com"
        await check_support(openai, self.api, where, "/batches", lambda: self.client().batches.list(limit=1))

    async def submit(self, chunk: str, lines: Sequence[bytes], note: Callable[..., None]) -> str:
        client = self.client()
        data = b"\n".join(lines) + b"\n"
        uploaded = await self._call("batch input file", lambda: client.files.create(
            file=(f"tailorbench-{chunk}.jsonl", data, "application/jsonl"), purpose="batch"), submitting=True)
        note(file_id=uploaded.id)
        return await self._create(chunk, uploaded.id)

    async def _create(self, chunk: str, file_id: str) -> str:
        client = self.client()
        batch = await self._call("batch", lambda: client.batches.create(
            input_file_id=file_id, endpoint=ENDPOINT, completion_window="24h",
            metadata={"tailorbench_chunk": chunk}), submitting=True)
        return str(batch.id)

    async def recover(self, entry: dict[str, Any]) -> str | None:
        """The batch made from the entry's file (by its metadata or input file); created now if the crash came
        between the upload and the creation; None when no file was uploaded."""
        file_id = entry.get("file_id")
        if not file_id:
            return None
        client = self.client()
        page = await self._call("listing batches", lambda: client.batches.list(limit=100))
        async for batch in page:
            if batch.input_file_id == file_id or (batch.metadata or {}).get("tailorbench_chunk") == entry["chunk"]:
                return str(batch.id)
            if batch.created_at < entry.get("created", 0) - 60:
                break  # listed newest first: older batches cannot be this one
        return await self._create(entry["chunk"], file_id)

    async def poll(self, batch_id: str) -> Poll:
        client = self.client()
        batch = await self._call(f"batch {batch_id}", lambda: client.batches.retrieve(batch_id))
        raw = batch.model_dump()
        counts = dict(raw.get("request_counts") or {})
        detail = ""
        if batch.status == "failed":
            errors = (raw.get("errors") or {}).get("data") or []
            detail = "; ".join(f"line {e.get('line')}: {e.get('message')}" if e.get("line") else str(e.get("message"))
                               for e in errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
        return Poll(_ENDED.get(batch.status, "running"), batch.status, counts, detail or "the batch failed", raw)

    async def results(self, batch_id: str, poll: Poll) -> Results:
        """The output file's answers and the error file's failures, by custom_id."""
        out = Results()
        client = self.client()
        for key in ("output_file_id", "error_file_id"):
            file_id = poll.raw.get(key)
            if not file_id:
                continue
            content = await self._download(client, str(file_id))
            read_lines(content, f"batch {batch_id} file {file_id}", self._outcome, out)
        return out

    async def _download(self, client: Any, file_id: str) -> bytes:
        response = await self._call(f"download of {file_id}", lambda: client.files.content(file_id))
        return bytes(response.content)

    def _outcome(self, row: dict[str, Any]) -> tuple[str, Outcome]:
        custom_id = row["custom_id"]
        if not isinstance(custom_id, str):
            raise TypeError("custom_id is not a string")
        response = row.get("response")
        error = row.get("error")
        if response is not None and response.get("status_code") == 200:
            return custom_id, self.api.parse_response(response["body"])
        if response is not None:
            body = response.get("body") or {}
            message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
            return custom_id, status_outcome(int(response["status_code"]), str(message or body)[:300])
        if isinstance(error, dict):
            code = str(error.get("code"))
            return custom_id, LineError("unanswered" if code in _UNANSWERED else "client",
                                        f"{code}: {error.get('message')}", resubmit=code in _UNANSWERED)
        raise KeyError("neither response nor error")

    async def cancel(self, batch_id: str) -> None:
        client = self.client()
        await self._call(f"cancel of batch {batch_id}", lambda: client.batches.cancel(batch_id))
