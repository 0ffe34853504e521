"""Run directories of every kind for the viewer's tests, built once per session: a pairwise run whose verdicts hold
every status in both orders (the `viewmix` judge below), a `longer` run on the same data (the comparison), a
gen-eval run (its generations written beforehand, so no model is called), a stage report directory (the bundled
example study) and a train-rm-like output directory (`OUT/eval/epoch-N`). The data holds model-written HTML
(`<script>`, `<img onerror>`) in an answer and in a judge output, per-annotator labels, a persona with nested
sections, rows repeated and contradicted across tiers, and a training-overlap block in the manifest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tailorbench.judges.base import JudgeBase, JudgeOptions, register_judge
from tailorbench.schema import JudgeInput, Usage, Verdict

XSS = '<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">'
USERS = ("u1", "u2", "u3", "u4", "u5")
SPLITS, TIERS = ("specific", "general"), ("easy", "medium", "hard")


def _persona(user: str) -> dict[str, Any]:
    return {"name": f"Person {user}", "demographics": {"age": 30 + len(user), "city": "Lisbon"},
            "preferences": {"food": ["vegetarian", "spicy"], "travel": {"style": "slow", "budget": "low"}}}


def _rows() -> list[dict[str, Any]]:
    rows = []
    k = 0
    for split in SPLITS:
        for tier in TIERS:
            for _ in range(5):
                user = USERS[k % len(USERS)]
                chosen = f"A thoughtful answer number {k} for {user}." + (" " + XSS if k == 0 else "")
                rows.append({"id": f"c{k:02d}", "split": split, "tier": tier, "user_id": user,
                             "persona": _persona(user),
                             "question": f"Question {k}: how should I spend the weekend?"
                                         + (" needle" if k % 7 == 3 else ""),
                             "chosen": chosen, "rejected": f"A short reply {k}.",
                             "meta": {"annotator_labels": [{"annotator": "h1", "choice": "chosen"},
                                                           {"annotator": "h2", "choice": "rejected"}]}
                             if k % 5 == 0 else {}})
                k += 1
    # c30 repeats c01's pair in another tier; c31 is c02's pair with the labels swapped
    rows.append({**rows[1], "id": "c30", "tier": "hard", "meta": {}})
    rows.append({**rows[2], "id": "c31", "tier": "hard", "chosen": rows[2]["rejected"], "rejected": rows[2]["chosen"],
                 "meta": {}})
    return rows


#: each case's chosen answer, so the scripted judge knows which order it sees (a real judge never does)
CHOSEN = {r["id"]: r["chosen"] for r in _rows()}


class MixJudge(JudgeBase):
    """Every verdict status in both orders, fixed by the case number (k % 6): 0 picks A twice (right in one
    order only: order-inconsistent), 1 right twice, 2 wrong twice, 3 invalid then right, 4 failed then abstained,
    5 right then wrong with scores, latency, tokens and cost."""

    batch_size = 8

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        return [self._one(i) for i in inputs]

    @staticmethod
    def _one(item: JudgeInput) -> Verdict:
        k = int(item.case_id[1:])
        ab = item.answer_a == CHOSEN[item.case_id]  # the chosen answer is A
        right, wrong = ("A", "B") if ab else ("B", "A")
        usage = Usage(prompt_tokens=100 + k, completion_tokens=3, cost_usd=0.0001 * k)
        mode = k % 6
        if mode == 0:
            return Verdict(choice="A", raw=f"Answer A. {XSS}" if k == 0 else "Answer A.", latency_s=0.5, usage=usage)
        if mode == 1:
            return Verdict(choice=right, raw=f"Answer {right}.", latency_s=0.25, usage=usage, cached=True)
        if mode == 2:
            return Verdict(choice=wrong, raw=f"Answer {wrong}.", latency_s=0.25, usage=usage)
        if mode == 3:
            if ab:
                return Verdict(status="invalid", raw="I cannot decide between them", error="no verdict found")
            return Verdict(choice=right, raw=f"Answer {right}.")
        if mode == 4:
            if ab:
                return Verdict(status="failed", error="server: HTTP 500: boom (gave up after 2 attempts)")
            return Verdict(status="abstain", scores={"A": 0.5, "B": 0.5})
        choice = right if ab else wrong
        return Verdict(choice=choice, scores={"A": 0.9 if choice == "A" else 0.1, "B": 0.1 if choice == "A" else 0.9},
                       latency_s=1.5, usage=usage, truncated=not ab)


@register_judge("viewmix")
def _viewmix(arg: str | None, options: JudgeOptions) -> MixJudge:
    return MixJudge()


@dataclass
class Runs:
    root: Path
    data: Path
    mixed: Path
    longer: Path
    gen: Path
    stage: Path
    train: Path

    def predictions(self, run: Path | None = None) -> list[dict[str, Any]]:
        path = (run or self.mixed) / "predictions.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_data(path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")


def _add_training_overlap(run: Path) -> None:
    """As a judge that declared its training data leaves it: in-training and persona-seen cases."""
    manifest_path = run / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["config"]["training_overlap"] = {
        "source": "train.jsonl", "training_pairs": 2, "training_personas": 1, "swapped": 0,
        "counts": {"in-training": 2, "persona-seen": 3},
        "cases": {"c01": "in-training", "c07": "in-training", "c02": "persona-seen", "c03": "persona-seen",
                  "c04": "persona-seen"}}
    manifest["config"]["judge_options"] = {"api_key": "sk-live-SECRET123", "base_url":
                                           "https://user:hunter2@api.example.com/v1"}
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def _gen_eval(data: Path, out: Path) -> None:
    from tailorbench.datasets import load_benchmark
    from tailorbench.geneval import GenEvalConfig
    from tailorbench.geneval.generate import GENERATIONS, MODEL, PhraseCache, chosen_rows
    from tailorbench.geneval.run import run_gen_eval, select_cases

    config = GenEvalConfig(data=str(data), model="openai:unused@http://127.0.0.1:9/v1", judge="longer",
                           per_tier=2, validate_cases=0, n_boot=20)
    cases = select_cases(config, load_benchmark(str(data)))
    rows = chosen_rows(cases, PhraseCache())
    by_id = {c.id: c for c in cases}
    rows += [{**r, "role": MODEL, "source": config.model, "answer": f"Generated: {by_id[r['case_id']].rejected} {XSS}",
              "length": len(by_id[r["case_id"]].rejected)} for r in rows]
    out.mkdir(parents=True)
    (out / GENERATIONS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_gen_eval(config, out, resume=True, progress=False)


def build_runs(root: Path) -> Runs:
    from tailorbench.evaluate.results import compute_results
    from tailorbench.evaluate.runner import EvalConfig, run_eval
    from tailorbench.files import write_json_atomic
    from tailorbench.threestage.verbs import run_example

    root.mkdir(parents=True, exist_ok=True)
    data = root / "data.jsonl"
    _write_data(data)
    mixed = run_eval(EvalConfig(data=str(data), judge="viewmix", n_boot=20), root / "mixed", progress=False)
    _add_training_overlap(mixed)
    write_json_atomic(mixed / "results.json", compute_results(mixed))
    longer = run_eval(EvalConfig(data=str(data), judge="longer", n_boot=20), root / "longer", progress=False)
    gen = root / "gen"
    _gen_eval(data, gen)
    stage = root / "stage"
    run_example(stage, n_resamples=20, interventions=False)
    train = root / "train"
    shutil.copytree(longer, train / "eval" / "epoch-1")
    shutil.copytree(mixed, train / "eval" / "epoch-2")
    for index in train.glob("eval/*/.view-index.json"):
        index.unlink()
    return Runs(root, data, mixed, longer, gen, stage, train)


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    yield build_runs(tmp_path_factory.mktemp("view") / "runs")
