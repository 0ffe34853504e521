"""Counters of several processes added up: a resumed run's call statistics (the runner), and the call and parse
counts of the workers of one distributed run (`evaluate/executors.py`)."""

from __future__ import annotations

from typing import Any


def add_counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Counters of two processes: numbers summed, nested dicts merged the same way, anything else from `b`."""
    out = dict(a)
    for key, value in b.items():
        old = out.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            out[key] = add_counts(old, value)
        elif isinstance(value, int | float) and isinstance(old, int | float) and not isinstance(value, bool):
            out[key] = old + value
        else:
            out[key] = value if value is not None else old
    return out
