"""The admin's users page: accounts, their login links (single-use, with a lifetime) and their deactivation.
Every route asks for an admin session (403 for anyone else); a new link is shown once, on the page that made
it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tailorbench.annotation import service
from tailorbench.annotation.models import utcnow
from tailorbench.annotation.web.pages import Site
from tailorbench.annotation.web.security import Denied
from tailorbench.errors import TailorError


def _link_days(form: dict[str, str]) -> float:
    """The form's link lifetime in days (the default when empty); 422 for anything else than a number."""
    raw = (form.get("link_days") or "").strip()
    try:
        return float(raw) if raw else float(service.LINK_DAYS)
    except ValueError:
        raise Denied(422, "Link lifetime: give a number of days.") from None


def router(site: Site) -> APIRouter:
    routes = APIRouter()
    db = site.db

    def users_page(request: Request, ident: service.Identity, **extra: Any) -> HTMLResponse:
        ctx = {"me": ident, "users": service.list_users(db), "projects": service.list_projects(db),
               "link": None, "link_name": "", "message": "", "link_days": service.LINK_DAYS,
               "now": utcnow().isoformat(), **extra}
        return site.page(request, "admin_users.html", ctx)

    async def admin_form(request: Request) -> tuple[service.Identity, dict[str, str]]:
        form = await site.read_form(request)
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            site.check_csrf(request, ident, form)
        return ident, form

    def link_url(request: Request, token: str) -> str:
        return f"{str(request.base_url).rstrip('/')}/login/{token}"

    @routes.get("/admin/users")
    def admin_users(request: Request) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        return users_page(request, ident)

    @routes.post("/admin/users")
    async def admin_add_user(request: Request) -> HTMLResponse:
        ident, form = await admin_form(request)
        projects = [form["project"]] if form.get("project") else []
        name = form.get("name", "").strip()
        try:
            _, token = service.add_user(db, name, form.get("role") or "annotator", projects, _link_days(form))
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        return users_page(request, ident, link=link_url(request, token), link_name=name)

    @routes.post("/admin/users/link")
    async def admin_new_link(request: Request) -> HTMLResponse:
        """A new link for an account (a lost cookie, a new browser): the old link and its sessions end."""
        ident, form = await admin_form(request)
        name = form.get("name", "")
        if name == ident.name:  # a new link ends the account's sessions: this one too
            raise Denied(422, "A new link for your own account would log you out here (use the command line).")
        try:
            token = service.rotate_link(db, name, _link_days(form))
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        user = next(u for u in service.list_users(db) if u["name"] == name)
        site.sessions.drop_user(user["id"])
        return users_page(request, ident, link=link_url(request, token), link_name=name)

    @routes.post("/admin/users/active")
    async def admin_set_active(request: Request) -> HTMLResponse:
        ident, form = await admin_form(request)
        name, active = form.get("name", ""), form.get("active") == "1"
        if not active and name == ident.name:
            raise Denied(422, "You cannot deactivate your own account here (use the command line).")
        try:
            done = service.set_active(db, name, active)
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        if not active:
            site.sessions.drop_user(done.user_id)  # no cached session of theirs outlives this in this process
            message = f"{name} is deactivated; {done.released} unfinished assignments went back to the queue."
        else:
            message = f"{name} is active again (a new login link may be needed)."
        return users_page(request, ident, message=message)

    return routes
