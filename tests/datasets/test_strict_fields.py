"""Strict types at the benchmark readers (docs/data.md "Reading files"): a value of the wrong type, an index
that makes no sense or an option naming nothing is an error naming the file, line and field, never read as
something else with exit 0. Each case failed at 97f6c24, the commit before the one reader: it was read silently
or ended in a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import load_benchmark
from tailorbench.datasets.choice import load_choice_items
from tailorbench.errors import ConfigError, DataError
from tailorbench.files import MAX_CSV_FIELD
from tests.datasets.test_benchmark_layouts import _prism, _rewardbench_row, _utterance, _write
from tests.helpers.benchmark_fixtures import make_personamem, personamem_row

RB_FILE = "Lifestyle_and_Personal_Development_test.jsonl"


def test_rewardbench_a_number_is_not_an_answer(tmp_path: Path) -> None:
    """`"chosen": 5` was read as the answer "5" at 97f6c24 (exit 0)."""
    _write(tmp_path / RB_FILE, [_rewardbench_row(0), _rewardbench_row(1, chosen=5)])
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, "chosen") and "got an integer" in error.value.message
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and f"{RB_FILE}:2: field 'chosen'" in result.output


def test_rewardbench_a_nul_in_an_id_is_exit_2_naming_it(tmp_path: Path) -> None:
    """A NUL in an id was a pydantic ValidationError traceback at 97f6c24 (the case model refuses it, outside
    the reader's own checks)."""
    _write(tmp_path / RB_FILE, [_rewardbench_row(0), _rewardbench_row(1, id="u\x001")])
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, "id") and "U+0000" in error.value.message
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output and f"{RB_FILE}:2: field 'id'" in result.output


def test_rewardbench_a_numeric_id_is_still_an_id(tmp_path: Path) -> None:
    _write(tmp_path / RB_FILE, [_rewardbench_row(0, id=7), _rewardbench_row(1)])
    assert [c.id for c in load_benchmark(tmp_path).cases] == ["Lifestyle/test/7", "Lifestyle/test/u1"]


@pytest.mark.parametrize("end", ["-5", "1_0", "+3", " ", "2.0", "999"])
def test_personamem_an_index_is_digits_within_the_context(tmp_path: Path, end: str) -> None:
    """`end_index_in_shared_context` of -5 sliced the history from its end, and "1_0" was read as 10, at 97f6c24
    (exit 0); an index past the history's end was cut silently."""
    make_personamem(tmp_path, [personamem_row(0), personamem_row(1, end_index_in_shared_context=end)])
    with pytest.raises(DataError) as error:
        load_choice_items(tmp_path)
    assert (error.value.line, error.value.field) == (3, "end_index_in_shared_context")
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "questions_32k.csv:3: field 'end_index_in_shared_context'" in result.output


def test_personamem_a_field_past_the_csv_modules_limit_is_read(tmp_path: Path) -> None:
    """A field over the csv module's 131,072 characters was a `_csv.Error` traceback at 97f6c24."""
    long_question = "Why? " * 40_000  # 200,000 characters
    make_personamem(tmp_path, [personamem_row(0), personamem_row(1, user_question_or_message=long_question)])
    items = load_choice_items(tmp_path)
    assert items.items[1].question == long_question


def test_personamem_a_field_past_the_bound_names_line_and_column(tmp_path: Path) -> None:
    make_personamem(tmp_path, [personamem_row(0), personamem_row(1, topic="x" * (MAX_CSV_FIELD + 1)),
                               personamem_row(2)])
    with pytest.raises(DataError) as error:
        load_choice_items(tmp_path)
    assert (error.value.line, error.value.field) == (3, "topic") and "MAX_CSV_FIELD" in error.value.message
    skipped = load_choice_items(tmp_path, skip_invalid=True)
    assert len(skipped.items) == 2 and [(e.line, e.field) for e in skipped.invalid.rows] == [(3, "topic")]
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_personamem_a_latin1_file_names_its_line(tmp_path: Path) -> None:
    path = make_personamem(tmp_path, [personamem_row(0), personamem_row(1, topic="caf\u00e9")])
    path.write_bytes(path.read_text(encoding="utf-8").encode("latin-1"))
    with pytest.raises(DataError) as error:
        load_choice_items(tmp_path)
    assert error.value.line == 3 and "not UTF-8" in error.value.message


def test_prism_a_strata_typo_is_an_error_naming_the_fields(tmp_path: Path) -> None:
    """`strata=gendr` put every case in tier `unknown` at 97f6c24 (exit 0)."""
    _prism(tmp_path, [_utterance("user0", "c0", 0, "best", 90, True), _utterance("user0", "c0", 0, "ok", 60, False)])
    with pytest.raises(ConfigError) as error:
        load_benchmark(tmp_path, options={"strata": "gendr"})
    assert "'gendr'" in str(error.value) and "gender" in str(error.value)
    assert "location.reside_region" in str(error.value)
    assert load_benchmark(tmp_path, options={"strata": "gender"}).tiers == ("Female",)
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path), "--data-option", "strata=gendr"])
    assert result.exit_code == 2 and "strata" in result.output


@pytest.mark.parametrize(("field", "value"), [("user_id", 0.5), ("conversation_id", True),
                                               ("user_prompt", 12), ("model_response", ["a"])])
def test_prism_texts_and_ids_are_typed(tmp_path: Path, field: str, value: Any) -> None:
    bad = _utterance("user0", "c0", 0, "ok", 60, False)
    bad[field] = value
    _prism(tmp_path, [_utterance("user0", "c0", 0, "best", 90, True), bad])
    with pytest.raises(DataError) as error:
        load_benchmark(tmp_path)
    assert (error.value.line, error.value.field) == (2, field)


def test_data_check_hands_no_number_over_as_text(tmp_path: Path) -> None:
    _write(tmp_path / RB_FILE, [_rewardbench_row(0, question=3.5)])
    result = CliRunner().invoke(app, ["data", "check", str(tmp_path)])
    assert result.exit_code == 2 and "field 'question'" in result.output
