"""Real-browser checks of the task pages for hours of work (issue 22, point 7), at 1280x800 in Debian's chromium:
after a submit a long pairwise item opens at the top with its persona and Submit in view; answers start at the
top side by side; persona keys read as labels and values as text; the A/B page's persona is open and folds with
`p`, its 5-point scale in view with the answers; every task page says "item X of N · M remaining"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tests.annotation.conftest import DATA, LiveServer, login
from tests.annotation.test_browser import browser, live  # noqa: F401  (fixtures)

VIEWPORT = {"width": 1280, "height": 800}
PERSONA = {
    "favorite_music": ["jazz", "folk"],
    "hobbies": "climbing, " * 60 + "<img src=x onerror=window.__xss=1>",
    "demographics": {"age": 34, "occupation": "night nurse", "home_city": "Leeds"},
    "health": {"diet": "vegetarian", "sleep_pattern": "works night shifts " * 15},
}
LONG_A = ("Plan meals for a night shift around a light, protein-rich dinner before work. " * 60)[:4000]
LONG_B = ("Batch-cook lentil curry on your day off and freeze it in single portions. " * 60)[:4000]


def _page(browser: Any, server: LiveServer, token: str) -> Any:  # noqa: F811
    """A 1280x800 page of a browser context logged in as the token's annotator (the conftest login flow)."""
    client = login(server.server.config.app, token, base_url=server.url)
    context = browser.new_context(viewport=VIEWPORT)
    context.add_cookies([{"name": k, "value": v, "url": server.url} for k, v in client.cookies.items()])
    return context.new_page()


def _in_view(page: Any, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def _starts_in_view(page: Any, selector: str) -> bool:
    """The element's top is on screen above the dock (a long answer's first lines can be read)."""
    box, dock = page.locator(selector).first.bounding_box(), page.locator("#dock").bounding_box()
    return box is not None and dock is not None and 0 <= box["y"] < dock["y"] - 40


def _submit(page: Any, keys: list[str]) -> None:
    for key in keys:
        page.keyboard.press(key)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def _place(page: Any) -> tuple[int, int, int]:
    m = re.search(r"item (\d+) of (\d+) · (\d+) remaining", page.inner_text("#progress"))
    assert m is not None, page.inner_text("#progress")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _pairwise_items(path: Path, n: int) -> Path:
    rows = [{"id": f"long{i}", "split": "specific", "user_id": "u1", "persona": PERSONA,
             "question": "What should I eat before a night shift? " * 3,
             "answer_a": LONG_A, "answer_b": LONG_B if i % 2 else "A light salad."} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_long_pairwise_item_opens_at_the_top(browser: Any, live: tuple[Database, LiveServer],  # noqa: F811
                                              tmp_path: Path) -> None:
    db, server = live
    pid = service.create_project(db, "pw", "pairwise", 1, "Read the persona before you choose.", 100)
    service.import_items(db, "pw", _pairwise_items(tmp_path / "long.jsonl", 4), "items")
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    page = _page(browser, server, token)
    page.goto(f"{server.url}/p/{pid}")
    assert _place(page) == (1, 4, 3)
    for n in (2, 3):
        _submit(page, ["1"])
        # the POST answered with the next page: it opens at the top, persona and Submit in view
        assert page.evaluate("window.scrollY") == 0
        assert _in_view(page, "#persona .persona-section") and _in_view(page, "#submit")
        assert _in_view(page, "#choice-1")  # the choice controls too (the dock)
        assert _starts_in_view(page, "#answer-1")
        assert _place(page) == (n, 4, 4 - n)
    # a short answer beside a long one starts at the top, not centred
    tops = [page.locator(f"#answer-{i}").bounding_box()["y"] for i in (1, 2)]
    heights = [page.locator(f"#answer-{i}").bounding_box()["height"] for i in (1, 2)]
    assert max(heights) > 5 * min(heights) and tops[0] == tops[1]
    # persona keys as labels, values as text (a model-written tag stays text)
    persona = page.inner_text("#persona")
    for label in ("Favorite music", "Hobbies", "Demographics", "Home city", "Sleep pattern"):
        assert label in persona
    assert "favorite_music" not in persona and "<img src=x" in persona
    assert page.evaluate("window.__xss") is None and page.locator("#persona img").count() == 0
    # every section folds
    first = page.locator(".persona-section").first
    first.locator("summary").click()
    assert first.get_attribute("open") is None
    # clicking an answer picks it (the card is the dock's radio's label); the dock's Submit works like Enter
    page.locator("#card-2 h3").click()
    assert page.is_checked("#choice-2") and not page.is_checked("#choice-1")
    with page.expect_navigation():
        page.locator("#submit").click()
    assert page.evaluate("window.scrollY") == 0 and _place(page) == (4, 4, 0)
    assert len(service.raw_labels(db, "pw")) == 3
    page.context.close()


def _ab_items(path: Path) -> Path:
    rows = [{"id": f"ab{i}", "user_id": "u3", "prompt": "Suggest a dinner recipe", "persona": PERSONA,
             "generic": LONG_A, "personalized": LONG_B,
             "attributes": [{"id": "veg", "text": "vegetarian"}, {"id": "night", "text": "works night shifts"}]}
            for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ab_page_persona_open_and_scale_in_view(browser: Any, live: tuple[Database, LiveServer],  # noqa: F811
                                                 tmp_path: Path) -> None:
    db, server = live
    pid = service.create_project(db, "ab", "ab_rating", 1, "Rate each attribute.", 100)
    service.import_items(db, "ab", _ab_items(tmp_path / "ab.jsonl"))
    _, token = service.add_user(db, "ann", "annotator", ["ab"])
    page = _page(browser, server, token)
    page.goto(f"{server.url}/p/{pid}")
    assert page.locator("#persona").get_attribute("open") is not None
    assert _in_view(page, "#persona .persona-section")
    # the 5-point scale is in view with the answers (the dock), not ~900 px below them
    assert _in_view(page, "input[name='s_veg'][value='1']") and _in_view(page, "input[name='s_night'][value='5']")
    assert _starts_in_view(page, "#answer-1") and _starts_in_view(page, "#answer-2")
    assert _in_view(page, "#submit")
    # p folds and unfolds the persona; the key help says so
    assert "p shows or hides the persona" in page.inner_text("#keys")
    page.keyboard.press("p")
    assert page.locator("#persona").get_attribute("open") is None
    page.keyboard.press("p")
    assert page.locator("#persona").get_attribute("open") is not None
    _submit(page, ["5", "2"])
    assert page.evaluate("window.scrollY") == 0 and _place(page) == (2, 2, 0)
    assert service.progress(db, "ab")["labels_done"] == 1
    page.context.close()


PLANS: dict[str, tuple[str, list[str]]] = {
    "pairwise": ("paircase.jsonl", ["1"]),
    "attributes": ("attributes.jsonl", ["a", "u", "r"]),
    "relevance": ("relevance.jsonl", ["y", "n", "n"]),
    "ab_rating": ("ab_rating.jsonl", ["5", "2"]),
}


@pytest.mark.parametrize("task", list(PLANS))
def test_counts_on_every_task_page(browser: Any, live: tuple[Database, LiveServer], task: str) -> None:  # noqa: F811
    db, server = live
    pid = service.create_project(db, task, task, 1, "", 100)
    got = service.import_items(db, task, DATA / PLANS[task][0])
    total = got["items"] + got["gold_items"]
    _, token = service.add_user(db, "ann", "annotator", [task])
    page = _page(browser, server, token)
    page.goto(f"{server.url}/p/{pid}")
    assert _place(page) == (1, total, total - 1)
    _submit(page, PLANS[task][1])
    assert _place(page) == (2, total, total - 2)
    assert page.evaluate("window.scrollY") == 0 and _in_view(page, "#submit")
    page.reload()  # a reload (GET of the current assignment) says the same
    assert _place(page) == (2, total, total - 2)
    page.context.close()
