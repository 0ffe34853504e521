"""The one redactor: credentials never leave the process.

Why: a user may put a secret in a base URL (`https://user:pass@host/v1`, `?api-key=...`), in a header value or in
an environment variable whose value a server echoes back in an error. None of it may reach a run directory's
name, predictions, manifest, results, reports, stderr or the call cache. Two mechanisms, used together:

- `public_url` / `redact`: URLs lose their user:password part and the values of credential-like query
  parameters (`key`, `api-key`, `token`, ...) become `***`, wherever a URL appears in a text.
- `register_secret`: the model layer registers every secret value it holds (API key, URL password, query
  secret, header value); `redact` replaces those exact values in any text, and `files/` applies it to every
  file tailorbench writes.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"
#: query parameters whose values are credentials (compared lower-cased, `-` and `_` alike)
SECRET_QUERY_KEYS = frozenset({
    "key", "apikey", "api_key", "token", "access_token", "auth", "authorization", "password", "pass", "secret",
    "client_secret", "sig", "signature", "x_api_key", "subscription_key", "code",
})
#: secrets shorter than this are not registered: masking a short word in every file written would damage data
#: (real API keys are 20-200 characters); short header values are still masked where options are stored
MIN_SECRET_LENGTH = 8
#: placeholders local servers are given instead of a key
PLACEHOLDERS = frozenset({"EMPTY", "empty", "none", "None", "dummy", "sk-no-key-required", "no-key", "not-needed"})

_URL = re.compile(r"""https?://[^\s"'<>\\`]+""", re.IGNORECASE)
_SECRETS: set[str] = set()
_LOCK = threading.Lock()
_PATTERN: re.Pattern[str] | None = None


def _secret_key(name: str) -> bool:
    return name.strip().lower().replace("-", "_") in SECRET_QUERY_KEYS


def register_secret(value: str | None) -> None:
    """Remember a secret value (and its URL-encoded form) so `redact` masks it wherever it appears."""
    global _PATTERN
    if not value or len(value) < MIN_SECRET_LENGTH or value in PLACEHOLDERS:
        return
    forms = {value, quote(value, safe=""), unquote(value)}
    with _LOCK:
        if forms <= _SECRETS:
            return
        _SECRETS.update(f for f in forms if len(f) >= MIN_SECRET_LENGTH)
        # longest first, so a secret that contains another is masked whole
        ordered = sorted(_SECRETS, key=len, reverse=True)
        _PATTERN = re.compile("|".join(re.escape(s) for s in ordered))


def secret_query(url: str) -> list[tuple[str, str]]:
    """The credential-like (name, value) pairs of a URL's query string."""
    return [(k, v) for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True) if _secret_key(k)]


def public_url(url: str | None) -> str | None:
    """A URL without user:password and with credential-like query values masked. Used for cache keys too, so a
    rotated key never splits the cache."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _mask_registered(url)
    netloc = parts.netloc.rsplit("@", 1)[1] if "@" in parts.netloc else parts.netloc
    query = parts.query
    if query and any(_secret_key(k) for k, _ in parse_qsl(query, keep_blank_values=True)):
        pieces = []
        for piece in query.split("&"):
            name, sep, _value = piece.partition("=")
            pieces.append(f"{name}={MASK}" if sep and _secret_key(unquote(name)) else piece)
        query = "&".join(pieces)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _mask_registered(text: str) -> str:
    pattern = _PATTERN
    return pattern.sub(MASK, text) if pattern is not None else text


def redact(text: str) -> str:
    """`text` with every URL made public and every registered secret masked."""
    if not text:
        return text
    if "://" in text:
        text = _URL.sub(lambda m: public_url(m.group(0)) or "", text)
    return _mask_registered(text)


def redact_registered(text: str) -> str:
    """Only the registered secrets masked (cheap enough for every file written)."""
    return _mask_registered(text)


def redact_obj(value: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (dict keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)) if isinstance(k, str) else k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_obj(v) for v in value]
    return value


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """Judge or model options as they may be stored: every string redacted, and each literal value of a
    `headers` option masked (a `$VAR` reference is kept, so a resumed run reads the header again)."""
    out = redact_obj(dict(options))
    headers = options.get("headers")
    if headers:
        parsed = headers
        if isinstance(headers, str):
            try:
                parsed = json.loads(headers)
            except ValueError:
                return {**out, "headers": MASK}
        if isinstance(parsed, dict):
            out["headers"] = {k: v if isinstance(v, str) and v.startswith("$") else MASK for k, v in parsed.items()}
    return out
