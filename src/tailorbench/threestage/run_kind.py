"""The `stage` run kind: a directory of stage reports (`STAGE.json`, what `tailor stages ...` and `tailor stages
example` write), which the viewer shows section by section; registered in `run_kinds.RUN_KINDS`. It has no
manifest (it is recognised by its files) and no cases."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailorbench.files import load_json
from tailorbench.reporting import html_page, page_body
from tailorbench.run_kinds import RUN_KINDS, RunKind
from tailorbench.threestage.headline import Linker, headline
from tailorbench.threestage.report import (
    STAGES,
    SUMMARY_TITLE,
    TITLES,
    Page,
    render_html,
    render_markdown,
    stage_parts,
    summary_tables,
)


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


def _reports(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {stage: load_json(run_dir / f"{stage}.json", dict, "a stage report (a JSON object)")
            for stage in STAGES if (run_dir / f"{stage}.json").is_file()}


def _title(run_dir: Path) -> str:
    """A study's report folder is titled by its study (study.json), any other by the summary's title."""
    study = run_dir / "study.json"
    if study.is_file():
        return f"Study {load_json(study, dict, 'a study report (a JSON object)').get('study')}"
    return SUMMARY_TITLE


def _load_results(run_dir: Path) -> dict[str, Any]:
    """What `tailor report` returns of a directory of stage reports: its stages and its headline."""
    reports = _reports(run_dir)
    return {"kind": "stage", "dir": str(run_dir), "title": _title(run_dir), "stages": list(reports),
            "headline": [text for text, _ in headline(reports)]}


def _linker(run_dir: Path, out: Path, ext: str) -> Linker:
    """Where a stage report of `run_dir` is, as a page at `out` links it (a relative path)."""

    def link(stage: str) -> str:
        return Path(os.path.relpath(run_dir / f"{stage}.{ext}", out)).as_posix()

    return link


@dataclass(frozen=True)
class StageKind(RunKind):
    """The `stage` kind, whose report (`tailor report` of a folder of stage reports or of a study folder) is the
    summary page of each directory: its headline, the stage reports as links (relative to `out`, where they
    lie), every stage's headline figures and their definitions."""

    def merge(self, run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
        from tailorbench.files import write_text_atomic

        md, body = [], []
        for run_dir in run_dirs:
            reports = _reports(run_dir)
            page = Page.of(reports, md_link=_linker(run_dir, out, "md"), html_link=_linker(run_dir, out, "html"))
            title = f"{_title(run_dir)} ({run_dir})"
            notes = [f"The study's own report, with what the annotation took: {_linker(run_dir, out, 'md')('study')}."
                     ] if (run_dir / "study.md").is_file() else []
            md.append(render_markdown(title, summary_tables(reports), [], notes, page))
            body.append(page_body(render_html(title, summary_tables(reports), [], notes, page)))
        write_text_atomic(out / "report.md", "\n".join(md))
        write_text_atomic(out / "report.html", html_page("Stage reports", "".join(body)))
        return [_load_results(d) for d in run_dirs]


#: directories of stage reports: what the viewer shows of them, what `tailor report` writes of them
STAGE = RUN_KINDS.register("stage")(StageKind(
    html_body=_html_body, load_results=_load_results, key_files=_key_files, sections=stage_body, detect=_detect,
    expects="stage report (" + ", ".join(f"{s}.json" for s in STAGES) + ")"))
