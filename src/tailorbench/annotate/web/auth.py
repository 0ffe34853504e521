"""Login by personal link (a server-side session in an HttpOnly cookie), logout, and the logged-out page."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tailorbench.annotate import service
from tailorbench.annotate.web.pages import Site
from tailorbench.annotate.web.security import COOKIE, Denied


def router(site: Site) -> APIRouter:
    routes = APIRouter()

    @routes.get("/login/{token}")
    def login(request: Request, token: str) -> Response:
        client = request.client.host if request.client else "?"
        if site.limiter.blocked(client):
            raise Denied(429, "Too many failed login attempts. Wait a minute and use your own link.")
        with site.tx() as s:
            got = service.login(s, token)
        if got is None:
            site.limiter.failed(client)
            raise Denied(403, "This login link is not valid. Ask your admin for a new one.")
        cookie, user = got
        response = RedirectResponse("/admin" if user.role == "admin" else "/", status_code=303)
        response.set_cookie(COOKIE, cookie, max_age=service.SESSION_DAYS * 86400, httponly=True,
                            secure=site.is_secure(request), samesite="lax", path="/")
        return response

    @routes.post("/logout")
    async def logout(request: Request) -> Response:
        form = await site.read_form(request)
        with site.tx() as s:
            ident = site.who(s, request)
            site.check_csrf(request, ident, form)
            service.logout(s, ident.session_hash)
        site.sessions.drop(ident.session_hash)
        response = RedirectResponse("/bye", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @routes.get("/bye")
    def bye(request: Request) -> HTMLResponse:
        return site.page(request, "message.html", {"title": "Logged out", "message": "You are logged out.",
                                                   "me": None})

    return routes
