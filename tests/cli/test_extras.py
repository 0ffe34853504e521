"""A verb that needs an optional extra says which in one line, exit 2, before any work and with nothing left
behind: vLLM ([vllm]) for a vllm: judge, bm25s ([retrieval]) for `tailor stages example` and the bm25
retriever. The extras' libraries are hidden by a None in sys.modules (what a missing package looks like to
`importlib.util.find_spec` and to `import`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

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
