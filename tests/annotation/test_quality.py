"""Quality per annotator (annotate/quality.py): kappa against scikit-learn's, the leave-self-out majority, the
"n/a" below 10 shared items, median time and gold agreement from stored labels, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from tailorbench.annotation import quality, service
from tailorbench.annotation.db import Database
from tailorbench.annotation.web import create_app
from tailorbench.api import annotate as api_annotate
from tests.annotation.conftest import login


@pytest.mark.parametrize("seed", range(6))
def test_kappa_matches_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    cats = ["A", "B"] if seed % 2 else ["accepted", "uncertain", "rejected"]
    a = [rng.choice(cats) for _ in range(40)]
    b = [x if rng.random() < 0.6 else rng.choice(cats) for x in a]
    assert quality.kappa_against(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_kappa_undefined_cases() -> None:
    assert quality.kappa_against([], []) is None
    assert quality.kappa_against(["A", "A"], ["A", "A"]) is None  # one category: no chance correction


def test_leave_self_out_majority() -> None:
    labels = {"ann": "A", "bob": "B", "cy": "B", "dee": "A"}
    assert quality.leave_self_out_majority(labels, "ann") == "B"  # bob, cy, dee: B B A
    assert quality.leave_self_out_majority(labels, "bob") == "A"  # ann, cy, dee: A B A
    assert quality.leave_self_out_majority({"ann": "A", "bob": "B", "cy": "A"}, "cy") is None  # tie
    assert quality.leave_self_out_majority({"ann": "A"}, "ann") is None


def _items(path: Path, n: int, n_gold: int) -> Path:
    rows = []
    for i in range(n + n_gold):
        row: dict[str, Any] = {"id": f"q{i}", "split": "specific", "user_id": "u", "persona": {"age": 30},
                               "question": f"Question {i}?", "answer_a": f"A{i}", "answer_b": f"B{i}"}
        if i >= n:
            row["gold"] = "A"
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _admin_page(db: Database, pid: int) -> str:
    _, token = service.add_user(db, "boss", "admin")
    r = login(create_app(db), token).get(f"/admin/p/{pid}")
    assert r.status_code == 200, r.text
    return r.text


def _label_all(db: Database, pid: int, uid: int, choose: Any, ms: int) -> None:
    """Label every item the annotator is given: canonical choice `choose(ext_id)`, shown order respected."""
    while True:
        with db.session() as s:
            a = service.next_assignment(s, uid, pid)
            if a is None:
                return
            view = service.assignment_view(s, uid, a.id)
            want = choose(view["item_id"])
            shown = "1" if (want == "A") != bool(a.layout.get("swap")) else "2"
            service.submit(s, uid, a.id, {"choice": shown, "elapsed_ms": str(ms)})


def test_annotator_quality(db: Database, tmp_path: Path) -> None:
    pid = service.create_project(db, "pw", "pairwise", 3, gold_every=5)
    service.import_items(db, "pw", _items(tmp_path / "items.jsonl", 14, 2))
    rng = random.Random(3)
    truth = {f"q{i}": rng.choice("AB") for i in range(14)}
    flips = {"ann": {1, 4}, "bob": {2, 7, 9}, "cy": set()}
    choices: dict[str, dict[str, str]] = {}
    for k, (name, flip) in enumerate(flips.items()):
        uid, _ = service.add_user(db, name, "annotator", ["pw"])
        mine: dict[str, str] = {}

        def choose(ext: str, flip: set[int] = flip, mine: dict[str, str] = mine, bad: bool = name == "bob") -> str:
            if ext not in truth:  # gold (expected "A"): bob misses one
                got = "B" if bad and not any(e not in truth for e in mine) else "A"
            else:
                got = ("B" if truth[ext] == "A" else "A") if int(ext[1:]) in flip else truth[ext]
            mine[ext] = got
            return got

        _label_all(db, pid, uid, choose, 1000 * (k + 1))
        choices[name] = mine
    got = quality.annotator_quality(db, pid)
    assert set(got) == set(flips)
    for name in flips:
        others = [o for o in flips if o != name]
        mine, theirs = [], []
        for ext in truth:
            votes = Counter(choices[o][ext] for o in others).most_common()
            if len(votes) == 1 or votes[0][1] > votes[1][1]:
                mine.append(choices[name][ext])
                theirs.append(votes[0][0])
        q = got[name]
        assert q["labels"] == 16 and q["shared_items"] == 14
        assert q["kappa"] == pytest.approx(cohen_kappa_score(mine, theirs))
        # the page's figure (every label of theirs "took" k + 1 s) beside the server's own (well under 1 s here)
        assert q["median_client_seconds"] == float(list(flips).index(name) + 1)
        assert q["median_seconds"] is not None and q["median_seconds"] < 1.0
        assert q["gold_items"] == 2
        assert q["gold_agreement"] == (0.5 if name == "bob" else 1.0)
    # the CLI twin carries the same block; the admin page shows it
    progress = api_annotate.progress("pw", db=db.url)
    assert progress.quality == got
    html = _admin_page(db, pid)
    assert f"{got['ann']['kappa']:.2f} (14 shared)" in html and "50% of 2" in html and " · 3.0 s" in html


def test_kappa_waits_for_ten_shared_items(db: Database, tmp_path: Path) -> None:
    pid = service.create_project(db, "few", "pairwise", 2)
    service.import_items(db, "few", _items(tmp_path / "items.jsonl", 6, 0))
    for name in ("ann", "bob"):
        uid, _ = service.add_user(db, name, "annotator", ["few"])
        _label_all(db, pid, uid, lambda ext: "A", 500)
    got = quality.annotator_quality(db, pid)
    assert got["ann"]["shared_items"] == 6 and got["ann"]["kappa"] is None
    assert "n/a (6 shared)" in _admin_page(db, pid)
    assert got["ann"]["gold_agreement"] is None and got["ann"]["median_client_seconds"] == 0.5
