"""The provider batches of a run directory, for `tailor batch status RUN` and `tailor batch cancel RUN`.

Why: a run killed (or left) while its batches run can be looked at and stopped without resuming it. Each
state file (models/batch_state.py) names its model spec and the backend options without secrets, so the
backend is built again here (the key read from its variable, as a resume would) and asked through its SDK.

    status(run_dir) -> list of one dict per recorded batch (recorded fields + the provider's live status)
    cancel(run_dir) -> the batches a cancel was sent for
    supports_batches(spec) -> whether a model spec's backend has a batch API (what `--batch` applies to)

Coroutines: `status_async`, `cancel_async` (`status` and `cancel` run them, inside a running loop too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.aio import run_sync
from tailorbench.models.backends import make_chat_model, parse_model_spec
from tailorbench.models.batch_lines import BATCH_APIS
from tailorbench.models.batch_state import ENDED, FAILED, read_state, state_files
from tailorbench.models.model import CallError


def supports_batches(spec: str) -> bool:
    """Whether the model `spec` (`openai:MODEL@URL`, `anthropic:MODEL`, `hf:PATH` ...) can run in batch mode."""
    return parse_model_spec(spec).backend in BATCH_APIS


def status(run_dir: str | Path, live: bool = True) -> list[dict[str, Any]]:
    """Every recorded batch of the run: model, batch id, requests, recorded status and, with `live`, the
    provider's status and request counts now (batches not ended only)."""
    return run_sync(status_async(run_dir, live))


def cancel(run_dir: str | Path) -> list[dict[str, Any]]:
    """Ask the provider to cancel every recorded batch of the run that has not ended; returns those batches
    (`cancel_error` where the provider could not be asked). A refused key is a CredentialsError. A later
    `--resume` sends the requests they did not answer again."""
    return run_sync(cancel_async(run_dir))


async def status_async(run_dir: str | Path, live: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in state_files(run_dir):
        data = read_state(path)
        provider = _provider(data) if live else None
        try:
            for entry in data["entries"]:
                row = _row(data, entry)
                if provider is not None and entry.get("batch_id") and entry["status"] not in (ENDED, FAILED):
                    try:
                        poll = await provider.poll(entry["batch_id"])
                        row.update(live_status=poll.status, live_counts=poll.counts)
                    except CallError as exc:
                        row["live_error"] = exc.message
                rows.append(row)
        finally:
            if provider is not None:
                await provider.aclose()
    return rows


async def cancel_async(run_dir: str | Path) -> list[dict[str, Any]]:
    cancelled: list[dict[str, Any]] = []
    for path in state_files(run_dir):
        data = read_state(path)
        provider = _provider(data)
        try:
            for entry in data["entries"]:
                if entry.get("batch_id") and entry["status"] not in (ENDED, FAILED):
                    row = _row(data, entry)
                    try:
                        await provider.cancel(entry["batch_id"])
                    except CallError as exc:  # the others are still cancelled; the caller reports this one
                        row["cancel_error"] = exc.message
                    cancelled.append(row)
        finally:
            await provider.aclose()
    return cancelled


def _row(data: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    return {"model": data["spec"], "provider": data["provider"], "batch_id": entry.get("batch_id"),
            "status": entry["status"], "requests": len(entry["custom_ids"]),
            "provider_status": entry.get("provider_status"), "counts": entry.get("counts"),
            "created": entry.get("created"), "ended": entry.get("ended"), "error": entry.get("error"),
            "cost_usd": entry.get("cost_usd"), "sync_cost_usd": entry.get("sync_cost_usd")}


def _provider(data: dict[str, Any]) -> Any:
    """The batch API of the state file's model, built as a resume would build it (key from its variable)."""
    model: Any = make_chat_model(data["spec"], dict(data.get("options") or {}))
    return BATCH_APIS.get(model.backend)(model.api)
