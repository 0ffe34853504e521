"""A command line the parser refuses (an unknown option or verb, a value of the wrong type, a missing argument or
option value) reads like every other refusal: one `error:` line naming the verb's --help, exit 2, nothing
created. So do an `@FILE` option naming a file that is not there and a study directory that is a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def one_error_line(err: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "╭" not in err and "Usage:" not in err, err


@pytest.mark.parametrize(("args", "says"), [
    (["eval", "--bogus"], ("No such option: --bogus", "tailor eval --help")),
    (["study", "init"], ("Missing argument", "tailor study init --help")),
    (["view", "runs/x", "--port", "abc"], ("Invalid value for '--port'", "tailor view --help")),
    (["annotate", "crowd", "create", "p"], ("Missing option '--quota'", "tailor annotate crowd create --help")),
    (["annotate", "nosuch"], ("No such command 'nosuch'", "tailor annotate --help")),
    (["nosuchverb"], ("No such command 'nosuchverb'", "tailor --help")),
    (["--bogus"], ("No such option: --bogus",)),
    (["agree", "--label-order"], ("'--label-order' requires an argument",)),
    (["compare", "a", "b", "--n-boot", "1.5"], ("Invalid value for '--n-boot'",)),
])
def test_usage_errors_are_one_error_line_and_exit_2(tmp_path: Path, args: list[str], says: tuple[str, ...],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At 97f6c24 typer drew these as a box ("╭─ Error ─...") under the usage line, with no `error:` line (the
    convention of every other refusal, and what scripts and the fuzz oracle look for)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(*args)
    assert code == 2 and not out, (out, err)
    one_error_line(err)
    for text in says:
        assert text in err, err
    assert not any(tmp_path.iterdir())


def test_a_usage_error_from_the_installed_command() -> None:
    """The same through `tailor` itself (the console script's main), not only in process."""
    tailor = Path(sys.executable).parent / "tailor"
    proc = subprocess.run([str(tailor), "eval", "--limit", "many"], capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ, COLUMNS="80"))
    assert proc.returncode == 2, proc.stderr
    one_error_line(proc.stderr)
    assert "Invalid value for '--limit'" in proc.stderr


def test_a_group_without_its_verb_still_shows_its_help() -> None:
    result = CliRunner().invoke(app, ["annotate"])
    assert "serve" in result.output and "error:" not in result.output


@pytest.mark.parametrize(("args", "flag"), [
    (["annotate", "crowd", "create", "p", "--quota", "4", "--max-participants", "2", "--completion-code", "C1",
      "--consent"], "--consent"),
    (["annotate", "project", "create", "p", "--task", "pairwise", "--instructions"], "--instructions"),
])
@pytest.mark.parametrize("kind", ["missing", "directory", "latin-1"])
def test_an_at_file_option_that_cannot_be_read_names_the_file(tmp_path: Path, args: list[str], flag: str,
                                                              kind: str) -> None:
    """At 97f6c24 `--consent @missing` (and `--instructions @missing`) ended in a traceback (FileNotFoundError,
    exit 1); a directory or a non-UTF-8 file likewise. Now exit 2 naming the file, no database created."""
    given = tmp_path / "consent.txt"
    if kind == "directory":
        given.mkdir()
    elif kind == "latin-1":
        given.write_bytes("Einwilligung: Ich stimme zu. Gr\xfc\xdfe\n".encode("latin-1"))
    annotation = tmp_path / "annotation"
    code, _, err = invoke(*args, f"@{given}", "--dir", str(annotation))
    assert code == 2, err
    one_error_line(err)
    assert str(given) in err and flag in err, err
    assert not annotation.exists()


def test_an_at_file_option_reads_the_file(tmp_path: Path) -> None:
    text = tmp_path / "instructions.md"
    text.write_text("Pick the answer that fits the person.\n", encoding="utf-8")
    code, _, err = invoke("annotate", "project", "create", "p", "--task", "pairwise", "--instructions",
                          f"@{text}", "--dir", str(tmp_path / "annotation"), "--json")
    assert code == 0, err
    from tailorbench import api

    store = api.annotate.database(tmp_path / "annotation")
    try:
        from tailorbench.annotation import service

        [project] = service.list_projects(store)
        assert project["instructions"] == "Pick the answer that fits the person.\n"
    finally:
        store.dispose()


@pytest.mark.parametrize("verb", ["init", "demo"])
@pytest.mark.parametrize("under", [False, True])
def test_a_study_directory_on_or_under_a_file_is_refused(tmp_path: Path, verb: str, under: bool) -> None:
    """At 97f6c24 `tailor study init FILE` (FileExistsError), `study init FILE/sub` and `study demo FILE[/sub]`
    (NotADirectoryError) ended in a traceback, exit 1. Now exit 2 naming the path; nothing created."""
    thesis = tmp_path / "thesis.tex"
    thesis.write_text("\\documentclass{article}\n", encoding="utf-8")
    study = thesis / "study" if under else thesis
    code, _, err = invoke("study", verb, str(study))
    assert code == 2, err
    one_error_line(err)
    assert str(study) in err and (str(thesis) + " is not a directory" in err if under else "is a file" in err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis.tex"]
    assert thesis.read_text(encoding="utf-8") == "\\documentclass{article}\n"
