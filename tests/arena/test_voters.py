"""Voter quality: gold accuracy, position bias and repeat consistency, and the stated exclusion rule."""

from __future__ import annotations

from tailorbench.arena.ratings import BattleOutcome, bradley_terry
from tailorbench.arena.voters import ExclusionRule, VoterQuality, exclude_low_quality, voter_quality


def vote(i: int, voter: str, outcome: str, *, left: bool = True, a: str = "m1", b: str = "m2",
         gold: bool = False, repeat_of: str | None = None) -> BattleOutcome:
    return BattleOutcome(battle_id=f"{voter}-{i}", voter=voter, model_a=a, model_b=b, outcome=outcome,  # type: ignore[arg-type]
                         confidence=2, len_a=10, len_b=12, segments={}, gold=gold,
                         gold_better="a" if gold else None, position_a_left=left, repeat_of=repeat_of)


def stats(q: VoterQuality, voter: str):  # type: ignore[no-untyped-def]
    return next(s for s in q.voters if s.voter == voter)


def test_gold_accuracy_excludes_below_half_from_two_gold_battles() -> None:
    votes = [vote(0, "careless", "b", gold=True), vote(1, "careless", "tie", gold=True),
             vote(0, "one-gold", "b", gold=True),
             vote(0, "careful", "a", gold=True), vote(1, "careful", "b", gold=True)]
    q = voter_quality(votes)
    careless = stats(q, "careless")
    assert (careless.gold_battles, careless.gold_correct, careless.gold_accuracy) == (2, 0, 0.0)
    assert careless.reasons == ["gold_accuracy"]
    # one gold battle is too few to judge; half right is not below half
    assert not stats(q, "one-gold").excluded and stats(q, "one-gold").gold_accuracy == 0.0
    assert not stats(q, "careful").excluded and stats(q, "careful").gold_accuracy == 0.5
    assert q.excluded == ["careless"]


def test_one_sided_voters_left_or_right() -> None:
    # model_a shown on the left and voted "a", or shown on the right and voted "b": a left vote either way
    always_left = [vote(i, "lefty", "a" if i % 2 else "b", left=bool(i % 2)) for i in range(10)]
    always_right = [vote(i, "righty", "b" if i % 2 else "a", left=bool(i % 2)) for i in range(12)]
    nine_of_ten = [vote(i, "mostly", "a", left=i < 9) for i in range(10)]
    few = [vote(i, "few", "a", left=True) for i in range(9)] + [vote(9, "few", "tie")]
    fair = [vote(i, "fair", "a", left=i < 5) for i in range(10)]
    q = voter_quality(always_left + always_right + nine_of_ten + few + fair)
    assert stats(q, "lefty").left_share == 1.0 and stats(q, "lefty").reasons == ["always_left"]
    assert stats(q, "righty").left_share == 0.0 and stats(q, "righty").reasons == ["always_right"]
    assert stats(q, "mostly").left_share == 0.9 and stats(q, "mostly").reasons == ["always_left"]
    # 9 decisive votes (a tie is no side) are too few to judge
    assert stats(q, "few").decisive_votes == 9 and not stats(q, "few").excluded
    assert stats(q, "fair").left_share == 0.5 and not stats(q, "fair").excluded
    assert q.excluded == ["lefty", "mostly", "righty"]


def test_repeat_consistency_compares_contestants_not_sides() -> None:
    firsts = [vote(i, "v", "a", a="m1", b="m2") for i in range(3)]
    # shown again with the sides swapped: voting for m1 again is "b" now
    same = [vote(10 + i, "v", "b", a="m2", b="m1", repeat_of=f"v-{i}") for i in range(3)]
    q = voter_quality(firsts + same)
    assert (stats(q, "v").repeats, stats(q, "v").repeats_consistent, stats(q, "v").repeat_consistency) == (3, 3, 1.0)
    flipped = [vote(10 + i, "w", "a", a="m2", b="m1", repeat_of=f"w-{i}") for i in range(3)]
    wfirst = [vote(i, "w", "a", a="m1", b="m2") for i in range(3)]
    q = voter_quality(wfirst + flipped)
    assert stats(q, "w").repeat_consistency == 0.0 and stats(q, "w").reasons == ["repeat_consistency"]
    # two repeats are too few under the default rule, enough under a stricter one
    two = wfirst[:2] + flipped[:2]
    assert not voter_quality(two).voters[0].excluded
    assert voter_quality(two, ExclusionRule(min_repeats=2)).excluded == ["w"]


def test_exclusion_removes_every_battle_of_the_excluded_and_the_rule_is_stated() -> None:
    good = [vote(i, "good", "a" if i % 3 else "b", left=bool(i % 2)) for i in range(12)]
    bad = [vote(i, "bad", "a", left=True, a="m2", b="m1") for i in range(12)]
    q = voter_quality(good + bad)
    assert q.excluded == ["bad"]
    kept = exclude_low_quality(good + bad, q)
    assert kept == good
    assert bradley_terry(kept, bootstrap=0) == bradley_terry(good, bootstrap=0)
    assert "0.5 over at least 2 gold battles" in q.rule_text and "90%" in q.rule_text
    assert VoterQuality.model_validate_json(q.model_dump_json()) == q
