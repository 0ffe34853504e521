"""The admin pages: projects and their progress, agreement so far, flagged labels, imports, members and exports
(users and their login links: `users`). Every route asks for an admin session (403 for anyone else)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from tailorbench.annotation import quality, service, tasks
from tailorbench.annotation.models import Project
from tailorbench.annotation.web.import_jobs import ImportJobs, upload_name
from tailorbench.annotation.web.pages import Site, export_files, known_export_files
from tailorbench.annotation.web.security import Denied
from tailorbench.errors import TailorError
from tailorbench.files import make_scratch, remove_tree

#: bounds of the create-project form's numbers (annotators per item, one gold item after every K)
MAX_PER_ITEM = 100
MAX_GOLD_EVERY = 10_000
#: the longest project name (the database column's size)
MAX_NAME_CHARS = 200


def form_count(form: Mapping[str, str], key: str, what: str, default: int, maximum: int) -> int:
    """A whole number 1..`maximum` from a form field (`default` when empty); Denied 422 otherwise (`1e30`,
    `2.5`, `-1` or a number no column holds)."""
    raw = (form.get(key) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum)) and 1 <= int(raw) <= maximum):
        raise Denied(422, f"Project not created: {what} must be a whole number from 1 to {maximum}.")
    return int(raw)


def save_upload(source: BinaryIO, name: str) -> tuple[Path, Path]:
    """Copy an upload to `name` in a new temporary directory (the import job deletes it): (directory, file)."""
    workdir = make_scratch("tb-import-")
    path = workdir / name
    with path.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    return workdir, path


def router(site: Site, imports: ImportJobs) -> APIRouter:
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
        name = form.get("name", "")
        if len(name) > MAX_NAME_CHARS:
            raise Denied(422, f"Project not created: the name is longer than {MAX_NAME_CHARS} characters.")
        n_per_item = form_count(form, "n_per_item", "annotators per item", 3, MAX_PER_ITEM)
        gold_every = form_count(form, "gold_every", "the gold interval", 5, MAX_GOLD_EVERY)
        try:
            pid = service.create_project(db, name, form.get("task_type", ""), n_per_item,
                                         form.get("instructions", ""), gold_every)
        except TailorError as exc:
            raise Denied(422, f"Project not created: {exc}") from None
        return RedirectResponse(f"/admin/p/{pid}", status_code=303)

    @routes.get("/admin/p/{project_id:id}")
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
            "imports": imports.for_project(project_id),
            "quality": quality.annotator_quality(db, project_id), "min_shared": quality.MIN_SHARED,
        })

    @routes.get("/admin/p/{project_id:id}/agreement.json")
    def admin_agreement(request: Request, project_id: int) -> JSONResponse:
        with site.tx() as s:
            site.who(s, request, admin=True)
        try:
            return JSONResponse(service.agreement_so_far(db, project_id))
        except service.NotFound:
            raise Denied(404, "No such project.") from None

    def import_allowed(request: Request, project_id: int) -> service.Identity:
        """The admin behind the request, for a project that exists (401 / 403 / 404 otherwise)."""
        with site.tx() as s:
            ident = site.who(s, request, admin=True)
            if s.get(Project, project_id) is None:
                raise Denied(404, "No such project.")
        return ident

    @routes.post("/admin/p/{project_id:id}/import")
    async def admin_import(request: Request, project_id: int) -> Response:
        """Save the upload and start an import job (import_jobs.py); the project page shows its progress. The
        session is checked before the upload is read; database and file work run in the thread pool."""
        ident = await run_in_threadpool(import_allowed, request, project_id)
        form = await request.form(max_files=1, max_fields=10)
        site.check_csrf(request, ident, {"csrf": str(form.get("csrf", ""))})
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise Denied(422, "Choose a JSONL file to import.")
        workdir, path = await run_in_threadpool(save_upload, upload.file, upload_name(upload.filename))
        imports.start(project_id, workdir, path, str(form.get("format") or "auto"))
        return RedirectResponse(f"/admin/p/{project_id}#imports", status_code=303)

    @routes.get("/admin/p/{project_id:id}/imports.json")
    def admin_imports(request: Request, project_id: int) -> JSONResponse:
        """The project's import jobs, newest first (the project page polls it while one runs)."""
        with site.tx() as s:
            site.who(s, request, admin=True)
        return JSONResponse({"jobs": [j.as_dict() for j in imports.for_project(project_id)]})

    @routes.post("/admin/p/{project_id:id}/members")
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

    @routes.get("/admin/p/{project_id:id}/export/{name}")
    def admin_export(request: Request, project_id: int, name: str) -> Response:
        with site.tx() as s:
            site.who(s, request, admin=True)
        if name not in known_export_files():
            raise Denied(404, "No such export file.")
        tmp = make_scratch("tb-export-")
        try:
            written = service.export(db, project_id, tmp)
        except service.NotFound:
            remove_tree(tmp)
            raise Denied(404, "No such project.") from None
        path = tmp / name
        if name not in written["files"] or not path.is_file():
            remove_tree(tmp)
            raise Denied(404, f"{name} is not written for this project's task type.")
        media = "text/csv" if name.endswith(".csv") else "application/json"
        return FileResponse(path, media_type=media, filename=name, background=BackgroundTask(remove_tree, tmp))

    return routes
