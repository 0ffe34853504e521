"""The layouts of PrefEval, PersonaMem, Personalized RewardBench and PRISM: detection, the pair view every judge
and `train-rm` use, and strict readers (a missing or mistyped field is an error naming file, line or entry, and
field; `tailor data check` exits 2). PrefEval and PersonaMem fixtures copy the real files' shapes; Personalized
RewardBench and PRISM have no rows on this machine, so their fixtures follow their dataset cards and the authors'
loaders (`evaluation/pairwise.py` of Martin-qyma/Personalized-RewardBench at a5c6814d, the PRISM data card of
HannahKirk/prism-alignment at a9ec8214); a real file that differs fails loudly, naming the field."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import detect_layout, load_benchmark, write_benchmark
from tailorbench.datasets.choice import load_choice_items
from tailorbench.datasets.rewardbench import authors_positions
from tailorbench.errors import ConfigError, DataError
from tests.helpers.benchmark_fixtures import make_personamem, make_prefeval, personamem_row


def test_prefeval_detected_and_paired(tmp_path: Path) -> None:
    make_prefeval(tmp_path)
    assert detect_layout(tmp_path) == "prefeval"
    bench = load_benchmark(tmp_path, options={"turns": "0,2", "forms": "explicit"})
    assert bench.splits == ("explicit",) and bench.tiers == ("turns-0", "turns-2")
    assert len(bench.cases) == 2 * 3 * 2 * 3  # topics x preferences x turn counts x wrong options
    case = bench.cases[0]
    assert case.chosen.startswith("quiet ") and set(case.persona) == {"Preference"}
    assert case.meta["item"] == "explicit/shop_motors/0/turns-0" and case.id.startswith(case.meta["item"] + "/vs-")


def test_prefeval_bad_options_and_fields(tmp_path: Path) -> None:
    base = make_prefeval(tmp_path)
    with pytest.raises(ConfigError, match="turns"):
        load_choice_items(tmp_path, options={"turns": "ten"})
    with pytest.raises(ConfigError, match="unknown option"):
        load_choice_items(tmp_path, options={"turn": "1"})
    with pytest.raises(DataError, match="fewer than the 50"):
        load_choice_items(tmp_path, options={"turns": "50"})
    path = base / "mcq_options" / "shop_motors.json"
    rows = json.loads(path.read_text())
    del rows[1]["question"]
    rows[2]["classification_task_options"] = rows[2]["classification_task_options"][:3]
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError) as error:
        load_choice_items(tmp_path)
    assert error.value.field == "[1].question" and error.value.path == str(path)
    skipped = load_choice_items(tmp_path, skip_invalid=True)
    assert [e.field for e in skipped.invalid.rows] == ["[1].question", "[2].classification_task_options"]
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "[1].question" in result.output


def test_prefeval_implicit_conversation_must_have_its_shape(tmp_path: Path) -> None:
    base = make_prefeval(tmp_path)
    path = base / "implicit_preference" / "persona-driven" / "travel_hotel.json"
    rows = json.loads(path.read_text())
    rows[0]["conversation"]["1"] = {"user": "hi"}
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError) as error:
        load_choice_items(tmp_path, options={"forms": "persona"})
    assert error.value.field == "[0].conversation.1"


def test_personamem_detected_paired_and_strict(tmp_path: Path) -> None:
    make_personamem(tmp_path)
    assert detect_layout(tmp_path) == "personamem"
    bench = load_benchmark(tmp_path)
    assert len(bench.cases) == 8 * 3 and bench.tiers == ("32k", "128k", "1M")
    rows = [personamem_row(0), personamem_row(1, correct_answer="(e)"), personamem_row(2, all_options="[oops"),
            personamem_row(3, shared_context_id="nope"), personamem_row(4, question_type="guessing")]
    make_personamem(tmp_path, rows)
    skipped = load_choice_items(tmp_path, skip_invalid=True)
    assert [(e.line, e.field) for e in skipped.invalid.rows] == [
        (3, "correct_answer"), (4, "all_options"), (5, "shared_context_id"), (6, "question_type")]
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "questions_32k.csv:3: field 'correct_answer'" in result.output


def test_personamem_needs_its_histories(tmp_path: Path) -> None:
    make_personamem(tmp_path)
    (tmp_path / "shared_contexts_32k.jsonl").unlink()
    with pytest.raises(DataError, match="shared contexts"):
        load_choice_items(tmp_path)


def _rewardbench_row(n: int, **over: Any) -> dict[str, Any]:
    row = {"id": f"u{n}", "question": f"How should I plan day {n}?",
           "profile": [{"id": "p1", "category": "Lifestyle", "text": "I like mornings."}],
           "rubric_aspects": [{"aspect": "mornings", "evidence": "likes mornings", "reason": "stated"}],
           "narrative": "I wake early.", "category": "Lifestyle",
           "chosen": f"Start at 6am, day {n}.", "rejected": f"Sleep in, day {n}."}
    row.update(over)
    return row


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_personalized_rewardbench_pairs_and_authors_placement(tmp_path: Path) -> None:
    _write(tmp_path / "Lifestyle_and_Personal_Development_test.jsonl", [_rewardbench_row(n) for n in range(6)])
    assert detect_layout(tmp_path) == "personalized-rewardbench"
    bench = load_benchmark(tmp_path)
    assert [c.split for c in bench.cases] == ["Lifestyle"] * 6 and bench.cases[0].tier == "test"
    assert "mornings" in bench.cases[0].persona["History"] and "narrative" not in bench.cases[0].persona
    random.seed(42)  # evaluation/pairwise.py prepare_pairwise_prompts
    expected = ["AB" if random.random() < 0.5 else "BA" for _ in range(6)]
    assert [c.meta["authors_order"] for c in bench.cases] == expected
    assert authors_positions(6) == [x == "AB" for x in expected]
    _write(tmp_path / "Lifestyle_and_Personal_Development_test.jsonl",
           [_rewardbench_row(0), _rewardbench_row(1, profile="likes mornings")])
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, "profile")


def _prism(tmp_path: Path, utterances: list[dict[str, Any]]) -> Path:
    _write(tmp_path / "survey.jsonl", [{"user_id": "user0", "gender": "Female", "age": "25-34 years old",
                                        "self_description": "I teach.", "location": {"reside_region": "Europe"}},
                                       {"user_id": "user1", "gender": "Male", "age": "45-54 years old",
                                        "self_description": "I farm.", "location": {"reside_region": "Africa"}}])
    _write(tmp_path / "utterances.jsonl", utterances)
    return tmp_path


def _utterance(user: str, conversation: str, turn: int, answer: str, score: int, chosen: bool,
               **over: Any) -> dict[str, Any]:
    row = {"utterance_id": f"{conversation}-{turn}-{answer}", "interaction_id": f"{conversation}-{turn}",
           "conversation_id": conversation, "user_id": user, "turn": turn, "within_turn_id": 0,
           "user_prompt": f"prompt {conversation} {turn}", "model_response": answer, "model_name": "m",
           "score": score, "if_chosen": chosen, "conversation_type": "unguided"}
    row.update(over)
    return row


def test_prism_chosen_against_each_other_rated_answer(tmp_path: Path) -> None:
    rows = [_utterance("user0", "c0", 0, "best", 90, True), _utterance("user0", "c0", 0, "ok", 60, False),
            _utterance("user0", "c0", 0, "bad", 10, False), _utterance("user1", "c1", 0, "yes", 70, True),
            _utterance("user1", "c1", 0, "no", 40, False, conversation_type="values guided")]
    _prism(tmp_path, rows)
    assert detect_layout(tmp_path) == "prism"
    bench = load_benchmark(tmp_path, options={"strata": "location.reside_region"})
    assert [(c.chosen, c.rejected, c.tier) for c in bench.cases] == [
        ("best", "ok", "Europe"), ("best", "bad", "Europe"), ("yes", "no", "Africa")]
    assert bench.cases[0].persona["self_description"] == "I teach." and bench.tiers == ("Europe", "Africa")
    assert bench.cases[0].meta["score_gap"] == 30


@pytest.mark.parametrize(("field", "value"), [("score", "high"), ("if_chosen", "yes"), ("turn", None),
                                               ("conversation_type", "guided")])
def test_prism_refuses_mistyped_fields(tmp_path: Path, field: str, value: Any) -> None:
    bad = _utterance("user0", "c0", 0, "ok", 60, False)
    bad[field] = value
    _prism(tmp_path, [_utterance("user0", "c0", 0, "best", 90, True), bad])
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, field)


def test_data_check_shows_the_dataset_card(tmp_path: Path) -> None:
    make_personamem(tmp_path)
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    stats = report["layout_stats"]
    assert stats["card"]["licence"] == "MIT" and report["items"] == 8 and report["task"] == "multiple-choice"


def test_personamem_folder_with_every_size_needs_the_size_option(tmp_path: Path) -> None:
    make_personamem(tmp_path)
    (tmp_path / "questions_128k.csv").write_bytes((tmp_path / "questions_32k.csv").read_bytes())
    assert detect_layout(tmp_path) == "personamem"
    with pytest.raises(ConfigError, match=r"questions_128k\.csv, questions_32k\.csv: choose one"):
        load_choice_items(tmp_path)
    items = load_choice_items(tmp_path, options={"size": "32k"})
    assert len(items.items) == 8
    assert [p.name for p in items.files] == ["questions_32k.csv", "shared_contexts_32k.jsonl"]
    with pytest.raises(DataError, match=r"shared_contexts_128k\.jsonl"):
        load_choice_items(tmp_path, options={"size": "128k"})


def test_a_published_dataset_read_from_the_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hf:HannahKirk/prism-alignment` as published (no tailorbench push): the snapshot's layout reads it."""
    import huggingface_hub.constants as constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "datasets--HannahKirk--prism-alignment"
    _prism(repo / "snapshots" / commit, [_utterance("user0", "c0", 0, "best", 90, True),
                                         _utterance("user0", "c0", 0, "ok", 60, False)])
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    bench = load_benchmark("hf:HannahKirk/prism-alignment")
    assert bench.layout == "prism" and [(c.chosen, c.rejected) for c in bench.cases] == [("best", "ok")]
    (repo / "snapshots" / commit / "survey.jsonl").unlink()
    with pytest.raises(DataError, match="nor one a layout reads"):
        load_benchmark("hf:HannahKirk/prism-alignment")


@pytest.mark.parametrize("benchmark", ["personalized-rewardbench", "prism"])
def test_pairwise_readers_exit_2_naming_the_place(tmp_path: Path, benchmark: str) -> None:
    if benchmark == "prism":
        _prism(tmp_path, [_utterance("user0", "c0", 0, "best", 90, True),
                          _utterance("user0", "c0", 0, "ok", "sixty", False)])  # type: ignore[arg-type]
        where = "utterances.jsonl:2: field 'score'"
    else:
        _write(tmp_path / "Art_and_Entertainment_test.jsonl", [_rewardbench_row(0), _rewardbench_row(1, chosen=None)])
        where = "Art_and_Entertainment_test.jsonl:2: field 'chosen'"
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and where in result.output


def test_pairs_written_as_native_jsonl_read_back_with_their_names(tmp_path: Path) -> None:
    _prism(tmp_path / "prism", [_utterance("user0", "c0", 0, "best", 90, True),
                                _utterance("user0", "c0", 0, "ok", 60, False),
                                _utterance("user1", "c1", 0, "yes", 70, True),
                                _utterance("user1", "c1", 0, "no", 20, False)])
    out = tmp_path / "pairs.jsonl"
    assert write_benchmark(load_benchmark(tmp_path / "prism"), out) == 2
    back = load_benchmark(out)
    assert back.layout == "native" and back.splits == ("unguided", "values guided", "controversy guided")
    assert [(c.chosen, c.rejected) for c in back.cases] == [("best", "ok"), ("yes", "no")]
