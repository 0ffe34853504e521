"""The arena's leaderboard statistics against independent implementations and seeded simulations.

The fit is checked here against choix (I-LSR, another algorithm for the same maximum-likelihood estimate) and
against statsmodels' and scikit-learn's logistic regressions on the same battles, contestant by contestant, to 1e-6
rating points, and the intervals' coverage against known strengths; against LMArena's arena-rank, which pins numpy
2.3.3 and jax 0.8.1 and so runs in a venv of its own, in test_arena_rank.py.
"""

from __future__ import annotations

import math
import warnings

import choix
import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import assume, example, given, settings
from hypothesis import strategies as hs
from sklearn.linear_model import LogisticRegression
from statsmodels.stats.proportion import proportion_confint

from tailorbench.arena.ratings import (
    NOT_GIVEN,
    OTHER,
    BattleOutcome,
    Ratings,
    bradley_terry,
    personalized_vs_generic,
    rank_ub,
    segment_leaderboards,
)

ALPHA = 400.0 / math.log(10.0)
TOL = 1e-6


def battle(i: int, a: str, b: str, outcome: str, *, voter: str = "v", len_a: int = 100, len_b: int = 100,
           segments: dict[str, str] | None = None, gold: bool = False) -> BattleOutcome:
    return BattleOutcome(battle_id=f"b{i}", voter=voter, model_a=a, model_b=b, outcome=outcome,  # type: ignore[arg-type]
                         confidence=2, len_a=len_a, len_b=len_b, segments=segments or {}, gold=gold,
                         gold_better="a" if gold else None, position_a_left=bool(i % 2))


def simulate(rng: np.random.Generator, strengths: np.ndarray, n: int, *, tie_rate: float = 0.1,
             length_effect: float = 0.0, long_talkers: tuple[int, ...] = ()) -> list[BattleOutcome]:
    """Battles with uniform pairing whose expected A score is sigmoid(s_a - s_b + length_effect * x), x FastChat's
    standardised length feature computed as the fit will: a tie (half a win) with probability `tie_rate`, split
    evenly between "tie" and "both bad". Contestants in `long_talkers` write about twice as long."""
    k = len(strengths)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    base = rng.integers(200, 1200, (2, n))
    la = base[0] * np.where(np.isin(a, long_talkers), 2, 1)
    lb = base[1] * np.where(np.isin(b, long_talkers), 2, 1)
    raw = (la - lb) / (la + lb + 1.0)
    x = (raw - raw.mean()) / raw.std()
    p = 1.0 / (1.0 + np.exp(-(strengths[a] - strengths[b] + length_effect * x)))
    u = rng.random(n)
    tie = u < tie_rate
    a_wins = rng.random(n) < (p - tie_rate / 2) / (1 - tie_rate)
    outcome = np.where(tie, np.where(u < tie_rate / 2, "tie", "both_bad"), np.where(a_wins, "a", "b"))
    names = [f"m{i}" for i in range(k)]
    return [BattleOutcome(battle_id=f"b{i}", voter="v", model_a=names[ai], model_b=names[bi], outcome=oc,
                          confidence=2, len_a=lai, len_b=lbi, segments={}, gold=False, gold_better=None,
                          position_a_left=bool(i % 2))
            for i, (ai, bi, oc, lai, lbi) in enumerate(zip(a.tolist(), b.tolist(), outcome.tolist(), la.tolist(),
                                                           lb.tolist()))]


def design(battles: list[BattleOutcome], names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    index = {n: i for i, n in enumerate(names)}
    x = np.zeros((len(battles), len(names)))
    for r, o in enumerate(battles):
        x[r, index[o.model_a]] += 1.0
        x[r, index[o.model_b]] -= 1.0
    y = np.array([{"a": 1.0, "b": 0.0}.get(o.outcome, 0.5) for o in battles])
    return x, y


def centred(natural: np.ndarray) -> np.ndarray:
    return (natural - natural.mean()) * ALPHA + 1000.0


def by_name(r: Ratings) -> dict[str, float]:
    return {c.contestant: c.rating for c in r.contestants}


@pytest.fixture
def battles() -> list[BattleOutcome]:
    rng = np.random.default_rng(7)
    return simulate(rng, np.array([-0.8, -0.3, 0.0, 0.2, 0.5, 0.9]), 600, tie_rate=0.2)


def test_the_fit_equals_choix_statsmodels_and_sklearn_item_by_item(battles: list[BattleOutcome]) -> None:
    ours = by_name(bradley_terry(battles, min_battles=0, bootstrap=0))
    names = sorted(ours)
    x, y = design(battles, names)
    # choix's I-LSR on the win matrix, a tie half a win each way
    wins = np.zeros((len(names), len(names)))
    for row, score in zip(x, y):
        i, j = int(np.flatnonzero(row > 0)[0]), int(np.flatnonzero(row < 0)[0])
        wins[i, j] += score
        wins[j, i] += 1.0 - score
    lsr = centred(choix.ilsr_pairwise_dense(wins, tol=1e-14, max_iter=10_000))
    # statsmodels: a binomial GLM on the battle matrix (the first contestant as reference), the score as a share
    glm = sm.GLM(y, x[:, 1:], family=sm.families.Binomial()).fit(tol=1e-14)
    statsm = centred(np.concatenate([[0.0], glm.params]))
    # scikit-learn: each battle as a win row and a loss row weighted by its score, no penalty
    xx, yy = np.vstack([x[:, 1:], x[:, 1:]]), np.concatenate([np.ones(len(y)), np.zeros(len(y))])
    lr = LogisticRegression(C=np.inf, fit_intercept=False, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    lr.fit(xx, yy, sample_weight=np.concatenate([y, 1.0 - y]))
    sk = centred(np.concatenate([[0.0], lr.coef_[0]]))
    for k, name in enumerate(names):
        assert ours[name] == pytest.approx(lsr[k], abs=TOL), name
        assert ours[name] == pytest.approx(statsm[k], abs=TOL), name
        assert ours[name] == pytest.approx(sk[k], abs=TOL), name


@settings(max_examples=25, deadline=None)
@given(seed=hs.integers(0, 2**32 - 1), k=hs.integers(2, 6), n=hs.integers(20, 200),
       tie_rate=hs.sampled_from([0.0, 0.1, 0.4]), style=hs.booleans())
@example(seed=158, k=2, n=20, tie_rate=0.1, style=True)  # separated by the length covariate alone (found in a run)
def test_the_fit_equals_statsmodels_on_any_data_where_the_estimate_exists(seed: int, k: int, n: int,
                                                                          tie_rate: float, style: bool) -> None:
    rng = np.random.default_rng(seed)
    battles = simulate(rng, rng.normal(0.0, 1.0, k), n, tie_rate=tie_rate, length_effect=0.3 if style else 0.0)
    r = bradley_terry(battles, min_battles=0, bootstrap=0, style_control=style)
    assume(r.mle_exists)
    names = sorted(by_name(r))
    x, y = design(battles, names)
    columns = [x[:, 1:]]
    if style:
        assert r.length is not None
        raw = np.array([(o.len_a - o.len_b) / (o.len_a + o.len_b + 1.0) for o in battles])
        columns.append(((raw - raw.mean()) / raw.std())[:, None])
    glm = sm.GLM(y, np.hstack(columns), family=sm.families.Binomial()).fit(tol=1e-14, maxiter=1000)
    ref = centred(np.concatenate([[0.0], glm.params[: k - 1]]))
    ours = by_name(r)
    for i, name in enumerate(names):
        assert ours[name] == pytest.approx(ref[i], abs=TOL), name


def test_style_control_equals_a_logistic_regression_with_fastchats_length_feature() -> None:
    rng = np.random.default_rng(11)
    battles = simulate(rng, np.linspace(-0.6, 0.6, 5), 800, length_effect=0.5, long_talkers=(0,))
    r = bradley_terry(battles, min_battles=0, bootstrap=0, style_control=True)
    names = sorted(by_name(r))
    x, y = design(battles, names)
    # fastchat/serve/monitor/rating_systems.py preprocess_for_style: (a - b) / (a + b + 1), np.mean / np.std
    la = np.array([o.len_a for o in battles], dtype=float)
    lb = np.array([o.len_b for o in battles], dtype=float)
    raw = (la - lb) / (la + lb + 1.0)
    feature = (raw - np.mean(raw)) / np.std(raw)
    glm = sm.GLM(y, np.column_stack([x[:, 1:], feature]), family=sm.families.Binomial()).fit(tol=1e-14)
    ref = centred(np.concatenate([[0.0], glm.params[:-1]]))
    ours = by_name(r)
    for k, name in enumerate(names):
        assert ours[name] == pytest.approx(ref[k], abs=TOL), name
    assert r.length is not None
    assert r.length.coefficient == pytest.approx(glm.params[-1], abs=1e-9)
    assert r.length.rating_points == pytest.approx(glm.params[-1] * ALPHA, abs=TOL)
    assert (r.length.feature_mean, r.length.feature_std) == pytest.approx((raw.mean(), raw.std()))


def test_style_control_recovers_a_planted_length_effect() -> None:
    """m0 is no stronger than m1 but writes twice as long, and long answers win: plain Bradley–Terry credits m0
    with the length, style control gives it back and finds the planted coefficient inside its interval."""
    strengths = np.array([0.0, 0.0, -0.5, 0.5])
    battles = simulate(np.random.default_rng(3), strengths, 4000, length_effect=0.6, long_talkers=(0,))
    plain = by_name(bradley_terry(battles, min_battles=0, bootstrap=0))
    styled = bradley_terry(battles, min_battles=0, bootstrap=200, seed=1, style_control=True)
    truth = dict(zip([f"m{i}" for i in range(4)], centred(strengths)))
    assert plain["m0"] - plain["m1"] > 60
    assert abs(by_name(styled)["m0"] - by_name(styled)["m1"]) < 25
    for c in styled.contestants:
        assert c.ci_low is not None and c.ci_high is not None
        assert c.ci_low <= truth[c.contestant] <= c.ci_high
    assert styled.length is not None and styled.length.ci_low is not None and styled.length.ci_high is not None
    assert styled.length.ci_low <= 0.6 <= styled.length.ci_high
    assert styled.length.rating_points == pytest.approx(styled.length.coefficient * ALPHA)


def test_interval_coverage_is_nominal_in_a_seeded_simulation() -> None:
    """8 contestants of known strength, 2,000 battles with ties, 200 repetitions of a 200-resample bootstrap:
    the 95 % intervals hold the true (centred) rating 93–97 % of the time."""
    strengths = np.linspace(-1.0, 1.0, 8)
    truth = dict(zip([f"m{i}" for i in range(8)], centred(strengths)))
    rng = np.random.default_rng(2026)
    hits = total = 0
    for rep in range(200):
        r = bradley_terry(simulate(rng, strengths, 2000), min_battles=0, bootstrap=200, seed=rep)
        for c in r.contestants:
            assert c.ci_low is not None and c.ci_high is not None
            hits += c.ci_low <= truth[c.contestant] <= c.ci_high
            total += 1
    assert total == 1600
    assert 0.93 <= hits / total <= 0.97, hits / total


def test_gold_battles_and_repeats_never_enter_the_ratings(battles: list[BattleOutcome]) -> None:
    gold = [battle(10_000 + i, "m0", "m5", "a", gold=True) for i in range(30)]
    repeats = [BattleOutcome(**{**o.__dict__, "battle_id": f"r{o.battle_id}", "repeat_of": o.battle_id})
               for o in battles[:40]]
    plain = bradley_terry(battles, bootstrap=50)
    mixed = bradley_terry(gold + battles + repeats, bootstrap=50)
    assert mixed.contestants == plain.contestants
    assert (mixed.battles, mixed.gold_left_out, mixed.repeats_left_out) == (600, 30, 40)


def test_min_battles_ranks_and_the_anchor(battles: list[BattleOutcome]) -> None:
    newcomer = [battle(20_000 + i, "new", "m2", "a" if i % 3 else "b") for i in range(5)]
    r = bradley_terry(battles + newcomer, min_battles=20, bootstrap=100)
    rows = {c.contestant: c for c in r.contestants}
    assert rows["new"].battles == 5 and not rows["new"].ranked and rows["new"].rank is None
    assert all(c.ranked and c.rank is not None for n, c in rows.items() if n != "new")
    # the ranked contestants' mean is the anchor; the newcomer does not move it
    assert np.mean([c.rating for n, c in rows.items() if n != "new"]) == pytest.approx(1000.0, abs=1e-9)
    pinned = bradley_terry(battles + newcomer, min_battles=20, bootstrap=0, anchor="m2", anchor_rating=1114.0)
    assert by_name(pinned)["m2"] == pytest.approx(1114.0)
    gaps = by_name(r)["m5"] - by_name(r)["m0"], by_name(pinned)["m5"] - by_name(pinned)["m0"]
    assert gaps[0] == pytest.approx(gaps[1], abs=1e-6)
    with pytest.raises(ValueError, match="anchor"):
        bradley_terry(battles, anchor="nobody", bootstrap=0)


def fastchat_rank(lower: list[float], upper: list[float]) -> list[int]:
    """fastchat/serve/monitor/monitor.py recompute_final_ranking, as written there."""
    sorted_lower = np.sort(np.asarray(lower))
    return (1 + len(sorted_lower) - np.searchsorted(sorted_lower, np.asarray(upper), side="right")).tolist()


def test_rank_ub_is_lmarenas() -> None:
    lower, upper = [1100.0, 1090.0, 1000.0, 995.0, 900.0], [1150.0, 1120.0, 1080.0, 1001.0, 990.0]
    assert rank_ub(lower, upper) == [1, 1, 3, 3, 5] == fastchat_rank(lower, upper)
    r = bradley_terry(simulate(np.random.default_rng(5), np.linspace(-1, 1, 6), 1500), min_battles=0,
                      bootstrap=100)
    lows = [c.ci_low for c in r.contestants]
    highs = [c.ci_high for c in r.contestants]
    assert [c.rank for c in r.contestants] == fastchat_rank(lows, highs)  # type: ignore[arg-type]


def test_the_bootstrap_is_seeded(battles: list[BattleOutcome]) -> None:
    one, two = bradley_terry(battles, bootstrap=100, seed=4), bradley_terry(battles, bootstrap=100, seed=4)
    assert one == two
    other = bradley_terry(battles, bootstrap=100, seed=5)
    assert [c.ci_low for c in other.contestants] != [c.ci_low for c in one.contestants]
    assert [c.rating for c in other.contestants] == [c.rating for c in one.contestants]


def test_a_rating_the_data_cannot_bound_is_flagged_and_finite() -> None:
    rng = np.random.default_rng(9)
    battles = simulate(rng, np.zeros(4), 300) + [battle(30_000 + i, "loser", f"m{i % 4}", "b") for i in range(25)]
    r = bradley_terry(battles, min_battles=0, bootstrap=50)
    assert not r.mle_exists
    rows = by_name(r)
    assert all(math.isfinite(v) for v in rows.values())
    # the others' gaps are what they are without the loser
    alone = by_name(bradley_terry(battles[:300], min_battles=0, bootstrap=0))
    assert rows["m3"] - rows["m0"] == pytest.approx(alone["m3"] - alone["m0"], abs=1e-4)
    assert bradley_terry(battles[:300], min_battles=0, bootstrap=0).mle_exists


def test_the_result_round_trips_through_json_strictly(battles: list[BattleOutcome]) -> None:
    r = bradley_terry(battles, bootstrap=20, style_control=True)
    assert Ratings.model_validate_json(r.model_dump_json()) == r
    assert bradley_terry([], bootstrap=10).contestants == []


def test_segments_fold_the_small_ones_into_other() -> None:
    rng = np.random.default_rng(13)
    raw = simulate(rng, np.linspace(-0.5, 0.5, 4), 900)
    ages = ["18-29"] * 500 + ["30-44"] * 300 + ["45-64"] * 40 + ["65+"] * 20 + [""] * 15 + ["other"] * 25
    battles = [BattleOutcome(**{**o.__dict__, "segments": {"age": a} if a else {}}) for o, a in zip(raw, ages)]
    boards = segment_leaderboards(battles, "age", min_battles=10, min_segment_battles=100, bootstrap=30)
    assert [(s.segment, s.values, s.battles) for s in boards.segments] == [
        ("18-29", ["18-29"], 500), ("30-44", ["30-44"], 300),
        (OTHER, sorted(["45-64", "65+", NOT_GIVEN, "other"]), 100)]
    assert boards.segments[0].ratings == bradley_terry(battles[:500], min_battles=10, bootstrap=30)
    assert boards.min_segment_battles == 100
    # without a separate floor, min_battles is the floor
    assert segment_leaderboards(battles, "age", min_battles=400, bootstrap=0).segments[0].battles == 500


def test_personalized_vs_generic_wilson_equals_statsmodels() -> None:
    battles = ([battle(i, "p", "g", "a") for i in range(14)] + [battle(100 + i, "g", "p", "a") for i in range(5)]
               + [battle(200 + i, "p", "g", "tie") for i in range(3)] + [battle(300, "g", "p", "both_bad")]
               + [battle(400, "p", "other", "a"), battle(401, "p", "g", "a", gold=True)])
    result = personalized_vs_generic(battles, [("p", "g"), ("q", "g")], ci=0.9)
    row, empty = result.pairs
    assert (row.battles, row.wins, row.losses, row.ties, row.both_bad) == (23, 14, 5, 3, 1)
    assert row.win_rate == pytest.approx(16.0 / 23)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low, high = proportion_confint(16.0, 23, alpha=0.1, method="wilson")
    assert (row.ci_low, row.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert (empty.battles, empty.win_rate, empty.ci_low) == (0, None, None)
    assert result.interval == "wilson"


def test_a_resample_without_a_contestant_leaves_it_out_of_that_contestants_interval(
        battles: list[BattleOutcome]) -> None:
    """One tie with m0 puts `rare` level with m0 in every resample that draws it; the third of resamples that
    draw no battle of `rare` say nothing about it, so its interval is m0's, not pulled towards the centre."""
    r = bradley_terry([*battles, battle(40_000, "rare", "m0", "tie")], min_battles=0, bootstrap=300, seed=2)
    rows = {c.contestant: c for c in r.contestants}
    assert rows["rare"].rating == pytest.approx(rows["m0"].rating, abs=1e-6)
    assert rows["rare"].ci_high is not None and rows["m0"].ci_high is not None
    assert rows["rare"].ci_high < 950 and rows["m0"].ci_high < 950
