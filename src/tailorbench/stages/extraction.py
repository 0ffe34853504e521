"""Stage 1 (extraction): an extractor model turns a user's conversations into attributes with evidence turns;
humans label each attribute accepted / uncertain / rejected; rejected attributes get an error category.

Reported per extractor and per source (e.g. real vs synthetic conversations): the share of attributes the human
majority accepts, finds uncertain or rejects (ties have no majority and are counted), inter-annotator agreement
(from agreement/, ordinal rejected < uncertain < accepted), and the error taxonomy of rejected attributes as each
categoriser (a human or an LLM) assigned it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.agreement import stats as st
from tailorbench.agreement.matrix import build_matrix
from tailorbench.agreement.ratings import Rating, RatingSet, merge_ratings, read_ratings
from tailorbench.agreement.report import AgreeOptions, agreement_report
from tailorbench.errors import DataError
from tailorbench.models.base import GenParams, Message
from tailorbench.stages.llm import ask
from tailorbench.stages.shapes import (
    HUMAN,
    JUDGMENT_ORDER,
    Alignment,
    Stage1Item,
    get_int,
    get_list,
    get_str,
    item_key,
    jsonl,
    read_stage1_items,
    split_key,
)

CATEGORIES = ("overgeneralization", "task-context confusion", "unsupported", "other")
ATTR_SEP = "::"

EXTRACT_SYSTEM = "You read a user's conversations with an assistant and list stable facts about the user."
EXTRACT_USER = (
    "Conversations (user turns are numbered):\n{turns}\n\n"
    "List the attributes of the user (preferences, circumstances, traits) that these turns support. Reply with "
    'JSON only: {{"attributes": [{{"text": "The user ...", "evidence": [turn numbers]}}]}}'
)
TAXONOMY_USER = (
    "Conversations:\n{turns}\n\nAn extractor claimed: {attribute}\nHuman annotators rejected this claim. Which "
    "error is it? Answer with one of: overgeneralization (one event taken as a lasting trait), task-context "
    "confusion (the task's content taken as a fact about the user), unsupported (nothing in the conversation "
    "says it), other."
)


def user_turns(conversations: Sequence[Any]) -> list[str]:
    """The user's turns across conversations, in order (turn numbers in prompts and evidence start at 1)."""
    out: list[str] = []
    for conv in conversations:
        turns = conv if isinstance(conv, list) else [conv]
        for t in turns:
            if isinstance(t, dict) and t.get("role", "user") == "user" and isinstance(t.get("content"), str):
                out.append(t["content"])
            elif isinstance(t, str):
                out.append(t)
    return out


def parse_attributes(text: str) -> list[tuple[str, list[int]]] | None:
    """JSON `{"attributes": [{"text", "evidence"}]}` (possibly fenced), else `- text [1, 3]` bullet lines; None
    when neither is there (an invalid extraction, counted)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group())
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("attributes"), list):
            out: list[tuple[str, list[int]]] = []
            for a in data["attributes"]:
                if isinstance(a, str) and a.strip():
                    out.append((a.strip(), []))
                elif isinstance(a, dict) and isinstance(a.get("text"), str) and a["text"].strip():
                    ev = [int(x) for x in a.get("evidence") or [] if isinstance(x, int) and not isinstance(x, bool)]
                    out.append((a["text"].strip(), ev))
            return out
    bullets = re.findall(r"^\s*[-*]\s+(.+?)\s*(?:\[([\d,\s]+)\])?\s*$", text, re.MULTILINE)
    if bullets:
        return [(t, [int(x) for x in ev.split(",") if x.strip()]) for t, ev in bullets]
    return None


def extract(conversations_path: str | Path, model: str, out: str | Path, name: str | None = None,
            options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the extractor over `{"user_id", "conversations", "source"?}` lines; write the stage-1 item file."""
    rows = []
    for line, rec in jsonl(conversations_path):
        convs = get_list(rec, "conversations", conversations_path, line)
        rows.append((get_str(rec, "user_id", conversations_path, line), convs, str(rec.get("source") or "unknown")))
    prompts: list[list[Message]] = []
    for _, convs, _ in rows:
        turns = "\n".join(f"[{i}] {t}" for i, t in enumerate(user_turns(convs), start=1))
        prompts.append([{"role": "system", "content": EXTRACT_SYSTEM},
                        {"role": "user", "content": EXTRACT_USER.format(turns=turns)}])
    batch = ask(model, prompts, parse_attributes, GenParams(temperature=0.0, max_tokens=512), options)
    extractor = name or model
    n_attr = 0
    with Path(out).open("w", encoding="utf-8") as handle:
        for index, ((user, convs, source), ans) in enumerate(zip(rows, batch.answers)):
            attrs = list(dict.fromkeys(t for t, _ in ans.value or []))
            evidence = {t: ev for t, ev in ans.value or []}
            n_attr += len(attrs)
            row = {"index": index, "user_id": user, "attributes": attrs, "evidence": [evidence[a] for a in attrs],
                   "conversations": convs, "extractor": extractor, "source": source, "status": ans.status}
            if ans.status != "ok":
                row["raw"] = ans.raw
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"extractor": extractor, "out": str(out), "users": len(rows), "attributes": n_attr, **batch.accounting()}


def export_attribute_tasks(items_path: str | Path, out: str | Path) -> dict[str, Any]:
    """Items -> the annotation service's `attributes` task JSONL (id = index; attribute keys 1..n by position)."""
    items = read_stage1_items(items_path)
    written, skipped = 0, 0
    with Path(out).open("w", encoding="utf-8") as handle:
        for it in items.values():
            if not it.attributes:
                skipped += 1
                continue
            turns = [t for conv in it.conversations for t in (conv if isinstance(conv, list) else [conv])]
            row = {"id": str(it.index), "user_id": it.user_id, "conversation": turns, "attributes": it.attributes,
                   "meta": {"extractor": it.extractor, "source": it.source}}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    return {"out": str(out), "tasks": written, "skipped_items_without_attributes": skipped}


def from_annotation_export(items: dict[int, Stage1Item], export: Sequence[str | Path]) -> tuple[RatingSet, Alignment]:
    """The annotation service's long-format export (item `INDEX::POSITION`) -> stage-1 ratings."""
    raw = read_ratings(export)
    report = Alignment()
    out = RatingSet(sources=raw.sources, missing=raw.missing.copy())
    for r in raw.ratings:
        tid, _, key = r.item.partition(ATTR_SEP)
        it = items.get(int(tid)) if tid.isdigit() else None
        pos = int(key) - 1 if key.isdigit() else -1
        if it is None or not 0 <= pos < len(it.attributes):
            report.lines_for_unknown_items += 1
            out.missing["rating for an unknown item or attribute"] += 1
            continue
        out.ratings.append(Rating(item_key(it.index, it.user_id, it.attributes[pos]), r.rater, r.label, r.group,
                                  r.source, r.line))
    return merge_ratings([out]), report


def read_taxonomy(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Error categories `{"index", "user_id", "attribute", "category", "rater"}` (humans' or an LLM's)."""
    out = []
    for path in paths:
        for line, rec in jsonl(path):
            cat = rec.get("category")
            if cat is not None and cat not in CATEGORIES:
                raise DataError(path, line, "category", f"must be one of {', '.join(CATEGORIES)} or null, got {cat!r}")
            out.append({"item": item_key(get_int(rec, "index", path, line), get_str(rec, "user_id", path, line),
                                         get_str(rec, "attribute", path, line)),
                        "category": cat, "rater": get_str(rec, "rater", path, line),
                        "status": rec.get("status", "ok")})
    return out


def parse_category(text: str) -> str | None:
    low = text.lower()
    hits = [c for c in CATEGORIES if c in low or c.replace("-", " ") in low]
    return hits[0] if len(hits) == 1 else None


def majority_labels(ratings: RatingSet) -> dict[str, str | None]:
    """Human majority per attribute (agreement's tie policy: a tie has no majority -> None)."""
    humans = RatingSet([r for r in ratings.ratings if r.group == HUMAN], ratings.sources)
    if not humans.ratings:
        return {}
    m = build_matrix(humans, JUDGMENT_ORDER)
    maj = st.majority(st.category_counts(m.codes, m.k))
    return {item: (str(m.categories[g]) if g >= 0 else None) for item, g in zip(m.items, maj)}


def categorise(items: dict[int, Stage1Item], ratings: RatingSet, model: str, out: str | Path,
               name: str | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ask an LLM for the error category of every attribute the human majority rejected; write the taxonomy."""
    rejected = [k for k, v in majority_labels(ratings).items() if v == "rejected"]
    by_index = {it.index: it for it in items.values()}
    prompts = []
    for key in rejected:
        index, _, attr = split_key(key)
        turns = "\n".join(f"[{i}] {t}" for i, t in enumerate(user_turns(by_index[index].conversations), start=1))
        prompts.append([{"role": "user", "content": TAXONOMY_USER.format(turns=turns, attribute=attr)}])
    batch = ask(model, prompts, parse_category, GenParams(temperature=0.0, max_tokens=32), options)
    rater = name or model
    with Path(out).open("w", encoding="utf-8") as handle:
        for key, ans in zip(rejected, batch.answers):
            index, user, attr = split_key(key)
            handle.write(json.dumps({"index": index, "user_id": user, "attribute": attr, "category": ans.value,
                                     "rater": rater, "status": ans.status, "raw": ans.raw}, ensure_ascii=False) + "\n")
    return {"categoriser": rater, "out": str(out), "rejected_attributes": len(rejected), **batch.accounting()}


def _rates(labels: list[str | None]) -> dict[str, Any]:
    n = len(labels)
    c = Counter(labels)
    out: dict[str, Any] = {"n": n, "no_majority": c.get(None, 0)}
    for lab in ("accepted", "uncertain", "rejected"):
        out[lab] = c.get(lab, 0) / n if n else None
    out["problematic"] = (c.get("uncertain", 0) + c.get("rejected", 0)) / n if n else None
    return out


def extraction_report(
    items: dict[int, Stage1Item],
    ratings: RatingSet,
    alignment: Alignment | None = None,
    taxonomy: Sequence[dict[str, Any]] = (),
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The stage-1 JSON object (see docs/stages.md)."""
    majority = majority_labels(ratings)
    meta = {item_key(it.index, it.user_id, a): it for it in items.values() for a in it.attributes}
    by: dict[str, dict[str, list[str | None]]] = {"extractor": defaultdict(list), "source": defaultdict(list)}
    per_rating: dict[str, Counter[str]] = defaultdict(Counter)
    for key, it in meta.items():
        if key not in majority:
            continue
        by["extractor"][it.extractor].append(majority[key])
        by["source"][it.source].append(majority[key])
    for r in ratings.ratings:
        if r.item in meta:
            per_rating[meta[r.item].source][str(r.label)] += 1
    unrated = sum(1 for k in meta if k not in majority)
    agree = agreement_report(ratings, JUDGMENT_ORDER, AgreeOptions(n_resamples=n_resamples, seed=seed))
    tax: dict[str, Any] = {}
    for t in taxonomy:
        entry = tax.setdefault(t["rater"], {"counts": Counter(), "invalid": 0, "not_rejected": 0, "by_source": {}})
        if majority.get(t["item"]) != "rejected":
            entry["not_rejected"] += 1
        if t["category"] is None:
            entry["invalid"] += 1
            continue
        entry["counts"][t["category"]] += 1
        src = meta[t["item"]].source if t["item"] in meta else "unknown"
        entry["by_source"].setdefault(src, Counter())[t["category"]] += 1
    for entry in tax.values():
        total = sum(entry["counts"].values())
        entry["shares"] = {c: entry["counts"].get(c, 0) / total if total else None for c in CATEGORIES}
        entry["counts"] = {c: entry["counts"].get(c, 0) for c in CATEGORIES}
        entry["by_source"] = {s: dict(v) for s, v in entry["by_source"].items()}
    by_source = {s: _rates(v) for s, v in sorted(by["source"].items())}
    notes = []
    if unrated:
        notes.append(f"{unrated} attribute(s) of the item file have no human judgment")
    real, syn = by_source.get("real", {}).get("problematic"), by_source.get("synthetic", {}).get("problematic")
    return {
        "n_items": len(items),
        "n_attributes": len(meta),
        "n_attributes_judged": len(majority),
        "by_extractor": {e: _rates(v) for e, v in sorted(by["extractor"].items())},
        "by_source": by_source,
        "real_vs_synthetic_problematic_relative": (real / syn - 1.0) if real is not None and syn else None,
        "per_rating_by_source": {s: dict(c) for s, c in sorted(per_rating.items())},
        "agreement": {
            "n_raters": agree["n_raters"],
            "percent_agreement": agree["percent_agreement"],
            "fleiss_kappa": {k: agree["fleiss_kappa"][k] for k in ("value", "ci") if k in agree["fleiss_kappa"]},
            "krippendorff_alpha_ordinal": agree["krippendorff_alpha"].get("ordinal"),
            "human_human_cohen_kappa": agree["cohen_kappa_by_pair_type"].get("human-human", {}).get("kappa"),
            "n_ties": agree["majority"]["n_ties"],
        },
        "taxonomy": tax,
        "missing_ratings": dict(sorted(ratings.missing.items())),
        "alignment": alignment.as_dict() if alignment is not None else None,
        "notes": notes,
    }


def extraction_parts(r: dict[str, Any]) -> tuple[list[Any], list[str], list[str]]:
    from tailorbench.stages.render import Bar, alignment_rows, f3, svg_bars, with_ci

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
    bars: list[Bar] = [(f"{k}: problematic", v["problematic"], None, None) for k, v in r["by_source"].items()]
    notes = list(r["notes"])
    if r["real_vs_synthetic_problematic_relative"] is not None:
        notes.insert(0, f"Real conversations gave {100 * r['real_vs_synthetic_problematic_relative']:+.0f}% "
                        "problematic attributes relative to synthetic ones.")
    return tables, [svg_bars(bars, 0.0, 1.0, "Share of problematic attributes by source")], notes
