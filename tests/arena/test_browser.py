"""Real-browser tests of the participant's pages: Debian's chromium under Playwright against the arena server on
a free loopback port, at desktop (1280x800) and phone (390x844) sizes: consent -> profile -> ask -> both answers
visible side by side while they stream -> no vote possible (by key or button) before both have finished -> a vote
by key -> the next question; no page scrolls sideways. Screenshots go to $TAILORBENCH_TEST_OUTPUT/arena."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import chromium

OUTPUT = Path(os.environ.get("TAILORBENCH_TEST_OUTPUT", Path(__file__).resolve().parents[2] / "runs" / "test-output"))
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
SLOW = {n: {"piece_delay_s": 0.25} for n in ("assistant-personalized", "assistant-generic", "other-generic")}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def _fits(page: Any, what: str) -> None:
    wide = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], f"{what}: the page scrolls sideways ({wide[0]} > {wide[1]})"


@pytest.mark.parametrize("size", list(SIZES))
def test_a_battle_in_the_browser(browser: Any, size: str, make_arena: Callable[..., Path], tmp_path: Path) -> None:
    from tailorbench.arena.config import load_config
    from tailorbench.arena.simulate import serving
    from tailorbench.arena.store import ArenaStore
    from tailorbench.arena.web import create_app

    folder = make_arena(contestant_options=SLOW, gold={"rate": 0.0})
    store = ArenaStore(f"sqlite:///{tmp_path / 'arena.sqlite'}")
    shots = OUTPUT / "arena"
    shots.mkdir(parents=True, exist_ok=True)
    width, height = SIZES[size]
    try:
        with serving(create_app(load_config(folder), store, folder)) as url:
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            page.goto(url + "/")
            assert "What is stored" in page.content()
            _fits(page, "consent")
            page.check("#consent")
            with page.expect_navigation():
                page.click("#start")
            _fits(page, "profile")
            page.select_option("#f_age", "25-34")
            page.fill("#f_interests", "bouldering and indie films")
            with page.expect_navigation():
                page.click("#save-profile")
            _fits(page, "ask")
            page.fill("#question", "How should I spend a free Saturday?")
            with page.expect_navigation():
                page.click("#ask")
            # both answers visible, side by side, while they are still arriving
            page.wait_for_function("() => ['1', '2'].every(p => document.getElementById('text-' + p).textContent"
                                   " && document.getElementById('pane-' + p).dataset.state === 'streaming')")
            one, two = page.locator("#pane-1").bounding_box(), page.locator("#pane-2").bounding_box()
            assert one["y"] < height and two["y"] < height  # both start inside the window
            assert abs(one["y"] - two["y"]) < 1 and one["x"] + one["width"] <= two["x"]  # side by side
            page.screenshot(path=str(shots / f"battle-streaming-{size}.png"))
            # no vote before both have finished: the buttons are disabled and the keys do nothing
            assert page.locator("#vote-1").is_disabled() and page.locator("#vote-4").is_disabled()
            page.keyboard.press("1")
            page.keyboard.press("a")
            assert "/b/" in page.url and store.status_counts()["votes"] == 0
            _fits(page, "battle")
            page.wait_for_function("() => document.getElementById('battle').dataset.ready === '1'")
            page.screenshot(path=str(shots / f"battle-finished-{size}.png"))
            ref = page.url.rstrip("/").rsplit("/", 1)[-1]
            with page.expect_navigation():
                page.keyboard.press("b")  # the right answer, by key
            assert page.url.endswith("/ask")
            voted = store.voted_battles()
            assert len(voted) == 1 and voted[0].outcome.battle_id == ref
            battle = store.battle(ref)
            right = battle["model_b"] if battle["a_left"] else battle["model_a"]
            assert (voted[0].outcome.model_a if voted[0].outcome.outcome == "a" else voted[0].outcome.model_b) \
                == right
            _fits(page, "ask after the vote")
            context.close()
    finally:
        store.dispose()
