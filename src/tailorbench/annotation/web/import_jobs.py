"""Admin imports as jobs off the event loop: the upload, already saved to a temporary directory, is read,
checked and stored by `service.import_items` in a worker thread (one import at a time, in the order they came),
while the server goes on answering annotators. The admin project page shows each job's rows read and stored,
then its result or the reason nothing was imported.

Jobs live in the serving process (a restart forgets them; an import cut off by one leaves nothing behind, since
it commits all rows at once or none). Under several uvicorn workers a job shows on the pages of the worker
that received the upload only."""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.errors import DataError, TailorError
from tailorbench.files import remove_tree

log = logging.getLogger(__name__)

#: jobs kept for the pages (the oldest finished ones are forgotten first)
KEEP_JOBS = 50


def upload_name(filename: str | None) -> str:
    """The name an upload is saved under: its last path part with anything but letters, digits, `.`, `-` and
    `_` replaced and no leading dots (`..`, `/etc/passwd`, `a/../b` stay inside the job's directory); the
    suffix is kept (`.gz` files are read compressed), and the name is what items record as their source."""
    name = re.sub(r"[^\w.-]", "_", (filename or "").replace("\\", "/").rsplit("/", 1)[-1]).lstrip(".")
    return name[-100:] or "upload.jsonl"


@dataclass
class ImportJob:
    """One import as the admin page shows it. `state`: queued, running, done or failed."""

    id: int
    project_id: int
    file: str
    format: str
    state: str = "queued"
    read: int = 0
    stored: int = 0
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ImportJobs:
    """The imports of one app: started by the upload route, run by one worker thread."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tb-import")
        self._jobs: deque[ImportJob] = deque()
        self._lock = threading.Lock()
        self._next_id = 1

    def start(self, project_id: int, workdir: Path, path: Path, fmt: str) -> ImportJob:
        """Queue the import of `path` (inside `workdir`, which the job deletes when it ends)."""
        with self._lock:
            job = ImportJob(self._next_id, project_id, path.name, fmt)
            self._next_id += 1
            self._jobs.append(job)
            while len(self._jobs) > KEEP_JOBS and self._jobs[0].state in ("done", "failed"):
                self._jobs.popleft()
        self._pool.submit(self._run, job, workdir, path)
        return job

    def for_project(self, project_id: int) -> list[ImportJob]:
        """The project's jobs, newest first."""
        with self._lock:
            return [j for j in reversed(self._jobs) if j.project_id == project_id]

    def _run(self, job: ImportJob, workdir: Path, path: Path) -> None:
        job.state = "running"

        def progress(read: int, stored: int) -> None:
            job.read, job.stored = read, stored

        try:
            got = service.import_items(self.db, job.project_id, path, job.format, progress=progress)
        except DataError as exc:  # named by the upload's name, never by the server's temporary path
            where = DataError(job.file, exc.line, exc.field, exc.message)
            job.message = f"Nothing was imported: {str(where).replace(str(path), job.file)}"
            job.state = "failed"
        except TailorError as exc:
            job.message = f"Nothing was imported: {str(exc).replace(str(path), job.file)}"
            job.state = "failed"
        except Exception:
            log.exception("import of %s into project %s failed", job.file, job.project_id)
            job.message = "Nothing was imported: an unexpected error (the server's log has the details)."
            job.state = "failed"
        else:
            job.message = f"imported {got['items']} items and {got['gold_items']} gold items ({got['format']})"
            job.state = "done"
        finally:
            remove_tree(workdir)

    def wait(self) -> None:
        """Return once every import queued so far has ended (tests, shutdown)."""
        self._pool.submit(lambda: None).result()

    def close(self) -> None:
        """Wait for the running import to end (a server shutting down)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
