"""The conformance test server (tests/helpers/batch_server.py) driven by the official SDKs alone: what the SDKs
send is accepted, what it answers the SDKs parse, and what the references forbid is refused as they describe."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.helpers.batch_server import BatchServer, answer_text

KEY = "test-key"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BatchServer]:
    with BatchServer(tmp_path / "state") as srv:
        yield srv


def _openai(server: BatchServer, key: str = KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=key, base_url=f"{server.url}/v1", max_retries=0)


def _anthropic(server: BatchServer, key: str = KEY) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=key, base_url=server.url, max_retries=0)


def _line(custom_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": content}], "max_tokens": 4}, **extra}


async def _openai_batch(client: openai.AsyncOpenAI, lines: list[dict[str, Any]]) -> Any:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = await client.files.create(file=("in.jsonl", data), purpose="batch")
    return await client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                       completion_window="24h", metadata={"run": "t"})


def test_openai_sdk_round_trip(server: BatchServer) -> None:
    async def run() -> None:
        client = _openai(server)
        batch = await _openai_batch(client, [_line(f"r{i}", f"q{i}") for i in range(5)])
        assert batch.status == "completed" and batch.metadata == {"run": "t"}  # no delays configured
        done = await client.batches.retrieve(batch.id)
        assert done.request_counts is not None and done.request_counts.completed == 5
        assert done.output_file_id is not None
        content = await client.files.content(done.output_file_id)
        rows = [json.loads(line) for line in content.content.splitlines()]
        assert [r["custom_id"] for r in rows] == [f"r{i}" for i in range(5)]
        for i, row in enumerate(rows):
            assert row["response"]["status_code"] == 200
            text = row["response"]["body"]["choices"][0]["message"]["content"]
            assert text == answer_text([{"role": "user", "content": f"q{i}"}])
        listed = await client.batches.list(limit=10)
        assert [b.id for b in listed.data] == [batch.id]
        await client.close()

    asyncio.run(run())


def test_openai_input_file_is_validated_as_the_reference_says(server: BatchServer) -> None:
    async def run() -> None:
        client = _openai(server)
        lines = [_line("a", "x"), _line("a", "y"), _line("b", "z", url="/v1/embeddings"), _line("c", "w")]
        lines[3]["method"] = "GET"
        batch = await _openai_batch(client, lines)
        assert batch.status == "failed" and batch.errors is not None
        codes = [(e.code, e.line) for e in batch.errors.data or []]
        assert codes == [("duplicate_custom_id", 2), ("mismatched_endpoint", 3), ("invalid_method", 4)]
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            await client.batches.create(input_file_id=batch.input_file_id, endpoint="/v1/chat/completions",
                                        completion_window="1h")  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError, match="purpose"):
            await client.files.create(file=("in.jsonl", b"{}\n"), purpose="assistants")
        await client.close()

    asyncio.run(run())


def test_limits_are_enforced(tmp_path: Path) -> None:
    async def run(server: BatchServer) -> None:
        client = _openai(server)
        batch = await _openai_batch(client, [_line(f"r{i}", "q") for i in range(4)])
        assert batch.status == "failed" and "at most 3" in batch.errors.data[0].message  # type: ignore[union-attr]
        with pytest.raises(openai.BadRequestError, match="too large"):
            await client.files.create(file=("in.jsonl", b"x" * 2000), purpose="batch")
        claude = _anthropic(server)
        requests: Any = [{"custom_id": f"r{i}", "params": {"model": "c", "max_tokens": 4,
                                                           "messages": [{"role": "user", "content": "q"}]}}
                         for i in range(4)]
        with pytest.raises(anthropic.BadRequestError, match="at most 3"):
            await claude.messages.batches.create(requests=requests)
        await client.close()
        await claude.close()

    with BatchServer(tmp_path, openai_max_requests=3, openai_max_bytes=1000, anthropic_max_requests=3) as server:
        asyncio.run(run(server))


def test_keys_are_checked(server: BatchServer) -> None:
    async def run() -> None:
        client, claude = _openai(server, "wrong"), _anthropic(server, "wrong")
        with pytest.raises(openai.AuthenticationError):
            await client.batches.list()
        with pytest.raises(anthropic.AuthenticationError):
            await claude.messages.batches.list()
        await client.close()
        await claude.close()

    asyncio.run(run())


def _anthropic_requests(n: int, prefix: str = "r") -> Any:
    return [{"custom_id": f"{prefix}{i}", "params": {"model": "claude-haiku-4-5", "max_tokens": 4,
                                                     "messages": [{"role": "user", "content": f"q{i}"}]}}
            for i in range(n)]


def test_anthropic_sdk_round_trip_with_failures_and_expiry(tmp_path: Path) -> None:
    async def run(server: BatchServer) -> None:
        client = _anthropic(server)
        batch = await client.messages.batches.create(requests=_anthropic_requests(8))
        assert batch.processing_status == "ended"
        counts = batch.request_counts
        assert counts.expired == 4 and counts.succeeded + counts.errored == 4
        types = {r.custom_id: r.result.type async for r in await client.messages.batches.results(batch.id)}
        assert sorted(types) == [f"r{i}" for i in range(8)]
        assert [types[f"r{i}"] for i in range(4, 8)] == ["expired"] * 4
        assert set(types.values()) <= {"succeeded", "errored", "expired"}
        with pytest.raises(anthropic.BadRequestError, match="custom_id"):
            await client.messages.batches.create(requests=[{"custom_id": "bad id!", "params": {
                "model": "c", "max_tokens": 4, "messages": [{"role": "user", "content": "q"}]}}])
        await client.close()

    with BatchServer(tmp_path, fail_first=0.5, expire_batches=(1,)) as server:
        asyncio.run(run(server))


def test_states_follow_the_clock_and_survive_a_restart(tmp_path: Path) -> None:
    """A batch in progress when the server stops is still there, still moving, after a start on the same
    directory; a cancel ends it with the requests it never ran marked canceled."""
    async def create(server: BatchServer) -> tuple[str, str]:
        client = _anthropic(server)
        first = await client.messages.batches.create(requests=_anthropic_requests(4, "a"))
        second = await client.messages.batches.create(requests=_anthropic_requests(4, "b"))
        assert first.processing_status == "in_progress"
        await client.close()
        return first.id, second.id

    async def after(server: BatchServer, ids: tuple[str, str]) -> None:
        client = _anthropic(server)
        assert (await client.messages.batches.retrieve(ids[0])).processing_status == "in_progress"
        cancelled = await client.messages.batches.cancel(ids[1])
        assert cancelled.processing_status == "ended" and cancelled.request_counts.canceled == 2
        await client.close()

    state = tmp_path / "state"
    with BatchServer(state, process_s=3600) as server:
        ids = asyncio.run(create(server))
    with BatchServer(state, process_s=3600) as server:
        asyncio.run(after(server, ids))
    with BatchServer(state) as server:
        assert len(server.submitted) == 8


def test_a_server_without_batch_support_answers_404(tmp_path: Path) -> None:
    async def run(server: BatchServer) -> None:
        client, claude = _openai(server), _anthropic(server)
        with pytest.raises(openai.NotFoundError):
            await client.batches.list()
        with pytest.raises(anthropic.NotFoundError):
            await claude.messages.batches.list()
        await client.close()
        await claude.close()

    with BatchServer(tmp_path, batches=False) as server:
        asyncio.run(run(server))
