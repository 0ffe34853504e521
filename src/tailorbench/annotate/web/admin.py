"""The admin pages: projects and their progress, agreement so far, flagged labels, imports, members, exports, and
users with their login links. Every route asks for an admin session (403 for anyone else)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile

from tailorbench.annotate import service, tasks
from tailorbench.annotate.web.pages import Site, export_files, known_export_files
from tailorbench.annotate.web.security import Denied
from tailorbench.errors import TailorError


def router(site: Site) -> APIRouter:
    routes = APIRouter()
    db = site.db

    @routes.get("/admin")
    def admin_index(request: Request) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        projects = service.list_projects(db)
        for p in projects:
            p["progress"] = service.progress(db, p["id"])
        return site.page(request, "admin_index.html", {"me": ident, "projects": projects,
                                                       "task_types": tasks.TASK_TYPES.names()})

    @routes.post("/admin/projects")
    async def admin_create_project(request: Request) -> Response:
        form = await site.read_form(request)
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            site.check_csrf(request, ident, form)
        try:
            pid = service.create_project(db, form.get("name", ""), form.get("task_type", ""),
                                         int(form.get("n_per_item") or 3), form.get("instructions", ""),
                                         int(form.get("gold_every") or 5))
        except (TailorError, ValueError) as exc:
            raise Denied(422, f"Project not created: {exc}") from None
        return RedirectResponse(f"/admin/p/{pid}", status_code=303)

    @routes.get("/admin/p/{project_id}")
    def admin_project(request: Request, project_id: int) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        try:
            prog = service.progress(db, project_id)
        except service.NotFound:
            raise Denied(404, "No such project.") from None
        agreement = service.agreement_so_far(db, project_id)
        users = [u for u in service.list_users(db) if u["role"] == "annotator"]
        return site.page(request, "admin_project.html", {
            "me": ident, "project_id": project_id, "prog": prog, "agreement": agreement,
            "flagged": service.flagged(db, project_id), "users": users, "files": export_files(prog["task_type"]),
            "formats": ["auto", *tasks.task_type(prog["task_type"]).import_formats],
            "message": request.query_params.get("msg", ""),
        })

    @routes.get("/admin/p/{project_id}/agreement.json")
    def admin_agreement(request: Request, project_id: int) -> JSONResponse:
        with site.tx() as s:
            site.who(s, request, admin=True)
        return JSONResponse(service.agreement_so_far(db, project_id))

    @routes.post("/admin/p/{project_id}/import")
    async def admin_import(request: Request, project_id: int) -> Response:
        form = await request.form()
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            site.check_csrf(request, ident, {"csrf": str(form.get("csrf", ""))})
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise Denied(422, "Choose a JSONL file to import.")
        name = Path(upload.filename or "upload.jsonl").name
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(await upload.read())
            try:
                got = service.import_items(db, project_id, path, str(form.get("format") or "auto"))
            except TailorError as exc:
                raise Denied(422, f"Nothing was imported: {exc}") from None
        msg = f"imported {got['items']} items and {got['gold_items']} gold items ({got['format']})"
        return RedirectResponse(f"/admin/p/{project_id}?msg={msg}", status_code=303)

    @routes.post("/admin/p/{project_id}/members")
    async def admin_members(request: Request, project_id: int) -> Response:
        form = await site.read_form(request)
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            site.check_csrf(request, ident, form)
        try:
            service.add_member(db, project_id, form.get("user", ""))
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        return RedirectResponse(f"/admin/p/{project_id}", status_code=303)

    @routes.get("/admin/p/{project_id}/export/{name}")
    def admin_export(request: Request, project_id: int, name: str) -> Response:
        with site.tx() as s:
            site.who(s, request, admin=True)
        if name not in known_export_files():
            raise Denied(404, "No such export file.")
        tmp = tempfile.mkdtemp(prefix="tb-export-")
        try:
            written = service.export(db, project_id, tmp)
        except service.NotFound:
            shutil.rmtree(tmp)
            raise Denied(404, "No such project.") from None
        path = Path(tmp) / name
        if name not in written["files"] or not path.is_file():
            shutil.rmtree(tmp)
            raise Denied(404, f"{name} is not written for this project's task type.")
        media = "text/csv" if name.endswith(".csv") else "application/json"
        return FileResponse(path, media_type=media, filename=name, background=BackgroundTask(shutil.rmtree, tmp))

    @routes.get("/admin/users")
    def admin_users(request: Request) -> HTMLResponse:
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
        return site.page(request, "admin_users.html", {"me": ident, "users": service.list_users(db),
                                                       "projects": service.list_projects(db), "link": None})

    @routes.post("/admin/users")
    async def admin_add_user(request: Request) -> HTMLResponse:
        form = await site.read_form(request)
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            site.check_csrf(request, ident, form)
        projects = [form["project"]] if form.get("project") else []
        try:
            _, token = service.add_user(db, form.get("name", ""), form.get("role") or "annotator", projects)
        except TailorError as exc:
            raise Denied(422, str(exc)) from None
        link = f"{str(request.base_url).rstrip('/')}/login/{token}"
        return site.page(request, "admin_users.html", {"me": ident, "users": service.list_users(db),
                                                       "projects": service.list_projects(db), "link": link,
                                                       "link_name": form.get("name", "")})

    return routes
