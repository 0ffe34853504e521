"""Fuzzing run directories as `--resume` and `tailor report` read them: a damaged predictions line or manifest
is a DataError naming the file (and line, and field) and leaves every byte of the run as it was; valid
predictions, in any order with a torn last line, resume exactly the verdicts they hold."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.errors import DataError, TailorError
from tailorbench.evaluate.runner import read_done
from tests.fuzz.conftest import count, expect_error, fuzz, workdir


@cache
def template() -> Path:
    """One finished run of the demo (8 cases, both orders), made once per process and copied per input."""
    root = Path(tempfile.mkdtemp(prefix="tb-fuzz-run-"))
    atexit.register(shutil.rmtree, root, True)
    api.eval("demo", judge="longer", out=root / "run", limit=8, n_boot=10)
    return root / "run"


def copy_run(root: Path) -> Path:
    run = root / "run"
    shutil.copytree(template(), run)
    return run


def snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file() and p.name != "run.lock"}


def lines_of(run: Path) -> list[bytes]:
    return (run / "predictions.jsonl").read_bytes().splitlines()


_BAD_LINES: tuple[tuple[str, str | None], ...] = (
    ("json", None), ("not-object", None), ("missing:case_id", "case_id"), ("missing:order", "order"),
    ("type:case_id", "case_id"), ("type:order", "order"),
)


@fuzz(120)
@given(st.data())
def test_a_damaged_predictions_line_stops_resume_and_changes_nothing(data: st.DataObject) -> None:
    count("predictions defect")
    kind, field = data.draw(st.sampled_from(_BAD_LINES))
    with workdir() as root:
        run = copy_run(root)
        rows = lines_of(run)
        k = data.draw(st.integers(0, len(rows) - 1))
        row = json.loads(rows[k])
        if kind == "json":
            bad = rows[k][: data.draw(st.integers(1, len(rows[k]) - 1))]
        elif kind == "not-object":
            bad = data.draw(st.sampled_from([b"[1]", b"7", b'"AB"', b"null"]))
        else:
            what, _, key = kind.partition(":")
            if what == "missing":
                row.pop(key)
            else:
                row[key] = data.draw(st.one_of(st.integers(), st.none(), st.lists(st.integers(), max_size=1)))
            bad = json.dumps(row).encode()
        torn = data.draw(st.sampled_from([b"", b'{"case_id": "x', b"{"]))
        rows[k] = bad
        (run / "predictions.jsonl").write_bytes(b"\n".join(rows) + b"\n" + torn)
        (run / "results.json").unlink()
        before = snapshot(run)
        try:
            api.resume(run)
        except DataError as error:
            expect_error(error, run / "predictions.jsonl", k + 1, field)
        else:
            raise AssertionError(f"resumed over {kind} on line {k + 1}")
        assert snapshot(run) == before


@fuzz(150)
@given(st.data())
def test_valid_predictions_resume_exactly_what_they_hold(data: st.DataObject) -> None:
    count("predictions valid")
    with workdir() as root:
        run = copy_run(root)
        rows = lines_of(run)
        keep = data.draw(st.lists(st.integers(0, len(rows) - 1), unique=True, max_size=len(rows)))
        blank = data.draw(st.lists(st.sampled_from([b"", b" "]), max_size=3))
        body = [rows[k] for k in keep] + blank
        torn = data.draw(st.sampled_from([b"", b'{"case_id": "x', b"{", rows[0][:5]]))
        path = run / "predictions.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in body) + torn)
        want = {(json.loads(rows[k])["case_id"], json.loads(rows[k])["order"]) for k in keep}
        assert read_done(path) == want
        assert path.read_bytes() == b"".join(line + b"\n" for line in body)  # only the torn tail is cut


def _manifest_defects() -> st.SearchStrategy[tuple[str, Any]]:
    return st.sampled_from([
        ("truncate", None), ("value", [1, 2]), ("value", "text"), ("value", None), ("drop", "config"),
        ("config", [1]), ("config", "x"), ("field", ("n_boot", 0)), ("field", ("n_boot", "many")),
        ("field", ("orders", "sideways")), ("field", ("limit", -2)), ("field", ("seed", [1])),
        ("field", ("splits", "general")), ("field", ("judge_options", [1])), ("field", ("max_failed", "lots")),
        ("field", ("data", 7)), ("field", ("setting", "telepathy")), ("kind", "gen-eval"), ("binary", None),
    ])


@fuzz(120)
@given(_manifest_defects(), st.data())
def test_a_damaged_manifest_stops_resume_naming_it(defect: tuple[str, Any], data: st.DataObject) -> None:
    count("manifest defect")
    what, arg = defect
    with workdir() as root:
        run = copy_run(root)
        path = run / "manifest.json"
        text = path.read_text("utf-8")
        manifest = json.loads(text)
        if what == "truncate":
            out = text[: data.draw(st.integers(1, len(text.rstrip()) - 1))]  # inside the object: never valid
        elif what == "binary":
            out = ""
            path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le")[:50])
        elif what == "value":
            out = json.dumps(arg)
        elif what == "drop":
            manifest.pop(arg)
            out = json.dumps(manifest)
        elif what == "config":
            manifest["config"] = arg
            out = json.dumps(manifest)
        elif what == "field":
            manifest["config"][arg[0]] = arg[1]
            out = json.dumps(manifest)
        else:
            manifest["kind"] = arg
            out = json.dumps(manifest)
        if what != "binary":
            path.write_text(out, "utf-8")
        before = snapshot(run)
        try:
            api.resume(run)
        except TailorError as error:
            assert str(run) in str(error), str(error)
        except UnicodeDecodeError as error:
            raise AssertionError(f"traceback on a non-UTF-8 manifest: {error}") from None
        else:
            raise AssertionError(f"resumed with manifest {what} {arg}")
        assert snapshot(run) == before


@fuzz(30)
@given(st.sampled_from(_BAD_LINES), st.data())
def test_tailor_eval_resume_and_report_say_where_in_one_line(bad: tuple[str, str | None],
                                                             data: st.DataObject) -> None:
    count("resume cli defect")
    kind, _ = bad
    with workdir() as root:
        run = copy_run(root)
        rows = lines_of(run)
        k = data.draw(st.integers(0, len(rows) - 1))
        rows[k] = b"[1]" if kind == "not-object" else rows[k][:-1] if kind == "json" else json.dumps(
            {key: value for key, value in json.loads(rows[k]).items() if key != kind.split(":")[1]}
            if kind.startswith("missing") else {**json.loads(rows[k]), kind.split(":")[1]: 3}).encode()
        (run / "predictions.jsonl").write_bytes(b"\n".join(rows) + b"\n")
        before = snapshot(run)
        verb = data.draw(st.sampled_from(["eval", "report"]))
        args = ["eval", "--resume", str(run), "--no-progress"] if verb == "eval" else [
            "report", str(run), "--out", str(root / "board")]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and not isinstance(result.exception, Exception), result.exception
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert f"{run / 'predictions.jsonl'}:{k + 1}" in result.stderr, result.stderr
        assert snapshot(run) == before
