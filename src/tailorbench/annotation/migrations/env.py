"""Alembic environment: the service passes its own connection (db.migrate), so no URL lives here."""

from __future__ import annotations

from alembic import context

from tailorbench.annotation.models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only the service runs these migrations
    raise RuntimeError("run migrations through tailorbench.annotation.db.migrate()")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
