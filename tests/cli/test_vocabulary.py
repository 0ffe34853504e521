"""One CLI vocabulary (docs/cli.md, "Vocabulary"): every option of every verb is in the docs' tables with that
verb listed, every hidden old spelling is documented, every verb has `--json` and an example in its help, and
`eval --help` lists the registered judges and backends. train-rm's flags are RMTrainConfig's fields."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tailorbench.cli.app import EXAMPLES, app
from tailorbench.cli.common import expand_file_lists
from tailorbench.train.config import RMTrainConfig

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
runner = CliRunner()


def verbs(cmd: Any = None, path: tuple[str, ...] = (), hidden: bool = False) -> Iterator[tuple[str, Any]]:
    """(`stages report-relevance`, command) for every leaf command of `tailor`; with `hidden`, instead, every old
    verb name (a hidden command or group: `stages extraction`, `annotate study`) with its command."""
    cmd = typer.main.get_command(app) if cmd is None else cmd
    if path and getattr(cmd, "hidden", False):
        if hidden:
            yield " ".join(path), cmd
    elif hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from verbs(sub, (*path, name), hidden)
    elif not hidden:
        yield " ".join(path), cmd


def vocabulary() -> tuple[dict[str, set[str]], str]:
    """option spelling -> the verbs its rows list (`every verb`, `annotate *` kept as written), and the section."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Vocabulary"):]
    section = section[: section.index("\n## ", 1)]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]  # `\|`: a | in a cell
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("option", "old spelling") or "---" in cells[0]:
            continue
        names = re.findall(r"`(-[-\w]+)", cells[0])
        listed = set(re.findall(r"`([^`]+)`", cells[2])) | ({"every verb"} if "every verb" in cells[2] else set())
        for name in names:
            table.setdefault(name, set()).update(listed)
    return table, section


def _covers(listed: set[str], verb: str) -> bool:
    return "every verb" in listed or verb in listed or any(
        v.endswith(" *") and verb.startswith(v[:-1]) for v in listed)


ALL = list(verbs())


def test_every_verb_is_walked() -> None:
    names = {name for name, _ in ALL}
    assert {"eval", "train-rm", "stages report-relevance", "annotate project create", "build run"} <= names
    assert len(names) == len(ALL) >= 40
    assert not names & {"stages relevance", "annotate study create"}  # old names are hidden aliases


def visible_group(name: str) -> list[str]:
    """The verbs under the group `name` (`annotate crowd`), by their last word."""
    return [verb.split()[-1] for verb, _ in ALL if verb.startswith(name + " ")]


def old_verbs() -> dict[str, str]:
    """The old verb names of docs/cli.md's table of old spellings: old name -> the name it is now."""
    _, section = vocabulary()
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()]
    return {old[1:-1]: now[1:-1] for old, now, *_ in (r for r in rows if len(r) == 3)
            if old.startswith("`") and not old.startswith("`-") and now.startswith("`")}


def test_every_old_verb_name_is_documented_and_runs_the_new_one() -> None:
    hidden = dict(verbs(hidden=True))
    assert {"stages extraction", "stages relevance", "stages incorporation", "annotate study"} <= set(hidden)
    documented = old_verbs()
    assert set(hidden) == set(documented), "docs/cli.md's old spellings and the hidden verbs differ"
    visible = dict(verbs())

    def same(a: Any, b: Any) -> bool:  # typer wraps each command's function anew
        return bool(inspect.unwrap(a.callback) is inspect.unwrap(b.callback))

    for old, cmd in hidden.items():
        new = documented[old]
        if hasattr(cmd, "commands"):  # a group: each verb under it is the new group's verb
            assert set(cmd.commands) == set(visible_group(new)), old
            for sub, leaf in cmd.commands.items():
                assert same(leaf, visible[f"{new} {sub}"]), (old, sub)
        else:
            assert same(cmd, visible[new]), old
        parent = runner.invoke(app, [*old.split()[:-1], "--help"], terminal_width=200)
        assert parent.exit_code == 0 and new.split()[-1] in parent.output
        assert not re.search(rf"^\W*{re.escape(old.split()[-1])}\s", parent.output, re.MULTILINE), \
            f"{old} is listed in --help"


@pytest.mark.parametrize("verb,cmd", ALL, ids=[name for name, _ in ALL])
def test_options_are_in_the_vocabulary(verb: str, cmd: Any) -> None:
    table, section = vocabulary()
    for param in cmd.params:
        if param.param_type_name != "option" or param.name == "help":
            continue
        spellings = [*param.opts, *param.secondary_opts]
        if param.hidden:  # an old spelling: named in the docs' table of old spellings
            for spelling in spellings:
                assert f"`{spelling}" in section, f"{verb}: hidden {spelling} is not documented"
            continue
        for spelling in spellings:
            assert spelling in table, f"{verb}: {spelling} is not in docs/cli.md's vocabulary"
            assert _covers(table[spelling], verb), f"{verb}: docs/cli.md's row of {spelling} does not list {verb}"
        assert param.help, f"{verb}: {param.opts[0]} has no help"


@pytest.mark.parametrize("verb,cmd", ALL, ids=[name for name, _ in ALL])
def test_json_and_an_example_in_every_verb(verb: str, cmd: Any) -> None:
    assert any("--json" in p.opts for p in cmd.params), f"{verb} has no --json"
    assert verb in EXAMPLES and EXAMPLES[verb].startswith(f"tailor {verb}")
    result = runner.invoke(app, [*verb.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "Example: tailor " + verb in flat


def test_the_docs_list_no_verb_that_does_not_exist() -> None:
    table, _ = vocabulary()
    names = {name for name, _ in ALL}
    for spelling, listed in table.items():
        for verb in listed - {"every verb"}:
            assert verb in names or (verb.endswith(" *") and any(n.startswith(verb[:-1]) for n in names)), \
                f"docs/cli.md lists {verb} for {spelling}"


def test_eval_help_lists_judges_and_backends() -> None:
    from tailorbench.judges.base import JUDGES
    from tailorbench.models.backends import BACKENDS

    result = runner.invoke(app, ["eval", "--help"], terminal_width=200)
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for name in (*JUDGES.names(), *BACKENDS.names()):
        assert name in flat, f"eval --help does not list {name}"
    assert "Judges:" in flat and "Model backends:" in flat


def test_train_rm_flags_are_the_config_fields() -> None:
    from tailorbench.cli.vocabulary import FIELD_FLAGS, MEANINGS

    cmd = dict(ALL)["train-rm"]
    flags = {p.name: p for p in cmd.params if p.param_type_name == "option"}
    for f in fields(RMTrainConfig):
        assert f.name in flags, f"RMTrainConfig.{f.name} has no flag"
        flag = FIELD_FLAGS.get(f.name, f"--{f.name.replace('_', '-')}")
        assert flag in flags[f.name].opts
        # the field's help, after the flag's meaning where other verbs take the flag too
        assert f.metadata.get("help")
        assert flags[f.name].help.startswith((f.metadata["help"], f"{MEANINGS.get(flag)}: {f.metadata['help']}"))
    assert set(flags) - {f.name for f in fields(RMTrainConfig)} == {"config", "progress", "json_out"}
    assert FIELD_FLAGS == {"model": "--base-model"}  # --model is a model spec on every other verb
    # the spellings of earlier versions keep working
    assert "--lr" in flags["learning_rate"].opts and "-d" in flags["data"].opts and "-o" in flags["out"].opts


def test_file_lists_take_what_a_glob_expands_to() -> None:
    cmd = dict(ALL)["stages report-relevance"]
    assert expand_file_lists(cmd, ["--human", "a", "b", "--votes", "c", "--n-boot", "5", "--human=d", "e"]) == [
        "--human", "a", "--human", "b", "--votes", "c", "--n-boot", "5", "--human=d", "--human", "e"]
    assert expand_file_lists(cmd, ["--json", "--", "x", "y"]) == ["--json", "--", "x", "y"]


def test_stray_arguments_are_errors_and_old_spellings_work(tmp_path: Path) -> None:
    result = runner.invoke(app, ["stages", "report-relevance", "stray.jsonl"])
    assert result.exit_code == 2
    bad = runner.invoke(app, ["stages", "report-relevance", "--resamples", "0"])
    assert bad.exit_code == 2 and "--resamples" in bad.output
    bad = runner.invoke(app, ["agree", str(tmp_path / "r.jsonl"), "--n-boot", "0"])
    assert bad.exit_code == 2 and "--n-boot" in bad.output


def test_one_key_value_reader() -> None:
    from tailorbench.cli.common import parse_pairs
    from tailorbench.errors import ConfigError

    assert parse_pairs(["a=1", " b =x=y", "c="], "--judge-option") == {"a": "1", "b": "x=y", "c": ""}
    for bad in ("novalue", "=1"):
        with pytest.raises(ConfigError, match="--model-option expects KEY=VALUE"):
            parse_pairs([bad], "--model-option")
    cli = DOCS.parents[1] / "src/tailorbench/cli"
    readers = [p.name for p in cli.glob("*.py") if "KEY=VALUE, got" in p.read_text(encoding="utf-8")]
    assert readers == ["common.py"]


@pytest.mark.parametrize("verb,cmd", ALL, ids=[name for name, _ in ALL])
def test_every_example_uses_the_verbs_own_options(verb: str, cmd: Any) -> None:
    import shlex

    args = shlex.split(EXAMPLES[verb])[1 + len(verb.split()):]
    ctx = cmd.make_context(verb, expand_file_lists(cmd, args))  # an unknown option or a missing one raises
    assert not ctx.args, f"{verb}'s example has stray arguments {ctx.args}"
