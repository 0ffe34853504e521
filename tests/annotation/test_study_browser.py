"""A crowd study end to end in Debian's chromium (Playwright) against uvicorn on loopback: the platform's link ->
the consent page -> items labelled with the keyboard -> the redirect to the platform's completion URL with the
code. The completion URL is a page of the test server under another origin (localhost instead of 127.0.0.1), so
the redirect is observed without the internet and crosses origins as the real one does (the
Content-Security-Policy's form-action would stop a form's redirect there)."""

from __future__ import annotations

from typing import Any

import pytest

from tailorbench.annotation import service, studies
from tailorbench.annotation.db import Database
from tests.annotation.conftest import DATA, LiveServer
from tests.annotation.test_browser import SHOTS, _keys, browser, live  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def test_link_consent_items_completion(browser: Any, live: tuple[Database, LiveServer]) -> None:  # noqa: F811
    db, server = live
    service.create_project(db, "crowd", "pairwise", 1, "Pick the answer that fits the person.", 100)
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
    page.wait_for_selector("form.task")  # the first item (app.js shows its own /a/ID address)
    assert page.locator("form.task").get_attribute("action") == page.url.removeprefix(server.url)
    labelled = [_keys(page, ["1", "3"]) for _ in range(2)]
    # the third item is the last of the quota: its submission leads back to the platform with the code
    item = page.locator("[data-item]").get_attribute("data-item")
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
