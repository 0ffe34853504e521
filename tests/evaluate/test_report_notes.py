"""Reports that explain themselves: which data (name, fingerprint, human-labelled or illustrative), a definition
under every table, baselines computed from the run's own data, the same notes in Markdown and HTML, a warning
when merged runs saw different data, example verdicts with the raw output, accuracy by length ratio, and the
warnings that can be known before the work printed before it."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tailorbench.datasets import load_benchmark, write_native
from tailorbench.evaluate.metrics import LENGTH_RATIO_BINS, compute_metrics
from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.judges.embedding import EmbeddingJudge
from tailorbench.run_kinds import write_merged_report
from tailorbench.schema import JudgeInput, Verdict
from tests.evaluate import scripted  # noqa: F401  (registers the scripted judges)
from tests.helpers.pf_data import make_hub


def _text(page: str) -> str:
    """What a reader of the HTML sees: tags removed, entities decoded, white space collapsed."""
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    page = re.sub(r"</?(em|strong|code|a)\b[^>]*>", "", page)  # inline markup joins its text
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _md_text(report: str) -> str:
    """A Markdown note as plain text (emphasis, code and link syntax removed)."""
    plain = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", report)
    return " ".join(plain.replace("**", "").replace("*", "").replace("`", "").split())


def test_demo_report_says_what_data_it_is_about_and_computes_its_baselines(tmp_path: Path) -> None:
    run = run_eval(EvalConfig(judge="longer", n_boot=100), tmp_path / "run", progress=False)
    results = json.loads((run / "results.json").read_text())
    assert results["dataset"]["labels"] == "illustrative" and results["dataset"]["name"] == "demo"
    report = (run / "report.md").read_text()
    assert "72-77" not in report  # the PersonaFeedback figure is not this data's
    fingerprint = load_benchmark("demo").fingerprint()
    assert f"| demo | native | 72 | {fingerprint} | illustrative |" in report
    # the longer baseline's own accuracy is what the sentence says
    longer = results["metrics"]["all"]["accuracy"]
    assert f"picking the longer answer scores {100 * longer:.1f}%" in report
    cases = load_benchmark("demo").cases
    n_longer = sum(len(c.chosen) > len(c.rejected) for c in cases)
    assert f"the chosen answer is the longer one in {n_longer} cases" in report


def test_human_labelled_data_is_named_so(tmp_path: Path) -> None:
    data = make_hub(tmp_path / "hub")
    run = run_eval(EvalConfig(data=str(data), judge="first", n_boot=50), tmp_path / "run", progress=False)
    dataset = json.loads((run / "results.json").read_text())["dataset"]
    assert dataset["labels"] == "human-labelled" and dataset["layout"] == "hub" and dataset["rows"] == 18


def test_every_table_has_its_definitions_and_html_carries_the_same_notes(tmp_path: Path) -> None:
    run = run_eval(EvalConfig(judge="scripted:invalid", n_boot=50), tmp_path / "run", progress=False)
    report = (run / "report.md").read_text()
    page = (run / "report.html").read_text()
    for term in ("strict acc.", "position consistency", "length-balanced", "truncated", "skipped rows",
                 "acc. chosen longer / shorter", "fingerprint", "ratio"):
        assert f"*{term}*" in report, term
    assert report.count("Definitions: [docs/metrics.md](docs/metrics.md#") >= 4
    assert 'href="docs/metrics.md#scoring-rule"' in page
    # every paragraph of the Markdown (headings and tables aside) is in the HTML, word for word
    seen = _text(page)
    paragraphs = [p for p in report.split("\n\n") if p.strip() and not p.lstrip().startswith(("#", "|"))]
    assert len(paragraphs) > 10
    for paragraph in paragraphs:
        for line in paragraph.splitlines():
            line = re.sub(r"</?(details|summary)>", " ", line)  # a folded block's summary is the HTML's too
            assert _md_text(line.removeprefix("- ")) in seen, line
    for heading in re.findall(r"^#+ (.+)$", report, flags=re.M)[1:]:
        assert f">{html.escape(heading, quote=False)}</h" in page, heading


def test_example_verdicts_show_the_raw_output(tmp_path: Path) -> None:
    run = run_eval(EvalConfig(judge="scripted:invalid", n_boot=50), tmp_path / "run", progress=False)
    results = json.loads((run / "results.json").read_text())
    examples = results["examples"]
    assert examples["right"] == [] and len(examples["wrong"]) == 3
    assert all(e["raw"] == "no idea" and e["status"] == "invalid" for e in examples["wrong"])
    report = (run / "report.md").read_text()
    assert "## Example verdicts" in report and "| wrong (invalid) |" in report and "| no idea |" in report
    assert "no idea" in (run / "report.html").read_text()
    longer = run_eval(EvalConfig(judge="longer", n_boot=50), tmp_path / "longer", progress=False)
    picked = json.loads((longer / "results.json").read_text())["examples"]
    assert len(picked["right"]) == len(picked["wrong"]) == 3
    predictions = {(p["case_id"], p["order"]): p for p in map(json.loads, (longer / "predictions.jsonl").open())}
    for kind, correct in (("right", True), ("wrong", False)):
        for e in picked[kind]:
            assert predictions[(e["case_id"], e["order"])]["correct"] is correct


def test_accuracy_by_length_ratio_against_hand_counts(tmp_path: Path) -> None:
    run = run_eval(EvalConfig(judge="longer", n_boot=50), tmp_path / "run", progress=False)
    results = json.loads((run / "results.json").read_text())
    cases = load_benchmark("demo").cases
    ratio = np.array([len(c.chosen) / len(c.rejected) for c in cases])
    right = np.array([len(c.chosen) > len(c.rejected) for c in cases], dtype=float)  # `longer`, both orders
    for cell, (label, lo, hi) in zip(results["by_length_ratio"], LENGTH_RATIO_BINS, strict=True):
        inside = (ratio >= lo) & (ratio < hi)
        assert cell["bin"] == label and cell["n"] == int(inside.sum())
        assert cell["accuracy"] == (pytest.approx(right[inside].mean()) if inside.any() else None)
    assert sum(c["n"] for c in results["by_length_ratio"]) == 72
    page = (run / "report.html").read_text()
    assert "<title>accuracy by length ratio</title>" in page and "### Accuracy by length ratio" in (
        run / "report.md").read_text()


def test_length_ratio_bins_of_synthetic_predictions() -> None:
    rows = [{"case_id": f"c{k}", "order": "AB", "correct": k % 2 == 0, "status": "ok", "choice": "A",
             "split": "general", "tier": "easy", "user_id": "u", "len_chosen": lc, "len_rejected": 100}
            for k, lc in enumerate([10, 49, 50, 79, 80, 124, 125, 199, 200, 1000])]
    bins = compute_metrics(rows, n_boot=20)["by_length_ratio"]
    assert [b["n"] for b in bins] == [2, 2, 2, 2, 2]  # lower bounds inclusive
    assert [b["accuracy"] for b in bins] == [0.5] * 5


def test_merged_runs_over_different_data_are_flagged(tmp_path: Path) -> None:
    a = run_eval(EvalConfig(judge="longer", n_boot=50), tmp_path / "a", progress=False)
    subset = tmp_path / "subset.jsonl"
    write_native(load_benchmark("demo").cases[:30], subset)
    b = run_eval(EvalConfig(data=str(subset), judge="first", n_boot=50), tmp_path / "b", progress=False)
    write_merged_report([a, b], tmp_path / "board")
    report = (tmp_path / "board" / "report.md").read_text()
    assert "these runs used different data (2 dataset fingerprints" in report
    assert "**Warning**: these runs used different data" in report
    assert "these runs used different data" in (tmp_path / "board" / "report.html").read_text()
    write_merged_report([a, a], tmp_path / "same")
    assert "different data" not in (tmp_path / "same" / "report.md").read_text()


class _Watching(EmbeddingJudge):
    """The real embedding judge, noting what the runner had printed by the time the judging starts."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        super().__init__(None)
        self.capsys = capsys
        self.before_judging: str | None = None

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        if self.before_judging is None:
            self.before_judging = self.capsys.readouterr().err
        return await super().judge(inputs)


def test_language_warning_comes_before_the_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [c for c in load_benchmark(str(make_hub(tmp_path / "hub"))).cases if "我" in c.question]
    data = tmp_path / "zh.jsonl"
    write_native(cases, data)
    judge = _Watching(capsys)
    judge.spec = "embedding"
    run_eval(EvalConfig(data=str(data), judge="embedding", n_boot=20), tmp_path / "run", progress=False, judge=judge)
    assert judge.before_judging is not None and "English-only all-MiniLM-L6-v2" in judge.before_judging
    assert "English-only" not in capsys.readouterr().err  # printed once, not again at the end
    warnings = json.loads((tmp_path / "run" / "results.json").read_text())["warnings"]
    assert any("English-only" in w for w in warnings)
