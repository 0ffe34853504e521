"""Stage 2: the JSON contract of `tailor stages report-relevance`, checked against scikit-learn on generated studies in
the Re-Centering shapes, with inputs that do not line up counted."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.threestage import verbs as api
from tests.threestage.helpers import human_rows, model_rows, write_jsonl

TAILOR = str(Path(sys.executable).parent / "tailor")
N_ITEMS, N_ATTR = 30, 4


def _study(tmp_path: Path, seed: int = 0) -> dict[str, dict[tuple[int, int], bool]]:
    """3 humans (some attributes unjudged), 3 models (one always says relevant); returns labels per rater."""
    rng = np.random.default_rng(seed)
    truth = rng.random((N_ITEMS, N_ATTR)) < 0.3
    raters: dict[str, dict[tuple[int, int], bool]] = {}
    for h in range(3):
        noisy = np.where(rng.random(truth.shape) < 0.2, ~truth, truth).astype(int)
        noisy[rng.random(truth.shape) < 0.15] = -1
        write_jsonl(tmp_path / "h" / f"annotator_{h}_task3.jsonl", human_rows(f"ann{h}", noisy, N_ATTR))
        cells = [(i, j) for i in range(N_ITEMS) for j in range(N_ATTR)]
        raters[f"ann{h}"] = {(i, j): bool(noisy[i, j]) for i, j in cells if noisy[i, j] >= 0}
    for m, flip in ((0, 0.3), (1, 0.4)):
        votes = (np.where(rng.random(truth.shape) < flip, ~truth, truth) | (rng.random(truth.shape) < 0.2)).astype(int)
        write_jsonl(tmp_path / "m" / f"model-{m}_relevance.jsonl", model_rows(f"model-{m}", votes, N_ATTR))
        raters[f"model-{m}"] = {(i, j): bool(votes[i, j]) for i in range(N_ITEMS) for j in range(N_ATTR)}
    const = np.ones(truth.shape, dtype=int)
    write_jsonl(tmp_path / "m" / "model-yes_relevance.jsonl", model_rows("model-yes", const, N_ATTR))
    raters["model-yes"] = {(i, j): True for i in range(N_ITEMS) for j in range(N_ATTR)}
    return raters


def _expected(raters: dict[str, dict[tuple[int, int], bool]], min_shared: int) -> dict[str, object]:
    humans = [r for r in raters if r.startswith("ann")]
    pairs = {}
    for a, b in combinations(raters, 2):
        shared = sorted(set(raters[a]) & set(raters[b]))
        if len(shared) >= min_shared:
            la, lb = [raters[a][s] for s in shared], [raters[b][s] for s in shared]
            pairs[a, b] = (len(shared), cohen_kappa_score(la, lb))
    f1 = {}
    for r, labels in raters.items():
        gold, pred = [], []
        for key, label in labels.items():
            votes = [raters[h][key] for h in humans if h != r and key in raters[h]]
            if votes:
                gold.append(sum(votes) > len(votes) / 2)
                pred.append(label)
        f1[r] = f1_score(gold, pred)
    return {"pairs": pairs, "f1": f1}


def _kind(a: str, b: str) -> str:
    return "-".join(sorted("human" if x.startswith("ann") else "model" for x in (a, b)))


def _check(report: dict[str, object], raters: dict[str, dict[tuple[int, int], bool]], min_shared: int) -> None:
    exp = _expected(raters, min_shared)
    got = {(p["a"], p["b"]): (p["n"], p["kappa"]) for p in report["pairwise_kappa"]}  # type: ignore[attr-defined]
    assert set(got) == set(exp["pairs"])  # type: ignore[call-overload]
    for key, (n, kappa) in exp["pairs"].items():  # type: ignore[attr-defined]
        assert got[key][0] == n and got[key][1] == pytest.approx(kappa, abs=1e-12)
    for kind in ("human-human", "human-model", "model-model"):
        vals = [k for (a, b), (_, k) in exp["pairs"].items() if _kind(a, b) == kind]  # type: ignore[attr-defined]
        if not vals:
            assert report["group_kappa"][kind] is None  # type: ignore[index]
            continue
        assert report["group_kappa"][kind] == pytest.approx(float(np.mean(vals)), abs=1e-12)  # type: ignore[index]
    for name, value in exp["f1"].items():  # type: ignore[attr-defined]
        assert report["f1_vs_human_majority"][name] == pytest.approx(value, abs=1e-12)  # type: ignore[index]
    for name, labels in raters.items():
        entry = report["raters"][name]  # type: ignore[index]
        assert entry["n"] == len(labels)
        assert entry["share_relevant"] == pytest.approx(sum(labels.values()) / len(labels))
        assert entry["group"] == ("human" if name.startswith("ann") else "model")


def test_matches_sklearn_through_shell_glob(tmp_path: Path) -> None:
    raters = _study(tmp_path)
    cmd = f"{TAILOR} stages report-relevance --human h/*.jsonl --model m/*.jsonl --json --resamples 50"
    proc = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    _check(report, raters, 20)
    # the constant model is kept and its kappa with varying raters is the formula's 0
    assert report["raters"]["model-yes"]["constant_label"] is True
    assert all(p["kappa"] == pytest.approx(0.0) for p in report["pairwise_kappa"] if "model-yes" in (p["a"], p["b"]))


@pytest.mark.parametrize("min_shared", [1, 90, 200])
def test_min_shared_filters_pairs(tmp_path: Path, min_shared: int) -> None:
    raters = _study(tmp_path, seed=3)
    humans = sorted(str(p) for p in (tmp_path / "h").glob("*.jsonl"))
    models = sorted(str(p) for p in (tmp_path / "m").glob("*.jsonl"))
    out = CliRunner().invoke(
        app, ["stages", "report-relevance", "--human", *humans, "--model", *models, "--json", "--min-shared",
              str(min_shared), "--resamples", "20"]
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    if min_shared == 200:
        assert report["pairwise_kappa"] == [] and set(report["group_kappa"].values()) == {None}
        assert len(report["pairs_below_min_shared"]) == 15
    else:
        _check(report, raters, min_shared)


def test_both_constant_is_null_with_reason(tmp_path: Path) -> None:
    ones = np.ones((25, 1), dtype=int)
    h = write_jsonl(tmp_path / "h.jsonl", human_rows("a", ones, 1) + human_rows("b", ones, 1))
    report = api.relevance([h], n_resamples=10)
    (pair,) = report["pairwise_kappa"]
    assert pair["kappa"] is None and "same single label" in pair["note"]
    assert report["group_kappa"]["human-human"] is None
    assert report["group_kappa_detail"]["human-human"]["n_defined"] == 0


def test_inputs_that_do_not_line_up_are_counted(tmp_path: Path) -> None:
    labels = np.zeros((25, 2), dtype=int)
    labels[::3, 0] = 1
    h1 = human_rows("a", labels, 2)
    h2 = human_rows("b", labels, 2)
    # annotator b saw a different text for attribute 0 of item 4
    h2[4]["relevance_judgments"][0]["attribute"] = "The user of item 4 has trait 0"
    m = model_rows("m", np.ones((30, 2), dtype=int), 2)  # items 25..29 have no human rating
    m[1]["user_id"] = "someone-else"  # index 1 exists for humans under another user
    hp = write_jsonl(tmp_path / "a.jsonl", h1)
    hq = write_jsonl(tmp_path / "b.jsonl", h2)
    mp = write_jsonl(tmp_path / "m.jsonl", m)
    report = api.relevance([hp, hq], [mp], min_shared=1, n_resamples=10)
    al = report["alignment"]
    assert al["model_votes_without_human"] == {"m": 12}
    assert al["user_id_mismatches"] == {"m": 2}
    assert al["attribute_text_mismatch"]["items"] == 1
    assert al["attribute_text_mismatch"]["attributes_not_shared"] == 2
    assert report["raters"]["m"]["n"] == 60 and report["raters"]["m"]["n_without_human"] == 12
    assert any("no human rated" in n for n in report["notes"])
    assert report["raters"]["m"]["constant_label"] is True


def test_null_votes_counted_and_bad_fields_name_the_line(tmp_path: Path) -> None:
    m = model_rows("m", np.ones((3, 2), dtype=int), 2)
    m[0]["items"][1]["relevant"] = None
    h = write_jsonl(tmp_path / "h.jsonl", human_rows("a", np.ones((3, 2), dtype=int), 2))
    report = api.relevance([h], [write_jsonl(tmp_path / "m.jsonl", m)], n_resamples=10)
    assert report["missing_ratings"] == {"null vote (model)": 1}
    bad = human_rows("a", np.ones((3, 2), dtype=int), 2)
    bad[2]["relevance_judgments"][1]["relevant"] = "yes"
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    out = CliRunner().invoke(app, ["stages", "report-relevance", "--human", str(path), "--json"])
    assert out.exit_code == 2
    assert f"{path}:3" in out.output and "relevance_judgments[1].relevant" in out.output


def test_duplicate_rating_across_files_is_an_error(tmp_path: Path) -> None:
    rows = human_rows("a", np.ones((3, 1), dtype=int), 1)
    p1 = write_jsonl(tmp_path / "x.jsonl", rows)
    p2 = write_jsonl(tmp_path / "y.jsonl", rows[:1])
    out = CliRunner().invoke(app, ["stages", "report-relevance", "--human", str(p1), str(p2)])
    assert out.exit_code == 2 and "already rated" in out.output
