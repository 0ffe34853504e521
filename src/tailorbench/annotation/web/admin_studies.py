"""The admin's crowd-study pages: every study with its state (open, closed, full, items exhausted), its items
left, its participants by status and its link; one study's participants with their state, items, gold score,
time and code (the figures of `tailor annotate crowd list` / `crowd participants`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from tailorbench.annotation import service, studies
from tailorbench.annotation.web.pages import Site
from tailorbench.annotation.web.security import Denied


def router(site: Site) -> APIRouter:
    routes = APIRouter()

    @routes.get("/admin/studies")
    def study_index(request: Request) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        rows = studies.list_studies(site.db)
        base = str(request.base_url)
        for row in rows:
            row["link"] = studies.link(site.db, row["id"], base) if row["link_kept"] else None
        return site.page(request, "admin_studies.html", {"me": ident, "studies": rows,
                                                         "statuses": studies.STATUSES})

    @routes.get("/admin/studies/{study_id:id}")
    def study_page(request: Request, study_id: int) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        try:
            row = studies.list_studies(site.db, study_id)[0]
            participants = studies.participants(site.db, study_id)
        except service.NotFound:
            raise Denied(404, "No such study.") from None
        return site.page(request, "admin_study.html", {"me": ident, "study": row, "participants": participants,
                                                       "statuses": studies.STATUSES})

    return routes
