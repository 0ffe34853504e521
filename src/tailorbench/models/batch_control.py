"""The control calls of a batch API (upload, create, poll, download, cancel), classified once for both SDKs.

Why: the `openai` and `anthropic` SDKs share their exception names (Stainless), so one classifier serves both:
a refused key stops the run (CredentialsError, exit 2), a server without the batch API or a refused batch is
one clear ConfigError (exit 2) before or instead of any waiting, anything else is a CallError that the engine
counts against the requests of that batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.models.keyed import short_error
from tailorbench.models.model import CallError
from tailorbench.redact import redact


class ControlClient:
    """A batch API's SDK client, built on first use from the backend (`control_client`), closed once."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            self._client = self.api.control_client()
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


async def control_call(sdk: Any, api: Any, what: str, make: Callable[[], Awaitable[Any]], *,
                       submitting: bool = False) -> Any:
    """`await make()`; while `submitting`, a 400/413 (a file or batch over the server's limits, a line it
    refuses) is a ConfigError naming the options that lower the batch size."""
    try:
        return await make()
    except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
        raise api.refuse(exc.status_code, exc) from None
    except sdk.APIStatusError as exc:
        if submitting and exc.status_code in (400, 413):
            raise ConfigError(redact(f"{api.spec}: the server refused the {what}: HTTP {exc.status_code}: "
                                     f"{short_error(exc)} (lower batch_max_requests or batch_max_bytes)")) from None
        raise CallError("server" if exc.status_code >= 500 else "client",
                        redact(f"{what}: HTTP {exc.status_code}: {short_error(exc)}"),
                        retryable=exc.status_code >= 500) from None
    except sdk.APIConnectionError as exc:
        raise CallError("connection", redact(f"{what}: {short_error(exc.__cause__ or exc)}")) from None


async def check_support(sdk: Any, api: Any, where: str, path: str, make: Callable[[], Awaitable[Any]]) -> None:
    """Fail before any request is sent when the server has no batch API, refuses the key, or cannot be reached."""
    try:
        await make()
    except sdk.NotFoundError:
        raise ConfigError(f"{api.spec}: {where} has no batch API (GET {path} answered 404); "
                          "run without batch=true") from None
    except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
        raise api.refuse(exc.status_code, exc) from None
    except sdk.APIStatusError as exc:
        raise ConfigError(redact(f"{api.spec}: GET {where}{path} failed with HTTP {exc.status_code}: "
                                 f"{short_error(exc)}")) from None
    except sdk.APIConnectionError as exc:
        raise ConfigError(redact(f"{api.spec}: cannot reach {where}: {short_error(exc.__cause__ or exc)}")) from None
