"""The `estimate` run kind: the file `tailor estimate ... --out FILE.json` writes (an `EstimateReport`), which
`tailor view FILE.json` shows as a section (the three estimates per cell, the definitions and the notes), as it
shows a directory of stage reports; registered in `run_kinds.RUN_KINDS`. It has no manifest (it is recognised by
being a .json file, read as an `EstimateReport`) and no cases."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tailorbench.estimation.records import EstimateReport
from tailorbench.estimation.report import render_html
from tailorbench.run_kinds import RUN_KINDS, RunKind

__all__ = ["ESTIMATE"]


def _read(path: Path) -> EstimateReport:
    report = EstimateReport.read(path)
    assert isinstance(report, EstimateReport)
    return report


def _detect(path: Path) -> bool:
    """A .json file given to the viewer is an estimate file: it is then read as an `EstimateReport` (one that
    is not is a DataError naming the file and field, not a page without it)."""
    return path.is_file() and path.suffix.lower() == ".json"


def _sections(path: Path) -> list[tuple[str, str]]:
    return [(path.name, render_html(_read(path)))]


def _html_body(paths: Sequence[Path]) -> str:
    return "".join(body for p in paths for _, body in _sections(p))


#: estimate files: what the viewer shows of them
ESTIMATE = RUN_KINDS.register("estimate")(RunKind(
    html_body=_html_body, key_files=lambda path: [path], sections=_sections, detect=_detect,
    expects="estimate file (tailor estimate --out FILE.json)"))
