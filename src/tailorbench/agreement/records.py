"""The rating records every agreement statistic works on: `Rating` (one rater's label for one item) and
`RatingSet` (ratings from one or more sources, with the count of the unusable ones).

Their own module so that every reader of ratings (`ratings.py`: the long format; `runs.py`: run directories)
sits above them and none imports another.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

Label = str | int | bool

#: group given to ratings that carry no "group" field
DEFAULT_GROUP = "human"
#: the groups the long rating format documents (docs/agreement.md): the humans and the models (judges)
GROUPS = ("human", "model")


@dataclass(frozen=True, slots=True)
class Rating:
    """One rater's label for one item, with where it came from (for error messages)."""

    item: str
    rater: str
    label: Label
    group: str = DEFAULT_GROUP
    source: str = ""
    line: int | None = None


@dataclass
class RatingSet:
    """Ratings read from one or more sources, plus the count of every rating that was not usable."""

    ratings: list[Rating] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    #: reason -> number of ratings that were read but carry no label (missing ratings)
    missing: Counter[str] = field(default_factory=Counter)

    def extend(self, other: RatingSet) -> None:
        self.ratings.extend(other.ratings)
        self.sources.extend(other.sources)
        self.missing.update(other.missing)
