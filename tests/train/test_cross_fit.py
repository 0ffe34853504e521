"""`cross_fit_folds`: every user scored by a feature-head fit that never saw them, pooled per tier next to
`longer`; the saved checkpoint is the same as without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailorbench.api import train_rm as train_rm_verb
from tailorbench.datasets import write_native
from tailorbench.errors import ConfigError
from tailorbench.logs import showing_notes
from tailorbench.schema import PairCase
from tailorbench.train import features
from tailorbench.train.config import RMTrainConfig
from tailorbench.train.cross_fit import overlap_accuracy, split_power, tier_accuracy
from tests.helpers.rm_models import tiny_bert, toy_cases


def train_rm(**fields: Any) -> dict[str, Any]:
    """`tb.train_rm`'s summary.json, as the dict these tests read."""
    return train_rm_verb(**fields).to_dict()


def _case(k: int, tier: str, user: str, chosen_len: int, rejected_len: int) -> PairCase:
    return PairCase(id=f"c{k}", split="general", tier=tier, user_id=user, persona={}, question="q",
                    chosen="x" * chosen_len, rejected="y" * rejected_len)


def test_tier_accuracy_by_hand() -> None:
    cases = [_case(0, "easy", "a", 10, 5), _case(1, "easy", "a", 5, 10), _case(2, "hard", "b", 5, 10),
             _case(3, "hard", "b", 10, 5)]
    margins = np.array([1.0, 1.0, 0.0, -1.0])  # right, right, tie (wrong), wrong
    out = tier_accuracy(cases, margins, n_boot=200, seed=0)
    assert out["easy"] == {"n": 2, "accuracy": 1.0, "longer": 0.5, "difference": 0.5, "difference_ci": [0.5, 0.5],
                           "won": 1, "lost": 0, "balanced_accuracy": 1.0}  # one user: every resample is the same
    assert out["hard"]["accuracy"] == 0.0 and out["hard"]["longer"] == 0.5 and out["hard"]["lost"] == 1
    assert out["all"]["n"] == 4 and out["all"]["accuracy"] == 0.5 and out["all"]["balanced_accuracy"] == 0.5
    lo, hi = out["all"]["difference_ci"]
    assert lo <= out["all"]["difference"] <= hi
    assert "medium" not in out  # no case, no row
    assert tier_accuracy(cases, margins, n_boot=0, seed=0)["all"]["difference_ci"] == [None, None]


def test_overlap_accuracy_by_hand() -> None:
    easy = _case(0, "easy", "a", 10, 5)
    swapped = easy.model_copy(update={"id": "c1", "tier": "hard", "chosen": easy.rejected, "rejected": easy.chosen})
    other = _case(2, "easy", "c", 5, 10)
    repeat = other.model_copy(update={"id": "c3", "tier": "hard"})
    cases = [easy, swapped, other, repeat, _case(4, "hard", "b", 5, 10)]
    out = overlap_accuracy(cases, np.array([1.0, -1.0, 1.0, 1.0, 0.0]))  # one order per pair: c0 right, c1 wrong
    assert out["easy"] == {"contradicted": {"n": 1, "accuracy": 1.0, "longer": 1.0},
                           "repeated": {"n": 1, "accuracy": 1.0, "longer": 0.0}}
    assert out["hard"] == {"contradicted": {"n": 1, "accuracy": 0.0, "longer": 0.0},
                           "repeated": {"n": 1, "accuracy": 1.0, "longer": 0.0},
                           "unique": {"n": 1, "accuracy": 0.0, "longer": 0.0}}


def test_split_power_matches_exact_enumeration() -> None:
    """The Monte Carlo odds equal the exact ones over every subset of held-out users (and, with `fresh`, every
    draw with replacement), within sampling error."""
    import itertools

    rng = np.random.default_rng(3)
    cases, margins = [], []
    for k in range(60):  # 6 users, uneven gains per user and tier
        tier = ("easy", "medium", "hard")[k % 3]
        cases.append(_case(k, tier, f"u{k % 6}", int(rng.integers(1, 20)), int(rng.integers(1, 20))))
        margins.append(float(rng.normal()))
    out = split_power(cases, np.array(margins), held_users=2, draws=40_000, seed=0)
    gain = {}
    for c, m in zip(cases, margins, strict=True):
        for t in (c.tier, "all"):
            key = (t, c.user_id)
            gain[key] = gain.get(key, 0) + int(m > 0) - int(len(c.chosen) > len(c.rejected))
    fresh = split_power(cases, np.array(margins), held_users=3, draws=40_000, seed=0, fresh=True)
    users = sorted({c.user_id for c in cases})
    subsets, multisets = list(itertools.combinations(users, 2)), list(itertools.product(users, repeat=3))
    for got, picks in ((out, subsets), (fresh, multisets)):
        for tier in ("easy", "medium", "hard", "all"):
            totals = [sum(gain.get((tier, u), 0) for u in pick) for pick in picks]
            exact = {"ahead": np.mean([t > 0 for t in totals]), "level": np.mean([t == 0 for t in totals]),
                     "behind": np.mean([t < 0 for t in totals])}
            assert got[tier] == pytest.approx(exact, abs=0.01)
            assert sum(got[tier].values()) == pytest.approx(1.0)
    assert split_power(cases, np.array(margins), 2, 1000, seed=5) == split_power(cases, np.array(margins), 2, 1000,
                                                                                  seed=5)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("xfit") / "pairs.jsonl"
    write_native(toy_cases(n_users=8, per_user=6), path)
    return path


def _train(data: Path, out: Path, model: str, **extra: Any) -> dict[str, Any]:
    return train_rm(model=model, data=str(data), out=str(out), eval_fraction=0.25, max_length=64,
                    precision="fp32", n_boot=50, seed=0, train_scope="features",
                    features=["length", "persona_overlap"], **extra)


def test_cross_fit_scores_every_user_out_of_fold(data: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_bert(tmp_path / "m")
    seen: list[set[str]] = []
    fit = features.fit_features

    def spy(cfg: RMTrainConfig, scorer: Any, triples: Any, pairs: Any) -> Any:
        seen.append({t[0] for t in triples})  # the personas (one per user) this fit trained on
        return fit(cfg, scorer, triples, pairs)

    monkeypatch.setattr(features, "fit_features", spy)
    summary = _train(data, tmp_path / "with", model, cross_fit_folds=4, research_figures=True)
    cross = summary["cross_fit"]
    assert cross["folds"] == 4 and cross["users"] == 8 and cross["cases"] == 48
    assert sum(cross["tiers"][t]["n"] for t in ("easy", "medium", "hard")) == 48
    assert cross["tiers"]["all"]["accuracy"] == 1.0  # the hobby rule carries over to unseen users
    assert sum(c["n"] for row in cross["tiers_by_overlap"].values() for c in row.values()) == 48
    assert [f["users"] for f in cross["per_fold"]] == [2, 2, 2, 2]
    power = cross["split_power"]
    assert power["held_users"] == round(0.25 * 8) and power["draws"] > 0  # the config's split size
    assert power["tiers"]["all"]["behind"] == 0.0  # always right: no split can show it behind `longer`
    assert len(seen) == 1 + 4  # the checkpoint's fit, then one per fold
    everyone = set().union(*seen[1:])
    for trained_on in seen[1:]:
        assert len(trained_on) == 6 and len(everyone - trained_on) == 2  # two users held out, never fitted on
    logged = [json.loads(line) for line in (tmp_path / "with" / "metrics.jsonl").read_text().splitlines()]
    assert any(r["event"] == "cross_fit" for r in logged)

    plain = _train(data, tmp_path / "without", model)
    assert plain["cross_fit"] is None
    assert summary["format"] == plain["format"]  # cross-fitting leaves the saved model alone
    saved = json.loads((tmp_path / "with" / "tailorbench_rm.json").read_text())["format"]
    assert saved["feature_weights"] == plain["format"]["feature_weights"]


@pytest.mark.parametrize("fields, match", [
    ({"cross_fit_folds": 1}, "cross_fit_folds must be 0"),
    ({"cross_fit_folds": 3, "train_scope": "full"}, "cross_fit_folds needs train_scope: features"),
])
def test_cross_fit_config_guards(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RMTrainConfig(data="d", out="o", features=["length"], **{"train_scope": "features", **fields}).validate()


def _shared_rows(tmp_path: Path) -> Path:
    cases = toy_cases(n_users=8, per_user=6)
    easy = [c for c in cases if c.tier == "easy"]
    shared = tmp_path / "shared.jsonl"  # one easy pair again in hard, one with the labels swapped
    write_native([*cases, easy[0].model_copy(update={"id": "again", "tier": "hard"}),
                  easy[1].model_copy(update={"id": "swap", "tier": "hard", "chosen": easy[1].rejected,
                                             "rejected": easy[1].chosen})], shared)
    return shared


def test_cli_cross_fit_flag(tmp_path: Path) -> None:
    """The command prints the cross-fit table and, by default, none of the research figures."""
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["train-rm", "--data", str(_shared_rows(tmp_path)), "--out", str(out),
                                      "--model", tiny_bert(tmp_path / "m"), "--train-scope", "features",
                                      "--features", "length", "--cross-fit-folds", "2", "--no-progress",
                                      "--precision", "fp32"])
    assert result.exit_code == 0, result.output
    cross = json.loads((out / "summary.json").read_text())["cross_fit"]
    assert cross["folds"] == 2 and cross["tiers"]["hard"]["n"] > 0
    assert "cross-fit over 8 users (2 folds), rm vs longer: " in result.output
    assert "by rows shared with other tiers" not in result.output and "a random split" not in result.output
    assert cross["tiers_by_overlap"] is None and cross["split_power"] is None


def test_research_figures_are_opt_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`research_figures: true` adds accuracy by overlap class and the odds of a split of the config's size,
    printed and in summary.json; the per-tier table and the checkpoint are the same as without them."""
    shared, model = _shared_rows(tmp_path), tiny_bert(tmp_path / "m")
    plain = _train(shared, tmp_path / "plain", model, cross_fit_folds=2)
    capsys.readouterr()
    with showing_notes():  # the figures are notes (INFO records), shown as under `tailor`
        summary = _train(shared, tmp_path / "research", model, cross_fit_folds=2, research_figures=True)
    printed = capsys.readouterr().err
    assert "hard by rows shared with other tiers: contradicted (1)" in printed
    assert "repeated (1)" in printed and "medium by rows shared" not in printed
    assert "a random split holding out 2 users shows rm ahead of / level with / behind longer" in printed
    cross = summary["cross_fit"]
    assert cross["tiers_by_overlap"]["hard"]["contradicted"]["n"] == 1 and cross["split_power"]["held_users"] == 2
    assert cross["tiers"] == plain["cross_fit"]["tiers"] and summary["format"] == plain["format"]
    with pytest.raises(ConfigError, match="research_figures needs cross_fit_folds"):
        RMTrainConfig(data="d", out="o", features=["length"], train_scope="features", research_figures=True).validate()


def test_split_power_off_with_separate_eval_data(data: Path, tmp_path: Path) -> None:
    """A separate evaluation benchmark is no split of the training users: no odds are given for it."""
    other = tmp_path / "eval.jsonl"
    write_native([c.model_copy(update={"user_id": f"new-{c.user_id}", "id": f"new-{c.id}"})
                  for c in toy_cases(n_users=2, per_user=6)], other)
    summary = _train(data, tmp_path / "out", tiny_bert(tmp_path / "m"), cross_fit_folds=2, eval_data=str(other),
                     research_figures=True)
    assert summary["cross_fit"]["users"] == 8 and summary["cross_fit"]["split_power"] is None
