"""Per-stage reports (Markdown + self-contained HTML with an inline SVG bar chart) and the combined summary.

Why one module: every stage report is "a few tables + one bar chart with CI whiskers + the alignment counts",
so each stage's part (`extraction_parts`, `relevance_parts`, ...) only says which rows of its JSON object to
show, built from the shared pieces of `tailorbench/reporting.py` (`Table`, `f3`, `with_ci`, `svg_bars`); the
stage modules compute the JSON objects and never import this one.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailorbench.agreement.admissibility_table import headers, render_rows
from tailorbench.files import MARKER, Output, as_output
from tailorbench.reporting import (
    Bar,
    Table,
    f3,
    html_page,
    html_table,
    md_table,
    relative_change,
    scroll_box,
    svg_bars,
    with_ci,
)
from tailorbench.threestage.extraction.analysis import CATEGORIES
from tailorbench.threestage.headline import Line, Linker, definitions, html_lines, md_lines
from tailorbench.threestage.headline import headline as stage_headline
from tailorbench.threestage.headline import html_link as headline_html_link
from tailorbench.threestage.headline import md_link as headline_md_link

# --- shared by the stage reports ----------------------------------------------------------------------


def alignment_rows(alignment: dict[str, Any] | None, missing: dict[str, int]) -> list[list[str]]:
    """The rows of "What did not line up": missing ratings and the `alignment` block of a stage report."""
    rows = [[f"missing: {k}", str(v)] for k, v in missing.items()]
    if not alignment:
        return rows
    for rater, n in alignment.get("model_votes_without_human", {}).items():
        rows.append([f"votes of {rater} for items no human rated", str(n)])
    for rater, n in alignment.get("user_id_mismatches", {}).items():
        rows.append([f"votes of {rater} whose index matches a human item under another user_id", str(n)])
    mm = alignment.get("attribute_text_mismatch", {})
    rows.append(["items whose attribute texts differ between raters", str(mm.get("items", 0))])
    rows.append(["attributes not shared by all raters of their item", str(mm.get("attributes_not_shared", 0))])
    for key in ("judgments_without_attribute", "attributes_without_judgment", "lines_for_unknown_items"):
        if alignment.get(key):
            rows.append([key.replace("_", " "), str(alignment[key])])
    return rows


def admissibility_parts(adm: dict[str, Any] | None, who: str) -> tuple[list[Table], list[str]]:
    """The tables and sentences of a stage report's `admissibility` block (none when the report has none)."""
    if not adm:
        return [], []
    judge_rows, human_rows, sentences = render_rows(adm)
    judge_header, human_header = headers(adm)
    o = adm["options"]
    return [(f"Human admissibility of the {who} (alt-test: epsilon={o['epsilon']}, Benjamini-Yekutieli q={o['q']}, "
             f">= {o['min_items']} shared items per human, {o['alignment']})", judge_header, judge_rows),
            ("Alt-test per left-out human", human_header, human_rows)], sentences


# --- stage 1 -------------------------------------------------------------------------------------------


def extraction_parts(r: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    """(tables, svg charts, notes) of the stage-1 report."""

    def rows(block: dict[str, Any]) -> list[list[str]]:
        return [[k, str(v["n"]), f3(v["accepted"]), f3(v["uncertain"]), f3(v["rejected"]), f3(v["problematic"]),
                 str(v["no_majority"])] for k, v in block.items()]

    head = ["accepted", "uncertain", "rejected", "problematic", "no majority (tie)"]
    a = r["agreement"]
    agree_rows = [["raters", str(a["n_raters"])], ["percent agreement", f3(a["percent_agreement"])],
                  ["Fleiss' kappa", with_ci(a["fleiss_kappa"].get("value"), a["fleiss_kappa"].get("ci"))],
                  ["Krippendorff's alpha (ordinal)", with_ci((a["krippendorff_alpha_ordinal"] or {}).get("value"),
                                                             (a["krippendorff_alpha_ordinal"] or {}).get("ci"))],
                  ["Cohen's kappa, mean over human pairs", with_ci((a["human_human_cohen_kappa"] or {}).get("value"),
                                                                   (a["human_human_cohen_kappa"] or {}).get("ci"))]]
    tax_rows = [[rater, *(str(e["counts"][c]) for c in CATEGORIES), str(e["invalid"]), str(e["not_rejected"])]
                for rater, e in r["taxonomy"].items()]
    tables = [
        ("By extractor (human majority per attribute)", ["extractor", "attributes", *head], rows(r["by_extractor"])),
        ("By source", ["source", "attributes", *head], rows(r["by_source"])),
        ("Inter-annotator agreement (rejected < uncertain < accepted)", ["statistic", "value"], agree_rows),
        ("Error taxonomy of rejected attributes", ["categoriser", *CATEGORIES, "invalid", "not rejected by majority"],
         tax_rows),
        ("What did not line up", ["what", "count"], alignment_rows(r.get("alignment"), r["missing_ratings"])),
    ]
    relative = r["real_vs_synthetic_problematic_relative"]
    if relative is not None:
        tables.insert(2, ("Real relative to synthetic conversations", ["figure", "value"],
                          [[REAL_VS_SYNTHETIC, relative_change(relative)]]))
    bars: list[Bar] = [(f"{k}: problematic", v["problematic"], None, None) for k, v in r["by_source"].items()]
    return tables, [svg_bars(bars, 0.0, 1.0, "Share of problematic attributes by source")], list(r["notes"])


#: the row naming the relative change of the problematic share (real / synthetic - 1, in words: "67% fewer")
REAL_VS_SYNTHETIC = "problematic attributes in real conversations, relative to synthetic ones"


# --- stage 2 -------------------------------------------------------------------------------------------


def relevance_parts(r: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    """(tables, svg charts, notes) of the stage-2 report."""
    vs = r["vs_human_majority"]
    raters = [
        [name, e["group"], str(e["n"]), f3(e["share_relevant"]),
         with_ci(vs.get(name, {}).get("precision"), vs.get(name, {}).get("precision_ci")),
         with_ci(vs.get(name, {}).get("recall"), vs.get(name, {}).get("recall_ci")),
         with_ci(vs.get(name, {}).get("f1"), vs.get(name, {}).get("f1_ci"))]
        for name, e in r["raters"].items()
    ]
    groups = [
        [kind, str(d["n_pairs"]), with_ci(r["group_kappa"][kind], d.get("ci"))]
        for kind, d in r["group_kappa_detail"].items()
    ]
    pairs = [[p["a"], p["b"], p["type"], str(p["n"]), with_ci(p["kappa"], p["ci"])] for p in r["pairwise_kappa"]]
    tables: list[Table] = [
        ("Raters vs the strict human majority (relevant = positive)",
         ["rater", "group", "items", "share relevant", "precision", "recall", "F1"], raters),
        (f"Cohen's kappa by pair type (plain mean over pairs sharing >= {r['min_shared']} items)",
         ["pair type", "pairs", "kappa"], groups),
        ("Cohen's kappa per rater pair", ["a", "b", "type", "shared items", "kappa"], pairs),
    ]
    adm_tables, sentences = admissibility_parts(r.get("admissibility"), "models")
    tables += adm_tables
    tables.append(("What did not line up", ["what", "count"], alignment_rows(r.get("alignment"),
                                                                              r["missing_ratings"])))
    bars: list[Bar] = [(n, e.get("f1"), *(e.get("f1_ci") or [None, None])) for n, e in vs.items()]
    charts = [svg_bars(bars, 0.0, 1.0, "F1 vs the human majority (95% CI)")]
    share = r["human_majority"]["share_relevant"]
    notes = [*(f"Admissibility: {s}" for s in sentences),
             f"Human majority marks {f3(share)} of items relevant ({r['human_majority']['n_ties']} ties, counted as "
             "not relevant).", *r["notes"]]
    return tables, charts, notes


def relevance_markdown(r: dict[str, Any]) -> str:
    return render_markdown("Stage 2 — attribute relevance", *relevance_parts(r))


# --- stage 3 -------------------------------------------------------------------------------------------


def incorporation_parts(r: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    """(tables, svg charts, notes) of the stage-3 report."""
    h = r["humans"]
    rows = [["humans (per item mean)", str(h["per_item_mean"]["n"]),
             with_ci(h["per_item_mean"]["mean_rating"], h["per_item_mean"].get("mean_rating_ci")),
             with_ci(h["per_item_mean"]["share_no_better"], h["per_item_mean"].get("share_no_better_ci")), "–",
             with_ci(h["mention_uplift"].get("uplift"), h["mention_uplift"].get("uplift_ci"))]]
    for name, e in r["judges"].items():
        rows.append([name, str(e["n"]), with_ci(e["mean_rating"], e.get("mean_rating_ci")),
                     with_ci(e["share_no_better"], e.get("share_no_better_ci")),
                     with_ci(e["inflation"], e.get("inflation_ci")),
                     with_ci(e["mention_uplift"].get("uplift"), e["mention_uplift"].get("uplift_ci"))])
    corr = [[n, e["kind"], str(e["n"]), with_ci(e.get("spearman"), e.get("spearman_ci")),
             with_ci(e.get("kendall"), e.get("kendall_ci"))] for n, e in r["correlation_with_humans"].items()]
    cond = [[c, str(e["n"]), with_ci(e["mean_rating"], e.get("mean_rating_ci")),
             with_ci(e["share_no_better"], e.get("share_no_better_ci"))] for c, e in r["by_condition"].items()]
    acct = [[f"missing: {k}", str(v)] for k, v in r["missing_ratings"].items()]
    acct += [[f"ratings of {k} for unknown items", str(v)] for k, v in r["ratings_for_unknown_items"].items()]
    tables = [
        ("Ratings (-2..2: personalized vs generic; +3 for the 1..5 scale)",
         ["rater", "items", "mean rating", "share no better", "inflation vs humans", "mention uplift"], rows),
        ("Correlation with the mean human rating", ["rater", "kind", "items", "Spearman", "Kendall tau-b"], corr),
        ("Humans by answer condition", ["condition", "items", "mean rating", "share no better"], cond),
    ]
    adm_tables, sentences = admissibility_parts(r.get("admissibility"), "judges")
    tables += [*adm_tables, ("Accounting", ["what", "count"], acct)]
    bars: list[Bar] = [("humans", h["per_item_mean"]["share_no_better"],
                        *(h["per_item_mean"].get("share_no_better_ci") or [None, None]))]
    bars += [(n, e["share_no_better"], *(e.get("share_no_better_ci") or [None, None])) for n, e in r["judges"].items()]
    share = r["mention_detector"]["share_items_with_mention"]
    notes = [*(f"Admissibility: {s}" for s in sentences),
             f"Share of personalized answers that explicitly mention their attribute: {f3(share)}.", *r["notes"]]
    return tables, [svg_bars(bars, 0.0, 1.0, "Share rated no better than generic (95% CI)")], notes


# --- interventions ------------------------------------------------------------------------------------


def _vs_rows(block: dict[str, Any]) -> list[list[str]]:
    gains = block.get("gain_of_reference_over", {})
    rows = []
    for name, e in block["raters"].items():
        g = gains.get(name, {})
        rows.append([name, str(e["n"]), f3(e["share_positive"]), with_ci(e.get("precision"), e.get("precision_ci")),
                     with_ci(e.get("recall"), e.get("recall_ci")), with_ci(e.get("f1"), e.get("f1_ci")),
                     with_ci(e.get("kappa"), e.get("kappa_ci")), f3(e.get("mean_kappa_with_humans")),
                     with_ci(g.get("f1_gain"), g.get("f1_gain_ci")) if g else "–",
                     with_ci(g.get("kappa_gain"), g.get("kappa_gain_ci")) if g else "–"])
    return rows


def _vs_header(positive: str, reference: str) -> list[str]:
    return ["rater", "items", f"share {positive}", "precision", "recall", "F1", "kappa vs majority",
            "mean kappa with humans", f"F1 gain of {reference}", f"kappa gain of {reference}"]


def _split_rows(r: dict[str, Any]) -> list[list[str]]:
    sp, fit = r["split"], r["fit"]
    rows = [["held-out users", ", ".join(sp["heldout_users"])], ["training users", ", ".join(sp["train_users"])],
            ["seed", str(sp["seed"])], ["training rows", str(sp["n_train"])], ["held-out rows", str(sp["n_heldout"])],
            ["threshold", f3(r["threshold"])], ["encoder", str(r["encoder"].get("encoder"))],
            ["fit", f"{fit['iterations']} Newton iterations, l2={fit['l2']}, class-balanced={fit['balanced']}"]]
    rows += [[k.replace("_", " "), str(v)] for k, v in sp.items()
             if k not in ("heldout_users", "train_users", "seed", "n_train", "n_heldout")]
    return rows


def verifier_parts(r: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    a = r["acceptance"]
    acc = [["all extracted attributes (before)", str(a["n"]), with_ci(a["before"], a["before_ci"])],
           ["attributes the verifier keeps (after)", "–", with_ci(a["after"], a["after_ci"])],
           ["gain (after - before)", "–", with_ci(a["gain"], a["gain_ci"])],
           ["share kept", "–", with_ci(a["share_kept"], a["share_kept_ci"])],
           ["share of accepted attributes kept", "–", with_ci(a["accepted_kept"], a["accepted_kept_ci"])]]
    acc += [[f"kept among attributes the majority finds {lab}", "–", f3(v)]
            for lab, v in a["kept_share_by_majority"].items()]
    tables: list[Table] = [
        ("Acceptance by the human majority, held-out users", ["figure", "attributes", "value [95% CI]"], acc),
        ("Verifier vs the human majority (accepted = positive)", _vs_header("accepted", "verifier"),
         _vs_rows(r["vs_human_majority"])),
        ("Training and split", ["what", "value"], _split_rows(r)),
    ]
    bars: list[Bar] = [("before: all attributes", a["before"], *a["before_ci"]),
                       ("after: kept by the verifier", a["after"], *a["after_ci"])]
    notes = ["Acceptance = share of attributes the human majority accepts; uncertain and rejected count as not "
             "accepted. Held-out users never contributed a training label.", *r["notes"]]
    return tables, [svg_bars(bars, 0.0, 1.0, "Acceptance of attributes, held-out users (95% CI)")], notes


def relevance_classifier_parts(r: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    h = r["heldout"]
    tables: list[Table] = [
        ("Held-out users vs the strict human majority (relevant = positive)", _vs_header("relevant", h["reference"]),
         _vs_rows(h)),
        ("Training and split", ["what", "value"],
         [*_split_rows(r), ["cosine threshold (best F1 on training users)", f3(r["cosine_threshold"]["value"])]]),
    ]
    f1_bars: list[Bar] = [(n, e.get("f1"), *(e.get("f1_ci") or [None, None])) for n, e in h["raters"].items()]
    k_bars: list[Bar] = [(n, e.get("kappa"), *(e.get("kappa_ci") or [None, None])) for n, e in h["raters"].items()]
    notes = [f"Human majority marks {f3(h['share_positive_majority'])} of the {h['n_items']} held-out attributes "
             "relevant.", *r["notes"]]
    return tables, [svg_bars(f1_bars, 0.0, 1.0, "F1 vs the human majority, held-out users (95% CI)"),
                    svg_bars(k_bars, -1.0, 1.0, "Cohen's kappa vs the human majority, held-out users (95% CI)")], notes


# --- rendering ----------------------------------------------------------------------------------------


def render_markdown(title: str, tables: Sequence[Table], charts: Sequence[str], notes: Sequence[str],
                    page: Page | None = None) -> str:
    """A report page: the title, `page`'s headline (a page over several stage reports), the tables, `page`'s
    definitions, the notes (charts are HTML only)."""
    parts = [f"# {title}", ""]
    if page is not None:
        parts += ["## Headline", "", *md_lines(page.headline, page.md_link), "", "## Stage reports", "",
                  *(f"- [{TITLES[s]}]({page.md_link(s)})" for s in page.stages), ""]
    for heading, header, rows in tables:
        parts += [f"## {heading}", "", md_table(header, rows) if rows else "_none_", ""]
    if page is not None:
        parts += ["## Definitions", "", *md_lines(page.definitions, page.md_link), ""]
    if notes:
        parts += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    return "\n".join(parts)


@dataclass(frozen=True)
class Page:
    """What a page over several stage reports adds to its tables: its headline and definitions (threestage/
    headline.py), each line linking its stage report where `md_link` / `html_link` place it."""

    headline: Sequence[Line]
    definitions: Sequence[Line]
    #: the stage reports the page lists as links (`TITLES`' stems)
    stages: Sequence[str]
    md_link: Linker = headline_md_link
    html_link: Linker = headline_html_link

    @classmethod
    def of(cls, reports: dict[str, dict[str, Any]], md_link: Linker = headline_md_link,
           html_link: Linker = headline_html_link) -> Page:
        return cls(stage_headline(reports), definitions(reports), [s for s in STAGES if s in reports], md_link,
                   html_link)


def render_html(title: str, tables: Sequence[Table], charts: Sequence[str], notes: Sequence[str],
                page: Page | None = None) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    if page is not None:
        body.append("<h2>Headline</h2>" + html_lines(page.headline, page.html_link))
        links = "".join(f'<li><a href="{html.escape(page.html_link(s))}">{html.escape(TITLES[s])}</a></li>'
                        for s in page.stages)
        body.append(f"<h2>Stage reports</h2><ul>{links}</ul>")
    for k, (heading, header, rows) in enumerate(tables):
        body.append(f"<h2>{html.escape(heading)}</h2>" + (html_table(header, rows) if rows else "<p>none</p>"))
        if k == 0:  # the charts follow the first table (a stage report's headline)
            body += [scroll_box(chart) for chart in charts]
    if not tables:
        body += [scroll_box(chart) for chart in charts]
    if page is not None:
        body.append("<h2>Definitions</h2>" + html_lines(page.definitions, page.html_link))
    if notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    return html_page(title, "".join(body))


TITLES = {
    "extraction": "Stage 1 — attribute extraction",
    "relevance": "Stage 2 — attribute relevance",
    "incorporation": "Stage 3 — incorporation",
    "verifier": "Stage 1 intervention — trained verifier (held-out users)",
    "relevance_classifier": "Stage 2 intervention — trained relevance classifier (held-out users)",
}
#: report stems `tailor stages summary` looks for, in order
STAGES = tuple(TITLES)


def stage_parts(stage: str, report: dict[str, Any]) -> tuple[list[Table], list[str], list[str]]:
    """(tables, svg charts, notes) of a stage report, the headline first: the stage's rows of the summary (its
    headline figures with their 95% CI, each also in a table below)."""
    if stage == "relevance":
        tables, charts, notes = relevance_parts(report)
    elif stage == "extraction":
        tables, charts, notes = extraction_parts(report)
    elif stage == "incorporation":
        tables, charts, notes = incorporation_parts(report)
    elif stage == "verifier":
        tables, charts, notes = verifier_parts(report)
    elif stage == "relevance_classifier":
        tables, charts, notes = relevance_classifier_parts(report)
    else:
        raise ValueError(f"unknown stage {stage!r}")
    headline = [row[1:] for row in summary_rows({stage: report})]
    return [("Headline", ["figure", "value [95% CI]", "detail"], headline), *tables], charts, notes


#: what a report directory holds: the stage reports and the summary (`is_report_dir`)
REPORT_FILES = frozenset({*(f"{stage}.{ext}" for stage in STAGES for ext in ("json", "md", "html")),
                          "summary.md", "summary.html"})


def is_report_dir(folder: Path) -> bool:
    """A folder holding nothing but stage reports and their summary (one stage's JSON at least): a report
    directory written before folders carried the marker, or one gathered by hand for `tailor stages summary`.
    Its files are the verbs' own, so a rerun may replace them (the output rule's `ours`)."""
    names = {entry.name for entry in folder.iterdir() if entry.name != MARKER}
    return bool(names) and names <= REPORT_FILES and any(f"{stage}.json" in names for stage in STAGES)


def write_stage_report(stage: str, report: dict[str, Any], out: Output | str | Path) -> None:
    """`<stage>.json`, `<stage>.md` and `<stage>.html` in `out` (the JSON is what every number comes from); a
    path is claimed as a report directory (a folder of stage reports is the verbs' own)."""
    dest = as_output(out, directory=True, ours=is_report_dir)
    parts = stage_parts(stage, report)
    dest.write_json(f"{stage}.json", report)
    dest.write_text(f"{stage}.md", render_markdown(TITLES[stage], *parts))
    dest.write_text(f"{stage}.html", render_html(TITLES[stage], *parts))


def admissibility_summary(stage: str, report: dict[str, Any]) -> list[list[str]]:
    """One summary row per judge of a stage report's `admissibility`: its sentence and winning rate."""
    return [[stage, f"admissibility: {name}", e["sentence"],
             f"winning rate={f3(e['alt_test']['winning_rate'])}, humans tested={e['alt_test']['n_tested']}"]
            for name, e in (report.get("admissibility") or {}).get("judges", {}).items()]


def summary_rows(reports: dict[str, dict[str, Any]]) -> list[list[str]]:
    """One line per headline figure of each stage, the numbers the paper leads with."""
    rows: list[list[str]] = []
    ex = reports.get("extraction")
    if ex:
        for src, v in ex["by_source"].items():
            rows.append(["1 extraction", f"problematic attributes ({src})", f3(v["problematic"]), f"n={v['n']}"])
        if ex.get("real_vs_synthetic_problematic_relative") is not None:
            relative = relative_change(ex["real_vs_synthetic_problematic_relative"])
            rows.append(["1 extraction", REAL_VS_SYNTHETIC, relative, ""])
        fk = ex["agreement"]["fleiss_kappa"]
        rows.append(["1 extraction", "Fleiss' kappa (humans)", with_ci(fk.get("value"), fk.get("ci")), ""])
    rel = reports.get("relevance")
    if rel:
        for kind, value in rel["group_kappa"].items():
            d = rel["group_kappa_detail"][kind]
            rows.append(["2 relevance", f"Cohen's kappa {kind}", with_ci(value, d.get("ci")), f"pairs={d['n_pairs']}"])
        for name, e in rel["raters"].items():
            if e["group"] != "human":
                v = rel["vs_human_majority"].get(name, {})
                rows.append(["2 relevance", f"F1 vs humans: {name}", with_ci(v.get("f1"), v.get("f1_ci")),
                             f"share relevant={f3(e['share_relevant'])}"])
        rows.append(["2 relevance", "share relevant (human majority)", f3(rel["human_majority"]["share_relevant"]),
                     ""])
        rows += admissibility_summary("2 relevance", rel)
    inc = reports.get("incorporation")
    if inc:
        h = inc["humans"]["per_item_mean"]
        rows.append(["3 incorporation", "no better than generic (humans)",
                     with_ci(h["share_no_better"], h.get("share_no_better_ci")), f"n={h['n']}"])
        for name, e in inc["judges"].items():
            rows.append(["3 incorporation", f"inflation {name}", with_ci(e["inflation"], e.get("inflation_ci")), ""])
        rows += admissibility_summary("3 incorporation", inc)
        for name, e in inc["correlation_with_humans"].items():
            rows.append(["3 incorporation", f"Spearman {name}", with_ci(e.get("spearman"), e.get("spearman_ci")),
                         f"n={e['n']}"])
    ver = reports.get("verifier")
    if ver:
        a = ver["acceptance"]
        rows.append(["1 intervention", "acceptance: all attributes -> kept by the verifier (held-out users)",
                     f"{f3(a['before'])} -> {f3(a['after'])}", f"gain {with_ci(a['gain'], a['gain_ci'])}"])
    rc = reports.get("relevance_classifier")
    if rc:
        h = rc["heldout"]
        for name, e in h["raters"].items():
            rows.append(["2 intervention", f"held-out F1 / kappa vs humans: {name}",
                         f"{with_ci(e.get('f1'), e.get('f1_ci'))} / {f3(e.get('kappa'))}", f"n={e['n']}"])
    return rows


def write_summary(reports: dict[str, dict[str, Any]], out: Output | str | Path, illustrative: bool = False) -> None:
    """summary.md / summary.html: the headline figures of every stage present, linking the stage reports (a path
    is claimed as a report directory, as in `write_stage_report`)."""
    notes = ["Computed on the bundled example study: its labels are invented, so every figure here is illustrative "
             "only."] if illustrative else []
    dest = as_output(out, directory=True, ours=is_report_dir)
    dest.write_text("summary.md", render_markdown(SUMMARY_TITLE, summary_tables(reports), [], notes, Page.of(reports)))
    dest.write_text("summary.html", render_html(SUMMARY_TITLE, summary_tables(reports), [], notes, Page.of(reports)))


SUMMARY_TITLE = "Three-stage human-centered evaluation — summary"


def summary_tables(reports: dict[str, dict[str, Any]]) -> list[Table]:
    """The table of a page over several stage reports: every stage's headline figures."""
    return [("Headline figures", ["stage", "figure", "value [95% CI]", "detail"], summary_rows(reports))]
