"""The annotator's pages: their projects, the current task page of a project, one assignment's page, and the
submission (store the label, answer with the next task page), which runs in plain SQL (annotate/submit_sql.py).
Annotators reach only their own assignments: anything else is a 404, so ids leak nothing."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from tailorbench.annotation import service, studies, tasks
from tailorbench.annotation.submit_sql import Conflict, Gone
from tailorbench.annotation.web.pages import Site
from tailorbench.annotation.web.security import Denied
from tailorbench.annotation.web.study import assignment_page


def router(site: Site) -> APIRouter:
    routes = APIRouter()

    @routes.get("/")
    def home(request: Request) -> Response:
        with site.tx() as s:
            ident = site.who(s, request)
        if ident.role == "admin":
            return RedirectResponse("/admin", status_code=303)
        projects = service.list_projects(site.db, user_id=ident.user_id)
        with site.tx() as s:
            for p in projects:
                p["mine"] = service.my_counts(s, ident.user_id, p["id"])
        return site.page(request, "home.html", {"me": ident, "projects": projects})

    @routes.get("/p/{project_id:id}")
    def work(request: Request, project_id: int) -> Response:
        ident = site.who_now(request)
        return site.current_page(request, ident, project_id)

    @routes.get("/a/{assignment_id:id}")
    def show_assignment(request: Request, assignment_id: int) -> Response:
        return assignment_page(site, request, lambda s, ident: service.assignment_view(
            s, ident.user_id, assignment_id, quota=studies.assignment_quota(s, ident.role, assignment_id)))

    def submit_sync(request: Request, assignment_id: int, form: dict[str, str]) -> Response:
        """One request and one transaction per submission: store the label and answer with the next task page
        (200), in plain SQL (submit_sql.py). Idempotent: a repeated POST of a finished assignment (double
        click, retry, resubmitted reload) stores nothing and answers with the current page, like the first."""
        ident = site.who_now(request)
        site.check_csrf(request, ident, form)
        try:
            if ident.role == studies.ROLE:  # crowd participants: the reference path, which counts their quota
                got = studies.submit_and_next(site.db, ident.user_id, assignment_id, form)
            else:
                got = site.submit_sql.submit_and_next(ident.user_id, assignment_id, form)
        except Gone:
            raise Denied(404, "No such assignment.") from None
        except tasks.FormError as exc:  # rolled back: nothing stored; show the page again with the reason
            with site.tx() as s:
                ctx = service.assignment_view(s, ident.user_id, assignment_id)
            return site.task_page(request, ident, ctx, error=str(exc), status=422)
        except Conflict:  # a concurrent double submit lost the race: its twin stored the label
            with site.tx() as s:
                project_id = service.assignment_project(s, assignment_id)
            return site.current_page(request, ident, project_id)
        if got.view is None:  # duplicate, an older open assignment, or nothing left: the reference path
            return site.current_page(request, ident, got.project_id)
        return site.task_page(request, ident, got.view)

    async def submit(request: Request) -> Response:
        form = await site.read_form(request)
        # the database work runs in the thread pool, never on the event loop
        return await run_in_threadpool(submit_sync, request, request.path_params["assignment_id"], form)

    # the submission is a plain Starlette route: FastAPI's parameter and dependency handling cost more per
    # request than the route needs (measured: about a tenth of the server's CPU per submission)
    routes.add_route("/a/{assignment_id:id}", submit, methods=["POST"])
    return routes
