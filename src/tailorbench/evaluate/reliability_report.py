"""The report's reliability section: one row per run and split x tier cell of results.json's `reliability`
block, and a reliability diagram per run that yields probabilities (docs/metrics.md, "Reliability")."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tailorbench.evaluate.report_rows import leaderboard_columns
from tailorbench.reporting import Section, colour, f3, pct, text_width

_DOC = "docs/metrics.md"
HEADER = ["judge", "setting", "cell", "cases", "flip rate", "P(first shown) [95% CI]", "P(longer) [95% CI]",
          "acc. longer right / shorter right", "ECE [95% CI]", "Brier", "invalid / abstained / failed"]
NOTES = [
    "*flip rate*: among cases with a valid verdict in both orders, the share whose verdict changes with the "
    "order; *P(first shown)*: the share of valid verdicts picking the answer shown first (0.5 is fair); "
    "*P(longer)*: the share picking the longer answer, on cases of unequal length; each share gives every case "
    "weight 1, and its interval resamples cases.",
    "*acc. longer right / shorter right*: accuracy on the cases where the chosen answer is the longer / "
    "the shorter; *ECE*: expected calibration error of the judge's probability (10 equal-mass bins of "
    "confidence, its interval resamples cases), *Brier*: mean squared error of P(chosen answer), both "
    "only for judges that yield a probability; *invalid / abstained / failed*: shares of all verdicts, in %. "
    f"Definitions: [{_DOC}]({_DOC}#reliability).",
]


def _share(block: Mapping[str, Any] | None) -> str:
    if not block or block.get("value") is None:
        return "–"
    lo, hi = block.get("ci") or (None, None)
    return f"{f3(block['value'])} [{f3(lo)}, {f3(hi)}]" if lo is not None else f3(block["value"])


def _acc(block: Mapping[str, Any] | None) -> str:
    return "–" if not block or block.get("accuracy") is None else f"{pct(block['accuracy'])} (n={block['n']})"


def cell_row(run: Mapping[str, Any], name: str, cell: Mapping[str, Any]) -> list[str]:
    position, length, shares = cell.get("position", {}), cell.get("length", {}), cell.get("shares", {})
    calibration = cell.get("calibration")
    ece = "–"
    if calibration:
        lo, hi = calibration["ece_ci"]
        ece = f"{f3(calibration['ece'])} [{f3(lo)}, {f3(hi)}]"
    return [
        str(run.get("judge")), str(run.get("setting")), name, str(cell.get("cases", 0)),
        f3(position.get("flip_rate")), _share(position.get("p_first")), _share(length.get("p_longer")),
        f"{_acc(length.get('longer_is_right'))} / {_acc(length.get('shorter_is_right'))}", ece,
        f3(calibration["brier"]) if calibration else "–",
        " / ".join(pct(shares.get(k)) for k in ("invalid", "abstained", "failed")),
    ]


def cells(block: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, cell) of a reliability block in report order: split x tier, the split, then everything."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for split, tiers in (block.get("cells") or {}).items():
        if split == "all":
            continue
        out += [(f"{split}/{tier}", cell) for tier, cell in tiers.items()]
    if "all" in (block.get("cells") or {}):
        out.append(("all", block["cells"]["all"]))
    return out


def diagram(runs: Sequence[Mapping[str, Any]]) -> str:
    """Reliability diagrams (accuracy against confidence per bin, the diagonal is perfect calibration) of every
    run's overall cell that has one, in one SVG."""
    curves = [(r, ((r.get("reliability") or {}).get("cells", {}).get("all") or {}).get("calibration"))
              for r in runs]
    drawn: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = [(r, c) for r, c in curves if c]
    if not drawn:
        return ""
    size, left, top = 220, 40, 20

    def xy(conf: float, acc: float) -> tuple[float, float]:
        return left + size * (conf - 0.5) / 0.5, top + size * (1 - acc)

    labels = [f"{run.get('judge')} / {run.get('setting')}: ECE {f3(calibration['ece'])}" for run, calibration in drawn]
    legend = max(220.0, max(text_width(label) for label in labels) + 20)  # whole labels, never cut by the frame
    height = max(top + size + 40, top + 14 + 16 * len(drawn))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + size + legend:.0f}" height="{height}" '
           'role="img">', f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#ccc"/>',
           f'<line x1="{left}" y1="{top + size / 2}" x2="{left + size}" y2="{top}" stroke="#bbb" '
           'stroke-dasharray="4 3"/>',
           f'<text x="{left + size / 2}" y="{top + size + 30}" font-size="11" text-anchor="middle">confidence '
           '(0.5 to 1)</text>', f'<text x="4" y="{top + 10}" font-size="11">accuracy</text>']
    for k, (_, calibration) in enumerate(drawn):
        points = [xy(b["confidence"], b["accuracy"]) for b in calibration["bins"]]
        path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))
        out.append(f'<path d="{path}" fill="none" stroke="{colour(k)}" stroke-width="2"/>')
        label = html.escape(labels[k])
        out.append(f'<text x="{left + size + 10}" y="{top + 14 + 16 * k}" font-size="11" '
                   f'fill="{colour(k)}">{label}</text>')
    out.append("</svg>")
    return "".join(out)


def reliability_section(runs: Sequence[Mapping[str, Any]]) -> Section | None:
    """The section, or None when no run carries a reliability block (results from before it existed): one row per
    run (all its cases), the split x tier rows folded under it (ten runs make 90 rows)."""
    rows = [cell_row(r, name, cell) for r in runs for name, cell in cells(r.get("reliability") or {})
            if name == "all"]
    if not rows:
        return None
    shown = {"all" if s == "all" else f"{s}/{t}" for s, t in leaderboard_columns(runs)}
    detail = [cell_row(r, name, cell) for r in runs for name, cell in cells(r.get("reliability") or {})
              if name != "all" and name in shown]
    rules = sorted({str(r["reliability"]["probability_rule"]) for r in runs
                    if (r.get("reliability") or {}).get("probability_rule")})
    before = ["Can this judge's verdicts be trusted beyond its accuracy: does the order or the length of the "
              "answers sway it, and does its confidence mean what it says?"]
    before += [f"Probability used for calibration: {rule}." for rule in rules]
    before += determinism_lines(runs)
    section = Section("Reliability", before, HEADER, rows, NOTES, figure=diagram(runs))
    if detail:
        section.fold = (f"By split × tier: {len(detail)} more rows for {len(runs)} run{'s' if len(runs) > 1 else ''} "
                        "(the leaderboard's columns)")
        section.fold_header, section.fold_rows = HEADER, detail
    return section


def determinism_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per run judged more than once (`tailor eval --repeat N`, results' `determinism`)."""
    lines = []
    for run in runs:
        d = run.get("determinism") or {}
        if not d or d.get("agreement") is None:
            continue
        accuracies = ", ".join(f"{pct(a)}%" for a in d.get("accuracy") or [] if a is not None)
        spread = d.get("accuracy_spread")
        lines.append(
            f"Determinism of `{run['judge']}` / `{run['setting']}` over {d['repeats']} repeats without the cache: "
            f"{pct(d['agreement'])}% of {d['verdicts_compared']} verdicts identical in every repeat; accuracy "
            f"{accuracies} (spread {pct(spread) if spread is not None else '–'} points)."
            + (f" {d['note']}." if d.get("note") else ""))
    return lines
