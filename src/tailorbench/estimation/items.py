"""The items of an estimate, read from run directories: what the system under test did on each case and what
the proxy says people would say of it.

- A pairwise run A (the system under test, a judge) with a proxy run B on the same cases: each judge's
  probability of picking the human-preferred (`chosen`) answer is its case score s (the mean over the orders it
  was asked in, as `tailor compare` reads it: `RunKind.case_scores`). The estimand is A's accuracy against people:
  for a person preferring `chosen` with share h (1, 0, or ½ for a tie of raters), Y = s_A h + (1 − s_A)(1 − h);
  the proxy's stand-in is Ŷ = s_A s_B + (1 − s_A)(1 − s_B), how often A agrees with B.
- A gen-eval run: the estimand is the win rate people give the generated answers; the run's own judge is the
  proxy, Ŷ = the judge's win score of the case (1 won, ½ tie, 0 lost), Y = people's.
- A paired difference (`versus`, pairwise runs): Y = Y_A − Y_A′ and Ŷ = Ŷ_A − Ŷ_A′ on the cases all runs share.
- A judge's ratings file (stage 3: `tailor stages judge-ab`'s long-format A/B ratings, −2..2 of personalized
  against generic): the estimand is the mean rating people give an item; Ŷ = the mean of the file's
  non-human ratings of the item (its `human` ratings, if any, are left to `--labels`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tailorbench.errors import ConfigError, DataError
from tailorbench.run_kinds import RUN_KINDS, read_manifest, run_kind
from tailorbench.schema import DEFAULT_SPLITS, DEFAULT_TIERS, benchmark_names

__all__ = ["RATINGS", "Folds", "Items", "check_pairwise_run", "proxy_margins", "read_folds", "read_items",
           "read_rating_items"]

Scores = dict[str, tuple[float, str, str, str]]


@dataclass
class Items:
    """Every item of the estimate, in one order: ids, split, tier, the system's score on each (pairwise: its
    probability of picking `chosen`; for a difference, one column per system), and Ŷ."""

    kind: str
    ids: list[str]
    split: np.ndarray
    tier: np.ndarray
    system: np.ndarray  # (N, k): the score of each system under test (k = 2 for a difference)
    yhat: np.ndarray
    splits: list[str]
    tiers: list[str]
    estimand: str
    notes: list[str] = field(default_factory=list)
    #: pairwise: the proxy judge's own probability of picking `chosen` per item (its case score)
    proxy: np.ndarray | None = None

    def human_value(self, share_chosen: np.ndarray) -> np.ndarray:
        """Y of each item from people's share for the chosen answer (pairwise) or their score (gen-eval)."""
        if self.kind != "pairwise":
            return share_chosen
        h = share_chosen[:, None]
        agree = self.system * h + (1.0 - self.system) * (1.0 - h)
        return agree[:, 0] - agree[:, 1] if agree.shape[1] == 2 else agree[:, 0]


def _scores(run: Path) -> tuple[str, Scores]:
    if not run.is_dir():
        raise ConfigError(f"{run}: not a run directory")
    kind = run_kind(run)
    if kind == "pairwise":
        check_pairwise_run(run)
    scorer = RUN_KINDS.get(kind).case_scores
    if scorer is None:
        raise ConfigError(f"{run}: a {kind} run has no per-case scores to estimate from")
    return kind, scorer(run)


def check_pairwise_run(run: Path) -> None:
    """A pairwise run's manifest read as strictly as `tailor report` reads it (every field of `RunManifest` it
    holds with its type; a DataError naming the field otherwise)."""
    from tailorbench.evaluate.results import read_manifest as read_pairwise_manifest

    read_pairwise_manifest(run)


def _agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * b + (1.0 - a) * (1.0 - b)


RATINGS = "ratings"


def read_rating_items(path: Path) -> Items:
    """The items a judge rated in a long-format ratings file, Ŷ the mean of its non-human numeric ratings."""
    from tailorbench.agreement.ratings import read_ratings_file
    from tailorbench.agreement.records import DEFAULT_GROUP

    per_item: dict[str, list[float]] = {}
    skipped = 0
    for rating in read_ratings_file(path).ratings:
        if rating.group == DEFAULT_GROUP:
            continue
        if isinstance(rating.label, str):
            skipped += 1
            continue
        per_item.setdefault(rating.item, []).append(float(rating.label))
    if not per_item:
        raise DataError(path, None, "label", "no numeric rating outside the human group: not a judge's ratings file "
                                             "(`tailor stages judge-ab` writes one)")
    ids = list(per_item)
    notes = [f"{skipped} non-numeric judge rating(s) left out"] if skipped else []
    every = np.array(["all"] * len(ids), dtype=object)
    return Items(kind=RATINGS, ids=ids, split=every, tier=every.copy(), system=np.zeros((len(ids), 1)),
                 yhat=np.array([float(np.mean(per_item[c])) for c in ids]), splits=["all"], tiers=["all"],
                 estimand="mean rating people give (the judge's ratings as the proxy)", notes=notes)


def read_items(system: Path, proxy: Path | None = None, versus: Path | None = None) -> Items:
    """The items of `system` (a run directory, or a judge's ratings file) against `proxy` (a pairwise run,
    required for a pairwise system), optionally as a difference with `versus`; every run must be over the same
    data (dataset fingerprints)."""
    if system.is_file():
        if proxy is not None or versus is not None:
            raise ConfigError(f"{system} is a judge's ratings file: the judge is the proxy; --proxy and --versus "
                              "take pairwise runs")
        return read_rating_items(system)
    kind, scores = _scores(system)
    runs = [system, *(r for r in (proxy, versus) if r is not None)]
    prints = {str(read_manifest(r).get("dataset_fingerprint")) for r in runs}
    if len(prints) > 1:
        raise ConfigError("the runs are over different data (dataset fingerprints "
                          f"{', '.join(sorted(p[:12] for p in prints))}): the estimate needs the same cases")
    names = benchmark_names(read_manifest(system).get("data_stats") or {})
    notes: list[str] = []
    columns: list[Scores] = [scores]
    if kind == "pairwise":
        if proxy is None:
            raise ConfigError(f"{system} is a pairwise run: name the proxy standing in for people with --proxy RUN "
                              "(a second judge's run on the same cases)")
        if versus is not None:
            v_kind, v_scores = _scores(versus)
            if v_kind != "pairwise":
                raise ConfigError(f"--versus {versus} is a {v_kind} run; a difference needs two pairwise runs")
            columns.append(v_scores)
        p_kind, p_scores = _scores(proxy)
        if p_kind != "pairwise":
            raise ConfigError(f"--proxy {proxy} is a {p_kind} run; the proxy of a pairwise run is a pairwise run")
        ids = _shared([*columns, p_scores], notes)
        system_cols = np.array([[col[c][0] for col in columns] for c in ids], dtype=float).reshape(len(ids), -1)
        proxy_col = np.array([p_scores[c][0] for c in ids], dtype=float)
        agree = _agreement(system_cols, proxy_col[:, None])
        yhat = agree[:, 0] - agree[:, 1] if agree.shape[1] == 2 else agree[:, 0]
        estimand = ("difference in accuracy against people (system − versus)" if versus is not None
                    else "accuracy of the system against people")
    else:
        if proxy is not None or versus is not None:
            raise ConfigError(f"{system} is a {kind} run: its own judge is the proxy; --proxy and --versus take "
                              "pairwise runs")
        ids = _shared(columns, notes)
        system_cols = np.array([[scores[c][0]] for c in ids], dtype=float).reshape(len(ids), 1)
        yhat = system_cols[:, 0].copy()
        estimand = "win rate people give the generated answers"
    if not ids:
        raise DataError(system, None, None, "no case has a score in every run: nothing to estimate")
    return Items(proxy=proxy_col if kind == "pairwise" else None,
                 kind=kind, ids=ids, split=np.array([scores[c][1] for c in ids], dtype=object),
                 tier=np.array([scores[c][2] for c in ids], dtype=object), system=system_cols, yhat=yhat,
                 splits=list(names.get("splits", DEFAULT_SPLITS)), tiers=list(names.get("tiers", DEFAULT_TIERS)),
                 estimand=estimand, notes=notes)


def _shared(columns: Sequence[Scores], notes: list[str]) -> list[str]:
    first = columns[0]
    shared = [c for c in first if all(c in col for col in columns[1:])]
    if len(shared) < len(first):
        notes.append(f"{len(first) - len(shared)} case(s) of the system have no score in another run: left out")
    return shared


@dataclass
class Folds:
    """A proxy cross-fitted on people's labels (K runs, one per fold model): each run's Ŷ of every item (N, K)
    and whether the item was in that run's training data (its manifest's `training_overlap`: in-training)."""

    yhat: np.ndarray
    trained: np.ndarray
    runs: list[str]


def read_folds(system: Path, items: Items, runs: Sequence[Path]) -> Folds:
    """The K fold runs of a cross-fitted proxy against the system's items (same data, every item scored)."""
    base = str(read_manifest(system).get("dataset_fingerprint"))
    columns, trained = [], []
    for run in runs:
        kind, scores = _scores(run)
        if kind != "pairwise":
            raise ConfigError(f"--proxy {run} is a {kind} run; a cross-fitted proxy's folds are pairwise runs")
        manifest = read_manifest(run)
        if str(manifest.get("dataset_fingerprint")) != base:
            raise ConfigError(f"--proxy {run} is over other data than {system} (dataset fingerprints differ)")
        missing = [c for c in items.ids if c not in scores]
        if missing:
            raise DataError(run, None, None, f"{len(missing)} case(s) of the system have no score here (e.g. "
                                             f"{missing[0]}): every fold model must judge every case")
        agree = _agreement(items.system, np.array([scores[c][0] for c in items.ids], dtype=float)[:, None])
        columns.append(agree[:, 0] - agree[:, 1] if agree.shape[1] == 2 else agree[:, 0])
        block = (manifest.get("config") or {}).get("training_overlap")
        classes = block.get("cases") if isinstance(block, dict) else None
        classes = classes if isinstance(classes, dict) else {}
        trained.append([classes.get(c) == "in-training" for c in items.ids])
    return Folds(np.stack(columns, axis=1), np.array(trained, dtype=bool).T, [str(r) for r in runs])


def proxy_margins(proxy: Path, ids: Sequence[str]) -> np.ndarray | None:
    """The proxy judge's score margin (chosen − rejected, averaged over its orders) per case, or None when its
    verdicts carry no scores (a judge like `longer` or `random`): what an active plan's uncertainty comes from."""
    from tailorbench.evaluate.results import read_predictions

    if run_kind(proxy) != "pairwise":
        raise ConfigError(f"--proxy {proxy} is a {run_kind(proxy)} run; the proxy of a sample is a pairwise run")
    check_pairwise_run(proxy)
    margins: dict[str, list[float]] = {}
    for row in read_predictions(proxy):
        scores = row.get("scores")
        if not isinstance(scores, dict) or not all(isinstance(scores.get(k), int | float) for k in ("A", "B")):
            return None
        chosen, rejected = ("A", "B") if row["order"] == "AB" else ("B", "A")
        margins.setdefault(str(row["case_id"]), []).append(float(scores[chosen]) - float(scores[rejected]))
    if not margins:
        return None
    fallback = 0.0  # a case the proxy did not score: the most uncertain margin
    return np.array([float(np.mean(margins[c])) if c in margins else fallback for c in ids])
