"""Where a study stands: STUDY_DIR/state.json, written atomically after each step's outputs are in place.

A step's record holds its fingerprint (a hash of its config slice, its input files' hashes and the fingerprints
of the steps it reads from), so a changed config or input changes exactly the fingerprints downstream of it.
A step's outputs are made in a fresh folder the files module's door stages (`Output.staged`) and become
STUDY_DIR/steps/ID/ in one rename, with a `step.json` marker carrying the fingerprint: a process killed after the
rename but before state.json was written leaves a finished step that the next run adopts instead of repeating.

Step outputs are fingerprinted too: when a step finishes, the digest of each file it wrote is recorded (in
step.json and state.json), and so is the digest of each upstream step's outputs it read (`uses`). A file of a
finished step changed or removed by hand is an error naming it (exit 2: the study would otherwise go on with
outputs no step made); a step whose upstream outputs were made again with another content is stale and redone.

state.json and step.json are user-visible files a user can edit: each is checked field by field when read, and
a wrong shape is a DataError naming the file and the field (exit 2), never a traceback.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError, DataError
from tailorbench.files import MARKER as OURS
from tailorbench.files import Output, claim_output, load_json, remove_tree, type_name, write_json_atomic
from tailorbench.humanstudy.config import CONFIG_FILE

STATE_FILE = "state.json"
#: the lock one `tailor study run` at a time holds (humanstudy.run.study_lock)
LOCK_FILE = "run.lock"
STEPS_DIR = "steps"
MARKER = "step.json"
VERSION = 1
#: what `tailor study` writes as the maker of its folders (files.MARKER)
MADE_BY = "tailor study"


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


def output_hashes(folder: Path) -> dict[str, str]:
    """Each file a step wrote in `folder` (relative POSIX path -> sha256), its marker files aside."""
    return {p.relative_to(folder).as_posix(): file_hash(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in (MARKER, OURS)}


def digest(outputs: Mapping[str, str]) -> str:
    """One hash of a step's outputs (what a downstream step records it read)."""
    return hashlib.sha256(json.dumps(dict(outputs), sort_keys=True).encode()).hexdigest()


# --- reading state.json and step.json, field by field ----------------------------------------------------------

def _want(value: Any, expect: type, path: Path, where: str, what: str) -> Any:
    """`value` when it is an `expect` (a bool is no integer), else a DataError naming the file and field."""
    if not isinstance(value, expect) or (expect is int and isinstance(value, bool)):
        raise DataError(path, None, where, f"must be {what}, not {type_name(value)}{_HINT}")
    return value


#: what a user can do about a state file of the wrong shape
_HINT = (" (the study's own state: restore it, or remove state.json and `tailor study run` adopts the finished "
         "steps from their folders)")


def _hashes(value: Any, path: Path, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    _want(value, dict, path, where, "an object of file -> sha256")
    for name, h in value.items():
        _want(h, str, path, f"{where}.{name}", "a sha256 (text)")
    return dict(value)


def _record(step_id: str, rec: Any, path: Path) -> dict[str, Any]:
    """One step's record checked: the fields `run`, `plan` and `status` read, of the types they read."""
    where = f"steps.{step_id}"
    _want(rec, dict, path, where, "an object")
    _want(rec.get("fingerprint"), str, path, f"{where}.fingerprint", "text")
    _want(rec.get("status"), str, path, f"{where}.status", "text")
    info = _want(rec.get("info", {}), dict, path, f"{where}.info", "an object")
    if step_id.endswith(".annotate") and rec.get("status") == "done":
        _want(info.get("project"), str, path, f"{where}.info.project", "text (the stage's annotation project)")
        if "study" in info:
            _want(info["study"], int, path, f"{where}.info.study", "an integer (the crowd study's id)")
        if info.get("link") is not None:
            _want(info["link"], str, path, f"{where}.info.link", "text")
    out = dict(rec)
    out["outputs"] = _hashes(rec.get("outputs"), path, f"{where}.outputs")
    uses = _want(rec.get("uses", {}), dict, path, f"{where}.uses", "an object of step -> digest")
    for dep, d in uses.items():
        if d is not None:
            _want(d, str, path, f"{where}.uses.{dep}", "a digest (text) or null")
    out["uses"] = dict(uses)
    return out


def read_state(path: Path) -> dict[str, dict[str, Any]]:
    """state.json's step records, checked (an absent file: none)."""
    if not path.exists():
        return {}
    if path.is_dir():
        raise DataError(path, None, None, f"is a directory, expected the study's state file{_HINT}")
    data = load_json(path, dict, "a study state file")
    version = data.get("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version > VERSION:
        raise DataError(path, None, "version", f"must be an integer up to {VERSION}, not {version!r}{_HINT}")
    steps = _want(data.get("steps", {}), dict, path, "steps", "an object of step id -> record")
    return {str(k): _record(str(k), v, path) for k, v in steps.items()}


def read_marker(path: Path, step_id: str) -> dict[str, Any]:
    """A step folder's step.json, checked."""
    data = load_json(path, dict, "a study step marker")
    _want(data.get("fingerprint"), str, path, "fingerprint", "text")
    info = _want(data.get("info", {}), dict, path, "info", "an object")
    rec = _record(step_id, {"fingerprint": data["fingerprint"], "status": "done", "info": info,
                            "outputs": data.get("outputs"), "uses": data.get("uses", {})}, path)
    return rec


# --- the state ---------------------------------------------------------------------------------------------------

def _relocated(value: Any, old: str, new: str) -> Any:
    """`value` with every text naming a path under the staging folder `old` naming the step's final folder
    instead (state.json never records a scratch path that is gone once the step is in place)."""
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + "/") else value
    if isinstance(value, dict):
        return {k: _relocated(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_relocated(v, old, new) for v in value]
    return value


@dataclass
class Making:
    """A step being made (`StudyState.making`): `out` is its fresh folder (write through it); set `info` to what
    the step returns, and leaving the block puts the folder in place and records the step."""

    step_id: str
    out: Output
    info: dict[str, Any] | None = None
    uses: dict[str, str | None] = field(default_factory=dict)


class StudyState:
    """state.json of one study directory: {"steps": {id: {fingerprint, status, finished_at, info, outputs,
    uses}}}."""

    def __init__(self, study_dir: str | Path, readonly: bool = False) -> None:
        self.dir = Path(study_dir)
        #: `plan` and `status` read the state and write nothing
        self.readonly = readonly
        self.path = self.dir / STATE_FILE
        self.steps: dict[str, dict[str, Any]] = read_state(self.path)

    def step_dir(self, step_id: str) -> Path:
        return self.dir / STEPS_DIR / step_id

    def outputs_digest(self, step_id: str) -> str | None:
        """The digest of a finished step's outputs as recorded (None: not recorded)."""
        outputs = (self.steps.get(step_id) or {}).get("outputs")
        return digest(outputs) if outputs is not None else None

    def uses(self, deps: Sequence[str]) -> dict[str, str | None]:
        """What a step about to run reads: each upstream step's outputs digest."""
        return {d: self.outputs_digest(d) for d in deps}

    def _check_outputs(self, step_id: str, outputs: Mapping[str, str] | None) -> None:
        """The step's folder still holds what the step wrote: a file changed or removed by hand is exit 2
        naming it (a file added beside them is not read by any step and is left alone)."""
        if outputs is None:
            return
        folder = self.step_dir(step_id)
        for name, h in sorted(outputs.items()):
            target = folder / name
            if not target.is_file():
                why = "was removed"
            elif file_hash(target) != h:
                why = "was changed"
            else:
                continue
            raise ConfigError(f"{target}: {why} after step {step_id} finished (state.json holds the digest of "
                              f"every file the step wrote): put it back, or remove the folder {folder} and "
                              f"`tailor study run` makes the step again and redoes the steps after it whose "
                              f"input it changes")

    @staticmethod
    def _uses_ok(rec: Mapping[str, Any], uses: Mapping[str, str | None]) -> bool:
        """Whether the upstream outputs this step read are still those (unknown on either side: yes)."""
        had = rec.get("uses") or {}
        return all(had.get(d) is None or now is None or had[d] == now for d, now in uses.items())

    def done(self, step_id: str, fp: str, uses: Mapping[str, str | None] | None = None) -> bool:
        """Whether the step finished with this fingerprint, on the upstream outputs it would read now (`uses`),
        and its folder is still there (a marker left by a run killed before it wrote state.json counts: it is
        adopted). A finished step's output edited by hand is a ConfigError naming the file."""
        uses = uses or {}
        marker = self.step_dir(step_id) / MARKER
        rec = self.steps.get(step_id)
        if rec is not None and rec.get("fingerprint") == fp and rec.get("status") == "done":
            if not marker.is_file():
                return False
            self._check_outputs(step_id, rec.get("outputs"))
            return self._uses_ok(rec, uses)
        if marker.is_file():
            found = read_marker(marker, step_id)
            if found["fingerprint"] == fp:
                self._check_outputs(step_id, found["outputs"])
                if self._uses_ok(found, uses):
                    self.record(step_id, fp, found["info"], found["outputs"], found["uses"])
                    return True
        return False

    def info(self, step_id: str) -> dict[str, Any]:
        return dict((self.steps.get(step_id) or {}).get("info") or {})

    def record(self, step_id: str, fp: str, info: Mapping[str, Any], outputs: Mapping[str, str] | None = None,
               uses: Mapping[str, str | None] | None = None) -> None:
        self.steps[step_id] = {"fingerprint": fp, "status": "done", "info": dict(info),
                               "outputs": dict(outputs) if outputs is not None else None,
                               "uses": dict(uses or {}), "finished_at": datetime.now(timezone.utc).isoformat()}
        self.save()

    def save(self) -> None:
        if self.readonly:
            return
        write_json_atomic(self.path, {"version": VERSION, "steps": self.steps})

    def steps_output(self) -> Output:
        """STUDY_DIR/steps through the files module's door: the study's own folder of step outputs."""
        return claim_output("steps", self.dir / STEPS_DIR, directory=True, made_by=MADE_BY,
                            ours=lambda folder: (folder.parent / CONFIG_FILE).is_file())

    @contextmanager
    def making(self, step_id: str, fp: str, deps: Sequence[str]) -> Iterator[Making]:
        """A fresh folder for the step's outputs, staged beside its final place (`Output.staged`: a run killed
        or failed mid-step leaves the old folder as it was and its staging folder is removed by the next run).
        When the block ends with `info` set, step.json and the outputs' digests are written, the folder takes
        the step's place in one rename, and state.json records the step."""
        steps = self.steps_output()
        root = steps.path()
        if root.is_dir():
            for stale in root.glob(f".{step_id}.*"):  # staging or old folders of a run killed mid-step
                remove_tree(stale)
        uses = self.uses(deps)
        with steps.staged(step_id) as folder:
            made = Making(step_id, claim_output(f"step {step_id}", folder, directory=True, made_by=MADE_BY),
                          uses=uses)
            yield made
            if made.info is None:
                raise RuntimeError(f"step {step_id} ended without its info")
            made.info = _relocated(made.info, str(folder), str(self.step_dir(step_id)))
            outputs = output_hashes(folder)
            made.out.write_json(MARKER, {"step": step_id, "fingerprint": fp, "info": made.info,
                                         "outputs": outputs, "uses": uses})
        # from the rename on the step counts as done
        self.record(step_id, fp, made.info, outputs, uses)
