"""The study's own input files go through the one reader (docs/data.md "Reading files"): study.yaml through
`files.load_yaml` (no anchors or aliases, no repeated key, bounded in size) and validated strictly (no bool for
a number, http(s) links only); the gold items through the annotation importer that `annotate import-items` uses;
the conversations through the stage verb's reader. Every hostile input is exit 2 naming the file and line, from
`study plan` as from `study run`. Each case failed at 97f6c24: the alias bomb exhausted memory, a 300 MB
study.yaml ran for minutes, a repeated key, `places: true` and `base_url: javascript:...` were read silently,
and a broken gold or conversations line was a traceback."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.study.helpers import register, study_yaml
from tests.test_files_reading import ALIAS_BOMB

GOLD = {"id": "gold-1", "user_id": "g", "conversation": "I am vegan.",
        "attributes": ["The user is vegan.", "The user lives in Rome."], "gold": {"1": "accepted", "2": "rejected"}}


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    return register()


def _study(tmp_path: Path, change: Any = None, text: str | None = None) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    if text is None:
        data = yaml.safe_load(study_yaml())
        if change is not None:
            change(data)
        text = yaml.safe_dump(data)
    (d / "study.yaml").write_text(text, encoding="utf-8")
    return d


def _invoke(*args: str) -> tuple[int, str, float]:
    start = time.monotonic()
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output, time.monotonic() - start


def test_the_alias_bomb_in_study_yaml_is_exit_2_at_once(tmp_path: Path) -> None:
    d = _study(tmp_path, text=ALIAS_BOMB)
    code, output, seconds = _invoke("study", "plan", str(d))
    assert code == 2 and "study.yaml:1: an anchor (&a)" in output and seconds < 5


def test_a_300_mb_study_yaml_is_refused_from_its_size(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    with (d / "study.yaml").open("wb") as handle:
        handle.truncate(300 * 1024 * 1024)
    code, output, seconds = _invoke("study", "plan", str(d))
    assert code == 2 and "MAX_FILE_BYTES" in output and seconds < 5


def test_a_repeated_key_in_study_yaml_is_exit_2_naming_the_line(tmp_path: Path) -> None:
    d = _study(tmp_path, text=study_yaml() + "name: other\n")
    code, output, _ = _invoke("study", "plan", str(d))
    assert code == 2 and "field 'name': duplicate key (first on line 1)" in output


@pytest.mark.parametrize(("change", "where"), [
    (lambda c: c["stages"]["extraction"]["crowd"].update(places=True), "stages.extraction.crowd.places"),
    (lambda c: c["stages"]["relevance"].update(n=True), "stages.relevance.n"),
    (lambda c: c["statistics"].update(n_boot="50"), "statistics.n_boot"),
    (lambda c: c["annotation"].update(base_url="javascript:alert(1)"), "annotation.base_url"),
    (lambda c: c["stages"]["extraction"]["crowd"].update(completion_url="file:///etc/passwd"),
     "stages.extraction.crowd.completion_url"),
])
def test_a_wrong_type_or_a_non_http_link_is_exit_2(scripted: Any, tmp_path: Path, change: Any, where: str) -> None:
    d = _study(tmp_path, change)
    code, output, _ = _invoke("study", "plan", str(d))
    assert code == 2 and f"study.yaml: {where}: " in output, output


@pytest.mark.parametrize(("second", "says"), [
    (b'{"id": "gold-2", "user_id": \n', "malformed JSON"),
    (json.dumps({k: v for k, v in GOLD.items() if k != "id"}).encode(), "id"),
    (json.dumps({**GOLD, "id": "gold-2", "conversation": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"),
     "UTF-8"),
    (b'["gold-2", "g"]', "expected a JSON object"),
])
@pytest.mark.parametrize("verb", ["plan", "run"])
def test_a_broken_gold_file_is_exit_2_naming_its_line(scripted: Any, tmp_path: Path, second: bytes, says: str,
                                                      verb: str) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(json.dumps(GOLD).encode() + b"\n" + second + b"\n")
    d = _study(tmp_path, lambda c: c["stages"]["extraction"].update(gold=str(gold)))
    code, output, _ = _invoke("study", verb, str(d))
    assert code == 2 and f"{gold}:2:" in output and says in output and "Traceback" not in output, output
    assert scripted.attempts == []


@pytest.mark.parametrize("verb", ["plan", "run"])
def test_a_broken_conversations_line_is_exit_2_naming_it(scripted: Any, tmp_path: Path, verb: str) -> None:
    conversations = tmp_path / "conversations.jsonl"
    good = {"user_id": "u1", "conversations": [[{"role": "user", "content": "I run every day."}]]}
    conversations.write_text(json.dumps(good) + "\n" + '{"user_id": "u2", "conversations": [\n')
    d = _study(tmp_path, lambda c: c["inputs"].update(conversations=str(conversations)))
    code, output, _ = _invoke("study", verb, str(d))
    assert code == 2 and f"{conversations}:2:" in output and "Traceback" not in output, output
    assert scripted.attempts == []


@pytest.mark.parametrize(("turn", "field"), [({"role": "usr", "content": "I run."}, "conversations[0][0].role"),
                                             ({"role": "user", "content": 7}, "conversations[0][0].content"),
                                             (3, "conversations[0][0]")])
def test_a_turn_of_the_wrong_shape_is_exit_2_naming_it(scripted: Any, tmp_path: Path, turn: Any, field: str) -> None:
    """A turn with an unknown role or non-text content was left out of the extractor's prompt silently at 97f6c24
    (`study plan` exit 0, the stage verb too)."""
    conversations = tmp_path / "conversations.jsonl"
    conversations.write_text(json.dumps({"user_id": "u1", "conversations": [[turn]]}) + "\n")
    d = _study(tmp_path, lambda c: c["inputs"].update(conversations=str(conversations)))
    code, output, _ = _invoke("study", "plan", str(d))
    assert code == 2 and f"{conversations}:1: field '{field}'" in output, output
    code, output, _ = _invoke("stages", "extract", "--conversations", str(conversations), "--model",
                              "studyscripted:ex", "--out", str(tmp_path / "items.jsonl"))
    assert code == 2 and f"{conversations}:1: field '{field}'" in output, output
    assert scripted.attempts == []
