"""`openai:MODEL[@BASE_URL]`: any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp, Ollama).

Built on the `openai` SDK (auth, headers, error types) with its default httpx client class; the SDK's retries
are switched off: this is a thin `ModelAPI` (one attempt per call, errors classified as `CallError`), and the
wrapper (`models/model.py`) retries, counts, caches and limits concurrency. The default `lean` transport
(http_transport.py) keeps client CPU per call well under a millisecond at hundreds of concurrent calls: the
first call to a path goes through the SDK, and later calls reuse that request's headers byte for byte.
Requests equal the SDK's (tests/models/test_conformance.py). Responses are read as JSON without building
pydantic objects.

Keys: from the environment variable `api_key_env` (default `OPENAI_API_KEY`), so two providers can be judged in
one run and nothing secret is stored; a 401/403 stops the run with a CredentialsError naming the variable.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import orjson

from tailorbench.errors import ConfigError, CredentialsError
from tailorbench.models.backends import BACKENDS
from tailorbench.models.base import (
    ChatResult,
    GenParams,
    Message,
    strip_think,
)
from tailorbench.models.keyed import KeyedAPI, parse_retry_after, short_error
from tailorbench.models.model import CallError
from tailorbench.models.openai_stream import stream_chat
from tailorbench.models.openai_wire import REDIRECTS, Headers, parse_logprobs, sdk_error, status_error
from tailorbench.models.streaming import TextDelta
from tailorbench.options import as_choice
from tailorbench.redact import redact

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def proxies_configured() -> bool:
    """True when the environment asks for an HTTP(S) proxy (the variables httpx reads via urllib)."""
    return any(k in ("http", "https", "all") for k in urllib.request.getproxies())


@BACKENDS.register("openai")
class OpenAICompatAPI(KeyedAPI):
    """One attempt of an OpenAI-compatible chat call (auth, transports, error classification)."""

    backend = "openai"
    supports_logprobs = True
    remote = True

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        spec: str = "",
        timeout: float | str = 120.0,
        api_key: str | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        headers: str | dict[str, Any] | None = None,
        transport: str = "lean",
    ) -> None:
        self._identify(model, base_url, spec, timeout, api_key, api_key_env, headers)
        transport = as_choice("transport", transport, ("lean", "httpx"))
        self.requested_transport = transport
        # behind a proxy the SDK's own transport carries every call (it reads the proxy variables)
        self.transport = "httpx" if proxies_configured() else transport
        self._http: Any = None
        self._httpx: Any = None
        self._lean: Any = None
        self._chat_route: tuple[tuple[str, str, int], bytes] | None = None

    # -- plumbing -------------------------------------------------------------------------------------------

    def _key_source(self) -> str:
        state = "set" if self._api_key else "not set"
        return f"the key is read from ${self.api_key_env} ({state}; choose another with api_key_env=VAR)"

    def _check_key(self) -> None:
        if self.base_url is None and not self._api_key:
            raise ConfigError(
                f"{self.spec}: {self.api_key_env} is not set (export it, choose another variable with "
                f"--judge-option api_key_env=VAR, or give a base URL: openai:MODEL@http://host/v1)"
            )

    def client(self) -> Any:
        """The SDK client on the SDK's default httpx client class, built on first use (a fully cached run never
        opens a connection)."""
        if self._client is None:
            import openai

            from tailorbench.models.http_transport import httpx_module, make_transport

            self._check_key()
            httpx = httpx_module()
            self._httpx = httpx
            if self.transport == "lean":
                self._http = openai.DefaultAsyncHttpxClient(transport=make_transport(), timeout=self.timeout)
                self._lean = self._http._transport
            else:
                size = self.max_connections
                limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
                self._http = openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout)
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key or "EMPTY",
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout,
                default_headers=self._headers or None,
                default_query=self._default_query or None,
                http_client=self._http,
            )
        return self._client

    def control_client(self) -> Any:
        """A plain SDK client for a batch API's control calls (uploads, polls, downloads) with the SDK's own
        retries: they are few, and idempotent or recoverable, unlike chat calls, which the wrapper retries."""
        import openai

        self._check_key()
        return openai.AsyncOpenAI(api_key=self._api_key or "EMPTY", base_url=self.base_url, max_retries=4,
                                  timeout=self.timeout, default_headers=self._headers or None,
                                  default_query=self._default_query or None)

    def request_body(self, messages: Sequence[Message], params: GenParams) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if params.reasoning:
            if params.max_tokens is not None:
                body["max_completion_tokens"] = params.max_tokens
        else:
            if params.temperature is not None:
                body["temperature"] = params.temperature
            if params.top_p is not None:
                body["top_p"] = params.top_p
            if params.max_tokens is not None:
                body["max_tokens"] = params.max_tokens
        if params.reasoning_effort:
            body["reasoning_effort"] = params.reasoning_effort
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if params.logprobs:
            body["logprobs"] = True
            if params.top_logprobs:
                body["top_logprobs"] = params.top_logprobs
        for key, value in params.extra:
            body[key] = value
        return body

    def parse_response(self, data: dict[str, Any]) -> ChatResult:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        content = message.get("content") or ""
        text, think = strip_think(content)
        reasoning = message.get("reasoning_content") or message.get("reasoning") or think
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        return ChatResult(
            text=text,
            raw=content,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            logprobs=parse_logprobs(choice.get("logprobs")),
            reasoning=reasoning,
        )

    # -- one attempt ----------------------------------------------------------------------------------------

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        """One POST /chat/completions; every failure is a CallError (kind, retryable, Retry-After) except a
        refused key, which is a CredentialsError (the run stops: every later call would fail the same way)."""
        import openai

        if self._refused is not None:
            raise self._refused
        body = self.request_body(messages, params)
        client = self.client()
        try:
            content = None
            if self._chat_route is not None:
                status, content, headers = await self._post_raw(body)
                if status in REDIRECTS:
                    content = None  # the SDK follows redirects; the raw path does not
                elif status != 200:
                    raise status_error(status, content, headers)
            if content is None:
                response = await client.post("/chat/completions", cast_to=self._httpx.Response, body=body,
                                             options={"timeout": self.timeout, "max_retries": 0})
                content = response.content
                self._learn_route(response)
            return self.parse_response(orjson.loads(content))
        except (openai.APIConnectionError, openai.APIStatusError, ValueError, KeyError, IndexError,
                TypeError) as exc:
            raise self.call_error(exc) from None

    def call_error(self, exc: Exception) -> CallError | CredentialsError:
        """What a failed attempt raises: the SDK's error (both transports raise the SDK's types) or a malformed
        answer as a classified `CallError`; a 401/403 as the `CredentialsError` that stops the run."""
        import openai

        if isinstance(exc, openai.RateLimitError):
            return CallError("rate_limit", f"429 rate limited: {short_error(exc)}",
                             retry_after=parse_retry_after(exc.response.headers))
        if isinstance(exc, openai.APITimeoutError):
            return CallError("timeout", f"timed out after {self.timeout:g}s: {short_error(exc)}")
        if isinstance(exc, openai.APIConnectionError):
            return CallError("connection", f"connection error: {short_error(exc.__cause__ or exc)}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if status in (401, 403):
                return self.refuse(status, exc)
            kind = "server" if status >= 500 else ("timeout" if status == 408 else "client")
            return CallError(kind, redact(f"HTTP {status}: {short_error(exc)}"),
                             retryable=status >= 500 or status in (408, 409))
        return CallError("bad_response", f"malformed response: {type(exc).__name__}: {short_error(exc)}")

    def stream(self, messages: Sequence[Message], params: GenParams) -> AsyncGenerator[TextDelta | ChatResult, None]:
        """One streamed attempt (`streaming.StreamingAPI`, `openai_stream.py`)."""
        return stream_chat(self, messages, params)

    def _learn_route(self, response: Any) -> None:
        """After a call the SDK sent over the lean transport, reuse its request head for the next calls."""
        if self._lean is None or self._chat_route is not None or response.history:
            return
        self._chat_route = self._lean.template_for(response.request.method, response.request.url.raw_path)

    async def _post_raw(self, body: dict[str, Any]) -> tuple[int, bytes, Any]:
        """POST with the SDK's own request head on the lean transport; transport errors come back as the SDK's
        exception types."""
        from tailorbench.models.http_transport import decode_body

        assert self._chat_route is not None
        origin, head = self._chat_route
        payload = orjson.dumps(body)
        try:
            status, _, headers, content = await self._lean.exchange(origin, head, payload, self.timeout, self.timeout)
            content = decode_body(headers, content)
        except self._httpx.TransportError as exc:
            raise sdk_error(self._httpx, exc) from exc
        return status, content, Headers(headers)

    def refuse(self, status: int, exc: BaseException) -> CredentialsError:
        where = self.public_base_url or "api.openai.com"
        self._refused = CredentialsError(
            redact(f"{self.spec}: {where} refused the credentials (HTTP {status}: {short_error(exc)}); "
                   f"{self._key_source()}")
        )
        return self._refused

    # -- preflight ------------------------------------------------------------------------------------------

    async def preflight(self) -> None:
        """Key present, server reachable, model served: one clear ConfigError otherwise."""
        import openai

        client = self.client()
        where = self.public_base_url or "api.openai.com"
        try:
            response = await client.get(
                "/models", cast_to=self._httpx.Response, options={"timeout": min(self.timeout, 30.0), "max_retries": 2}
            )
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise self.refuse(exc.status_code, exc) from None
        except openai.NotFoundError:
            return  # some servers do not list models; the first call will tell
        except openai.APIConnectionError as exc:
            cause = short_error(exc.__cause__ or exc)
            raise ConfigError(redact(f"{self.spec}: cannot reach {where}: {cause}")) from None
        except openai.APIStatusError as exc:
            raise ConfigError(
                redact(f"{self.spec}: GET {where}/models failed with HTTP {exc.status_code}: {short_error(exc)}")
            ) from None
        try:
            served = [m["id"] for m in json.loads(response.content).get("data", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        if served and self.model not in served:
            listed = ", ".join(served[:20]) + (" ..." if len(served) > 20 else "")
            raise ConfigError(f"{self.spec}: model {self.model!r} is not served by {where}; served: {listed}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": self.public_base_url,
            "api_key_env": self.api_key_env,
            "headers": sorted(self.header_spec),
            "transport": self.transport,
            "timeout_s": self.timeout,
        }
