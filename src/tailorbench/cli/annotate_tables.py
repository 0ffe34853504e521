"""`tailor annotate progress` and `crowd participants` for a person: aligned text tables (the verbs' `--json`
prints every figure instead)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart; "(none)" under the header without rows."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join(lines + ([] if rows else ["(none)"]))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "–" if value is None else fmt.format(value)


def _majority(q: dict[str, Any]) -> str:
    if q.get("majority_agreement") is None:
        return "–"
    lo, hi = q["majority_ci"]
    return f"{_pct(q['majority_agreement'])} [{100 * lo:.0f}, {100 * hi:.0f}] of {q['majority_units']}"


def progress_table(progress: Any) -> str:
    """A project's progress (`tb.annotate.progress`'s result): the totals, then one row per annotator with
    their work and quality, then the flagged items and the agreement so far when asked for."""
    p = progress.model_dump()
    pct = f"{p['percent_done']}%"
    head = [f"project {p['project']} · {p['task_type']} · {p['n_per_item']} annotators per item",
            f"items {p['items']} (+{p['gold_items']} gold) · labels {p['labels_done']} of {p['labels_needed']} "
            f"({pct}) · complete items {p['items_complete']}", ""]
    quality = p.get("quality") or {}
    rows = []
    for a in p["annotators"]:
        q = quality.get(a["annotator"], {})
        time = f"{_num(q.get('median_seconds'), '{:.1f} s')} ({_num(q.get('median_client_seconds'), '{:.1f} s')})"
        rows.append([a["annotator"], str(a["done"]), str(a["gold_done"]), _pct(a["gold_score"]), str(a["flagged"]),
                     time, _majority(q), _num(q.get("kappa")), _num(q.get("mace_competence")),
                     a.get("last_submission") or "–"])
    table = text_table(["annotator", "done", "gold", "gold score", "flags", "time/item server (page)",
                        "majority agreement [95% CI]", "kappa", "MACE", "last submission"], rows)
    notes = ["", "done: finished items, gold included (gold: how many of them); time: the server's median from "
             "serving an item to its answer (the page's own figure in brackets); majority: agreement with the "
             "other annotators' majority on shared items; kappa from 10 shared items; MACE: competence (Hovy et "
             "al. 2013)."]
    flagged = p.get("flagged") or []
    if flagged:
        notes += ["", f"flagged items: {len(flagged)}"]
        notes += [f"  {f['item']}  {f['annotator']}  {f['note']}" for f in flagged[:20]]
        notes += [f"  ... {len(flagged) - 20} more (--json lists all)"] if len(flagged) > 20 else []
    agreement = p.get("agreement")
    if agreement is not None:
        notes += ["", "agreement so far: " + (f"{agreement.get('n_ratings')} ratings (the report: --json)"
                                              if agreement.get("available") else str(agreement.get("note")))]
    return "\n".join(head) + table + "\n" + "\n".join(notes)


def participants_table(participants: Sequence[Any]) -> str:
    """A study's participants (`tb.annotate.crowd_participants`' result), one row each."""
    rows = []
    for part in participants:
        r = part.model_dump()
        rows.append([r["external_id"], r["status"].replace("_", " "), str(r["items"]),
                     f"{_pct(r['gold_score'])} of {r['gold_items']}" if r["gold_items"] else "–",
                     f"{r['minutes']:.1f} min", _num(r["median_seconds"], "{:.1f} s"), r["code"] or "–"])
    return text_table(["participant", "state", "items", "gold score", "time in study", "time/item", "code"], rows)
