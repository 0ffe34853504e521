"""Feature-head options of `tailor train-rm` (`features`, `feature_l2`, `train_scope`) on toy data and a tiny
BERT: the Bradley-Terry fit of the feature weights, the features-only scope, the reload through `rm:`, and the
config guards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailorbench.api import train_rm as train_rm_verb
from tailorbench.datasets import write_native
from tailorbench.errors import ConfigError
from tailorbench.models import reward_hf
from tailorbench.models.reward_hf import HFRewardModel, char_bigrams
from tailorbench.train import config as train_config
from tailorbench.train.config import RMTrainConfig
from tailorbench.train.data import context_of
from tailorbench.train.features import fit_feature_weights
from tests.helpers.rm_models import tiny_bert, toy_cases


def train_rm(**fields: Any) -> dict[str, Any]:
    """`tb.train_rm`'s summary.json, as the dict these tests read."""
    return train_rm_verb(**fields).to_dict()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("feat") / "pairs.jsonl"
    write_native(toy_cases(n_users=8, per_user=6), path)
    return path


def test_feature_names_agree() -> None:
    assert tuple(reward_hf.FEATURES) == train_config.FEATURES


def test_char_bigrams_and_raw_features(tmp_path: Path) -> None:
    assert char_bigrams("喜欢园艺") == {"喜欢", "欢园", "园艺"}
    scorer = HFRewardModel(tiny_bert(tmp_path / "m"), precision="fp32")
    triples = [("喜欢园艺", "q", "园艺很好"), (None, "q", "园艺很好"), ("cats", "q", "dogs")]
    raw = scorer.raw_features(triples, ["length", "persona_overlap", "persona_cosine", "persona_overlap_share",
                                        "question_cosine"])
    assert raw[:, 0] == pytest.approx(np.log1p([4, 4, 4]))
    assert raw[:, 1] == pytest.approx([np.log1p(1), 0.0, 0.0])  # one shared bigram; no context -> 0
    cosine_range = pytest.approx(0.0, abs=1.0 + 1e-6)  # a float32 cosine of a vector with itself can be 1 + 2e-7
    assert raw[1, 2] == 0.0 and raw[0, 2] == cosine_range and raw[2, 2] == cosine_range
    assert raw[:, 3] == pytest.approx([1 / 3, 0.0, 0.0])  # 1 of the answer's 3 bigrams is in the context
    assert raw[0, 4] == pytest.approx(raw[1, 4]) and raw[0, 4] == cosine_range  # the question needs no context
    embedded = scorer.embed(["园艺很好", "dogs"])
    assert np.linalg.norm(embedded, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    with pytest.raises(ConfigError, match="unknown feature"):
        scorer.raw_features(triples, ["colour"])


def test_fit_is_the_bradley_terry_optimum() -> None:
    import torch

    rng = np.random.default_rng(0)
    feats = torch.tensor(rng.normal(size=(40, 2)), dtype=torch.float32)
    pairs = [(k, k + 20) for k in range(20)]
    weights, info = fit_feature_weights(feats, pairs, margin=0.0, l2=0.1)
    diff = (feats[:20] - feats[20:]).double()

    def loss(w: np.ndarray) -> float:
        return float(-torch.nn.functional.logsigmoid(diff @ torch.tensor(w)).mean() + 0.1 * (w**2).sum())

    for k in range(2):
        for eps in (1e-2, -1e-2):
            moved = weights.copy()
            moved[k] += eps
            assert loss(moved) >= loss(weights) - 1e-7
    assert info["train_loss"] == pytest.approx(loss(weights) - 0.1 * float((weights**2).sum()), abs=1e-5)
    # pair weights: equal weights change nothing; weight 2 on a pair is the pair written twice
    same, _ = fit_feature_weights(feats, pairs, margin=0.0, l2=0.1, pair_weights=[3.0] * 20)
    assert same == pytest.approx(weights, abs=1e-4)
    doubled, _ = fit_feature_weights(feats, pairs, margin=0.0, l2=0.1, pair_weights=[2.0] + [1.0] * 19)
    repeated, _ = fit_feature_weights(feats, [pairs[0], *pairs], margin=0.0, l2=0.1)
    assert doubled == pytest.approx(repeated, abs=1e-4) and doubled != pytest.approx(weights, abs=1e-4)


def test_features_scope_trains_in_one_fit_and_reloads(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = train_rm(model=tiny_bert(tmp_path / "m"), data=str(data), out=str(out), eval_fraction=0.25,
                       max_length=64, precision="fp32", n_boot=20, seed=0, train_scope="features",
                       features=["length", "persona_overlap"])
    assert summary["steps"] == 0 and summary["truncation"]["truncated_inputs"] == 0
    weights = summary["format"]["feature_weights"]
    assert summary["format"]["encoder_score"] is False and weights[1] > 0  # the hobby words overlap the persona
    assert summary["evals"][0]["tiers"]["all"]["accuracy"] == 1.0
    sidecar = json.loads((out / "tailorbench_rm.json").read_text())
    assert sidecar["format"]["features"] == ["length", "persona_overlap"]
    held = toy_cases(n_users=8, per_user=6)[:6]
    triples = [(context_of(c, "persona"), c.question, a) for c in held for a in (c.chosen, c.rejected)]
    reloaded = HFRewardModel(str(out), precision="fp32")
    scores, flags = reloaded.score(triples)
    assert not flags.any() and reloaded.encoder.truncated["inputs"] == 0  # nothing was encoded
    fmt = reloaded.fmt
    z = (reloaded.raw_features(triples) - np.array(fmt.feature_mean)) / np.array(fmt.feature_std)
    assert scores == pytest.approx(z @ np.array(weights), abs=1e-9)
    assert (scores[0::2] > scores[1::2]).all()


def test_full_scope_starts_from_the_feature_fit(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "full"
    summary = train_rm(model=tiny_bert(tmp_path / "m"), data=str(data), out=str(out), eval_fraction=0.25,
                       max_length=64, batch_size=8, max_steps=2, precision="fp32", n_boot=20, seed=0,
                       features=["persona_overlap"], length_lr=0.0, eval_each_epoch=False)
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert start["feature_fit"]["weights"] == summary["format"]["feature_weights"]  # lr 0: the fit is kept
    assert summary["steps"] == 2 and summary["format"]["encoder_score"] is True
    last = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][-2]
    assert last["event"] == "train" and last["feature_weights"] == summary["format"]["feature_weights"]


@pytest.mark.parametrize("fields,match", [
    ({"train_scope": "features"}, "at least one feature"),
    ({"features": ["persona_cosine"]}, "persona_cosine"),
    ({"features": ["question_cosine"]}, "question_cosine"),
    ({"features": ["colour"]}, "features must be among"),
    ({"features": ["length"], "length_feature": True}, "length_feature"),
    ({"train_scope": "head"}, "train_scope"),
])
def test_feature_config_guards(fields: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RMTrainConfig(data="d", out="o", **fields).validate()


def test_answer_ngrams_fit_jointly_save_and_reload(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "ngrams"
    summary = train_rm(model=tiny_bert(tmp_path / "m"), data=str(data), out=str(out), eval_fraction=0.25,
                       max_length=64, precision="fp32", n_boot=20, seed=0, train_scope="features",
                       features=["length", "answer_ngrams"], ngram_min_df=1)
    fmt = summary["format"]
    assert fmt["features"] == ["length", "answer_ngrams"]
    assert fmt["feature_mean"][1] == 0.0 and fmt["feature_std"][1] == 1.0 and fmt["feature_weights"][1] == 1.0
    fit = summary["feature_fit"]
    assert fit["ngram_terms"] > 0 and fit["top_ngrams"]["up"] and len(fit["weights"]) == 2
    assert summary["evals"][0]["tiers"]["all"]["accuracy"] == 1.0
    assert (out / "tailorbench_ngrams.json").is_file()
    held = toy_cases(n_users=8, per_user=6)[:6]
    triples = [(context_of(c, "persona"), c.question, a) for c in held for a in (c.chosen, c.rejected)]
    reloaded = HFRewardModel(str(out), precision="fp32")
    scores, _ = reloaded.score(triples)
    assert reloaded.ngrams is not None
    z_len = (np.log1p([len(t[2]) for t in triples]) - fmt["feature_mean"][0]) / fmt["feature_std"][0]
    expected = fmt["feature_weights"][0] * z_len + reloaded.ngrams.score([t[2] for t in triples])
    assert scores == pytest.approx(expected, abs=1e-9)
    (out / "tailorbench_ngrams.json").unlink()
    with pytest.raises(ConfigError, match="answer_ngrams"):
        HFRewardModel(str(out), precision="fp32")


def test_ngram_config_guards() -> None:
    with pytest.raises(ConfigError, match="ngram_range"):
        RMTrainConfig(data="d", out="o", ngram_range=[2, 1]).validate()
    with pytest.raises(ConfigError, match="ngram_l2"):
        RMTrainConfig(data="d", out="o", ngram_l2=-1.0).validate()


def test_cli_ngram_flags(data: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    out = tmp_path / "cli"
    args = ["train-rm", "--data", str(data), "--out", str(out), "--model", tiny_bert(tmp_path / "m"),
            "--train-scope", "features", "--features", "length,answer_ngrams", "--no-progress", "--precision", "fp32"]
    result = CliRunner().invoke(app, [*args, "--ngram-range", "1-3", "--ngram-l2", "0.001"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "summary.json").read_text())
    assert saved["format"]["features"] == ["length", "answer_ngrams"]
    # a features-only run reports its fit, not "trained 0 steps at 0.0 pairs/s"
    assert f"fitted the feature head on {saved['data']['train_pairs']} pairs" in result.output
    assert "0 steps" not in result.output
    assert (out / "train_config.yaml").read_text().count("ngram_l2: 0.001") == 1
    frozen = CliRunner().invoke(app, [*args[:3], "--model", args[6], "--out", str(tmp_path / "fz"),
                                      "--freeze-layers", "1", "--train-scope", "features", "--features", "length"])
    assert frozen.exit_code == 2 and "freeze_layers needs train_scope" in frozen.output  # the flag reaches the config
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "bad"), "--ngram-range", "three"])
    assert bad.exit_code == 2 and "ngram-range" in bad.output


def test_shipped_config_validates() -> None:
    from tailorbench.train.config import load_config

    root = Path(__file__).resolve().parents[2]
    cfg = load_config(root / "configs" / "rm-minilm-cpu.yaml", {"data": "d", "out": "o"}).validate()
    assert cfg.train_scope == "features" and "answer_ngrams" in cfg.features and cfg.ngram_range == [1, 3]
    assert cfg.cross_fit_folds == 5


def test_empty_ngram_vocabulary_is_refused(data: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lower ngram_min_df"):
        train_rm(model=tiny_bert(tmp_path / "m"), data=str(data), out=str(tmp_path / "o"), eval_fraction=0.25,
                 precision="fp32", train_scope="features", features=["answer_ngrams"], ngram_min_df=10_000)
