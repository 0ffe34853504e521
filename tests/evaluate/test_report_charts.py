"""The report's charts and page pieces, read as SVG and HTML text (the browser measures the pages in
tests/viewer/test_pages_fit.py): split/tier labels and legend entries are whole names (before: `reca/32k` for each
PersonaMem question type, legends cut to 28 characters, stage bar labels to 32), every leaderboard row has its own
colour and the palette's colours differ by at least 25 in CIELAB (before: 10.5, `#4e79a7` beside `#1f77b4`), the
demo's ten-row chart fits a 1,280 px window (before: 1,412 px), and every table and chart sits in its own
scroll box on a page that declares a viewport."""

from __future__ import annotations

import html
import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from tailorbench.evaluate.metrics import report_names
from tailorbench.evaluate.report import render_html
from tailorbench.evaluate.report_charts import svg_chart, svg_ratio_chart
from tailorbench.evaluate.report_rows import result_cell
from tailorbench.reporting import PALETTE, colour, html_page, html_table, svg_bars, text_width
from tailorbench.run_kinds import RUN_KINDS
from tests.helpers.report_runs import DEMO_JUDGES, DEMO_SETTINGS, demo_runs, personamem_run

#: the room a chart has in report.html at 1,280 px (the page's 2em margins at 16 px)
DESKTOP_ROOM = 1280 - 2 * 32


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = demo_runs(tmp_path_factory.mktemp("charts") / "demo")
    return [RUN_KINDS.get("pairwise").load_results(d) for d in sorted(out.iterdir()) if (d / "manifest.json").is_file()]


@pytest.fixture(scope="module")
def personamem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return RUN_KINDS.get("pairwise").load_results(personamem_run(tmp_path_factory.mktemp("charts") / "pm"))


def _texts(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _width(svg: str) -> float:
    match = re.match(r'<svg[^>]* width="([0-9.]+)"', svg)
    assert match, svg[:200]
    return float(match.group(1))


def _lab(colour: str) -> tuple[float, float, float]:
    """sRGB hex -> CIELAB (D65)."""
    def linear(c: float) -> float:
        return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92

    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_the_palette_colours_are_distinct() -> None:
    assert len(set(PALETTE)) == len(PALETTE) == 16
    gaps = [(sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b), strict=True)) ** 0.5, a, b)
            for a, b in itertools.combinations(PALETTE, 2)]
    assert min(gaps)[0] >= 25, min(gaps)
    # beyond the palette no two rows share a colour either
    assert len({colour(k) for k in range(64)}) == 64
    assert all(re.fullmatch(r"#[0-9a-f]{6}", colour(k)) for k in range(64))


def test_personamem_split_names_are_whole_column_labels(personamem: dict[str, Any]) -> None:
    svg = svg_chart([personamem])
    texts = _texts(svg)
    splits, tiers = report_names([personamem])
    cells = [f"{s}/{t}" for s in splits for t in tiers if result_cell(personamem, s, t)]
    assert len(cells) == 3
    for cell in cells:
        assert cell in texts, (cell, texts)
    assert "first / persona" in texts
    assert not [t for t in texts if "…" in t]
    # the labels do not fit a column of one bar: they are turned, and the chart is tall and wide enough for them
    assert 'transform="rotate(-40' in svg
    height = re.search(r'<svg[^>]* height="([0-9.]+)"', svg)
    assert height is not None
    assert float(height.group(1)) >= 220 + 20 + max(text_width(c) for c in cells) * 0.64


def test_the_demo_chart_gives_each_row_a_colour_and_fits_a_desktop_window(demo: list[dict[str, Any]]) -> None:
    assert len(demo) == len(DEMO_JUDGES) * len(DEMO_SETTINGS) == 10
    svg = svg_chart(demo)
    assert _width(svg) <= DESKTOP_ROOM, _width(svg)  # 1,412 px before
    fills: dict[str, set[str]] = {}
    for fill, tip in re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"><title>([^<]*)</title>', svg):
        fills.setdefault(html.unescape(tip).split(" specific/")[0].split(" general/")[0], set()).add(fill)
    assert len(fills) == 10 and all(len(f) == 1 for f in fills.values())
    assert len({next(iter(f)) for f in fills.values()}) == 10  # one colour per row, none shared
    texts = _texts(svg)
    for judge in DEMO_JUDGES:
        for setting in DEMO_SETTINGS:
            assert f"{judge} / {setting}" in texts
    for cell in ("specific/easy", "specific/medium", "general/hard"):
        assert cell in texts
    ratio = svg_ratio_chart(demo)
    assert _width(ratio) <= DESKTOP_ROOM and "random:7 / persona" in _texts(ratio)


def test_long_judge_names_stay_whole_in_the_legends(demo: list[dict[str, Any]]) -> None:
    long = "llm:Qwen/Qwen2.5-72B-Instruct@http://gpu-node-17.example.org:8000/v1"
    runs = [{**demo[0], "judge": long}, *demo[1:3]]
    for svg in (svg_chart(runs), svg_ratio_chart(runs)):
        label = f"{long} / {demo[0]['setting']}"
        assert label in _texts(svg)
        assert _width(svg) >= 40 + 14 + text_width(label)  # the frame holds it


def test_stage_bar_labels_are_whole() -> None:
    label = "qwen2.5-72b-instruct (model, the held-out users' majority)"
    svg = svg_bars([(label, 0.5, 0.4, 0.6), ("bm25", None, None, None)], title="F1 vs the human majority")
    assert label in _texts(svg) and "bm25" in _texts(svg)
    end = re.search(r'<text x="([0-9.]+)" y="[0-9.]+" font-size="11" text-anchor="end">', svg)
    assert end is not None and float(end.group(1)) >= text_width(label)  # it ends at x and starts in the frame


def test_tables_and_charts_scroll_in_their_own_box(personamem: dict[str, Any], demo: list[dict[str, Any]]) -> None:
    assert html_table(["a"], [["1"]]).startswith("<div class='scroll'><table>")
    page = html_page("t", "")
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in page
    assert ".scroll{overflow-x:auto;max-width:100%" in page
    for runs in ([personamem], demo):
        report = render_html(runs, "title")
        assert report.count("<table") == report.count("<div class='scroll'><table") > 3
        assert report.count("<svg") == report.count("<div class='scroll'><svg") >= 2


def test_the_viewer_stylesheet_carries_the_scroll_box() -> None:
    css = (Path(__file__).resolve().parents[2] / "src/tailorbench/viewer/static/view.css").read_text(encoding="utf-8")
    assert ".scroll{overflow-x:auto;max-width:100%" in css
