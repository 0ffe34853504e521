"""Task pages for people on a desktop and on a phone (issue 33, point 5), in Debian's chromium, measured by
element boxes (screenshots in the test's tmp dir and under $TAILORBENCH_TEST_OUTPUT/annotate): both answers fully
visible on first load at 1280x800 (before: ~50 px of each above the dock) and at 390x844 on a touch screen
(before: no answer text at all; the dock took 317 px, the answers two 142 px columns), one column on the phone,
no key hints on a touch screen, and the number keys still pick an answer after focus went to the note and back
(before: after Esc in the note, 1 and 2 did nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tailorbench.annotation import service
from tailorbench.annotation.db import Database
from tests.annotation.conftest import LiveServer, login
from tests.annotation.test_browser import SHOTS, browser, live  # noqa: F401  (fixtures)

PERSONA = {
    "demographics": {"age": 34, "occupation": "night nurse", "home_city": "Leeds"},
    "health": {"diet": "vegetarian", "sleep_pattern": "works night shifts, sleeps in the morning"},
    "preferences": {"cooking": "batch cooking on days off", "budget": "tight"},
}
ANSWER_A = ("Eat a light, protein-rich dinner about an hour before your shift: lentil soup, a wholemeal wrap "
            "with hummus and vegetables, and fruit for the break. ") * 2
ANSWER_B = ("Batch-cook a vegetable curry on your day off and freeze single portions; reheat one before work and "
            "keep nuts and a yoghurt for the small hours. ") * 2


def _context(browser: Any, server: LiveServer, token: str, **options: Any) -> Any:  # noqa: F811
    client = login(server.server.config.app, token, base_url=server.url)
    context = browser.new_context(**options)
    context.add_cookies([{"name": k, "value": v, "url": server.url} for k, v in client.cookies.items()])
    return context


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return dict(box)


def _project(db: Database, tmp_path: Path) -> int:
    rows = [{"id": f"i{i}", "split": "specific", "user_id": "u1", "persona": PERSONA,
             "question": "What should I eat before a night shift?", "answer_a": ANSWER_A, "answer_b": ANSWER_B}
            for i in range(4)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pid = service.create_project(db, "pw", "pairwise", 1, "Read the persona, then choose.", 100)
    service.import_items(db, "pw", tmp_path / "items.jsonl", "items")
    return pid


def test_desktop_answers_in_view_and_keys_after_focus_changes(browser: Any, live: tuple[Database, LiveServer],  # noqa: F811
                                                              tmp_path: Path) -> None:
    db, server = live
    pid = _project(db, tmp_path)
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    context = _context(browser, server, token, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(f"{server.url}/p/{pid}")
    page.screenshot(path=str(tmp_path / "desktop_1280x800.png"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "layout_desktop_1280x800.png"))
    dock = _box(page, "#dock")
    for card in ("#card-1", "#card-2"):  # each answer whole, above the dock, in the window
        box = _box(page, card)
        assert box["y"] >= 0 and box["y"] + box["height"] <= dock["y"], (card, box, dock)
    assert dock["y"] + dock["height"] <= 800 and page.locator("kbd").first.is_visible()
    # the note, then Esc: the number keys pick an answer again
    page.keyboard.press("n")
    page.keyboard.type("hm")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    assert page.locator("#choice-2").is_checked()
    # focus on the persona's summary (a click), then a key: the next row (confidence) takes it
    page.click("#persona > summary")
    page.keyboard.press("3")
    assert page.locator("input[name=confidence][value='3']").is_checked()
    context.close()


def test_phone_one_column_answers_in_view_no_key_hints(browser: Any, live: tuple[Database, LiveServer],  # noqa: F811
                                                       tmp_path: Path) -> None:
    db, server = live
    pid = _project(db, tmp_path)
    _, token = service.add_user(db, "ann", "annotator", ["pw"])
    context = _context(browser, server, token, viewport={"width": 390, "height": 844}, is_mobile=True,
                       has_touch=True, device_scale_factor=2)
    page = context.new_page()
    page.goto(f"{server.url}/p/{pid}")
    page.screenshot(path=str(tmp_path / "phone_390x844.png"))
    page.screenshot(path=str(SHOTS / "layout_phone_390x844.png"))
    one, two = _box(page, "#answer-1"), _box(page, "#answer-2")
    assert one["x"] == two["x"] and two["y"] >= one["y"] + one["height"]  # one column
    assert one["width"] > 300  # not a 142 px column
    for box in (one, two):  # both answers' text whole on the first screen
        assert box["y"] >= 0 and box["y"] + box["height"] <= 844, (one, two)
    assert not page.locator("kbd").first.is_visible() and not page.locator("#keys").is_visible()
    assert page.locator("#persona > summary").is_visible()  # the persona one tap away
    page.tap("#persona > summary")
    assert page.locator("#persona").get_attribute("open") is not None
    page.tap("#card-2")
    assert page.locator("#choice-2").is_checked()
    context.close()
