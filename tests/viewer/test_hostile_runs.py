"""`tailor view` on run directories a user damaged: a truncated, list-valued or deeply nested manifest.json is
exit 2 naming the file (and line), before any bundle file is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    api.eval("demo", judge="longer", out=out, limit=4, n_boot=10, progress=False)
    return out


@pytest.mark.parametrize(("manifest", "says"), [
    ('{"config": {"judge":', "manifest.json:1: malformed JSON"),
    ("[1, 2]", "expected a run manifest (a JSON object), got a list"),
    ("", "manifest.json:1: malformed JSON"),
    ('{"kind": ' + "[" * 100_000, "levels deep"),
    ('{"kind": 5}', "kind"),
])
def test_a_damaged_manifest_is_exit_2(tmp_path: Path, run_dir: Path, manifest: str, says: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / ".view-index.json").unlink(missing_ok=True)
    (run / "manifest.json").write_text(manifest, encoding="utf-8")
    bundle = tmp_path / "site"
    result = CliRunner().invoke(app, ["view", str(run), "--bundle", str(bundle)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    assert says in result.stderr, result.stderr
    assert not bundle.exists()
