"""Reports of gen-eval runs: report.md and a self-contained report.html (tables plus an inline SVG chart of the
raw and length-controlled win rates with CI whiskers). One run gets every section; several runs (from
`tailor report`) get a side-by-side table per split x tier, then each run's judge validation and warnings."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench import run_kinds
from tailorbench.evaluate.metrics import report_names
from tailorbench.geneval.headline import headline_lines, rate_ci, repeats
from tailorbench.reporting import (
    colour,
    column_label_reach,
    f3,
    html_page,
    html_table,
    inline_html,
    md_table,
    pct,
    scroll_box,
    svg_column_labels,
    svg_percent_grid,
    svg_whisker,
    text_width,
)


def _all_cells(runs: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every split x (tier..., all) the runs' data declares (PersonaFeedback's by default), then the total."""
    splits, tiers = report_names(runs)
    return [*((s, t) for s in splits for t in (*tiers, "all")), ("all", "")]


def _cell(r: dict[str, Any], split: str, tier: str) -> dict[str, Any] | None:
    block = r["metrics"].get(split)
    if split == "all":
        return block if isinstance(block, dict) else None
    cell = block.get(tier) if block else None
    return cell if isinstance(cell, dict) else None


def _name(split: str, tier: str) -> str:
    return "all" if split == "all" else f"{split}/{tier}"


def run_label(r: Mapping[str, Any]) -> str:
    return f"{r['model']} vs {r['reference']} ({r['setting']})"


_WIN_HEADER = ["cell", "cases", "scored", "win", "tie", "loss", "win rate [95% CI]", "LC win rate [95% CI]",
               "judge consistency"]
_MENTION_HEADER = ["cell", "answers mentioning persona", "mentions / answer", "win rate with mentions",
                   "win rate without", "reference answers mentioning"]
_LENGTH_HEADER = ["cell", "generated mean", "median", "p10-p90", "reference mean", "median", "p10-p90",
                  "LC slope / SD", "length-diff SD"]
_ACCOUNT_HEADER = ["cell", "generation failed", "empty answers", "truncated answers", "reference failed",
                   "empty references",
                   "unjudged cases", "verdict statuses"]


def _cells(r: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(_name(s, t), c) for s, t in _all_cells([r]) if (c := _cell(r, s, t)) and not repeats(r, s, t)]


def _win_rows(r: dict[str, Any]) -> list[list[str]]:
    return [[name, str(c["n_cases"]), str(c["n"]),
             f"{c['win']} ({pct(c['win_share'])}%)", f"{c['tie']} ({pct(c['tie_share'])}%)",
             f"{c['loss']} ({pct(c['loss_share'])}%)", rate_ci(c["win_rate"], c["ci"]),
             rate_ci(c["lc_win_rate"], c["lc_ci"]), f"{pct(c['judge_consistency'])} (n={c['n_consistency']})"]
            for name, c in _cells(r)]


def _mention_rows(r: dict[str, Any]) -> list[list[str]]:
    return [[name, pct(c["mention_share"]), "–" if c["mentions_mean"] is None else f"{c['mentions_mean']:.2f}",
             f"{pct(c['win_rate_with_mentions'])} (n={c['n_with_mentions']})",
             f"{pct(c['win_rate_without_mentions'])} (n={c['n_without_mentions']})",
             pct(c["reference_mention_share"])] for name, c in _cells(r)]


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _length_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, c in _cells(r):
        g, f = c["length_generated"], c["length_reference"]
        rows.append([name, _num(g["mean"]), _num(g["median"]), f"{_num(g['p10'])}-{_num(g['p90'])}",
                     _num(f["mean"]), _num(f["median"]), f"{_num(f['p10'])}-{_num(f['p90'])}",
                     _num(c["lc_slope_per_sd"], 2), _num(c["lc_length_sd"])])
    return rows


def _account_rows(r: dict[str, Any]) -> list[list[str]]:
    return [[name, str(c["gen_failed"]), str(c["empty_answers"]), str(c["truncated_answers"]), str(c["ref_failed"]),
             str(c.get("empty_references", 0)), str(c["unjudged"]),
             ", ".join(f"{k} {v}" for k, v in c["verdict_status"].items()) or "–"]
            for name, c in _cells(r)]


def _validation_lines(r: dict[str, Any]) -> list[str]:
    v = r.get("judge_validation") or {}
    if not v.get("source"):
        return ["The judge was not validated on the pairwise benchmark."]
    return [
        f"`{v.get('judge')}` on the pairwise benchmark ({v.get('setting')} setting, {v.get('n')} cases, "
        f"source `{v.get('source')}`): accuracy {rate_ci(v.get('accuracy'), v.get('ci', [None, None]))}%, "
        f"`longer` baseline on the same cases {pct(v.get('longer_accuracy'))}%, position consistency "
        f"{pct(v.get('consistency'))}% (n={v.get('n_consistency')}), invalid {v.get('invalid')}, "
        f"failed {v.get('failed')}."
    ]


def _lc_notes(r: dict[str, Any]) -> list[str]:
    return [f"{name}: {note}" for name, c in _cells(r) for note in c.get("lc_notes", [])]


def _side_by_side(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    cells = [(s, t) for s, t in _all_cells(runs) if any(_cell(r, s, t) and not repeats(r, s, t) for r in runs)]
    header = ["model", "reference", "judge", "setting", *(f"{_name(s, t)} win / LC" for s, t in cells),
              "judge acc. / longer"]
    rows = []
    for r in runs:
        v = r.get("judge_validation") or {}
        row = [r["model"], r["reference"], r["judge"], r["setting"]]
        for s, t in cells:
            c = _cell(r, s, t)
            row.append("–" if not c else f"{rate_ci(c['win_rate'], c['ci'])} / {rate_ci(c['lc_win_rate'], c['lc_ci'])}")
        row.append(f"{pct(v.get('accuracy'))} / {pct(v.get('longer_accuracy'))}")
        rows.append(row)
    return header, rows


_INTRO = ("Win rate = mean case score (a case scores the share of its valid verdicts, in both answer orders, that "
          "prefer the generated answer; ties count half), in % with a 95% percentile-bootstrap CI over cases. "
          "LC = length-controlled win rate: sigmoid(b0) of logit P(win) = b0 + b1 * (length difference / SD), "
          "the modelled win rate at equal length (docs/generation.md).")


_RELIABILITY_HEADER = ["cell", "cases", "flip rate", "P(first shown) [95% CI]", "P(longer) [95% CI]",
                       "invalid / abstained / failed"]
_RELIABILITY_NOTE = ("The judge's verdicts, as in `tailor eval`'s reliability table: flip rate = share of cases "
                     "judged validly in both orders whose winner changes with the order; P(first shown) = share "
                     "of valid verdicts picking the answer shown first (0.5 is fair); P(longer) = share picking the "
                     "longer answer; invalid / abstained / failed in % of verdicts (docs/generation.md).")


def _reliability_rows(r: dict[str, Any]) -> list[list[str]]:
    from tailorbench.evaluate.reliability_report import cell_row, cells

    rows = []
    for name, cell in cells(r.get("reliability") or {}):
        if name != "all" and repeats(r, *name.split("/", 1)):
            continue
        full = cell_row({"judge": r["judge"], "setting": r["judge_setting"]}, name, cell)
        rows.append([full[2], full[3], full[4], full[5], full[6], full[10]])
    own = r.get("self_preference")
    if own and own.get("difference") is not None:
        lo, hi = own["ci"]
        rows.append([f"self-preference ({own['own_answer']} answers are the judge's)", str(own["n"]),
                     "", f"own {pct(own['own_win_rate'])}% vs other {pct(own['other_win_rate'])}%",
                     f"difference {f3(own['difference'])} [{f3(lo)}, {f3(hi)}]", ""])
    return rows


def _sections(r: dict[str, Any]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    reliability = _reliability_rows(r)  # none in results from before the table existed: no section
    return [
        ("Win rates", "", _WIN_HEADER, _win_rows(r)),
        *([("Judge reliability", _RELIABILITY_NOTE, _RELIABILITY_HEADER, reliability)] if reliability else []),
        ("Explicit persona mentions", "Answers that name persona values outright (language-aware detector). A win "
         "rate much higher with mentions than without suggests a judge that rewards name-dropping.",
         _MENTION_HEADER, _mention_rows(r)),
        ("Answer lengths (characters)", "", _LENGTH_HEADER, _length_rows(r)),
        ("Accounting", "", _ACCOUNT_HEADER, _account_rows(r)),
    ]


def render_markdown(runs: Sequence[dict[str, Any]], title: str) -> str:
    parts = [f"# {title}", "", "## Headline", ""]
    for line in headline_lines(runs):
        parts += [line, ""]
    parts += [_INTRO, ""]
    if len(runs) > 1:
        header, rows = _side_by_side(runs)
        parts += ["## Side by side", "", md_table(header, rows), ""]
    for r in runs:
        if len(runs) > 1:
            parts += [f"## {run_label(r)}", ""]
        parts += [f"Model `{r['model']}` vs reference `{r['reference']}`, judge `{r['judge']}` "
                  f"(judge setting {r['judge_setting']}), generation setting `{r['setting']}`, data `{r['data']}`, "
                  f"{r['cases_generated']}/{r['cases_planned']} cases, seed {r['seed']}, status {r['status']}.", ""]
        parts += ["### Judge validation", "", *_validation_lines(r), ""]
        for name, note, header, rows in _sections(r):
            parts += [f"### {name}", ""] + ([note, ""] if note else []) + [md_table(header, rows), ""]
            if name == "Win rates" and (notes := _lc_notes(r)):
                parts += ["Length control notes:", "", *(f"- {line}" for line in notes), ""]
        if r.get("warnings"):
            parts += ["### Warnings", "", *(f"- {w}" for w in r["warnings"]), ""]
    return "\n".join(parts)


def _svg_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Per split x tier and run: a solid bar (raw win rate) and a hatched-looking light bar (LC), with whiskers."""
    splits, tiers = report_names(runs)
    cells = [(s, t) for s in splits for t in tiers if any(_cell(r, s, t) for r in runs)]
    bar, height, top = 10, 220, 20
    width_per = 20 + (2 * bar + 6) * len(runs)
    names = [f"{s}/{t}" for s, t in cells]
    # whole split/tier names, turned when they do not fit a column: the first one sets the left margin
    left = max(40.0, column_label_reach(names[0]) - width_per / 2 + 8) if names else 40.0
    width = left + width_per * max(1, len(cells)) + 20
    labels, label_height = svg_column_labels(
        [(left + ci * width_per + 10 + (width_per - 26) / 2, name) for ci, name in enumerate(names)],
        top + height + 16, width_per - 4)
    legend_top = top + height + 16 + label_height + 4
    keys = [f"{run_label(run)} (solid: win rate, light: length-controlled)" for run in runs]
    total = max(width, 54 + max((text_width(k) for k in keys), default=0.0))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total:.0f}" height="{legend_top + 16 * len(runs):.0f}" '
           'role="img">']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for ci, (split, tier) in enumerate(cells):
        x0 = left + ci * width_per + 10
        for ri, run in enumerate(runs):
            cell = _cell(run, split, tier)
            if not cell:
                continue
            for k, (key, ci_key, opacity) in enumerate((("win_rate", "ci", 1.0), ("lc_win_rate", "lc_ci", 0.45))):
                value = cell[key]
                if value is None:
                    continue
                x = x0 + ri * (2 * bar + 6) + k * bar
                y = top + height * (1 - value)
                tip = html.escape(f"{run_label(run)} {split}/{tier} {'LC ' if k else ''}win rate: "
                                  f"{rate_ci(value, cell[ci_key])}")
                out.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{top + height - y:.1f}" '
                           f'fill="{colour(ri)}" fill-opacity="{opacity}"><title>{tip}</title></rect>')
                lo, hi = cell[ci_key]
                if lo is not None:
                    ylo, yhi, xm = top + height * (1 - lo), top + height * (1 - hi), x + bar / 2
                    out.append(svg_whisker(xm, ylo, yhi, half=3))
    y50 = top + height / 2
    out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y50}" y2="{y50}" stroke="#999" stroke-dasharray="4 3"/>')
    out.append(labels)
    for ri, key in enumerate(keys):
        y = legend_top + 16 * ri
        out.append(f'<rect x="40" y="{y:.1f}" width="10" height="10" fill="{colour(ri)}"/>'
                   f'<text x="54" y="{y + 9:.1f}" font-size="11">{html.escape(key)}</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(runs: Sequence[dict[str, Any]], title: str) -> str:
    parts = [f"<h1>{html.escape(title)}</h1><h2>Headline</h2>",
             *(f"<p>{inline_html(line)}</p>" for line in headline_lines(runs)),
             f"<p>{html.escape(_INTRO)}</p>", scroll_box(_svg_chart(runs))]
    if len(runs) > 1:
        header, rows = _side_by_side(runs)
        parts.append(f"<h2>Side by side</h2>{html_table(header, rows)}")
    for r in runs:
        parts.append(f"<h2>{html.escape(run_label(r))}</h2><p>judge <code>{html.escape(r['judge'])}</code>, "
                     f"{r['cases_generated']}/{r['cases_planned']} cases, status {html.escape(str(r['status']))}</p>")
        parts.append("<h3>Judge validation</h3>" + "".join(f"<p>{html.escape(line)}</p>"
                                                             for line in _validation_lines(r)))
        for name, note, header, rows in _sections(r):
            parts.append(f"<h3>{html.escape(name)}</h3>" + (f"<p>{html.escape(note)}</p>" if note else "")
                         + html_table(header, rows))
            if name == "Win rates" and (notes := _lc_notes(r)):
                parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in notes) + "</ul>")
        if r.get("warnings"):
            parts.append("<h3>Warnings</h3><ul>" + "".join(f"<li class='warn'>{html.escape(w)}</li>"
                                                          for w in r["warnings"]) + "</ul>")
    return html_page(title, "".join(parts))


def write_reports(runs: Sequence[dict[str, Any]], out: Path, title: str | None = None) -> None:
    """report.md and report.html of gen-eval runs at `out` (the run kind's pages, `geneval/run_kind.py`)."""
    run_kinds.write_reports(run_kinds.RUN_KINDS.get("gen-eval"), runs, out, title)
