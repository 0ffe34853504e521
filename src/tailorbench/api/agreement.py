"""`tailor agree` and `tailor tiers`: agreement statistics of human (and model) ratings; tiers by agreement."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.api.results import AgreeResult, TiersResult

__all__ = ["agree", "render_tables", "tiers"]


def agree(files: Sequence[str | Path], order: Sequence[str] | None = None, positive: str | None = None,
          n_boot: int = 1000, seed: int = 0, level: float = 0.95, out: str | Path | None = None,
          fmt: str = "auto", mapping: str | None = None, judges: Sequence[str] = (), epsilon: float | None = None,
          min_items: int = 30, alignment: str = "auto", tiers: str | Path | None = None,
          annotators: str | None = None, min_humans: int = 2, expert: str | None = None) -> AgreeResult:
    """`tailor agree`: agreement statistics of long-format ratings (.jsonl/.csv), run directories and annotation
    tools' exports (Label Studio, Argilla, Potato: detected, or all forced with `fmt`; a project tailorbench did
    not make read through `mapping`, `--map`, docs/interop.md); with `out`, also written there as JSON.

    Every rater named in `judges`, and every rater outside the human group (a run directory's judge), gets its
    human admissibility: the alternative-annotator test (the margin `epsilon`, or the one the authors advise for
    `annotators`: expert 0.2, skilled 0.15, crowd 0.1; 0.2 when neither is given; `min_items` shared items per
    human, `min_humans` humans per item, `alignment`: accuracy, neg-rmse, auto or a registered custom function;
    auto is refused on integer labels without `order`) and kappas beside the humans', overall and per tier of
    `tiers` (JSONL with id and tier; without it, the tiers a run directory's predictions carry). With `expert` (a
    human rater, e.g. `first-person` in an arena's export), each judge also gets the alt-test's single-expert
    variant: against each other human, with the expert's labels the only reference (`single_expert` in the
    result)."""
    from tailorbench.agreement import AgreeOptions, agreement_report
    from tailorbench.agreement.admissibility import AdmissibilityOptions, margin, read_tiers
    from tailorbench.agreement.runs import read_run_tiers
    from tailorbench.errors import ConfigError
    from tailorbench.files import check_output
    from tailorbench.interop import read_ratings_any
    from tailorbench.options import as_float, as_int

    as_int("--resamples", n_boot, minimum=1)
    as_float("--level", level, minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True)
    if level >= 1.0:
        raise ConfigError(f"option --level must be a number below 1, got {level!r}")
    if out is not None:
        check_output("--out", out, inputs=[*files, *([tiers] if tiers is not None else [])])
    notes: list[str] = []
    eps, who = margin(epsilon, annotators)
    adm = AdmissibilityOptions(epsilon=eps, annotators=who, min_items=min_items, min_humans=min_humans,
                               alignment=alignment)
    adm.check()
    run_tiers = read_run_tiers(list(files)) if tiers is None else {}
    tier_map = read_tiers(tiers) if tiers is not None else (run_tiers if len(set(run_tiers.values())) > 1 else None)
    report = agreement_report(read_ratings_any(list(files), fmt, mapping, notes), list(order) if order else None,
                              AgreeOptions(n_boot, seed, level, positive), list(judges), adm, tier_map, expert)
    report["notes"] = [*notes, *report["notes"]]
    if out is not None:
        from tailorbench.files import write_json_atomic

        write_json_atomic(Path(out), report)
    return AgreeResult.model_validate(report)


def tiers(ratings: str | Path, items: str | Path, out: str | Path, easy: float = 0.75, medium: float = 0.6,
          min_ratings: int = 3, n_boot: int = 1000, seed: int = 0, fmt: str = "auto",
          mapping: str | None = None) -> TiersResult:
    """`tailor tiers`: tier pairwise annotations (long format, or a tool's export: `fmt` as in `agree`) by
    per-item agreement and write the PairCase JSONL `out`."""
    from tailorbench.agreement.tiers import TierRule, build_tiers, write_cases
    from tailorbench.datasets.native import declared_names
    from tailorbench.errors import DataError
    from tailorbench.files import check_output
    from tailorbench.interop import read_ratings_any
    from tailorbench.options import as_float, as_int

    as_float("--easy", easy, minimum=0.0, maximum=1.0)
    as_float("--medium", medium, minimum=0.0, maximum=1.0)
    rule = TierRule(easy=easy, medium=medium, min_ratings=min_ratings)
    as_int("--resamples", n_boot, minimum=1)
    check_output("--out", out, inputs=[ratings, items])
    cases, summary = build_tiers(items, read_ratings_any([ratings], fmt, mapping), rule, n_boot, seed)
    if not cases:
        raise DataError(Path(ratings), None, None, "no item has a tier (skipped: " + (", ".join(
            f"{n} {why}" for why, n in summary["skipped_items"].items()) or "none") + f"); {out} not written")
    write_cases(cases, out, declared_names(Path(items))[0])
    return TiersResult.model_validate({**summary, "out": str(out)})


def render_tables(report: dict[str, Any]) -> list[Any]:
    """The agreement report as `tailor agree` prints it: rich tables."""
    from tailorbench.agreement.report import render_table

    return list(render_table(report))
