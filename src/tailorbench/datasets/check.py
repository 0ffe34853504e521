"""`tailor data check`: an integrity report of a benchmark (what the raw PersonaFeedback files hide)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tailorbench.datasets.loader import Benchmark


def integrity_report(benchmark: Benchmark) -> dict[str, Any]:
    """Rows per split/tier, repeated rows, label flips (and per tier, rows another tier repeats or contradicts),
    equal-length answers, answer reuse, personas."""
    stats = benchmark.stats()
    cases = benchmark.cases
    answers = Counter(a for c in cases for a in (c.chosen, c.rejected))
    reused = {a: n for a, n in answers.items() if n > 1}
    chosen_longer = sum(len(c.chosen) > len(c.rejected) for c in cases)
    per_user = Counter(c.user_id for c in cases)
    overlap = Counter((f"{c.split}/{c.tier}", kind) for c, kind in zip(cases, benchmark.pair_index().overlap()))
    return {
        **stats,
        "equal_length_answers": sum(len(c.chosen) == len(c.rejected) for c in cases),
        "chosen_longer": chosen_longer,
        "chosen_longer_share": chosen_longer / len(cases) if cases else None,
        "answers_reused": len(reused),
        "answer_slots_with_reused_text": sum(reused.values()),
        "users": len(per_user),
        "cases_per_user_max": max(per_user.values()) if per_user else 0,
        "personas_unused_ids": benchmark.personas_unused[:20],
        "personas_missing": sum(1 for e in benchmark.invalid.rows if e.field == "user_id"),
        # what a per-tier score can and cannot mean: rows that another tier holds too, with the same label or
        # with the labels swapped (docs/experiments.md, reward model round 5); cells with none are left out
        "rows_repeated_in_another_tier": {cell: n for (cell, kind), n in sorted(overlap.items()) if kind == "repeated"},
        "rows_contradicted_by_swapped_labels": {cell: n for (cell, kind), n in sorted(overlap.items())
                                                if kind == "contradicted"},
        # what only this layout counts, and its dataset card's facts (licence, size, citation, source)
        **({"layout_stats": benchmark.layout_stats} if benchmark.layout_stats else {}),
    }
