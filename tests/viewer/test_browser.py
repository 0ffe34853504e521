"""The viewer in Debian's chromium (Playwright), served and opened from disk: every filter's count equals the count
computed here from predictions.jsonl, on a run holding every verdict status in both orders; a deep link restores
the filters; the case page shows the persona (foldable), the question, both answers, each judge's verdicts in both
orders and the human labels; the comparison, user, gen-eval and stage pages; exports; and model-written HTML stays
text (no script runs, no image loads). No console error on any page: the Content-Security-Policy allows no inline
script or style, so a violation would show there."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tailorbench as tb
from tests.helpers.browser import chromium
from tests.viewer.conftest import XSS, Runs, _rows


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def served(runs: Runs) -> Iterator[str]:
    """The viewer over the mixed run (0), the longer run (1), the gen-eval run (2) and the stage reports (3)."""
    viewer = tb.view([runs.mixed, runs.longer, runs.gen, runs.stage], n_boot=50)
    yield str(viewer.url)
    viewer.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True)
    p = context.new_page()
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.errors = errors
    yield p
    context.close()
    assert not errors, errors


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", state="attached")


def _count(page: Any) -> int:
    return int(page.locator("#count").get_attribute("data-count"))


# --- what predictions.jsonl says ------------------------------------------------------------------------


def _outcome(row: dict[str, Any]) -> str:
    if row["status"] == "ok":
        return "correct" if row["correct"] else "wrong"
    return "abstained" if row["status"] == "abstain" else str(row["status"])


def _inconsistent(rows: list[dict[str, Any]]) -> set[str]:
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_case[r["case_id"]].append(r)
    return {c for c, rs in by_case.items()
            if len(rs) == 2 and all(r["status"] == "ok" for r in rs) and rs[0]["correct"] != rs[1]["correct"]}


def _expected(runs: Runs) -> dict[tuple[str, str], int]:
    """(filter, value) -> verdicts of the mixed run it keeps, computed from predictions.jsonl and the manifest."""
    rows = runs.predictions()
    manifest = json.loads((runs.mixed / "manifest.json").read_text(encoding="utf-8"))
    overlap = manifest["tier_overlap"]
    training = manifest["config"]["training_overlap"]["cases"]
    odd = _inconsistent(rows)
    keys: dict[str, Callable[[dict[str, Any]], str]] = {
        "split": lambda r: r["split"], "tier": lambda r: r["tier"], "user": lambda r: r["user_id"],
        "outcome": _outcome, "order": lambda r: r["order"],
        "consistency": lambda r: "inconsistent" if r["case_id"] in odd else "other",
        "overlap": lambda r: overlap.get(r["case_id"], "unique"),
        "training": lambda r: training.get(r["case_id"], "unseen"),
    }
    out: dict[tuple[str, str], int] = {}
    for name, key in keys.items():
        for value, n in Counter(key(r) for r in rows).items():
            out[(name, value)] = n
    return out


def test_every_filter_counts_what_predictions_jsonl_holds(page: Any, served: str, runs: Runs) -> None:
    expected = _expected(runs)
    # the run holds every status in both orders, and the classes the other filters offer
    assert {v for f, v in expected if f == "outcome"} == {"correct", "wrong", "invalid", "failed", "abstained"}
    assert {v for f, v in expected if f == "overlap"} == {"unique", "repeated", "contradicted"}
    _open(page, served + "#/cases")
    page.select_option("[data-filter=run]", "0")
    assert _count(page) == len(runs.predictions())
    for (name, value), n in sorted(expected.items()):
        page.select_option(f"[data-filter={name}]", value)
        assert _count(page) == n, (name, value)
        page.select_option(f"[data-filter={name}]", "")
    # two filters at once, and the judge filter alone
    page.select_option("[data-filter=outcome]", "wrong")
    page.select_option("[data-filter=split]", "general")
    rows = runs.predictions()
    assert _count(page) == sum(1 for r in rows if _outcome(r) == "wrong" and r["split"] == "general")
    page.select_option("[data-filter=run]", "1")
    longer = runs.predictions(runs.longer)
    assert _count(page) == sum(1 for r in longer if _outcome(r) == "wrong" and r["split"] == "general")


def test_full_text_search_counts_matching_verdicts(page: Any, served: str, runs: Runs) -> None:
    rows, questions = runs.predictions(), {r["id"]: r["question"] for r in _rows()}
    _open(page, served + "#/cases?run=0")
    page.fill("[data-filter=q]", "needle")
    want = sum(1 for r in rows if "needle" in questions[r["case_id"]])
    page.wait_for_selector(f"#count[data-count='{want}']", state="attached")
    page.fill("[data-filter=q]", "cannot decide")  # only in the judge's raw output
    want = sum(1 for r in rows if "cannot decide" in (r.get("raw") or ""))
    assert want > 0
    page.wait_for_selector(f"#count[data-count='{want}']", state="attached")
    assert "q=cannot+decide" in page.url or "q=cannot%20decide" in page.url


def test_a_deep_link_restores_the_filters(page: Any, served: str, runs: Runs) -> None:
    _open(page, served + "#/cases?run=0&outcome=wrong&split=general&order=BA")
    assert page.input_value("[data-filter=outcome]") == "wrong"
    assert page.input_value("[data-filter=split]") == "general"
    assert page.input_value("[data-filter=order]") == "BA"
    rows = runs.predictions()
    assert _count(page) == sum(1 for r in rows if _outcome(r) == "wrong" and r["split"] == "general"
                               and r["order"] == "BA")
    # a filter set in the page lands in the URL, and that URL opens the same view
    page.select_option("[data-filter=tier]", "easy")
    url, count = page.url, _count(page)
    assert "tier=easy" in url
    page.goto("about:blank")
    _open(page, url)
    assert _count(page) == count and page.input_value("[data-filter=tier]") == "easy"


def test_the_case_page_shows_persona_question_answers_and_every_verdict(page: Any, served: str) -> None:
    _open(page, served + "#/case?run=0&id=c05")
    page.wait_for_selector("[data-verdict='0-BA']")
    persona = page.locator(".persona details")
    assert persona.count() >= 3
    top = page.locator(".persona > div > details").first
    assert top.get_attribute("open") is None
    top.locator("summary").click()
    assert top.get_attribute("open") is not None  # sections fold and unfold
    assert "Question 5" in page.locator("pre.question").inner_text()
    answers = page.locator(".answer")
    assert answers.count() == 2 and "thoughtful answer number 5" in answers.nth(0).inner_text()
    assert "short reply 5" in answers.nth(1).inner_text()
    assert page.locator("pre.human").count() == 1 and "h2" in page.locator("pre.human").inner_text()
    # both orders of both pairwise runs, with output, scores, latency, tokens, cost and cache status
    for key in ("0-AB", "0-BA", "1-AB", "1-BA"):
        assert page.locator(f"[data-verdict='{key}']").count() == 1
    mixed_ab = page.locator("[data-verdict='0-AB']").inner_text()
    assert "correct" in mixed_ab and "A 0.9000" in mixed_ab and "1.500" in mixed_ab and "105/3" in mixed_ab
    assert "0.00050" in mixed_ab and "called" in mixed_ab
    assert "truncated" in page.locator("[data-verdict='0-BA']").inner_text()
    _open(page, served + "#/case?run=0&id=c04")
    page.wait_for_selector("[data-verdict='0-BA']")
    assert "server: HTTP 500" in page.locator("[data-verdict='0-AB']").inner_text()
    assert "abstained" in page.locator("[data-verdict='0-BA']").inner_text()
    _open(page, served + "#/case?run=0&id=c01")
    page.wait_for_selector("[data-verdict='0-AB']")
    assert "cached" in page.locator("[data-verdict='0-AB']").inner_text()
    assert "in-training" in page.locator(".facts").inner_text()


def test_model_written_html_is_shown_as_text(page: Any, served: str) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    _open(page, served + "#/case?run=0&id=c00")
    page.wait_for_selector("[data-verdict='0-AB']")
    assert XSS in page.locator(".answer").nth(0).inner_text()
    assert XSS in page.locator("[data-verdict='0-AB'] pre.raw").inner_text()
    assert page.locator("#case img").count() == 0 and page.locator("#case script").count() == 0
    assert page.evaluate("window.__xss") is None
    # the same in the case browser's search, and on gen-eval's generated answers
    _open(page, served + "#/cases?q=%3Cscript%3E")
    page.wait_for_selector("body[data-text='1']", state="attached")
    assert _count(page) > 0
    gen_case = page.evaluate("TB_DATA[2].cases.id[0]")
    _open(page, served + f"#/case?run=2&id={gen_case}")
    page.wait_for_selector("[data-verdict='2-BA']")
    assert XSS in page.locator(".answer").nth(0).inner_text()
    assert page.evaluate("window.__xss") is None
    assert not [u for u in requests if u.endswith("/x")], "an image from model text was loaded"


def test_gen_eval_case_shows_generated_beside_reference_with_both_orders(page: Any, served: str,
                                                                         runs: Runs) -> None:
    verdicts = [json.loads(line) for line in (runs.gen / "verdicts.jsonl").read_text().splitlines() if line]
    case = verdicts[0]["case_id"]
    _open(page, served + f"#/case?run=2&id={case}")
    page.wait_for_selector("[data-verdict='2-AB']")
    heads = page.locator(".answer h3")
    assert heads.nth(0).inner_text().startswith("generated") and heads.nth(1).inner_text().startswith("reference")
    assert "Generated:" in page.locator(".answer").nth(0).inner_text()
    assert page.locator("[data-verdict='2-BA']").count() == 1
    winners = {v["order"]: v["winner"] for v in verdicts if v["case_id"] == case}
    for order, winner in winners.items():
        assert (winner or "") in page.locator(f"[data-verdict='2-{order}']").inner_text()
    assert page.locator("[data-verdict^='0-']").count() == 0
    # the pairwise runs judged other answers to the same question: their verdicts are on their own case page
    _open(page, served + f"#/case?run=0&id={case}")
    page.wait_for_selector("[data-verdict='0-AB']")
    assert page.locator("[data-verdict^='2-']").count() == 0
    _open(page, served + "#/cases?run=2")
    assert _count(page) == len(verdicts)


def test_the_comparison_lists_disagreeing_cases_and_the_paired_difference(page: Any, served: str,
                                                                          runs: Runs) -> None:
    def scores(rows: list[dict[str, Any]]) -> dict[str, float]:
        by_case: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            by_case[r["case_id"]].append(float(r["correct"]))
        return {c: sum(v) / len(v) for c, v in by_case.items()}

    a, b = scores(runs.predictions()), scores(runs.predictions(runs.longer))
    want = sum(1 for c in a if c in b and a[c] != b[c])
    _open(page, served + "#/compare?a=0&b=1")
    assert int(page.locator("#disagree-count").get_attribute("data-count")) == want
    table = page.locator("table.paired").inner_text()
    difference = tb.compare(runs.mixed, runs.longer, n_boot=50).difference
    assert difference is not None and f"{100 * difference:.1f}" in table and "specific/easy" in table
    # B - A is the same difference with the opposite sign
    _open(page, served + "#/compare?a=1&b=0")
    assert f"{-100 * difference:.1f}" in page.locator("table.paired").inner_text()


def test_users_page_and_a_user_page(page: Any, served: str) -> None:
    _open(page, served + "#/users")
    assert page.locator("#users a[href^='#/user?id=']").count() >= 5
    _open(page, served + "#/user?id=u2")
    page.wait_for_selector("#user .persona details")
    assert "Lisbon" in page.locator("#user .persona").text_content()  # folded sections hold it
    page.click("text=browse the cases >> nth=0")
    page.wait_for_selector("body[data-route='cases']")
    assert page.input_value("[data-filter=user]") == "u2"


def test_leaderboard_and_stage_reports_are_the_reports_own_tables(page: Any, served: str) -> None:
    _open(page, served)
    board = page.locator("section[data-page=leaderboard]")
    assert board.locator("svg").count() >= 2  # the CI bar chart and the length-ratio chart
    text = board.inner_text()
    assert "Length-controlled view" in text and "Win rates" in text and "Stage 3" in text
    # the relevance stage's per-item votes, humans and models side by side
    assert "Per-item votes, humans and models" in text and "ann_1 (human)" in text and "bm25 (model)" in text
    _open(page, served + "#/runs")
    manifest = page.locator("[data-manifest='0']")
    manifest.locator("summary").click()
    assert "viewmix" in manifest.inner_text() and "SECRET123" not in manifest.inner_text()


def test_filtered_cases_export_as_jsonl_and_csv(page: Any, served: str, runs: Runs) -> None:
    _open(page, served + "#/cases?run=0&outcome=invalid")
    n = _count(page)
    with page.expect_download() as info:
        page.click("#export-jsonl")
    lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    assert len(lines) == n and all(json.loads(line)["verdict"] == "invalid" for line in lines)
    assert json.loads(lines[0])["raw"] == "I cannot decide between them"
    with page.expect_download() as info:
        page.click("#export-csv")
    import csv

    with Path(info.value.path()).open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == n and {r["verdict"] for r in table} == {"invalid"}


def test_the_bundle_opens_from_disk(page: Any, runs: Runs, tmp_path: Path) -> None:
    viewer = tb.view([runs.mixed, runs.longer, runs.gen, runs.stage], bundle=tmp_path / "site", n_boot=50)
    url = Path(viewer.index).resolve().as_uri()
    _open(page, url + "#/cases?run=0&outcome=wrong")
    rows = runs.predictions()
    assert _count(page) == sum(1 for r in rows if _outcome(r) == "wrong")
    _open(page, url + "#/case?run=0&id=c00")  # its texts come from text-0-0.js, a script beside the page
    page.wait_for_selector("[data-verdict='0-AB']")
    assert XSS in page.locator(".answer").nth(0).inner_text() and page.evaluate("window.__xss") is None
    _open(page, url + "#/compare?a=0&b=1")
    assert page.locator("table.paired tr").count() > 2


def test_train_rm_held_out_evaluations_open_as_runs(page: Any, runs: Runs, tmp_path: Path) -> None:
    viewer = tb.view([runs.train], bundle=tmp_path / "train-site", n_boot=20)
    _open(page, Path(viewer.index).resolve().as_uri() + "#/cases")
    assert _count(page) == len(runs.predictions()) + len(runs.predictions(runs.longer))
    assert page.locator("[data-filter=run] option").count() == 3  # any, epoch-1, epoch-2
