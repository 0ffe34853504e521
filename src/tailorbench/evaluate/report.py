"""Reports: report.md (paper-style table, length-controlled view, accounting, breakdowns) and a
self-contained report.html (same tables plus a per-tier bar chart with CI whiskers, inline SVG)."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.evaluate.metrics import OVERLAP_KINDS, report_names
from tailorbench.evaluate.reliability_report import reliability_section
from tailorbench.reporting import (
    Section,
    colour,
    html_page,
    html_table,
    md_table,
    pct,
    svg_percent_grid,
    svg_whisker,
)
from tailorbench.run_kinds import RUN_KINDS, write_reports


def _columns(runs: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The leaderboard's cells: every split x (tier..., all) the runs' data declares, then the total."""
    splits, tiers = report_names(runs)
    return [*((s, t) for s in splits for t in (*tiers, "all")), ("all", "")]


def _header(runs: Sequence[dict[str, Any]]) -> list[str]:
    return ["judge", "setting", *(f"{s.capitalize()} {'avg' if t == 'all' else t}" for s, t in _columns(runs)[:-1]),
            "total"]


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


#: what each `--orders` value makes of a run, for the report's protocol sentence
PROTOCOLS = {
    "both": "tailorbench's protocol: every case judged with the human-preferred answer as A and as B, with the "
            "judge's own prompt and verdict parser",
    "random": "tailorbench's protocol with one order per case, drawn from the seed",
    "authors": "one order per case as the benchmark's authors draw it (--orders authors); with their prompt files "
               "and parser (the judge options in manifest.json) it is their protocol",
}


AUTHORS_HEADER = ["judge", "setting", "pairs", "accuracy", "chosen as A (n)", "chosen as B (n)", "position bias",
                  "predicted A / B", "failed parses", "failed calls"]


def _authors_row(run: Mapping[str, Any]) -> list[str]:
    a = run["authors_report"]
    return [str(run.get("judge", "")), str(run.get("setting", "")), str(a["total"]), pct(a["accuracy"]),
            f"{pct(a['pos_in_a_accuracy'])} ({a['pos_in_a_count']})",
            f"{pct(a['pos_in_b_accuracy'])} ({a['pos_in_b_count']})", pct(a["position_bias"]),
            f"{a['pred_a_count']} / {a['pred_b_count']}", str(a["failed_parses"]), str(a.get("failed_calls", 0))]


def protocol_sentence(runs: Sequence[Mapping[str, Any]]) -> str:
    """Which protocol made the runs and how it differs from a benchmark's authors' (docs/benchmarks.md,
    "Protocols")."""
    kinds = list(dict.fromkeys(str(r.get("orders") or "both") for r in runs))
    said = "; ".join(PROTOCOLS.get(k, k) for k in kinds)
    return (f"Protocol: {said}. A benchmark's authors may judge one order per case, with their own prompt and "
            "parser; docs/benchmarks.md says, per benchmark, which protocol gives their figure.")


#: rank of a row's training class in the leaderboard: honest rows first, in-training ones last
_CLASS_RANK = {None: 0, "unseen": 0, "persona-seen": 1, "in-training": 2}


def _views(runs: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str | None]]:
    """(metrics source, setting label, training class) per leaderboard row. A run of a judge that was trained on
    part of the data becomes one row per class (`persona | in-training`, `persona | unseen` ...): the inflated
    figure never shares a row with the honest one."""
    out: list[tuple[dict[str, Any], str, str | None]] = []
    for r in runs:
        rows = (r.get("training_overlap") or {}).get("rows") or {}
        if not rows:
            out.append((r, r["setting"], None))
            continue
        ratios = (r.get("training_overlap") or {}).get("by_length_ratio") or {}
        for kind, metrics in rows.items():
            out.append(({**r, "metrics": metrics, "by_length_ratio": ratios.get(kind, [])},
                        f"{r['setting']} | {kind}", kind))
    return out


def leaderboard_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    ordered = sorted(_views(runs), key=lambda v: (_CLASS_RANK.get(v[2], 0), -(v[0]["metrics"]["all"]["accuracy"]
                                                                            or 0.0)))
    columns = _columns(runs)
    return [[r["judge"], setting, *(_fmt(_cell(r, s, t)) for s, t in columns)] for r, setting, _ in ordered]


def _length_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    splits, _ = report_names(runs)
    for r, setting, _ in _views(runs):
        for split in (*splits, "all"):
            cell = _cell(r, split, "all")
            if not cell:
                continue
            view = cell["length"]
            rows.append([
                r["judge"], setting, split,
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
            ("–" if cost is None else f"{cost:.4f}") + _batch_cost(usage.get("batch")),
        ])
    return rows


def _batch_cost(batch: dict[str, Any] | None) -> str:
    """What a batch-mode run's provider batches cost, beside the synchronous price of the same answers."""
    if not batch or batch.get("cost_usd") is None:
        return ""
    return f" (batch API {batch['cost_usd']:.4f}; synchronous {batch.get('sync_cost_usd') or 0.0:.4f})"


def _overlap_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    splits, tiers = report_names(runs)
    for r in runs:
        for split in splits:
            for tier in tiers:
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
                 "rows). Accuracy by kind; `tailor data check` counts them. Definitions: "
                 "[docs/metrics.md](docs/metrics.md#breakdowns).")
_LENGTH_HEADER = ["judge", "setting", "split", "acc. chosen longer", "acc. chosen shorter", "equal length",
                  "length-balanced"]
_ACCOUNT_HEADER = ["judge", "setting", "status", "cases", "verdicts", "invalid", "abstained", "failed", "retries",
                   "truncated", "skipped rows", "strict acc.", "position consistency", "tokens in/out", "cost USD"]
_FAILURE_HEADER = ["judge", "setting", "failed verdicts", "allowed (--max-failed)", "run failed", "by kind",
                   "call errors (all attempts)", "first errors"]
_FAILURE_NOTE = ("A failed verdict is a call that never returned a usable answer (after every retry); such a run "
                 "exits with code 3 when their share exceeds `--max-failed`, and always when every verdict failed. "
                 "Invalid and abstained verdicts are the judge's answers: counted above, never here. Definitions: "
                 "[docs/cli.md](docs/cli.md#--max-failed-how-many-failed-calls-a-run-may-have).")


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


_METRICS_DOC = "docs/metrics.md"
_LEADERBOARD_NOTES = [
    "*{splits} {tiers}*: accuracy in % on that split × tier, with its 95% CI; a case scores "
    "the mean over its judged orders of 1 if the verdict picks the human-preferred answer, else 0.",
    "*avg*: the split's cases pooled (weighted by case count); *total*: every case. "
    f"Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#scoring-rule).",
]
_TRAINING_ROW_NOTE = (
    "*| in-training*: cases whose (question, chosen, rejected) was one of the judge's training pairs, so its figure "
    "measures memory, not judgment; *| persona-seen*: only the persona was in training; *| unseen*: neither. Only "
    f"the unseen row says how the judge does on new data ([{_METRICS_DOC}]({_METRICS_DOC}#training-overlap)).")
_LENGTH_NOTES = [
    "*acc. chosen longer / shorter*: accuracy on the cases where the human-preferred answer is the longer / the "
    "shorter one (characters), with their count; *equal length*: cases in neither group.",
    "*length-balanced*: the mean of those two accuracies (the `longer` baseline scores 50 by construction). "
    f"Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#length-controlled-view).",
]
_ACCOUNT_NOTES = [
    "*cases*: cases judged; *verdicts*: one per case and answer order; *invalid*: answers that could not be "
    "parsed; *abstained*: the judge declined (e.g. equal scores); *failed*: calls that never returned an answer; "
    "*retries*: calls repeated after an error; *truncated*: verdicts whose input was cut to the model's limit; "
    "*skipped rows*: data rows left out with `--skip-invalid`.",
    "*cost USD*: the verdicts' cost; in batch mode also what the run's provider batches cost (*batch API*) and "
    "what the same answers cost synchronously (*synchronous*; docs/models.md, \"Batch mode\").",
    "*strict acc.*: share of cases right in every judged order; *position consistency*: among cases with two "
    "valid verdicts, the share where the same answer was picked in both orders (a judge that always says A "
    "scores 0). "
    f"Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#scoring-rule).",
]
_RATIO_NOTES = [
    "*ratio*: len(chosen) / len(rejected), the length of the human-preferred answer over the other's, in "
    "characters; each cell is the accuracy of the cases in that bin (their count in brackets). A judge that "
    "reads only length sits near 0 on the left and near 100 on the right. "
    f"Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#length-controlled-view).",
]
_EXAMPLE_NOTES = [
    "*order*: AB shows the human-preferred answer as A, BA shows it as B; *picked*: the position the judge chose "
    "(– for an abstention, invalid or failed verdict); *output*: the judge's raw output, or its scores. Verdicts "
    "picked by a seeded hash of case and order, the same on every recomputation.",
]
_DATA_NOTE = (
    "*fingerprint*: sha256 of the source files (of the cases for data built in memory): equal fingerprints, same "
    "data; *labels*: human-labelled (annotators' majority), illustrative (set by construction: for trying the "
    "toolkit, not for conclusions) or not stated.")
_TRAINING_NOTE = (
    "*training pairs / personas*: distinct (question, chosen, rejected) and personas the judge was fitted on "
    "(sha256 of their normalised text); *in-training cases*: cases of this run whose pair, in either label "
    "order, is one of them (a pair repeated across tiers counts once per row); *persona-seen cases*: only the "
    f"persona is; *unseen cases*: neither ([{_METRICS_DOC}]({_METRICS_DOC}#training-overlap)).")
_TRAINING_HEADER = ["judge", "setting", "training data", "training pairs", "training personas", "in-training cases",
                    "persona-seen cases", "unseen cases"]
_DATA_HEADER = ["data", "layout", "rows", "fingerprint", "labels", "runs"]
_EXAMPLE_HEADER = ["judge", "setting", "verdict", "case", "split/tier", "order", "picked", "chars chosen/rejected",
                   "output"]


def _datasets(runs: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(provenance, runs) per distinct dataset fingerprint, in run order."""
    groups: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for r in runs:
        info = r.get("dataset") or {"name": r.get("data"), "fingerprint": r.get("dataset_fingerprint"),
                                    "labels": "not stated", "labels_note": "results.json predates provenance"}
        key = str(info.get("fingerprint"))
        groups.setdefault(key, (info, []))[1].append(r)
    return list(groups.values())


def different_data_warning(runs: Sequence[dict[str, Any]]) -> str | None:
    groups = _datasets(runs)
    if len(groups) < 2:
        return None
    names = "; ".join(f"{info.get('name')} ({str(info.get('fingerprint'))[:12]}: {len(rs)} run(s))"
                      for info, rs in groups)
    return (f"these runs used different data ({len(groups)} dataset fingerprints: {names}): their figures are not "
            "comparable with each other")


def _data_section(runs: Sequence[dict[str, Any]]) -> Section:
    rows, notes = [], []
    for info, members in _datasets(runs):
        rows.append([str(info.get("name")), str(info.get("layout") or "–"), str(info.get("rows") or "–"),
                     str(info.get("fingerprint") or "–"), str(info.get("labels")),
                     str(len(members)) if len(runs) > 1 else "1"])
        if info.get("labels_note"):
            notes.append(f"{info.get('name')}: {info.get('labels_note')}.")
    warning = different_data_warning(runs)
    before = [f"**Warning**: {warning}."] if warning else []
    return Section("Data", before, _DATA_HEADER, rows, [*notes, _DATA_NOTE])


def baseline_sentences(runs: Sequence[dict[str, Any]]) -> list[str]:
    """What the length baselines and a coin flip score on each run's own data (the judged cases of the run with
    the most cases per dataset): the figures every judge must beat."""
    out = []
    for info, members in _datasets(runs):
        run = max(members, key=lambda r: r["metrics"]["all"]["n"])
        total = run["metrics"]["all"]
        n = total["n"]
        if not n:
            continue
        longer, shorter = total["length"]["chosen_longer"]["n"], total["length"]["chosen_shorter"]["n"]
        per_split = ", ".join(
            f"{split.capitalize()} {pct(cell['length']['chosen_longer']['n'] / cell['n'])}%"
            for split in report_names([run])[0] if (cell := _cell(run, split, "all")) and cell["n"])
        out.append(
            f"Baselines on this data ({info.get('name')}, {n} judged cases): picking the longer answer scores "
            f"{pct(longer / n)}% ({per_split}), picking the shorter {pct(shorter / n)}%, a coin flip 50% in "
            f"expectation (the chosen answer is the longer one in {longer} cases, the shorter in {shorter}, "
            f"equal in {n - longer - shorter}). A judge must beat these to mean anything.")
    return out


def _training_section(runs: Sequence[dict[str, Any]]) -> Section | None:
    rows = []
    for r in runs:
        block = r.get("training_overlap")
        if not block:
            continue
        counts = block.get("counts") or {}
        rows.append([r["judge"], r["setting"], str(block.get("source") or "–"),
                     str(block.get("training_pairs", "–")), str(block.get("training_personas", "–")),
                     str(counts.get("in-training", "–")) + (f" ({block['swapped']} with labels swapped)"
                                                           if block.get("swapped") else ""),
                     str(counts.get("persona-seen", "–")), str(counts.get("unseen", "–"))])
    if not rows:
        return None
    return Section("Training data of the judges",
                   ["Judges that declare their training data (content hashes of each training persona and pair) are "
                    "checked against every case of the run before it starts; overlapping cases get their own rows "
                    "above."], _TRAINING_HEADER, rows, [_TRAINING_NOTE])


def _ratio_rows(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    runs = [{**r, "setting": setting} for r, setting, _ in _views(runs)]
    bins = next((r["by_length_ratio"] for r in runs if r.get("by_length_ratio")), None)
    if not bins:
        return [], []
    header = ["judge", "setting", *(f"ratio {b['bin']}" for b in bins)]
    rows = []
    for r in runs:
        cells = r.get("by_length_ratio") or []
        rows.append([r["judge"], r["setting"], *(f"{pct(c['accuracy'])} (n={c['n']})" for c in cells)])
    return header, rows


def _svg_ratio_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Accuracy by length-ratio bin, one line per leaderboard row (counts are in the table)."""
    runs = [{**r, "setting": setting} for r, setting, _ in _views(runs)]
    series = [(k, r) for k, r in enumerate(runs) if r.get("by_length_ratio")]
    if not series:
        return ""
    bins = [b["bin"] for b in series[0][1]["by_length_ratio"]]
    top, height, left, step = 20, 180, 40, 90
    width = left + step * len(bins) + 20
    legend = top + height + 34
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{legend + 16 * len(series)}" '
           'role="img"><title>accuracy by length ratio</title>']
    out.append(svg_percent_grid(left, width - 10, top, height))
    for k, label in enumerate(bins):
        out.append(f'<text x="{left + step * k + step / 2}" y="{top + height + 16}" font-size="11" '
                   f'text-anchor="middle">{html.escape(label)}</text>')
    for index, run in series:
        points = [(left + step * k + step / 2, top + height * (1 - c["accuracy"]), c)
                  for k, c in enumerate(run["by_length_ratio"]) if c["accuracy"] is not None]
        if len(points) > 1:
            path = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f},{y:.1f}" for j, (x, y, _) in enumerate(points))
            out.append(f'<path d="{path}" fill="none" stroke="{colour(index)}" stroke-width="2"/>')
        for x, y, c in points:
            tip = html.escape(f"{run['judge']} / {run['setting']} {c['bin']}: {pct(c['accuracy'])} (n={c['n']})")
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour(index)}"><title>{tip}</title>'
                       "</circle>")
    for row, (index, run) in enumerate(series):
        y = legend + 16 * row
        out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{colour(index)}"/>'
                   f'<text x="{left + 14}" y="{y}" font-size="11">'
                   f'{html.escape(_short(run["judge"] + " / " + run["setting"], 60))}</text>')
    out.append("</svg>")
    return "".join(out)


def _output_text(example: dict[str, Any]) -> str:
    if example.get("raw"):
        return " ".join(str(example["raw"]).split())[:200]
    if example.get("error"):
        return f"error: {' '.join(str(example['error']).split())[:180]}"
    scores = example.get("scores")
    if scores:
        return "scores " + ", ".join(f"{k} {v:.4g}" for k, v in scores.items())
    return "–"


def _example_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in runs:
        for kind, examples in (r.get("examples") or {}).items():
            for e in examples:
                status = e.get("status") or "ok"
                verdict = kind if status == "ok" else f"{kind} ({status})"
                if e.get("training") and e["training"] != "unseen":
                    verdict += f", {e['training']}"
                rows.append([r["judge"], r["setting"], verdict, str(e["case_id"]), f"{e.get('split')}/{e.get('tier')}",
                             str(e.get("order")), str(e.get("choice") or "–"),
                             f"{e.get('len_chosen')}/{e.get('len_rejected')}", _output_text(e)])
    return rows


def report_sections(runs: Sequence[dict[str, Any]]) -> list[Section]:
    """Every section of a pairwise report, in order; Markdown and HTML render the same list."""
    first = runs[0]
    splits, tiers = report_names(runs)
    leaderboard_after = [_LEADERBOARD_NOTES[0].format(splits=" / ".join(s.capitalize() for s in splits),
                                                      tiers=", ".join(tiers)), *_LEADERBOARD_NOTES[1:]]
    if any((r.get("training_overlap") or {}).get("rows") for r in runs):
        leaderboard_after.append(_TRAINING_ROW_NOTE)
    board = leaderboard_rows(runs)
    sections = [
        _data_section(runs),
        Section("Leaderboard", [
            f"Accuracy in % with 95% percentile-bootstrap CI ({first.get('n_boot', 1000)} resamples, unit: "
            f"{first.get('ci_unit', 'case')}); a case scores the mean over its judged orders; abstained, invalid "
            "and failed verdicts score 0. Averages are weighted by case counts.", protocol_sentence(runs)],
            _header(runs), board, leaderboard_after, figure=_svg_chart(runs),
            row_classes=["warn" if row[1].endswith("| in-training") else "" for row in board]),
    ]
    training = _training_section(runs)
    if training:
        sections.append(training)
    sections.append(Section("Length-controlled view", baseline_sentences(runs), _LENGTH_HEADER, _length_rows(runs),
                            _LENGTH_NOTES))
    ratio_header, ratio_rows = _ratio_rows(runs)
    if ratio_rows:
        sections.append(Section("Accuracy by length ratio", [], ratio_header, ratio_rows, _RATIO_NOTES,
                                figure=_svg_ratio_chart(runs), level=3))
    reliability = reliability_section(runs)
    if reliability:
        sections.append(reliability)
    authors = [r for r in runs if r.get("authors_report")]
    if authors:
        sections.append(Section("The authors' report fields", [
            "Runs judged in the one order per case the benchmark's authors draw (--orders authors), summarised as "
            "their script prints it (Personalized RewardBench's evaluation/pairwise.py): a verdict that is not a "
            "valid pick counts as A and as a failed parse; position bias is |accuracy with the chosen answer as A "
            "- accuracy with it as B|."], AUTHORS_HEADER, [_authors_row(r) for r in authors]))
    sections.append(Section("Accounting", [], _ACCOUNT_HEADER, _accounting_rows(runs), _ACCOUNT_NOTES))
    failures = _failure_rows(runs)
    if failures:
        sections.append(Section("Failed calls", [_FAILURE_NOTE], _FAILURE_HEADER, failures))
    overlap = _overlap_rows(runs)
    if overlap:
        sections.append(Section("Rows shared across tiers", [_OVERLAP_NOTE], _OVERLAP_HEADER, overlap))
    examples = _example_rows(runs)
    if examples:
        sections.append(Section("Example verdicts", [], _EXAMPLE_HEADER, examples, _EXAMPLE_NOTES))
    warnings = [f"`{r['judge']}`: {w}" for r in runs for w in r.get("warnings", [])]
    differ = different_data_warning(runs)
    if differ:
        warnings.insert(0, differ)
    if warnings:
        sections.append(Section("Warnings", [f"- {w}" for w in warnings]))
    if len(runs) == 1:
        sections += _single_run_details(first)
    return sections


def render_markdown(runs: Sequence[dict[str, Any]], title: str) -> str:
    parts = [f"# {title}"]
    for section in report_sections(runs):
        parts += ["", f"{'#' * section.level} {section.title}"]
        bullets = [p for p in section.before if p.startswith("- ")]
        paragraphs = [p for p in section.before if not p.startswith("- ")]
        for paragraph in paragraphs:
            parts += ["", paragraph]
        if bullets:
            parts += ["", *bullets]
        if section.header is not None:
            parts += ["", md_table(section.header, section.rows)]
        for note in section.after:
            parts += ["", note]
    return "\n".join(parts) + "\n"


_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_EMPH = re.compile(r"(\*\*|\*)([^*]+)\1")


def inline_html(text: str) -> str:
    """The little Markdown the notes use (`code`, *emphasis*, **strong**, [links](url)) as HTML."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    out = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', out)
    return _EMPH.sub(lambda m: f"<{'strong' if m.group(1) == '**' else 'em'}>{m.group(2)}"
                               f"</{'strong' if m.group(1) == '**' else 'em'}>", out)


def render_html(runs: Sequence[dict[str, Any]], title: str) -> str:
    return html_page(title, render_html_body(runs, title), REPORT_STYLE)


#: the report's own style beyond the page style (the viewer's stylesheet carries the same rule)
REPORT_STYLE = ".note{font-size:12px;color:#555;max-width:60em}"


def render_html_body(runs: Sequence[dict[str, Any]], title: str) -> str:
    """The report's HTML without its page: what report.html holds and what `tailor view` shows (one rendering)."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for section in report_sections(runs):
        tag = f"h{section.level}"
        body.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
        bullets = [p[2:] for p in section.before if p.startswith("- ")]
        body += [f"<p>{inline_html(p)}</p>" for p in section.before if not p.startswith("- ")]
        if bullets:
            body.append("<ul>" + "".join(f"<li>{inline_html(b)}</li>" for b in bullets) + "</ul>")
        body.append(section.figure)
        if section.header is not None:
            body.append(html_table(section.header, section.rows, section.row_classes))
        body += [f"<p class='note'>{inline_html(note)}</p>" for note in section.after]
    return "".join(body)


def _single_run_details(r: dict[str, Any]) -> list[Section]:
    users = r.get("users", {})
    sections = [Section("Users", [f"{users.get('n_users', 0)} users; per-user accuracy quantiles: "
                                  + ", ".join(f"{k} {pct(v)}" for k, v in users.get("quantiles", {}).items())])]
    hardest = users.get("hardest", [])
    if hardest:
        sections[0].header = ["hardest users", "cases", "accuracy"]
        sections[0].rows = [[h["user_id"], str(h["n"]), pct(h["accuracy"])] for h in hardest]
        sections[0].after = [f"*hardest users*: the lowest per-user accuracies among users with at least "
                             f"{users.get('min_cases_for_hardest', 3)} cases."]
    for attr, values in r.get("attributes", {}).items():
        rows = [[v, str(s["n"]), pct(s["accuracy"])] for v, s in list(values.items())[:12]]
        sections.append(Section(f"By {attr}", [], [attr, "cases", "accuracy"], rows, level=3))
    return sections


def _short(label: str, size: int = 28) -> str:
    """A legend label of at most `size` characters keeping both ends (the judge, and the row's class)."""
    return label if len(label) <= size else label[: size // 2 - 1] + "…" + label[-(size - size // 2):]


def _svg_chart(runs: Sequence[dict[str, Any]]) -> str:
    """Grouped bars per split x tier, one colour per leaderboard row (a run, or one training class of a run),
    whiskers at the CI bounds."""
    runs = [{**r, "setting": setting} for r, setting, _ in _views(runs)]
    splits, tiers = report_names(runs)
    cells = [(s, t) for s in splits for t in tiers if any(_cell(r, s, t) for r in runs)]
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
                   f'{html.escape(_short(run["judge"] + " / " + run["setting"]))}</text>')
    out.append("</svg>")
    return "".join(out)


def write_run_reports(runs: Sequence[dict[str, Any]], out: Path, title: str | None = None) -> None:
    """report.md and report.html of pairwise runs at `out` (the run kind's pages, `evaluate/run_kind.py`)."""
    write_reports(RUN_KINDS.get("pairwise"), runs, out, title)


def run_title(runs: Sequence[Mapping[str, Any]]) -> str:
    return f"{runs[0]['judge']} / {runs[0]['setting']}"
