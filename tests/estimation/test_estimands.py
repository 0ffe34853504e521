"""The other estimands: a gen-eval run's win rate as people give it (its judge the proxy), a paired difference
of two pairwise runs (`--versus`), and `tailor estimate plan`'s promise: at the printed number of labels the
median half-width over 1,000 draws from the pilot is within 10% of the wanted one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tailorbench import api
from tailorbench.errors import ConfigError
from tailorbench.estimation.items import read_items
from tailorbench.estimation.planning import anchored_half_width, labels_needed, simulated_half_width
from tailorbench.estimation.ppi import z_value

UNUSED_MODEL = "openai:unused@http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def gen_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gen-eval run judged by `longer` whose generations are on disk (no model is called): the generated
    answer is the reference doubled on every other case, cut in half on the rest."""
    from tailorbench.datasets import load_benchmark
    from tailorbench.geneval import GenEvalConfig
    from tailorbench.geneval.generate import GENERATIONS, MODEL, PhraseCache, chosen_rows
    from tailorbench.geneval.run import run_gen_eval, select_cases

    config = GenEvalConfig(data="demo", model=UNUSED_MODEL, judge="longer", per_tier=4, validate_cases=0,
                           n_boot=20)
    cases = select_cases(config, load_benchmark("demo"))
    rows = chosen_rows(cases, PhraseCache())
    generated = []
    for k, row in enumerate(rows):
        text = row["answer"] * 2 if k % 2 else row["answer"][: len(row["answer"]) // 2]
        generated.append({**row, "role": MODEL, "source": UNUSED_MODEL, "answer": text, "length": len(text)})
    out = tmp_path_factory.mktemp("gen") / "run"
    out.mkdir()
    (out / GENERATIONS).write_text("".join(json.dumps(r) + "\n" for r in rows + generated), encoding="utf-8")
    run_gen_eval(config, out, resume=True, progress=False)
    return out


def test_gen_eval_win_rate_from_peoples_ratings(tmp_path: Path, gen_run: Path) -> None:
    items = read_items(gen_run)
    assert items.kind == "gen-eval" and set(items.yhat.tolist()) <= {0.0, 0.5, 1.0}
    ratings = tmp_path / "ratings.jsonl"
    people = {c: ("win" if k % 3 else "loss") for k, c in enumerate(items.ids)}
    ratings.write_text("".join(json.dumps({"item": c, "rater": r, "label": v})
                               + "\n" for c, v in people.items() for r in ("p1", "p2")))
    result = api.estimate(gen_run, labels=ratings, assume_uniform=True)
    overall = result.cells[-1]
    assert result.kind == "gen-eval" and "win rate" in result.estimand
    want = np.mean([1.0 if v == "win" else 0.0 for v in people.values()])
    assert overall["human_only"]["estimate"] == pytest.approx(want)
    assert overall["proxy_only"]["estimate"] == pytest.approx(float(items.yhat.mean()))
    with pytest.raises(ConfigError, match="pairwise runs"):
        api.estimate(gen_run, proxy=gen_run, labels=ratings, assume_uniform=True)


def test_paired_difference_of_two_systems(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    for judge in ("longer", "shorter", "random"):
        api.eval("demo", judge=judge, out=root / judge, n_boot=20)
    items = read_items(root / "longer", root / "random", versus=root / "shorter")
    assert items.system.shape == (len(items.ids), 2)
    # with people agreeing with chosen on every case, Y is the accuracy difference of longer and shorter
    y = items.human_value(np.ones(len(items.ids)))
    assert np.allclose(y, items.system[:, 0] - items.system[:, 1])
    ratings = tmp_path / "r.jsonl"
    ratings.write_text("".join(json.dumps({"item": c, "rater": "p", "label": "A"}) + "\n" for c in items.ids[::2]))
    result = api.estimate(root / "longer", root / "random", ratings, versus=root / "shorter", assume_uniform=True)
    assert "difference" in result.estimand
    assert result.cells[-1]["human_only"]["estimate"] == pytest.approx(float(y[::2].mean()))


def test_plan_reaches_the_wanted_half_width_in_simulation() -> None:
    rng = np.random.default_rng(17)
    latent = rng.standard_normal(400)
    y = (rng.random(400) < 1 / (1 + np.exp(-latent))).astype(float)
    yhat = (rng.random(400) < 1 / (1 + np.exp(-1.5 * latent - 0.4))).astype(float)
    big_n, wanted, alpha = 5000, 0.03, 0.05
    human_n, anchored_n, _ = labels_needed(y, yhat, big_n, wanted, alpha)
    assert human_n is not None and anchored_n is not None and anchored_n < human_n
    assert anchored_half_width(y, yhat, anchored_n, big_n, alpha)[0] <= wanted
    assert anchored_half_width(y, yhat, anchored_n - 1, big_n, alpha)[0] > wanted
    for n, anchored in ((anchored_n, True), (human_n, False)):
        median = simulated_half_width(y, yhat, n, big_n, alpha, 1000, seed=5, anchored=anchored)
        assert abs(median - wanted) <= 0.1 * wanted, (n, anchored, median)
    assert z_value(alpha) == pytest.approx(1.959963984540054)


def test_stage3_mean_rating_with_the_judge_as_proxy(tmp_path: Path) -> None:
    """Stage 3 (A/B ratings of personalized against generic, -2..2): people's ratings are the example's, the
    judge rates every item one point higher than the people's mean, rounded (the Re-Centering finding: judges
    rate personalized answers higher than people do)."""
    example = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"
    human = [json.loads(line) for line in (example / "ab_ratings.jsonl").read_text().splitlines() if line.strip()]
    by_item: dict[str, list[int]] = {}
    for r in human:
        if r["label"] is not None and r.get("group", "human") == "human":
            by_item.setdefault(r["item"], []).append(r["label"])
    judge = tmp_path / "judge.jsonl"
    judge.write_text("".join(json.dumps({"item": item, "rater": "llm", "group": "model",
                                         "label": min(2, round(float(np.mean(v))) + 1)}) + "\n"
                             for item, v in by_item.items()))
    result = api.estimate(judge, labels=example / "ab_ratings.jsonl", assume_uniform=True)
    assert result.kind == "ratings" and [c["cell"] for c in result.cells] == ["all"]
    cell = result.cells[0]
    assert cell["n_labels"] == len(by_item)
    assert cell["human_only"]["estimate"] == pytest.approx(float(np.mean([np.mean(v) for v in by_item.values()])))
    assert cell["proxy_only"]["estimate"] > cell["human_only"]["estimate"]  # the judge's inflation, shown
    assert any("outside the human group" in n for n in result.notes)  # the example's model ratings


def test_a_callers_own_plan(tmp_path: Path) -> None:
    """A caller that draws the items itself (a study's stage 3) hands the plan entries over in memory."""
    from tailorbench.estimation.anchored import estimate_runs
    from tailorbench.estimation.sample_plan import plan_entries
    from tailorbench.estimation.sampling import draw

    rng = np.random.default_rng(4)
    ids = [f"ab-{k}" for k in range(200)]
    truth = rng.integers(-2, 3, size=200)
    judge = tmp_path / "judge.jsonl"
    judge.write_text("".join(json.dumps({"item": i, "rater": "llm", "group": "model", "label": int(min(2, t + 1))})
                             + "\n" for i, t in zip(ids, truth)))
    sample = draw("active", 60, rng, uncertainty=rng.uniform(0.1, 1.0, 200))
    plan = plan_entries(ids, sample)
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps({"item": i, "rater": "p", "label": int(truth[k])}) + "\n"
                              for k, i in enumerate(ids) if sample.labeled[k]))
    report = estimate_runs(judge, None, people, plan=plan)
    assert report.design == "active" and not report.assumed_uniform
    anchored = report.cells[0].anchored
    assert anchored is not None and anchored.ci[0] <= float(truth.mean()) <= anchored.ci[1]


def test_alt_test_power_grows_with_items_and_margin() -> None:
    """The alt-test power table beside the plan: a judge as good as each of three annotators passes more often
    with more items and a wider margin; a coin-flip judge almost never passes."""
    from tailorbench.estimation.planning import alt_test_power

    rng = np.random.default_rng(8)
    truth = rng.integers(0, 2, 400)
    humans = np.where(rng.random((400, 3)) < 0.85, truth[:, None], 1 - truth[:, None])
    good = np.where(rng.random(400) < 0.9, truth, 1 - truth)
    rows = alt_test_power(humans, good, draws=40, seed=1, items=(30, 200), epsilons=(0.1, 0.2))
    by_eps = {r.epsilon: r for r in rows}
    assert by_eps[0.2].power["200"] >= by_eps[0.2].power["30"]
    assert by_eps[0.2].power["200"] >= by_eps[0.1].power["200"]
    assert by_eps[0.2].items_needed is not None
    coin = rng.integers(0, 2, 400)
    bad = alt_test_power(humans, coin, draws=40, seed=1, items=(200,), epsilons=(0.1,))
    assert bad[0].power["200"] < 0.1 and bad[0].items_needed is None


def test_cross_fitted_proxy_is_crossppi(tmp_path: Path) -> None:
    """Two fold runs of a proxy 'trained' on people's labels (each manifest's training_overlap marks half of the
    labelled cases in-training): each labelled case takes the fold not trained on it, and the anchored interval
    is ppi-python's `crossppi_mean_ci` (`--check-library`)."""
    pytest.importorskip("ppi_py")
    root = tmp_path / "runs"
    for judge in ("shorter", "longer", "random"):
        api.eval("demo", judge=judge, out=root / judge, n_boot=20)
    items = read_items(root / "shorter", root / "longer")
    labelled = items.ids[::2]
    for k, fold in enumerate(("longer", "random")):
        path = root / fold / "manifest.json"
        manifest = json.loads(path.read_text())
        trained = {c: "in-training" for j, c in enumerate(labelled) if j % 2 == k}
        manifest["config"]["training_overlap"] = {"cases": trained}
        path.write_text(json.dumps(manifest))
    ratings = tmp_path / "r.jsonl"
    ratings.write_text("".join(json.dumps({"item": c, "rater": "p", "label": "A" if j % 3 else "B"}) + "\n"
                               for j, c in enumerate(labelled)))
    result = api.estimate(root / "shorter", [root / "longer", root / "random"], ratings, assume_uniform=True,
                          check_library=True)
    assert any("cross-fitted" in n for n in result.notes)
    check = result.to_dict()["library_check"]
    assert check is not None and check < 1e-9
    assert result.cells[-1]["anchored"] is not None
    # a labelled case in the training data of every fold has no out-of-fold label: exit-2 error
    for fold in ("longer", "random"):
        path = root / fold / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["config"]["training_overlap"] = {"cases": dict.fromkeys(labelled[:1], "in-training")}
        path.write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="every proxy run"):
        api.estimate(root / "shorter", [root / "longer", root / "random"], ratings, assume_uniform=True)
