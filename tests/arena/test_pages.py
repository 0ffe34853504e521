"""The participant's pages and endpoints over the real server code (TestClient, SQLite and PostgreSQL): the whole
flow, no vote before both answers have finished (enforced by the server), a failed answer not counted but
counted as a failure, the drawn order recorded and the vote stored as the contestant shown, flags, spend caps,
crowd places and the security checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.arena.conftest import Participant


def test_a_whole_battle_and_its_vote(make_arena: Callable[..., Path], open_arena: Callable[..., Any]) -> None:
    config, store, client = open_arena(make_arena())
    with client() as c:
        p = Participant(c)
        page = p.enter({"age": "25-34", "interests": "bouldering and indie films"})
        assert page.url.path == "/ask" and 'id="ask-form"' in page.text
        ref = p.ask()
        left, right = p.stream(ref, "1"), p.stream(ref, "2")
        assert left[1] == right[1] == "done" and left[0] and right[0]
        battle = store.battle(ref)
        # the pane a vote names is turned into the contestant shown there, from the recorded order
        shown_left = battle["model_a"] if battle["a_left"] else battle["model_b"]
        assert p.vote(ref, "1", "3").status_code == 303
        outcome = store.voted_battles()[0].outcome
        assert outcome.outcome == ("a" if shown_left == battle["model_a"] else "b")
        assert outcome.confidence == 3 and outcome.position_a_left == battle["a_left"]
        # the personalized contestant's request carried the profile; the generic one's did not
        answers = {battle["model_a"]: battle["answer_a"], battle["model_b"]: battle["answer_b"]}
        for name, text in answers.items():
            assert ("Since you mentioned" in text) == config.contestant(name).profile
        again = p.vote(ref, "2", "1")  # a second vote on the same battle is not a second vote
        assert again.status_code == 303 and len(store.voted_battles()) == 1


def test_no_vote_before_both_answers_have_finished(make_arena: Callable[..., Path],
                                                   open_arena: Callable[..., Any]) -> None:
    slow = {n: {"delay_s": 600} for n in ("assistant-generic", "other-generic", "assistant-personalized")}
    _config, store, client = open_arena(make_arena(contestant_options=slow))
    with client() as c:
        p = Participant(c)
        p.enter()
        ref = p.ask()
        page = c.get(f"/b/{ref}")
        assert 'id="vote-1" disabled' in page.text  # the page opens voting only when both have finished
        refused = p.vote(ref)
        assert refused.status_code == 409 and "Both answers must finish" in refused.text
        assert store.voted_battles() == [] and store.status_counts()["battles"]["streaming"] == 1
        assert c.get("/ask").url.path == f"/b/{ref}"  # asking again leads back to the open battle


def test_a_failed_answer_is_shown_failed_not_counted_and_counted(make_arena: Callable[..., Path],
                                                               open_arena: Callable[..., Any]) -> None:
    failing = {n: {"fail": 1.0, "max_retries": 0} for n in ("assistant-generic", "other-generic",
                                                            "assistant-personalized")}
    _config, store, client = open_arena(make_arena(contestant_options=failing, gold={"rate": 0.0}))
    with client() as c:
        p = Participant(c)
        p.enter()
        ref = p.ask()
        assert p.stream(ref, "1")[1].startswith("failed") and p.stream(ref, "2")[1].startswith("failed")
        refused = p.vote(ref)
        assert refused.status_code == 409 and "not counted" in refused.text
        counts = store.status_counts()
        assert counts["battles"]["failed"] == 1 and counts["failed_total"] == 1 and counts["votes"] == 0
        assert store.voted_battles() == []
        assert c.get("/ask").url.path == "/ask"  # the participant goes on to a new question


def test_flags_gold_and_the_completion_page(make_arena: Callable[..., Path], open_arena: Callable[..., Any]) -> None:
    folder = make_arena(battles={"per_participant": 3, "seed": 0},
                        gold={"rate": 0.5, "battles": [{"question": "2+2?", "better": "4", "worse": "5"}]})
    _config, store, client = open_arena(folder)
    with client() as c:
        p = Participant(c)
        p.enter()
        gold = 0
        for _ in range(3):
            page = c.get("/ask")
            if page.url.path.startswith("/b/"):
                ref, gold = page.url.path.rsplit("/", 1)[-1], gold + 1
            else:
                ref = p.ask()
            p.stream(ref, "1"), p.stream(ref, "2")
            flagged = c.post(f"/b/{ref}/flag", data={"csrf": p.csrf, "pane": "2", "reason": "rude"})
            assert flagged.status_code == 200 and 'id="flagged"' in flagged.text
            assert p.vote(ref).status_code == 303
        done = c.get("/ask")
        assert done.url.path == "/done" and 'id="pid"' in done.text
        counts = store.status_counts()
        assert counts["votes"] == 3 and counts["flags"] == 3 and counts["finished"] == 1
        assert counts["gold_battles"] == gold == sum(v.outcome.gold for v in store.voted_battles())


def test_a_repeat_shows_an_earlier_battle_again(make_arena: Callable[..., Path],
                                                open_arena: Callable[..., Any]) -> None:
    from tailorbench.arena.battles import repeat_pick
    from tailorbench.arena.web.pages import COOKIE

    folder = make_arena(battles={"per_participant": 6, "seed": 0, "repeat_rate": 0.5}, gold={"rate": 0.0})
    config, store, client = open_arena(folder)
    # the draw is seeded per participant id, which is random: enter until a participant's battles 3..6 draw a
    # repeat (1 in 16 draw none), and check that exactly the drawn battles are repeats
    for _ in range(20):
        with client() as c:
            p = Participant(c)
            p.enter()
            me = store.identify(c.cookies.get(COOKIE))
            drawn = {seq for seq in range(1, 7) if repeat_pick(config, me["pid"], seq) is not None}
            if not drawn:
                continue
            for k in range(6):
                page = c.get("/ask")
                ref = (page.url.path.rsplit("/", 1)[-1] if page.url.path.startswith("/b/")
                       else p.ask(f"Question {k}?"))
                assert p.stream(ref, "1")[1] == p.stream(ref, "2")[1] == "done"
                assert p.vote(ref).status_code == 303
            break
    else:
        raise AssertionError("20 participants drew no repeat at a rate of 0.5")
    mine = [v for v in store.voted_battles() if v.pid == me["pid"]]
    assert len(mine) == 6 and drawn <= {3, 4, 5, 6}
    voted = {v.outcome.battle_id: v for v in store.voted_battles()}
    repeats = [v for v in voted.values() if v.outcome.repeat_of is not None]
    assert len(repeats) == len(drawn), (drawn, [r.outcome.battle_id for r in repeats])
    for r in repeats:
        first = voted[r.outcome.repeat_of]
        assert (r.question, r.answer_a, r.answer_b) == (first.question, first.answer_a, first.answer_b)
        assert r.outcome.repeat_of is not None and first.outcome.repeat_of is None
    # a repeat costs nothing: its answers are the earlier battle's
    assert store.counter("spend_usd") == pytest.approx(sum(store.battle(b)["cost_usd"] for b in voted))


def test_spend_caps_stop_new_battles(make_arena: Callable[..., Path], open_arena: Callable[..., Any]) -> None:
    _config, store, client = open_arena(make_arena(spend={"per_participant": 1e-9}))
    with client() as c:
        p = Participant(c)
        p.enter()
        ref = p.ask()
        p.stream(ref, "1"), p.stream(ref, "2")
        assert store.status_counts()["spend_usd"] > 0
        p.vote(ref)
        page = c.get("/ask")
        assert 'data-cap="1"' in page.text and "budget is used up" in page.text
        refused = c.post("/ask", data={"csrf": p.csrf, "question": "one more?"})
        assert 'data-cap="1"' in refused.text and store.status_counts()["battles"]["complete"] == 1


def test_crowd_places_ids_and_codes(make_arena: Callable[..., Path], open_arena: Callable[..., Any]) -> None:
    crowd = {"kind": "prolific", "places": 1, "completion_code": "C0DE", "time_limit_min": 30,
             "completion_url": "https://app.prolific.com/submissions/complete"}
    _config, store, client = open_arena(make_arena(crowd=crowd, battles={"per_participant": 1}))
    with client() as c:
        assert c.get("/").status_code == 400  # a prolific arena needs the platform's id
        p = Participant(c)
        p.enter(external="PROLIFIC1")
        ref = p.ask()
        p.stream(ref, "1"), p.stream(ref, "2")
        p.vote(ref)
        done = c.get("/ask")
        assert 'id="completion-code">C0DE<' in done.text and "cc=C0DE" in done.text
    with client() as other:
        page = other.get("/?PROLIFIC_PID=PROLIFIC2")
        import re

        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        full = other.post("/consent", data={"nonce": nonce, "consent": "yes", "external": "PROLIFIC2"})
        assert full.status_code == 409 and "places" in full.text
    assert store.status_counts()["participants"] == 1


def test_security_checks(make_arena: Callable[..., Path], open_arena: Callable[..., Any]) -> None:
    _config, store, client = open_arena(make_arena())
    with client() as c, client() as stranger:
        p = Participant(c)
        p.enter()
        ref = p.ask()
        assert "script-src 'self'" in c.get(f"/b/{ref}").headers["content-security-policy"]
        assert c.post(f"/b/{ref}/vote", data={"csrf": "wrong", "choice": "1", "confidence": "2"}).status_code == 403
        foreign = c.post(f"/b/{ref}/vote", data={"csrf": p.csrf, "choice": "1", "confidence": "2"},
                         headers={"origin": "https://evil.example"})
        assert foreign.status_code == 403
        assert stranger.get(f"/b/{ref}").status_code == 401  # no session
        q = Participant(stranger)
        q.enter()
        assert stranger.get(f"/b/{ref}").status_code == 404  # someone else's battle: no such battle
        assert c.post("/consent", data={"nonce": "guess", "consent": "yes"}).status_code == 403
    assert store.voted_battles() == []
