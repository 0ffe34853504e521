"""Prompt templates shared by every caller that talks to a chat model (judges, the construction pipeline, the
three stages): Jinja files compiled strictly (an undefined variable is an error, not an empty string), and the
`<|system|>` / `<|user|>` / `<|assistant|>` line convention that cuts a rendered template into chat messages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.schema import Message

_MARKER = re.compile(r"^<\|(system|user|assistant)\|>[ \t]*$", re.MULTILINE)


def split_messages(rendered: str) -> list[Message]:
    """Cut a rendered template into chat messages at marker lines; text without markers is one user message."""
    parts = _MARKER.split(rendered)
    messages: list[Message] = []
    if parts[0].strip():
        messages.append({"role": "user", "content": parts[0].strip()})
    for role, content in zip(parts[1::2], parts[2::2]):
        if content.strip():
            messages.append({"role": role, "content": content.strip()})
    if not messages:
        raise ConfigError("the template rendered no message")
    return messages


def compile_template(path: Path, what: str = "template") -> tuple[Any, str]:
    """(compiled Jinja template, its source text); unreadable files and syntax errors are ConfigErrors that
    name the file (and line)."""
    import jinja2

    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
    env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
    try:
        return env.from_string(source), source
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: template syntax error: {exc.message}") from None
