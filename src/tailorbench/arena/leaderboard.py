"""`tailor arena leaderboard DIR`: ARENA_DIR/leaderboard/leaderboard.json (`ArenaLeaderboardFile`, typed and
versioned, read back strictly), leaderboard.md and leaderboard.html (reporting.py's tables, page and chart), from
the counted votes through the ratings part (`ratings.py`, `voters.py`).

What it holds: voter quality first (gold accuracy, share of left votes, repeat consistency; the voters the stated
rule excludes), then — on the remaining votes — the Bradley-Terry leaderboard (with style control for length
when arena.yaml says so), one leaderboard per segment field of the profile (small segments folded), and the
personalized-vs-generic win rate of each model that runs both ways. Voters are named by pseudonym (privacy.py)
unless `reveal_ids`. An arena labelled illustrative says so in the headline of every file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tailorbench.arena import LEADERBOARD_DIR
from tailorbench.arena.config import ArenaConfig
from tailorbench.arena.store import ArenaStore

#: leaderboard.json's format
FORMAT_VERSION = 1


class ArenaLeaderboardFile(BaseModel):
    """leaderboard.json: every figure the .md and .html show (blocks are the ratings part's models, dumped)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    format_version: int = FORMAT_VERSION
    arena: str
    illustrative: bool
    headline: str
    votes: int
    votes_counted: int
    reveal_ids: bool
    ratings: dict[str, Any]
    segments: list[dict[str, Any]]
    personalized_vs_generic: dict[str, Any]
    voter_quality: dict[str, Any]
    status: dict[str, Any]


def compute(config: ArenaConfig, store: ArenaStore, reveal_ids: bool = False) -> ArenaLeaderboardFile:
    from dataclasses import replace

    from tailorbench.arena.privacy import pseudonym
    from tailorbench.arena.ratings import bradley_terry, personalized_vs_generic, segment_leaderboards
    from tailorbench.arena.voters import exclude_low_quality, voter_quality

    lb = config.leaderboard
    voted = store.voted_battles(config.segment_fields())
    key = store.secret()
    outcomes = [v.outcome if reveal_ids else replace(v.outcome, voter=pseudonym(key, v.outcome.voter))
                for v in voted]
    quality = voter_quality(outcomes)
    kept = exclude_low_quality(outcomes, quality)
    ratings = bradley_terry(kept, min_battles=lb.min_battles, ci=lb.ci, bootstrap=lb.bootstrap, seed=lb.seed,
                            style_control=lb.style_control)
    segments = [segment_leaderboards(kept, f, min_battles=lb.min_battles, ci=lb.ci, bootstrap=lb.bootstrap,
                                     seed=lb.seed, style_control=lb.style_control).model_dump()
                for f in config.segment_fields()]
    pvg = personalized_vs_generic(kept, config.pairs_personalized_generic, ci=lb.ci)
    return ArenaLeaderboardFile(
        arena=config.name, illustrative=config.illustrative, headline=_headline(config, ratings, pvg, len(kept)),
        votes=len(outcomes), votes_counted=len(kept), reveal_ids=reveal_ids, ratings=ratings.model_dump(),
        segments=segments, personalized_vs_generic=pvg.model_dump(), voter_quality=quality.model_dump(),
        status=store.status_counts())


def _headline(config: ArenaConfig, ratings: Any, pvg: Any, counted: int) -> str:
    ranked = sorted((c for c in ratings.contestants if c.ranked), key=lambda c: c.rank or 0)
    parts = [f"{'ILLUSTRATIVE (a demo model and simulated people): ' if config.illustrative else ''}"
             f"{counted} counted vote(s)"]
    if ranked:
        top = ranked[0]
        parts.append(f"first: {top.contestant} at {top.rating:.0f}")
    else:
        parts.append(f"no contestant has the {config.leaderboard.min_battles} battles a rank needs yet")
    for p in pvg.pairs:
        if p.win_rate is not None:
            parts.append(f"{p.personalized} beats {p.generic} in {100 * p.win_rate:.0f}% of their battles")
    return "; ".join(parts)


def _rating_rows(ratings: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in sorted(ratings["contestants"], key=lambda c: (c["rank"] is None, c["rank"] or 0, -c["rating"])):
        ci = "–" if c["ci_low"] is None else f"[{c['ci_low']:.0f}, {c['ci_high']:.0f}]"
        rows.append([str(c["rank"]) if c["ranked"] else "unranked", c["contestant"], f"{c['rating']:.0f}", ci,
                     str(c["battles"]), str(c["wins"]), str(c["losses"]), str(c["ties"]), str(c["both_bad"])])
    return rows


RATING_HEADER = ["rank", "contestant", "rating", "CI", "battles", "wins", "losses", "ties", "both bad"]
PVG_HEADER = ["personalized", "generic", "battles", "win rate (ties half)", "CI"]
VOTER_HEADER = ["voter", "votes", "gold correct", "left share", "repeat consistency", "excluded"]
DEFINITIONS = [
    "Rating: Bradley-Terry on LMArena's scale (400 points = 10:1 odds), ties and both-bad as half a win each way; "
    "CI: percentile bootstrap over battles.",
    "Rank: 1 + the contestants whose interval lies wholly above this one's; a contestant is ranked from the "
    "minimum number of battles on.",
    "Style control: the answers' length difference as a covariate (LMArena's), so a rating is length-adjusted.",
    "Personalized vs generic: the same model with and without the voter's profile; the share of their direct "
    "battles the personalized one won (Wilson interval).",
    "Voter quality: gold battles have a known better answer; the stated rule excludes voters before the ratings.",
]


def _sections(board: ArenaLeaderboardFile) -> list[tuple[str, list[str], list[list[str]]]]:
    out = [("Leaderboard", RATING_HEADER, _rating_rows(board.ratings))]
    for seg in board.segments:
        for s in seg["segments"]:
            out.append((f"Segment {seg['field']} = {s['segment']} ({s['battles']} battles)", RATING_HEADER,
                        _rating_rows(s["ratings"])))
    pvg = [[p["personalized"], p["generic"], str(p["battles"]),
            "–" if p["win_rate"] is None else f"{100 * p['win_rate']:.1f}%",
            "–" if p["ci_low"] is None else f"[{100 * p['ci_low']:.1f}%, {100 * p['ci_high']:.1f}%]"]
           for p in board.personalized_vs_generic["pairs"]]
    out.append(("Personalized vs generic", PVG_HEADER, pvg))
    vq = board.voter_quality
    voters = [[v["voter"], str(v["votes"]), f"{v['gold_correct']}/{v['gold_battles']}",
               "–" if v["left_share"] is None else f"{100 * v['left_share']:.0f}%",
               "–" if v.get("repeat_consistency") is None else f"{100 * v['repeat_consistency']:.0f}%",
               ", ".join(v.get("reasons") or []) or "no"] for v in vq["voters"]]
    out.append((f"Voter quality ({len(vq['excluded'])} excluded: {vq['rule_text']})", VOTER_HEADER, voters))
    return out


def render_md(board: ArenaLeaderboardFile) -> str:
    from tailorbench.reporting import md_table

    lines = [f"# Arena leaderboard: {board.arena}", "", f"**{board.headline}**", ""]
    for title, header, rows in _sections(board):
        lines += [f"## {title}", "", md_table(header, rows) if rows else "(none yet)", ""]
    lines += ["## Definitions", ""] + [f"- {d}" for d in DEFINITIONS] + [""]
    return "\n".join(lines)


def render_html(board: ArenaLeaderboardFile) -> str:
    import html

    from tailorbench.reporting import html_page, html_table, svg_bars

    body = [f"<h1>Arena leaderboard: {html.escape(board.arena)}</h1>",
            f"<p class='headline'><strong>{html.escape(board.headline)}</strong></p>"]
    ranked = [c for c in board.ratings["contestants"]]
    if ranked:
        lo = min((c["ci_low"] if c["ci_low"] is not None else c["rating"]) for c in ranked) - 20
        hi = max((c["ci_high"] if c["ci_high"] is not None else c["rating"]) for c in ranked) + 20
        bars = [(c["contestant"], c["rating"], c["ci_low"], c["ci_high"]) for c in ranked]
        body.append(svg_bars(bars, lo=float(lo), hi=float(hi), title="Rating with its interval"))
    for title, header, rows in _sections(board):
        body += [f"<h2>{html.escape(title)}</h2>", html_table(header, rows) if rows else "<p>(none yet)</p>"]
    body += ["<h2>Definitions</h2><ul>"] + [f"<li>{html.escape(d)}</li>" for d in DEFINITIONS] + ["</ul>"]
    return html_page(f"Arena leaderboard: {board.arena}", "".join(body))


def write(arena_dir: str | Path, config: ArenaConfig, store: ArenaStore, reveal_ids: bool = False,
          out: str | Path | None = None) -> tuple[ArenaLeaderboardFile, Path]:
    """Compute and write the three files (into `out`, default ARENA_DIR/leaderboard); the export is recorded
    (a later deletion's receipt lists it)."""
    from tailorbench.files import claim_output

    board = compute(config, store, reveal_ids)
    place = Path(out) if out is not None else Path(arena_dir) / LEADERBOARD_DIR
    output = claim_output("--out", place, directory=True, made_by="tailor arena leaderboard")
    output.write_json("leaderboard.json", board.model_dump())
    output.write_text("leaderboard.md", render_md(board))
    output.write_text("leaderboard.html", render_html(board))
    store.record_export("leaderboard", place, reveal_ids)
    return board, place


def read(path: str | Path) -> ArenaLeaderboardFile:
    """leaderboard.json read back strictly (a DataError naming the file otherwise)."""
    from pydantic import ValidationError

    from tailorbench.errors import DataError
    from tailorbench.files import load_json

    data = load_json(Path(path), dict, "an arena leaderboard")
    try:
        return ArenaLeaderboardFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise DataError(Path(path), None, ".".join(str(p) for p in first["loc"]), str(first["msg"])) from None
