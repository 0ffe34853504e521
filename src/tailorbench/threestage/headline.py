"""The headline and the definitions of a page over several stage reports (`tailor stages summary`, the study
report, `tailor report` of a folder of stage reports): one sentence per stage with its headline figures and their
95% CI, written as the tables below write them (`f3`, `with_ci`), so every number of the headline is also in a
table of the page; and what every figure means, each linking the stage report that holds it.

Why a module of its own: the summary, the study report and the run kind's report are three pages of the same
figures, and a figure must read the same on each (one sentence builder, one list of definitions)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from tailorbench.reporting import f3, relative_change, with_ci

#: one line of a headline or a definitions block: its text (Markdown-free) and the stage report it links, if any
Line = tuple[str, str | None]

#: where a stage report is, as a page links it (`extraction` -> `extraction.md`)
Linker = Callable[[str], str]


def md_link(stage: str) -> str:
    """A stage report beside the page: its Markdown file."""
    return f"{stage}.md"


def html_link(stage: str) -> str:
    """A stage report beside the page: its HTML file."""
    return f"{stage}.html"


def _extraction(r: dict[str, Any]) -> str:
    by_source = r["by_source"]
    parts = [f"{f3(v['problematic'])} of the {v['n']} attributes from {src} conversations problematic"
             for src, v in by_source.items()]
    said = f"the human majority finds {' and '.join(parts)}" if parts else "no attribute has a human majority"
    relative = r.get("real_vs_synthetic_problematic_relative")
    if relative is not None:
        said += f" ({relative_change(relative)} problematic attributes in real conversations than in synthetic ones)"
    fk = r["agreement"]["fleiss_kappa"]
    kappa = with_ci(fk.get("value"), fk.get("ci"))
    return f"Stage 1, attribute extraction: {said}; annotators agree with Fleiss' kappa {kappa}."


def _admissibility(r: dict[str, Any]) -> list[str]:
    return [f"{name} {e['sentence']}" for name, e in (r.get("admissibility") or {}).get("judges", {}).items()]


def _relevance(r: dict[str, Any]) -> str:
    kappas = [f"{kind} {with_ci(value, r['group_kappa_detail'][kind].get('ci'))}"
              for kind, value in r["group_kappa"].items()]
    vs = r["vs_human_majority"]
    models = [name for name, e in r["raters"].items()
              if e["group"] != "human" and vs.get(name, {}).get("f1") is not None]
    said = f"Stage 2, attribute relevance: Cohen's kappa {', '.join(kappas)}"
    if models:
        best = max(models, key=lambda name: vs[name]["f1"])
        said += (f"; best model against the human majority: {best}, F1 "
                 f"{with_ci(vs[best]['f1'], vs[best].get('f1_ci'))}")
    adm = _admissibility(r)
    if adm:
        said += f"; admissibility: {', '.join(adm)}"
    return said + "."


def _incorporation(r: dict[str, Any]) -> str:
    h = r["humans"]["per_item_mean"]
    said = (f"Stage 3, incorporation: people rate the personalized answer no better than the generic one on "
            f"{with_ci(h['share_no_better'], h.get('share_no_better_ci'))} of the {h['n']} items (an A/B task's "
            "attribute)")
    inflation = [f"{name} {with_ci(e['inflation'], e.get('inflation_ci'))}" for name, e in r["judges"].items()]
    if inflation:
        said += f"; inflation: {', '.join(inflation)}"
    spearman = [f"{name} {with_ci(e.get('spearman'), e.get('spearman_ci'))}"
                for name, e in r["correlation_with_humans"].items()]
    if spearman:
        said += f"; Spearman with people: {', '.join(spearman)}"
    adm = _admissibility(r)
    if adm:
        said += f"; admissibility: {', '.join(adm)}"
    return said + "."


def _verifier(r: dict[str, Any]) -> str:
    a = r["acceptance"]
    return (f"Stage 1 intervention, the trained verifier (held-out users): acceptance {f3(a['before'])} of all "
            f"attributes, {f3(a['after'])} of those it keeps (gain {with_ci(a['gain'], a['gain_ci'])}).")


def _relevance_classifier(r: dict[str, Any]) -> str:
    raters = [f"{name} {with_ci(e.get('f1'), e.get('f1_ci'))}" for name, e in r["heldout"]["raters"].items()]
    return f"Stage 2 intervention, the trained relevance classifier (held-out users): F1 {', '.join(raters)}."


_SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    "extraction": _extraction, "relevance": _relevance, "incorporation": _incorporation, "verifier": _verifier,
    "relevance_classifier": _relevance_classifier}


def headline(reports: dict[str, dict[str, Any]]) -> list[Line]:
    """One sentence per stage report (in the stages' order), its stage report linked."""
    return [(_SENTENCES[stage](reports[stage]), stage) for stage in _SENTENCES if stage in reports]


_CI = ("*95% CI*: a percentile bootstrap interval resampling the stage's items (its report's `bootstrap` block: "
       "resamples and seed); a figure without brackets has none")
_DEFINITIONS: dict[str, list[str]] = {
    "extraction": [
        "*problematic attributes*: the share of a source's extracted attributes that the majority of annotators "
        "labels uncertain or rejected (an attribute without a majority counts as no majority, not problematic); "
        "*fewer / more in real conversations*: the real share over the synthetic one, minus one, in words",
        "*Fleiss' kappa*: the annotators' agreement on accepted / uncertain / rejected beyond what chance gives "
        "(1 = they always agree, 0 = as chance, below 0 = less than chance)"],
    "relevance": [
        "*Cohen's kappa human-human / human-model / model-model*: the plain mean of Cohen's kappa (relevant or not) "
        "over the pairs of raters of that type that share enough items; *undefined* when no such pair does "
        "(pairs=0: e.g. model-model with one model)",
        "*F1 vs humans*: a model's F1 on relevant = positive, the strict majority of people as the truth; "
        "*share relevant*: the share of items a rater (or the human majority) marks relevant"],
    "incorporation": [
        "*item*: one attribute of one A/B task (people rate the personalized answer against the generic one per "
        "attribute, -2..2); *no better than generic*: the share of items whose mean human rating is 0 or below "
        "(the personalized answer is rated the same as the generic one, or worse)",
        "*inflation*: a judge's rating minus the mean human rating of the same item, averaged over the items "
        "both rated (above 0: the judge likes the personalized answer more than people do)",
        "*Spearman*: the rank correlation (Spearman's ρ) of a judge's ratings with the mean human rating, over "
        "items; not the alt-test's ρ below",
        "*mention uplift*: the mean rating of items whose personalized answer mentions the attribute explicitly "
        "minus that of the others; *undefined* when every item or no item mentions it (there is nothing to "
        "compare)"],
    "verifier": [
        "*acceptance*: the share of attributes the human majority accepts, of all extracted attributes (before) "
        "and of those the trained verifier keeps (after), on users it never saw; *gain*: after minus before"],
    "relevance_classifier": [
        "*held-out F1*: the trained relevance classifier's F1 against the human majority, on users it never saw"],
}
_ADMISSIBILITY = ("*admissibility*: the alternative-annotator test (Calderon et al., ACL 2025; docs/metrics.md, "
                  "\"Human admissibility\"): may the judge stand in for one of the annotators? *winning rate ω*: "
                  "the share of the left-out humans the judge beats (it passes at ω >= 0.5: \"within human "
                  "range\"); *advantage probability ρ*: how often the judge's label matches the other humans at "
                  "least as well as the left-out human's does; \"not enough shared items\": no human shares "
                  "enough items with the judge to be tested")


def definitions(reports: dict[str, dict[str, Any]]) -> list[Line]:
    """What every figure of the stages present means, each linking the stage report that holds it; the
    admissibility test once (stage 2 or 3, whichever has it first)."""
    out: list[Line] = []
    for stage, lines in _DEFINITIONS.items():
        if stage in reports:
            out += [(line, stage) for line in lines]
    adm = next((s for s in ("relevance", "incorporation") if (reports.get(s) or {}).get("admissibility")), None)
    if adm is not None:
        out.append((_ADMISSIBILITY, adm))
    return [*out, (_CI, None)]


def md_lines(lines: Sequence[Line], link: Linker = md_link) -> list[str]:
    """Lines as Markdown list items, each with its stage report linked."""
    return [f"- {text}" + (f" ([{link(stage)}]({link(stage)}))" if stage else "") for text, stage in lines]


def html_lines(lines: Sequence[Line], link: Linker = html_link) -> str:
    """Lines as an HTML list, `*term*` in italics, each with its stage report linked."""
    items = []
    for text, stage in lines:
        body = _italics(html.escape(text))
        if stage:
            href = html.escape(link(stage))
            body += f' (<a href="{href}">{href}</a>)'
        items.append(f"<li>{body}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _italics(text: str) -> str:
    """`*term*` as `<em>term</em>` (the definitions' one piece of Markdown)."""
    parts = text.split("*")
    return "".join(f"<em>{p}</em>" if k % 2 else p for k, p in enumerate(parts)) if len(parts) % 2 else text
