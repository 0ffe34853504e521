"""Alignment scores of the alternative-annotator test, and where a custom one comes from.

The alt-test asks, item by item, whether the judge's label or a left-out human's label aligns better with the
remaining humans' labels. The two built-in scores are `accuracy` (share of the others giving the same label) and
`neg-rmse` (minus the root mean squared distance to their labels, for ordered labels); `admissibility.py`
computes both in closed form. Any other score is a function `(label, other_labels) -> float`, higher is better
aligned, exactly the `scoring_function` of the authors' reference code (github.com/nitaytech/AltTest,
`alt_test.py`), registered in `ALIGNMENTS` by name: `@ALIGNMENTS.register("name")` in code, or from a plugin
package by entry point in the group `tailorbench.alignments` (`name = "my_pkg.scores:my_score"`). Users then
type `--alignment name`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tailorbench.agreement.records import Label
from tailorbench.registry import Registry

#: (the label whose alignment is measured, the other humans' labels on the item) -> score, higher is better
AlignmentFunction = Callable[[Label, Sequence[Label]], float]

#: the names the alt-test computes itself; "auto" picks one of the two from the labels' declared scale
BUILTIN = ("auto", "accuracy", "neg-rmse")

ALIGNMENTS: Registry[AlignmentFunction] = Registry("alignment", "tailorbench.alignments")


def is_known(name: str) -> bool:
    """A built-in alignment, or one registered (in code or by an installed plugin)."""
    return name in BUILTIN or name in ALIGNMENTS


def known_names() -> list[str]:
    """Every alignment a user may type, built-ins first."""
    return [*BUILTIN, *(n for n in ALIGNMENTS.names() if n not in BUILTIN)]
