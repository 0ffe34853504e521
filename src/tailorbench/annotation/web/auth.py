"""Login by personal link, confirmed by a POST (then a server-side session in an HttpOnly cookie), logout, and
the logged-out page.

GET /login/TOKEN only shows a confirmation page, so a link preview, a mail scanner or another site's navigation
never logs anyone in and never uses the link up; the page's form POSTs back and only that POST logs in, using the
link up. The form carries a nonce bound to this browser and this link: an HMAC of the link's token hash keyed by
a random value kept in a short-lived `tb_login` cookie (HttpOnly, SameSite=Strict, path /login/). Another site
can neither read that cookie nor have it sent with a cross-site POST, so it cannot confirm a login in someone
else's browser even with a link of its own (login CSRF); the Origin check refuses such a POST first anyway.

Refused links are throttled per client address (`LoginLimiter`) only after they were looked up: a live link
always logs in."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tailorbench.annotation import service
from tailorbench.annotation.web.pages import Site
from tailorbench.annotation.web.security import COOKIE, Denied

#: the confirmation page's cookie (a random key of its nonces) and how long a confirmation page stays usable
LOGIN_COOKIE = "tb_login"
LOGIN_COOKIE_S = 3600
REFUSED = {
    "unknown": "This login link is not valid. Check that it was copied whole, or ask your admin for a new one.",
    "used": "This login link has been used already. A link logs you in once; after that the browser you used "
            "keeps you logged in. In another browser, or after clearing cookies, ask your admin for a new link.",
    "expired": "This login link has expired. Ask your admin for a new one.",
    "inactive": "This account is deactivated. Ask your admin if you should still have access.",
}


def login_nonce(key: str, token: str) -> str:
    """The confirmation form's nonce: bound to the browser (`key`, from its tb_login cookie) and to the link."""
    return hmac.new(key.encode(), service.token_hash(token).encode(), hashlib.sha256).hexdigest()


def home(role: str) -> str:
    return "/admin" if role == "admin" else "/"


def router(site: Site) -> APIRouter:
    routes = APIRouter()

    def refuse(request: Request, why: str) -> Denied:
        """The answer to a refused link; the address's bad attempts are counted (and capped)."""
        client = request.client.host if request.client else "?"
        if site.limiter.blocked(client):
            return Denied(429, "Too many bad login links from your address. Wait a minute; a valid link still "
                               "works meanwhile.")
        site.limiter.failed(client)
        return Denied(403, REFUSED[why])

    @routes.get("/login/{token}")
    def login_page(request: Request, token: str) -> Response:
        with site.tx() as s:
            current = site.sessions.lookup(s, request.cookies.get(COOKIE))
            try:
                user = service.check_link(s, token)
            except service.LinkRefused as exc:
                if exc.why == "used" and current is not None and current.user_id == exc.user_id:
                    return RedirectResponse(home(current.role), status_code=303)  # their link, clicked again
                raise refuse(request, exc.why) from None
            name = user.name
        key = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(32)
        response = site.page(request, "login.html", {
            "me": None, "name": name, "token": token, "nonce": login_nonce(key, token), "current": current,
            "home": home(current.role) if current else "/"})
        response.set_cookie(LOGIN_COOKIE, key, max_age=LOGIN_COOKIE_S, httponly=True, secure=site.is_secure(request),
                            samesite="strict", path="/login/")
        return response

    @routes.post("/login/{token}")
    async def login(request: Request, token: str) -> Response:
        form = await site.read_form(request)
        site.check_origin(request)
        key = request.cookies.get(LOGIN_COOKIE)
        if not key or not secrets.compare_digest(form.get("nonce", ""), login_nonce(key, token)):
            raise Denied(403, "This login page has expired, or the browser did not keep its cookie. Open your "
                              "login link again.")
        old = request.cookies.get(COOKIE)
        try:
            with site.tx() as s:
                cookie, user = service.login(s, token)
                role = user.role
                if old:  # another session in this browser (someone else's, or an older one): it ends here
                    service.logout(s, service.token_hash(old))
        except service.LinkRefused as exc:
            raise refuse(request, exc.why) from None
        if old:
            site.sessions.drop(service.token_hash(old))
        response = RedirectResponse(home(role), status_code=303)
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
