"""The reports' tables as the viewer shows them: the HTML each kind's report renders (report.html of a pairwise
or gen-eval run, `STAGE.html` of a stage report), without its page. One rendering: the viewer never lays out a
report table of its own. Everything in it was escaped by the report's renderer (`reporting.html_table`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_BODY = re.compile(r"<body>(.*)</body>", re.S)


def page_body(page: str) -> str:
    """The body of a page `reporting.html_page` wrote."""
    match = _BODY.search(page)
    return match.group(1) if match else ""


def report_body(kind: str, run_dirs: Sequence[Path]) -> str:
    """The merged report of runs of one kind, as `tailor report RUN...` renders it in report.html."""
    if kind == "gen-eval":
        from tailorbench.geneval.report import render_html
        from tailorbench.geneval.results import load_results as load_gen

        gen_runs = [load_gen(d) for d in run_dirs]
        title = "gen-eval" if len(gen_runs) > 1 else f"gen-eval: {gen_runs[0].get('model')}"
        return page_body(render_html(gen_runs, title))
    from tailorbench.evaluate.report import render_html_body
    from tailorbench.evaluate.results import load_results

    runs = [load_results(d) for d in run_dirs]
    title = "leaderboard" if len(runs) > 1 else f"{runs[0]['judge']} / {runs[0]['setting']}"
    return render_html_body(runs, title)


def stage_body(run_dir: Path) -> list[tuple[str, str]]:
    """(stage, its report's HTML body) for every stage report `STAGE.json` in a directory."""
    from tailorbench.stages.report import STAGES, TITLES, render_html, stage_parts

    out = []
    for stage in STAGES:
        path = run_dir / f"{stage}.json"
        if path.is_file():
            report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            out.append((stage, page_body(render_html(TITLES[stage], *stage_parts(stage, report)))))
    return out
