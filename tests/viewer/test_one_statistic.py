"""One statistic per label across the CLI, the report and the viewer: for one pair of runs (a judge and the `longer`
baseline on the demo, judged with the same `--n-boot` and `--seed`), `tailor compare` prints, the eval report's
headline holds (results.json `vs_longer`, the judge against `longer` on the same cases) and the viewer's comparison
page shows (in chromium) the same difference, the same 95% interval and the same McNemar counts and p-value,
since all three call `bootstrap.paired_difference` with the same per-cell seed. `compare` prints a legend under
its lines; the viewer's run menus name each run's dataset; two runs over different data get a sentence on the
comparison page instead of figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tailorbench as tb
from tailorbench.cli.app import app
from tailorbench.evaluate.headline import points
from tailorbench.reporting import pct
from tests.helpers.browser import chromium
from tests.helpers.report_runs import demo_runs, personamem_run

N_BOOT = 50  # the demo runs' --n-boot (tests/helpers/report_runs.py)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("one")
    demo = demo_runs(root / "demo")
    return {"judge": demo / "random__persona", "longer": demo / "longer__persona",
            "pm": personamem_run(root / "pm")}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def _compare(a: Path, b: Path) -> tuple[dict[str, Any], str]:
    cli = CliRunner()
    data = cli.invoke(app, ["compare", str(a), str(b), "--n-boot", str(N_BOOT), "--json"])
    text = cli.invoke(app, ["compare", str(a), str(b), "--n-boot", str(N_BOOT)])
    assert data.exit_code == 0 and text.exit_code == 0, data.output + text.output
    return json.loads(data.stdout), text.stdout


def _viewer_rows(browser: Any, bundle: Path) -> list[list[str]]:
    page = browser.new_page()
    page.goto((bundle / "index.html").as_uri() + "#/compare?a=0&b=1")
    page.wait_for_selector("table.paired tbody tr")
    rows = page.evaluate("""() => [...document.querySelectorAll('table.paired tbody tr')]
        .map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))""")
    menu = page.evaluate("() => [...document.querySelectorAll('#compare-a option')].map(o => o.textContent)")
    page.close()
    return [*rows, ["menu", *menu]]


def test_compare_report_and_viewer_give_the_same_numbers(runs: dict[str, Path], browser: Any,
                                                         tmp_path: Path) -> None:
    compared, printed = _compare(runs["judge"], runs["longer"])
    overall = compared["comparisons"][0]["cells"][-1]
    assert overall["cell"] == "all"
    # the report: the judge's difference with `longer` on the same cases, in results.json and the headline table
    results = json.loads((runs["judge"] / "results.json").read_text(encoding="utf-8"))
    block = results["vs_longer"]
    assert results["n_boot"] == N_BOOT
    assert block["n"] == overall["n"]
    assert block["difference"] == pytest.approx(overall["difference"], abs=1e-12)
    assert block["ci"] == pytest.approx(overall["ci"], abs=1e-12)
    report = (runs["judge"] / "report.md").read_text(encoding="utf-8")
    row = (f"| random | persona | {overall['n']} | {pct(block['accuracy'])} | {pct(block['baseline'])} | "
           f"{points(overall['difference'])} | [{points(overall['ci'][0])}, {points(overall['ci'][1])}] |")
    assert row in report.split("## Data")[0]
    # the CLI's own line for the overall cell, with its legend
    line = next(x for x in printed.splitlines() if x.strip().startswith("all "))
    lo, hi = (f"{100 * x:+.1f}" for x in overall["ci"])
    assert f"{100 * overall['difference']:+6.1f} points [{lo}, {hi}]" in line
    test = overall["mcnemar"]
    assert f"McNemar {test['a_only']}:{test['b_only']} p={test['p']:.3g}" in line
    assert "Legend: points = mean over the shared cases" in printed and "McNemar a:b = cases where A" in printed
    # the viewer, over the same two runs with the same --n-boot and --seed
    bundle = tmp_path / "bundle"
    tb.view([runs["judge"], runs["longer"]], bundle=bundle, n_boot=N_BOOT)
    *rows, menu = _viewer_rows(browser, bundle)
    cells = {r[0]: r for r in rows}
    assert list(cells) == [c["cell"] for c in compared["comparisons"][0]["cells"]]
    for cell in compared["comparisons"][0]["cells"]:
        row = cells[cell["cell"]]
        assert row[1] == str(cell["n"])
        assert float(row[2]) == pytest.approx(round(100 * cell["difference"], 1), abs=0.051)
        assert [float(x) for x in row[3].strip("[]").split(", ")] == pytest.approx(
            [round(100 * x, 1) for x in cell["ci"]], abs=0.051)
        assert row[5] == f"{cell['mcnemar']['a_only']} : {cell['mcnemar']['b_only']}"
        assert float(row[6]) == pytest.approx(float(f"{cell['mcnemar']['p']:.3g}"))
    # the run menus name the dataset beside judge / setting
    assert menu[1:] == ["random / persona · demo", "longer / persona · demo"]


def test_viewer_says_when_two_runs_are_over_different_data(runs: dict[str, Path], browser: Any,
                                                           tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    tb.view([runs["judge"], runs["pm"]], bundle=bundle, n_boot=N_BOOT)
    page = browser.new_page()
    page.goto((bundle / "index.html").as_uri() + "#/compare?a=0&b=1")
    page.wait_for_selector("#compare-reason")
    said = page.text_content("#compare-reason") or ""
    body = page.text_content("#compare") or ""
    page.close()
    assert "different data" in said and "demo" in said and "questions_32k.csv" in said
    assert "undefined" not in body
