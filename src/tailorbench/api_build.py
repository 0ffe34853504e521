"""Python twins of `tailor build ...` (`tb.build.*`; `tb.build(...)` is `tb.build.run(...)`)."""

from __future__ import annotations

from tailorbench.api import build as run
from tailorbench.api import build_async as run_async

__all__ = ["run", "run_async"]
