"""`tailor arena export DIR --out PATH`: the arena's counted votes as a native pairwise benchmark (docs/data.md),
so what people chose for themselves can be run like any benchmark (`tailor data check`, `tailor eval --data`).

One case per decisive vote: the persona is the voter's profile as the arena stored it (normalised as every
dataset normalises personas), the question theirs, `chosen` the answer they voted for and `rejected` the other.
The tier comes from the stated confidence (3 easy, 2 medium, 1 hard: a pair a person was sure of is an easy one
to get right), the split from the question's origin (the person's own question `specific`, one from the arena's
pool `general`). Left out, and counted in the summary: ties and both-bad votes (no chosen answer), gold battles
(planted, not a preference) and every vote of a voter the quality rule excludes (the leaderboard's rule). Voters
are named by pseudonym unless `reveal_ids`; the export is recorded in the arena database, so a later deletion's
receipt lists it to redo. An arena with no decisive vote yet writes an empty file and says so in its counts
(an export is a snapshot, not a check).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailorbench.arena.store import ArenaStore, VotedBattle

#: the tier of a vote by its stated confidence (1-3)
TIER_BY_CONFIDENCE: dict[int, str] = {3: "easy", 2: "medium", 1: "hard"}
#: question sources that are the voter's own question (the others come from the arena's pool)
OWN_SOURCES = frozenset({"own"})


@dataclass
class ExportCounts:
    """What went into the export and what was left out, by reason."""

    exported: int = 0
    left_out: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"exported": self.exported, "left_out": dict(sorted(self.left_out.items()))}


def voter_name(store: ArenaStore, reveal_ids: bool) -> Any:
    """The function naming a voter in an export: their pid with `reveal_ids`, else the arena's pseudonym."""
    from tailorbench.arena.privacy import pseudonym

    key = store.secret()
    return (lambda pid: pid) if reveal_ids else (lambda pid: pseudonym(key, pid))


def decisive_votes(store: ArenaStore) -> tuple[list[VotedBattle], ExportCounts]:
    """The votes an export carries (not gold, not by an excluded voter, not a tie or both-bad, not between two
    identical answers, where the vote prefers nothing) and the counts of those left out. The quality rule sees
    every vote, gold included, as the leaderboard's does."""
    from tailorbench.arena.voters import voter_quality

    voted = store.voted_battles()
    excluded = set(voter_quality([v.outcome for v in voted]).excluded)
    counts = ExportCounts()
    kept = []
    for v in voted:
        reason = ("gold" if v.outcome.gold else "excluded_voter" if v.pid in excluded
                  else v.outcome.outcome if v.outcome.outcome in ("tie", "both_bad")
                  else "identical_answers" if v.answer_a.strip() == v.answer_b.strip() else None)
        if reason is not None:
            counts.left_out[reason] += 1
            continue
        kept.append(v)
    counts.exported = len(kept)
    return kept, counts


def chosen_rejected(v: VotedBattle) -> tuple[str, str, str, str]:
    """(chosen answer, rejected answer, chosen model, rejected model) of a decisive vote."""
    o = v.outcome
    if o.outcome == "a":
        return v.answer_a, v.answer_b, o.model_a, o.model_b
    return v.answer_b, v.answer_a, o.model_b, o.model_a


def to_cases(votes: list[VotedBattle], name: Any) -> list[Any]:
    """The decisive votes as PairCases (ids are the battle refs, unique in an arena)."""
    from tailorbench.personas import normalise_persona
    from tailorbench.schema import PairCase

    personas: dict[str, dict[str, Any]] = {}
    cases = []
    for v in votes:
        chosen, rejected, chosen_model, rejected_model = chosen_rejected(v)
        user = name(v.pid)
        persona = personas.setdefault(user, normalise_persona(v.profile)[0])
        cases.append(PairCase(
            id=f"arena-{v.outcome.battle_id}", split="specific" if v.question_source in OWN_SOURCES else "general",
            tier=TIER_BY_CONFIDENCE.get(v.outcome.confidence, "medium"), user_id=user, persona=persona,
            question=v.question, chosen=chosen, rejected=rejected,
            meta={"source": "arena", "battle": v.outcome.battle_id, "confidence": v.outcome.confidence,
                  "chosen_model": chosen_model, "rejected_model": rejected_model}))
    return cases


def write_benchmark_export(store: ArenaStore, out: str | Path, reveal_ids: bool = False) -> dict[str, Any]:
    """Write the native JSONL to `out` (claimed as `--out`), record the export, and return its summary."""
    from tailorbench.datasets.native import write_native
    from tailorbench.files import claim_output

    votes, counts = decisive_votes(store)
    place = Path(out)
    claim_output("--out", place, made_by="tailor arena export")
    write_native(to_cases(votes, voter_name(store, reveal_ids)), place)
    store.record_export("benchmark", place, reveal_ids)
    return {"out": str(place), "format": "benchmark", "reveal_ids": reveal_ids, **counts.to_dict()}
