"""The alt-test as its authors advise it (github.com/nitaytech/AltTest, README FAQ and alt_test.py at the
snapshot the Re-Centering pilot figures in docs/performance.md were checked against): the margin by who the humans
are (experts 0.2, skilled annotators 0.15, crowd workers 0.1), `min_humans_per_instance`, a custom scoring
function (registered, or by entry point), and no silent reading of integer codes as a scale."""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from tailorbench.agreement.admissibility import ANNOTATOR_EPSILON, AdmissibilityOptions, admissibility
from tailorbench.agreement.alignments import ALIGNMENTS
from tailorbench.agreement.matrix import build_matrix
from tailorbench.agreement.records import Label, Rating, RatingSet
from tailorbench.cli.app import app
from tests.agreement.alt_test_reference import accuracy, reference_alt_test

Writer = Callable[[str, list[dict[str, Any]]], Path]
runner = CliRunner()


def neg_mae(pred: Label, anns: Sequence[Label]) -> float:
    """A custom scoring function in the authors' shape: minus the mean absolute distance (higher is better)."""
    return -float(np.mean([abs(float(pred) - float(a)) for a in anns]))


def _table(seed: int, k: int = 5, n_items: int = 90, n_humans: int = 5) -> dict[str, dict[str, int]]:
    """Rater -> item -> integer label: humans who rate a varying number of items each, and the judge J."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, k + 1, n_items)
    out: dict[str, dict[str, int]] = {}
    for h in range(n_humans):
        noisy = np.where(rng.random(n_items) < 0.35, rng.integers(1, k + 1, n_items), truth)
        out[f"h{h}"] = {f"i{i}": int(x) for i, x in enumerate(noisy) if rng.random() < 0.7}
    judge = np.where(rng.random(n_items) < 0.3, rng.integers(1, k + 1, n_items), truth)
    out["J"] = {f"i{i}": int(x) for i, x in enumerate(judge)}
    return out


def _adm(table: dict[str, dict[str, int]], **kw: Any) -> dict[str, Any]:
    rs = RatingSet(sources=["mem"])
    rs.ratings = [Rating(i, r, lab, "model" if r == "J" else "human") for r, d in table.items() for i, lab in d.items()]
    m = build_matrix(rs)
    judges = [m.raters.index("J")]
    humans = [c for c in range(len(m.raters)) if m.raters[c] != "J"]
    return admissibility(m, judges, humans, AdmissibilityOptions(**{"n_resamples": 20, **kw}))


def _same_as_reference(alt: dict[str, Any], ref: dict[str, Any]) -> None:
    tested = {r["human"]: r for r in alt["humans"] if "p" in r}
    assert set(tested) == set(ref["p"]) and tested
    for h, r in tested.items():
        assert r["p"] == pytest.approx(ref["p"][h], abs=1e-10)
        assert r["p_adjusted"] == pytest.approx(ref["adj"][h], abs=1e-10)
        assert r["rejected"] == (h in ref["rejected"])
    assert alt["winning_rate"] == ref["omega"]
    assert alt["advantage_probability"] == pytest.approx(ref["rho"], abs=1e-12)


def test_annotator_margins_are_the_authors() -> None:
    assert ANNOTATOR_EPSILON == {"expert": 0.2, "skilled": 0.15, "crowd": 0.1}


@pytest.mark.parametrize("min_humans", [2, 3, 4])
def test_min_humans_per_instance_equals_reference(min_humans: int) -> None:
    table = _table(11)
    humans = {h: d for h, d in table.items() if h != "J"}
    for seed_eps in (0.1, 0.2):
        alt = _adm(table, alignment="accuracy", epsilon=seed_eps, min_items=10, min_humans=min_humans)
        alt = alt["judges"]["J"]["alt_test"]
        ref = reference_alt_test(table["J"], humans, seed_eps, 0.05, 10, accuracy, min_humans=min_humans)
        _same_as_reference(alt, ref)
        assert alt["min_humans"] == min_humans
    # more humans per item leaves fewer items per human
    n2 = [r["n"] for r in _adm(table, alignment="accuracy", min_items=10)["judges"]["J"]["alt_test"]["humans"]]
    n4 = [r["n"] for r in _adm(table, alignment="accuracy", min_items=10,
                               min_humans=4)["judges"]["J"]["alt_test"]["humans"]]
    assert all(a <= b for a, b in zip(n4, n2)) and sum(n4) < sum(n2)


@pytest.fixture
def registered_mae() -> Iterator[None]:
    ALIGNMENTS.add("neg-mae", neg_mae)
    yield
    ALIGNMENTS.remove("neg-mae")


def test_custom_alignment_registered_equals_reference(registered_mae: None) -> None:
    table = _table(5)
    humans = {h: d for h, d in table.items() if h != "J"}
    for eps in (0.0, 0.15):
        adm = _adm(table, alignment="neg-mae", epsilon=eps, min_items=10)
        assert adm["options"]["alignment"] == "neg-mae"
        _same_as_reference(adm["judges"]["J"]["alt_test"],
                           reference_alt_test(table["J"], humans, eps, 0.05, 10, neg_mae))


def test_custom_alignment_by_entry_point(monkeypatch: pytest.MonkeyPatch, write_jsonl: Writer) -> None:
    """A plugin's entry point in the group tailorbench.alignments names the function; `--alignment NAME` uses it."""
    point = importlib.metadata.EntryPoint(name="plugin-mae", value=f"{__name__}:neg_mae",
                                          group="tailorbench.alignments")
    monkeypatch.setattr(ALIGNMENTS, "_plugins", {"plugin-mae": point})
    try:
        table = _table(3)
        rows = [{"item": i, "rater": r, "label": lab, **({"group": "model"} if r == "J" else {})}
                for r, d in table.items() for i, lab in d.items()]
        path = write_jsonl("r.jsonl", rows)
        res = runner.invoke(app, ["agree", str(path), "--alignment", "plugin-mae", "--min-items", "10",
                                  "--n-boot", "10", "--json"])
        assert res.exit_code == 0, res.output
        adm = json.loads(res.stdout)["admissibility"]
        humans = {h: d for h, d in table.items() if h != "J"}
        _same_as_reference(adm["judges"]["J"]["alt_test"],
                           reference_alt_test(table["J"], humans, 0.2, 0.05, 10, neg_mae))
        res = runner.invoke(app, ["agree", str(path), "--alignment", "no-such-score"])
        assert res.exit_code == 2 and "tailorbench.alignments" in res.output and "Traceback" not in res.output
    finally:
        ALIGNMENTS.remove("plugin-mae")


def test_integer_labels_need_a_declared_scale(write_jsonl: Writer) -> None:
    table = _table(2, k=3)
    rows = [{"item": i, "rater": r, "label": lab, **({"group": "model"} if r == "J" else {})}
            for r, d in table.items() for i, lab in d.items()]
    path = write_jsonl("r.jsonl", rows)
    base = ["agree", str(path), "--min-items", "10", "--n-boot", "10", "--json"]
    res = runner.invoke(app, base)
    assert res.exit_code == 2, res.output
    assert "integers" in res.output and "--alignment accuracy" in res.output and "Traceback" not in res.output
    for declared, want in ((["--alignment", "accuracy"], "accuracy"), (["--alignment", "neg-rmse"], "neg-rmse"),
                           (["--order", "1,2,3"], "neg-rmse")):
        res = runner.invoke(app, [*base, *declared])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["admissibility"]["options"]["alignment"] == want
    # integer labels without a judge: no alt-test, nothing to refuse
    humans_only = write_jsonl("h.jsonl", [r for r in rows if r["rater"] != "J"])
    assert runner.invoke(app, ["agree", str(humans_only), "--n-boot", "10"]).exit_code == 0


def test_annotators_set_the_margin(write_jsonl: Writer) -> None:
    table = _table(4)
    rows = [{"item": i, "rater": r, "label": str(lab), **({"group": "model"} if r == "J" else {})}
            for r, d in table.items() for i, lab in d.items()]
    path = write_jsonl("r.jsonl", rows)
    base = ["agree", str(path), "--min-items", "10", "--n-boot", "10", "--json"]
    for who, eps in ANNOTATOR_EPSILON.items():
        res = runner.invoke(app, [*base, "--annotators", who])
        assert res.exit_code == 0, res.output
        opts = json.loads(res.stdout)["admissibility"]["options"]
        assert opts["epsilon"] == eps and who.rstrip("t") in opts["epsilon_advice"]
    res = runner.invoke(app, base)
    assert json.loads(res.stdout)["admissibility"]["options"]["epsilon"] == 0.2
    for bad in (["--annotators", "crowd", "--epsilon", "0.2"], ["--annotators", "students"],
                ["--min-humans", "1"]):
        res = runner.invoke(app, [*base, *bad])
        assert res.exit_code == 2, (bad, res.output)
        assert "Traceback" not in res.output


def test_help_gives_the_authors_advice() -> None:
    res = runner.invoke(app, ["agree", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert res.exit_code == 0
    text = re.sub(r"[\s│]+", " ", res.output)
    for phrase in ("expert (epsilon 0.2)", "skilled (0.15)", "crowd (0.1)", "--min-humans", "tailorbench.alignments"):
        assert phrase in text, phrase
    assert "0.1-0.15 for expert" not in text


def test_stages_relevance_takes_the_annotators(tmp_path: Path) -> None:
    """The stage-2 report of the bundled example under each advised margin, and its help saying the advice."""
    from tailorbench.threestage.verbs import relevance

    ex = Path(__file__).resolve().parents[2] / "src" / "tailorbench" / "threestage" / "example"
    human, model = sorted(ex.glob("ann_*_task3.jsonl")), [ex / "illustrative-llm_relevance.jsonl"]
    for who, eps in ANNOTATOR_EPSILON.items():
        report = relevance(human=human, model=model, n_resamples=20, report_dir=tmp_path / who, min_items=10,
                           annotators=who)
        assert report["admissibility"]["options"]["epsilon"] == eps
    res = runner.invoke(app, ["stages", "report-relevance", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    text = re.sub(r"[\s│]+", " ", res.output)
    assert "crowd (0.1)" in text and "skilled (0.15)" in text
    res = runner.invoke(app, ["stages", "report-relevance", *[a for h in human for a in ("--human", str(h))],
                              "--votes", str(model[0]), "--annotators", "crowd", "--epsilon", "0.2",
                              "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "contradicts" in res.output
