"""From first person to third person and back: other people judge the arena's pairs for the voter, and the
voter's own choice is compared with theirs and with an LLM judge's.

`tailor arena export DIR --output-format annotate --out ITEMS.jsonl` writes two files:

- ITEMS.jsonl, the decisive votes as pairwise items (`tailor annotate import`'s `items` format: id, split,
  user_id, persona, question, answer_a, answer_b, with no chosen side): the PersonaFeedback protocol, the persona
  shown and the annotator asked which answer suits this person. Answer A is the battle's model_a answer, so the
  position says nothing of the vote, and the annotation page shows A and B in a random order per assignment;
- ITEMS.first_person.jsonl, the voters' own labels in the long rating format (`tailor agree`'s input: item,
  rater `first-person`, label `A`/`B` in the items' positions, group human).

`tailor agree ITEMS.first_person.jsonl ANNOTATE_EXPORT/ratings.jsonl` is then the first-vs-third-person agreement
(every kappa with its bootstrap interval), with no statistic of its own.

`self_stand_in` is the alt-test's single-expert variant (Calderon, Reichart and Dror 2025, section on a single
expert): the voter is the expert, the third-person annotators are the humans. For each annotator j, item by item,
does the LLM judge or j agree better with the voter? The per-annotator one-sided paired t-test with margin epsilon,
the Benjamini-Yekutieli correction over annotators and the winning rate omega are `agreement.admissibility`'s:
it is `alt_test` called with two columns, annotator j and the voter, so that j's reference is the voter alone.
Epsilon is 0.1, the authors' margin for crowd workers (`ANNOTATOR_EPSILON["crowd"]`): the people a judge would
replace here are third-person annotators recruited as a crowd, not experts, and the question is whether the judge
may stand in for them in guessing what the person themself would choose.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tailorbench.arena.store import ArenaStore

#: the rater name of the voters' own labels
FIRST_PERSON = "first-person"
#: the alt-test margin of the single-expert variant (module docstring)
SELF_EPSILON_GROUP = "crowd"


def first_person_path(items: Path) -> Path:
    """ITEMS.jsonl -> ITEMS.first_person.jsonl, beside it."""
    return items.with_name(items.stem + ".first_person.jsonl")


def write_annotate_export(store: ArenaStore, out: str | Path, reveal_ids: bool = False) -> dict[str, Any]:
    """The items file and the first-person ratings beside it; the export is recorded ('project')."""
    from tailorbench.arena.export import decisive_votes, to_cases, voter_name
    from tailorbench.files import claim_output

    votes, counts = decisive_votes(store)
    place = Path(out)
    claim_output("--out", place, made_by="tailor arena export")
    claim_output("--out", first_person_path(place), made_by="tailor arena export")
    items, labels = [], []
    for v, case in zip(votes, to_cases(votes, voter_name(store, reveal_ids))):
        items.append({"id": case.id, "split": case.split, "user_id": case.user_id, "persona": case.persona,
                      "question": case.question, "answer_a": v.answer_a, "answer_b": v.answer_b,
                      "meta": {"source": "arena", "battle": v.outcome.battle_id}})
        labels.append({"item": case.id, "rater": FIRST_PERSON, "label": v.outcome.outcome.upper(), "group": "human"})
    _write_jsonl(place, items)
    _write_jsonl(first_person_path(place), labels)
    store.record_export("project", place, reveal_ids)
    return {"out": str(place), "first_person": str(first_person_path(place)), "format": "annotate",
            "reveal_ids": reveal_ids, **counts.to_dict()}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    import json

    from tailorbench.files import write_jsonl_atomic

    write_jsonl_atomic(path, (json.dumps(r, ensure_ascii=False) for r in rows))


def judge_labels(first_person: dict[str, str], judge: dict[str, Any]) -> dict[str, str]:
    """A judge's run labels (`chosen`/`rejected` against the benchmark export, whose chosen is the voter's
    answer) in the items' positions (`A`/`B`), on the items the voter labelled."""
    flip = {"A": "B", "B": "A"}
    return {item: (first_person[item] if label == "chosen" else flip[first_person[item]])
            for item, label in judge.items() if item in first_person and label in ("chosen", "rejected")}


def self_stand_in(first_person: dict[str, str], annotators: dict[str, dict[str, str]], judge: dict[str, str],
                  min_items: int = 30, q: float = 0.05) -> dict[str, Any]:
    """The single-expert alt-test (module docstring; `agreement.single_expert`, which `tailor agree --expert
    first-person` runs on the same files): `first_person` item -> the voter's label, `annotators` annotator ->
    item -> label, `judge` item -> label (all `A`/`B`). Returns the alt-test's result shape (humans with rho_f,
    rho_h, p, p_adjusted, rejected; winning_rate; passed at omega >= 0.5) and the epsilon used."""
    from tailorbench.agreement.admissibility import ANNOTATOR_EPSILON, AdmissibilityOptions
    from tailorbench.agreement.matrix import MISSING
    from tailorbench.agreement.single_expert import single_expert_test

    items = sorted(first_person)
    code = {"A": 0, "B": 1}

    def column(labels: dict[str, str]) -> np.ndarray:
        return np.array([code.get(labels.get(i, ""), MISSING) for i in items], dtype=np.int64)

    opts = AdmissibilityOptions(epsilon=ANNOTATOR_EPSILON[SELF_EPSILON_GROUP], annotators=SELF_EPSILON_GROUP,
                                min_items=min_items, q=q, alignment="accuracy")
    names = sorted(annotators)
    humans = np.stack([column(annotators[name]) for name in names], axis=1) if names else \
        np.empty((len(items), 0), dtype=np.int64)
    result = single_expert_test(column(first_person), humans, column(judge), 2, names, FIRST_PERSON, opts)
    return {"variant": "single expert (the voter)", "epsilon": opts.epsilon, "epsilon_from": SELF_EPSILON_GROUP,
            "q": q, "min_items": min_items, **{k: v for k, v in result.items() if k != "max_shared_items"}}


__all__ = ["FIRST_PERSON", "first_person_path", "judge_labels", "self_stand_in",
           "write_annotate_export"]
