"""PrefEval and PersonaMem under `--protocol authors` against a model whose answers take many shapes (`<think>`
blocks, nested and broken tags, bare letters): every item scored as the authors' code scores it, item by item,
with the authors' rules re-implemented in tests/helpers/authors_rules.py from the cited files:

- PrefEval (github.com/amazon-science/PrefEval at 50795054): `utils/utils_mcq.py` `extract_choice` with
  BeautifulSoup itself; the acknowledgement and the answer capped at 5 tokens (config.yaml `max_mcq_tokens`,
  at commit 5079505, where the gpt branch sends no cap: `protocol.notes` says so);
- PersonaMem (github.com/bowen-upenn/PersonaMem, `inference_standalone_openai.py` at 041d82a and 214bc36):
  `extract_answer` of either version; `convert_role_system_to_user` when the model name holds an "o"; no
  temperature and no token cap sent.

The scorers read the raw reply; where a reasoning block changes the outcome the stripped reading is beside it.
The model is the recording server of tests/helpers with a scripted reply, so what it sent is known exactly."""

from __future__ import annotations

import csv
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.benchmarks.choice_run import ChoiceConfig, run_choice
from tailorbench.benchmarks.run_pages import MANIFEST, PREDICTIONS
from tailorbench.cli.app import app
from tailorbench.models.base import strip_think
from tests.helpers.authors_rules import (
    authors_convert_role_system_to_user,
    authors_extract,
    authors_extract_214bc36,
    authors_extract_choice,
)
from tests.helpers.benchmark_fixtures import make_personamem, make_prefeval, personamem_row
from tests.helpers.recording_server import RecordingServer

#: answers to a PrefEval question, in turn: the letter is filled in ({x}, cycling A-D)
PREFEVAL_SHAPES = [
    "<choice>{x}</choice>", "{x}", "<think>I lean to <choice>A</choice></think><choice>{x}</choice>",
    "<think>hmm</think>\n<choice>{x}</choice>", "<think>unclosed <choice>{x}", "<choice><b>{x}</b></choice>",
    "<choice>{x}<br>B</choice>", "<p><choice>{x}</p></choice>", "<choice>{x}<choice>D</choice></choice>",
    "<?xml version?><choice>{x}</choice>", "<!DOCTYPE x><choice>{x}</choice>", "<choice><![CDATA[{x}]]></choice>",
    "</choice><choice>{x}</choice>", "<choice>{x}</div></choice>", "<choice><!-- {x} --></choice>",
    "<CHOICE>{x}</CHOICE>", "I pick <choice>option {x}", "<choice>[A/B/C/D]</choice>",
]
#: answers to a PersonaMem question ({x}: a letter a-d)
PERSONAMEM_SHAPES = [
    "<final_answer>({x})", "({x})", "{x}", "The answer is ({x}).", "<think>(a) or (b)?</think><final_answer>({x})",
    "<final_answer>({x})</final_answer>", "<final_answer> ({x}) and maybe (c)", "<think>surely ({x})</think>",
    "Answer: {x}", "<final_answer>{X}", "<think>long</think>\n\n({x})", "none of them",
]


class Scripted:
    """A reply function for the recording server: warm-up turns get a short acknowledgement, questions the next
    shape in turn (thread-safe: the client sends a batch at once)."""

    def __init__(self, shapes: list[str], letters: str) -> None:
        self.shapes, self.letters, self.n = shapes, letters, 0
        self.lock = threading.Lock()

    def __call__(self, body: Any) -> str:
        messages = body["messages"]
        if len(messages) == 1 and "choice" not in messages[0]["content"].lower() and \
                "final_answer" not in messages[0]["content"]:
            return "Noted, I will remember that."
        with self.lock:
            k, self.n = self.n, self.n + 1
        x = self.letters[(k // len(self.shapes)) % len(self.letters)] if k % 3 else self.letters[k % 4]
        return self.shapes[k % len(self.shapes)].format(x=x, X=x.upper())


@pytest.fixture
def scripted_model() -> Iterator[RecordingServer]:
    server = RecordingServer(model="gpt-4o-mini").start()
    try:
        yield server
    finally:
        server.stop()


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / PREDICTIONS).read_text().splitlines()]


def _token_cap(body: dict[str, Any]) -> Any:
    return body.get("max_tokens", body.get("max_completion_tokens"))


def test_prefeval_authors_protocol_item_by_item(tmp_path: Path, scripted_model: RecordingServer) -> None:
    make_prefeval(tmp_path / "data")
    scripted_model.reply = Scripted(PREFEVAL_SHAPES, "ABCD")
    config = ChoiceConfig(data=str(tmp_path / "data"), model=f"openai:tiny@{scripted_model.url}/v1",
                          data_options={"turns": "0,2", "forms": "explicit,choice,persona"}, protocol="authors",
                          n_boot=50)
    results = run_choice(config, tmp_path / "run")
    rows = _rows(tmp_path / "run")
    assert len(rows) >= 36
    changed = 0
    for row in rows:
        picked = authors_extract_choice(row["response"])
        assert row["choice"] == picked, row["response"]
        assert row["correct"] == (picked == row["answer"]), row["response"]
        stripped = authors_extract_choice(strip_think(row["response"])[0])
        if stripped != picked:
            changed += 1
            assert row["think_stripped"]["choice"] == stripped
        else:
            assert "think_stripped" not in row
    assert changed and results["think_stripped"]["changed"] == changed
    # the authors' caps: 5 tokens for the acknowledgement and for the answer
    bodies = [r.json() for r in scripted_model.chat_requests()]
    assert bodies and {_token_cap(b) for b in bodies} == {5}
    assert any(len(b["messages"]) == 1 for b in bodies)  # the acknowledgement turn
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    assert manifest["protocol"]["name"] == "authors" and manifest["protocol"]["max_tokens"] == 5
    assert manifest["config"]["protocol"] == "authors"
    # the per-topic table: the authors' unit of report
    topics = {r["meta"]["topic"] for r in rows}
    assert set(results["by_topic"]) == topics and len(topics) > 1
    assert sum(c["n"] for c in results["by_topic"].values()) == len(rows)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Protocol: the authors' protocol" in report and "per topic" in report
    assert "gpt branch" in report and manifest["protocol"]["notes"]  # the branch choice is said, not hidden
    assert "read otherwise without their <think> block" in report


def test_prefeval_default_protocol_says_how_it_differs(tmp_path: Path, scripted_model: RecordingServer) -> None:
    make_prefeval(tmp_path / "data")
    scripted_model.reply = Scripted(PREFEVAL_SHAPES, "ABCD")
    config = ChoiceConfig(data=str(tmp_path / "data"), model=f"openai:tiny@{scripted_model.url}/v1",
                          data_options={"turns": "0", "forms": "explicit", "topics": "travel_hotel"}, n_boot=50)
    run_choice(config, tmp_path / "run")
    assert {_token_cap(r.json()) for r in scripted_model.chat_requests()} == {512}
    report = (tmp_path / "run" / "report.md").read_text()
    assert "tailorbench's default protocol" in report and "max_mcq_tokens" in report
    rows = _rows(tmp_path / "run")
    assert all(r["choice"] == authors_extract_choice(r["response"]) for r in rows)  # the raw reply, here too


def _personamem_data(root: Path) -> dict[str, str]:
    """Fixture rows and their correct answers by item id (`persona_id/question_id`)."""
    rows = [personamem_row(n) for n in range(24)]
    make_personamem(root, rows)
    with (root / "questions_32k.csv").open(encoding="utf-8") as handle:
        return {f"{r['persona_id']}/{r['question_id']}": r["correct_answer"] for r in csv.DictReader(handle)}


@pytest.mark.parametrize(("version", "rule"), [(None, authors_extract), ("041d82a", authors_extract),
                                               ("214bc36", authors_extract_214bc36)])
def test_personamem_authors_protocol_item_by_item(tmp_path: Path, scripted_model: RecordingServer,
                                                   version: str | None, rule: Any) -> None:
    correct = _personamem_data(tmp_path / "data")
    scripted_model.reply = Scripted(PERSONAMEM_SHAPES, "abcd")
    config = ChoiceConfig(data=str(tmp_path / "data"), model=f"openai:gpt-4o-mini@{scripted_model.url}/v1",
                          protocol="authors", scorer_version=version, n_boot=50)
    results = run_choice(config, tmp_path / "run")
    rows = _rows(tmp_path / "run")
    assert len(rows) == 24
    for row in rows:
        assert row["correct"] == rule(row["response"], correct[row["item"]])[0], row["response"]
        stripped = rule(strip_think(row["response"])[0], correct[row["item"]])[0]
        assert (row.get("think_stripped") or {}).get("correct", row["correct"]) == stripped
    assert 0 < sum(r["correct"] for r in rows) < len(rows)
    # upstream's messages: system folded in for a model name with an "o", no temperature, no token cap
    bodies = [r.json() for r in scripted_model.chat_requests()]
    for body in bodies:
        assert "temperature" not in body and _token_cap(body) is None
        assert all(m["role"] != "system" for m in body["messages"])
        assert body["messages"][0]["content"].startswith("[System]: ")
    with (tmp_path / "data" / "shared_contexts_32k.jsonl").open(encoding="utf-8") as handle:
        contexts = {k: v for line in handle for k, v in json.loads(line).items()}
    first = personamem_row(0)
    sent = next(b for b in bodies if first["user_question_or_message"] in b["messages"][-1]["content"])
    want = contexts[first["shared_context_id"]][:int(first["end_index_in_shared_context"])]
    assert sent["messages"][:-1] == authors_convert_role_system_to_user(want)[:len(sent["messages"]) - 1]
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    assert manifest["protocol"]["scorer_version"] == (version or "041d82a")
    # the breakdowns: by the reference's distance (a paper figure) and by topic
    assert set(results["by_distance"]) == {"0", "1", "2", "3"} and set(results["by_topic"]) == {"music"}
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"scorer of commit {version or '041d82a'}" in report and "distance" in report


def test_the_two_scorer_versions_differ_on_the_same_answers() -> None:
    """The reason a run must name its version: 214bc36 counts every letter after the tag, 041d82a options only."""
    answer = "<final_answer>The answer is (b)"
    assert authors_extract(answer, "(b)")[0] is True and authors_extract_214bc36(answer, "(b)")[0] is False


def test_protocol_refusals_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    make_prefeval(tmp_path / "pe")
    cases = [
        (["--data", "demo", "--protocol", "authors"], "multiple-choice"),
        (["--data", str(tmp_path / "pe"), "--protocol", "theirs", "--judge", "llm:openai:m@http://127.0.0.1:9/v1"],
         "--protocol"),
        (["--data", str(tmp_path / "pe"), "--protocol", "authors", "--judge", "llm:openai:m@http://127.0.0.1:9/v1",
          "--judge-option", "max_tokens=9"], "max_tokens"),
        (["--data", str(tmp_path / "pe"), "--scorer-version", "214bc36",
          "--judge", "llm:openai:m@http://127.0.0.1:9/v1"], "PersonaMem only"),
    ]
    for args, message in cases:
        res = runner.invoke(app, ["eval", *args, "--out", str(tmp_path / "out")])
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output and "Traceback" not in res.output
        assert not (tmp_path / "out" / PREDICTIONS).exists()


def test_shapes_cover_what_the_issue_names() -> None:
    joined = " ".join(PREFEVAL_SHAPES)
    for needle in ("<think>", "<?xml", "<!DOCTYPE", "CDATA", "</div>", "<b>", "{x}"):
        assert needle in joined
    assert any(re.fullmatch(r"\{x\}", s) for s in PERSONAMEM_SHAPES)


def test_prefeval_generation_checks_judge_the_raw_answer(tmp_path: Path, scripted_model: RecordingServer) -> None:
    """The generation task: the checks see the answer as the model wrote it, `<think>` block included, as the
    authors' evaluation script receives it; the checks' replies are read with BeautifulSoup."""
    from tailorbench.benchmarks.prefeval_generation import GenerationConfig, run_generation
    from tailorbench.datasets.prefeval_prompts import EVALUATOR_SYSTEM

    def reply(body: Any) -> str:
        if body["messages"][0]["content"] == EVALUATOR_SYSTEM:
            return "<explanation>fine</explanation>\n<answer>Yes</answer><preference>quiet</preference>"
        return "<think>They said quiet.</think>Try the quiet hotel."

    scripted_model.reply = reply
    make_prefeval(tmp_path / "data")
    url = f"openai:tiny@{scripted_model.url}/v1"
    run_generation(GenerationConfig(data=str(tmp_path / "data"), model=url, judge=url, n_boot=20,
                                    data_options={"turns": "0", "forms": "explicit", "topics": "travel_hotel"}),
                   tmp_path / "run")
    rows = _rows(tmp_path / "run")
    assert rows and all(r["response"].startswith("<think>They said quiet.</think>") for r in rows)
    checks = [b for b in (r.json() for r in scripted_model.chat_requests())
              if b["messages"][0]["content"] == EVALUATOR_SYSTEM]
    assert checks and all("<think>They said quiet.</think>" in b["messages"][1]["content"] for b in checks
                          if "quiet hotel" in b["messages"][1]["content"])
    assert all(r["checks"]["acknow"]["answer"] == "Yes" for r in rows)
