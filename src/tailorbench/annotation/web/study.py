"""Crowd studies in the browser (annotate/studies.py): the study link's consent page and the entry it confirms,
a participant's current page (an item, or the way out), and the completion page that sends them back to the
platform with their code.

The consent form is posted before any session exists, so it carries its own CSRF protection: a random nonce in
a short-lived `tb_consent` cookie (HttpOnly, SameSite=Strict, path /s/) that the form repeats. Another site can
neither read that cookie nor have it sent with a cross-site POST, so it cannot enter someone else's browser into
a study under an id of its choosing; the Origin check refuses such a POST first anyway.

The way out is a 303 to the platform's completion URL from `/s/complete`, a plain GET. The last submission
answers with a page that refreshes to it at once (with a link, should the refresh be blocked), never with a
redirect: the Content-Security-Policy's `form-action 'self'` stops a form's redirect chain at another origin
(chromium aborts the navigation), and the platform is another origin.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from tailorbench.annotation import service, studies, tasks
from tailorbench.annotation.submit_sql import Gone
from tailorbench.annotation.web.security import COOKIE, Denied

if TYPE_CHECKING:
    from tailorbench.annotation.web.pages import Site

CONSENT_COOKIE = "tb_consent"
CONSENT_COOKIE_S = 3600
COMPLETE = "/s/complete"


def _exit_page(site: Site, request: Request, ident: service.Identity, step: studies.Exit) -> HTMLResponse:
    """A participant who is out of the study without a code (time is up, returned, no items left)."""
    return site.page(request, "message.html", {"title": step.title, "message": step.message, "me": ident},
                     step.status)


def time_up_page(site: Site, request: Request, s: Session, ident: service.Identity) -> HTMLResponse | None:
    """"Time is up" (410) for a participant who timed out or returned the study, on any route of theirs (their
    items went back to the queue: say why, not "no such assignment"); None for everyone else."""
    up = studies.time_is_up(s, ident.user_id) if ident.role == studies.ROLE else None
    return None if up is None else _exit_page(site, request, ident, up)


def assignment_page(site: Site, request: Request,
                    view: Callable[[Session, service.Identity], dict[str, Any]]) -> Response:
    """One assignment's task page (`view`: its context, NotFound when it is not the user's: a 404); a finished
    one sends the user on to their current page, a participant out of time gets "Time is up"."""
    with site.tx() as s:
        ident = site.who(s, request)
        if (up := time_up_page(site, request, s, ident)) is not None:
            return up
        try:
            ctx = view(s, ident)
        except service.NotFound:
            raise Denied(404, "No such assignment.") from None
    if ctx["assignment"]["done"]:
        return RedirectResponse(f"/p/{ctx['project']['id']}", status_code=303)
    return site.task_page(request, ident, ctx)


def refused_page(site: Site, request: Request, exc: studies.Refused) -> HTMLResponse:
    return site.page(request, "message.html", {"title": exc.title, "message": exc.message, "me": None}, exc.status)


def participant_view(s: Session, ident: service.Identity, assignment_id: int, project_id: int | None = None,
                     ) -> dict[str, Any]:
    """A participant's task page context: their place counted down from the quota, the assignment reached by
    its opaque reference, and no item id (nothing on the page tells which item, tier or gold status it is)."""
    if project_id is None:
        project_id = service.assignment_project(s, assignment_id)
    ctx = service.assignment_view(s, ident.user_id, assignment_id, quota=studies.quota(s, ident.user_id, project_id))
    return {**ctx, "item_id": "", "ref": studies.assignment_ref(s, assignment_id)}


def current_page(site: Site, request: Request, ident: service.Identity, project_id: int) -> Response:
    """A participant's current page: their task page, or the way out (the completion page, or a page saying
    their time is up). Someone with the participant role who is in no study of this project gets the ordinary
    pages."""
    step: service.Current | studies.Exit | None
    with site.tx() as s:
        try:
            step = studies.next_assignment(s, ident.user_id, project_id)
            if step is None:  # in no study of this project: the ordinary rules
                step = service.next_assignment(s, ident.user_id, project_id)
        except service.NotFound:
            raise Denied(404, "No such project.") from None
        if step is None:
            counts = service.my_counts(s, ident.user_id, project_id)
        elif isinstance(step, service.Current):
            ctx = participant_view(s, ident, step.id, project_id)
    if step is None:
        return site.done_page(request, ident, project_id, counts)
    if isinstance(step, studies.Exit):
        if step.url is None:
            return _exit_page(site, request, ident, step)
        if request.method == "POST":  # the last submission: a page that moves on by itself (see the docstring)
            return complete_page(site, request, ident)
        return RedirectResponse(COMPLETE, status_code=303)
    return site.task_page(request, ident, ctx)


def complete_page(site: Site, request: Request, ident: service.Identity) -> Response:
    """The page after the last submission: it moves on to the platform by itself, and shows the code with a
    copy button, should the refresh be blocked (the worker then has something to paste)."""
    with site.tx() as s:
        code = studies.exit_code(s, ident.user_id)
        target = studies.exit_url(s, ident.user_id)
    return site.page(request, "study_complete.html", {"complete_url": COMPLETE, "code": code,
                                                     "platform_url": target})


def router(site: Site) -> APIRouter:
    routes = APIRouter()
    site.participant_page = current_page  # the annotator routes hand participants' pages to this module

    @routes.get("/s/complete")
    def complete(request: Request) -> Response:
        """The participant's way back to the platform, with their code (once they are done or screened out)."""
        ident = site.who_now(request)
        if ident.role != studies.ROLE:
            raise Denied(404, "There is nothing to complete: this page is for study participants.")
        with site.tx() as s:
            exit_url = studies.exit_url(s, ident.user_id)
        if exit_url is None:
            return RedirectResponse("/", status_code=303)  # not done yet: back to their work
        return RedirectResponse(exit_url, status_code=303)

    @routes.get("/s/later")
    def later(request: Request) -> Response:
        """"Continue later" (participants have no log-out): their session and place are kept until the time
        limit; the study link in this browser, or this page's link, brings them back."""
        ident = site.who_now(request)
        if ident.role != studies.ROLE:
            raise Denied(404, "This page is for study participants.")
        with site.tx() as s:
            until = studies.place_kept_until(s, ident.user_id)
        return site.page(request, "study_later.html", {"me": ident, "until": until})

    @routes.get("/t/{ref}")
    def show_ref(request: Request, ref: str) -> Response:
        """A participant's assignment by its opaque reference."""
        return assignment_page(site, request,
                               lambda s, ident: participant_view(s, ident, studies.by_ref(s, ident.user_id, ref)))

    def submit_ref(request: Request, ref: str, form: dict[str, str]) -> Response:
        ident = site.who_now(request)
        site.check_csrf(request, ident, form)
        try:
            with site.tx() as s:
                if (up := time_up_page(site, request, s, ident)) is not None:
                    return up
                assignment_id = studies.by_ref(s, ident.user_id, ref)
            got = studies.submit_and_next(site.db, ident.user_id, assignment_id, form)
        except (service.NotFound, Gone):
            raise Denied(404, "No such assignment.") from None
        except tasks.FormError as exc:  # nothing stored: the page again with the reason
            with site.tx() as s:
                ctx = participant_view(s, ident, assignment_id)
            return site.task_page(request, ident, ctx, error=str(exc), status=422)
        return site.current_page(request, ident, got.project_id)

    async def post_ref(request: Request) -> Response:
        form = await site.read_form(request)
        return await run_in_threadpool(submit_ref, request, request.path_params["ref"], form)

    routes.add_route("/t/{ref}", post_ref, methods=["POST"])

    @routes.get("/s/{secret}")
    def consent_page(request: Request, secret: str) -> Response:
        try:
            with site.tx() as s:
                study = studies.find_study(s, secret)
                ids = studies.entry_params(study, dict(request.query_params))
                ident = site.sessions.lookup(s, request.cookies.get(COOKIE))
                studies.release_timed_out(s, study)  # their places and items count as free
                mine = studies.check_entry(s, study, ids, ident.user_id if ident else None)
                project = service.find_project(s, study.project_id)
                info = {"project": project.name, "instructions": project.instructions, "quota": study.quota,
                        "time_limit_min": study.time_limit_min, "external_id": ids.external_id,
                        "consent": study.consent}
        except studies.Refused as exc:
            return refused_page(site, request, exc)
        if mine is not None:  # their own browser: straight back to their work
            return RedirectResponse(f"/p/{studies.resume(site.db, mine.id, ids)}", status_code=303)
        nonce = request.cookies.get(CONSENT_COOKIE) or secrets.token_urlsafe(32)
        action = f"/s/{secret}?{request.url.query}"
        response = site.page(request, "consent.html", {"me": None, "study": info, "nonce": nonce,
                                                       "action": action})
        response.set_cookie(CONSENT_COOKIE, nonce, max_age=CONSENT_COOKIE_S, httponly=True,
                            secure=site.is_secure(request), samesite="strict", path="/s/")
        return response

    @routes.post("/s/{secret}")
    async def consent(request: Request, secret: str) -> Response:
        form = await site.read_form(request)
        site.check_origin(request)
        nonce = request.cookies.get(CONSENT_COOKIE)
        if not nonce or not secrets.compare_digest(form.get("nonce", ""), nonce):
            raise Denied(403, "This consent page has expired, or the browser did not keep its cookie. Open the "
                              "study link again.")
        if form.get("consent") != "yes":
            raise Denied(422, "Please tick the consent box to take part, or return the study on the platform.")
        try:
            with site.tx() as s:
                ids = studies.entry_params(studies.find_study(s, secret), dict(request.query_params))
            cookie, project_id = studies.enter(site.db, secret, ids)
        except studies.Refused as exc:
            return refused_page(site, request, exc)
        old = request.cookies.get(COOKIE)
        if old:  # another session in this browser ends here
            with site.tx() as s:
                service.logout(s, service.token_hash(old))
            site.sessions.drop(service.token_hash(old))
        response = RedirectResponse(f"/p/{project_id}", status_code=303)
        response.set_cookie(COOKIE, cookie, max_age=service.SESSION_DAYS * 86400, httponly=True,
                            secure=site.is_secure(request), samesite="lax", path="/")
        response.delete_cookie(CONSENT_COOKIE, path="/s/")
        return response

    return routes
