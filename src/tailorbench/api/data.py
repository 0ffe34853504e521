"""`tailor data check|convert|push` and `tailor cache stats|clear`: benchmarks in any layout, the call cache."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tailorbench.api.results import CacheCleared, CacheStats, DataCheck, DataConverted, DataPushed

__all__ = [
    "cache_clear",
    "cache_stats",
    "check_data",
    "convert_data",
    "push_data",
]


def check_data(data: str | Path, skip_invalid: bool = False,
               options: Mapping[str, Any] | None = None) -> DataCheck:
    """`tailor data check`: integrity report of a benchmark in any layout (`options`: the layout's, e.g.
    PrefEval's turns); a layout's own counts and its dataset card (licence, size, citation) are `layout_stats`. A
    multiple-choice benchmark (PrefEval, PersonaMem) gets its items' report (`datasets.check.choice_report`)."""
    from tailorbench.datasets import load_benchmark
    from tailorbench.datasets.check import choice_report, integrity_report
    from tailorbench.datasets.choice import ChoiceLayout, load_choice_items
    from tailorbench.datasets.loader import find_layout, source_path

    path = source_path(str(data))
    if path.exists() and isinstance(find_layout(path), ChoiceLayout):  # items, not pairs: their own report
        return DataCheck.model_validate(choice_report(load_choice_items(data, skip_invalid=skip_invalid,
                                                                        options=options)))
    benchmark = load_benchmark(data, skip_invalid=skip_invalid, options=options)
    return DataCheck.model_validate(integrity_report(benchmark))


def convert_data(data: str | Path, out: str | Path, skip_invalid: bool = False,
                 options: Mapping[str, Any] | None = None) -> DataConverted:
    """`tailor data convert`: any supported layout -> native PairCase JSONL at `out`, with the sidecar declaring
    the benchmark's split and tier names when they are not PersonaFeedback's (so it reads back with them)."""
    from tailorbench.datasets import load_benchmark, write_benchmark
    from tailorbench.files import check_output

    check_output("--out", out, inputs=[data])
    n = write_benchmark(load_benchmark(data, skip_invalid=skip_invalid, options=options), Path(out))
    return DataConverted(out=str(out), cases=n)


def push_data(data: str | Path, repo_id: str, license: str | None, private: bool = False,
              dry_run: str | Path | None = None, skip_invalid: bool = False) -> DataPushed:
    """`tailor data push`: a benchmark in any layout to the hub dataset `repo_id` as native JSONL with a dataset
    card (`license` is required); with `dry_run`, the folder is only written there."""
    from tailorbench.datasets.hub_push import push_data as push

    return DataPushed.model_validate(push(data, repo_id, license, private=private, dry_run=dry_run,
                                          skip_invalid=skip_invalid))


@contextmanager
def _cache_errors(path: str | Path | None) -> Iterator[None]:
    """A cache file SQLite cannot open (a directory, no permission, not a database) is bad input (exit 2)."""
    from tailorbench.errors import ConfigError

    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"cannot use the call cache {path or '(default path)'}: {exc}") from None


def cache_stats(path: str | Path | None = None) -> CacheStats:
    """`tailor cache stats`: entries and size of the call cache, per backend / model / base URL."""
    from tailorbench.models.cache import cache_stats as stats

    with _cache_errors(path):
        return CacheStats.model_validate(stats(path))


def cache_clear(path: str | Path | None = None, model: str | None = None,
                older_than_days: float | None = None) -> CacheCleared:
    """`tailor cache clear`: delete cached calls (all, one model's, or older than N days)."""
    from tailorbench.models.cache import clear_cache

    with _cache_errors(path):
        return CacheCleared(removed=clear_cache(path, model=model, older_than_days=older_than_days))
