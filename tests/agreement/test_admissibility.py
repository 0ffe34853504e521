"""Human admissibility: the alternative-annotator test worked by hand from the paper's definitions, recomputed
independently (a per-instance loop over dicts, scipy's t-test and Benjamini-Yekutieli correction) on random
data, and the kappas beside it against scikit-learn; edge cases and the CLI's refusals."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as ss
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from tailorbench.agreement.admissibility import (
    BELOW,
    WITHIN,
    AdmissibilityOptions,
    admissibility,
    alt_test,
)
from tailorbench.agreement.matrix import build_matrix
from tailorbench.agreement.records import Rating, RatingSet
from tailorbench.agreement.t_test import by_adjust, t_cdf, t_test_less
from tailorbench.cli.app import app
from tests.agreement.alt_test_reference import accuracy, neg_rmse, reference_alt_test

Writer = Callable[[str, list[dict[str, Any]]], Path]
runner = CliRunner()

# 3 humans x 4 items, binary labels; the judge J. Worked by hand below.
HAND = {"A": [1, 1, 0, 1], "B": [1, 0, 0, 0], "C": [1, 1, 1, 0], "J": [1, 1, 0, 0]}


def _t3_cdf(t: float) -> float:
    """Student's t CDF with 3 degrees of freedom in closed form: 1/2 + (theta + sin theta cos theta) / pi."""
    theta = math.atan(t / math.sqrt(3.0))
    return 0.5 + (theta + math.sin(theta) * math.cos(theta)) / math.pi


def _ratings(table: dict[str, list[int | None]], judges: tuple[str, ...] = ("J",)) -> RatingSet:
    rs = RatingSet(sources=["mem"])
    for rater, labels in table.items():
        for i, lab in enumerate(labels):
            if lab is not None:
                rs.ratings.append(Rating(f"i{i}", rater, lab, "model" if rater in judges else "human"))
    return rs


def _run(table: dict[str, list[int | None]], **kw: Any) -> dict[str, Any]:
    m = build_matrix(_ratings(table))
    judges = [m.raters.index("J")]
    humans = [c for c in range(len(m.raters)) if m.raters[c] != "J"]
    opts = AdmissibilityOptions(**{"min_items": 2, "n_resamples": 200, "alignment": "accuracy", **kw})
    return admissibility(m, judges, humans, opts)


def test_hand_worked_three_humans() -> None:
    # leave out A: others (B, C) per item: {1,1} {0,1} {0,1} {0,0}; S_f = (1, .5, .5, 1), S_h = (1, .5, .5, 0):
    # W_f = (1,1,1,1), W_h = (1,1,1,0), d = (0,0,0,-1). B and C the same by symmetry of the table.
    # mean d = -1/4, sd = 1/2, t = (-1/4 - 0.2) / (1/2 / 2) = -1.8 with 3 degrees of freedom.
    adm = _run(HAND)
    alt = adm["judges"]["J"]["alt_test"]
    p = _t3_cdf(-1.8)
    for row in alt["humans"]:
        assert row["n"] == 4
        assert row["rho_f"] == 1.0 and row["rho_h"] == 0.75 and row["mean_d"] == -0.25
        assert row["t"] == pytest.approx(-1.8, abs=1e-12)
        assert row["p"] == pytest.approx(p, abs=1e-12)
        # BY with three equal p-values: each adjusted to p * m * (1 + 1/2 + 1/3) / m
        assert row["p_adjusted"] == pytest.approx(p * 11 / 6, abs=1e-12)
        assert row["rejected"] is False  # 0.155 > 0.05
    assert alt["winning_rate"] == 0.0 and alt["passed"] is False
    assert alt["advantage_probability"] == 1.0
    assert adm["judges"]["J"]["sentence"] == BELOW
    # with epsilon 0.6 each t is (-0.85) / 0.25 = -3.4: p = F_3(-3.4), adjusted 11/6 of it, below 0.05: all rejected
    adm = _run(HAND, epsilon=0.6)
    alt = adm["judges"]["J"]["alt_test"]
    assert all(r["p"] == pytest.approx(_t3_cdf(-3.4), abs=1e-12) for r in alt["humans"])
    assert _t3_cdf(-3.4) * 11 / 6 < 0.05
    assert alt["winning_rate"] == 1.0 and adm["judges"]["J"]["sentence"] == WITHIN


@pytest.mark.parametrize(("k", "alignment", "seed"), [(2, "accuracy", 0), (3, "accuracy", 1), (5, "neg-rmse", 2),
                                                       (4, "accuracy", 3), (5, "neg-rmse", 4)])
def test_equals_independent_recomputation(k: int, alignment: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_humans = 80, 5
    truth = rng.integers(1, k + 1, n_items)
    table: dict[str, list[int | None]] = {}
    for h in range(n_humans):
        noisy = np.where(rng.random(n_items) < 0.3, rng.integers(1, k + 1, n_items), truth)
        rate = 0.25 if h == n_humans - 1 else 0.85  # the last human shares too few items
        table[f"h{h}"] = [int(x) if rng.random() < rate else None for x in noisy]
    judge = np.where(rng.random(n_items) < 0.25, rng.integers(1, k + 1, n_items), truth)
    table["J"] = [int(x) if rng.random() < 0.95 else None for x in judge]
    for epsilon in (0.0, 0.1, 0.2):
        adm = _run(table, epsilon=epsilon, min_items=30, alignment=alignment)
        alt = adm["judges"]["J"]["alt_test"]
        humans = {h: {f"i{i}": v for i, v in enumerate(vals) if v is not None} for h, vals in table.items() if h != "J"}
        llm = {f"i{i}": v for i, v in enumerate(table["J"]) if v is not None}
        ref = reference_alt_test(llm, humans, epsilon, 0.05, 30, neg_rmse if alignment == "neg-rmse" else accuracy)
        tested = {r["human"]: r for r in alt["humans"] if "p" in r}
        assert set(tested) == set(ref["p"])
        assert "h4" not in tested and any(r["human"] == "h4" and "excluded" in r for r in alt["humans"])
        for h, r in tested.items():
            assert r["p"] == pytest.approx(ref["p"][h], abs=1e-10)
            assert r["p_adjusted"] == pytest.approx(ref["adj"][h], abs=1e-10)
            assert r["rejected"] == (h in ref["rejected"])
        assert alt["winning_rate"] == ref["omega"]
        assert alt["advantage_probability"] == pytest.approx(ref["rho"], abs=1e-12)


def test_t_test_and_by_equal_scipy() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        d = rng.choice([-1.0, 0.0, 1.0], size=int(rng.integers(2, 150)), p=rng.dirichlet([1, 1, 1]))
        eps = float(rng.uniform(0.0, 0.4))
        t, p = t_test_less(d, eps)
        with _quiet():
            ref = ss.ttest_1samp(d, eps, alternative="less")
        if np.isfinite(ref.pvalue):
            assert p == pytest.approx(float(ref.pvalue), abs=1e-12)
    for df in (1, 2, 3, 7, 29, 191, 5000):
        for t in (-50.0, -4.0, -1.8, -0.2, 0.0, 0.7, 3.0):
            assert t_cdf(t, df) == pytest.approx(float(ss.t.cdf(t, df)), rel=1e-9, abs=1e-15)
    # zero variance: all ties (mean 0 < epsilon) rejects, all human wins does not, mean at epsilon is p = 1
    assert t_test_less(np.zeros(30), 0.2)[1] == 0.0
    assert t_test_less(np.ones(30), 0.2)[1] == 1.0
    assert t_test_less(np.zeros(30), 0.0)[1] == 1.0
    for _ in range(200):
        p = rng.uniform(0, 1, size=int(rng.integers(1, 25))) ** 3
        assert np.allclose(by_adjust(p), ss.false_discovery_control(p, method="by"), atol=1e-14, rtol=0)
    assert by_adjust([]).size == 0


class _quiet:
    """Silence scipy's precision-loss warning on constant samples."""

    def __enter__(self) -> None:
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(*exc)


def _majority(labels: list[int]) -> int | None:
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def test_kappas_equal_sklearn() -> None:
    rng = np.random.default_rng(11)
    n_items = 120
    truth = rng.integers(0, 3, n_items)
    table: dict[str, list[int | None]] = {}
    for h in range(4):
        noisy = np.where(rng.random(n_items) < 0.35, rng.integers(0, 3, n_items), truth)
        table[f"h{h}"] = [int(x) if rng.random() < 0.8 else None for x in noisy]
    table["J"] = [int(x) for x in np.where(rng.random(n_items) < 0.3, rng.integers(0, 3, n_items), truth)]
    adm = _run(table, n_resamples=300)
    humans = [h for h in table if h != "J"]

    def kappa(a: list[int | None], b: list[int | None]) -> tuple[float, int]:
        pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
        return float(cohen_kappa_score([p[0] for p in pairs], [p[1] for p in pairs])), len(pairs)

    for row in adm["human_reference"]["per_human"]:
        h = row["human"]
        gold = [_majority([table[o][i] for o in humans if o != h and table[o][i] is not None]) for i in range(n_items)]
        value, n = kappa(table[h], gold)
        assert row["value"] == pytest.approx(value, abs=1e-12) and row["n"] == n
        assert row["ci"][0] <= row["value"] <= row["ci"][1]
    values = [r["value"] for r in adm["human_reference"]["per_human"]]
    assert adm["human_reference"]["range"] == [min(values), max(values)]
    assert adm["human_reference"]["mean"]["value"] == pytest.approx(np.mean(values), abs=1e-12)
    kap = adm["judges"]["J"]["kappa"]
    gold_all = [_majority([table[o][i] for o in humans if table[o][i] is not None]) for i in range(n_items)]
    assert kap["vs_majority"]["value"] == pytest.approx(kappa(table["J"], gold_all)[0], abs=1e-12)
    mean_k = np.mean([kappa(table["J"], table[h])[0] for h in humans])
    assert kap["mean_vs_humans"]["value"] == pytest.approx(mean_k, abs=1e-12)
    lo, hi = kap["mean_vs_humans"]["ci"]
    assert lo <= kap["mean_vs_humans"]["value"] <= hi


def test_too_few_and_no_shared_items() -> None:
    # the judge rated items no human rated: nothing shared, each human listed with n = 0 and excluded
    table: dict[str, list[int | None]] = {"A": [1, 0, None, None], "B": [1, 1, None, None],
                                          "J": [None, None, 1, 0]}
    adm = _run(table)
    e = adm["judges"]["J"]
    assert e["sentence"] == "not enough shared items (0)"
    assert [(r["human"], r["n"], "excluded" in r) for r in e["alt_test"]["humans"]] == [("A", 0, True),
                                                                                       ("B", 0, True)]
    assert e["alt_test"]["winning_rate"] is None and e["alt_test"]["passed"] is None
    assert e["kappa"]["vs_majority"]["n"] == 0 and e["kappa"]["vs_majority"]["value"] is None
    # 3 shared items against a minimum of 5: the sentence names the 3
    adm = _run({"A": [1, 0, 1, 0], "B": [1, 1, 0, 0], "J": [1, 0, 1, None]}, min_items=5)
    assert adm["judges"]["J"]["sentence"] == "not enough shared items (3)"


def test_per_tier() -> None:
    rng = np.random.default_rng(3)
    table: dict[str, list[int | None]] = {f"h{h}": [int(x) for x in rng.integers(0, 2, 100)] for h in range(3)}
    table["J"] = [int(x) for x in rng.integers(0, 2, 100)]
    m = build_matrix(_ratings(table))
    tiers = {f"i{i}": ("easy" if i < 60 else "hard") for i in range(100)}
    adm = admissibility(m, [m.raters.index("J")], [0, 1, 2], AdmissibilityOptions(n_resamples=50), tiers)
    by = adm["judges"]["J"]["by_tier"]
    assert set(by) == {"easy", "hard"}
    assert [r["n"] for r in by["easy"]["alt_test"]["humans"]] == [60, 60, 60]
    assert by["hard"]["alt_test"]["n_tested"] == 3 and [r["n"] for r in by["hard"]["alt_test"]["humans"]] == [40] * 3
    # a tier smaller than the minimum says so with its size
    adm = admissibility(m, [m.raters.index("J")], [0, 1, 2], AdmissibilityOptions(n_resamples=50, min_items=50),
                        tiers)
    assert adm["judges"]["J"]["by_tier"]["hard"]["sentence"] == "not enough shared items (40)"
    assert set(adm["human_reference_by_tier"]) == {"easy", "hard"}


def _pair_rows(n: int = 40) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        for r in range(3):
            label = ["chosen", "rejected"][(i + (r == 2 and i % 4 == 0)) % 2]
            rows.append({"item": f"c{i}", "rater": f"h{r}", "label": label})
    return rows


def test_cli_agree_admissibility(write_jsonl: Writer, tmp_path: Path) -> None:
    humans = write_jsonl("h.jsonl", _pair_rows())
    preds = [{"case_id": f"c{i}", "judge": "j", "setting": "persona", "order": "AB",
              "choice": "A" if i % 2 == 0 else "B", "status": "ok"} for i in range(40)]
    run = tmp_path / "run"
    write_jsonl("run/predictions.jsonl", preds)
    res = runner.invoke(app, ["agree", str(humans), str(run), "--json", "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    adm = json.loads(res.stdout)["admissibility"]
    assert list(adm["judges"]) == ["j@persona"] and adm["humans"] == ["h0", "h1", "h2"]
    assert adm["judges"]["j@persona"]["sentence"] == WITHIN
    # predictions that carry tiers: the admissibility per tier without --tiers
    write_jsonl("run2/predictions.jsonl", [{**p, "tier": "easy" if i < 20 else "hard", "split": "general"}
                                           for i, p in enumerate(preds)])
    res = runner.invoke(app, ["agree", str(humans), str(tmp_path / "run2"), "--json", "--n-boot", "20",
                              "--min-items", "10"])
    assert res.exit_code == 0, res.output
    by_tier = json.loads(res.stdout)["admissibility"]["judges"]["j@persona"]["by_tier"]
    assert {t: [h["n"] for h in e["alt_test"]["humans"]] for t, e in by_tier.items()} == {"easy": [20] * 3,
                                                                                          "hard": [20] * 3}
    # a human held out as the judge; the table and the sentence in the text output
    res = runner.invoke(app, ["agree", str(humans), "--judge", "h2", "--n-boot", "50", "--min-items", "10"])
    assert res.exit_code == 0, res.output
    assert "Human admissibility" in res.output and "h2: " in res.output
    tiers = write_jsonl("tiers.jsonl", [{"id": f"c{i}", "tier": "easy" if i < 20 else "hard"} for i in range(40)])
    res = runner.invoke(app, ["agree", str(humans), "--judge", "h2", "--json", "--n-boot", "20", "--min-items",
                              "10", "--tiers", str(tiers)])
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.stdout)["admissibility"]["judges"]["h2"]["by_tier"]) == {"easy", "hard"}


@pytest.mark.parametrize(("extra", "message"), [
    (["--judge", "nobody"], "not a rater"),
    (["--epsilon", "1.5"], "--epsilon"),
    (["--min-items", "1"], "--min-items"),
    (["--judge", "h0", "--alignment", "neg-rmse"], "ordered labels"),
    (["--alignment", "f1"], "--alignment"),
    (["--judge", "h0", "--judge", "h1", "--judge", "h2"], "at least one human"),
    (["--judge", "h0", "--tiers", "TIERS"], "no rated item has a tier"),
])
def test_cli_bad_input_exit_2(write_jsonl: Writer, tmp_path: Path, extra: list[str], message: str) -> None:
    humans = write_jsonl("h.jsonl", _pair_rows())
    tiers = write_jsonl("tiers.jsonl", [{"id": "other", "tier": "easy"}])
    out = tmp_path / "out.json"
    args = ["agree", str(humans), "--out", str(out), *[str(tiers) if a == "TIERS" else a for a in extra]]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_judge_in_another_vocabulary_is_refused(write_jsonl: Writer, tmp_path: Path) -> None:
    rows = [{**r, "label": "A" if r["label"] == "chosen" else "B"} for r in _pair_rows()]
    humans = write_jsonl("h.jsonl", rows)
    preds = [{"case_id": f"c{i}", "judge": "j", "setting": "persona", "order": "AB", "choice": "A", "status": "ok"}
             for i in range(40)]
    write_jsonl("run/predictions.jsonl", preds)
    res = runner.invoke(app, ["agree", str(humans), str(tmp_path / "run"), "--n-boot", "10"])
    assert res.exit_code == 2, res.output
    assert "share no category" in res.output and "Traceback" not in res.output


def test_alt_test_function_directly() -> None:
    # one judge column against a code matrix; a human who never overlaps is listed with n = 0
    humans = np.array([[0, 0, -1], [1, 1, -1], [0, 1, -1], [1, 1, 0]])
    judge = np.array([0, 1, 1, 1])
    alt = alt_test(humans, judge, 2, ["a", "b", "c"], AdmissibilityOptions(min_items=2))
    assert [(r["human"], r["n"]) for r in alt["humans"]] == [("a", 4), ("b", 4), ("c", 1)]
    assert alt["n_tested"] == 2 and "excluded" in alt["humans"][2]


def test_stage2_report_has_the_table(tmp_path: Path) -> None:
    """The stage-2 report of the bundled example: relevance.json, .md and .html carry each model's admissibility."""
    from tailorbench.threestage.verbs import relevance

    ex = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"
    report = relevance(human=sorted(ex.glob("ann_*_task3.jsonl")), model=[ex / "illustrative-llm_relevance.jsonl"],
                       n_resamples=50, report_dir=tmp_path, min_items=10)
    adm = report["admissibility"]
    assert list(adm["judges"]) == ["illustrative-llm"] and adm["options"]["alignment"] == "accuracy"
    assert adm["options"]["majority"].startswith("strict majority of 'True'")
    sentence = adm["judges"]["illustrative-llm"]["sentence"]
    assert sentence in (WITHIN, BELOW) or sentence.startswith("not enough shared items")
    assert json.loads((tmp_path / "relevance.json").read_text(encoding="utf-8"))["admissibility"] == adm
    md = (tmp_path / "relevance.md").read_text(encoding="utf-8")
    assert "## Human admissibility of the models" in md and f"illustrative-llm: {sentence}." in md
    assert "Human admissibility" in (tmp_path / "relevance.html").read_text(encoding="utf-8")


def test_stage3_report_has_the_table(tmp_path: Path) -> None:
    """Stage 3 (-2..2 A/B ratings): each judge's alt-test with the neg-rmse alignment, in the JSON and the report."""
    from tailorbench.threestage.verbs import incorporation

    ex = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"
    report = incorporation(tasks=ex / "ab_tasks.jsonl", ratings=[ex / "ab_ratings.jsonl"], n_resamples=50,
                           report_dir=tmp_path)
    adm = report["admissibility"]
    assert adm["options"]["alignment"] == "neg-rmse" and set(adm["judges"]) == set(report["judges"])
    md = (tmp_path / "incorporation.md").read_text(encoding="utf-8")
    assert "## Human admissibility of the judges" in md
    for name, e in adm["judges"].items():
        assert f"Admissibility: {name}: {e['sentence']}." in md
