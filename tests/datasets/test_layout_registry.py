"""Benchmark layouts are registered parts: one registered in a test, with its own splits and tiers, is detected,
loaded, evaluated by `tailor eval` and reported by its own names; native JSONL declares others in a sidecar; an
unknown layout's error lists every layout and what it expects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.datasets import LAYOUTS, Layout, detect_layout, filter_cases, load_benchmark
from tailorbench.datasets.layouts import all_layouts, check_declaration
from tailorbench.errors import ConfigError, DataError
from tests.helpers.pf_data import make_hub, native_row, write_jsonl
from tests.plugins.demo_plugin.tb_demo_plugin import ToneLayout

runner = CliRunner()


# the plugin package's layout (tests/plugins/demo_plugin), registered here in process; the plugin test installs
# the same package and finds it by entry point


@pytest.fixture
def tone_layout() -> Iterator[Layout]:
    """ToneLayout registered for one test (and taken out afterwards)."""
    layout = ToneLayout()
    LAYOUTS.add("tone", layout)
    yield layout
    LAYOUTS.remove("tone")


def make_tone(root: Path, splits: tuple[str, ...] = ("formal", "casual")) -> Path:
    (root / "tone.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "tone.json").write_text("{}", "utf-8")
    for split in splits:
        for tier in ("low", "high"):
            write_jsonl(root / f"{split}-{tier}.jsonl", [
                {"user": f"u{k}", "question": f"{split} {tier} question {k}?",
                 "chosen": f"A {'long ' * (k + 1)}answer for {split}.", "rejected": f"Short {k}."}
                for k in range(3)])
    return root


def test_registered_layout_is_detected_and_loaded_with_its_names(tmp_path: Path, tone_layout: Layout) -> None:
    root = make_tone(tmp_path / "tone")
    assert "tone" in LAYOUTS.names() and tone_layout in all_layouts()
    assert detect_layout(root) == "tone"
    bench = load_benchmark(root)
    assert bench.layout == "tone" and len(bench.cases) == 12
    assert bench.splits == ("formal", "casual") and bench.tiers == ("low", "high")
    stats = bench.stats()
    assert stats["splits"] == ["formal", "casual"] and stats["tiers"] == ["low", "high"]
    assert stats["difficulty"] == ["high", "low"]
    assert stats["rows_per_split_tier"]["casual/high"] == 3
    # filters take the layout's names (case-insensitive) and refuse PersonaFeedback's
    assert {c.tier for c in filter_cases(bench.cases, tiers=["HIGH"], benchmark=bench)} == {"high"}
    with pytest.raises(ConfigError, match=r"unknown tier 'easy' \(this benchmark's tiers: low, high\)"):
        filter_cases(bench.cases, tiers=["easy"], benchmark=bench)


def test_a_registered_class_is_a_layout_and_the_fingerprint_covers_its_files(tmp_path: Path) -> None:
    """An entry point may name the class itself: the registry then holds the class, used as an instance."""
    LAYOUTS.add("tone", ToneLayout)
    try:
        root = make_tone(tmp_path / "tone")
        bench = load_benchmark(root)
        assert bench.layout == "tone" and bench.tiers == ("low", "high")
        assert root / "tone.json" in bench.files and len(bench.files) == 5
        before = bench.fingerprint()
        (root / "formal-low.jsonl").write_text((root / "formal-low.jsonl").read_text() + "\n", "utf-8")
        assert load_benchmark(root).fingerprint() != before  # the bytes, not only the cases
    finally:
        LAYOUTS.remove("tone")


def test_a_layout_reader_is_held_to_its_declared_names(tmp_path: Path, tone_layout: Layout) -> None:
    class Sloppy(ToneLayout):
        tiers = ("low",)
        difficulty = None

    LAYOUTS.add("tone", Sloppy(), replace=True)
    root = make_tone(tmp_path / "tone")
    with pytest.raises(DataError, match=r"unknown tier 'high' for the tone layout \(declared: low\)") as info:
        load_benchmark(root)
    assert info.value.field == "tier"
    skipped = load_benchmark(root, skip_invalid=True)
    assert len(skipped.cases) == 6 and skipped.stats()["skipped_rows"] == 6


def test_declarations_are_checked() -> None:
    class Reserved(ToneLayout):
        tiers = ("low", "all")

    class Twice(ToneLayout):
        splits = ("formal", "formal")

    class BadOrder(ToneLayout):
        difficulty = ("low", "medium")

    for layout in (Reserved(), Twice(), BadOrder()):
        with pytest.raises(ConfigError, match="layout 'tone'"):
            check_declaration(layout)


def test_tailor_eval_reports_the_layouts_splits_and_tiers(tmp_path: Path, tone_layout: Layout) -> None:
    root = make_tone(tmp_path / "tone")
    out = tmp_path / "runs"
    result = runner.invoke(app, ["eval", "--data", str(root), "--judge", "longer", "--judge", "first",
                                 "--out", str(out), "--n-boot", "50", "--no-progress"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "longer__persona" / "results.json").read_text())
    assert list(results["metrics"]) == ["formal", "casual", "all"]
    assert list(results["metrics"]["formal"]) == ["low", "high", "all"]
    assert results["metrics"]["all"]["accuracy"] == 1.0  # the chosen answers are the longer ones
    assert results["benchmark_names"] == {"splits": ["formal", "casual"], "tiers": ["low", "high"]}
    assert results["dataset"]["layout"] == "tone"
    assert results["dataset"]["labels_note"] == ("chosen is the answer the data marks as chosen; the layout does not "
                                                 "say who set the labels")
    manifest = json.loads((out / "longer__persona" / "manifest.json").read_text())
    assert manifest["data_stats"]["layout"] == "tone" and manifest["data_stats"]["tiers"] == ["low", "high"]
    for report in (out / "report.md", out / "longer__persona" / "report.md"):
        table = report.read_text()
        assert "| Formal low | Formal high | Formal avg | Casual low | Casual high | Casual avg | total |" in table
        assert "Specific" not in table and "easy" not in table
    assert "formal/low" in (out / "report.html").read_text()
    # a tier filter by the layout's own names
    one = tmp_path / "one"
    result = runner.invoke(app, ["eval", "--data", str(root), "--judge", "longer", "--tier", "high",
                                 "--split", "casual", "--out", str(one), "--n-boot", "50", "--no-progress"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((one / "results.json").read_text())["metrics"]
    assert list(metrics) == ["casual", "all"] and list(metrics["casual"]) == ["high", "all"]


def test_a_split_without_cases_gets_no_column_but_a_mention(tmp_path: Path, tone_layout: Layout) -> None:
    """A declared split the data does not hold is named under the leaderboard, not shown as a column of dashes;
    with one split left the total stands for its average."""
    root = make_tone(tmp_path / "tone", splits=("casual",))
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--data", str(root), "--judge", "longer", "--out", str(out),
                                 "--n-boot", "50", "--no-progress"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "| judge | setting | Casual low | Casual high | total |" in report and "Formal low" not in report
    assert "declared splits without a judged case get no column (formal)" in report


def test_unknown_layout_lists_every_layout(tmp_path: Path, tone_layout: Layout) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError) as info:
        load_benchmark(tmp_path / "empty")
    message = str(info.value)
    for name in ("hub", "mirror", "native", "scored", "tone"):
        assert f"{name} (" in message
    assert "data/<split>/<tier>.jsonl" in message and "tone.json" in message
    odd = write_jsonl(tmp_path / "odd.jsonl", [{"a": 1}])
    with pytest.raises(DataError, match=r"not a known benchmark layout .*pass the directory") as info:
        load_benchmark(odd)
    assert info.value.line == 1
    known = "hub, mirror, native, personalized-rewardbench, personamem, prefeval, prism, scored"
    with pytest.raises(ConfigError, match=f"unknown benchmark layout 'nope'; known: {known}"):
        load_benchmark(odd, layout="nope")


def test_builtin_layouts_in_detection_order() -> None:
    builtin = {"hub", "mirror", "native", "scored"}
    assert [x.name for x in all_layouts() if x.name in builtin] == ["hub", "mirror", "scored", "native"]
    assert {"hub", "mirror", "native", "scored"} <= set(LAYOUTS.names())


def test_personafeedback_layouts_declare_the_default_names(tmp_path: Path) -> None:
    bench = load_benchmark(make_hub(tmp_path / "hub"))
    assert bench.splits == ("specific", "general") and bench.tiers == ("easy", "medium", "hard")
    assert load_benchmark("demo").tiers == ("easy", "medium", "hard")
    # the hub's spellings are accepted by the filters
    assert filter_cases(bench.cases, splits=["spedific"], tiers=["mid"], benchmark=bench)


def test_native_sidecar_declares_other_names(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bench.jsonl", [native_row(id="a", split="formal", tier="high"),
                                                   native_row(id="b", split="casual", tier="low")])
    with pytest.raises(DataError, match=r"unknown split 'formal'.*bench\.layout\.json") as info:
        load_benchmark(path)
    assert (info.value.line, info.value.field) == (1, "split")
    (tmp_path / "bench.layout.json").write_text(json.dumps({"splits": ["formal", "casual"],
                                                            "tiers": ["low", "high"]}), "utf-8")
    bench = load_benchmark(path)
    assert bench.layout == "native" and bench.splits == ("formal", "casual") and bench.tiers == ("low", "high")
    assert tmp_path / "bench.layout.json" in bench.files  # the declaration is part of the fingerprint
    write_jsonl(path, [native_row(id="a", split="formal", tier="medium")])
    with pytest.raises(DataError, match="unknown tier 'medium'") as info:
        load_benchmark(path)
    assert (info.value.line, info.value.field) == (1, "tier")
    (tmp_path / "bench.layout.json").write_text(json.dumps({"splits": ["all"], "tiers": ["x"]}), "utf-8")
    with pytest.raises(DataError, match=r"bench\.layout\.json.*other than 'all'"):
        load_benchmark(path)


def test_scored_layout_is_detected_and_evaluated(tmp_path: Path) -> None:
    rows = [{"prompt": p, "response": r, "helpfulness": s}
            for p, r, s in [("p1", "a great long answer", 4), ("p1", "bad", 0), ("p2", "fine answer", 4),
                            ("p2", "meh", 1)]]
    path = write_jsonl(tmp_path / "scored.jsonl", rows)
    assert detect_layout(path) == "scored"
    bench = load_benchmark(path)
    assert bench.splits == ("general",) and len(bench.cases) == 2
    assert bench.layout_stats["pairs"] == 2 and {c.tier for c in bench.cases} == {"easy", "medium"}
    assert load_benchmark(path, layout="scored", options={"min_gap": 3.5}).layout_stats["pairs"] == 1
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--data", str(path), "--judge", "longer", "--out", str(out),
                                 "--n-boot", "50", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "| General easy | General medium | total |" in (out / "report.md").read_text()  # no hard case: no column
