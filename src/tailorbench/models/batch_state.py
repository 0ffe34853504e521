"""The batch state file of a run: which requests went into which provider batch, on disk before any wait.

Why: a batch outlives the process that submitted it (up to 24 h). The file is written atomically
(`files.write_json_atomic`) before each step that a crash could lose (the intent with its custom_ids before
anything is sent, the uploaded file's id before the batch is created, the batch id before any polling), so
`--resume` re-attaches to what is in flight instead of paying for it twice, and `tailor batch status|cancel
RUN` (models/batch.py) can find the batches of a run left waiting. One file per model in
`RUN_DIR/batches/`, named by a hash of the model's spec (a gen-eval generator and its judge never share one).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tailorbench.errors import ConfigError, DataError
from tailorbench.files import load_json, write_json_atomic

STATE_DIR = "batches"
VERSION = 1
#: entry statuses: written before sending / sent and waiting / every answer taken / refused as a whole
SUBMITTING, SUBMITTED, ENDED, FAILED = "submitting", "submitted", "ended", "failed"


def state_path(run_dir: str | Path, spec: str) -> Path:
    digest = hashlib.sha256(spec.encode()).hexdigest()[:16]
    return Path(run_dir) / STATE_DIR / f"{digest}.json"


class BatchState:
    """The entries (one per provider batch) of one model in one run directory."""

    def __init__(self, path: Path, spec: str, provider: str, options: dict[str, Any]) -> None:
        self.path = path
        self.spec = spec
        self.provider = provider
        self.options = options
        self.entries: list[dict[str, Any]] = []

    @classmethod
    def open(cls, path: Path, spec: str, provider: str, options: dict[str, Any]) -> BatchState:
        state = cls(path, spec, provider, options)
        if path.exists():
            data = read_state(path)
            if data.get("spec") != spec:
                raise ConfigError(f"{path} holds the batches of {data.get('spec')!r}, not of {spec!r}")
            state.entries = list(data.get("entries") or [])
        return state

    def add(self, chunk: str, custom_ids: list[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"chunk": chunk, "status": SUBMITTING, "created": time.time(),
                                 "custom_ids": custom_ids, "batch_id": None}
        self.entries.append(entry)
        self.save()
        return entry

    def save(self) -> None:
        write_json_atomic(self.path, {"version": VERSION, "spec": self.spec, "provider": self.provider,
                                      "options": self.options, "entries": self.entries})


def read_state(path: Path) -> dict[str, Any]:
    """One state file; a damaged one is a ConfigError naming it (never silently started afresh)."""
    try:
        data = load_json(path, None, "a batch state file (a JSON object)")
    except DataError as exc:
        raise ConfigError(f"{path}: cannot read the batch state ({exc}); its batches may still be running: "
                          "look them up on the provider's console") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ConfigError(f"{path}: not a tailorbench batch state file (version {VERSION})")
    try:
        StateFile.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ConfigError(f"{path}: damaged batch state ({where}: {problem['msg']}); its batches may still be "
                          "running: look them up on the provider's console") from None
    return data


class StateEntry(BaseModel):
    """One provider batch as the state file records it (typed strictly: a hand edit is named, never misread)."""

    model_config = ConfigDict(extra="allow", strict=True)

    chunk: str
    status: Literal["submitting", "submitted", "ended", "failed"]
    custom_ids: list[str]
    batch_id: str | None = None
    created: float | int | None = None


class StateFile(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    version: int
    spec: str
    provider: str | None  # keys every state file is written with (`save`): a hand edit that drops one is named
    options: dict[str, Any] = {}
    entries: list[StateEntry]


def state_files(run_dir: str | Path) -> list[Path]:
    """The state files of a run directory (one per batch-mode model)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ConfigError(f"{run}: no such run directory")
    return sorted((run / STATE_DIR).glob("*.json"))


def run_costs(run_dir: str | Path) -> dict[str, Any] | None:
    """What the provider batches of a run cost, from its state files (every batch whose answers were taken, by
    whichever process): batch price, the synchronous price of the same answers, batches and requests. None for a
    run without batch mode."""
    run = Path(run_dir)
    files = sorted((run / STATE_DIR).glob("*.json")) if (run / STATE_DIR).is_dir() else []
    if not files:
        return None
    out: dict[str, Any] = {"batches": 0, "requests": 0, "cost_usd": None, "sync_cost_usd": None}
    for path in files:
        for entry in read_state(path).get("entries") or []:
            if entry.get("status") != ENDED:
                continue
            out["batches"] += 1
            out["requests"] += len(entry.get("custom_ids") or [])
            for key in ("cost_usd", "sync_cost_usd"):
                if entry.get(key) is not None:
                    out[key] = (out[key] or 0.0) + float(entry[key])
    return out
