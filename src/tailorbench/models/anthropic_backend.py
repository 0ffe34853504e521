"""`anthropic:MODEL[@BASE_URL]`: Anthropic's Messages API through the official `anthropic` SDK.

A thin `ModelAPI` like `openai_compat.py`: one attempt per call with the SDK's own retries off (the wrapper in
`models/model.py` retries, caches, limits concurrency and counts). Every request goes through the SDK's client
(`post("/v1/messages")`, what `messages.create` posts), so it is exactly what the SDK sends
(tests/models/test_anthropic.py records both); the answer is read as JSON without building pydantic objects.
Errors are classified as the SDK's retry policy does (408, 409, 429, 5xx including 529 overloaded, timeouts and
dropped connections are retryable; a 401/403 stops the run with a CredentialsError naming the key's variable).

Messages: every `system` message goes to the request's `system` field (joined by blank lines), the rest keep
their roles. `max_tokens` is required by the API: a call without one sends 1024. The SDK (2.x, API version
2026-10-21) has no sampling parameters, so `temperature` and `top_p` are not sent (they stay in the cache key).
Anthropic returns no log-probabilities (`verdict=logprobs` is refused before any call).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import ChatResult, GenParams, Message, strip_think
from tailorbench.models.keyed import (
    KeyedAPI,
    parse_retry_after,
    short_error,
)
from tailorbench.models.model import CallError
from tailorbench.redact import redact

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
#: what a call without a token budget sends (the Messages API requires one)
DEFAULT_MAX_TOKENS = 1024


@BACKENDS.register("anthropic")
class AnthropicAPI(KeyedAPI):
    """One attempt of a Messages API call (`MODEL` or `MODEL@http(s)://host[:port]`: the SDK adds `/v1/...`)."""

    backend = "anthropic"
    supports_logprobs = False
    remote = True

    def __init__(self, model: str, base_url: str | None = None, *, spec: str = "", timeout: float | str = 120.0,
                 api_key: str | None = None, api_key_env: str = DEFAULT_KEY_ENV,
                 headers: str | dict[str, Any] | None = None) -> None:
        self._identify(model, base_url, spec, timeout, api_key, api_key_env, headers)

    def client(self) -> Any:
        """The SDK client, built on first use (a fully cached run never needs the key)."""
        if self._client is None:
            import anthropic

            if not self._api_key:
                raise ConfigError(
                    f"{self.spec}: {self.api_key_env} is not set (export it, or choose another variable with "
                    f"--judge-option api_key_env=VAR)")
            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout,
                default_headers=self._headers or None, default_query=self._default_query or None,
            )
        return self._client

    def control_client(self) -> Any:
        """A plain SDK client for the Message Batches API's control calls, with the SDK's own retries."""
        import anthropic

        self.client()  # the same key check
        return anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self.base_url, max_retries=4,
                                        timeout=self.timeout, default_headers=self._headers or None,
                                        default_query=self._default_query or None)

    def request_body(self, messages: Sequence[Message], params: GenParams) -> dict[str, Any]:
        """The Messages API request for one call (also one line of a Message Batch, as its `params`)."""
        system = [m["content"] for m in messages if m.get("role") == "system"]
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens if params.max_tokens is not None else DEFAULT_MAX_TOKENS,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"],
        }
        if system:
            body["system"] = "\n\n".join(system)
        if params.stop:
            body["stop_sequences"] = list(params.stop)
        for key, value in params.extra:
            body[key] = value
        return body

    def parse_response(self, data: dict[str, Any]) -> ChatResult:
        """A Messages API answer (a synchronous body, or a batch result's `message`)."""
        blocks = data.get("content") or []
        content = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        thinking = "\n".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking") or None
        text, think = strip_think(content)
        usage = data.get("usage") or {}
        stop = data.get("stop_reason")
        return ChatResult(
            text=text, raw=content, finish_reason="length" if stop == "max_tokens" else stop,
            prompt_tokens=int(usage.get("input_tokens") or 0), completion_tokens=int(usage.get("output_tokens") or 0),
            reasoning=thinking or think,
        )

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        import anthropic
        import httpx2  # the SDK's HTTP library

        if self._refused is not None:
            raise self._refused
        body = self.request_body(messages, params)
        try:
            response = await self.client().post("/v1/messages", body=body, cast_to=httpx2.Response)
            content = response.content
        except anthropic.APIStatusError as exc:
            raise self.status_error(exc) from None
        except anthropic.APITimeoutError as exc:
            raise CallError("timeout", f"timed out after {self.timeout:g}s: {short_error(exc)}") from None
        except anthropic.APIConnectionError as exc:
            raise CallError("connection", f"connection error: {short_error(exc.__cause__ or exc)}") from None
        try:
            return self.parse_response(json.loads(content))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CallError("bad_response", f"malformed response: {type(exc).__name__}: {short_error(exc)}") from None

    def status_error(self, exc: Any) -> Exception:
        """The CallError (or CredentialsError) for an HTTP error status, by the SDK's retry rules."""
        status = int(exc.status_code)
        if status in (401, 403):
            return self.refuse(status, exc)
        if status == 429:
            return CallError("rate_limit", f"429 rate limited: {short_error(exc)}",
                             retry_after=parse_retry_after(exc.response.headers))
        kind = "server" if status >= 500 else ("timeout" if status == 408 else "client")
        retry_after = parse_retry_after(exc.response.headers) if status >= 500 else None
        return CallError(kind, redact(f"HTTP {status}: {short_error(exc)}"),
                         retryable=status >= 500 or status in (408, 409), retry_after=retry_after)

    def refuse(self, status: int, exc: BaseException) -> CredentialsError:
        """Every later call fails with the first refusal, without being sent."""
        where = self.public_base_url or "api.anthropic.com"
        state = "set" if self._api_key else "not set"
        self._refused = CredentialsError(redact(
            f"{self.spec}: {where} refused the credentials (HTTP {status}: {short_error(exc)}); the key is read "
            f"from ${self.api_key_env} ({state}; choose another with api_key_env=VAR)"))
        return self._refused

    async def preflight(self) -> None:
        """Key present, server reachable, key accepted (GET /v1/models): one clear error otherwise."""
        import anthropic

        client = self.client()
        where = self.public_base_url or "api.anthropic.com"
        try:
            await client.models.with_raw_response.list(limit=1)
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            raise self.refuse(exc.status_code, exc) from None
        except anthropic.NotFoundError:
            return  # a server that lists no models: the first call will tell
        except anthropic.APIConnectionError as exc:
            cause = short_error(exc.__cause__ or exc)
            raise ConfigError(redact(f"{self.spec}: cannot reach {where}: {cause}")) from None
        except anthropic.APIStatusError as exc:
            raise ConfigError(redact(f"{self.spec}: GET {where}/v1/models failed with HTTP {exc.status_code}: "
                                     f"{short_error(exc)}")) from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.public_base_url,
                "api_key_env": self.api_key_env, "headers": sorted(self.header_spec), "timeout_s": self.timeout}

