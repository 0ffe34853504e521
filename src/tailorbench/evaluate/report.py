"""Reports: report.md (paper-style table, length-controlled view, accounting, breakdowns) and a
self-contained report.html (same tables plus a per-tier bar chart with CI whiskers, inline SVG)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.evaluate.headline import headline_section
from tailorbench.evaluate.metrics import report_names
from tailorbench.evaluate.reliability_report import reliability_section
from tailorbench.evaluate.report_charts import svg_chart, svg_ratio_chart
from tailorbench.evaluate.report_rows import (
    AUTHORS_HEADER,
    EXAMPLE_TEXT_HEADER,
    accounting_rows,
    authors_row,
    example_rows,
    example_text_rows,
    failure_rows,
    judged_cell,
    leaderboard_columns,
    leaderboard_header,
    leaderboard_rows,
    length_ratio_rows,
    length_rows,
    overlap_rows,
    protocol_sentence,
    result_cell,
)
from tailorbench.evaluate.results import EXAMPLE_TEXT_CHARS
from tailorbench.reporting import (
    Section,
    html_fold,
    html_page,
    html_table,
    inline_html,
    md_fold,
    md_table,
    pct,
    scroll_box,
)
from tailorbench.run_kinds import RUN_KINDS, write_reports

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


_METRICS_DOC = "docs/metrics.md"


def leaderboard_notes(runs: Sequence[dict[str, Any]], label: str) -> list[str]:
    """The definitions under the leaderboard, naming the columns it shows and the declared ones it leaves out."""
    columns = leaderboard_columns(runs)
    cells = [(s, t) for s, t in columns if s != "all" and t != "all"]
    splits, tiers = report_names(runs)
    notes = []
    if cells:
        shown_splits = list(dict.fromkeys(s.capitalize() for s, _ in cells))
        shown_tiers = list(dict.fromkeys(t for _, t in cells))
        notes.append(f"*{' / '.join(shown_splits)} {', '.join(shown_tiers)}*: accuracy in % on that split × tier, "
                     f"with its 95% CI; a case scores the mean over its judged orders of 1 if the verdict picks "
                     f"{label}, else 0.")
    pooled = "*avg*: the split's cases pooled (weighted by case count); " if any(t == "all" for _, t in columns) else ""
    notes.append(f"{pooled}*total*: every case. Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#scoring-rule).")
    held = {(s, t) for s in splits for t in tiers if judged_cell(runs, s, t)}
    no_split = [s for s in splits if not any(c[0] == s for c in held)]
    no_tier = [t for t in tiers if not any(c[1] == t for c in held)]
    left_out = [f"the data's declared {kind} without a judged case get no column ({', '.join(names)})"
                for kind, names in (("splits", no_split), ("tiers", no_tier)) if names]
    single = [s.capitalize() for s in splits if sum(c[0] == s for c in cells) == 1]
    if single and len(cells) > 1:
        left_out.append(f"a split judged in one tier only ({', '.join(single)}) shows that tier and no *avg*, "
                        "which would be the same cases")
    if len(held) == 1:
        left_out.append("every case is in {} {}: the total is that cell".format(*next(iter(held))))
    if left_out:
        notes.append("Columns: " + "; ".join(left_out) + ".")
    return notes


_TRAINING_ROW_NOTE = (
    "*| in-training*: cases whose (question, chosen, rejected) was one of the judge's training pairs, so its figure "
    "measures memory, not judgment; *| persona-seen*: only the persona was in training; *| unseen*: neither. Only "
    f"the unseen row says how the judge does on new data ([{_METRICS_DOC}]({_METRICS_DOC}#training-overlap)).")


_LENGTH_NOTES = [
    "*acc. chosen longer / shorter*: accuracy on the cases where the chosen answer is the longer / the "
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
    "*ratio*: len(chosen) / len(rejected), the length of the chosen answer over the other's, in "
    "characters; each cell is the accuracy of the cases in that bin (their count in brackets). A judge that "
    "reads only length sits near 0 on the left and near 100 on the right. "
    f"Definitions: [{_METRICS_DOC}]({_METRICS_DOC}#length-controlled-view).",
]


_EXAMPLE_NOTES = [
    "*order*: AB shows the chosen answer as A, BA shows it as B; *picked*: the position the judge chose "
    "(– for an abstention, invalid or failed verdict); *output*: the judge's raw output, or its scores. Verdicts "
    "picked by a seeded hash of case and order, the same on every recomputation. Folded below: each case's "
    f"persona, question, chosen and rejected answer, each text cut to {EXAMPLE_TEXT_CHARS} characters (…), read "
    "from the run's data when its results were computed.",
]


_DATA_NOTE = (
    "*fingerprint*: sha256 of the source files (of the cases for data built in memory): equal fingerprints, same "
    "data; *labels*: whose labels the data holds, as its layout declares: human-labelled (people chose between "
    "the answers), constructed (set by the benchmark's construction, not by people judging the pair), "
    "illustrative (set by construction: for trying the toolkit, not for conclusions) or not stated; *chosen*: "
    "the answer the data labels as the better one, which every figure of this report scores against (what it "
    "is for each dataset is said beside its name above).")


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
            notes.append(f"{info.get('name')} ({info.get('labels')}): {info.get('labels_note')}.")
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
            for split in report_names([run])[0] if (cell := result_cell(run, split, "all")) and cell["n"])
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


def report_sections(runs: Sequence[dict[str, Any]]) -> list[Section]:
    """Every section of a pairwise report, in order; Markdown and HTML render the same list."""
    first = runs[0]
    leaderboard_after = leaderboard_notes(runs, "the chosen answer (the data's label: see Data)")
    if any((r.get("training_overlap") or {}).get("rows") for r in runs):
        leaderboard_after.append(_TRAINING_ROW_NOTE)
    board = leaderboard_rows(runs)
    sections = [
        headline_section(runs, different_data_warning(runs)),
        _data_section(runs),
        Section("Leaderboard", [
            f"Accuracy in % with 95% percentile-bootstrap CI ({first.get('n_boot', 1000)} resamples, unit: "
            f"{first.get('ci_unit', 'case')}); a case scores the mean over its judged orders; abstained, invalid "
            "and failed verdicts score 0. Averages are weighted by case counts.", protocol_sentence(runs)],
            leaderboard_header(runs), board, leaderboard_after, figure=svg_chart(runs),
            row_classes=["warn" if row[1].endswith("| in-training") else "" for row in board]),
    ]
    training = _training_section(runs)
    if training:
        sections.append(training)
    sections.append(Section("Length-controlled view", baseline_sentences(runs), _LENGTH_HEADER, length_rows(runs),
                            _LENGTH_NOTES))
    ratio_header, ratio_rows = length_ratio_rows(runs)
    if ratio_rows:
        sections.append(Section("Accuracy by length ratio", [], ratio_header, ratio_rows, _RATIO_NOTES,
                                figure=svg_ratio_chart(runs), level=3))
    reliability = reliability_section(runs)
    if reliability:
        sections.append(reliability)
    authors = [r for r in runs if r.get("authors_report")]
    if authors:
        sections.append(Section("The authors' report fields", [
            "Runs judged in the one order per case the benchmark's authors draw (--orders authors), summarised as "
            "their script prints it (Personalized RewardBench's evaluation/pairwise.py): a verdict that is not a "
            "valid pick counts as A and as a failed parse; position bias is |accuracy with the chosen answer as A "
            "- accuracy with it as B|."], AUTHORS_HEADER, [authors_row(r) for r in authors]))
    sections.append(Section("Accounting", [], _ACCOUNT_HEADER, accounting_rows(runs), _ACCOUNT_NOTES))
    failures = failure_rows(runs)
    if failures:
        sections.append(Section("Failed calls", [_FAILURE_NOTE], _FAILURE_HEADER, failures))
    overlap = overlap_rows(runs)
    if overlap:
        sections.append(Section("Rows shared across tiers", [_OVERLAP_NOTE], _OVERLAP_HEADER, overlap))
    examples = example_rows(runs)
    if examples:
        section = Section("Example verdicts", [], _EXAMPLE_HEADER, examples, _EXAMPLE_NOTES)
        texts = example_text_rows(runs)
        if texts:
            section.fold = (f"The cases' texts: persona, question and both answers of {len(texts)} example verdicts "
                            f"(each text cut to {EXAMPLE_TEXT_CHARS} characters)")
            section.fold_header, section.fold_rows = EXAMPLE_TEXT_HEADER, texts
        sections.append(section)
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
        if section.fold_header is not None:
            parts += ["", md_fold(section.fold, section.fold_header, section.fold_rows)]
        for note in section.after:
            parts += ["", note]
    return "\n".join(parts) + "\n"


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
        body.append(scroll_box(section.figure))
        if section.header is not None:
            body.append(html_table(section.header, section.rows, section.row_classes))
        if section.fold_header is not None:
            body.append(html_fold(section.fold, section.fold_header, section.fold_rows))
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


def write_run_reports(runs: Sequence[dict[str, Any]], out: Path, title: str | None = None) -> None:
    """report.md and report.html of pairwise runs at `out` (the run kind's pages, `evaluate/run_kind.py`)."""
    write_reports(RUN_KINDS.get("pairwise"), runs, out, title)


def run_title(runs: Sequence[Mapping[str, Any]]) -> str:
    return f"{runs[0]['judge']} / {runs[0]['setting']}"
