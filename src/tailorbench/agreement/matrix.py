"""Turn long-format ratings into an items x raters code matrix, deciding the scale of the labels.

The scale decides which statistics exist: weighted kappas and ordinal/interval alpha need an order of the
categories. It comes from an explicit `order` (e.g. ok,unsure,bad) or from integer labels; string labels are
never ordered alphabetically, so without an order they are nominal only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tailorbench.agreement.ratings import Label, RatingSet
from tailorbench.errors import DataError

MISSING = -1


@dataclass(frozen=True)
class RatingMatrix:
    """codes[i, r] is the category index rater r gave item i, or MISSING."""

    items: list[str]
    raters: list[str]
    groups: list[str]
    categories: list[Label]
    codes: np.ndarray
    #: "nominal" (unordered), "ordinal" (order given), or "numeric" (integer labels, values are the numbers)
    scale: str
    #: numeric value of each category for interval statistics: the integers, or ranks 0..k-1 for an order
    values: np.ndarray | None

    @property
    def ordered(self) -> bool:
        return self.values is not None

    @property
    def k(self) -> int:
        return len(self.categories)

    def subset(self, raters: Sequence[int]) -> RatingMatrix:
        """The same items and categories for some raters; items none of them rated are dropped."""
        cols = list(raters)
        codes = self.codes[:, cols]
        keep = (codes != MISSING).any(axis=1)
        return RatingMatrix(
            items=[it for it, k in zip(self.items, keep) if k],
            raters=[self.raters[c] for c in cols],
            groups=[self.groups[c] for c in cols],
            categories=self.categories,
            codes=codes[keep],
            scale=self.scale,
            values=self.values,
        )


def build_matrix(ratings: RatingSet, order: Sequence[str] | None = None) -> RatingMatrix:
    """Index items, raters and categories (first-appearance order) and check labels against `order`."""
    if not ratings.ratings:
        raise DataError(", ".join(ratings.sources) or "<input>", None, "label", "no usable ratings")
    items: dict[str, int] = {}
    raters: dict[str, int] = {}
    groups: dict[str, str] = {}
    for r in ratings.ratings:
        items.setdefault(r.item, len(items))
        raters.setdefault(r.rater, len(raters))
        prev = groups.setdefault(r.rater, r.group)
        if prev != r.group:
            raise DataError(r.source, r.line, "group", f"rater {r.rater!r} is in group {prev!r} elsewhere")
    labels = [r.label for r in ratings.ratings]
    values: np.ndarray | None
    if order:
        tokens = [t.strip() for t in order]
        if len(set(tokens)) != len(tokens) or any(not t for t in tokens):
            raise DataError("--label-order", None, None, f"categories must be distinct and non-empty: {tokens}")
        index = {t: i for i, t in enumerate(tokens)}
        for r in ratings.ratings:
            if str(r.label) not in index:
                raise DataError(r.source, r.line, "label",
                                f"label {r.label!r} is not in --label-order {','.join(tokens)}")
        categories: list[Label] = list(tokens)
        codes_flat = [index[str(lb)] for lb in labels]
        values, scale = np.arange(len(tokens), dtype=float), "ordinal"
    elif all(isinstance(lb, int) and not isinstance(lb, bool) for lb in labels):
        categories = sorted(set(labels))
        index_num = {c: i for i, c in enumerate(categories)}
        codes_flat = [index_num[lb] for lb in labels]
        values, scale = np.asarray(categories, dtype=float), "numeric"
    else:
        seen: dict[Label, int] = {}
        for lb in labels:
            seen.setdefault(lb, len(seen))
        categories = list(seen)
        codes_flat = [seen[lb] for lb in labels]
        values, scale = None, "nominal"
    codes = np.full((len(items), len(raters)), MISSING, dtype=np.int64)
    rows = np.fromiter((items[r.item] for r in ratings.ratings), dtype=np.int64, count=len(labels))
    cols = np.fromiter((raters[r.rater] for r in ratings.ratings), dtype=np.int64, count=len(labels))
    codes[rows, cols] = np.asarray(codes_flat, dtype=np.int64)
    return RatingMatrix(list(items), list(raters), [groups[r] for r in raters], categories, codes, scale, values)


def from_codes(codes: np.ndarray, categories: Sequence[Label] | None = None, ordered: bool = False) -> RatingMatrix:
    """Wrap a ready items x raters code matrix (MISSING = -1), e.g. for benchmarks and tests."""
    codes = np.asarray(codes, dtype=np.int64)
    k = int(codes.max()) + 1 if categories is None else len(categories)
    cats: list[Label] = list(range(k)) if categories is None else list(categories)
    return RatingMatrix(
        items=[str(i) for i in range(codes.shape[0])],
        raters=[f"r{j}" for j in range(codes.shape[1])],
        groups=["human"] * codes.shape[1],
        categories=cats,
        codes=codes,
        scale="ordinal" if ordered else "nominal",
        values=np.arange(k, dtype=float) if ordered else None,
    )
