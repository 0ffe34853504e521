"""From first person to third person: the arena's pairs exported as an annotation project's items, imported
into a real annotation database, judged by simulated annotators for the voter, exported; the first-vs-third-person
agreement through `tailor agree` (kappas with intervals); and the alt-test's single-expert variant (the voter as
expert) checked against scipy's one-sided t-test and statsmodels' Benjamini-Yekutieli correction, and run from
the files by `tailor agree --expert first-person` with the same result."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Item
from tailorbench.arena.store import ArenaStore, resolve_url
from tailorbench.arena.third_person import first_person_path, judge_labels, self_stand_in
from tailorbench.cli.app import app
from tests.arena.exported import run_demo

#: how often each simulated annotator picks what the voter picked
ANNOTATORS = {"ann1": 0.9, "ann2": 0.75, "ann3": 0.6}


@pytest.fixture(scope="module")
def demo_arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo whose decisive votes hold both sides: the draws are seeded by participant ids, which are random,
    and a demo whose voters all chose model_a's answer (it happened) has no first-person kappa to test."""
    from tailorbench.arena.export import decisive_votes

    for attempt in range(5):
        folder = run_demo(tmp_path_factory.mktemp(f"arena_third{attempt}"))
        store = ArenaStore(resolve_url(None, folder))
        try:
            votes, _counts = decisive_votes(store)
        finally:
            store.dispose()
        if {v.outcome.outcome for v in votes} >= {"a", "b"}:
            return folder
    raise AssertionError("five demos in a row had decisive votes for one side only")


def _annotate(db: Database, project: str, voter: dict[str, str]) -> None:
    """Each annotator answers every item given: the voter's side with its probability, else the other."""
    rng = random.Random(3)
    pid = next(p["id"] for p in service.list_projects(db) if p["name"] == project)
    for name, p in ANNOTATORS.items():
        uid = service.add_user(db, name, "annotator", [project])[0]
        while True:
            with db.session() as s:
                a = service.next_assignment(s, uid, pid)
                if a is None:
                    break
                ext_id = a.item[0] if a.item is not None else _ext_id(s, a.id)
                side = voter[ext_id] if rng.random() < p else {"A": "B", "B": "A"}[voter[ext_id]]
                shown = {"A": "1", "B": "2"}[side] if not a.layout["swap"] else {"A": "2", "B": "1"}[side]
                service.submit(s, uid, a.id, {"choice": shown})


def _ext_id(s: Any, assignment_id: int) -> str:
    """The item of a resumed assignment (a new one carries it)."""
    from tailorbench.annotation.models import Assignment

    a = s.get(Assignment, assignment_id)
    item = s.get(Item, a.item_id)
    return str(item.ext_id)


def test_third_person_round_trip_and_agreement(demo_arena: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    items = tmp_path / "pairs.jsonl"
    got = runner.invoke(app, ["arena", "export", str(demo_arena), "--output-format", "annotate", "--out", str(items),
                              "--json"])
    assert got.exit_code == 0, got.output
    summary = json.loads(got.stdout)
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    labels = [json.loads(line) for line in first_person_path(items).read_text(encoding="utf-8").splitlines()]
    assert summary["exported"] == len(rows) == len(labels) and summary["first_person"] == str(first_person_path(items))
    assert all("chosen" not in r and r["persona"] and r["answer_a"] != r["answer_b"] for r in rows)
    voter = {r["item"]: r["label"] for r in labels}
    # positions are the battle's (answer_a is model_a's answer), not the vote's: the label is the side voted for
    # in those positions (a set check, {"A", "B"}, failed on a demo whose voters all chose model_a's answer)
    store = ArenaStore(resolve_url(None, demo_arena))
    try:
        battles = {v.outcome.battle_id: v for v in store.voted_battles()}
    finally:
        store.dispose()
    for r in rows:
        v = battles[r["meta"]["battle"]]
        assert (r["answer_a"], r["answer_b"]) == (v.answer_a, v.answer_b)
        assert voter[r["id"]] == v.outcome.outcome.upper() and voter[r["id"]] in ("A", "B")

    db = Database(f"sqlite:///{tmp_path / 'annotate.sqlite'}")
    try:
        service.create_project(db, "arena-3p", "pairwise", len(ANNOTATORS), "", 1000)
        service.import_items(db, "arena-3p", items)
        _annotate(db, "arena-3p", voter)
        service.export(db, "arena-3p", tmp_path / "export")
    finally:
        db.dispose()
    ratings = [json.loads(line) for line in (tmp_path / "export" / "ratings.jsonl").read_text().splitlines()]
    assert {r["rater"] for r in ratings} == set(ANNOTATORS) and len(ratings) == len(rows) * len(ANNOTATORS)

    agree = runner.invoke(app, ["agree", str(first_person_path(items)), str(tmp_path / "export" / "ratings.jsonl"),
                                "--json"])
    assert agree.exit_code == 0, agree.output
    report = json.loads(agree.stdout)
    with_voter = [p for p in report["pairwise_cohen_kappa"] if "first-person" in (p["a"], p["b"])]
    assert {p["b"] if p["a"] == "first-person" else p["a"] for p in with_voter} == set(ANNOTATORS)
    for p in with_voter:  # every first-vs-third-person kappa has its bootstrap interval around it
        assert p["n"] == len(rows) and p["ci"][0] <= p["kappa"] <= p["ci"][1]

    # the judge: a run over the benchmark export of the same votes (same case ids)
    bench = tmp_path / "bench.jsonl"
    assert runner.invoke(app, ["arena", "export", str(demo_arena), "--out", str(bench)]).exit_code == 0
    run = tmp_path / "run"
    ev = runner.invoke(app, ["eval", "--data", str(bench), "--judge", "longer", "--out", str(run), "--n-boot", "50",
                             "--no-progress"])
    assert ev.exit_code == 0, ev.output
    judged: dict[str, str] = {}
    for line in (run / "predictions.jsonl").read_text().splitlines():
        p = json.loads(line)
        if p.get("order", "AB") == "AB" and p.get("choice") in ("A", "B"):
            judged[p["case_id"]] = "chosen" if p["choice"] == "A" else "rejected"
    judge = judge_labels(voter, judged)
    assert judge and set(judge) <= set(voter)
    annotators: dict[str, dict[str, str]] = {}
    for r in ratings:
        annotators.setdefault(r["rater"], {})[r["item"]] = r["label"]
    _check_self_stand_in(voter, annotators, judge)

    # the same test from the files, as a user runs it: `tailor agree --expert first-person`
    judge_file = tmp_path / "judge.jsonl"
    judge_file.write_text("".join(json.dumps({"item": i, "rater": "longer", "label": label, "group": "model"}) + "\n"
                                  for i, label in judge.items()), encoding="utf-8")
    agreed = runner.invoke(app, ["agree", str(first_person_path(items)), str(tmp_path / "export" / "ratings.jsonl"),
                                 str(judge_file), "--expert", "first-person", "--annotators", "crowd",
                                 "--min-items", "10", "--n-boot", "50", "--json"])
    assert agreed.exit_code == 0, agreed.output
    block = json.loads(agreed.stdout)["single_expert"]
    direct = self_stand_in(voter, annotators, judge, min_items=10)
    got = block["judges"]["longer"]
    assert block["expert"] == "first-person" and block["humans"] == sorted(ANNOTATORS)
    assert block["options"]["epsilon"] == direct["epsilon"] == 0.1
    for mine, theirs in zip(got["humans"], direct["humans"], strict=True):  # the items in another order: to 1e-12
        assert mine.keys() == theirs.keys() and mine["human"] == theirs["human"] and mine["n"] == theirs["n"]
        assert {k: v for k, v in mine.items() if k not in ("human", "rejected")} == pytest.approx(
            {k: v for k, v in theirs.items() if k not in ("human", "rejected")}, rel=1e-12, abs=1e-12)
        assert mine.get("rejected") == theirs.get("rejected")
    assert got["winning_rate"] == direct["winning_rate"]
    assert got["passed"] == direct["passed"] and got["n_tested"] == direct["n_tested"]
    shown = runner.invoke(app, ["agree", str(first_person_path(items)), str(tmp_path / "export" / "ratings.jsonl"),
                                str(judge_file), "--expert", "first-person", "--annotators", "crowd",
                                "--min-items", "10", "--n-boot", "50"])
    assert shown.exit_code == 0 and "Single-expert alt-test (expert: first-person" in shown.output, shown.output
    wrong = runner.invoke(app, ["agree", str(judge_file), str(first_person_path(items)), "--expert", "longer"])
    assert wrong.exit_code == 2 and "--expert 'longer' is not a human rater" in wrong.output, wrong.output


def _check_self_stand_in(voter: dict[str, str], annotators: dict[str, dict[str, str]], judge: dict[str, str]) -> None:
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    res = self_stand_in(voter, annotators, judge, min_items=10)
    assert res["epsilon"] == 0.1 and res["epsilon_from"] == "crowd" and res["n_tested"] == len(ANNOTATORS)
    ps = []
    for row in res["humans"]:
        shared = [i for i in voter if i in judge and i in annotators[row["human"]]]
        s_f = np.array([judge[i] == voter[i] for i in shared], dtype=float)
        s_h = np.array([annotators[row["human"]][i] == voter[i] for i in shared], dtype=float)
        d = (s_h >= s_f).astype(float) - (s_f >= s_h).astype(float)
        assert row["n"] == len(shared) and row["rho_f"] == pytest.approx(float((s_f >= s_h).mean()))
        ref = stats.ttest_1samp(d, 0.1, alternative="less")
        assert row["p"] == pytest.approx(float(ref.pvalue), rel=1e-6, abs=1e-12)
        ps.append(float(ref.pvalue))
    adjusted = multipletests(ps, method="fdr_by")[1]
    assert [r["p_adjusted"] for r in res["humans"]] == pytest.approx(list(adjusted), rel=1e-6)
    omega = sum(a <= 0.05 for a in adjusted) / len(adjusted)
    assert res["winning_rate"] == pytest.approx(omega) and res["passed"] == (omega >= 0.5)
