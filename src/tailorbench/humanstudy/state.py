"""Where a study stands: STUDY_DIR/state.json, written atomically after each step's outputs are in place.

A step's record holds its fingerprint (a hash of its config slice, its input files' hashes and the fingerprints
of the steps it reads from), so a changed config or input changes exactly the fingerprints downstream of it.
A step's outputs live in STUDY_DIR/steps/ID/, moved there in one rename from a temporary folder, with a
`step.json` marker carrying the fingerprint: a process killed after the rename but before state.json was written
leaves a finished step that the next run adopts instead of repeating.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tailorbench.files import load_json, write_json_atomic

STATE_FILE = "state.json"
STEPS_DIR = "steps"
MARKER = "step.json"
VERSION = 1


def file_hash(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(config_slice: Any, inputs: Sequence[str | Path], upstream: Sequence[str]) -> str:
    """The hash a step is known by: its config slice, its input files' contents and its upstream steps'
    fingerprints (so a change anywhere above reaches it)."""
    payload = {"config": config_slice, "inputs": [file_hash(p) if Path(p).is_file() else None for p in inputs],
               "upstream": list(upstream), "version": VERSION}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class StudyState:
    """state.json of one study directory: {"steps": {id: {fingerprint, status, finished_at, info}}}."""

    def __init__(self, study_dir: str | Path, readonly: bool = False) -> None:
        self.dir = Path(study_dir)
        #: `plan` and `status` read the state and write nothing
        self.readonly = readonly
        self.path = self.dir / STATE_FILE
        data = load_json(self.path, dict, "a study state file") if self.path.is_file() else {}
        self.steps: dict[str, dict[str, Any]] = dict(data.get("steps") or {})

    def step_dir(self, step_id: str) -> Path:
        return self.dir / STEPS_DIR / step_id

    def done(self, step_id: str, fp: str) -> bool:
        """Whether the step finished with this fingerprint and its folder is still there (a marker left by a
        run killed before it wrote state.json counts: it is adopted)."""
        rec = self.steps.get(step_id)
        if rec is not None and rec.get("fingerprint") == fp and rec.get("status") == "done":
            return (self.step_dir(step_id) / MARKER).is_file()
        marker = self.step_dir(step_id) / MARKER
        if marker.is_file():
            info = load_json(marker, dict, "a study step marker")
            if info.get("fingerprint") == fp:
                self.record(step_id, fp, info.get("info") or {})
                return True
        return False

    def info(self, step_id: str) -> dict[str, Any]:
        return dict((self.steps.get(step_id) or {}).get("info") or {})

    def record(self, step_id: str, fp: str, info: Mapping[str, Any]) -> None:
        self.steps[step_id] = {"fingerprint": fp, "status": "done", "info": dict(info),
                               "finished_at": datetime.now(timezone.utc).isoformat()}
        self.save()

    def save(self) -> None:
        if self.readonly:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, {"version": VERSION, "steps": self.steps})

    def scratch(self, step_id: str) -> Path:
        """An empty temporary folder for a step's outputs (beside its final place, so the rename is atomic)."""
        tmp = self.dir / STEPS_DIR / f".tmp-{step_id}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        return tmp

    def commit(self, step_id: str, tmp: Path, fp: str, info: Mapping[str, Any]) -> None:
        """The step's outputs into place in one rename (an older, stale folder moved aside first), then the
        state. From the rename on the step counts as done."""
        write_json_atomic(tmp / MARKER, {"step": step_id, "fingerprint": fp, "info": dict(info)})
        final = self.step_dir(step_id)
        if final.exists():
            old = final.with_name(f".old-{step_id}-{os.getpid()}")
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(final)
        self.record(step_id, fp, info)
