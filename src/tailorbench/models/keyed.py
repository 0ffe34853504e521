"""What the keyed remote backends share (`openai:`, `anthropic:`): the `MODEL[@URL]` spec and its base URL
checked before any work, the key read from an environment variable and registered as a secret, extra headers
(`$VAR` values read from the environment), credentials in the base URL moved into the query and masked wherever
they would be shown; and the Retry-After and error text both backends read from a failed call."""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from typing import Any

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.options import as_float
from tailorbench.redact import MASK, public_url, redact, register_secret, secret_query

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_headers(value: str | dict[str, Any] | None) -> dict[str, str]:
    """`headers` option: a JSON object (or dict) of extra headers; a value `$VAR` is read from the environment
    (so it can be stored and resumed without the secret)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"headers must be a JSON object, e.g. '{{\"X-Title\": \"tb\"}}': {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError("headers must be a JSON object of header names to string values")
    return dict(value)


def check_env_name(api_key_env: Any) -> str:
    """`api_key_env` must name an environment variable (it is stored; the key never is)."""
    if not _ENV_NAME.match(str(api_key_env)):
        raise ConfigError(f"api_key_env must be an environment variable name, got {api_key_env!r}")
    return str(api_key_env)


def resolve_header(name: str, value: str) -> str:
    """A header value `$VAR` read from the environment (so it can be stored and resumed without the secret);
    every value is registered as a secret."""
    if value.startswith("$") and _ENV_NAME.match(value[1:]):
        resolved = os.environ.get(value[1:])
        if resolved is None:
            raise ConfigError(f"header {name!r} reads ${value[1:]}, which is not set")
        value = resolved
    register_secret(value)
    return value


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or an HTTP date); None when absent."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


class KeyedAPI:
    """What the keyed remote backends share (`openai:`, `anthropic:`): `MODEL[@URL]` specs checked before any
    work, the key read from a variable and registered as a secret, extra headers (`$VAR` values read from the
    environment), credentials in the base URL moved into the query and masked wherever they would be shown."""

    backend = ""
    remote = True

    @staticmethod
    def parse_arg(spec: str, arg: str) -> dict[str, Any]:
        """`MODEL` or `MODEL@http(s)://host[:port][/path]` (the base URL checked here: a typo fails before any work)."""
        model, at, url = arg.partition("@")
        model, url = model.strip(), url.strip()
        if not model:
            raise ConfigError(f"bad model spec {redact(spec)!r}: the model name is empty")
        if at:
            check_base_url(spec, url)
        return {"model": model, "base_url": url.rstrip("/") if at else None}

    def _identify(self, model: str, base_url: str | None, spec: str, timeout: float | str, api_key: str | None,
                  api_key_env: str, headers: str | dict[str, Any] | None) -> None:
        self.model = model
        self.api_key_env = check_env_name(api_key_env)
        self._api_key = api_key if api_key is not None else os.environ.get(self.api_key_env)
        register_secret(self._api_key)
        refuse_masked(base_url, headers)
        self.base_url, self._default_query = split_base_url(base_url)
        #: the base URL as it may be shown and stored (no credentials)
        self.public_base_url = public_url(base_url)
        self.header_spec = parse_headers(headers)
        self._headers = {name: resolve_header(name, value) for name, value in self.header_spec.items()}
        default = f"{self.backend}:{model}@{base_url}" if base_url else f"{self.backend}:{model}"
        self.spec = redact(spec or default)
        self.timeout = as_float("timeout", timeout, minimum=0.0, exclusive_minimum=True)
        #: connections the SDK's httpx pool keeps (the wrapper sets it to its concurrency limit)
        self.max_connections = 512
        self._client: Any = None
        #: the first refused credential: every later call fails with it without being sent
        self._refused: CredentialsError | None = None


def missing_key(model: Any) -> str | None:
    """The environment variable a built model's calls need and that is not set (None: none missing, or not a keyed
    backend): an OpenAI-compatible server at a base URL of its own needs no key, every other keyed backend does."""
    api = getattr(model, "api", model)
    if not isinstance(api, KeyedAPI) or api._api_key:
        return None
    if getattr(api, "backend", None) == "openai" and api.base_url is not None:
        return None
    return api.api_key_env


def refuse_masked(base_url: str | None, headers: str | dict[str, Any] | None) -> None:
    """A spec read back from a run directory has its credentials masked: say how to give them again."""
    if base_url and MASK in base_url:
        raise ConfigError(
            f"the base URL {base_url} holds a masked credential: credentials are never stored in a run directory. "
            "Start the run with the key in an environment variable (--judge-option api_key_env=VAR), not in the URL"
        )
    if headers and MASK in json.dumps(headers):
        raise ConfigError(
            "a header was given as a literal value, which is never stored in a run directory: give it as "
            '$VAR (--judge-option \'headers={"Name": "$VAR"}\') to resume'
        )


def split_base_url(url: str | None) -> tuple[str | None, dict[str, str]]:
    """(base URL without its query, the query as the SDK's default_query): the SDK appends paths to the base
    URL, so a `?api-key=...` must travel as a query parameter of every request instead."""
    if not url or "?" not in url:
        if url:
            _register_url_secrets(url)
        return url, {}
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    _register_url_secrets(url)
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit(parts._replace(query="", fragment="")).rstrip("/"), query


def _register_url_secrets(url: str) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password:
        register_secret(parts.password)
    if parts.username and parts.password is None:
        register_secret(parts.username)  # a token given as the user part
    for _, value in secret_query(url):
        register_secret(value)


def short_error(exc: BaseException, limit: int = 300) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "..."


def check_base_url(spec: str, url: str) -> None:
    """An http(s) URL with a host and, if any, a numeric port: a typo is a ConfigError, not a traceback."""
    from urllib.parse import urlsplit

    shown = redact(spec)
    if not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f"bad model spec {shown!r}: the part after @ must be an http(s):// base URL")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading it validates it)
    except ValueError as exc:
        raise ConfigError(f"bad model spec {shown!r}: {exc} (the port must be a number from 0 to 65535)") from None
    if not parts.hostname:
        raise ConfigError(f"bad model spec {shown!r}: the base URL has no host")
