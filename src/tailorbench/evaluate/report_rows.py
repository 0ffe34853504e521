"""The rows of the pairwise report's tables (`evaluate/report.py` lays them out as sections): the leaderboard by
split and tier (training class marked), the length-controlled view, accuracy by length ratio, the authors'
fields, accounting, failed calls, rows shared across tiers and example verdicts, each a list of formatted
cells computed from the runs' results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tailorbench.evaluate.metrics import OVERLAP_KINDS, report_names
from tailorbench.reporting import (
    pct,
)


def judged_cell(runs: Sequence[Mapping[str, Any]], split: str, tier: str) -> bool:
    """Whether some run judged a case in this split x tier (tier `all`: in the split)."""
    return any((result_cell(r, split, tier) or {}).get("n") for r in runs)


def leaderboard_columns(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The cells the leaderboard shows, (split, tier) with tier `all` for the split's average and ("all", "") for
    the total: only splits and tiers that hold a judged case in some run (a declared tier absent from the data
    gets no column of dashes), and no cell twice: a split judged in one tier shows that tier alone (its average
    is the same cases, with other bootstrap draws), and with one split the total stands for its average."""
    splits, tiers = report_names(runs)
    present = [s for s in splits if judged_cell(runs, s, "all")]
    out: list[tuple[str, str]] = []
    for split in present:
        held = [t for t in tiers if judged_cell(runs, split, t)]
        out += [(split, t) for t in held]
        if len(held) > 1 and len(present) > 1:
            out.append((split, "all"))
    if len(present) == 1 and len(out) == 1:
        out = []  # one split x tier: the total is that cell
    return [*out, ("all", "")]


def column_name(split: str, tier: str) -> str:
    """A leaderboard column's heading (and the headline's name for that cell): `Specific easy`, `Specific avg`."""
    if split == "all":
        return "total"
    return f"{split.capitalize()} {'avg' if tier == 'all' else tier}"


def leaderboard_header(runs: Sequence[dict[str, Any]]) -> list[str]:
    return ["judge", "setting", *(column_name(s, t) for s, t in leaderboard_columns(runs))]


def result_cell(results: Mapping[str, Any], split: str, tier: str) -> dict[str, Any] | None:
    block = results["metrics"].get(split)
    if split == "all":
        return block if isinstance(block, dict) else None
    if not block:
        return None
    cell = block.get(tier)
    return cell if isinstance(cell, dict) else None


def format_cell(cell: dict[str, Any] | None, with_ci: bool = True) -> str:
    if not cell or cell.get("accuracy") is None:
        return "–"
    text = pct(cell["accuracy"])
    lo, hi = cell.get("ci", [None, None])
    if with_ci and lo is not None:
        text += f" [{pct(lo)}, {pct(hi)}]"
    return text


#: what each `--orders` value makes of a run, for the report's protocol sentence
PROTOCOLS = {
    "both": "tailorbench's protocol: every case judged with the chosen answer as A and as B, with the "
            "judge's own prompt and verdict parser",
    "random": "tailorbench's protocol with one order per case, drawn from the seed",
    "authors": "one order per case as the benchmark's authors draw it (--orders authors); with their prompt files "
               "and parser (the judge options in manifest.json) it is their protocol",
}


AUTHORS_HEADER = ["judge", "setting", "pairs", "accuracy", "chosen as A (n)", "chosen as B (n)", "position bias",
                  "predicted A / B", "failed parses", "failed calls"]


def authors_row(run: Mapping[str, Any]) -> list[str]:
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


def run_views(runs: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str | None]]:
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
    ordered = sorted(run_views(runs), key=lambda v: (_CLASS_RANK.get(v[2], 0), -(v[0]["metrics"]["all"]["accuracy"]
                                                                            or 0.0)))
    columns = leaderboard_columns(runs)
    return [[r["judge"], setting, *(format_cell(result_cell(r, s, t)) for s, t in columns)]
            for r, setting, _ in ordered]


def length_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    splits, _ = report_names(runs)
    for r, setting, _ in run_views(runs):
        for split in (*splits, "all"):
            cell = result_cell(r, split, "all")
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


def accounting_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
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


def overlap_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    splits, tiers = report_names(runs)
    for r in runs:
        for split in splits:
            for tier in tiers:
                view = (result_cell(r, split, tier) or {}).get("by_overlap")
                if view:
                    rows.append([r["judge"], r["setting"], f"{split}/{tier}", *(
                        f"{pct(view[k]['accuracy'])} (n={view[k]['n']})" if k in view else "–"
                        for k in OVERLAP_KINDS)])
    return rows


def _counts(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "–"


def failure_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
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


def length_ratio_rows(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    runs = [{**r, "setting": setting} for r, setting, _ in run_views(runs)]
    bins = next((r["by_length_ratio"] for r in runs if r.get("by_length_ratio")), None)
    if not bins:
        return [], []
    header = ["judge", "setting", *(f"ratio {b['bin']}" for b in bins)]
    rows = []
    for r in runs:
        cells = r.get("by_length_ratio") or []
        rows.append([r["judge"], r["setting"], *(f"{pct(c['accuracy'])} (n={c['n']})" for c in cells)])
    return header, rows


def _output_text(example: dict[str, Any]) -> str:
    if example.get("raw"):
        return " ".join(str(example["raw"]).split())[:200]
    if example.get("error"):
        return f"error: {' '.join(str(example['error']).split())[:180]}"
    scores = example.get("scores")
    if scores:
        return "scores " + ", ".join(f"{k} {v:.4g}" for k, v in scores.items())
    return "–"


def example_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
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


#: the folded table of the example verdicts' texts
EXAMPLE_TEXT_HEADER = ["judge", "setting", "verdict", "case", "order", "persona", "question", "chosen", "rejected",
                       "output"]


def example_text_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The texts of each example verdict's case (persona, question, both answers, as results.json keeps them: cut
    to `results.EXAMPLE_TEXT_CHARS`) beside the judge's output; examples whose data could not be read are left
    out."""
    rows = []
    for r in runs:
        for kind, examples in (r.get("examples") or {}).items():
            for e in examples:
                texts = e.get("texts")
                if not texts:
                    continue
                rows.append([r["judge"], r["setting"], kind, str(e["case_id"]), str(e.get("order")),
                             texts.get("persona") or "–", texts.get("question") or "–", texts.get("chosen") or "–",
                             texts.get("rejected") or "–", _output_text(e)])
    return rows
