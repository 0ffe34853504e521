"""`tailor view`: the viewer over run directories of every kind."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["view"]


def view(runs: Sequence[str | Path], bundle: str | Path | None = None, host: str = "127.0.0.1", port: int = 0,
         allow_remote: bool = False, n_boot: int = 1000, seed: int = 0, serve: bool = True) -> Any:
    """`tailor view`: the viewer over run directories of every kind (`tailorbench.viewer.viewer.Viewer`). With
    `bundle`, written there as a static site (`.index` is its index.html); else served on loopback (any free
    port by default) in a background thread: `.url` while it runs, `.stop()` ends it (docs/view.md)."""
    from tailorbench.options import as_int
    from tailorbench.viewer.viewer import open_viewer

    as_int("--n-boot", n_boot, minimum=1)
    return open_viewer(runs, bundle=bundle, host=host, port=port, allow_remote=allow_remote, n_boot=n_boot,
                       seed=seed, serve=serve)
