"""Batch mode behind the one model wrapper, with the official SDKs against the conformance test server over
loopback: cache first, one submission per unique call, custom_ids that are the call keys, provider limits,
per-request errors, expiry, malformed result lines, refused batches, crash recovery and status/cancel."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.models import batch as batch_runs
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import CallFailure, ChatResult, GenParams
from tailorbench.models.batch_state import state_files
from tailorbench.models.model import Model
from tests.helpers.batch_server import BatchServer

BACKENDS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
PARAMS = GenParams(max_tokens=4)
FAST = {"batch": "true", "batch_poll_s": 0.01, "batch_wait_s": 0.02}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BatchServer]:
    with BatchServer(tmp_path / "server") as srv:
        yield srv


def _spec(backend: str, server: BatchServer) -> str:
    url = f"{server.url}/v1" if backend == "openai" else server.url
    return f"{backend}:{MODELS[backend]}@{url}"


def _model(backend: str, server: BatchServer, run: Path | None, **options: Any) -> Model:
    model = make_chat_model(_spec(backend, server), {**FAST, **options})
    assert isinstance(model, Model)
    if run is not None:
        model.bind_run_dir(run)
    return model


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Pick A or B."}, {"role": "user", "content": f"question {i} 问题"}]


async def _ask(model: Model, ids: list[int]) -> list[ChatResult | CallFailure]:
    return list(await asyncio.gather(*(model.chat(_messages(i), PARAMS) for i in ids)))


def _texts(outcomes: list[ChatResult | CallFailure]) -> list[str]:
    return [o.text if isinstance(o, ChatResult) else f"failed: {o.error}" for o in outcomes]


@pytest.mark.parametrize("backend", BACKENDS)
def test_cache_first_identical_once_custom_ids_are_call_keys(backend: str, server: BatchServer,
                                                             tmp_path: Path) -> None:
    async def run() -> None:
        sync = make_chat_model(_spec(backend, server))
        warm = await _ask(sync, [0, 1, 2])  # cached by a synchronous run: never sent in a batch
        await sync.aclose()
        model = _model(backend, server, tmp_path / "run")
        await model.preflight()
        ids = [0, 1, 2, *range(3, 12), 3, 4, 5, 6]  # four identical requests in flight
        outcomes = await _ask(model, ids)
        assert all(isinstance(o, ChatResult) for o in outcomes)
        assert _texts(outcomes)[:3] == _texts(warm)
        keys = sorted(model._key(_messages(i), PARAMS) for i in range(3, 12))
        assert sorted(server.submitted) == keys  # unique uncached calls, each once, custom_id = call key
        assert model.stats.cache_hits == 3 and model.deduplicated == 4 and model.stats.requests == 9
        described = model.describe()["batch"]
        assert described["requests"]["submitted"] == 9 and described["batches"]["ended"] == 1
        await model.aclose()
        again = _model(backend, server, tmp_path / "run2")
        assert _texts(await _ask(again, ids)) == _texts(outcomes)  # all from the cache: nothing sent
        assert len(server.submitted) == 9 and again.stats.cache_hits == len(ids)
        await again.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_answers_equal_sync_answers_at_half_the_cost(backend: str, server: BatchServer,
                                                           tmp_path: Path) -> None:
    async def run() -> None:
        ids = list(range(20))
        sync = make_chat_model(_spec(backend, server), {"cache_policy": "off"})
        expected = await _ask(sync, ids)
        await sync.aclose()
        model = _model(backend, server, tmp_path / "run", cache_policy="off")
        outcomes = await _ask(model, ids)
        assert _texts(outcomes) == _texts(expected)
        sync_cost = sum(o.cost_usd or 0 for o in expected if isinstance(o, ChatResult))
        batch_cost = sum(o.cost_usd or 0 for o in outcomes if isinstance(o, ChatResult))
        assert sync_cost > 0 and batch_cost == pytest.approx(sync_cost / 2)
        described = model.describe()["batch"]
        assert described["cost_usd"] == pytest.approx(batch_cost)
        assert described["sync_cost_usd"] == pytest.approx(sync_cost)
        await model.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("backend", BACKENDS)
def test_requests_are_split_to_the_limits(backend: str, server: BatchServer, tmp_path: Path) -> None:
    async def run() -> None:
        model = _model(backend, server, tmp_path / "run", batch_max_requests=4)
        assert all(isinstance(o, ChatResult) for o in await _ask(model, list(range(10))))
        sizes = [len(b["requests"]) for b in server.batch_objects()]
        assert sizes == [4, 4, 2]
        await model.aclose()
        line = len(model.batcher.provider.line("k" * 64, _messages(100), PARAMS))
        small = _model(backend, server, tmp_path / "run2", batch_max_bytes=2 * line + 2)
        outcomes = await _ask(small, list(range(100, 105)))
        assert all(isinstance(o, ChatResult) for o in outcomes)
        assert [len(b["requests"]) for b in server.batch_objects()][3:] == [2, 2, 1]
        await small.aclose()
        tiny = _model(backend, server, tmp_path / "run3", batch_max_bytes=50)
        (alone,) = await _ask(tiny, [200])
        assert isinstance(alone, CallFailure) and "bytes, over the" in alone.error and "not sent" in alone.error
        assert tiny.stats.failures == 1 and len(server.batch_objects()) == 6
        await tiny.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_expiry_and_refusals_are_counted(backend: str, tmp_path: Path) -> None:
    """Retryable per-request errors and the requests an expired batch never ran go into a new batch, once;
    a request the provider refuses is a failed call like a synchronous 400, and never resent."""
    async def run(server: BatchServer) -> None:
        model = _model(backend, server, tmp_path / "run")
        ids = list(range(40))
        outcomes = await _ask(model, ids)
        failed = [o for o in outcomes if isinstance(o, CallFailure)]
        assert failed and all(o.kind == "client" for o in failed)
        assert all(("400" in o.error) or ("invalid_request_error" in o.error) for o in failed)
        first = server.batch_objects()[0]
        expired = len(first["requests"]) - len(first["requests"]) // 2
        errors = sum(r["outcome"] == "error" for b in server.batch_objects() for r in b["results"])
        assert errors > 0 and len(server.submitted) == len(ids) + expired + errors  # nothing else resent
        assert max(server.duplicates().values()) <= 3  # expired once, then a retryable error once
        assert model.stats.retries == errors and model.stats.failures == len(failed)
        assert model.describe()["batch"]["requests"]["resubmitted"] == expired + errors
        refused = {r["custom_id"] for b in server.batch_objects() for r in b["results"] if r["outcome"] == "refused"}
        assert len(refused) == len(failed)
        again = await _ask(model, [i for i, o in zip(ids, outcomes) if isinstance(o, CallFailure)])
        assert all(isinstance(o, CallFailure) for o in again)  # failures are not cached; sent again, refused again
        await model.aclose()

    with BatchServer(tmp_path / "server", fail_first=0.2, refuse_share=0.2, expire_batches=(1,)) as server:
        asyncio.run(run(server))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_malformed_result_line_is_named_in_the_failure(backend: str, tmp_path: Path) -> None:
    async def run(server: BatchServer) -> None:
        model = _model(backend, server, tmp_path / "run")
        outcomes = await _ask(model, list(range(6)))
        failed = [o for o in outcomes if isinstance(o, CallFailure)]
        assert len(failed) == 1 and failed[0].kind == "bad_response" and " line " in failed[0].error
        assert model.describe()["batch"]["malformed_lines"] == 1
        entry = json.loads(state_files(tmp_path / "run")[0].read_text())["entries"][0]
        assert entry["status"] == "ended" and "line" in entry["malformed"][0]
        await model.aclose()

    with BatchServer(tmp_path / "server", corrupt_batches=(1,)) as server:
        asyncio.run(run(server))


def test_a_batch_over_the_servers_limit_is_refused_clearly(tmp_path: Path) -> None:
    """OpenAI validates the file after the upload (the batch fails with the server's reasons, every call of it
    a failed call); Anthropic refuses the create request (ConfigError naming the options: exit 2)."""
    async def run(server: BatchServer) -> None:
        model = _model("openai", server, tmp_path / "a")
        outcomes = await _ask(model, list(range(5)))
        assert all(isinstance(o, CallFailure) and "was refused" in o.error and "at most 3" in o.error
                   for o in outcomes)
        await model.aclose()
        claude = _model("anthropic", server, tmp_path / "b")
        with pytest.raises(ConfigError, match="batch_max_requests"):
            await _ask(claude, list(range(5)))
        await claude.aclose()

    with BatchServer(tmp_path / "server", openai_max_requests=3, anthropic_max_requests=3) as server:
        asyncio.run(run(server))


@pytest.mark.parametrize("backend", BACKENDS)
def test_preflight_refuses_missing_batch_api_wrong_key_and_no_run_dir(backend: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused(model: Model, error: type[Exception], match: str) -> None:
        try:
            with pytest.raises(error, match=match):
                await model.preflight()
        finally:
            await model.aclose()

    with BatchServer(tmp_path / "server", batches=False) as server:
        asyncio.run(refused(_model(backend, server, None), ConfigError, "needs a run directory"))
        asyncio.run(refused(_model(backend, server, tmp_path / "run"), ConfigError, "has no batch API"))
    with BatchServer(tmp_path / "server2") as server:
        monkeypatch.setenv("OPENAI_API_KEY" if backend == "openai" else "ANTHROPIC_API_KEY", "wrong")
        asyncio.run(refused(_model(backend, server, tmp_path / "run"), CredentialsError, "API_KEY"))
    with pytest.raises(ConfigError, match="batch do not apply to the hf backend"):  # a local model: no batches
        make_chat_model("hf:/nonexistent", {"batch": "true"})


def _wait_for_submitted(run: Path, batches: int) -> None:
    """Until the state file records `batches` submitted batch ids (what a crash must find)."""
    for _ in range(2000):
        files = state_files(run) if run.exists() else []
        if files:
            entries = json.loads(files[0].read_text())["entries"]
            if sum(1 for e in entries if e.get("batch_id")) >= batches:
                return
        time.sleep(0.01)
    raise AssertionError("the batches were never recorded")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_new_process_reattaches_to_batches_in_flight_after_a_server_restart(backend: str, tmp_path: Path) -> None:
    """A model whose batches are still running goes away without waiting (its process died); the server
    stops and starts again on its state; a new model on the same run directory sends nothing and gets every
    answer from the batches recorded before."""
    ids = list(range(12))
    state = tmp_path / "server"
    run = tmp_path / "run"

    async def first(server: BatchServer) -> None:
        model = _model(backend, server, run, batch_max_requests=5)
        pending = asyncio.ensure_future(_ask(model, ids))
        await asyncio.to_thread(_wait_for_submitted, run, 3)
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
        await model.aclose()

    async def second(server: BatchServer) -> list[ChatResult | CallFailure]:
        model = _model(backend, server, run)
        outcomes = await _ask(model, ids)
        assert model.describe()["batch"]["batches"]["attached"] == 3
        assert model.describe()["batch"]["requests"]["submitted"] == 0
        await model.aclose()
        return outcomes

    with BatchServer(state, process_s=3600) as server:
        asyncio.run(first(server))
        port = int(server.url.rsplit(":", 1)[1])
    with BatchServer(state, port=port) as server:  # restarted on its state; its batches now end by the clock
        outcomes = asyncio.run(second(server))
        assert len(server.submitted) == len(ids) and server.duplicates() == {}
    assert all(isinstance(o, ChatResult) for o in outcomes)
    entries = json.loads(state_files(run)[0].read_text())["entries"]
    assert [e["status"] for e in entries] == ["ended"] * 3


class _Crash(BaseException):
    """What a kill leaves: nothing after the point it is raised runs."""


def test_an_upload_whose_batch_id_was_never_recorded_is_recovered(server: BatchServer, tmp_path: Path) -> None:
    """A crash between the upload (file id recorded) and the state write of the batch id: the resume finds
    the batch by its metadata, or creates it from the uploaded file when the crash came before the creation;
    either way every request is submitted once."""
    run = tmp_path / "run"

    async def crash_after(stage: str) -> None:
        model = _model("openai", server, run)
        provider = model.batcher.provider
        real = provider._create

        async def create_then_die(chunk: str, file_id: str) -> str:
            if stage == "created":
                await real(chunk, file_id)
            raise _Crash  # the process dies here: nothing after this is recorded

        provider._create = create_then_die  # type: ignore[method-assign]
        with pytest.raises(_Crash):
            await _ask(model, [0, 1, 2] if stage == "created" else [3, 4])
        await model.aclose()

    async def resume(ids: list[int]) -> None:
        model = _model("openai", server, run)
        outcomes = await _ask(model, ids)
        assert all(isinstance(o, ChatResult) for o in outcomes)
        assert model.describe()["batch"]["batches"]["recovered"] == 1
        await model.aclose()

    asyncio.run(crash_after("created"))
    asyncio.run(resume([0, 1, 2]))
    asyncio.run(crash_after("uploaded"))
    asyncio.run(resume([3, 4]))
    assert len(server.submitted) == 5 and server.duplicates() == {}


@pytest.mark.parametrize("backend", BACKENDS)
def test_status_and_cancel_of_a_run_left_waiting(backend: str, tmp_path: Path) -> None:
    run = tmp_path / "run"

    async def run_it(server: BatchServer) -> None:
        model = _model(backend, server, run)
        pending = asyncio.ensure_future(_ask(model, list(range(4))))
        await asyncio.to_thread(_wait_for_submitted, run, 1)
        rows = await batch_runs.status_async(run)
        assert len(rows) == 1 and rows[0]["requests"] == 4 and rows[0]["status"] == "submitted"
        assert rows[0]["live_status"] == "in_progress"
        cancelled = await batch_runs.cancel_async(run)
        assert [r["batch_id"] for r in cancelled] == [rows[0]["batch_id"]]
        pending.cancel()
        await asyncio.gather(pending, return_exceptions=True)
        await model.aclose()
        after = await batch_runs.status_async(run)
        # the run's own poll may see the cancel first (between cancel_async and pending.cancel, under load) and
        # record the batch as ended, which is then not polled again; otherwise the provider says so now
        assert after[0]["status"] == "ended" or after[0].get("live_status") in ("cancelled", "ended"), after

    with BatchServer(tmp_path / "server", process_s=3600) as server:
        asyncio.run(run_it(server))
    with pytest.raises(ConfigError, match="no such run directory"):
        batch_runs.status(tmp_path / "missing")


def test_the_sdk_sees_our_batch_lines_as_its_own_requests(server: BatchServer, tmp_path: Path) -> None:
    """Each line's body is exactly the synchronous request the backend sends (the conformance test of the
    synchronous path covers that request)."""
    async def run() -> None:
        model = _model("openai", server, tmp_path / "run")
        await _ask(model, [0])
        await model.aclose()
        client = openai.AsyncOpenAI(api_key="test-key", base_url=f"{server.url}/v1", max_retries=0)
        batch = (await client.batches.list()).data[0]
        content = await client.files.content(batch.input_file_id)
        (line,) = [json.loads(x) for x in content.content.splitlines()]
        assert line["body"] == model.api.request_body(_messages(0), PARAMS)
        assert line["custom_id"] == model._key(_messages(0), PARAMS)
        assert batch.metadata and "tailorbench_chunk" in batch.metadata
        await client.close()

    asyncio.run(run())


def test_an_anthropic_batch_whose_id_was_never_recorded_is_found_by_its_count(server: BatchServer,
                                                                              tmp_path: Path) -> None:
    """Message Batches carry no metadata: the batch created just after the record, with exactly its request
    count, is taken as the lost one (and only when there is exactly one such batch)."""
    run = tmp_path / "run"

    async def crash() -> None:
        model = _model("anthropic", server, run)
        provider = model.batcher.provider
        real = provider.submit

        async def submit_then_die(chunk: str, lines: Any, note: Any) -> str:
            await real(chunk, lines, note)
            raise _Crash

        provider.submit = submit_then_die  # type: ignore[method-assign]
        with pytest.raises(_Crash):
            await _ask(model, [0, 1, 2])
        await model.aclose()

    async def resume() -> None:
        model = _model("anthropic", server, run)
        assert all(isinstance(o, ChatResult) for o in await _ask(model, [0, 1, 2]))
        assert model.describe()["batch"]["batches"]["recovered"] == 1
        await model.aclose()

    asyncio.run(crash())
    asyncio.run(resume())
    assert len(server.submitted) == 3 and server.duplicates() == {}
