"""`tailor data check`: an integrity report of a benchmark (what the raw PersonaFeedback files hide), and of a
multiple-choice benchmark its items' own report."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tailorbench.datasets.choice import ChoiceSet, pair_view
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


def choice_report(items: ChoiceSet) -> dict[str, Any]:
    """`tailor data check` of a multiple-choice benchmark: what means something for items with options (items per
    split x tier, options per item, chance, where the right option sits, users, repeated questions) instead of the
    pair view's counts (its repeats and tier overlaps are an item's options, not broken data); the declared splits
    and tiers the items do not use are listed apart, and the pair view is one count (what `tailor eval --task
    pairwise` judges)."""
    rows = items.items
    per = Counter(f"{i.split}/{i.tier}" for i in rows)
    users = Counter(i.user_id for i in rows)
    questions = Counter(i.question for i in rows)
    splits = [s for s in items.splits if any(i.split == s for i in rows)]
    tiers = [t for t in items.tiers if any(i.tier == t for i in rows)]
    stats = {k: v for k, v in items.stats.items() if k != "items"}
    return {
        "source": items.source,
        "layout": items.layout,
        "task": "multiple-choice",
        "items": len(rows),
        "splits": splits,
        "tiers": tiers,
        "declared_splits_without_items": [s for s in items.splits if s not in splits],
        "declared_tiers_without_items": [t for t in items.tiers if t not in tiers],
        "items_per_split_tier": dict(sorted(per.items())),
        "options_per_item": {str(n): k for n, k in sorted(Counter(len(i.options) for i in rows).items())},
        "chance": sum(1 / len(i.options) for i in rows) / len(rows) if rows else 0.0,
        "right_option_position": dict(sorted(Counter(i.answer for i in rows).items())),
        "users": len(users),
        "items_per_user_max": max(users.values()) if users else 0,
        "items_whose_question_another_item_asks": sum(n for n in questions.values() if n > 1),
        "pair_view_rows": sum(1 for i in rows for _ in pair_view(i)),
        "skipped_rows": len(items.invalid.rows),
        "skipped": items.invalid.as_dicts(),
        **({"layout_stats": stats} if stats else {}),
    }
