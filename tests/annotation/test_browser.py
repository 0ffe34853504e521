"""Real-browser tests: Debian's chromium driven by Playwright against uvicorn on loopback. An annotator logs in
with their link, labels items of every task type with the keyboard only, reloads and resumes; model-written
HTML is shown as text. Screenshots of each task page go to $TAILORBENCH_TEST_OUTPUT/annotate (runs/test-output).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tailorbench.annotation.web import create_app
from tests.annotation.conftest import DATA, OUTPUT, LiveServer, browser_login
from tests.helpers.browser import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def live(db: Database) -> Iterator[tuple[Database, LiveServer]]:
    """uvicorn on a free loopback port over a fresh database (SQLite and PostgreSQL, see conftest.db_url)."""
    with LiveServer(create_app(db)) as server:
        yield db, server


def _item(page: Any) -> str:
    return str(page.locator("[data-item]").get_attribute("data-item"))


def _keys(page: Any, keys: list[str]) -> str:
    """Type the keys of one item, press Enter, wait for the next page; returns the labelled item's id."""
    item = _item(page)
    for key in keys:
        page.keyboard.press(key)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    return item


SHOTS = OUTPUT / "annotate"
PLANS: dict[str, list[str]] = {
    "pairwise": ["1", "3"],
    "attributes": ["a", "u", "r"],
    "relevance": ["y", "n", "n"],
    "ab_rating": ["5", "2"],
}


@pytest.mark.parametrize("task", list(PLANS))
def test_keyboard_labelling_reload_resume(browser: Any, live: tuple[Database, LiveServer], task: str) -> None:
    db, server = live
    pid = service.create_project(db, task, task, 1, f"Instructions for <{task}> & co.", 100)
    service.import_items(db, task, DATA / ("paircase.jsonl" if task == "pairwise" else f"{task}.jsonl"))
    _, token = service.add_user(db, "ann", "annotator", [task])
    context = browser.new_context()
    page = context.new_page()
    browser_login(page, server.url, token)
    assert page.url == f"{server.url}/"
    page.click(f"a[data-project='{pid}']")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"task_{task}.png"), full_page=True)
    assert "Instructions for <" in page.inner_text("details.instructions")

    # submitting with nothing chosen stays on the page (browser validation), nothing is stored
    first = _item(page)
    page.keyboard.press("Enter")
    page.wait_for_timeout(100)
    assert _item(page) == first and service.progress(db, task)["labels_done"] == 0

    labelled = [_keys(page, PLANS[task]), _keys(page, PLANS[task])]
    assert len(set(labelled)) == 2
    current = _item(page)
    page.keyboard.press("f")
    assert page.is_checked("#flag")
    # the POST answered with this page; app.js put the page's own URL in the address bar, so a reload is a
    # GET of the current assignment: it resumes the same item and never resends the last label
    action = page.locator("form.task").get_attribute("action")
    assert page.url == f"{server.url}{action}"
    page.reload()
    assert _item(page) == current and not page.is_checked("#flag")  # resume the same item after a reload
    assert service.progress(db, task)["labels_done"] == 2 and len(service.raw_labels(db, task)) == 2
    # back goes to the previous (finished) item's URL, which leads to the current work; nothing is stored
    page.go_back()
    page.wait_for_load_state()
    assert _item(page) == current and len(service.raw_labels(db, task)) == 2
    context.close()

    # a new browser (no cookies) with a new link resumes where the annotator left off
    again = browser.new_context()
    page = again.new_page()
    browser_login(page, server.url, service.rotate_link(db, "ann"))
    page.goto(f"{server.url}/p/{pid}")
    assert _item(page) == current
    labelled.append(_keys(page, PLANS[task]))
    again.close()

    rs = service.ratings(db, task)
    raw = service.raw_labels(db, task)
    assert [r["item"] for r in raw] == labelled
    assert all(r["duration_ms"] and r["duration_ms"] > 0 for r in raw)
    if task == "pairwise":
        # "3" after the answer key sets high confidence
        assert {r["value"]["confidence"] for r in raw} == {3}
    elif task == "attributes":
        assert {r.label for r in rs.ratings} == {"accepted", "uncertain", "rejected"}
    elif task == "relevance":
        assert sorted(str(r.label) for r in rs.ratings) == ["False", "False", "False", "False", "False", "False",
                                                           "True", "True", "True"]
    else:
        for r in raw:
            sign = -1 if r["shown_order"] == "BA" else 1
            assert r["value"]["ratings"] == {"veg": 2 * sign, "night": -1 * sign}


def test_model_html_is_text(browser: Any, live: tuple[Database, LiveServer]) -> None:
    db, server = live
    pid = service.create_project(db, "pw", "pairwise", 1)
    service.import_items(db, "pw", DATA / "paircase.jsonl")
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    context = browser.new_context()
    page = context.new_page()
    browser_login(page, server.url, token)
    page.goto(f"{server.url}/p/{pid}")
    texts = page.locator(".answer-text").all_inner_texts()
    assert any("<script>window.__xss=1</script><b>bold</b>" in t for t in texts)
    assert page.evaluate("window.__xss") is None
    assert page.locator(".answer-text b").count() == 0
    cookies = context.cookies()
    assert cookies and all(c["httpOnly"] for c in cookies)
    assert {c["name"]: c["sameSite"] for c in cookies} == {"tb_session": "Lax", "tb_login": "Strict"}
    assert page.evaluate("document.cookie") == ""
    # an annotator's browser is refused the admin pages
    assert page.goto(f"{server.url}/admin").status == 403  # type: ignore[union-attr]
    context.close()
