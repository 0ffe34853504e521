"""Reports: report.md (paper-style table, length-controlled view, accounting, breakdowns) and a
self-contained report.html (same tables plus a per-tier bar chart with CI whiskers, inline SVG)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.evaluate.metrics import OVERLAP_KINDS
from tailorbench.files import write_text_atomic
from tailorbench.reporting import colour, html_page, html_table, md_table, pct, svg_percent_grid, svg_whisker
from tailorbench.schema import SPLITS, TIERS

_COLUMNS: list[tuple[str, str]] = [
    *((s, t) for s in SPLITS for t in (*TIERS, "all")),
    ("all", ""),
]


def _header() -> list[str]:
    names = {"easy": "easy", "medium": "medium", "hard": "hard", "all": "avg"}
    return ["judge", "setting", *(f"{s.capitalize()} {names[t]}" for s, t in _COLUMNS[:-1]), "total"]


def _cell(results: dict[str, Any], split: str, tier: str) -> dict[str, Any] | None:
    block = results["metrics"].get(split)
    if split == "all":
        return block if isinstance(block, dict) else None
    if not block:
        return None
    cell = block.get(tier)
    return cell if isinstance(cell, dict) else None


def _fmt(cell: dict[str, Any] | None, with_ci: bool = True) -> str:
    if not cell or cell.get("accuracy") is None:
        return "–"
    text = pct(cell["accuracy"])
    lo, hi = cell.get("ci", [None, None])
    if with_ci and lo is not None:
        text += f" [{pct(lo)}, {pct(hi)}]"
    return text


def leaderboard_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    ordered = sorted(runs, key=lambda r: -(r["metrics"]["all"]["accuracy"] or 0.0))
    return [[r["judge"], r["setting"], *(_fmt(_cell(r, s, t)) for s, t in _COLUMNS)] for r in ordered]


def _length_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        for split in (*SPLITS, "all"):
            cell = _cell(r, split, "all")
            if not cell:
                continue
            view = cell["length"]
            rows.append([
                r["judge"], r["setting"], split,
                f"{pct(view['chosen_longer']['accuracy'])} (n={view['chosen_longer']['n']})",
                f"{pct(view['chosen_shorter']['accuracy'])} (n={view['chosen_shorter']['n']})",
                str(view["equal_length"]),
                pct(view["balanced_accuracy"]),
            ])
    return rows


def _accounting_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        total = r["metrics"]["all"]
        usage = r.get("usage", {})
        cost = usage.get("cost_usd")
        failures = r.get("failures", {})
        rows.append([
            r["judge"], r["setting"], str(r.get("status", "–")), str(total["n"]), str(r["verdicts"]["total"]),
            str(total["invalid"]), str(total["abstained"]), str(total["failed"]), str(failures.get("retries", 0)),
            str(r["verdicts"].get("truncated", 0)), str(r.get("skipped_rows", 0)),
            pct(total["strict_accuracy"]), pct(total["consistency"]),
            f"{usage.get('prompt_tokens', 0)}/{usage.get('completion_tokens', 0)}",
            "–" if cost is None else f"{cost:.4f}",
        ])
    return rows


def _overlap_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        for split in SPLITS:
            for tier in TIERS:
                view = (_cell(r, split, tier) or {}).get("by_overlap")
                if view:
                    rows.append([r["judge"], r["setting"], f"{split}/{tier}", *(
                        f"{pct(view[k]['accuracy'])} (n={view[k]['n']})" if k in view else "–"
                        for k in OVERLAP_KINDS)])
    return rows


_OVERLAP_HEADER = ["judge", "setting", "tier", "rows unique to the tier", "repeated by another tier",
                   "contradicted by another tier"]
_OVERLAP_NOTE = ("Some rows are also in another tier of the data: with the same label (repeated) or with the labels "
                 "swapped (contradicted: a judge that gives the pair one order is right on exactly one of its two "
                 "rows). Accuracy by kind; `tailor data check` counts them.")
_LENGTH_HEADER = ["judge", "setting", "split", "acc. chosen longer", "acc. chosen shorter", "equal length",
                  "length-balanced"]
_ACCOUNT_HEADER = ["judge", "setting", "status", "cases", "verdicts", "invalid", "abstained", "failed", "retries",
                   "truncated", "skipped rows", "strict acc.", "position consistency", "tokens in/out", "cost USD"]
_FAILURE_HEADER = ["judge", "setting", "failed verdicts", "allowed (--max-failed)", "run failed", "by kind",
                   "call errors (all attempts)", "first errors"]
_FAILURE_NOTE = ("A failed verdict is a call that never returned a usable answer (after every retry); such a run "
                 "exits with code 3 when their share exceeds `--max-failed`, and always when every verdict failed. "
                 "Invalid and abstained verdicts are the judge's answers: counted above, never here.")


def _counts(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "–"


def _failure_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One row per run with failed verdicts or failed attempts (retried or not)."""
    rows = []
    for r in runs:
        f = r.get("failures") or {}
        if not f.get("failed") and not f.get("call_errors"):
            continue
        share = f.get("share")
        rows.append([
            r["judge"], r["setting"], f"{f.get('failed', 0)} of {f.get('verdicts', 0)}"
            + ("" if share is None else f" ({pct(share)}%)"),
            f"{pct(f.get('max_failed', 0.0))}%", "yes (exit 3)" if f.get("exceeded") else "no",
            _counts(f.get("by_kind", {})), _counts(f.get("call_errors", {})),
            " | ".join(f.get("first_errors", [])) or "–",
        ])
    return rows


def render_markdown(runs: Sequence[dict[str, Any]], title: str) -> str:
    first = runs[0]
    parts = [
        f"# {title}",
        "",
        f"Accuracy in % with 95% percentile-bootstrap CI ({first.get('n_boot', 1000)} resamples, unit: "
        f"{first.get('ci_unit', 'case')}); a case scores the mean over its judged orders; abstained, invalid and "
        "failed verdicts score 0. Averages are weighted by case counts.",
        "",
        md_table(_header(), leaderboard_rows(runs)),
        "",
        "## Length-controlled view",
        "",
        "Picking the longer answer wins 72-77% on PersonaFeedback General: compare with the `longer` baseline.",
        "",
        md_table(_LENGTH_HEADER, _length_rows(runs)),
        "",
        "## Accounting",
        "",
        md_table(_ACCOUNT_HEADER, _accounting_rows(runs)),
    ]
    failures = _failure_rows(runs)
    if failures:
        parts += ["", "## Failed calls", "", _FAILURE_NOTE, "", md_table(_FAILURE_HEADER, failures)]
    overlap = _overlap_rows(runs)
    if overlap:
        parts += ["", "## Rows shared across tiers", "", _OVERLAP_NOTE, "", md_table(_OVERLAP_HEADER, overlap)]
    warnings = [(r["judge"], w) for r in runs for w in r.get("warnings", [])]
    if warnings:
        parts += ["", "## Warnings", "", *(f"- `{j}`: {w}" for j, w in warnings)]
    if len(runs) == 1:
        parts += _single_run_details(first)
    return "\n".join(parts) + "\n"


def _single_run_details(r: dict[str, Any]) -> list[str]:
    users = r.get("users", {})
    out = ["", "## Users", "", f"{users.get('n_users', 0)} users; per-user accuracy quantiles: "
           + ", ".join(f"{k} {pct(v)}" for k, v in users.get("quantiles", {}).items())]
    hardest = users.get("hardest", [])
    if hardest:
        out += ["", md_table(["hardest users", "cases", "accuracy"],
                              [[h["user_id"], str(h["n"]), pct(h["accuracy"])] for h in hardest])]
    for attr, values in r.get("attributes", {}).items():
        rows = [[v, str(s["n"]), pct(s["accuracy"])] for v, s in list(values.items())[:12]]
        out += ["", f"### By {attr}", "", md_table([attr, "cases", "accuracy"], rows)]
    return out


def _svg_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Grouped bars per split x tier, one colour per run, whiskers at the CI bounds."""
    cells = [(s, t) for s in SPLITS for t in TIERS if any(_cell(r, s, t) for r in runs)]
    width_per, bar, height, top, left = 40 + 18 * len(runs), 14, 220, 20, 40
    width = left + width_per * max(1, len(cells)) + 20
    legend_cols = max(1, (width - left) // 180)
    legend_rows = -(-len(runs) // legend_cols)
    svg_height = top + height + 36 + 16 * legend_rows
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{svg_height}" role="img">']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for ci, (split, tier) in enumerate(cells):
        x0 = left + ci * width_per + 10
        for ri, run in enumerate(runs):
            cell = _cell(run, split, tier)
            if not cell or cell["accuracy"] is None:
                continue
            x = x0 + ri * (bar + 4)
            y = top + height * (1 - cell["accuracy"])
            tip = html.escape(f"{run['judge']} / {run['setting']} {split}/{tier}: {_fmt(cell)}")
            out.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{top + height - y:.1f}" '
                       f'fill="{colour(ri)}"><title>{tip}</title></rect>')
            lo, hi = cell["ci"]
            if lo is not None:
                ylo, yhi, xm = top + height * (1 - lo), top + height * (1 - hi), x + bar / 2
                out.append(svg_whisker(xm, ylo, yhi))
        out.append(f'<text x="{x0 + width_per / 2 - 10}" y="{top + height + 16}" font-size="11" '
                   f'text-anchor="middle">{split[:4]}/{tier}</text>')
    for ri, run in enumerate(runs):
        y = top + height + 28 + 16 * (ri // legend_cols)
        x = left + (ri % legend_cols) * 180
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour(ri)}"/>'
                   f'<text x="{x + 14}" y="{y + 9}" font-size="11">'
                   f'{html.escape(run["judge"] + " / " + run["setting"])[:28]}</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(runs: Sequence[dict[str, Any]], title: str) -> str:
    warnings = "".join(f"<li><code>{html.escape(r['judge'])}</code>: {html.escape(w)}</li>"
                       for r in runs for w in r.get("warnings", []))
    overlap = _overlap_rows(runs)
    failures = _failure_rows(runs)
    return html_page(
        title,
        f"<h1>{html.escape(title)}</h1>"
        "<p>Accuracy in % with 95% percentile-bootstrap CI; whiskers in the chart show the CI.</p>"
        f"{_svg_chart(runs)}{html_table(_header(), leaderboard_rows(runs))}"
        f"<h2>Length-controlled view</h2>{html_table(_LENGTH_HEADER, _length_rows(runs))}"
        f"<h2>Accounting</h2>{html_table(_ACCOUNT_HEADER, _accounting_rows(runs))}"
        + (f"<h2>Failed calls</h2><p>{html.escape(_FAILURE_NOTE)}</p>{html_table(_FAILURE_HEADER, failures)}"
           if failures else "")
        + (f"<h2>Rows shared across tiers</h2><p>{html.escape(_OVERLAP_NOTE)}</p>{html_table(_OVERLAP_HEADER, overlap)}"
           if overlap else "")
        + (f"<h2>Warnings</h2><ul>{warnings}</ul>" if warnings else ""),
    )


def write_run_reports(runs: Sequence[dict[str, Any]], out: Path, title: str | None = None) -> None:
    title = title or (f"tailorbench: {runs[0]['judge']} / {runs[0]['setting']}" if len(runs) == 1
                      else "tailorbench leaderboard")
    write_text_atomic(out / "report.md", render_markdown(runs, title))
    write_text_atomic(out / "report.html", render_html(runs, title))


def write_merged_report(run_dirs: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    """One leaderboard over several run directories (what `tailor report RUN...` writes)."""
    from tailorbench.evaluate.results import load_results

    kinds = {_run_kind(d) for d in run_dirs}
    if kinds == {"gen-eval"}:
        from tailorbench.geneval.report import write_merged

        return write_merged(run_dirs, out)
    if "gen-eval" in kinds:
        from tailorbench.errors import ConfigError

        raise ConfigError("cannot merge gen-eval runs with pairwise runs in one report; report them separately")
    runs = [load_results(d) for d in run_dirs]
    write_run_reports(runs, out, "tailorbench leaderboard")
    return runs


def _run_kind(run_dir: Path) -> str:
    """`gen-eval` or `pairwise` (pairwise manifests carry no kind), from manifest.json."""
    import json

    path = run_dir / "manifest.json"
    if not path.exists():
        return "pairwise"  # load_results reports the missing file with its own clear message
    kind = json.loads(path.read_text(encoding="utf-8")).get("kind", "pairwise")
    return str(kind)
