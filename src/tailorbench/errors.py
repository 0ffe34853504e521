"""Errors users can act on. A DataError names the file, the line and the field, and maps to exit code 2."""

from __future__ import annotations

from pathlib import Path


class TailorError(Exception):
    """Base class for errors the CLI reports in one line with exit code 2."""

    exit_code = 2


class DataError(TailorError):
    """Bad input data: the message names where (file, 1-based line, field) and what is wrong."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f" field '{self.field}':" if self.field else ""
        return f"{where}:{what} {self.message}"


class ConfigError(TailorError):
    """A bad option, spec or configuration, reported before any work starts."""


class CredentialsError(ConfigError):
    """A server refused the credentials (HTTP 401/403): every later call would fail the same way, so the run
    stops at the first one; the message names the environment variable that holds the key."""


def require_extra(module: str, extra: str, what: str) -> None:
    """A ConfigError in one line naming the optional extra that provides `module` when it is not installed
    (checked without importing it, before any work): `what` needs the [extra] extra."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module stubbed out as None
        found = False
    if not found:
        raise ConfigError(f"{what} needs the [{extra}] extra: pip install 'tailorbench[{extra}]'")


#: the modules of the [web] extra that the annotation database needs, and those the annotation server adds
DATABASE_MODULES: tuple[str, ...] = ("sqlalchemy", "alembic")
SERVER_MODULES: tuple[str, ...] = (*DATABASE_MODULES, "fastapi", "uvicorn")


def require_web(what: str, server: bool = False) -> None:
    """`require_extra` for every module of the [web] extra that the annotation database (or, with `server`, the
    annotation server) needs: the CLI's verbs and their Python twins check the same list before any work."""
    for module in SERVER_MODULES if server else DATABASE_MODULES:
        require_extra(module, "web", what)


def shown(name: object) -> str:
    """A name (a key, a value) as an error message shows it: as typed when printable, else escaped (repr), so a
    key holding a newline or an escape sequence keeps the message on one line and the terminal as it was."""
    text = str(name)
    return text if text.isprintable() else repr(text)
