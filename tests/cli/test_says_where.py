"""Every server prints its URL when it starts (and `annotate serve` how to log in as admin); every verb that
writes says where (the README's journeys check the same on the commands they run: tests/test_readme.py);
`make demo` says how to browse what it made."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import REPO_ROOT, free_port


def test_annotate_serve_prints_its_url_and_the_admin_login_hint(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "annotate", "serve", "--dir",
                             str(tmp_path / "annotation"), "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    first, second = out.splitlines()[:2]
    assert first.startswith(f"tailor annotate serve: http://127.0.0.1:{port} (database sqlite")
    assert second == (f"admin login: `tailor annotate annotator add NAME --admin --dir {tmp_path / 'annotation'} "
                      f"--base-url http://127.0.0.1:{port}` prints a login link (it logs in once)")


def test_make_demo_says_where_it_wrote_and_how_to_browse() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^demo:.*?(?=^\S)", makefile, re.MULTILINE | re.DOTALL)
    assert rule, "the Makefile has no demo rule"
    assert "report: $(DEMO_OUT)/report.md and $(DEMO_OUT)/report.html" in rule.group(0)
    assert "tailor view $(DEMO_OUT)" in rule.group(0)


def test_a_stage_report_says_where_it_wrote(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app
    from tests.threestage.helpers import write_jsonl
    from tests.threestage.test_extraction_and_baselines import ITEMS, _task1

    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    a = write_jsonl(tmp_path / "a.jsonl", _task1("a", {0: ["ok", "bad", "bad"], 1: ["ok", "ok"]}))
    b = write_jsonl(tmp_path / "b.jsonl", _task1("b", {0: ["ok", "bad", "ok"], 1: ["ok", "bad"]}))
    for out, said in ((tmp_path / "report", f"wrote {tmp_path / 'report' / 'extraction'}.md, .html and .json"),
                      (tmp_path / "x.json", f"wrote {tmp_path / 'x.json'}")):
        result = CliRunner().invoke(app, ["stages", "report-extraction", "--items", str(items), "--human", str(a),
                                          str(b), "--resamples", "20", "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert said in result.stderr and "# " in result.stdout  # the report on stdout, where it went on stderr
    assert (tmp_path / "report" / "extraction.html").is_file() and (tmp_path / "x.json").is_file()


def test_tailor_view_prints_its_url_when_it_serves(tmp_path: Path) -> None:
    """Served (no --bundle): the first line is the URL it answers on, before it serves."""
    import tailorbench as tb

    run = tmp_path / "run"
    tb.eval("demo", judge="longer", out=run, n_boot=20)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "view", str(run), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"tailor view: http://127.0.0.1:{port}"), first
        url = first.split()[2]
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url, timeout=1) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the viewer did not answer at its URL"
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_a_verb_that_writes_the_annotation_database_names_it(tmp_path: Path) -> None:
    """`annotate annotator add`, `project create`, `crowd create` and `crowd close` (and every verb that writes to
    the database) end with where it is; with --json
    the output stays the JSON object alone."""
    import json

    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    where = tmp_path / "annotation"
    said = CliRunner().invoke(app, ["annotate", "annotator", "add", "me", "--admin", "--dir", str(where)])
    assert said.exit_code == 0, said.output
    assert said.stdout.splitlines()[-1] == f"database: {where / 'annotate.sqlite'}"
    made = CliRunner().invoke(app, ["annotate", "project", "create", "p", "--task-type", "pairwise", "--dir",
                                    str(where)])
    assert made.exit_code == 0 and f"database: {where / 'annotate.sqlite'}" in made.stdout, made.output
    for crowd in (["create", "p", "--quota", "2", "--max-participants", "3", "--completion-code", "C1"],
                  ["close", "1"]):
        done = CliRunner().invoke(app, ["annotate", "crowd", *crowd, "--dir", str(where)])
        assert done.exit_code == 0 and done.stdout.splitlines()[-1] == f"database: {where / 'annotate.sqlite'}", (
            crowd, done.output)
    quiet = CliRunner().invoke(app, ["annotate", "annotator", "add", "you", "--dir", str(where), "--json"])
    assert json.loads(quiet.stdout)["name"] == "you"
