"""The other benchmarks through `tailor`, on fixtures in the benchmarks' published shapes (never the real rows):
`tailor eval --data PREFEVAL --judge llm:... --turns 0,2` answers PrefEval's multiple-choice task and `tailor
gen-eval` its generation task against the real llama.cpp server, each reported per filler-turn count; a `tailor`
process killed with SIGKILL in the middle of either is finished by `--resume` with every item written once and the
same per-item results as an uninterrupted run; `report` and `view` read both run kinds; every reader refuses a
missing or mistyped field with exit 2 and the place; a judge that cannot answer a multiple-choice benchmark is
exit 2; a suite runs from `tailor eval --suite`; `data convert` writes a pair view that reads back."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tests.helpers.benchmark_fixtures import kill_9_after, make_personamem, make_prefeval, personamem_row
from tests.helpers.counting_proxy import CountingProxy

TAILOR = str(Path(sys.executable).parent / "tailor")
#: 3 preferences x 2 forms x 2 turn counts = 12 items
ITEMS = ["--turns", "0,2", "--data-option", "forms=explicit,choice", "--data-option", "topics=travel_hotel"]
#: what differs between two runs of the same items: timings and whether the answer came from the cache
NOT_COMPARED = ("latency_s", "cached")


def _lines(run: Path) -> list[dict[str, Any]]:
    path = run / "predictions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _same(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in NOT_COMPARED}


def _eval(data: Path, spec: str, out: Path, *more: str) -> list[str]:
    return ["eval", "--data", str(data), "--judge", f"llm:{spec}", *ITEMS, "--judge-option", "max_tokens=8",
            "--n-boot", "200", "--no-progress", "--out", str(out), *more]


def _gen_eval(data: Path, spec: str, out: Path, *more: str) -> list[str]:
    return ["gen-eval", "--data", str(data), "--model", spec, "--judge", f"llm:{spec}", *ITEMS, "--max-tokens", "8",
            "--n-boot", "200", "--no-progress", "--out", str(out), *more]


def test_prefeval_both_tasks_per_turn_count_then_report_and_view(tmp_path: Path, llama_server: Any) -> None:
    make_prefeval(tmp_path / "data")
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    runner = CliRunner()
    choice = runner.invoke(app, _eval(tmp_path / "data", spec, tmp_path / "mc", "--json"))
    assert choice.exit_code == 0, choice.output
    results = json.loads(choice.stdout)
    assert results["kind"] == "multiple-choice" and results["overall"]["n"] == 12
    assert set(results["by_tier"]) == {"turns-0", "turns-2"} and results["by_tier"]["turns-2"]["n"] == 6
    shown = runner.invoke(app, _eval(tmp_path / "data", spec, tmp_path / "mc"))  # the same run again: nothing to do
    assert shown.exit_code == 0 and "  turns-2: " in shown.stderr and "on 6 items" in shown.stderr, shown.output

    gen = runner.invoke(app, _gen_eval(tmp_path / "data", spec, tmp_path / "gen", "--json"))
    assert gen.exit_code == 0, gen.output
    generated = json.loads(gen.stdout)
    assert generated["kind"] == "prefeval-generation" and generated["overall"]["total"] == 12
    assert set(generated["by_tier"]) == {"turns-0", "turns-2"}
    assert all(set(r["checks"]) == {"acknow", "violate", "helpful", "hallucinate"} for r in _lines(tmp_path / "gen"))

    for run in ("mc", "gen"):
        report = runner.invoke(app, ["report", str(tmp_path / run), "--out", str(tmp_path / f"report-{run}")])
        assert report.exit_code == 0, report.output
        assert "turns-2" in (tmp_path / f"report-{run}" / "report.md").read_text()
        bundle = tmp_path / f"site-{run}"
        view = runner.invoke(app, ["view", str(tmp_path / run), "--bundle", str(bundle), "--json"])
        assert view.exit_code == 0, view.output
        assert "turns-2" in "".join(p.read_text(errors="replace") for p in bundle.rglob("*.html"))
    both = runner.invoke(app, ["report", str(tmp_path / "mc"), str(tmp_path / "gen"), "--out", str(tmp_path / "x")])
    assert both.exit_code == 0, both.output  # two kinds share no table: one report per kind
    for kind in ("multiple-choice", "prefeval-generation"):
        assert f"wrote {tmp_path / 'x' / kind / 'report.md'}" in both.stdout


def test_personamem_through_tailor_eval(tmp_path: Path, llama_server: Any) -> None:
    make_personamem(tmp_path / "data")
    spec = f"llm:openai:{llama_server.model}@{llama_server.base_url}"
    result = CliRunner().invoke(app, ["eval", "--data", str(tmp_path / "data"), "--judge", spec, "--judge-option",
                                      "max_tokens=8", "--n-boot", "200", "--no-progress", "--out",
                                      str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)
    assert results["kind"] == "multiple-choice" and results["benchmark"] == "personamem"
    assert results["overall"]["n"] == 8 and set(results["by_tier"]) == {"32k"} and len(results["by_split"]) == 3


@pytest.mark.parametrize("task", ["multiple-choice", "generation"])
def test_kill_9_then_resume_matches_an_uninterrupted_run(tmp_path: Path, llama_server: Any, task: str) -> None:
    """The `tailor` process is killed (SIGKILL) while its calls are in flight (held at a proxy; the call cache
    off, so the resumed run asks the server again rather than finding answers by accident); `--resume` writes
    every missing item once, and the items are what an uninterrupted run of the same command gives."""
    make_prefeval(tmp_path / "data")
    upstream = llama_server.direct_base_url.removesuffix("/v1")

    def hold(method: str, path: str, body: bytes) -> None:
        if path == "/v1/chat/completions":
            time.sleep(0.15)

    with CountingProxy(upstream, intercept=hold) as proxy:
        spec = f"openai:{llama_server.model}@{proxy.url}/v1"
        options = ["--judge-option", "concurrency=2", "--judge-option", "adaptive=false", "--judge-option",
                   "cache_policy=off", "--batch-size", "2"]
        if task == "generation":
            options += ["--model-option", "concurrency=2", "--model-option", "adaptive=false", "--model-option",
                        "cache_policy=off"]
        command = _eval if task == "multiple-choice" else _gen_eval
        killed, whole = tmp_path / "killed", tmp_path / "whole"
        kill_9_after([TAILOR, *command(tmp_path / "data", spec, killed, *options)], killed / "predictions.jsonl", 4)
        assert 4 <= len(_lines(killed)) < 12
        assert json.loads((killed / "manifest.json").read_text())["status"] == "running"
        verb = "eval" if task == "multiple-choice" else "gen-eval"
        resumed = CliRunner().invoke(app, [verb, "--resume", str(killed), "--no-progress", "--json"])
        assert resumed.exit_code == 0, resumed.output
        uninterrupted = CliRunner().invoke(app, command(tmp_path / "data", spec, whole, *options, "--json"))
        assert uninterrupted.exit_code == 0, uninterrupted.output
    rows = _lines(killed)
    assert len(rows) == 12 and len({r["item"] for r in rows}) == 12
    by_item = {r["item"]: _same(r) for r in _lines(whole)}
    assert {r["item"]: _same(r) for r in rows} == by_item
    after, before = json.loads(resumed.stdout), json.loads(uninterrupted.stdout)
    assert after["overall"] == before["overall"] and after["by_tier"] == before["by_tier"]
    assert json.loads((killed / "manifest.json").read_text())["status"] == "finished"


def test_a_judge_without_a_model_cannot_answer_multiple_choice(tmp_path: Path) -> None:
    make_prefeval(tmp_path / "data")
    runner = CliRunner()
    refused = runner.invoke(app, ["eval", "--data", str(tmp_path / "data"), "--judge", "longer", "--out",
                                  str(tmp_path / "r")])
    assert refused.exit_code == 2 and "must be an llm: one" in refused.stderr and "--task pairwise" in refused.stderr
    assert not (tmp_path / "r").exists()
    pairs = runner.invoke(app, ["eval", "--data", str(tmp_path / "data"), "--judge", "longer", "--task", "pairwise",
                                *ITEMS, "--n-boot", "50", "--no-progress", "--out", str(tmp_path / "p"), "--json"])
    assert pairs.exit_code == 0, pairs.output
    pair_view = json.loads(pairs.stdout)
    assert pair_view["dataset"]["layout"] == "prefeval" and pair_view["metrics"]["all"]["n"] == 12 * 3
    for wrong in (["--orders", "random"], ["--setting", "none"], ["--tier", "turns-0"]):
        out = runner.invoke(app, ["eval", "--data", str(tmp_path / "data"), "--judge", "llm:openai:m@http://127.0.0.1:9/v1",
                                  *wrong, "--out", str(tmp_path / "w")])
        assert out.exit_code == 2 and "error:" in out.stderr, (wrong, out.output)
    twice = runner.invoke(app, ["eval", "--data", str(tmp_path / "data"), "--turns", "0", "--data-option", "turns=2",
                                "--out", str(tmp_path / "w")])
    assert twice.exit_code == 2 and "--turns or --data-option" in twice.stderr
    named = runner.invoke(app, ["eval", "--data", "prefeval", "--judge", "llm:openai:m@http://127.0.0.1:9/v1",
                                "--out", str(tmp_path / "w")])
    assert named.exit_code == 2 and "github.com/amazon-science/PrefEval" in named.stderr
    gen = runner.invoke(app, ["gen-eval", "--data", str(tmp_path / "data"), "--model", "openai:m@http://127.0.0.1:9/v1",
                              "--judge", "longer", "--out", str(tmp_path / "g")])
    assert gen.exit_code == 2 and "must be an llm: one" in gen.stderr
    gen = runner.invoke(app, ["gen-eval", "--data", str(tmp_path / "data"), "--model", "openai:m@http://127.0.0.1:9/v1",
                              "--judge", "llm:openai:m@http://127.0.0.1:9/v1", "--reference", "openai:x",
                              "--out", str(tmp_path / "g")])
    assert gen.exit_code == 2 and "does not take: reference" in gen.stderr


def _break(benchmark: str, how: str, root: Path) -> tuple[str, str]:
    """A fixture of `benchmark` with one field missing or mistyped; (the file, the place the error must name)."""
    from tests.datasets.test_benchmark_layouts import _prism, _rewardbench_row, _utterance, _write

    if benchmark == "prefeval":
        path = make_prefeval(root) / "mcq_options" / "shop_motors.json"
        rows = json.loads(path.read_text())
        if how == "missing":
            del rows[1]["question"]
        else:
            rows[1]["question"] = 7
        path.write_text(json.dumps(rows))
        return path.name, "[1].question"
    if benchmark == "personamem":
        bad = personamem_row(1, correct_answer="" if how == "missing" else "(e)")
        make_personamem(root, [personamem_row(0), bad])
        return "questions_32k.csv", ":3: field 'correct_answer'"
    if benchmark == "personalized-rewardbench":
        bad = _rewardbench_row(1, profile="likes mornings")
        if how == "missing":
            bad = _rewardbench_row(1)
            del bad["chosen"]
        _write(root / "Art_and_Entertainment_test.jsonl", [_rewardbench_row(0), bad])
        return "Art_and_Entertainment_test.jsonl", f":2: field '{'chosen' if how == 'missing' else 'profile'}'"
    bad = _utterance("user0", "c0", 0, "ok", 60, False)
    if how == "missing":
        del bad["score"]
    else:
        bad["score"] = "sixty"
    _prism(root, [_utterance("user0", "c0", 0, "best", 90, True), bad])
    return "utterances.jsonl", ":2: field 'score'"


@pytest.mark.parametrize("how", ["missing", "mistyped"])
@pytest.mark.parametrize("benchmark", ["prefeval", "personamem", "personalized-rewardbench", "prism"])
def test_every_reader_exits_2_naming_the_place_in_every_verb(tmp_path: Path, benchmark: str, how: str) -> None:
    """A missing or mistyped field: `data check`, `data convert`, `eval` (the benchmark's own task with an llm:
    judge, and the pair view / pairs with any judge) all exit 2 naming the file and the place, and write
    nothing."""
    name, where = _break(benchmark, how, tmp_path / "data")
    data, llm = str(tmp_path / "data"), "llm:openai:m@http://127.0.0.1:9/v1"
    verbs = [["data", "check", data], ["data", "convert", data, "--out", str(tmp_path / "x.jsonl")],
             ["eval", "--data", data, "--judge", llm, "--out", str(tmp_path / "r")],
             ["eval", "--data", data, "--judge", "longer", "--task", "pairwise", "--out", str(tmp_path / "r")]]
    for args in verbs:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and name in result.stderr and where in result.stderr, (args, result.output)
        assert "Traceback" not in result.output
    assert not (tmp_path / "r").exists() and not (tmp_path / "x.jsonl").exists()


def test_suite_from_the_command_line(tmp_path: Path) -> None:
    make_prefeval(tmp_path / "prefeval")
    make_personamem(tmp_path / "personamem")
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "small", "benchmarks": [
        {"name": "prefeval-pairs", "data": "prefeval", "options": {"turns": "0", "topics": "travel_hotel"}},
        {"name": "personamem", "data": "personamem", "task": "multiple-choice"}],
        "judges": ["shorter"], "n_boot": 50}))
    result = CliRunner().invoke(app, ["eval", "--suite", str(suite), "--judge", "longer", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "| longer · persona |" in result.stdout and "prefeval-pairs" in result.stdout
    assert f"wrote {tmp_path / 'o' / 'leaderboard.md'}, leaderboard.html" in result.stdout
    report = CliRunner().invoke(app, ["report", str(tmp_path / "o"), "--out", str(tmp_path / "r")])  # the folder
    assert report.exit_code == 0, report.output
    assert f"wrote {tmp_path / 'r' / 'report.md'}" in report.stdout and "1 run in the report" in report.stdout
    board = json.loads((tmp_path / "o" / "leaderboard.json").read_text())
    assert board["rows"]["longer · persona"]["prefeval-pairs"]["n"] == 9 * 3 and board["rows"]["longer · mc"] == {
        "personamem": None}
    missing = CliRunner().invoke(app, ["eval", "--suite", "nope", "--out", str(tmp_path / "o2")])
    assert missing.exit_code == 2 and "no built-in suite" in missing.stderr


def test_convert_writes_the_pair_view_with_its_names(tmp_path: Path) -> None:
    make_prefeval(tmp_path / "data")
    out = tmp_path / "pairs.jsonl"
    result = CliRunner().invoke(app, ["data", "convert", str(tmp_path / "data"), "--turns", "0,2", "--out", str(out),
                                      "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["cases"] == 2 * 3 * 3 * 2 * 3, result.output
    check = CliRunner().invoke(app, ["data", "check", str(out), "--json"])
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["tiers"] == ["turns-0", "turns-2"]
    card = CliRunner().invoke(app, ["data", "check", str(tmp_path / "data")])
    assert card.exit_code == 0 and "card licence" in card.stdout and "CC BY-NC 4.0" in card.stdout


def test_dataset_cards_are_in_the_docs() -> None:
    """docs/data.md's card table says what `tailor data check` prints: every fact of every layout's card."""
    from tailorbench.datasets.layouts import all_layouts

    docs = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text(encoding="utf-8")
    cards = {layout.name: dict(layout.card) for layout in all_layouts() if getattr(layout, "card", None)}
    assert set(cards) >= {"prefeval", "personamem", "personalized-rewardbench", "prism"}
    for name, card in cards.items():
        row = next((line for line in docs.splitlines() if line.startswith(f"| `{name}` |")), "")
        for key in ("licence", "size", "citation"):
            assert card[key] in row, (name, key)
