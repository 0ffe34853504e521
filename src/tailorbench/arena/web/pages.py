"""The participant's routes: consent, profile, ask, battle (with its two event streams), vote, flag, done.

The vote's keys and buttons name the sides as shown (1 / A: the left answer, 2 / B: the right one, 3 / T: a tie,
4 / X: both bad); the server turns a side into the contestant shown there from the battle's recorded order, so
the stored outcome is model_a's / model_b's whatever side each was on.
"""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from tailorbench.arena.web.site import CONSENT_COOKIE, COOKIE, ArenaSite, Denied

#: what a vote's `choice` field may be, and what it means as shown
CHOICES = {"1": "left", "2": "right", "3": "tie", "4": "both_bad"}
#: what the consent page lists as stored (docs/arena.md, "Privacy")
STORED = ("a random participant id (and the crowd platform's id, if you came from one), kept apart from any "
          "export, which names you by a pseudonym",
          "your answers to the profile questions",
          "the questions you ask and the two answers to each",
          "your votes, their confidence and any reason you give, and the answers you flag",
          "the time you agreed and finished, and the cost of the answers made for you")


def _go(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def router(site: ArenaSite) -> APIRouter:
    routes = APIRouter()
    config = site.config

    @routes.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @routes.get("/", response_class=HTMLResponse)
    def consent_page(request: Request) -> Response:
        me = site.store.identify(request.cookies.get(COOKIE))
        if me is not None:
            return _go("/ask" if me["profile"] else "/profile")
        external = request.query_params.get("PROLIFIC_PID")
        if config.crowd.kind == "prolific" and not external:
            raise Denied(400, "Open this arena from the study's link on the crowd platform.", "No participant id")
        nonce = secrets.token_urlsafe(16)
        response = site.page(request, "consent.html", {"stored": STORED, "nonce": nonce, "external": external or ""})
        response.set_cookie(CONSENT_COOKIE, nonce, max_age=3600, httponly=True, samesite="strict", path="/")
        return response

    @routes.post("/consent")
    async def consent(request: Request) -> Response:
        site.check_origin(request)
        form = await request.form()
        nonce = request.cookies.get(CONSENT_COOKIE)
        if not nonce or form.get("nonce") != nonce:
            raise Denied(403, "This consent form has expired: open the arena's link again.", "Refused")
        if form.get("consent") != "yes":
            return site.message(request, "Thank you", "You did not agree, so nothing was stored.")
        external = str(form.get("external") or "") or None
        if config.crowd.kind == "prolific":
            if external is None:
                raise Denied(400, "Open this arena from the study's link on the crowd platform.", "No participant id")
            if not await run_in_threadpool(_place_left, site, external):
                raise Denied(409, "All places of this study are taken. Thank you for your interest.", "Study full")
        _pid, token = await run_in_threadpool(site.store.new_participant, external)
        response = _go("/profile")
        response.set_cookie(COOKIE, token, httponly=True, samesite="lax", secure=request.url.scheme == "https")
        response.delete_cookie(CONSENT_COOKIE, path="/")
        return response

    @routes.get("/profile", response_class=HTMLResponse)
    def profile_page(request: Request) -> Response:
        me = site.who(request)
        return site.page(request, "profile.html", {"me": me, "fields": config.profile.fields, "errors": {},
                                                   "given": {}})

    @routes.post("/profile")
    async def profile(request: Request) -> Response:
        me = await run_in_threadpool(site.who, request)
        form = await request.form()
        site.check_csrf(request, me, form)
        answers, errors = _profile_answers(site, form)
        if errors:
            return site.page(request, "profile.html", {"me": me, "fields": config.profile.fields, "errors": errors,
                                                       "given": {k: str(v) for k, v in form.items()}}, 422)
        await run_in_threadpool(site.store.set_profile, me["id"], answers)
        return _go("/ask")

    @routes.get("/ask", response_class=HTMLResponse)
    async def ask_page(request: Request) -> Response:
        me = await run_in_threadpool(site.who, request)
        if not me["profile"]:
            return _go("/profile")
        gate = await run_in_threadpool(_gate, site, me)
        if gate is not None:
            return gate if isinstance(gate, Response) else _go(gate)
        from tailorbench.arena.battles import gold_for, repeat_pick

        seq = (await run_in_threadpool(site.store.progress, me["id"]))["started"] + 1
        gold = gold_for(config, me["pid"], seq)
        if gold is not None:
            question, better, answer_a, answer_b = gold
            ref = await run_in_threadpool(site.store.create_battle, me["id"], question, "gold", "gold-a", "gold-b",
                                          True, (better, answer_a, answer_b))
            return _go(f"/b/{ref}")
        repeat = repeat_pick(config, me["pid"], seq)
        if repeat is not None:
            again = await run_in_threadpool(site.store.repeat_battle, me["id"], repeat)
            if again is not None:
                return _go(f"/b/{again}")
        done = (await run_in_threadpool(site.store.progress, me["id"]))["voted"]
        return site.page(request, "ask.html", {"me": me, "own": config.questions.own, "pool": bool(site.pool),
                                               "done": done, "total": config.battles.per_participant,
                                               "max_chars": config.questions.max_chars})

    @routes.post("/ask")
    async def ask(request: Request) -> Response:
        me = await run_in_threadpool(site.who, request)
        form = await request.form()
        site.check_csrf(request, me, form)
        if not me["profile"]:
            return _go("/profile")
        gate = await run_in_threadpool(_gate, site, me)
        if gate is not None:
            return gate if isinstance(gate, Response) else _go(gate)
        question, source = _question(site, me, form)
        from tailorbench.arena.battles import draw_pair

        seq = (await run_in_threadpool(site.store.progress, me["id"]))["started"] + 1
        model_a, model_b, a_left = draw_pair(config, me["pid"], seq)
        ref = await run_in_threadpool(site.store.create_battle, me["id"], question, source, model_a, model_b, a_left)
        site.generator.start(ref)
        return _go(f"/b/{ref}")

    @routes.get("/b/{ref}", response_class=HTMLResponse)
    async def battle_page(request: Request, ref: str) -> Response:
        me = await run_in_threadpool(site.who, request)
        battle = await run_in_threadpool(_mine, site, me, ref)
        if battle["voted"] is not None:
            return _go("/ask")
        return site.page(request, "battle.html", {"me": me, "b": battle, "reason": config.vote.reason,
                                                  "reason_max": config.vote.reason_max_chars,
                                                  "flagged": request.query_params.get("flagged") == "1"})

    @routes.get("/b/{ref}/s/{pane}")
    async def battle_stream(request: Request, ref: str, pane: str) -> Response:
        from tailorbench.arena.web.stream import side_events

        me = await run_in_threadpool(site.who, request)
        battle = await run_in_threadpool(_mine, site, me, ref)
        if pane not in ("1", "2"):
            raise Denied(404, "No such page.")
        side = _side(battle, pane)
        return StreamingResponse(side_events(site, battle, side), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    @routes.post("/b/{ref}/vote")
    async def vote(request: Request, ref: str) -> Response:
        me = await run_in_threadpool(site.who, request)
        form = await request.form()
        site.check_csrf(request, me, form)
        battle = await run_in_threadpool(_mine, site, me, ref)
        choice, confidence = CHOICES.get(str(form.get("choice", ""))), str(form.get("confidence", ""))
        if choice is None or confidence not in ("1", "2", "3"):
            raise Denied(422, "Choose an answer (1-4) and how sure you are (1-3).", "Not valid")
        reason = str(form.get("reason") or "").strip()[: config.vote.reason_max_chars] or None
        outcome = choice if choice in ("tie", "both_bad") else _contestant(battle, choice)
        got = await run_in_threadpool(site.store.vote, ref, me["id"], outcome, int(confidence),
                                      reason if config.vote.reason else None)
        if got == "not_ready":
            raise Denied(409, "Both answers must finish before you vote: wait for them, then vote.", "Not yet")
        if got == "failed":
            return site.message(request, "This battle failed", "An answer failed, so this battle is not counted.",
                                409, {"next": "/ask"})
        if got == "gone":
            raise Denied(404, "No such battle.")
        if site.events is not None:
            site.events.write({"event": "vote", "ref": ref, "pid": me["pid"], "result": got})
        return _go("/ask")

    @routes.post("/b/{ref}/flag")
    async def flag(request: Request, ref: str) -> Response:
        me = await run_in_threadpool(site.who, request)
        form = await request.form()
        site.check_csrf(request, me, form)
        battle = await run_in_threadpool(_mine, site, me, ref)
        pane = str(form.get("pane", ""))
        if pane not in ("1", "2"):
            raise Denied(422, "Say which answer you flag.", "Not valid")
        reason = str(form.get("reason") or "").strip()[:500] or None
        await run_in_threadpool(site.store.flag, ref, me["id"], _side(battle, pane), reason)
        return _go(f"/b/{ref}?flagged=1")

    @routes.get("/done", response_class=HTMLResponse)
    async def done(request: Request) -> Response:
        me = await run_in_threadpool(site.who, request)
        await run_in_threadpool(site.store.finish, me["id"])
        crowd = config.crowd
        url = None
        if crowd.completion_url and crowd.completion_code:
            sep = "&" if "?" in crowd.completion_url else "?"
            url = f"{crowd.completion_url}{sep}cc={crowd.completion_code}"
        return site.page(request, "done.html", {"me": me, "code": crowd.completion_code, "url": url})

    return routes


def _place_left(site: ArenaSite, external: str) -> bool:
    """A crowd participant may enter while places are left (one seen before always may: a new session)."""
    from sqlalchemy import func, select

    from tailorbench.arena import tables as t

    places = site.config.crowd.places or 0
    with site.store.tx() as conn:
        if site.store.participant(conn, external) is not None:
            return True
        taken = conn.execute(select(func.count()).select_from(t.participants).where(
            t.participants.c.external_id.is_not(None))).scalar_one()
    return int(taken) < places


def _gate(site: ArenaSite, me: dict[str, Any]) -> Response | str | None:
    """Where a participant goes instead of a new battle: back to their open battle, to the end when they have
    voted enough, or the spend-cap page; None: a new battle."""
    open_ref = site.store.open_battle(me["id"])
    if open_ref is not None:
        return f"/b/{open_ref}"
    if site.store.progress(me["id"])["voted"] >= site.config.battles.per_participant:
        return "/done"
    spend = site.config.spend
    if spend.per_participant is not None and float(me["spend_usd"]) >= spend.per_participant:
        return _cap_page(site, "your share of this arena's budget is used up")
    if spend.per_arena is not None and site.store.counter("spend_usd") >= spend.per_arena:
        return _cap_page(site, "this arena's budget is used up")
    return None


def _cap_page(site: ArenaSite, why: str) -> Response:
    body = site.templates.get_template("message.html").render(
        config=site.config, illustrative=site.config.illustrative, title="No more questions",
        message=f"Thank you: {why}, so no new questions can be answered.", next="/done", cap=True)
    return HTMLResponse(body, status_code=200)


def _profile_answers(site: ArenaSite, form: Any) -> tuple[dict[str, Any], dict[str, str]]:
    answers: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    for f in site.config.profile.fields:
        value = str(form.get(f"f_{f.key}", "")).strip()
        if not value:
            if f.required:
                errors[f.key] = "Please answer this question."
            continue
        if f.choices is not None and value not in f.choices:
            errors[f.key] = "Choose one of the answers offered."
        elif len(value) > f.max_chars:
            errors[f.key] = f"At most {f.max_chars} characters."
        else:
            answers.setdefault(f.section, {})[f.key] = value
    return dict(answers), errors


def _question(site: ArenaSite, me: dict[str, Any], form: Any) -> tuple[str, str]:
    """The battle's question: the participant's own, or one drawn from the pool (seeded by participant and
    battle number)."""
    import random

    own = str(form.get("question") or "").strip()
    if own and site.config.questions.own:
        if len(own) > site.config.questions.max_chars:
            raise Denied(422, f"Your question is longer than {site.config.questions.max_chars} characters.",
                         "Too long")
        return own, "own"
    if form.get("pool") and site.pool:
        seq = site.store.progress(me["id"])["started"]
        rng = random.Random(f"{site.config.battles.seed}:{me['pid']}:{seq}:pool")
        return site.pool[rng.randrange(len(site.pool))], "pool"
    raise Denied(422, "Write a question, or take one from the pool.", "No question")


def _mine(site: ArenaSite, me: dict[str, Any], ref: str) -> dict[str, Any]:
    battle = site.store.battle(ref)
    if battle is None or battle["participant_id"] != me["id"]:
        raise Denied(404, "No such battle.")
    return battle


def _side(battle: dict[str, Any], pane: str) -> str:
    """The contestant side (a / b) shown in pane 1 (left) or 2 (right)."""
    left = "a" if battle["a_left"] else "b"
    return left if pane == "1" else ("b" if left == "a" else "a")


def _contestant(battle: dict[str, Any], shown: str) -> str:
    return _side(battle, "1" if shown == "left" else "2")
