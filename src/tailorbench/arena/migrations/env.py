"""Alembic environment of the arena's own revision chain: the store passes its connection (store.migrate), and
the chain records itself in `arena_alembic_version`, so it never meets the annotation service's chain in a shared
database."""

from __future__ import annotations

from alembic import context

from tailorbench.arena.tables import metadata

#: the arena's version table (the annotation service's is alembic_version)
VERSION_TABLE = "arena_alembic_version"

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only the store runs these migrations
    raise RuntimeError("run migrations through tailorbench.arena.store.migrate()")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                  version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
