"""The hub, with no network: `tailor data push` writes one folder and uploads it in one call (replaced here by a
copy), `--data hf:OWNER/NAME` reads a pushed benchmark back from a pre-populated hub cache with HF_HUB_OFFLINE=1,
and `tailor report --push` publishes a leaderboard the same way."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets.loader import demo_path
from tailorbench.files import MARKER

COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
runner = CliRunner()


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of this test's own, offline (huggingface_hub reads its constants at import)."""
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture
def uploads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Only the upload is replaced: `HfApi.upload_folder` copies the folder it is given and records the call."""
    from huggingface_hub import HfApi

    calls: list[dict[str, Any]] = []

    def upload_folder(self: HfApi, *, folder_path: str | Path, repo_id: str, repo_type: str | None = None,
                      commit_message: str | None = None, **kwargs: Any) -> SimpleNamespace:
        target = tmp_path / f"uploaded-{len(calls)}"
        # as the hub client does, the files matching ignore_patterns stay local (the door's .tailorbench marker)
        shutil.copytree(folder_path, target, ignore=shutil.ignore_patterns(*(kwargs.get("ignore_patterns") or [])))
        calls.append({"repo_id": repo_id, "repo_type": repo_type, "tree": target, "message": commit_message})
        return SimpleNamespace(commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/{COMMIT}")

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    return calls


def _tree(root: Path, marker: bool = True) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and (marker or p.name != MARKER)}


def _sent(root: Path) -> dict[str, bytes]:
    """What an upload of `root` sends: the folder without the door's marker."""
    return _tree(root, marker=False)


def _place_in_cache(folder: Path, cache: Path, repo_id: str) -> None:
    """The folder as snapshot_download leaves a dataset repo: blobs by hash, the snapshot's files linking to them,
    refs/main naming the commit."""
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    for rel, data in _tree(folder).items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / COMMIT / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)


def _card_header(readme: Path) -> dict[str, Any]:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header = yaml.safe_load(text[4: text.index("\n---\n", 4)])
    assert isinstance(header, dict)
    return header


def _tiered(tmp_path: Path) -> Path:
    """A `tailor tiers`-style output: native JSONL with a tiers.json beside it."""
    src = tmp_path / "tiered"
    src.mkdir()
    shutil.copy(demo_path(), src / "benchmark.jsonl")
    tiers = {"rule": {"statistic": "P_i (share of agreeing annotator pairs)", "easy": "P_i >= 0.75",
                      "medium": "0.6 <= P_i < 0.75", "hard": "P_i < 0.6", "min_ratings": 3},
             "tiers": {"easy": {"n": 30, "percent_agreement": 0.95, "fleiss_kappa": {"value": 0.812, "ci": [0.7, 0.9]}},
                       "medium": {"n": 20, "percent_agreement": 0.7, "fleiss_kappa": {"value": 0.41, "ci": [0.2, 0.6]}},
                       "hard": {"n": 0}}}
    (src / "tiers.json").write_text(json.dumps(tiers), encoding="utf-8")
    return src / "benchmark.jsonl"


def test_push_uploads_the_dry_run_folder(tmp_path: Path, uploads: list[dict[str, Any]],
                                          offline_cache: Path) -> None:
    data = _tiered(tmp_path).parent  # the directory, as `tailor annotate export` leaves it
    dry = tmp_path / "dry"
    result = runner.invoke(app, ["data", "push", str(data), "me/bench", "--license", "cc-by-4.0",
                                 "--dry-run", str(dry), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["uploaded"] is None
    assert uploads == []
    result = runner.invoke(app, ["data", "push", str(data), "me/bench", "--license", "cc-by-4.0", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["uploaded"].endswith(COMMIT)
    (call,) = uploads
    assert (call["repo_id"], call["repo_type"]) == ("me/bench", "dataset")
    assert _tree(call["tree"]) == _sent(dry)
    # the folder is what is uploaded, and the marker that says tailorbench made it (never uploaded)
    assert sorted(_tree(dry)) == [".tailorbench", "README.md", "data/benchmark.jsonl", "data/benchmark.layout.json",
                                  "tiers.json"]
    header = _card_header(dry / "README.md")
    assert header["license"] == "cc-by-4.0"
    assert header["configs"][0]["data_files"][0]["path"] == "data/benchmark.jsonl"
    card = (dry / "README.md").read_text(encoding="utf-8")
    assert "| easy | P_i >= 0.75 | 30 | 0.812 | [0.700, 0.900] |" in card
    assert "Integrity report" in card and '"label_flipped_rows"' in card


def test_push_a_build_export(tmp_path: Path) -> None:
    """A `tailor build` output directory: its export/pairs.jsonl, the card saying the tiers are not annotated."""
    from tailorbench.datasets import load_benchmark, write_native

    cases = load_benchmark("demo").cases
    for case in cases:
        case.meta["tier_source"] = "expected_difficulty (not annotated)"
    write_native(cases, tmp_path / "build" / "export" / "pairs.jsonl")
    result = runner.invoke(app, ["data", "push", str(tmp_path / "build"), "me/built", "--license", "other",
                                 "--dry-run", str(tmp_path / "dry"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == len(cases)
    card = (tmp_path / "dry" / "README.md").read_text(encoding="utf-8")
    assert f"{len(cases)} rows: expected_difficulty (not annotated)" in card


def test_python_twins(tmp_path: Path, uploads: list[dict[str, Any]]) -> None:
    import tailorbench as tb

    summary = tb.push_data("demo", "me/demo", license="cc0-1.0", dry_run=tmp_path / "dry").to_dict()
    assert summary["uploaded"] is None and summary["rows"] == 72
    summary = tb.push_data("demo", "me/demo", license="cc0-1.0").to_dict()
    assert summary["uploaded"].endswith(COMMIT)
    assert _tree(uploads[0]["tree"]) == _sent(tmp_path / "dry")
    run = tb.eval("demo", "longer", out=tmp_path / "run")
    (result,) = tb.report([tmp_path / "run"], tmp_path / "report", push="me/board")
    assert result.judge == run.judge
    assert uploads[1]["repo_id"] == "me/board"
    assert sorted(_tree(uploads[1]["tree"])) == ["README.md", "results.jsonl"]


def test_a_new_repository_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub answers 'not found' to the first upload: the repository is created (private) and the upload
    repeated."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    calls: list[tuple[str, Any]] = []

    def upload_folder(self: HfApi, **kwargs: Any) -> SimpleNamespace:
        calls.append(("upload", kwargs["repo_id"]))
        if len(calls) == 1:
            raise RepositoryNotFoundError("404 Repository Not Found", response=SimpleNamespace(  # type: ignore[arg-type]
                headers={}, status_code=404, request=None, url="https://huggingface.co", text="", json=dict))
        return SimpleNamespace(commit_url="https://huggingface.co/datasets/me/new/commit/1")

    def create_repo(self: HfApi, repo_id: str, **kwargs: Any) -> None:
        calls.append(("create", (repo_id, kwargs["repo_type"], kwargs["private"])))

    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    result = runner.invoke(app, ["data", "push", "demo", "me/new", "--license", "mit", "--private"])
    assert result.exit_code == 0, result.output
    assert calls == [("upload", "me/new"), ("create", ("me/new", "dataset", True)), ("upload", "me/new")]


def test_pushed_data_files_load_with_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              offline_cache: Path) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "ds-cache"))
    dry = tmp_path / "dry"
    assert runner.invoke(app, ["data", "push", "demo", "me/demo", "--license", "mit", "--dry-run",
                               str(dry)]).exit_code == 0
    import datasets

    header = _card_header(dry / "README.md")
    files = {f["split"]: str(dry / f["path"]) for f in header["configs"][0]["data_files"]}
    loaded = datasets.load_dataset("json", data_files=files, cache_dir=str(tmp_path / "ds-cache"))
    rows = [json.loads(line) for line in demo_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    assert loaded["train"].num_rows == len(rows)
    assert {"id", "split", "tier", "user_id", "question", "chosen", "rejected"} <= set(loaded["train"].column_names)


def test_eval_reads_hf_spec_from_the_cache_like_the_local_folder(tmp_path: Path, offline_cache: Path) -> None:
    dry = tmp_path / "dry"
    pushed = runner.invoke(app, ["data", "push", "demo", "me/demo", "--license", "mit", "--dry-run", str(dry),
                                 "--json"])
    assert pushed.exit_code == 0, pushed.output
    _place_in_cache(dry, offline_cache, "me/demo")
    results = {}
    for name, spec in (("hub", "hf:me/demo"), ("local", str(dry / "data" / "benchmark.jsonl"))):
        out = tmp_path / name
        result = runner.invoke(app, ["eval", "--data", spec, "--judge", "longer", "--out", str(out), "--json",
                                     "--no-progress"])
        assert result.exit_code == 0, result.output
        results[name] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    hub, local = results["hub"], results["local"]
    assert hub["data"] == "hf:me/demo"
    assert hub["dataset_fingerprint"] == local["dataset_fingerprint"] == json.loads(pushed.stdout)["fingerprint"]
    assert hub["cases_judged"] == 72
    for r in (hub, local):  # the spec each run was given differs; everything else is equal
        del r["data"], r["dataset"]["name"]
    assert hub == local
    pinned = runner.invoke(app, ["data", "check", f"hf:me/demo@{COMMIT}", "--json"])
    assert pinned.exit_code == 0, pinned.output
    assert json.loads(pinned.stdout)["rows"] == 72


def test_unknown_repo_offline_is_exit_2(offline_cache: Path) -> None:
    result = runner.invoke(app, ["data", "check", "hf:nobody/nothing"])
    assert result.exit_code == 2
    assert "not in the Hugging Face cache" in result.output
    assert "Traceback" not in result.output


def test_push_offline_is_exit_2(offline_cache: Path) -> None:
    result = runner.invoke(app, ["data", "push", "demo", "me/demo", "--license", "mit"])
    assert result.exit_code == 2
    assert "HF_HUB_OFFLINE is set" in result.output
    assert "Traceback" not in result.output


def test_push_needs_a_license_and_a_repo_name(tmp_path: Path, uploads: list[dict[str, Any]]) -> None:
    result = runner.invoke(app, ["data", "push", "demo", "me/demo"])
    assert result.exit_code == 2
    assert "--license is required" in result.output
    result = runner.invoke(app, ["data", "push", "demo", "just-a-name", "--license", "mit"])
    assert result.exit_code == 2
    assert "OWNER/NAME" in result.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("x")
    result = runner.invoke(app, ["data", "push", "demo", "me/demo", "--license", "mit", "--dry-run",
                                 str(tmp_path / "full")])
    assert result.exit_code == 2
    assert "give a new or empty directory" in result.output
    assert uploads == []


def test_report_push_publishes_results_and_card(tmp_path: Path, uploads: list[dict[str, Any]]) -> None:
    runs = []
    for judge in ("longer", "random"):
        out = tmp_path / "runs" / judge
        assert runner.invoke(app, ["eval", "--data", "demo", "--judge", judge, "--out", str(out),
                                   "--no-progress"]).exit_code == 0
        runs.append(out)
    report = tmp_path / "report"
    result = runner.invoke(app, ["report", *map(str, runs), "--out", str(report), "--push", "me/board"])
    assert result.exit_code == 0, result.output
    (call,) = uploads
    assert call["repo_id"] == "me/board"
    tree = _tree(call["tree"])
    assert tree == _sent(report / "hub")
    rows = [json.loads(line) for line in tree["results.jsonl"].decode("utf-8").splitlines()]
    assert [r["run"] for r in rows] == ["longer", "random"]
    for row, run in zip(rows, runs):
        assert {k: v for k, v in row.items() if k != "run"} == json.loads((run / "results.json").read_text())
    readme = tree["README.md"].decode("utf-8")
    assert _card_header(report / "hub" / "README.md")["configs"][0]["data_files"][0]["path"] == "results.jsonl"
    assert readme.endswith((report / "report.md").read_text(encoding="utf-8"))


def test_report_push_bad_name_fails_before_work(tmp_path: Path, uploads: list[dict[str, Any]]) -> None:
    result = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "r"), "--push", "noslash"])
    assert result.exit_code == 2
    assert not (tmp_path / "r").exists()
    assert uploads == []
