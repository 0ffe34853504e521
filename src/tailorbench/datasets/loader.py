"""One entry point for every benchmark source: detects the layout of a path (or a named source) and returns
validated PairCases plus the statistics a manifest must record (repeats, flips, skipped rows)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import (
    DEFAULT_ALIASES,
    LAYOUTS,
    Layout,
    all_layouts,
    declared_name,
    get_layout,
    known_layouts,
)
from tailorbench.datasets.rows import InvalidRows
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, PairCase

__all__ = ["Benchmark", "detect_layout", "filter_cases", "find_layout", "load_benchmark"]

DEMO = "demo"
PERSONAFEEDBACK = "personafeedback"


def demo_path() -> Path:
    return Path(__file__).parent / "demo" / "demo.jsonl"


def find_layout(path: Path) -> Layout:
    """The first registered layout (in priority order) that recognises `path`; an error listing every layout
    and what it expects when none does."""
    if not path.exists():
        raise DataError(path, None, None, "no such file or directory")
    for layout in all_layouts():
        if layout.detect(path):
            return layout
    if path.is_dir():
        raise DataError(path, None, None, f"not a known benchmark layout; the layouts: {known_layouts()}")
    raise DataError(path, 1, None, f"not a known benchmark layout (for a PersonaFeedback tier file pass the "
                                   f"directory that holds it and its personas); the layouts: {known_layouts()}")


def detect_layout(path: Path) -> str:
    """The name of the layout of `path` (`hub`, `mirror`, `native`, `scored` or a plugin's)."""
    return find_layout(path).name


def load_benchmark(data: str | Path, skip_invalid: bool = False, layout: str | None = None,
                   options: Mapping[str, Any] | None = None) -> Benchmark:
    """Load `demo`, `personafeedback` (hub), `hf:OWNER/NAME[@REV]` (pushed by `tailor data push`), or a path in
    any registered layout (detected, or the one named by `layout`); `options` go to the layout (the scored
    layout: `score_column`, `min_gap`)."""
    invalid = InvalidRows(skip=skip_invalid)
    spec = str(data)
    path = source_path(spec)
    if layout is None:
        reader = find_layout(path)
    else:
        reader = get_layout(layout)
        if not path.exists():
            raise DataError(path, None, None, "no such file or directory")
    benchmark = reader.load(spec, path, invalid, options or {})
    _check_names(benchmark, path, invalid)
    return benchmark


def source_path(spec: str) -> Path:
    """Where a data spec lies on disk: `demo`, `personafeedback` and `hf:OWNER/NAME[@REV]` from the package or
    the hub cache, a pushed folder (`data push --dry-run`) its benchmark file, anything else a path."""
    if spec == DEMO:
        return demo_path()
    if spec == PERSONAFEEDBACK:
        from tailorbench.datasets.hub import fetch_personafeedback

        return fetch_personafeedback()
    if spec.startswith("hf:"):
        from tailorbench.datasets.hub_repo import fetch_pushed

        return fetch_pushed(spec)
    path = Path(spec).expanduser()
    from tailorbench.datasets.hub_repo import DATA_FILE

    if path.is_dir() and (path / DATA_FILE).is_file():
        return path / DATA_FILE  # the folder `tailor data push --dry-run DIR` wrote (or a downloaded push)
    return path


def _check_names(benchmark: Benchmark, path: Path, invalid: InvalidRows) -> None:
    """Every case's split and tier must be one its layout declares (the built-in readers check per row; this
    holds a plugin's reader to the same contract)."""
    splits, tiers = set(benchmark.splits), set(benchmark.tiers)
    bad = [c for c in benchmark.cases if c.split not in splits or c.tier not in tiers]
    for case in bad:
        field, value, declared = (("split", case.split, benchmark.splits) if case.split not in splits
                                  else ("tier", case.tier, benchmark.tiers))
        invalid.handle(DataError(path, None, field, f"case {case.id!r}: unknown {field} {value!r} for the "
                                                    f"{benchmark.layout} layout (declared: {', '.join(declared)})"))
    if bad:
        drop = {id(c) for c in bad}
        benchmark.cases = [c for c in benchmark.cases if id(c) not in drop]


def filter_cases(
    cases: list[PairCase], splits: list[str] | None = None, tiers: list[str] | None = None,
    benchmark: Benchmark | None = None,
) -> list[PairCase]:
    """Filter by split/tier names of the benchmark's layout (PersonaFeedback's without one), case-insensitive,
    the layout's other spellings accepted (`mid`, `spedific`)."""
    aliases: Mapping[str, str] = DEFAULT_ALIASES
    if benchmark is not None and benchmark.layout in LAYOUTS:
        aliases = get_layout(benchmark.layout).aliases
    known = {"split": benchmark.splits if benchmark else DEFAULT_SPLITS,
             "tier": benchmark.tiers if benchmark else DEFAULT_TIERS}

    def norm(names: list[str] | None, kind: str) -> set[str] | None:
        if not names:
            return None
        out = set()
        for name in names:
            value = declared_name(name, known[kind], aliases)
            if value is None:
                raise ConfigError(f"unknown {kind} {name!r} (this benchmark's {kind}s: {', '.join(known[kind])})")
            out.add(value)
        return out

    want_split = norm(splits, "split")
    want_tier = norm(tiers, "tier")
    return [
        c for c in cases
        if (want_split is None or c.split in want_split) and (want_tier is None or c.tier in want_tier)
    ]



def load_run_cases(manifest: Mapping[str, Any], wanted: set[str]) -> tuple[dict[str, PairCase], str]:
    """The cases of a run's benchmark (its manifest's `data`) with the ids in `wanted`, and a note on where their
    text came from: what the viewer and a report's example verdicts show beside the verdicts. A benchmark that
    cannot be read any more gives no case and says why, never an error (the verdicts stand without their text)."""
    from tailorbench.errors import TailorError
    from tailorbench.redact import redact

    data = str(manifest.get("data") or "")
    layout = (manifest.get("data_stats") or {}).get("layout")
    try:
        benchmark = load_benchmark(data, skip_invalid=True, layout=layout if layout in ("native", "scored") else None)
    except (TailorError, OSError, ValueError) as exc:
        return {}, f"the case text is not shown: the run's data ({redact(data)}) could not be read ({redact(str(exc))})"
    found = {c.id: c for c in benchmark.cases if c.id in wanted}
    note = f"case text from {redact(data)}"
    if len(found) < len(wanted):
        note += f" ({len(wanted) - len(found)} of {len(wanted)} judged cases are no longer in it)"
    return found, note
