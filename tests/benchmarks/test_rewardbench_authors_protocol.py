"""Personalized RewardBench judged under its authors' protocol, end to end: rows in the release's Parquet schema
(made here), the authors' prompt files (the test's own stand-ins with the same placeholders: tailorbench does not
ship the authors' text; a user passes their clone's `prompts/pairwise_system.txt` and `pairwise_user.txt`), the
question alone (`--setting none`), one order per case as their seed-42 placement draws it (`--orders authors`),
temperature 0 and 512 tokens, their `Result:` parse (`parser=result`). Compared with evaluation/pairwise.py of
github.com/Martin-qyma/Personalized-RewardBench (commit d8a0cdaa) re-implemented here: `prepare_pairwise_prompts`,
`evaluate_pairwise` and `calculate_accuracy`, prompt by prompt and field by field."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tailorbench.benchmarks.scoring import authors_pairwise_summary, authors_pairwise_verdicts
from tailorbench.cli.app import app
from tailorbench.datasets import load_benchmark
from tests.benchmarks.test_rewardbench_scoring import OUTPUTS, authors_calculate_accuracy, authors_parse
from tests.helpers.recording_server import RecordingServer

SYSTEM = "You compare two responses for one user. End with 'Result: A' or 'Result: B'."
USER = "Question: {question}\n\n[Response A]\n{Response_A}\n\n[Response B]\n{Response_B}\n\nWhich is better?"


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{k}", "question": f"What should I cook tonight ({k})?",
             "profile": [{"id": f"p{k}", "category": "Food", "text": "I am vegetarian."}],
             "rubric_aspects": [{"aspect": "diet", "evidence": "vegetarian", "reason": "stated"}],
             "narrative": "I cook at home.", "category": "Lifestyle",
             "chosen": f"A lentil curry, recipe {k}.", "rejected": f"A steak, recipe {k}."} for k in range(n)]


def _reply(body: Any) -> str:
    """The same reply to the same prompt, whatever the order of the calls."""
    prompt = body["messages"][-1]["content"]
    return OUTPUTS[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(OUTPUTS)]


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    srv = RecordingServer(model="judge", reply=_reply).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_authors_protocol_equals_their_scripts(tmp_path: Path, server: RecordingServer) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows(40)
    data = tmp_path / "release"
    (data / "Lifestyle_and_Personal_Development").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), data / "Lifestyle_and_Personal_Development" /
                   "test-00000-of-00001.parquet")
    (tmp_path / "system.txt").write_text(SYSTEM + "\n", encoding="utf-8")
    (tmp_path / "user.txt").write_text(USER + "\n", encoding="utf-8")
    judge = f"llm:openai:judge@{server.url}/v1"
    res = CliRunner().invoke(app, [
        "eval", "--data", str(data), "--judge", judge, "--setting", "none", "--orders", "authors",
        "--judge-option", "parser=result", "--judge-option", f"system_file={tmp_path / 'system.txt'}",
        "--judge-option", f"user_file={tmp_path / 'user.txt'}", "--judge-option", "max_tokens=512",
        "--out", str(tmp_path / "run"), "--n-boot", "20", "--no-progress", "--json"])
    assert res.exit_code in (0, 3), res.output

    # the authors' scripts, re-implemented: prompts with the seed-42 placement, parse, calculate_accuracy
    random.seed(42)
    theirs = []
    for item in rows:
        pos_in_a = random.random() < 0.5
        a, b = (item["chosen"], item["rejected"]) if pos_in_a else (item["rejected"], item["chosen"])
        prompt = USER.replace("{question}", item["question"]).replace("{Response_A}", a).replace("{Response_B}", b)
        output = _reply({"messages": [{"role": "user", "content": prompt}]})
        prediction, failed = authors_parse(output)
        theirs.append({"id": item["id"], "prompt": prompt, "pos_in_a": pos_in_a, "prediction": prediction,
                       "correct": prediction == ("A" if pos_in_a else "B"), "parse_failed": failed})
    # what was sent: one call per case, their messages exactly, temperature 0, 512 tokens
    bodies = [r.json() for r in server.chat_requests()]
    assert sorted(b["messages"][1]["content"] for b in bodies) == sorted(t["prompt"] for t in theirs)
    assert all(b["messages"][0] == {"role": "system", "content": SYSTEM} and len(b["messages"]) == 2
               for b in bodies)
    assert all(b.get("temperature") == 0.0 and b.get("max_tokens") == 512 for b in bodies)
    assert all("vegetarian" not in b["messages"][1]["content"] for b in bodies)  # the question alone
    # their report fields from tailorbench's verdicts
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    orders = {c.id: c.meta["authors_order"] for c in load_benchmark(data).cases}
    assert len(predictions) == len(rows) and all(p["order"] == orders[p["case_id"]] for p in predictions)
    ours = authors_pairwise_summary(authors_pairwise_verdicts(predictions, orders))
    want = authors_calculate_accuracy(theirs)
    assert {k: ours[k] for k in want} == want
    assert ours["failed_parses"] == sum(t["parse_failed"] for t in theirs) > 0
    # the same fields in results.json and the report
    written = json.loads((tmp_path / "run" / "results.json").read_text())["authors_report"]
    assert {k: written[k] for k in want} == want and written["failed_calls"] == 0
    assert "## The authors' report fields" in (tmp_path / "run" / "report.md").read_text()
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["orders"] == "authors"
    assert "Protocol: one order per case as the benchmark's authors draw it" in (tmp_path / "run" /
                                                                                 "report.md").read_text()
    # the same protocol by its name: --protocol authors sets the setting, orders and the judge's settings
    named = CliRunner().invoke(app, [
        "eval", "--data", str(data), "--judge", judge, "--protocol", "authors",
        "--judge-option", f"system_file={tmp_path / 'system.txt'}",
        "--judge-option", f"user_file={tmp_path / 'user.txt'}",
        "--out", str(tmp_path / "named"), "--n-boot", "20", "--no-progress", "--json"])
    assert named.exit_code in (0, 3), named.output
    again = [json.loads(line) for line in (tmp_path / "named" / "predictions.jsonl").read_text().splitlines()]
    assert sorted((p["case_id"], p["order"], p["choice"], p["status"]) for p in again) == sorted(
        (p["case_id"], p["order"], p["choice"], p["status"]) for p in predictions)  # lines land in any order
    manifest = json.loads((tmp_path / "named" / "manifest.json").read_text())
    assert manifest["orders"] == "authors" and manifest["setting"] == "none"
    assert {k: manifest["config"]["judge_options"][k] for k in ("parser", "max_tokens", "temperature")} == {
        "parser": "result", "max_tokens": "512", "temperature": "0"}
    by_id = {p["case_id"].rsplit("/", 1)[1]: p for p in predictions}
    for t in theirs:  # item by item: a parsed pick equals theirs; an unparsed one is invalid here, A there
        p = by_id[t["id"]]
        assert (p["choice"] if p["status"] == "ok" else None) == (None if t["parse_failed"] else t["prediction"])


def test_default_report_names_its_protocol(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--out", str(tmp_path / "run"),
                                   "--no-progress", "--n-boot", "20"])
    assert res.exit_code == 0, res.output
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Protocol: tailorbench's protocol: every case judged" in report and "benchmarks.md" in report


def test_orders_authors_needs_a_drawn_order(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--orders", "authors",
                                   "--out", str(tmp_path / "run"), "--no-progress"])
    assert res.exit_code == 2 and "authors' order" in res.output and "Traceback" not in res.output


def test_named_protocol_refusals(tmp_path: Path, server: RecordingServer) -> None:
    data = tmp_path / "release"
    data.mkdir()
    (data / "Art_and_Entertainment_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(3)),
                                                           encoding="utf-8")
    judge = f"llm:openai:judge@{server.url}/v1"
    for extra, message in ((["--judge", judge], "system_file"),
                           (["--judge", judge, "--judge-option", "max_tokens=16", "--judge-option", "system_file=a",
                             "--judge-option", "user_file=b"], "max_tokens=512"),
                           (["--judge", "longer"], "llm: judges or rm: judges"),
                           (["--judge", judge, "--orders", "random"], "--orders")):
        res = CliRunner().invoke(app, ["eval", "--data", str(data), "--protocol", "authors", *extra,
                                       "--out", str(tmp_path / "run"), "--no-progress"])
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, (extra, res.output)
        assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_prompt_files_go_together(tmp_path: Path, server: RecordingServer) -> None:
    (tmp_path / "system.txt").write_text(SYSTEM, encoding="utf-8")
    res = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", f"llm:openai:judge@{server.url}/v1",
                                   "--judge-option", f"system_file={tmp_path / 'system.txt'}",
                                   "--out", str(tmp_path / "run"), "--no-progress"])
    assert res.exit_code == 2 and "go together" in res.output
    res = CliRunner().invoke(app, ["eval", "--data", "demo", "--judge", f"llm:openai:judge@{server.url}/v1",
                                   "--judge-option", "parser=guess", "--out", str(tmp_path / "run2"), "--no-progress"])
    assert res.exit_code == 2 and "parser" in res.output
