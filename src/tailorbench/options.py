"""Typed reading of `KEY=VALUE` options (judge options, backend options, config fields).

Why: options arrive as strings from the command line and as numbers from the Python API; `int("abc")` deep in
a backend is a traceback, and `concurrency=0` or `max_retries=-1` silently accepted is worse. Every reader here
gives one ConfigError naming the option, what it must be, and what it got, before any work starts.
"""

from __future__ import annotations

import math
from typing import Any

from tailorbench.errors import ConfigError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _fail(name: str, what: str, value: Any) -> ConfigError:
    return ConfigError(f"option {name} must be {what}, got {value!r}")


def as_int(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (a string of digits or a whole float such as 1e3), within [minimum, maximum]."""
    if isinstance(value, bool):
        raise _fail(name, "an integer", value)
    try:
        if isinstance(value, str):
            text = value.strip()
            number = int(text) if text.lstrip("+-").isdigit() else float(text)
        else:
            number = value
        if isinstance(number, float):
            if not number.is_integer():
                raise ValueError(value)
            number = int(number)
        if not isinstance(number, int):
            raise ValueError(value)
    except (TypeError, ValueError, OverflowError):
        raise _fail(name, _range("an integer", minimum, maximum), value) from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _fail(name, _range("an integer", minimum, maximum), value)
    return number


def as_float(name: str, value: Any, minimum: float | None = None, maximum: float | None = None,
             exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> float:
    """A finite number within [minimum, maximum] (`(minimum, ...` with exclusive_minimum, `..., maximum)` with
    exclusive_maximum)."""
    what = _range("a number", minimum, maximum, exclusive_minimum, exclusive_maximum)
    if isinstance(value, bool):
        raise _fail(name, what, value)
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise _fail(name, what, value) from None
    if not math.isfinite(number):
        raise _fail(name, _range("a finite number", minimum, maximum, exclusive_minimum, exclusive_maximum), value)
    low_ok = minimum is None or (number > minimum if exclusive_minimum else number >= minimum)
    high_ok = maximum is None or (number < maximum if exclusive_maximum else number <= maximum)
    if not low_ok or not high_ok:
        raise _fail(name, what, value)
    return number


def as_bool(name: str, value: Any) -> bool:
    """true/false, yes/no, on/off, 1/0 (any case), or a Python bool."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise _fail(name, "true or false", value)


def as_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip()
    if text not in choices:
        from tailorbench.registry import did_you_mean

        raise ConfigError(f"option {name} must be one of {', '.join(choices)}, got {value!r}"
                          f"{did_you_mean(text, choices)}")
    return text


def as_url(name: str, value: Any) -> str:
    """An http(s) URL with a host (and, if any, a numeric port): the only kind a link or a redirect may be built
    on; `javascript:`, `file:` or `data:` would be accepted silently by a plain string field."""
    from urllib.parse import urlsplit

    what = "an http(s) URL with a host, such as http://127.0.0.1:8000"
    if not isinstance(value, str) or any(c.isspace() or not c.isprintable() for c in value):
        raise _fail(name, what, value)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (reading it validates it)
    except ValueError:
        raise _fail(name, what, value) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise _fail(name, what, value)
    return value

def _range(what: str, minimum: float | None, maximum: float | None, exclusive_minimum: bool = False,
           exclusive_maximum: bool = False) -> str:
    if minimum is not None and maximum is not None:
        if exclusive_minimum or exclusive_maximum:
            low, high = (">" if exclusive_minimum else ">="), ("<" if exclusive_maximum else "<=")
            return f"{what} {low} {minimum:g} and {high} {maximum:g}"
        return f"{what} from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f"{what} {'>' if exclusive_minimum else '>='} {minimum:g}"
    if maximum is not None:
        return f"{what} {'<' if exclusive_maximum else '<='} {maximum:g}"
    return what


from pathlib import Path  # noqa: E402  (used by check_writable only)


def check_writable(name: str, path: Any, directory: bool = False, inputs: Any = (), ours: Any = None,
                   force: bool = False) -> Path:
    """An output path (`--out`) that can be written, checked before any work and without creating anything: the
    output rule of `files.check_output` (a non-empty directory must be the verb's own earlier output, marked
    by the door, or `ours(path)`; `force` only when the user gave --force on the command line)."""
    from tailorbench.files import check_output

    return check_output(name, path, directory=directory, inputs=inputs, ours=ours, force=force)
