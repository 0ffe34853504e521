"""The annotation tests' database fixtures (a SQLite file, or a fresh PostgreSQL schema in the worker's own
database, dropped afterwards)."""

from tests.annotation.conftest import db_url

__all__ = ["db_url"]
