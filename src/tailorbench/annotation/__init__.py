"""Annotation web service: human judgments for the four task types of both papers (pairwise choice,
attribute judgment, relevance, A/B rating), with accounts, balanced assignment, gold items, admin pages and
export to the long rating format of `tailorbench.agreement`. See docs/annotation.md.

`service` is the Python API (the CLI `tailor annotate ...` and the web app both call it); `web.create_app`
builds the FastAPI app. Heavy imports (FastAPI, SQLAlchemy) happen only when these modules are imported.
"""

from __future__ import annotations

__all__ = ["DB_FILENAME"]

#: the SQLite file inside a project directory when no --db is given
DB_FILENAME = "annotate.sqlite"
