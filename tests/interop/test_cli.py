"""The verbs: `annotate export-items`, `annotate export --format`, `annotate import-labels`, and `agree` / `tiers`
reading a tool's export directly (detected, or forced with `--format`); their Python twins."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tests.interop.conftest import items_file, labels_for, read_json, unit_key
from tests.interop.test_label_studio import annotate

runner = CliRunner()


def _ls_export(tmp_path: Path) -> Path:
    """A pairwise Label Studio project exported by the CLI and annotated by three annotators."""
    done = runner.invoke(app, ["annotate", "export-items", str(items_file("pairwise")), "--task", "pairwise",
                               "--format", "label-studio", "--out", str(tmp_path / "ls"), "--seed", "4", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["units"] == 4
    tasks = read_json(tmp_path / "ls" / "tasks.json")
    key = unit_key(tmp_path / "ls")
    path, _ = annotate(tmp_path / "ls", "pairwise", labels_for([key[t["data"]["tb_ref"]] for t in tasks], "pairwise",
                                                               seed=1))
    return path


def test_import_labels_then_agree_equals_agree_on_the_export(tmp_path: Path) -> None:
    export = _ls_export(tmp_path)
    ratings = tmp_path / "ratings.jsonl"
    done = runner.invoke(app, ["annotate", "import-labels", str(export), "--out", str(ratings), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["tool"] == "label-studio" and report["ratings"] == 12 and report["not_rated"] == {}
    direct = runner.invoke(app, ["agree", str(ratings), "--n-boot", "50", "--json"])
    detected = runner.invoke(app, ["agree", str(export), "--n-boot", "50", "--json"])
    forced = runner.invoke(app, ["agree", str(export), "--format", "label-studio", "--n-boot", "50", "--json"])
    assert direct.exit_code == detected.exit_code == forced.exit_code == 0, detected.output
    want = json.loads(direct.stdout)["fleiss_kappa"]
    assert json.loads(detected.stdout)["fleiss_kappa"] == want == json.loads(forced.stdout)["fleiss_kappa"]
    assert tb.agree([export], n_boot=50).to_dict()["fleiss_kappa"] == want


def test_tiers_read_a_tool_export(tmp_path: Path) -> None:
    export = _ls_export(tmp_path)
    out = tmp_path / "bench.jsonl"
    done = runner.invoke(app, ["tiers", str(export), "--items", str(items_file("pairwise")), "--out", str(out),
                               "--n-boot", "20", "--json"])
    assert done.exit_code == 0, done.output
    assert out.is_file() and json.loads(done.stdout)["out"] == str(out)


def test_bad_format_and_unknown_export_exit_2(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["annotate", "export-items", str(items_file("pairwise")), "--task-type", "pairwise",
                              "--output-format", "doccano", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--output-format" in bad.output
    plain = tmp_path / "plain.json"
    plain.write_text("{}", encoding="utf-8")
    unknown = runner.invoke(app, ["annotate", "import-labels", str(plain), "--out", str(tmp_path / "r.jsonl")])
    assert unknown.exit_code == 2 and "give --input-format" in unknown.output


def test_project_export_in_a_tool_format(tmp_path: Path) -> None:
    where = {"directory": tmp_path / "annotation"}
    tb.annotate.create_project("rel", task="relevance", n=2, **where)
    tb.annotate.import_items("rel", items_file("relevance"), **where)
    done = runner.invoke(app, ["annotate", "export", "rel", "--out", str(tmp_path / "argilla"), "--format", "argilla",
                               "--dir", str(where["directory"]), "--json"])
    assert done.exit_code == 0, done.output
    settings = read_json(tmp_path / "argilla" / "settings.json")
    assert settings["distribution"] == {"strategy": "overlap", "min_submitted": 2}
    assert len(read_json(tmp_path / "argilla" / "records.json")) == json.loads(done.stdout)["units"] == 12
    native = tb.annotate.export("rel", tmp_path / "native", **where)
    assert "ratings.jsonl" in native.files


def test_native_export_refuses_predictions_instead_of_dropping_them(tmp_path: Path) -> None:
    """Found by the CLI fuzz walk: `annotate export P --predictions RUN` (native format) exited 0 and wrote no
    verdict: the native export has no place for them, so it is a usage error naming the formats that have."""
    where = {"directory": tmp_path / "annotation"}
    tb.annotate.create_project("rel", task="relevance", n=2, **where)
    tb.annotate.import_items("rel", items_file("relevance"), **where)
    run = tmp_path / "run"
    run.mkdir()
    done = runner.invoke(app, ["annotate", "export", "rel", "--out", str(tmp_path / "native"), "--predictions",
                               str(run), "--dir", str(where["directory"])])
    assert done.exit_code == 2, done.output
    assert "--output-format label-studio or argilla" in done.output
    assert not (tmp_path / "native").exists()


def test_python_twin_of_import_labels(tmp_path: Path) -> None:
    export = _ls_export(tmp_path)
    got = tb.annotate.import_labels(export, tmp_path / "r.jsonl")
    assert got.tool == "label-studio" and got.ratings == 12 and (tmp_path / "r.jsonl").is_file()
