"""PRISM read by its authors' conventions, on a fixture in the release's schema (utterances.jsonl and survey.jsonl
of HannahKirk/prism-alignment): double-chosen interactions, exact ties, gaps within 5, several turns, answers of
the placeholder text `EMPTY STRING`, survey rows with consent, timing and study-admin fields. The counts equal
the rules recomputed here independently: the tie threshold and the model battles from `extract_battles` of
`src/data_analysis/ranking.py` (github.com/HannahKirk/prism-alignment, commit 2572ed91), re-implemented below
on the wide "openers" rows it reads; the rest as the module docstring of datasets/prism.py states them. The
codebook itself (prism_codebook.pdf) is not read by a test here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.errors import ConfigError, DataError

ADMIN = {"survey_only": False, "num_completed_conversations": 2, "consent": "Yes", "consent_age": "Yes",
         "generated_datetime": "2023-11-22 15:00:00", "timing_duration_s": 600.0, "timing_duration_mins": 10.0,
         "included_in_US_REP": False, "included_in_UK_REP": True, "order_stated_prefs": "1,2",
         "order_lm_usecases": "3,1"}


def _survey(user: str, balanced: bool) -> dict[str, Any]:
    return {"user_id": user, **ADMIN, "included_in_balanced_subset": balanced, "self_description": f"I am {user}.",
            "system_string": "Be brief.", "age": "25-34 years old", "gender": "Female",
            "employment_status": "Working full-time", "education": "University", "marital_status": "Single",
            "english_proficiency": "Native speaker", "religion": {"simplified": "No religion"},
            "ethnicity": {"simplified": "White"}, "location": {"reside_region": "Europe"},
            "lm_familiarity": "Very familiar", "stated_prefs": {"values": 80, "fluency": 90}}


def _u(conv: str, user: str, turn: int, model: str, text: str, score: int, chosen: bool) -> dict[str, Any]:
    return {"conversation_id": conv, "user_id": user, "turn": turn, "within_turn_id": 0,
            "interaction_id": f"{conv}-{turn}", "utterance_id": f"{conv}-{turn}-{model}-{text[:4]}",
            "user_prompt": f"prompt {conv} {turn}", "model_response": text, "model_name": model, "score": score,
            "if_chosen": chosen, "conversation_type": "unguided", "model_provider": "p", "included_in_balanced_subset":
            False}


UTTERANCES = [
    # c0 opener: four models, gaps 30, 3 (within 5), 0 (exact tie)
    _u("c0", "u0", 0, "m1", "best answer", 90, True), _u("c0", "u0", 0, "m2", "good", 60, False),
    _u("c0", "u0", 0, "m3", "close", 87, False), _u("c0", "u0", 0, "m4", "same", 90, False),
    # c0 later turn: two samples of the chosen model
    _u("c0", "u0", 1, "m1", "follow-up a", 80, True), _u("c0", "u0", 1, "m1", "follow-up b", 40, False),
    # c1 opener: the chosen answer twice, identical text (double chosen), and an EMPTY STRING answer
    _u("c1", "u1", 0, "m2", "twice", 70, True), _u("c1", "u1", 0, "m2", "twice", 70, True),
    _u("c1", "u1", 0, "m3", "EMPTY STRING", 10, False), _u("c1", "u1", 0, "m4", "meh", 64, False),
    # c2 opener: the chosen answer scored below another by more than 5 (contradicted), one within 5
    _u("c2", "u1", 0, "m1", "picked", 50, True), _u("c2", "u1", 0, "m2", "better scored", 70, False),
    _u("c2", "u1", 0, "m3", "near", 46, False),
    # c3: a participant outside the balanced subset, two turns
    _u("c3", "u2", 0, "m1", "x", 80, True), _u("c3", "u2", 0, "m2", "y", 20, False),
    _u("c3", "u2", 1, "m1", "x2", 80, True), _u("c3", "u2", 1, "m1", "y2", 79, False),
]


@pytest.fixture
def release(tmp_path: Path) -> Path:
    (tmp_path / "survey.jsonl").write_text("".join(json.dumps(_survey(u, u != "u2")) + "\n"
                                                   for u in ("u0", "u1", "u2")), encoding="utf-8")
    (tmp_path / "utterances.jsonl").write_text("".join(json.dumps(u) + "\n" for u in UTTERANCES), encoding="utf-8")
    return tmp_path


def rule_pairs(rows: list[dict[str, Any]], threshold: float, openers_only: bool, balanced_users: set[str] | None
               ) -> tuple[list[tuple[str, str]], int, int]:
    """The chosen-vs-other rule written out: per interaction, the one chosen text against every other rated text;
    |gap| <= threshold a tie, a larger negative gap a contradiction. (pairs, ties, contradicted)."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if (balanced_users is None or r["user_id"] in balanced_users) and (not openers_only or r["turn"] == 0):
            groups.setdefault((r["conversation_id"], r["turn"]), []).append(r)
    pairs, ties, contradicted = [], 0, 0
    for rated in groups.values():
        chosen_texts = {r["model_response"] for r in rated if r["if_chosen"]}
        assert len(chosen_texts) == 1
        best = next(r for r in rated if r["if_chosen"])
        for other in rated:
            if other["if_chosen"]:
                continue
            gap = best["score"] - other["score"]
            if abs(gap) <= threshold:
                ties += 1
            elif gap < 0:
                contradicted += 1
            else:
                pairs.append((best["model_response"], other["model_response"]))
    return pairs, ties, contradicted


def authors_extract_battles(openers: list[dict[str, Any]], tie_thresh: float = 5) -> list[dict[str, Any]]:
    """`extract_battles` of src/data_analysis/ranking.py (2572ed91), as published, on wide opener rows
    (`model_name_a..d`, `score_a..d`)."""
    battles = []
    for row in openers:
        model_store = {}
        for suffix in ["a", "b", "c", "d"]:
            model_name = row.get(f"model_name_{suffix}")
            model_score = row.get(f"score_{suffix}")
            if model_name is not None and model_score is not None:
                model_store[model_name] = model_score
        for (model_a, score_a), (model_b, score_b) in itertools.combinations(model_store.items(), 2):
            if abs(score_a - score_b) <= tie_thresh:
                winner = "tie"
            elif score_a > score_b:
                winner = "model_a"
            else:
                winner = "model_b"
            battles.append({"model_a": model_a, "score_a": score_a, "model_b": model_b, "score_b": score_b,
                            "winner": winner})
    return battles


def _wide_openers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["turn"] != 0:
            continue
        row = out.setdefault(r["conversation_id"], {})
        suffix = "abcd"[len(row) // 2]
        row[f"model_name_{suffix}"], row[f"score_{suffix}"] = r["model_name"], r["score"]
    return list(out.values())


@pytest.mark.parametrize(("threshold", "openers_only", "balanced"),
                         [(5, False, False), (0, False, False), (5, True, False), (5, True, True), (10, False, True)])
def test_chosen_pairs_follow_the_rules(release: Path, threshold: int, openers_only: bool, balanced: bool) -> None:
    options = {"tie_threshold": str(threshold), "openers_only": str(openers_only).lower(),
               "balanced": str(balanced).lower()}
    bench = load_benchmark(release, options=options)  # the default load does not stop on the double chosen
    users = {"u0", "u1"} if balanced else None
    want, ties, contradicted = rule_pairs(UTTERANCES, threshold, openers_only, users)
    assert [(c.chosen, c.rejected) for c in bench.cases] == want
    stats = bench.layout_stats
    assert (stats["ties"], stats["contradicted"]) == (ties, contradicted)
    assert stats["double_chosen_identical"] == 1 and stats["empty_string_responses"] == 1
    assert stats["later_turns_left_out"] == (0 if not openers_only else sum(
        r["turn"] > 0 and (users is None or r["user_id"] in users) for r in UTTERANCES))
    assert stats["users_outside_balanced_subset"] == (1 if balanced else 0)
    flagged = [c for c in bench.cases if c.meta.get("empty_response")]
    assert [c.rejected for c in flagged] == (["EMPTY STRING"] if ("twice", "EMPTY STRING") in want else [])


def test_default_is_the_authors_threshold(release: Path) -> None:
    bench = load_benchmark(release)
    assert [(c.chosen, c.rejected) for c in bench.cases] == rule_pairs(UTTERANCES, 5, False, None)[0]
    assert all(c.meta["score_gap"] > 5 for c in bench.cases)


def test_battles_equal_extract_battles(release: Path) -> None:
    bench = load_benchmark(release, options={"pairs": "battles", "openers_only": "true"})
    battles = authors_extract_battles(_wide_openers(UTTERANCES))
    decided = [b for b in battles if b["winner"] != "tie"]
    got = sorted((c.meta["chosen_model"], c.meta["rejected_model"], c.meta["score_gap"]) for c in bench.cases)
    want = sorted(((b["model_a"], b["model_b"]) if b["winner"] == "model_a" else (b["model_b"], b["model_a"]))
                  + (abs(b["score_a"] - b["score_b"]),) for b in decided)
    assert got == want
    assert bench.layout_stats["ties"] == sum(b["winner"] == "tie" for b in battles)


def test_persona_is_self_description_demographics_and_stated_prefs(release: Path) -> None:
    persona = load_benchmark(release).cases[0].persona
    assert persona["self_description"] == "I am u0." and persona["stated_prefs"] == {"values": 80, "fluency": 90}
    assert not set(ADMIN) & set(persona) and "included_in_balanced_subset" not in persona
    assert "lm_familiarity" not in persona
    everything = load_benchmark(release, options={"persona_fields": "all"}).cases[0].persona
    assert set(ADMIN) <= set(everything)
    # strata still read the whole survey row
    assert load_benchmark(release, options={"strata": "included_in_UK_REP"}).tiers == ("True",)


def test_two_chosen_of_different_text_is_an_invalid_row(release: Path) -> None:
    rows = [*UTTERANCES, _u("c9", "u0", 0, "m1", "one", 90, True), _u("c9", "u0", 0, "m2", "two", 80, True)]
    (release / "utterances.jsonl").write_text("".join(json.dumps(u) + "\n" for u in rows), encoding="utf-8")
    with pytest.raises(DataError) as error:
        load_benchmark(release)
    assert (error.value.line, error.value.field) == (len(rows), "if_chosen")
    assert load_benchmark(release, skip_invalid=True).cases


@pytest.mark.parametrize(("key", "value"), [("tie_threshold", "-1"), ("pairs", "all"), ("openers_only", "maybe"),
                                            ("persona_fields", "some"), ("tie", "5")])
def test_bad_options_are_config_errors(release: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError):
        load_benchmark(release, options={key: value})
