"""Run kinds: what a run directory holds (its manifest's `kind`), and the one place that dispatches on it.

`pairwise` (`tailor eval`; its manifests carry no kind) and `gen-eval` (`tailor gen-eval`) are the built-in
kinds. Each registers the function that puts several of its run directories side by side in one report
(`merge(run_dirs, out) -> results`), in the module that owns its reports; `write_merged_report` (what
`tailor report RUN...` writes) looks the kind up here. So the core's reports never import a capability: a
run kind registers itself, like a judge (plugins: entry-point group `tailorbench.run_kinds`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.registry import Registry

#: the kind of a run whose manifest names none (every `tailor eval` run)
DEFAULT_KIND = "pairwise"

MergeReport = Callable[[Sequence[Path], Path], list[dict[str, Any]]]

RUN_KINDS: Registry[MergeReport] = Registry(
    "run kind",
    "tailorbench.run_kinds",
    lazy={"pairwise": "tailorbench.evaluate.report", "gen-eval": "tailorbench.geneval.report"},
)


def run_kind(run_dir: Path) -> str:
    """The kind a run directory's manifest.json names (`pairwise` when it names none or is missing)."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return DEFAULT_KIND  # the kind's own loader reports the missing file with its own clear message
    kind = json.loads(path.read_text(encoding="utf-8")).get("kind", DEFAULT_KIND)
    return str(kind)


def write_merged_report(run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """One report over several run directories of one kind (what `tailor report RUN...` writes); runs of
    different kinds cannot share a table and are refused."""
    kinds = sorted({run_kind(d) for d in run_dirs})
    if len(kinds) > 1:
        raise ConfigError(f"cannot merge {' runs with '.join(kinds)} runs in one report; report them separately")
    return RUN_KINDS.get(kinds[0] if kinds else DEFAULT_KIND)(run_dirs, out)
