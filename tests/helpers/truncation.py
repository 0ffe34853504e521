"""Inputs of which some (or all) are longer than a judge's token limit, and the pattern of the warning that counts
them (judges.base.truncation_warning)."""

from __future__ import annotations

import re

from tailorbench.schema import PairCase

#: `N of M ... (x%) exceed max_length T tokens`
COUNTED = re.compile(r"(\d+) of (\d+) (?:scored inputs|texts|prompts) \([\d.]+%\) exceed max_length (\d+) tokens")


def long_cases(n: int = 6, long_every: int = 2) -> list[PairCase]:
    """Short pairs; every `long_every`-th case has a long chosen answer (so some inputs, not all, are cut)."""
    out = []
    for k in range(n):
        long = (k + 1) % long_every == 0
        chosen = f"({k}) " + ("Since you like gardening, plant tulips and roses this weekend. " * (12 if long else 1))
        out.append(PairCase(id=f"c{k}", split="general", tier="easy", user_id=f"u{k % 3}",
                            persona={"Preference": {"hobby": "gardening"}}, question=f"What should I do? ({k})",
                            chosen=chosen, rejected=f"Rest at home ({k})."))
    return out
