"""Health check and static files (the app's own script and style, served without `no-store`)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from tailorbench.annotation.web.pages import PACKAGE_FILES


def mount_static(app: FastAPI) -> None:
    """/static: the package's script and style files (the only ones the Content-Security-Policy allows)."""
    app.mount("/static", StaticFiles(directory=str(PACKAGE_FILES / "static")), name="static")


def router() -> APIRouter:
    routes = APIRouter()

    @routes.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return routes
