"""The one reader of a benchmark's Parquet files (Personalized RewardBench's release: `<Subset>/test-00000-of-
00001.parquet`): every row as a plain dict, in the file's row order (a position drawn per row by a seed must fall on
the row the authors' scripts drew it for), numbered from 1 like JSONL lines so errors name the row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tailorbench.errors import DataError


def read_parquet(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number from 1, row) of every row of a Parquet file, in order; nested lists and structs become lists
    and dicts. A file pyarrow cannot read is a DataError naming it."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise DataError(path, None, None, "reading Parquet files needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(path, None, None, f"not a readable Parquet file: {exc}") from None
    rows: list[dict[str, Any]] = table.to_pylist()
    return [(number, row) for number, row in enumerate(rows, start=1)]
