"""Interventions: the logistic head and the held-out comparison against scikit-learn; the verifier and the
relevance classifier trained on a handful of the example study's labels with the real shipped MiniLM, checked
for the pipeline and the user split (not for quality the tiny data cannot support); verify-and-refine through
the real llama.cpp server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score, f1_score
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.threestage import verbs as api
from tailorbench.threestage.recentering_formats import read_stage1_items, split_key
from tailorbench.threestage.statistics import LogisticHead, compare_to_majority, fit_logistic
from tests.conftest import LlamaServer

EX = api.example_dir()
HUMANS1 = sorted(EX.glob("ann_*_task1.jsonl"))
HUMANS3 = sorted(EX.glob("ann_*_task3.jsonl"))
VOTES = EX / "illustrative-llm_relevance.jsonl"


@pytest.fixture(scope="module")
def encoder() -> Any:
    from tailorbench.models.encoder_hf import HFEncoder

    return HFEncoder()


def test_logistic_head_matches_sklearn(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 5)) * [1, 2, 3, 0.5, 10]
    y = (x[:, 0] + 0.3 * x[:, 1] + rng.normal(size=60) > 1.0)
    head = fit_logistic(x, y, l2=2.0)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    ref = LogisticRegression(C=0.5, class_weight="balanced", tol=1e-12, max_iter=10_000).fit(z, y)
    np.testing.assert_allclose(head.weights, ref.coef_[0], atol=1e-5)
    assert head.bias == pytest.approx(ref.intercept_[0], abs=1e-5)
    np.testing.assert_allclose(head.proba(x), ref.predict_proba(z)[:, 1], atol=1e-6)
    head.save(tmp_path / "h.npz")
    again = LogisticHead.load(tmp_path / "h.npz")
    np.testing.assert_array_equal(again.proba(x), head.proba(x))
    assert again.meta["fit"]["n_positive"] == int(y.sum())
    with pytest.raises(ConfigError, match="both classes"):
        fit_logistic(x, np.zeros(60))


def test_compare_to_majority_matches_sklearn() -> None:
    rng = np.random.default_rng(5)
    keys = [f"k{i}" for i in range(80)]
    gold = {k: bool(v) for k, v in zip(keys, rng.random(80) < 0.3)}
    a = {k: bool(v) for k, v in zip(keys, rng.random(80) < 0.4)}
    b = {k: (gold[k] if rng.random() < 0.8 else not gold[k]) for k in keys[:60]}
    b["elsewhere"] = True
    humans = {f"h{j}": {k: (gold[k] if rng.random() < 0.85 else not gold[k]) for k in keys} for j in range(3)}
    r = compare_to_majority(gold, {"a": a, "b": b}, humans, reference="a", n_resamples=200, seed=1)
    for name, votes in (("a", a), ("b", b)):
        shared = [k for k in keys if k in votes]
        g, p = [gold[k] for k in shared], [votes[k] for k in shared]
        e = r["raters"][name]
        assert e["n"] == len(shared)
        assert e["f1"] == pytest.approx(f1_score(g, p))
        assert e["kappa"] == pytest.approx(cohen_kappa_score(g, p))
        want = np.mean([cohen_kappa_score([h[k] for k in shared], p) for h in humans.values()])
        assert e["mean_kappa_with_humans"] == pytest.approx(want)
        assert e["f1_ci"][0] <= e["f1"] <= e["f1_ci"][1]
    assert r["raters"]["b"]["n_without_gold"] == 1
    gain = r["gain_of_reference_over"]["b"]
    assert gain["f1_gain"] == pytest.approx(r["raters"]["a"]["f1"] - r["raters"]["b"]["f1"])
    assert r == compare_to_majority(gold, {"a": a, "b": b}, humans, reference="a", n_resamples=200, seed=1)


def test_verifier_trains_on_some_users_and_is_judged_on_the_others(tmp_path: Path, encoder: Any) -> None:
    r = api.train_verifier(EX / "stage1_items.jsonl", tmp_path / "v", HUMANS1, n_resamples=20, seed=0,
                           encoder=encoder)
    held, train = set(r["split"]["heldout_users"]), set(r["split"]["train_users"])
    assert held and train and not held & train and held | train == {f"u-0{i}" for i in range(1, 7)}
    rows = [json.loads(line) for line in (tmp_path / "v" / "verifier_heldout.jsonl").read_text().splitlines()]
    assert {row["user_id"] for row in rows} == held and len(rows) == r["split"]["n_heldout"] == r["acceptance"]["n"]
    accepted = [row["human_majority"] == "accepted" for row in rows]
    kept = [row["kept"] for row in rows]
    assert r["acceptance"]["before"] == pytest.approx(np.mean(accepted))
    if any(kept):
        assert r["acceptance"]["after"] == pytest.approx(np.mean([a for a, k in zip(accepted, kept) if k]))
    assert r["vs_human_majority"]["raters"]["verifier"]["n"] == len(rows)
    for ext in ("json", "md", "html"):
        assert (tmp_path / "v" / f"verifier.{ext}").stat().st_size > 0
    assert "<svg" in (tmp_path / "v" / "verifier.html").read_text()
    # seeded: the same seed gives the same split and the same probabilities; another seed another split
    again = api.train_verifier(EX / "stage1_items.jsonl", tmp_path / "v2", HUMANS1, n_resamples=20, seed=0,
                               encoder=encoder)
    assert again["split"] == r["split"] and again["acceptance"] == r["acceptance"]
    assert (tmp_path / "v2" / "verifier_heldout.jsonl").read_text() == (
        tmp_path / "v" / "verifier_heldout.jsonl").read_text()
    other = api.train_verifier(EX / "stage1_items.jsonl", tmp_path / "v3", HUMANS1, n_resamples=20, seed=7,
                               encoder=encoder)
    assert other["split"]["heldout_users"] != r["split"]["heldout_users"]


def test_verify_drop_and_refine_through_llama(llama_server: LlamaServer, tmp_path: Path, encoder: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    # a threshold above every probability: every attribute is rejected, so every item is re-asked
    api.train_verifier(EX / "stage1_items.jsonl", tmp_path / "v", HUMANS1, n_resamples=10, threshold=1.5,
                       encoder=encoder)
    head = tmp_path / "v" / "verifier.npz"
    n_attr = sum(len(it.attributes) for it in read_stage1_items(EX / "stage1_items.jsonl").values())
    dropped = api.verify(EX / "stage1_items.jsonl", head, tmp_path / "dropped.jsonl", encoder=encoder)
    assert dropped["counts"]["extracted"] == n_attr and dropped["counts"]["final"] == 0
    assert dropped["counts"]["dropped"] == n_attr and dropped["rounds"] == 0
    spec = f"openai:{llama_server.model}@{llama_server.base_url}"
    llama_server.reset()
    refined = api.verify(EX / "stage1_items.jsonl", head, tmp_path / "refined.jsonl", model=spec, rounds=2,
                         encoder=encoder)
    # the tiny model's reply is no attribute list: each re-ask is an invalid answer, counted, nothing restated
    assert refined["refine_calls"] == {"ok": 0, "invalid": 6, "failed": 0} and llama_server.count() == 6
    assert refined["counts"]["reasked"] == n_attr and refined["counts"]["restated"] == 0
    out = read_stage1_items(tmp_path / "refined.jsonl")
    assert all(it.extractor.endswith("+verified") and it.attributes == [] for it in out.values())
    rows = [json.loads(line) for line in (tmp_path / "refined.jsonl").read_text().splitlines()]
    assert sum(len(r["verification"]) for r in rows) == n_attr
    # a kept attribute goes on to the annotation service like any extraction
    keep_all = api.train_verifier(EX / "stage1_items.jsonl", tmp_path / "k", HUMANS1, n_resamples=10,
                                  threshold=0.0, encoder=encoder)
    assert keep_all["acceptance"]["share_kept"] == 1.0
    kept = api.verify(EX / "stage1_items.jsonl", tmp_path / "k" / "verifier.npz", tmp_path / "kept.jsonl",
                      encoder=encoder)
    assert kept["counts"]["final"] == n_attr
    assert api.export_tasks(tmp_path / "kept.jsonl", tmp_path / "tasks.jsonl")["tasks"] == 6
    with pytest.raises(ConfigError, match="not a verifier"):
        api.verify(EX / "stage1_items.jsonl", _relevance_head(tmp_path, encoder), tmp_path / "x.jsonl",
                   encoder=encoder)


def _relevance_head(tmp_path: Path, encoder: Any) -> Path:
    api.train_relevance(EX / "relevance_items.jsonl", tmp_path / "rc", HUMANS3, n_resamples=10, encoder=encoder)
    return tmp_path / "rc" / "relevance_classifier.npz"


def test_relevance_classifier_held_out_by_user(tmp_path: Path, encoder: Any) -> None:
    r = api.train_relevance(EX / "relevance_items.jsonl", tmp_path / "rc", HUMANS3, model=[VOTES], n_resamples=20,
                            encoder=encoder)
    held = set(r["split"]["heldout_users"])
    assert held and not held & set(r["split"]["train_users"])
    votes = [json.loads(line) for line in Path(r["votes"]).read_text().splitlines()]
    assert {v["user_id"] for v in votes} == held
    h = r["heldout"]
    assert set(h["raters"]) == {"relevance-classifier", "embedding cosine (threshold on training users)",
                                "illustrative-llm"}
    assert {e["n"] for e in h["raters"].values()} == {h["n_items"]} == {r["split"]["n_heldout"]}
    assert all(split_key(k)[1] in held for k in _keys(votes))
    assert set(h["gain_of_reference_over"]) == {"embedding cosine (threshold on training users)", "illustrative-llm"}
    assert all(e["n_humans_with_kappa"] == 3 for e in h["raters"].values())
    # the held-out votes are what the saved classifier says on those items
    info = api.classify_relevance(EX / "relevance_items.jsonl", tmp_path / "rc" / "relevance_classifier.npz",
                                  tmp_path / "all.jsonl", encoder=encoder)
    assert info["attributes"] == 72
    every = {k: v for k, v in _keys([json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
                                    ).items()}
    for k, v in _keys(votes).items():
        assert every[k] == v
    # the votes feed the stage-2 report like any judge's
    rep = api.relevance(HUMANS3, [Path(r["votes"])], min_shared=1, n_resamples=10)
    assert rep["f1_vs_human_majority"]["relevance-classifier"] == pytest.approx(h["raters"]["relevance-classifier"]
                                                                                ["f1"])


def _keys(vote_rows: list[dict[str, Any]]) -> dict[str, str]:
    from tailorbench.threestage.recentering_formats import item_key

    return {item_key(v["sample_index"], v["user_id"], e["attribute"]): e["raw_answer"]
            for v in vote_rows for e in v["items"]}


def test_train_relevance_cli(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["stages", "train-relevance", "--items", str(EX / "relevance_items.jsonl"),
                                   "--out", str(tmp_path / "rc"), "--human", *map(str, HUMANS3), "--seed", "3",
                                   "--resamples", "10", "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert r["split"]["seed"] == 3 and (tmp_path / "rc" / "relevance_classifier.md").is_file()
    res = CliRunner().invoke(app, ["stages", "summary", str(tmp_path / "rc")])
    assert res.exit_code == 0 and "held-out F1 / kappa vs humans: relevance-classifier" in res.output
