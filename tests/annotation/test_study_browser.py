"""A crowd study end to end in Debian's chromium (Playwright) against uvicorn on loopback: the platform's link ->
the consent page -> items labelled with the keyboard -> the redirect to the platform's completion URL with the
code. The completion URL is a page of the test server under another origin (localhost instead of 127.0.0.1), so
the redirect is observed without the internet and crosses origins as the real one does (the
Content-Security-Policy's form-action would stop a form's redirect there)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from tailorbench.annotation import service, studies
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item
from tests.annotation.conftest import DATA, LiveServer
from tests.annotation.test_browser import SHOTS, browser, live  # noqa: F401  (fixtures)


def _item_by_ref(db: Database, page: Any) -> str:
    """The item id of the participant's page on screen, from its opaque reference (the page shows none)."""
    ref = str(page.locator("form.task").get_attribute("action")).removeprefix("/t/")
    with db.session() as s:
        return str(s.scalar(select(Item.ext_id).join(Assignment, Assignment.item_id == Item.id)
                            .where(Assignment.ref == ref)))


def test_link_consent_items_completion(browser: Any, live: tuple[Database, LiveServer]) -> None:  # noqa: F811
    db, server = live
    # the items include a gold one: with a gold item in every 3 items it comes at a random place of the 3
    service.create_project(db, "crowd", "pairwise", 1, "Pick the answer that fits the person.", 2)
    service.import_items(db, "crowd", DATA / "paircase.jsonl")
    platform = f"http://localhost:{server.port}/bye?cc={{code}}"
    _, secret = studies.create_study(db, "crowd", quota=3, max_participants=10, completion_code="C0MPLETE",
                                     completion_url=platform)
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/s/{secret}?PROLIFIC_PID=5f0c0ffee0c0ffee0c0ffee0&STUDY_ID=st1&SESSION_ID=se1")
    assert page.inner_text("#participant-id") == "5f0c0ffee0c0ffee0c0ffee0"
    assert "Pick the answer that fits the person." in page.inner_text("#instructions")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "study_consent.png"), full_page=True)
    page.click("#consent-start")  # not ticked: the browser keeps the form
    assert page.url.startswith(f"{server.url}/s/")
    page.check("#consent-box")
    with page.expect_navigation():
        page.click("#consent-start")
    page.wait_for_selector("form.task")  # the first item (app.js shows its own /t/REF address)
    assert page.locator("form.task").get_attribute("action") == page.url.removeprefix(server.url)
    assert page.locator("[data-item]").count() == 0  # a participant's page names no item
    labelled = []
    for _ in range(2):
        labelled.append(_item_by_ref(db, page))
        for key in ("1", "3"):
            page.keyboard.press(key)
        with page.expect_navigation():
            page.keyboard.press("Enter")
    # the third item is the last of the quota: its submission leads back to the platform with the code
    item = _item_by_ref(db, page)
    page.keyboard.press("1")
    with page.expect_navigation(url=lambda u: u.startswith(f"http://localhost:{server.port}/")):
        page.keyboard.press("Enter")
    assert page.url == f"http://localhost:{server.port}/bye?cc=C0MPLETE"
    labelled.append(str(item))
    raw = service.raw_labels(db, "crowd")
    assert [r["item"] for r in raw] == labelled
    assert {r["external_id"] for r in raw} == {"5f0c0ffee0c0ffee0c0ffee0"}
    # opening the study link again in this browser leads straight back to the completion URL
    page.goto(f"{server.url}/s/{secret}?PROLIFIC_PID=5f0c0ffee0c0ffee0c0ffee0&STUDY_ID=st1&SESSION_ID=se1")
    assert page.url == f"http://localhost:{server.port}/bye?cc=C0MPLETE"
    context.close()
