"""The annotation tests' database fixtures (a SQLite file, or a fresh PostgreSQL schema dropped afterwards)."""

from tests.annotation.conftest import db_url, pg_admin

__all__ = ["db_url", "pg_admin"]
