"""One meaning per flag (docs/cli.md, "Vocabulary"; `cli/vocabulary.py`): every shown option of every verb begins
its help with its flag's declared meaning, so a second meaning planted on any verb fails here; `-o` and `-m`
wherever `--out` and a model spec are; renamed flags keep their old spellings; durations are seconds, or a number
with a unit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from tailorbench.cli import vocabulary
from tailorbench.cli.app import app
from tailorbench.cli.vocabulary import (
    MEANINGS,
    leaves,
    options,
    second_meanings,
    seconds,
    stale_meanings,
)

runner = CliRunner()


def tailor() -> Any:
    return typer.main.get_command(app)


def verb(command: Any, name: str) -> Any:
    for part in name.split():
        command = command.commands[part]
    return command


def test_every_verb_says_one_meaning_per_flag() -> None:
    problems = second_meanings(tailor())
    assert not problems, "\n".join(problems)
    assert stale_meanings(tailor()) == []  # every declared meaning and old spelling is some verb's
    walked = [name for name, _ in leaves(tailor())]
    assert len(walked) >= 60 and {"eval", "ls", "stages verify", "annotate project create"} <= set(walked)


def _tiny_app(helps: dict[str, str]) -> Any:
    """`tiny a|b|...`: one verb per entry, each with `--model` helped as given."""
    tiny = typer.Typer()
    for name, help_text in helps.items():
        def command(model: str = typer.Option("x", "--model", help=help_text)) -> None:
            """A verb."""

        tiny.command(name)(command)
    return typer.main.get_command(tiny)


def test_a_planted_second_meaning_fails() -> None:
    ok = _tiny_app({"generate": "Model spec of the generator.", "judge": "model spec, e.g. openai:NAME@URL"})
    assert second_meanings(ok, extra={}) == []
    planted = _tiny_app({"generate": "Model spec of the generator.", "relevance": "Vote files of the stage."})
    problems = second_meanings(planted, extra={})
    assert len(problems) == 1 and problems[0].startswith("relevance: --model means 'Vote files of the stage.'")
    assert "a second meaning" in problems[0]
    # a prefix is not a meaning: "model specs" is not "model spec" said again
    assert second_meanings(_tiny_app({"a": "model specification files"}), extra={})


def test_a_planted_second_meaning_on_a_real_verb_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    command = tailor()
    model = next(p for flag, p in options(verb(command, "stages verify")) if flag == "--model")
    monkeypatch.setattr(model, "help", "Vote files of stage 2 to compare with.")
    problems = second_meanings(command)
    assert len(problems) == 1 and problems[0].startswith("stages verify: --model means 'Vote files")
    out = next(p for flag, p in options(verb(command, "agree")) if flag == "--out")
    monkeypatch.setattr(out, "help", "The output format.")
    assert any(p.startswith("agree: --out means 'The output format.'") for p in second_meanings(command))


def test_an_undeclared_flag_and_two_names_for_one_meaning_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = typer.Typer()

    @tiny.command("a")
    def a(held: float = typer.Option(0.5, "--held-out", help="Share of users held out for evaluation.")) -> None:
        """A verb."""

    @tiny.command("b")
    def b(other: int = typer.Option(0, "--other", help="Whatever.")) -> None:
        """Another verb."""

    problems = second_meanings(typer.main.get_command(tiny), extra={})
    assert any("a: --held-out has no declared meaning" in p for p in problems)
    monkeypatch.setitem(MEANINGS, "--held-out", MEANINGS["--eval-fraction"])  # a fourth name for the held-out share
    problems = second_meanings(typer.main.get_command(tiny), extra={})
    assert any("--eval-fraction and --held-out are declared with one meaning" in p for p in problems)
    monkeypatch.setitem(MEANINGS, "--gone", "a flag no verb takes any more")
    assert stale_meanings(tailor()) == ["--gone", "--held-out"]


def test_out_takes_o_and_a_model_spec_takes_m() -> None:
    for name, command in leaves(tailor()):
        for flag, param in options(command):
            if flag == "--out":
                assert "-o" in param.opts, f"{name}: --out without -o"
            if flag == "--model":
                assert "-m" in param.opts, f"{name}: --model without -m"
                assert param.help.lower().startswith("model spec"), name
    short = {}
    for name, command in leaves(tailor()):
        for flag, param in options(command):
            for spelling in param.opts:
                if not spelling.startswith("--"):
                    assert short.setdefault(spelling, flag) == flag, f"{name}: {spelling} is {flag}, {short[spelling]}"


@pytest.mark.parametrize("name,args,expected", [
    ("agree", ["r.jsonl", "--order", "A,B", "--judge", "j", "--format", "long"],
     {"order": "A,B", "judges": ["j"], "fmt": "long"}),
    ("agree", ["r.jsonl", "--tiers", "t.jsonl"], {"tiers_file": Path("t.jsonl")}),
    ("tiers", ["r.jsonl", "--items", "i.jsonl", "--out", "b.jsonl", "--format=argilla"], {"fmt": "argilla"}),
    ("cache clear", ["--older-than-days", "2", "--model", "gpt"], {"older_than": 172800.0, "model": "gpt"}),
    ("annotate release", ["p", "--older-than-hours=12"], {"older_than": 43200.0}),
    ("annotate annotator link", ["ann", "--link-days", "0.5"], {"link_valid_for": 43200.0}),
    ("annotate crowd create", ["p", "--quota", "5", "--max-participants", "2", "--completion-code", "C",
                               "--time-limit-min", "90"], {"time_limit": 5400.0}),
    ("annotate project create", ["p", "--task", "pairwise"], {"task": "pairwise"}),
    ("annotate export-items", ["i.jsonl", "--task", "pairwise", "--format", "potato", "--out", "o"],
     {"task": "pairwise", "fmt": "potato"}),
    ("annotate import", ["p", "f.jsonl", "--format", "paircase"], {"fmt": "paircase"}),
    ("annotate export", ["p", "--out", "o", "--format", "argilla"], {"fmt": "argilla"}),
    ("stages train-verifier", ["--items", "i", "--out", "o", "--test-fraction", "0.3"], {"eval_fraction": 0.3}),
    ("stages baseline", ["--items", "i", "--out", "o", "--val-fraction", "0.7"], {"val_fraction": 0.7}),
    ("train-rm", ["--model", "minilm"], {"model": "minilm"}),
    ("eval", ["--task", "pairwise"], {"task": "pairwise"}),  # eval's own --task is not an old spelling
])
def test_old_spellings_still_work(name: str, args: list[str], expected: dict[str, Any]) -> None:
    ctx = verb(tailor(), name).make_context(name, args)
    assert {key: ctx.params[key] for key in expected} == expected


def test_the_new_spellings_and_durations() -> None:
    ctx = verb(tailor(), "cache clear").make_context("clear", ["--older-than", "1.5h", "--model-name", "m", "-y"])
    assert ctx.params["older_than"] == 5400.0 and ctx.params["model"] == "m"
    assert [seconds(v) for v in ("90", "90s", "15m", "1.5h", "7d", ".5m", 30)] == [90, 90, 900, 5400, 604800, 30, 30]
    for bad in ("-1", "3x", "1 day", "", "nan", "1h30m"):
        with pytest.raises(typer.BadParameter, match="not a duration"):
            seconds(bad)
    result = runner.invoke(app, ["annotate", "release", "p", "--older-than", "tomorrow"])
    assert result.exit_code == 2 and "'--older-than'" in result.output and "not a duration" in result.output


def test_old_spellings_are_rewritten_only_before_the_values() -> None:
    command = verb(tailor(), "cache clear")
    assert vocabulary.rewrite_old_spellings(command, ["--older-than-days", "3", "--model=a", "--", "--model"]) == [
        "--older-than", "3d", "--model-name=a", "--", "--model"]
    assert vocabulary.rewrite_old_spellings(verb(tailor(), "eval"), ["--judge", "longer"]) == ["--judge", "longer"]


def test_usage_errors_name_the_new_flag() -> None:
    result = runner.invoke(app, ["agree", "r.jsonl", "--order"])
    assert result.exit_code == 2 and "'--label-order' requires an argument" in result.output
