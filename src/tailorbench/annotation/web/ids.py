"""Ids in URL paths: `{name:id}` matches only the numbers an id column can hold, so any other number (one past
int64 included) or a non-number is a 404 from the router itself, before any query. The id columns are
`Integer`, 32 bits on PostgreSQL; one bound for both databases keeps their answers the same."""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor

#: the largest id an `Integer` column holds on PostgreSQL (and so the largest any row can have)
MAX_ID = 2**31 - 1


def at_most(limit: int) -> str:
    """A regular expression matching exactly the decimal numbers 0..`limit` written without leading zeros."""
    digits = str(limit)
    n = len(digits)
    alternatives = ["0"]
    if n > 1:
        alternatives.append(f"[1-9][0-9]{{0,{n - 2}}}")  # every shorter number
    for i, ch in enumerate(digits):  # same length: equal up to position i, smaller there, anything after
        low = 1 if i == 0 else 0
        if int(ch) > low:
            alternatives.append(f"{digits[:i]}[{low}-{int(ch) - 1}][0-9]{{{n - i - 1}}}")
    alternatives.append(digits)
    return "|".join(alternatives)


class IdConvertor(Convertor[int]):
    regex = at_most(MAX_ID)

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(int(value))


register_url_convertor("id", IdConvertor())
