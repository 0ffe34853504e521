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
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tailorbench.annotation import service, studies
from tailorbench.annotation.web.security import COOKIE, Denied

if TYPE_CHECKING:
    from tailorbench.annotation.web.pages import Site

CONSENT_COOKIE = "tb_consent"
CONSENT_COOKIE_S = 3600
COMPLETE = "/s/complete"


def refused_page(site: Site, request: Request, exc: studies.Refused) -> HTMLResponse:
    return site.page(request, "message.html", {"title": exc.title, "message": exc.message, "me": None}, exc.status)


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
            ctx = service.assignment_view(s, ident.user_id, step.id,
                                          quota=studies.quota(s, ident.user_id, project_id))
    if step is None:
        return site.done_page(request, ident, project_id, counts)
    if isinstance(step, studies.Exit):
        if step.url is None:
            return site.page(request, "message.html", {"title": step.title, "message": step.message, "me": ident},
                             step.status)
        if request.method == "POST":  # the last submission: a page that moves on by itself (see the docstring)
            return site.page(request, "study_complete.html", {"complete_url": COMPLETE})
        return RedirectResponse(COMPLETE, status_code=303)
    return site.task_page(request, ident, ctx)


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

    @routes.get("/s/{secret}")
    def consent_page(request: Request, secret: str) -> Response:
        try:
            with site.tx() as s:
                study = studies.find_study(s, secret)
                ids = studies.entry_params(study, dict(request.query_params))
                ident = site.sessions.lookup(s, request.cookies.get(COOKIE))
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
