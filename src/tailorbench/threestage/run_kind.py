"""The `stage` run kind: a directory of stage reports (`STAGE.json`, what `tailor stages ...` and `tailor stages
example` write), which the viewer shows section by section; registered in `run_kinds.RUN_KINDS`. It has no
manifest (it is recognised by its files) and no cases."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.files import load_json
from tailorbench.reporting import page_body
from tailorbench.run_kinds import RUN_KINDS, RunKind
from tailorbench.threestage.report import STAGES, TITLES, render_html, stage_parts


def stage_body(run_dir: Path) -> list[tuple[str, str]]:
    """(stage, its report's HTML body) for every stage report `STAGE.json` in a directory; the relevance stage
    also gets its per-item human and model votes, read back from the files the report names (`sources`)."""
    out = []
    for stage in STAGES:
        path = run_dir / f"{stage}.json"
        if path.is_file():
            report: dict[str, Any] = load_json(path, dict, "a stage report (a JSON object)")
            body = page_body(render_html(TITLES[stage], *stage_parts(stage, report)))
            if stage == "relevance":
                body += relevance_votes(report)
            out.append((stage, body))
    return out


#: most items the per-item vote table shows
MAX_VOTE_ROWS = 2000


def relevance_votes(report: dict[str, Any]) -> str:
    """One row per rated attribute (user, attribute), one column per rater (humans first): each rater's vote, as
    the stage-2 files the report was computed from hold them (`recentering_formats.read_relevance_file`)."""
    from tailorbench.errors import TailorError
    from tailorbench.reporting import html_table
    from tailorbench.threestage.recentering_formats import HUMAN, MODEL, read_relevance_file, split_key

    votes: dict[str, dict[str, bool]] = {}
    groups: dict[str, str] = {}
    missing = []
    for source in report.get("sources") or []:
        path = Path(str(source))
        try:
            with path.open(encoding="utf-8") as handle:
                first = json.loads(next((line for line in handle if line.strip()), "{}"))
            rated = read_relevance_file(path, HUMAN if "relevance_judgments" in first else MODEL)
        except (OSError, ValueError, TailorError):
            missing.append(path.name)
            continue
        for r in rated.ratings:
            votes.setdefault(r.item, {})[r.rater] = bool(r.label)
            groups[r.rater] = r.group
    if not votes:
        return ""
    raters = sorted(groups, key=lambda r: (groups[r] != HUMAN, r))
    rows = []
    for item in sorted(votes, key=split_key)[:MAX_VOTE_ROWS]:
        index, user, attribute = split_key(item)
        cast = votes[item]
        rows.append([str(index), user, attribute,
                     *("–" if r not in cast else "yes" if cast[r] else "no" for r in raters)])
    header = ["item", "user", "attribute", *(f"{r} ({groups[r]})" for r in raters)]
    note = (f"<p class='note'>Relevant? per attribute and rater, from the files the report read; "
            f"{len(votes)} items{f', the first {MAX_VOTE_ROWS} shown' if len(votes) > MAX_VOTE_ROWS else ''}"
            + (f"; not readable any more: {html.escape(', '.join(missing))}" if missing else "") + ".</p>")
    return "<h2>Per-item votes, humans and models</h2>" + note + html_table(header, rows)


def _detect(run_dir: Path) -> bool:
    return any((run_dir / f"{stage}.json").is_file() for stage in STAGES)


def _key_files(run_dir: Path) -> list[Path]:
    reports = [run_dir / f"{s}.json" for s in STAGES]
    relevance = run_dir / "relevance.json"
    sources = load_json(relevance, dict, "a stage report").get("sources") or [] if relevance.is_file() else []
    return [*reports, *(Path(str(p)) for p in sources)]  # the per-item votes come from the sources


def _html_body(run_dirs: Sequence[Path]) -> str:
    return "".join(body for d in run_dirs for _, body in stage_body(d))


#: directories of stage reports: what the viewer shows of them
STAGE = RUN_KINDS.register("stage")(RunKind(
    html_body=_html_body, key_files=_key_files, sections=stage_body, detect=_detect,
    expects="stage report (" + ", ".join(f"{s}.json" for s in STAGES) + ")"))
