"""The arena's leaderboard statistics: Bradley–Terry ratings with bootstrap intervals, style control for length,
per-segment leaderboards and the personalized-vs-generic win rate, as pure functions of the votes.

The conventions are LMArena's, read in its code:
- the model and the scale: P(A beats B) = 1 / (1 + base^((R_B - R_A) / scale)) with scale 400 and base 10, so a
  rating is 400 / ln(10) times the natural-log strength (arena-rank, arena_rank/models/bradley_terry.py,
  `alpha = scale / math.log(base)`); anchored so the ranked contestants' mean rating is 1000 (arena-rank centres
  every contestant at `init_rating` 1000, which is the same when every contestant is ranked; centring on the
  ranked ones keeps a newcomer with a handful of votes from moving everyone else) or, with `anchor=NAME`, that
  contestant at `anchor_rating` (FastChat's `scale_and_offset`, which pins mixtral-8x7b-instruct-v0.1 at 1114);
- ties: a tie and a "both bad" count as half a win each way (arena-rank, arena_rank/utils/data_utils.py,
  `default_outcome_map`: model_a 1.0, model_b 0.0, tie 0.5, both_bad 0.5; FastChat's `preprocess_for_bt` alike);
- the fit: maximum likelihood, the logistic regression of the outcomes on the battle matrix (`bt_fit.py`, Newton's
  method, numpy only: our own fit, not arena-rank's, whose pins of numpy 2.3.3 and jax 0.8.1 the project's numpy
  does not meet), equal to arena-rank's (tests/arena/test_arena_rank.py, in a venv of its own), to choix's and to
  statsmodels' and scikit-learn's logistic regressions to 1e-6 rating points;
- intervals: a percentile bootstrap over battles (battles drawn with replacement, each resample refitted, the
  2.5th and 97.5th percentiles of each rating, numpy's linear interpolation), seeded — FastChat's
  `compute_bootstrap_bt` and arena-rank's `ci_method="bootstrap"` (arena-rank's default is a sandwich estimator);
  the point estimate is the fit on all battles;
- rank: LMArena's "rank (UB)", 1 + the number of ranked contestants whose lower bound exceeds this one's upper
  bound (FastChat, fastchat/serve/monitor/monitor.py, `recompute_final_ranking`), so contestants whose intervals
  overlap share a rank; a contestant is ranked only from `min_battles` battles on;
- style control: `style.py`.

Gold battles (a pair with a known better answer, for voter quality) and repeats (a battle shown again to check a
voter's consistency) never enter the ratings: they are counted and left out here, whoever calls.

The personalized-vs-generic win rate is the share of the battles between the two contestants that the
personalized one won, a tie or "both bad" counting half; its interval is Wilson's score interval on that share
(statsmodels' `proportion_confint(method="wilson")`), which, because a tie contributes half rather than a
whole win or loss, is a little conservative when there are ties.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from tailorbench.arena.bt_fit import Fit, fit_logistic, strongly_connected
from tailorbench.arena.style import length_feature
from tailorbench.bootstrap import N_BOOT, Resampler, percentile_ci

Outcome = Literal["a", "b", "tie", "both_bad"]
#: the label a battle's outcome contributes to side A's score (ties and "both bad" half a win each way)
SCORE: dict[str, float] = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}
#: the segment the small segments are folded into
OTHER = "other"
#: the segment of battles whose voter left the profile field empty
NOT_GIVEN = "(not given)"
#: a contestant is ranked from this many battles on, unless told otherwise
MIN_BATTLES = 20


@dataclass(frozen=True)
class BattleOutcome:
    """One voted battle, as the leaderboard sees it. `model_a` / `model_b` are the contestants (not the screen
    sides: `position_a_left` says whether model_a was shown on the left); `outcome` is relative to them.
    `repeat_of` is the battle id this one repeats (the same question and answers shown to the same voter again),
    None for a first showing."""

    battle_id: str
    voter: str
    model_a: str
    model_b: str
    outcome: Outcome
    confidence: int
    len_a: int
    len_b: int
    segments: dict[str, str]
    gold: bool
    gold_better: Literal["a", "b"] | None
    position_a_left: bool
    repeat_of: str | None = None


class StrictModel(BaseModel):
    """The base of the leaderboard's results: strict types, no undeclared key, immutable (written to JSON by the
    arena and read back through the same models)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ContestantRating(StrictModel):
    """One contestant's line. `ci_low` / `ci_high` are None without a bootstrap; `rank` is None when unranked."""

    contestant: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    battles: int
    wins: int
    losses: int
    ties: int
    both_bad: int
    ranked: bool
    rank: int | None


class LengthEffect(StrictModel):
    """Style control's length coefficient: log-odds of winning per standard deviation of the normalised length
    difference (positive: the longer answer wins more often), its interval, the same in rating points, and the
    mean and standard deviation of (len_a - len_b) / (len_a + len_b + 1) it was standardised with."""

    coefficient: float
    ci_low: float | None
    ci_high: float | None
    rating_points: float
    feature_mean: float
    feature_std: float


class Ratings(StrictModel):
    """A leaderboard: the contestants best first, and every choice that made it."""

    contestants: list[ContestantRating]
    battles: int
    gold_left_out: int
    repeats_left_out: int
    min_battles: int
    scale: float
    base: float
    anchor: str | None
    anchor_rating: float
    ci: float
    bootstrap: int
    bootstrap_unconverged: int
    seed: int
    style_control: bool
    length: LengthEffect | None
    #: False: the battles leave some rating bounded on one side only (a contestant that won, or lost, every battle
    #: against the rest): the maximum-likelihood estimate does not exist and that rating is wherever the tiny
    #: ridge of `bt_fit` stops it
    mle_exists: bool


class SegmentBoard(StrictModel):
    """The leaderboard of one segment; `values` are the field's values it holds (several for `other`)."""

    segment: str
    values: list[str]
    battles: int
    ratings: Ratings


class SegmentLeaderboards(StrictModel):
    field: str
    min_segment_battles: int
    segments: list[SegmentBoard]


class PairWinRate(StrictModel):
    """How often the personalized contestant beat its generic twin in their direct battles."""

    personalized: str
    generic: str
    battles: int
    wins: int
    losses: int
    ties: int
    both_bad: int
    win_rate: float | None
    ci_low: float | None
    ci_high: float | None


class PersonalizationWinRates(StrictModel):
    ci: float
    interval: Literal["wilson"]
    pairs: list[PairWinRate]


def rated(outcomes: Iterable[BattleOutcome]) -> list[BattleOutcome]:
    """The battles that count for the ratings: neither gold nor repeats."""
    return [o for o in outcomes if not o.gold and o.repeat_of is None]


def _check(min_battles: int, ci: float, bootstrap: int) -> None:
    if min_battles < 0:
        raise ValueError(f"min_battles must be 0 or more, got {min_battles}")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be a level between 0 and 1, got {ci}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be 0 or more resamples, got {bootstrap}")


@dataclass(frozen=True)
class _Battles:
    """The battles as arrays: contestant indices of each side and the score of side A."""

    names: list[str]
    ia: np.ndarray
    ib: np.ndarray
    y: np.ndarray


def _arrays(battles: Sequence[BattleOutcome]) -> _Battles:
    names = sorted({o.model_a for o in battles} | {o.model_b for o in battles})
    index = {n: i for i, n in enumerate(names)}
    return _Battles(names=names, ia=np.array([index[o.model_a] for o in battles], dtype=np.int64),
                    ib=np.array([index[o.model_b] for o in battles], dtype=np.int64),
                    y=np.array([SCORE[o.outcome] for o in battles]))


def _design(n: int, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    x = np.zeros((ia.size, n))
    rows = np.arange(ia.size)
    x[rows, ia] += 1.0
    x[rows, ib] -= 1.0
    return x


def _fit_all(x: np.ndarray, y: np.ndarray, w: np.ndarray, n: int) -> Fit:
    """The fit on all battles: the exact maximum-likelihood estimate (no ridge) when it exists, the tiny ridge's
    only where it does not (then the unpenalised fit cannot converge)."""
    fit = fit_logistic(x, y, w, rating_columns=n, ridge=0.0)
    return fit if fit.converged.all() else fit_logistic(x, y, w, rating_columns=n)


def _absent(theta: np.ndarray, battles: np.ndarray) -> np.ndarray:
    """A resample's rating of a contestant it drew no battle of is undefined (NaN: counted and left out of the
    interval), not the ridge's zero."""
    theta = theta.copy()
    theta[:, : battles.shape[1]][battles == 0] = np.nan
    return theta


def _fit_pairs(data: _Battles, bootstrap: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain model: battles summed per unordered pair (the pair's count and A-side score are sufficient), the
    fit on all battles, then on `bootstrap` resamples of the battles (`bootstrap.Resampler`)."""
    n = len(data.names)
    lo, hi = np.minimum(data.ia, data.ib), np.maximum(data.ia, data.ib)
    pairs, pair_of = np.unique(lo * n + hi, return_inverse=True)
    score_lo = np.where(data.ia == lo, data.y, 1.0 - data.y)
    x = _design(n, pairs // n, pairs % n)
    onehot = np.zeros((data.y.size, pairs.size))
    onehot[np.arange(data.y.size), pair_of] = 1.0
    counts = onehot.sum(axis=0)
    full = _fit_all(x, onehot.T @ score_lo / counts, counts, n)
    if bootstrap == 0:
        return full.theta[0], np.empty((0, n)), np.empty(0, dtype=bool)
    boot_counts, boot_scores = Resampler(data.y.size, bootstrap, seed).totals([onehot, onehot * score_lo[:, None]])
    y = np.divide(boot_scores, boot_counts, out=np.zeros_like(boot_scores), where=boot_counts > 0)
    boot = fit_logistic(x, y, boot_counts, rating_columns=n)
    return full.theta[0], _absent(boot.theta, boot_counts @ np.abs(x)), boot.converged


def _fit_style(data: _Battles, feature: np.ndarray, bootstrap: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The contextual model: one row per battle with the length covariate as a last column; each resample is a
    vector of battle multiplicities (`Resampler.weights`), fitted in chunks."""
    n = len(data.names)
    x = np.hstack([_design(n, data.ia, data.ib), feature[:, None]])
    full = _fit_all(x, data.y, np.ones(data.y.size), n)
    thetas, converged = [], []
    if bootstrap:
        for w in Resampler(data.y.size, bootstrap, seed, chunk=100).weights():
            fit = fit_logistic(x, data.y, w, rating_columns=n)
            thetas.append(_absent(fit.theta, w @ np.abs(x[:, :n])))
            converged.append(fit.converged)
    theta = np.vstack(thetas) if thetas else np.empty((0, n + 1))
    return full.theta[0], theta, np.concatenate(converged) if converged else np.empty(0, dtype=bool)


def _counts(names: list[str], battles: Sequence[BattleOutcome]) -> dict[str, dict[str, int]]:
    tally = {n: {"battles": 0, "wins": 0, "losses": 0, "ties": 0, "both_bad": 0} for n in names}
    for o in battles:
        for me, side in ((o.model_a, "a"), (o.model_b, "b")):
            t = tally[me]
            t["battles"] += 1
            if o.outcome in ("tie", "both_bad"):
                t["ties" if o.outcome == "tie" else "both_bad"] += 1
            else:
                t["wins" if o.outcome == side else "losses"] += 1
    return tally


def _intervals(samples: np.ndarray, ok: np.ndarray, ci: float) -> tuple[list[float | None], list[float | None]]:
    """Per column of `samples` (resamples x contestants) its percentile interval, unconverged resamples left out;
    None bounds without resamples."""
    if samples.shape[0] == 0:
        return [None] * samples.shape[1], [None] * samples.shape[1]
    intervals = percentile_ci(np.where(ok[:, None], samples, np.nan), ci)
    return [iv.lo for iv in intervals], [iv.hi for iv in intervals]


def _bound(bound: float | None, rating: float) -> float:
    return float(rating) if bound is None else bound


def rank_ub(lower: Sequence[float], upper: Sequence[float]) -> list[int]:
    """LMArena's rank (UB): 1 + how many others' lower bounds exceed this one's upper bound."""
    lo = np.asarray(lower, dtype=np.float64)
    return [1 + int((lo > u).sum()) for u in upper]


def bradley_terry(outcomes: Iterable[BattleOutcome], *, min_battles: int = MIN_BATTLES, ci: float = 0.95,
                  bootstrap: int = N_BOOT, seed: int = 0, style_control: bool = False, anchor: str | None = None,
                  anchor_rating: float = 1000.0, scale: float = 400.0, base: float = 10.0) -> Ratings:
    """The Bradley–Terry leaderboard of these battles (gold battles and repeats left out; conventions in the
    module docstring). `style_control` adds the length covariate and reports its coefficient."""
    _check(min_battles, ci, bootstrap)
    given = list(outcomes)
    battles = rated(given)
    gold = sum(o.gold for o in given)
    repeats = sum(1 for o in given if not o.gold and o.repeat_of is not None)
    data = _arrays(battles)
    n = len(data.names)
    if anchor is not None and anchor not in data.names:
        raise ValueError(f"anchor {anchor!r} is not a contestant of these battles ({', '.join(data.names)})")
    tally = _counts(data.names, battles)
    feature = length_feature(np.array([o.len_a for o in battles]), np.array([o.len_b for o in battles]))
    if n == 0:
        theta, boot, ok = np.zeros(0), np.empty((0, 0)), np.empty(0, dtype=bool)
    elif style_control:
        theta, boot, ok = _fit_style(data, feature.values, bootstrap, seed)
    else:
        theta, boot, ok = _fit_pairs(data, bootstrap, seed)
    ranked = np.array([tally[name]["battles"] >= min_battles for name in data.names], dtype=bool)
    centre = (np.array([data.names.index(anchor)]) if anchor is not None
              else np.flatnonzero(ranked) if ranked.any() else np.arange(n))
    alpha = scale / math.log(base)

    def points(t: np.ndarray) -> np.ndarray:
        # a contestant a resample drew no battle of is left out of that resample's centre (none left: undefined)
        held = t[..., centre]
        count = (~np.isnan(held)).sum(axis=-1, keepdims=True)
        shift = np.divide(np.nansum(held, axis=-1, keepdims=True), count, out=np.full(count.shape, np.nan),
                          where=count > 0)
        return (t[..., :n] - shift) * alpha + anchor_rating

    rating = points(theta)
    low, high = _intervals(points(boot), ok, ci)
    on = np.flatnonzero(ranked)
    # without a bootstrap the bounds are the ratings themselves
    ranks = dict(zip(on.tolist(), rank_ub([_bound(low[i], rating[i]) for i in on],
                                          [_bound(high[i], rating[i]) for i in on])))
    rows = [ContestantRating(contestant=name, rating=float(rating[i]), ci_low=low[i], ci_high=high[i],
                             ranked=bool(ranked[i]), rank=ranks.get(i), **tally[name])
            for i, name in enumerate(data.names)]
    rows.sort(key=lambda r: (-r.rating, r.contestant))
    beats = np.zeros((n, n), dtype=bool)
    beats[data.ia[data.y > 0], data.ib[data.y > 0]] = True
    beats[data.ib[data.y < 1], data.ia[data.y < 1]] = True
    length = None
    if style_control and n:
        (coef_low,), (coef_high,) = _intervals(boot[:, n:], ok, ci)
        length = LengthEffect(coefficient=float(theta[n]), ci_low=coef_low, ci_high=coef_high,
                              rating_points=float(theta[n] * alpha), feature_mean=feature.mean,
                              feature_std=feature.std)
    return Ratings(contestants=rows, battles=len(battles), gold_left_out=gold, repeats_left_out=repeats,
                   min_battles=min_battles, scale=scale, base=base, anchor=anchor, anchor_rating=anchor_rating,
                   ci=ci, bootstrap=bootstrap, bootstrap_unconverged=int((~ok).sum()), seed=seed,
                   style_control=style_control, length=length,
                   mle_exists=strongly_connected(n, beats) and _bounded(theta, n))


#: the widest spread of ratings, and the largest length coefficient, in natural log-odds units that a fit may
#: reach where the estimate exists: 30 is a win probability of 1e-13, never seen in data; beyond it the data
#: are separated and only the ridge stops the fit (the ratings then run to tens of thousands of points)
MLE_BOUND = 30.0


def _bounded(theta: np.ndarray, n: int) -> bool:
    """Whether the full fit stayed within `MLE_BOUND`: with the length covariate the comparison graph can be
    strongly connected and the data still separated (two contestants, the shorter answer always winning), so
    `strongly_connected` alone does not decide that the estimate exists."""
    if theta.size == 0:
        return True
    spread = float(np.ptp(theta[:n])) if n else 0.0
    coef = float(np.abs(theta[n:]).max()) if theta.size > n else 0.0
    return bool(np.isfinite(theta).all() and spread < MLE_BOUND and coef < MLE_BOUND)


def segment_leaderboards(outcomes: Iterable[BattleOutcome], field: str, *, min_battles: int = MIN_BATTLES,
                         min_segment_battles: int | None = None, ci: float = 0.95, bootstrap: int = N_BOOT,
                         seed: int = 0, style_control: bool = False, anchor: str | None = None,
                         anchor_rating: float = 1000.0) -> SegmentLeaderboards:
    """One leaderboard per value of the profile field `field` (a battle belongs to its voter's value; an empty or
    missing value is `(not given)`). Segments with fewer than `min_segment_battles` rated battles (default
    `min_battles`) are folded into one `other` segment, as is a value literally named `other`; the rest come
    largest first, `other` last. Each segment's board is `bradley_terry` on its battles with the same options."""
    floor = min_battles if min_segment_battles is None else min_segment_battles
    if floor < 0:
        raise ValueError(f"min_segment_battles must be 0 or more, got {floor}")
    by_value: dict[str, list[BattleOutcome]] = {}
    for o in rated(outcomes):
        by_value.setdefault(o.segments.get(field) or NOT_GIVEN, []).append(o)
    kept = sorted((v for v in by_value if len(by_value[v]) >= floor and v != OTHER),
                  key=lambda v: (-len(by_value[v]), v))
    folded = sorted(v for v in by_value if v not in kept)
    groups = [(v, [v], by_value[v]) for v in kept]
    if folded:
        groups.append((OTHER, folded, [o for v in folded for o in by_value[v]]))
    boards = [SegmentBoard(segment=name, values=values, battles=len(battles),
                           ratings=bradley_terry(battles, min_battles=min_battles, ci=ci, bootstrap=bootstrap,
                                                 seed=seed, style_control=style_control,
                                                 anchor=anchor if any(anchor in (o.model_a, o.model_b)
                                                                      for o in battles) else None,
                                                 anchor_rating=anchor_rating))
              for name, values, battles in groups]
    return SegmentLeaderboards(field=field, min_segment_battles=floor, segments=boards)


def wilson(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a share `successes / n` (successes may be fractional: ties count half)."""
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def personalized_vs_generic(outcomes: Iterable[BattleOutcome], pairs: list[tuple[str, str]], *,
                            ci: float = 0.95) -> PersonalizationWinRates:
    """For each (personalized, generic) pair, the personalized contestant's win rate in their direct battles
    (ties and "both bad" half), with Wilson's interval; gold battles and repeats left out."""
    _check(0, ci, 0)
    battles = rated(outcomes)
    rows = []
    for personal, generic in pairs:
        tally = {"wins": 0, "losses": 0, "ties": 0, "both_bad": 0}
        for o in battles:
            if {o.model_a, o.model_b} != {personal, generic} or personal == generic:
                continue
            if o.outcome in ("tie", "both_bad"):
                tally["ties" if o.outcome == "tie" else "both_bad"] += 1
            else:
                won = (o.outcome == "a") == (o.model_a == personal)
                tally["wins" if won else "losses"] += 1
        total = sum(tally.values())
        share = (tally["wins"] + 0.5 * (tally["ties"] + tally["both_bad"])) / total if total else None
        low, high = wilson(share * total, total, ci) if share is not None else (None, None)
        rows.append(PairWinRate(personalized=personal, generic=generic, battles=total, win_rate=share,
                                ci_low=low, ci_high=high, **tally))
    return PersonalizationWinRates(ci=ci, interval="wilson", pairs=rows)
