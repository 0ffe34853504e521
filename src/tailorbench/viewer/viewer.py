"""`tb.view` / `tailor view`: the viewer over some runs, written as a bundle or bound to a local port (served in a
background thread from Python, in the foreground by the CLI)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.logs import get_logger
from tailorbench.viewer.server import ViewServer, check_host, is_loopback
from tailorbench.viewer.site import build_site, check_bundle, write_bundle

log = get_logger(__name__)


@dataclass
class Viewer:
    """Where the viewer is: `url` while served (`stop()` ends it), `index` (the bundle's index.html) when written."""

    runs: list[Path]
    url: str | None = None
    index: Path | None = None
    server: ViewServer | None = field(default=None, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)

    def info(self) -> dict[str, Any]:
        return {"url": self.url, "bundle": None if self.index is None else str(self.index),
                "runs": [str(r) for r in self.runs]}

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl-C (the CLI)."""
        if self.server is None:
            raise RuntimeError("this viewer was written as a bundle, not bound to a port")
        try:
            self.server.serve_forever()
        finally:
            self.server.server_close()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.thread is not None:
            self.thread.join()


def open_viewer(runs: Sequence[str | Path], bundle: str | Path | None = None, host: str = "127.0.0.1",
                port: int = 0, allow_remote: bool = False, n_boot: int = 1000, seed: int = 0,
                serve: bool = True) -> Viewer:
    """Index the runs and write the bundle (`bundle`), or bind the server (loopback unless `allow_remote`) and,
    with `serve`, run it in a background thread."""
    if not runs:
        from tailorbench.errors import ConfigError

        raise ConfigError("name at least one run directory")
    if bundle is None:
        check_host(host, allow_remote)
    else:
        check_bundle(Path(bundle), runs)
    site = build_site([Path(r) for r in runs], n_boot=n_boot, seed=seed)
    if bundle is not None:
        return Viewer(site.runs, index=write_bundle(site, Path(bundle)))
    if not is_loopback(host):
        log.warning("serving on %s, not loopback: everyone who reaches it sees every prompt and answer of these "
                    "runs", host)
    try:
        server = ViewServer(site, host, port)
    except OSError as exc:
        from tailorbench.errors import ConfigError

        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    viewer = Viewer(site.runs, url=server.url, server=server)
    if serve:
        viewer.thread = threading.Thread(target=server.serve_forever, name="tailor-view", daemon=True)
        viewer.thread.start()
    return viewer
