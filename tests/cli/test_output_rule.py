"""The output rule of every verb (`files.check_output`, docs/cli.md "Outputs"), verb by verb: an output that is
one of the command's inputs, a non-empty directory the verb did not write, or a path under a regular file is
exit 2 naming both paths, with every byte of the user's files as it was; a rejected run leaves nothing behind;
an output in a missing folder is created."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app

INTEROP = Path(__file__).resolve().parents[1] / "interop" / "data"
ITEMS = Path(__file__).resolve().parents[1] / "annotation" / "data" / "pairwise.jsonl"


def tree(root: Path) -> dict[str, str]:
    """Every file under root and the hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def refused(root: Path, *args: str, says: str) -> str:
    """The command is exit 2 with `says` in its message and changes no file under root."""
    before = tree(root)
    code, output = invoke(*args)
    assert code == 2, output
    assert says in output, output
    assert tree(root) == before
    return output


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    api.eval("demo", judge="longer", out=out, limit=4, n_boot=10, progress=False)
    return out


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ratings") / "ratings.jsonl"
    code, output = invoke("annotate", "import-labels", str(INTEROP / "label_studio_foreign_pairwise.json"),
                          "--out", str(out))
    assert code == 0, output
    return out


def test_view_bundle_refuses_a_non_empty_directory_it_did_not_write(tmp_path: Path, run_dir: Path) -> None:
    bundle = tmp_path / "site"
    bundle.mkdir()
    (bundle / "index.html").write_text("my own page")
    refused(tmp_path, "view", str(run_dir), "--bundle", str(bundle), says="did not write")
    assert (bundle / "index.html").read_text() == "my own page"


def test_view_bundle_rewrites_its_own_earlier_bundle(tmp_path: Path, run_dir: Path) -> None:
    bundle = tmp_path / "site"
    assert invoke("view", str(run_dir), "--bundle", str(bundle))[0] == 0
    code, output = invoke("view", str(run_dir), "--bundle", str(bundle))
    assert code == 0, output
    assert (bundle / "index.html").is_file() and (bundle / "view.js").is_file()


def test_view_bundle_into_a_run_directory_is_refused(run_dir: Path) -> None:
    refused(run_dir, "view", str(run_dir), "--bundle", str(run_dir), says="input")


@pytest.mark.parametrize("flag", ["bundle", "dry-run"])
def test_an_output_under_a_regular_file_is_exit_2(tmp_path: Path, run_dir: Path, flag: str) -> None:
    (tmp_path / "afile").write_text("x")
    target = str(tmp_path / "afile" / "sub")
    args = (["view", str(run_dir), "--bundle", target] if flag == "bundle"
            else ["data", "push", "demo", "me/bench", "--license", "cc-by-4.0", "--dry-run", target])
    refused(tmp_path, *args, says="is not a directory")


def test_import_labels_onto_its_own_input_is_refused(tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    shutil.copy(INTEROP / "label_studio_foreign_pairwise.json", export)
    refused(tmp_path, "annotate", "import-labels", str(export), "--out", str(export), says=str(export))
    project = tmp_path / "potato"
    shutil.copytree(INTEROP / "potato2_pairwise", project)
    refused(tmp_path, "annotate", "import-labels", str(project), "--out", str(project / "config.yaml"),
            says="inside")


def test_agree_onto_its_own_input_is_refused(tmp_path: Path, ratings: Path) -> None:
    mine = tmp_path / "r.jsonl"
    shutil.copy(ratings, mine)
    refused(tmp_path, "agree", str(mine), "--out", str(mine), "--n-boot", "10", says="is also this command's input")


def test_tiers_onto_its_items_is_refused(tmp_path: Path, ratings: Path) -> None:
    items = tmp_path / "items.jsonl"
    shutil.copy(ITEMS, items)
    rated = tmp_path / "r.jsonl"
    shutil.copy(ratings, rated)
    refused(tmp_path, "tiers", str(rated), "--items", str(items), "--out", str(items), says=str(items))
    refused(tmp_path, "tiers", str(rated), "--items", str(items), "--out", str(rated), says=str(rated))


def test_data_convert_onto_its_input_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "bench.jsonl"
    assert invoke("data", "convert", "demo", "--out", str(data))[0] == 0
    refused(tmp_path, "data", "convert", str(data), "--out", str(data), says="input")


def test_eval_refuses_a_folder_holding_a_results_json(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.json").write_text('{"mine": true}\n')
    refused(tmp_path, "eval", "--data", "demo", "--judge", "longer", "--limit", "2", "--no-progress", "--out",
            str(out), says="did not write")


def test_eval_into_its_own_run_directory_still_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("eval", "--data", "demo", "--judge", "longer", "--limit", "2", "--no-progress", "--out", str(out))
    assert invoke(*args)[0] == 0
    assert invoke(*args, "--resume", str(out))[0] == 0
    refused(tmp_path, *args, says="already holds predictions")


def test_a_rejected_run_leaves_no_folder_or_lock(tmp_path: Path) -> None:
    out = tmp_path / "new" / "run"
    code, output = invoke("eval", "--data", "demo", "--judge", "nosuchjudge", "--no-progress", "--out", str(out))
    assert code == 2, output
    assert not out.exists()


@pytest.mark.parametrize("verb", ["import-labels", "agree"])
def test_an_output_in_a_missing_folder_is_created(tmp_path: Path, ratings: Path, verb: str) -> None:
    out = tmp_path / "a" / "b" / "out.json"
    args = (["annotate", "import-labels", str(INTEROP / "label_studio_foreign_pairwise.json"), "--out", str(out)]
            if verb == "import-labels" else ["agree", str(ratings), "--n-boot", "10", "--out", str(out)])
    code, output = invoke(*args)
    assert code == 0, output
    assert out.is_file()
