"""Personalized RewardBench scored as its authors score it: the output parse of `evaluate_pairwise`, the seeded
A/B placement of `prepare_pairwise_prompts` and `compare_scores` of `evaluation/pointwise.py`
(github.com/Martin-qyma/Personalized-RewardBench, commit a5c6814d22738c264f3c27576f54e50e04e16c10), re-implemented
below from the published scripts and compared item by item. No rows of the benchmark are on this machine: the
pairs are fixtures in the dataset card's shape."""

from __future__ import annotations

import random

from tailorbench.benchmarks.scoring import (
    authors_order_accuracy,
    chosen_rejected_scores,
    pointwise_summary,
    rewardbench_pairwise_choice,
)


def authors_parse(output: str) -> tuple[str, bool]:
    """evaluate_pairwise's per-output parse, as published."""
    prediction_text = output.strip()
    prediction_text = prediction_text.split("</think>")[-1].strip()
    prediction_text = prediction_text.replace('"', "").replace("*", "").strip()
    prediction = None
    if "result:" in prediction_text.lower():
        result_section = prediction_text.lower().split("result:")[1].strip()
        if result_section.startswith("a"):
            prediction = "A"
        elif result_section.startswith("b"):
            prediction = "B"
    parse_failed = prediction is None
    if parse_failed:
        prediction = "A"
    return prediction, parse_failed


OUTPUTS = ["Result: A", "**Result:** B", "<think>Result: B</think>Result: A", 'Result: "b" because', "B is better",
           "result:\n  a", "Result: C", "", "Analysis... RESULT: B. Result: A", "<think>no end Result: B",
           "Result:Alpha", "Result: ", "Reasoning</think>"]


def test_pairwise_parse_matches_the_authors_rule() -> None:
    for output in OUTPUTS:
        assert rewardbench_pairwise_choice(output) == authors_parse(output), output


def test_authors_order_accuracy_uses_their_seeded_placement() -> None:
    ids = [f"c{n}" for n in range(20)]
    random.seed(42)
    placement = {i: "AB" if random.random() < 0.5 else "BA" for i in ids}
    # both orders judged; the judge is right on AB only
    rows = [{"case_id": i, "order": o, "correct": o == "AB"} for i in ids for o in ("AB", "BA")]
    theirs = [placement[i] == "AB" for i in ids]  # correct exactly where the chosen answer sat at A
    assert authors_order_accuracy(rows, placement) == sum(theirs) / len(theirs)


def authors_compare(scored: list[dict[str, object]]) -> dict[str, float]:
    """compare_scores' figures, as published (without the file output)."""
    scores_by_id: dict[str, dict[str, float]] = {}
    for r in scored:
        scores_by_id.setdefault(str(r["id"]), {})[str(r["label"])] = float(r["score"])  # type: ignore[arg-type]
    chosen_wins = rejected_wins = ties = total = 0
    diffs = []
    for scores in scores_by_id.values():
        if "chosen" in scores and "rejected" in scores:
            total += 1
            diffs.append(scores["chosen"] - scores["rejected"])
            if scores["chosen"] > scores["rejected"]:
                chosen_wins += 1
            elif scores["rejected"] > scores["chosen"]:
                rejected_wins += 1
            else:
                ties += 1
    chosen = [float(r["score"]) for r in scored if r["label"] == "chosen"]  # type: ignore[arg-type]
    rejected = [float(r["score"]) for r in scored if r["label"] == "rejected"]  # type: ignore[arg-type]
    return {"comparisons": total, "chosen_wins": chosen_wins, "rejected_wins": rejected_wins, "ties": ties,
            "chosen_win_rate": chosen_wins / total * 100 if total else 0.0,
            "avg_chosen": sum(chosen) / len(chosen), "avg_rejected": sum(rejected) / len(rejected),
            "avg_diff": sum(diffs) / len(diffs)}


def test_pointwise_summary_matches_compare_scores() -> None:
    pairs = [(0.5, 0.2), (0.1, 0.4), (0.3, 0.3), (2.0, -1.0), (-0.5, -0.25)]
    scored = [row for n, (c, r) in enumerate(pairs)
              for row in ({"id": n, "label": "chosen", "score": c}, {"id": n, "label": "rejected", "score": r})]
    ours, theirs = pointwise_summary(pairs), authors_compare(scored)
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert abs(float(ours[key]) - value) < 1e-12, key


def test_scores_of_a_run_in_both_orders() -> None:
    rows = [{"case_id": "c0", "order": "AB", "scores": {"A": 0.9, "B": 0.1}},
            {"case_id": "c0", "order": "BA", "scores": {"A": 0.1, "B": 0.9}},
            {"case_id": "c1", "order": "BA", "scores": {"A": 0.7, "B": 0.2}},
            {"case_id": "c2", "order": "AB", "scores": None}]
    assert chosen_rejected_scores(rows) == [(0.9, 0.1), (0.2, 0.7)]


def authors_calculate_accuracy(results: list[dict[str, object]]) -> dict[str, object]:
    """evaluation/pairwise.py `calculate_accuracy` and `position_bias` of `main` (commit d8a0cdaa7f7b32b0), as
    published; `results` rows carry `pos_in_a`, `prediction` (an unparsed one already set to A), `correct`."""
    total = len(results)
    correct = sum(1 for r in results if r["correct"])
    pos_in_a = [r for r in results if r["pos_in_a"]]
    pos_in_b = [r for r in results if not r["pos_in_a"]]

    def acc(subset: list[dict[str, object]]) -> float:
        return sum(1 for r in subset if r["correct"]) / len(subset) if subset else 0.0

    pred_a = sum(1 for r in results if r["prediction"] == "A")
    pred_b = sum(1 for r in results if r["prediction"] == "B")
    metrics: dict[str, object] = {
        "total": total, "correct": correct, "accuracy": correct / total if total > 0 else 0.0,
        "pos_in_a_count": len(pos_in_a), "pos_in_a_accuracy": acc(pos_in_a),
        "pos_in_b_count": len(pos_in_b), "pos_in_b_accuracy": acc(pos_in_b),
        "pred_a_count": pred_a, "pred_b_count": pred_b}
    metrics["position_bias"] = abs(acc(pos_in_a) - acc(pos_in_b))
    return metrics


def test_report_fields_equal_calculate_accuracy() -> None:
    from tailorbench.benchmarks.scoring import authors_pairwise_summary, authors_pairwise_verdicts

    rng = random.Random(5)
    random.seed(42)
    positions = [random.random() < 0.5 for _ in range(60)]
    outputs = [rng.choice(OUTPUTS) for _ in range(60)]
    ours_in = []
    theirs = []
    for pos_in_a, output in zip(positions, outputs):
        prediction, failed = authors_parse(output)
        theirs.append({"pos_in_a": pos_in_a, "prediction": prediction,
                       "correct": prediction == ("A" if pos_in_a else "B"), "parse_failed": failed})
        pick, our_failed = rewardbench_pairwise_choice(output)
        ours_in.append((pos_in_a, None if our_failed else pick))
    want = authors_calculate_accuracy(theirs)
    got = authors_pairwise_summary(ours_in)
    assert {k: got[k] for k in want} == want
    assert got["failed_parses"] == sum(bool(r["parse_failed"]) for r in theirs) > 0
    # from a run's prediction rows: only the authors' order of each case counts
    rows = [{"case_id": f"c{i}", "order": o, "choice": ("A" if i % 3 else None) if o == "AB" else "B"}
            for i in range(6) for o in ("AB", "BA")]
    orders = {f"c{i}": "AB" if i % 2 else "BA" for i in range(6)}
    verdicts = authors_pairwise_verdicts(rows, orders)
    assert verdicts == [(False, "B"), (True, "A"), (False, "B"), (True, None), (False, "B"), (True, "A")]
