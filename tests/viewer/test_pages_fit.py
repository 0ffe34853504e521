"""Pages that fit the window, in Debian's chromium (Playwright) at 1280x800 and at 390x844 on a phone: report.html
of the demo (ten leaderboard rows) and of a PersonaMem-shaped run (the benchmark's many tiers make the widest
leaderboard), the built-in suite's leaderboard.html (five judges x three settings over four benchmarks), gen-eval's
report, the stage reports and summary.html, and every page of the viewer over runs of
every kind never scroll sideways: the document is exactly as wide as the window. Before: report.html 1,412 px wide
at 1,280 on the demo and 7,762 px on PersonaMem; the viewer's leaderboard 14,497 px and its runs page 7,762 px at
both sizes; on the phone its cases page 749 px (901 on PersonaMem), case pages 722 to 758 px, compare 498 to 523,
users 425, a user 473. Wide tables and charts scroll in their own box, and no chart label is cut by its chart's
frame. Full-page screenshots (the first 6,000 px of longer pages) go to $TAILORBENCH_TEST_OUTPUT/fit
(runs/test-output/fit), printed by each test."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tailorbench as tb
from tests.helpers.browser import chromium
from tests.helpers.report_runs import demo_runs, personamem_run, suite_run
from tests.viewer.conftest import Runs

SHOTS = Path(os.environ.get("TAILORBENCH_TEST_OUTPUT", Path(__file__).resolve().parents[2] / "runs" / "test-output"))
SHOTS = SHOTS / "fit"
SHOT_HEIGHT = 6000
#: (name, Playwright context options): a desktop window and a phone
SIZES = {
    "desktop_1280x800": {"viewport": {"width": 1280, "height": 800}},
    "phone_390x844": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                      "device_scale_factor": 2},
}

#: what the page measures: the document's width, the window's, and whatever sticks out of the window without a
#: scrolling box around it (to name the culprit when the widths differ)
MEASURE = """() => {
  const W = window.innerWidth, out = [];
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= W + 1) continue;
    let a = e.parentElement, boxed = false;
    while (a && a !== document.body) {
      if (getComputedStyle(a).overflowX !== 'visible') { boxed = true; break; }
      a = a.parentElement;
    }
    if (!boxed) out.push(e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined
      ? '.' + e.className : '') + ' right ' + Math.round(r.right));
  }
  return {scroll: document.documentElement.scrollWidth, inner: W, out: out.slice(0, 5)};
}"""

#: chart texts that stick out of their own chart's frame (a label the SVG would cut)
CUT_LABELS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg')) {
    const f = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.left < f.left - 1 || r.right > f.right + 1 || r.top < f.top - 1 || r.bottom > f.bottom + 1)
        out.push(t.textContent);
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fit")
    return {"demo": demo_runs(root / "demo"), "personamem": personamem_run(root / "pm"),
            "suite": suite_run(root / "suite")}


def _page(browser: Any, size: str) -> Any:
    context = browser.new_context(**SIZES[size])
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def _fits(page: Any, size: str, name: str) -> None:
    """The page is as wide as the window (no sideways scroll), its screenshot taken."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name}_{size}.png"
    # the whole page, or its first 6,000 px (the merged leaderboard runs to 20,000: seconds per shot)
    short = page.evaluate("document.documentElement.scrollHeight") <= SHOT_HEIGHT
    page.screenshot(path=str(shot), full_page=True, scale="css",
                    clip=None if short else {"x": 0, "y": 0, "width": SIZES[size]["viewport"]["width"],
                                             "height": SHOT_HEIGHT})
    print(f"screenshot: {shot}")
    got = page.evaluate(MEASURE)
    width = SIZES[size]["viewport"]["width"]
    # on a phone a page wider than the window widens the layout viewport: innerWidth grows with it
    assert got["scroll"] == got["inner"] == width, (name, size, got, str(shot))
    assert not page.errors, page.errors


#: the HTML reports beside report.html that share its page (reporting.html_page): gen-eval's, the stages', summary
OTHER_PAGES = {"gen-eval": ("gen", "report.html"), "summary": ("stage", "summary.html"),
               "extraction": ("stage", "extraction.html"), "relevance": ("stage", "relevance.html"),
               "incorporation": ("stage", "incorporation.html")}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("report", ["demo", "personamem", "suite", *OTHER_PAGES])
def test_report_pages_fit_the_window(browser: Any, reports: dict[str, Path], runs: Runs, report: str,
                                     size: str) -> None:
    print(f"screenshots in {SHOTS}")
    if report in OTHER_PAGES:
        folder, name = OTHER_PAGES[report]
        path = getattr(runs, folder) / name
    else:
        path = reports[report] / ("leaderboard.html" if report == "suite" else "report.html")
    page = _page(browser, size)
    page.goto(path.as_uri())
    _fits(page, size, f"report_{report}")
    assert page.evaluate(CUT_LABELS) == []
    if report in ("demo", "personamem") and size.startswith("phone"):  # a wider leaderboard: in its own box
        board = page.locator("div.scroll > table").nth(1).element_handle()
        box = page.evaluate("(e) => [e.parentElement.clientWidth, e.parentElement.scrollWidth]", board)
        assert box[1] > box[0], box
    page.context.close()


@pytest.fixture(scope="module")
def served(runs: Runs, reports: dict[str, Path]) -> Iterator[tuple[str, dict[str, str]]]:
    """The viewer over the mixed (0), longer (1), gen-eval (2) and stage (3) runs, the PersonaMem-shaped run (4) and
    the ten demo runs; with a case and a user of each dataset."""
    demo = sorted(d for d in reports["demo"].iterdir() if (d / "manifest.json").is_file())
    viewer = tb.view([runs.mixed, runs.longer, runs.gen, runs.stage, reports["personamem"], *demo], n_boot=20)

    def first(run: Path) -> dict[str, Any]:
        line = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[0]
        return dict(json.loads(line))

    pm, dm = first(reports["personamem"]), first(demo[0])
    ids = {"pm_case": pm["case_id"], "demo_case": dm["case_id"], "demo_user": dm["user_id"]}
    yield str(viewer.url), ids
    viewer.stop()


#: (name, hash, what to wait for once the page is ready)
PAGES = [
    ("leaderboard", "#/", "section[data-page=leaderboard] svg"),
    ("cases", "#/cases", "#rows tr"),
    ("cases_personamem", "#/cases?run=4", "#rows tr"),
    ("case_mixed", "#/case?run=0&id=c00", "[data-verdict='0-AB']"),
    ("case_gen", "#/case?run=2&id={gen_case}", "[data-verdict='2-AB']"),
    ("case_personamem", "#/case?run=4&id={pm_case}", "[data-verdict='4-AB']"),
    ("case_demo", "#/case?run=5&id={demo_case}", "[data-verdict='5-AB']"),
    ("compare", "#/compare?a=0&b=1", "table.paired"),
    ("compare_demo", "#/compare?a=5&b=6", "table.paired"),
    ("users", "#/users", "#users table"),
    ("user", "#/user?id=u2", "#user .persona details"),
    ("user_demo", "#/user?id={demo_user}", "#user .persona details"),
    ("runs", "#/runs", "[data-manifest='0'] details"),
]


@pytest.mark.parametrize("size", list(SIZES))
def test_every_viewer_page_fits_the_window(browser: Any, served: tuple[str, dict[str, str]], size: str) -> None:
    print(f"screenshots in {SHOTS}")
    url, ids = served
    page = _page(browser, size)
    page.goto(url + "#/")
    page.wait_for_selector("body[data-ready='1']", state="attached")
    ids = {**ids, "gen_case": page.evaluate("TB_DATA[2].cases.id[0]")}
    for name, hash_, ready in PAGES:
        page.goto("about:blank")
        page.goto(url + hash_.format(**ids))
        page.wait_for_selector("body[data-ready='1']", state="attached")
        page.wait_for_selector(ready, state="attached")
        if name == "runs":  # a manifest unfolded: its JSON wraps in its box
            page.locator("[data-manifest='4'] details").evaluate("(d) => { d.open = true; }")
        _fits(page, size, f"view_{name}")
    page.context.close()
