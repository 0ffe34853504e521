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


class Template:
    """A compiled template whose rendering errors (a variable the caller does not give, a failing filter) are
    ConfigErrors naming the file, not tracebacks: a user's own template may name anything."""

    def __init__(self, template: Any, path: Path, what: str) -> None:
        self.template = template
        self.path = path
        self.what = what

    def render(self, *args: Any, **kwargs: Any) -> str:
        import jinja2

        try:
            return str(self.template.render(*args, **kwargs))
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"{self.path}: the {self.what} uses what it is not given ({exc.message}); it may "
                              f"use: {', '.join(sorted(kwargs)) or 'nothing'}") from None
        except jinja2.TemplateError as exc:
            raise ConfigError(f"{self.path}: the {self.what} cannot be rendered: {exc.message}") from None


def compile_template(path: Path, what: str = "template") -> tuple[Template, str]:
    """(compiled Jinja template, its source text); unreadable files, syntax errors and rendering errors are
    ConfigErrors that name the file (and line)."""
    import jinja2

    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the {what} {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x})") from None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
    env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
    try:
        return Template(env.from_string(source), path, what), source
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: template syntax error: {exc.message}") from None
