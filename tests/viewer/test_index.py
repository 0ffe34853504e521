"""The viewer without a browser: the index holds what predictions.jsonl says (every status, both orders), it is
built once and stored beside the run (or in the cache when the run directory is read-only) and rebuilt when the
verdicts change; manifests are shown redacted; the server sends its Content-Security-Policy and stays on
loopback unless told otherwise; `--bundle` writes a site whose data are scripts; `tailor report` points here."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.evaluate.run_kind import OUTCOMES as PAIRWISE_OUTCOMES
from tailorbench.viewer.index import INDEX, expand_runs, index_path, load_index
from tailorbench.viewer.server import CSP
from tests.conftest import assert_loopback
from tests.viewer.conftest import XSS, Runs

runner = CliRunner()


def _outcome(row: dict[str, object]) -> str:
    status = row["status"]
    if status == "ok":
        return "correct" if row["correct"] else "wrong"
    return {"abstain": "abstained"}.get(str(status), str(status))


def test_the_index_holds_every_status_in_both_orders(runs: Runs) -> None:
    index = load_index(runs.mixed)
    rows = runs.predictions()
    preds, names = index["preds"], index["names"]
    got = Counter((names["outcome"][o], "BA" if order else "AB") for o, order in zip(preds["outcome"], preds["order"]))
    want = Counter((_outcome(r), str(r["order"])) for r in rows)
    assert got == want
    assert {o for o, _ in want} == set(PAIRWISE_OUTCOMES) and {d for _, d in want} == {"AB", "BA"}
    # the texts: the case's answers, the judge's raw output, per-annotator labels, the persona
    at = index["cases"]["id"].index("c00")
    _, chosen, rejected, human = index["text"]["cases"][at]
    assert XSS in chosen and rejected.startswith("A short reply") and human[0]["annotator"] == "h1"
    assert any(XSS in (t[0] or "") for t in index["text"]["preds"])
    assert index["text"]["personas"]["u1"]["preferences"]["travel"]["style"] == "slow"
    # overlap classes and training classes come from the manifest
    overlap = dict(zip(index["cases"]["id"], (names["overlap"][k] for k in index["cases"]["overlap"])))
    assert overlap["c30"] == "repeated" and overlap["c31"] == "contradicted" and overlap["c05"] == "unique"
    training = dict(zip(index["cases"]["id"], (names["training"][k] for k in index["cases"]["training"])))
    assert training["c01"] == "in-training" and training["c02"] == "persona-seen" and training["c05"] == "unseen"


def test_the_manifest_is_shown_redacted(runs: Runs) -> None:
    text = json.dumps(load_index(runs.mixed)["manifest"])
    assert "SECRET123" not in text and "hunter2" not in text
    assert "cases" not in load_index(runs.mixed)["manifest"]["config"]["training_overlap"]


def test_the_index_is_built_once_and_rebuilt_when_the_verdicts_change(runs: Runs, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(runs.longer, run)
    (run / INDEX).unlink(missing_ok=True)
    first = load_index(run)
    stored = (run / INDEX).stat().st_mtime_ns
    assert load_index(run)["key"] == first["key"] and (run / INDEX).stat().st_mtime_ns == stored
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    (run / "predictions.jsonl").write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")
    again = load_index(run)
    assert again["key"] != first["key"] and len(again["preds"]["case"]) == len(lines) - 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_run_keeps_its_index_in_the_cache(runs: Runs, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setenv("TAILORBENCH_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "ro"
    shutil.copytree(runs.longer, run)
    (run / INDEX).unlink(missing_ok=True)
    run.chmod(0o555)
    try:
        load_index(run)
        assert not (run / INDEX).exists() and index_path(run).is_file()
        assert index_path(run).parent == tmp_path / "cache" / "view"
    finally:
        run.chmod(0o755)


def test_read_only_runs_index_into_the_cache_dir(runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rule, checked by the path chosen (root may write anywhere, so the access check is faked)."""
    monkeypatch.setenv("TAILORBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    path = index_path(runs.longer)
    assert path.parent == tmp_path / "cache" / "view" and path.name.endswith(".json")


def test_a_train_rm_directory_stands_for_its_held_out_evaluations(runs: Runs) -> None:
    assert [p.name for p in expand_runs([runs.train])] == ["epoch-1", "epoch-2"]


def test_served_pages_carry_the_csp_and_unknown_paths_are_404(runs: Runs) -> None:
    viewer = tb.view([runs.mixed, runs.gen, runs.stage])
    try:
        with urllib.request.urlopen(viewer.url) as response:
            assert response.headers["Content-Security-Policy"] == CSP
            assert "default-src 'none'; script-src 'self'; style-src 'self'" in CSP
            page = response.read().decode()
        assert "<script>" not in page.replace('<script src="', "")  # no inline script
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(viewer.url + "../manifest.json")
        assert missing.value.code == 404 and missing.value.headers["Content-Security-Policy"] == CSP
    finally:
        viewer.stop()
    assert viewer.url.startswith("http://127.0.0.1:")


def test_a_host_that_is_not_loopback_needs_the_flag(runs: Runs) -> None:
    with pytest.raises(ConfigError, match="--allow-remote"):
        tb.view([runs.mixed], host="0.0.0.0")
    result = runner.invoke(app, ["view", str(runs.mixed), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--allow-remote" in result.output


def test_bundle_writes_the_data_as_scripts(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = runner.invoke(app, ["view", str(runs.mixed), str(runs.longer), str(runs.gen), str(runs.stage),
                                 "--bundle", str(out), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["bundle"] == str(out / "index.html") and len(info["runs"]) == 4
    names = {p.name for p in out.iterdir()}
    assert {"index.html", "view.js", "view.css", "data-0.js", "data-1.js", "data-2.js", "compare.js",
            "text-0-0.js", "personas-0.js"} <= names
    assert (out / "data-0.js").read_text(encoding="utf-8").startswith("(window.TB_DATA=window.TB_DATA||{})")
    page = (out / "index.html").read_text(encoding="utf-8")
    # the reports' own tables (one rendering): the pairwise leaderboard, gen-eval's and the stage reports'
    assert "Length-controlled view" in page and "Stage 2" in page and "Win rates" in page
    # no secret of a manifest reaches any file of the site
    for path in out.iterdir():
        text = path.read_text(encoding="utf-8")
        assert "SECRET123" not in text and "hunter2" not in text, path.name
    # model text never reaches the page's HTML: it is in the data scripts, escaped for a script context
    assert XSS not in page and "</script><img" not in (out / "text-0-0.js").read_text(encoding="utf-8")


def test_report_points_to_the_viewer(runs: Runs, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(runs.mixed), str(runs.longer), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert f"browse the cases: tailor view {runs.mixed} {runs.longer}" in result.output


def test_tailor_view_serves_until_stopped(runs: Runs) -> None:
    """The verb itself: it prints where it serves (`--json`: the object) and serves the page there."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "view", str(runs.longer), "--port", "0",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline()]
        while lines[-1] and lines[-1].rstrip() != "}":
            lines.append(proc.stdout.readline())
        info = json.loads("".join(lines))
        assert info["url"].startswith("http://127.0.0.1:") and info["runs"] == [str(runs.longer)]
        assert_loopback(proc, "tailor view")
        with urllib.request.urlopen(info["url"] + "view.js") as response:
            assert response.headers["Content-Security-Policy"] == CSP and b"textContent" in response.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_run_whose_data_is_gone_is_shown_without_case_text(runs: Runs, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "moved"
    shutil.copytree(runs.longer, run)
    (run / INDEX).unlink(missing_ok=True)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["data"] = str(tmp_path / "gone.jsonl")
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    index = load_index(run)
    assert "could not be read" in index["data_note"] and len(index["preds"]["case"]) == len(runs.predictions(run))
    assert all(text[0] is None for text in index["text"]["cases"])


def test_the_script_writes_no_html() -> None:
    """Every text reaches the page through textContent: the viewer's script has no HTML sink at all."""
    from importlib import resources

    script = (resources.files("tailorbench.viewer") / "static" / "view.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink


def test_a_torn_last_line_is_left_out_and_left_alone(runs: Runs, tmp_path: Path) -> None:
    """A run being written (or killed mid-line): the viewer reads the whole lines and never changes the file."""
    import shutil

    run = tmp_path / "torn"
    shutil.copytree(runs.longer, run)
    path = run / "predictions.jsonl"
    torn = path.read_bytes() + b'{"case_id": "c99", "ord'
    path.write_bytes(torn)
    index = load_index(run)
    assert len(index["preds"]["case"]) == len(runs.predictions(runs.longer))
    assert path.read_bytes() == torn
    assert "The report could not be computed" in index["report"] and "malformed JSON" in index["report"]


def test_a_host_that_is_not_loopback_is_served_with_the_flag_and_a_warning(
        runs: Runs, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # the viewer is asked for every interface, but the socket the test opens listens on loopback only
    from tailorbench.viewer.server import ViewServer

    bind = ViewServer.server_bind

    def loopback_bind(self: ViewServer) -> None:
        requested = self.server_address
        self.server_address = ("127.0.0.1", requested[1])
        bind(self)
        self.server_address = (requested[0], self.server_address[1])

    monkeypatch.setattr(ViewServer, "server_bind", loopback_bind)
    with caplog.at_level("WARNING", logger="tailorbench"):
        viewer = tb.view([runs.longer], host="0.0.0.0", allow_remote=True)
    try:
        assert viewer.url.startswith("http://0.0.0.0:")
        assert any("not loopback" in r.getMessage() for r in caplog.records)
    finally:
        viewer.stop()
