"""The reports' tables as the viewer shows them: the HTML each kind's report renders (report.html of a pairwise
or gen-eval run, `STAGE.html` of a stage report), without its page. One rendering: the viewer never lays out a
report table of its own. Everything in it was escaped by the report's renderer (`reporting.html_table`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path


def report_body(kind: str, run_dirs: Sequence[Path]) -> str:
    """The merged report of runs of one kind, as `tailor report RUN...` renders it in report.html; a run the
    report refuses (e.g. a torn last line, which only `--resume` may cut) gets its error instead."""
    from tailorbench.errors import TailorError

    try:
        return _report_body(kind, run_dirs)
    except TailorError as exc:
        return f"<p class='warn'>The report could not be computed: {html.escape(str(exc))}</p>"


def _report_body(kind: str, run_dirs: Sequence[Path]) -> str:
    from tailorbench.run_kinds import RUN_KINDS

    return RUN_KINDS.get(kind).html_body(run_dirs)
