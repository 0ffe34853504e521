"""A verb that needs an optional extra says which in one line, exit 2, before any work and with nothing left
behind: vLLM ([vllm]) for a vllm: judge, bm25s ([retrieval]) for `tailor stages example` and the bm25
retriever. The extras' libraries are hidden by a None in sys.modules (what a missing package looks like to
`importlib.util.find_spec` and to `import`)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError, require_extra


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.stderr


@pytest.mark.parametrize("judge", ["vllm:some/model", "llm:vllm:some/model"])
def test_a_vllm_judge_without_vllm_names_the_extra(tmp_path: Path, judge: str) -> None:
    assert importlib.util.find_spec("vllm") is None, "the project venv holds no vLLM"
    out = tmp_path / "run"
    code, err = invoke("eval", "--data", "demo", "--limit", "2", "--no-progress", "--judge", judge, "--out", str(out))
    assert code == 2 and "pip install 'tailorbench[vllm]'" in err, err
    assert err.count("\n") == 1 and "cannot load the tokenizer" not in err, err
    if judge.startswith("vllm:"):
        assert "--judge llm:vllm:some/model" in err, err
    assert not out.exists()


def test_a_model_spec_given_as_judge_says_how_to_judge_with_it() -> None:
    code, err = invoke("eval", "--data", "demo", "--judge", "openai:gpt-x", "--out", "unused")
    assert code == 2 and "a chat model judges as --judge llm:openai:gpt-x" in err, err
    assert not Path("unused").exists()


def test_stages_example_without_bm25s_names_the_retrieval_extra(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)
    out = tmp_path / "stages"
    code, err = invoke("stages", "example", "--out", str(out))
    assert code == 2, err
    assert err == ("error: tailor stages example (its BM25 baseline) needs the [retrieval] extra: "
                   "pip install 'tailorbench[retrieval]'\n"), err
    assert not out.exists()


def test_the_bm25_retriever_without_bm25s(monkeypatch: pytest.MonkeyPatch) -> None:
    from tailorbench.memory.retrieval import BM25Index

    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(ConfigError, match=r"\[retrieval\] extra"):
        BM25Index(["a text"])


def test_require_extra_is_silent_when_the_module_is_there() -> None:
    require_extra("json", "none", "anything")
    with pytest.raises(ConfigError, match=r"^x needs the \[y\] extra: pip install 'tailorbench\[y\]'$"):
        require_extra("no_such_module_anywhere", "y", "x")
    with pytest.raises(ConfigError):
        require_extra("no_such_parent.child", "y", "x")


#: the modules of the [web] extra the annotation verbs use: the database (SQLAlchemy, Alembic) and the server
WEB_MODULES = ("sqlalchemy", "alembic", "fastapi", "uvicorn")


def _without_web(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in WEB_MODULES:
        monkeypatch.setitem(sys.modules, module, None)


def _web_error(verb: str, why: str) -> str:
    return f"error: tailor {verb} ({why}) needs the [web] extra: pip install 'tailorbench[web]'\n"


@pytest.mark.parametrize("verb", ["study demo", "study run", "study status"])
def test_study_verbs_without_the_web_extra_name_it_and_make_nothing(tmp_path: Path, verb: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At 97f6c24, after `make demo` (no [web]), `tailor study demo DIR` made the study (study.yaml, its inputs,
    state.json, run.lock, steps/) and then ended in a traceback (ModuleNotFoundError: sqlalchemy, exit 1); `study
    run` ran its model steps first. Now: one line naming the extra, exit 2, nothing created."""
    _without_web(monkeypatch)
    study = tmp_path / "study"
    code, err = invoke(*verb.split(), str(study))
    why = "the annotation server" if verb == "study demo" else "the annotation database"
    assert code == 2 and err == _web_error(verb, why), err
    assert not study.exists()


@pytest.mark.parametrize(("verb", "args"), [
    ("serve", ["--port", "8123"]),
    ("project create", ["p", "--task", "pairwise"]),
    ("project list", []),
    ("import", ["p", "items.jsonl"]),
    ("annotator add", ["alice"]),
    ("progress", ["p"]),
    ("release", ["p"]),
    ("export", ["p", "--out", "exported"]),
    ("crowd create", ["p", "--quota", "4", "--max-participants", "2", "--completion-code", "C1"]),
    ("crowd list", []),
    ("crowd link", ["1"]),
])
def test_annotate_verbs_without_the_web_extra_name_it(tmp_path: Path, verb: str, args: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """At 97f6c24 every `tailor annotate` verb on the database (and `serve`) without [web] ended in a traceback
    (ModuleNotFoundError: sqlalchemy / uvicorn, exit 1)."""
    _without_web(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code, err = invoke("annotate", *verb.split(), *args, "--dir", str(tmp_path / "annotation"))
    why = "the annotation server" if verb == "serve" else "the annotation database"
    assert code == 2 and err == _web_error(f"annotate {verb}", why), err
    assert not (tmp_path / "annotation").exists() and not (tmp_path / "exported").exists()


def test_every_annotate_verb_but_the_file_ones_checks_the_web_extra() -> None:
    """By construction: every verb of `tailor annotate` (a verb added later included) gets the [web] check,
    except those that only turn files into files."""
    from tailorbench.cli.annotate_cmd import FILE_VERBS
    from tailorbench.cli.common import ExtraVerb

    group = typer.main.get_command(app).commands["annotate"]  # type: ignore[attr-defined]

    def verbs(command: object, path: str) -> list[tuple[str, object]]:
        subs = getattr(command, "commands", None)
        if subs is None:
            return [(path, command)]
        return [v for name, sub in subs.items() for v in verbs(sub, f"{path} {name}".strip())]

    found = verbs(group, "")
    assert len(found) >= 20
    for name, command in found:
        if name in FILE_VERBS:
            assert not isinstance(command, ExtraVerb), name
        else:
            assert isinstance(command, ExtraVerb) and command.extra == "web", name
            assert {"sqlalchemy", "alembic"} <= set(command.modules), name


def test_help_and_usage_errors_come_before_the_extra_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--help` works without the extra, and a usage error is reported as such, not as a missing extra."""
    _without_web(monkeypatch)
    result = CliRunner().invoke(app, ["annotate", "serve", "--help"])
    assert result.exit_code == 0 and "--max-form-kib" in result.stdout, result.output
    code, err = invoke("annotate", "serve", "--port", "x")
    assert code == 2 and err.startswith("error: Invalid value for '--port'") and "[web]" not in err, err


def test_the_file_verbs_and_the_viewer_need_no_web_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tailor view` serves with the standard library's HTTP server, and `annotate export-items` /
    `import-labels` read and write files: neither needs [web] (at 97f6c24 nothing said which verbs do; the
    check must not refuse these)."""
    run = tmp_path / "run"
    code, err = invoke("eval", "--data", "demo", "--judge", "longer", "--limit", "4", "--n-boot", "20",
                       "--no-progress", "--out", str(run))
    assert code == 0, err
    _without_web(monkeypatch)
    code, err = invoke("view", str(run), "--bundle", str(tmp_path / "site"))
    assert code == 0 and (tmp_path / "site" / "index.html").is_file(), err
    from tailorbench import api

    viewer = api.view([run], port=0)
    try:
        assert viewer.url.startswith("http://127.0.0.1:")
    finally:
        viewer.stop()
    items = Path(__file__).resolve().parents[1] / "annotation" / "data" / "pairwise.jsonl"
    code, err = invoke("annotate", "export-items", str(items), "--task", "pairwise", "--format", "potato",
                       "--out", str(tmp_path / "potato"))
    assert code == 0 and (tmp_path / "potato" / "config.yaml").is_file(), err


@pytest.mark.parametrize(("call", "why"), [
    (lambda d: tb.study.demo(d), "the annotation server"),
    (lambda d: tb.study.run(d), "the annotation database"),
    (lambda d: tb.study.status(d), "the annotation database"),
    (lambda d: tb.annotate.list_projects(d), "the annotation database"),
    (lambda d: tb.annotate.create_project("p", "pairwise", directory=d), "the annotation database"),
])
def test_the_python_twins_check_the_web_extra_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     call: Callable[[Path], object], why: str) -> None:
    """The Python verbs check the same [web] modules as the CLI (errors.require_web) before any work: at 97f6c24
    `tb.study.demo(DIR)` without [web] made the study's folder and ended in a ModuleNotFoundError."""
    _without_web(monkeypatch)
    target = tmp_path / "made"
    with pytest.raises(ConfigError, match=rf"{why}\)? needs the \[web\] extra: pip install"):
        call(target)
    assert not target.exists()
