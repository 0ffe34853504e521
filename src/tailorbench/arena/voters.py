"""Voter quality: who votes with care, and whose votes leave the leaderboard, by a rule stated in advance.

Three signals per voter, each from battles the arena plants or records anyway:
- gold accuracy: the share of gold battles (a pair with a known better answer) won by that answer; a tie or "both
  bad" on a gold battle counts as a miss, since one answer is known to be better;
- position: the share of decisive votes (A or B, not a tie) that went to the answer shown on the left; a voter who
  clicks one side whatever it shows sits near 1 (always left) or 0 (always right);
- repeat consistency: of the battles shown to the voter a second time (`BattleOutcome.repeat_of`), the share
  voted the same way as the first time (the same contestant, or the same tie / "both bad"), sides aside.

The rule (`ExclusionRule`, its defaults below) excludes a voter whose gold accuracy is below 0.5 over at least
2 gold battles, who gave at least 90 % of at least 10 decisive votes to one side, or whose repeat consistency is
below 0.5 over at least 3 repeats. A careless voter meets one of these by chance far more often than a careful
one: a coin-flipping voter misses both of 2 gold battles a quarter of the time, a careful one rarely. Each
threshold is a field, recorded with the result so a leaderboard says which rule made it. Gold battles and repeats
never enter the ratings (`ratings.rated`); excluding a voter removes all of their battles.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tailorbench.arena.ratings import BattleOutcome, StrictModel


class ExclusionRule(StrictModel):
    """The thresholds of the exclusion rule (module docstring)."""

    min_gold_accuracy: float = 0.5
    min_gold_battles: int = 2
    max_one_side_share: float = 0.9
    min_decisive_votes: int = 10
    min_repeat_consistency: float = 0.5
    min_repeats: int = 3

    def describe(self) -> str:
        """The rule in one sentence, for the leaderboard page."""
        return (f"a voter is excluded when their gold accuracy is below {self.min_gold_accuracy:g} over at least "
                f"{self.min_gold_battles} gold battles, when at least {self.max_one_side_share:.0%} of at least "
                f"{self.min_decisive_votes} decisive votes went to one side (left or right), or when their repeat "
                f"consistency is below {self.min_repeat_consistency:g} over at least {self.min_repeats} repeats")


class VoterStats(StrictModel):
    """One voter's figures; a share is None when there is nothing to divide by."""

    voter: str
    votes: int
    gold_battles: int
    gold_correct: int
    gold_accuracy: float | None
    decisive_votes: int
    left_votes: int
    left_share: float | None
    repeats: int
    repeats_consistent: int
    repeat_consistency: float | None
    excluded: bool
    #: why, one entry per rule met: `gold_accuracy`, `always_left`, `always_right`, `repeat_consistency`
    reasons: list[str]


class VoterQuality(StrictModel):
    rule: ExclusionRule
    rule_text: str
    voters: list[VoterStats]
    #: the excluded voters' ids, sorted
    excluded: list[str]


def _verdict(o: BattleOutcome) -> str:
    """The vote as a contestant's name (or tie / both bad), whichever side it was shown on."""
    if o.outcome in ("tie", "both_bad"):
        return o.outcome
    return o.model_a if o.outcome == "a" else o.model_b


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _reasons(rule: ExclusionRule, gold: int, correct: int, decisive: int, left: int, repeats: int,
             consistent: int) -> list[str]:
    reasons = []
    if gold >= rule.min_gold_battles and correct / gold < rule.min_gold_accuracy:
        reasons.append("gold_accuracy")
    if decisive >= rule.min_decisive_votes and decisive:
        if left / decisive >= rule.max_one_side_share:
            reasons.append("always_left")
        elif (decisive - left) / decisive >= rule.max_one_side_share:
            reasons.append("always_right")
    if repeats >= rule.min_repeats and repeats and consistent / repeats < rule.min_repeat_consistency:
        reasons.append("repeat_consistency")
    return reasons


def _stats(voter: str, battles: Sequence[BattleOutcome], by_id: dict[str, BattleOutcome],
           rule: ExclusionRule) -> VoterStats:
    gold = [o for o in battles if o.gold and o.gold_better is not None]
    correct = sum(o.outcome == o.gold_better for o in gold)
    decisive = [o for o in battles if o.outcome in ("a", "b")]
    left = sum((o.outcome == "a") == o.position_a_left for o in decisive)
    firsts = [(o, by_id[o.repeat_of]) for o in battles if o.repeat_of is not None and o.repeat_of in by_id
              and by_id[o.repeat_of].voter == voter]
    consistent = sum(_verdict(o) == _verdict(first) for o, first in firsts)
    reasons = _reasons(rule, len(gold), correct, len(decisive), left, len(firsts), consistent)
    return VoterStats(voter=voter, votes=len(battles), gold_battles=len(gold), gold_correct=correct,
                      gold_accuracy=_share(correct, len(gold)), decisive_votes=len(decisive), left_votes=left,
                      left_share=_share(left, len(decisive)), repeats=len(firsts), repeats_consistent=consistent,
                      repeat_consistency=_share(consistent, len(firsts)), excluded=bool(reasons), reasons=reasons)


def voter_quality(outcomes: Iterable[BattleOutcome], rule: ExclusionRule | None = None) -> VoterQuality:
    """Every voter's gold accuracy, left share and repeat consistency, and who the rule excludes and why."""
    rule = rule or ExclusionRule()
    given = list(outcomes)
    by_id = {o.battle_id: o for o in given}
    by_voter: dict[str, list[BattleOutcome]] = {}
    for o in given:
        by_voter.setdefault(o.voter, []).append(o)
    voters = [_stats(v, by_voter[v], by_id, rule) for v in sorted(by_voter)]
    return VoterQuality(rule=rule, rule_text=rule.describe(), voters=voters,
                        excluded=[s.voter for s in voters if s.excluded])


def exclude_low_quality(outcomes: Iterable[BattleOutcome], quality: VoterQuality) -> list[BattleOutcome]:
    """The battles of the voters `quality` does not exclude, in their order."""
    out = set(quality.excluded)
    return [o for o in outcomes if o.voter not in out]
