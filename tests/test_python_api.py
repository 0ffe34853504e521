"""The Python API (issue 21 point 2, issue 43 point 1): `import tailorbench as tb` is light and gives every verb
by its name, one function per verb, the names declared once (`tailorbench._names`) and listed by docs/python.md;
the walk-through of docs/python.md runs as written (its `python` blocks in order, in a fresh directory) and passes
mypy; the verbs work inside a running event loop; removed names still import, with a DeprecationWarning;
warnings go through `logging` and still print as `warning: ...` on stderr."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tailorbench as tb
from tailorbench._names import DEPRECATED
from tests.conftest import REPO_ROOT
from tests.helpers.mypy_run import run_mypy

DOC = REPO_ROOT / "docs" / "python.md"
_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_code() -> str:
    """The `python` blocks of docs/python.md, in order, as one script."""
    blocks = [m.group("body") for m in _FENCE.finditer(DOC.read_text(encoding="utf-8"))
              if m.group("info").strip() == "python"]
    assert len(blocks) >= 5, "docs/python.md lost its walk-through"
    return "\n\n".join(blocks)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_import_is_light() -> None:
    code = ("import sys, tailorbench as tb; heavy = ('torch', 'numpy', 'fastapi', 'sqlalchemy', 'pydantic', "
            "'transformers', 'tailorbench.api', 'tailorbench.evaluate'); print([m for m in heavy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    assert out.stdout.strip() == "[]"


def test_every_name_resolves() -> None:
    from tailorbench import api

    assert set(tb.__all__) == {"__version__", *api.__all__}
    for name in api.__all__:
        assert getattr(tb, name) is getattr(api, name), name  # `tb.X is tailorbench.api.X`, one meaning each
    for group in (tb.stages, tb.annotate, tb.study):
        for name in group.__all__:
            assert getattr(group, name) is not None, (group, name)
    assert tb.stages is api.stages and tb.annotate is api.annotate and tb.study is api.study
    assert tb.stages.example is tb.stages.run_example
    assert callable(tb.eval) and callable(tb.resume)


def test_the_names_are_declared_once() -> None:
    """`_names.PUBLIC` is what the facade, the API package (at run time and for mypy), each area module and
    docs/python.md name: the same set everywhere."""
    import importlib

    from tailorbench import _names, api

    assert tb.__all__ == ["__version__", *_names.PUBLIC] and api.__all__ == list(_names.PUBLIC)
    helpers = {"registered_parts", "render_tables", "resumed_by"}  # for the CLI, not verbs
    for area, names in _names.AREAS.items():
        module = importlib.import_module(f"tailorbench.api.{area}")
        assert all(hasattr(module, name) for name in names), area
        if area != "results":  # the result models' module has more models than the facade names
            assert set(module.__all__) - helpers == set(names), area
    # what mypy reads: the TYPE_CHECKING imports of tailorbench/api/__init__.py, one per public name
    tree = ast.parse(Path(inspect.getfile(api)).read_text(encoding="utf-8"))
    typed = {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names if alias.asname == alias.name}  # `from M import X as X`: re-exported
    assert typed == set(_names.PUBLIC)
    documented = set(re.findall(r"\btb\.([A-Za-z_]\w+)", DOC.read_text(encoding="utf-8")))  # not `tb.X`
    assert documented == set(tb.__all__), (documented ^ set(tb.__all__))


def test_async_only_where_the_work_runs_on_the_callers_loop() -> None:
    """`eval_async` and `build_async` run their model calls on the caller's loop; no other verb has a twin (the
    blocking verbs work inside a running loop: `aio.run_sync`)."""
    from tailorbench import _names

    twins = [n for group in (tb, tb.stages, tb.annotate, tb.study) for n in group.__all__ if n.endswith("_async")]
    assert sorted(twins) == sorted(f"{verb}_async" for verb in _names.ON_THE_LOOP)
    assert asyncio.iscoroutinefunction(tb.eval_async) and asyncio.iscoroutinefunction(tb.build_async)


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_a_removed_name_still_imports_with_a_warning(old: str) -> None:
    from tailorbench import _names, api

    new = _names.DEPRECATED[old]
    for module, prefix in ((tb, "tailorbench"), (api, "tailorbench.api")):
        with pytest.warns(DeprecationWarning, match=rf"{prefix}\.{old} is deprecated .* use {prefix}\.{new}\b"):
            value = getattr(module, old)
        assert callable(value) and asyncio.iscoroutinefunction(value) == old.endswith("_async"), old
        assert old not in module.__all__
    with pytest.raises(AttributeError, match="no attribute 'eval_manyy'"):
        tb.eval_manyy  # noqa: B018


def test_removed_entry_points_still_work(tmp_path: Path) -> None:
    """The old entry points keep their arguments and results for one release, through the one function."""
    with pytest.warns(DeprecationWarning, match="use tailorbench.eval"):
        from tailorbench import eval_many
    runs = eval_many(["longer", "shorter"], ["persona"], "demo", out=tmp_path / "many", limit=4, n_boot=20)
    assert [r.judge for r in runs] == ["longer", "shorter"] and (tmp_path / "many" / "report.md").is_file()
    with pytest.warns(DeprecationWarning, match="use tailorbench.api.resume"):
        from tailorbench.api import eval_resume
    again = eval_resume(tmp_path / "many" / "longer__persona")
    assert isinstance(again, tb.EvalResult) and again.accuracy == runs[0].accuracy
    with pytest.warns(DeprecationWarning, match="use tailorbench.compare .*running event loop"):
        twin = tb.compare_async
    diff = asyncio.run(twin(*(r.run_dir for r in runs if r.run_dir is not None), n_boot=20))
    assert diff.n == 4


def test_eval_takes_one_or_several_judges_and_resume_any_run(tmp_path: Path) -> None:
    """One judge (a `str`) in one setting: its results; several (a list): a list, a run per judge x setting under
    `out`; `tb.resume` continues each; `tb.eval_async` refuses what it cannot run on the caller's loop."""
    from tailorbench.errors import ConfigError

    one = tb.eval("demo", "longer", out=tmp_path / "one", limit=4, n_boot=20)
    assert isinstance(one, tb.EvalResult) and one.run_dir == tmp_path / "one"
    several = tb.eval("demo", ["longer"], ("persona", "none"), out=tmp_path / "several", limit=4, n_boot=20)
    assert isinstance(several, list) and [r.setting for r in several] == ["persona", "none"]
    assert [r.run_dir for r in several] == [tmp_path / "several" / f"longer__{s}" for s in ("persona", "none")]
    for run in (tmp_path / "one", *(r.run_dir for r in several)):
        assert isinstance(tb.resume(run), tb.EvalResult)
    with pytest.raises(ConfigError, match="--data-root and --skip-missing apply to a suite"):
        tb.eval("demo", out=tmp_path / "x", skip_missing=True)
    with pytest.raises(ConfigError, match="give --suite or --data, not both"):
        tb.eval("demo", out=tmp_path / "x", suite="personalization")  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match=r"nowhere: no such run directory"):
        tb.resume(tmp_path / "nowhere")
    old_suite = tmp_path / "old-suite"
    old_suite.mkdir()
    (old_suite / "leaderboard.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"without suite\.json .* run the same `tailor eval --suite \.\.\.` again"):
        tb.resume(old_suite)
    with pytest.raises(ConfigError, match=r"demo is multiple choice: call tb\.eval"):
        asyncio.run(tb.eval_async("demo", out=tmp_path / "x", task="multiple-choice"))


def test_no_name_means_two_things() -> None:
    """A verb group is a module of verbs and nothing else; the capability packages have names of their own, so
    importing one never rebinds a verb's name."""
    import tailorbench.annotation.service
    import tailorbench.threestage.verbs
    import tailorbench.viewer.viewer  # noqa: F401
    from tailorbench import api

    assert tb.stages is api.stages and tb.annotate is api.annotate and tb.view is api.view
    assert callable(tb.view) and callable(tb.build)
    for name in ("evaluate", "report_runs", "compare_runs", "gen_eval_run"):
        assert not hasattr(api, name), name  # the dict-returning duplicates are gone


def test_walk_through_runs(tmp_path: Path) -> None:
    script = tmp_path / "walk_through.py"
    script.write_text(doc_code(), encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=_env(),
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "runs" / "leaderboard" / "report.md").is_file()
    assert (tmp_path / "tiered.jsonl").is_file()


def test_walk_through_passes_mypy(tmp_path: Path) -> None:
    script = tmp_path / "walk_through.py"
    script.write_text(doc_code(), encoding="utf-8")
    # a second file with one wrong type shows that mypy sees the API's types (not Any) in the same run
    wrong = tmp_path / "wrong.py"
    wrong.write_text('import tailorbench as tb\n\nresult: int = tb.eval("demo", out="runs/x")\n', encoding="utf-8")
    out = run_mypy("walk-through", ["--config-file", str(REPO_ROOT / "pyproject.toml"), "--no-error-summary",
                                    "--strict", "--follow-imports=silent", str(script), str(wrong)], env=_env())
    report = out.stdout + out.stderr
    assert "walk_through.py" not in report, report
    assert re.search(r'wrong\.py:3: error: Incompatible types in assignment \(expression has type '
                     r'"EvalResult \| ChoiceResult"', report), report


def test_eval_inside_a_running_loop(tmp_path: Path) -> None:
    async def notebook_cell() -> tuple[tb.EvalResult, tb.EvalResult]:
        asyncio.get_running_loop()  # a loop runs, as in a notebook: asyncio.run would refuse
        blocking = tb.eval("demo", judge="longer", out=tmp_path / "blocking", n_boot=100)
        awaited = await tb.eval_async("demo", judge="longer", out=tmp_path / "awaited", n_boot=100)
        return blocking, awaited

    blocking, awaited = asyncio.run(notebook_cell())
    assert blocking.status == awaited.status == "finished"
    assert blocking.metrics == awaited.metrics and blocking.n == 72
    on_disk = json.loads((tmp_path / "blocking" / "results.json").read_text(encoding="utf-8"))
    assert blocking.to_dict() == on_disk and blocking.run_dir == tmp_path / "blocking"


def test_warnings_go_through_logging(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     caplog: pytest.LogCaptureFixture) -> None:
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"user_id": "nobody", "id": "m1", "text": "likes tea"}) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="tailorbench"):
        tb.eval("demo", judge="longer", setting="rag", out=tmp_path / "rag", n_boot=100,
                setting_options={"memory": str(memory)})
    err = capsys.readouterr().err
    assert re.search(r"^warning: rag: \d+ of \d+ users have no items in ", err, re.MULTILINE), err
    assert any(r.name == "tailorbench.evaluate.rag_setting" and r.levelno == logging.WARNING for r in caplog.records)


def test_notes_are_info_records_that_tailor_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A resume's note is an INFO record: quiet in Python by default, on stderr under `tailor`, and the
    package logger's level is the same after the verb as before it."""
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    run = tmp_path / "run"
    tb.eval("demo", judge="longer", out=run, limit=4, n_boot=20)
    capsys.readouterr()
    tb.resume(run)
    assert "resume:" not in capsys.readouterr().err
    with caplog.at_level(logging.INFO, logger="tailorbench"):
        tb.resume(run)
    assert any(r.levelno == logging.INFO and r.getMessage().startswith(f"resume: {run} is finished")
               for r in caplog.records)
    level = logging.getLogger("tailorbench").level
    shown = CliRunner().invoke(app, ["eval", "--resume", str(run)])
    assert shown.exit_code == 0, shown.output
    assert f"resume: {run} is finished; 8 verdicts on disk, 0 to judge" in shown.stderr
    assert logging.getLogger("tailorbench").level == level


def test_annotate_verbs(tmp_path: Path) -> None:
    """tb.annotate.* on a project directory: what `tailor annotate ...` prints, as Python objects."""
    bench = tmp_path / "bench.jsonl"
    from tailorbench.datasets import load_benchmark, write_native

    write_native(load_benchmark("demo").cases[:4], bench)
    where = {"directory": tmp_path / "annotation"}
    from tailorbench.api.results import AnnotationExport, ProjectCreated

    made = tb.annotate.create_project("pairs", task="pairwise", n=2, **where)
    assert isinstance(made, ProjectCreated) and made.task_type == "pairwise" and made.n_per_item == 2
    assert tb.annotate.import_items("pairs", bench, **where).items == 4
    user = tb.annotate.add_annotator("ann1", projects=["pairs"], **where)
    assert user.login_link is not None and user.login_link.startswith("http://127.0.0.1:8000/login/")
    assert [u.name for u in tb.annotate.list_annotators(**where)] == ["ann1"]
    progress = tb.annotate.progress("pairs", **where)
    assert progress.flagged == [] and progress.labels_needed == 8 and progress.labels_done == 0
    assert [p.project for p in tb.annotate.list_projects(**where)] == ["pairs"]
    exported = tb.annotate.export("pairs", tmp_path / "export", **where)
    assert (tmp_path / "export" / "ratings.jsonl").is_file() and isinstance(exported, AnnotationExport)
    # the CLI prints the verb's object: the same fields with --json
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    shown = CliRunner().invoke(app, ["annotate", "progress", "pairs", "--dir", str(where["directory"]), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == tb.annotate.progress("pairs", **where).to_dict()
