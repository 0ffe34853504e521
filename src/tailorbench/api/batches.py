"""`tailor batch status|cancel RUN`: the provider batches of a run left waiting (batch mode, docs/models.md).

Why verbs of their own: a batch outlives the process that submitted it (up to 24 h), so a run that was
interrupted or killed can be looked at, and its batches stopped, without resuming it. The batches are read from
the run's state files (`RUN/batches/`) and the provider is asked through its SDK with the key a resume would use.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from tailorbench.api.results import BatchesCancelled, BatchStatus
from tailorbench.errors import ConfigError
from tailorbench.redact import redact_obj

__all__ = ["batch_cancel", "batch_status"]


def batch_status(run_dir: str | Path, live: bool = True) -> BatchStatus:
    """`tailor batch status RUN`: every recorded batch of the run (model, batch id, requests, recorded status,
    cost once ended) and, with `live`, the provider's status and request counts now for those not ended."""
    from tailorbench.models.batch import status

    run = _run_with_batches(run_dir)
    return BatchStatus.model_validate(_summary(run, redact_obj(status(run, live=live))))


def batch_cancel(run_dir: str | Path) -> BatchesCancelled:
    """`tailor batch cancel RUN`: ask the provider to cancel every recorded batch of the run that has not
    ended; `failed` counts those the provider could not be asked about (each row's `cancel_error`). A later
    `--resume` sends again what the cancelled batches did not answer."""
    from tailorbench.models.batch import cancel

    run = _run_with_batches(run_dir)
    rows = redact_obj(cancel(run))
    return BatchesCancelled.model_validate({
        "run_dir": str(run), "cancelled": rows, "failed": sum(1 for r in rows if r.get("cancel_error")),
        "resume_command": _resume_command(run)})


def _run_with_batches(run_dir: str | Path) -> Path:
    """The run directory, which must hold batch state files (else a ConfigError saying why)."""
    from tailorbench.models.batch_state import STATE_DIR, state_files

    run = Path(run_dir)
    if not state_files(run):  # (a missing directory is its own ConfigError)
        raise ConfigError(f"{run}: no provider batches are recorded ({run / STATE_DIR} holds no state file): the "
                          "run did not use batch mode (--batch), or is not a run directory")
    return run


def _summary(run: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_status: dict[str, int] = {}
    for row in rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    sync = [r["sync_cost_usd"] for r in rows if r.get("sync_cost_usd") is not None]
    return {"run_dir": str(run), "batches": rows, "by_status": by_status,
            "requests": sum(int(r["requests"]) for r in rows),
            "open": sum(1 for r in rows if r["status"] in ("submitting", "submitted")),
            "cost_usd": sum(costs) if costs else None, "sync_cost_usd": sum(sync) if sync else None,
            "resume_command": _resume_command(run)}


def _resume_command(run: Path) -> str:
    """The command that continues the run (its kind from manifest.json: gen-eval or eval)."""
    from tailorbench.errors import DataError
    from tailorbench.files import load_json

    try:
        kind = load_json(run / "manifest.json", dict, "a run manifest (a JSON object)").get("kind")
    except DataError:
        kind = None
    verb = "gen-eval" if kind == "gen-eval" else "eval"
    return f"tailor {verb} --resume {shlex.quote(str(run))}"
