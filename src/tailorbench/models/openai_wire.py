"""What the OpenAI-compatible backend's whole call (`openai_compat.py`) and streamed call (`openai_stream.py`) both
read and raise: the SDK's exception for an HTTP status or a lean-transport failure (so both transports, and both
kinds of call, share one error path), response headers, and token log-probabilities."""

from __future__ import annotations

import json
from typing import Any

from tailorbench.models.base import TokenLogprob

#: statuses after which the raw path hands the call to the SDK (which follows redirects)
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def parse_logprobs(lp: Any) -> list[TokenLogprob] | None:
    """A choice's `logprobs` object (a whole answer's, or a streamed chunk's part of it) as token log-probabilities."""
    if not lp or lp.get("content") is None:
        return None
    return [
        TokenLogprob(
            t.get("token", ""),
            float(t.get("logprob", 0.0)),
            {alt.get("token", ""): float(alt.get("logprob", 0.0)) for alt in t.get("top_logprobs") or []},
        )
        for t in lp["content"]
    ]


def sdk_error(httpx: Any, exc: Exception) -> Exception:
    """A lean-transport failure as the SDK's exception (so both transports share one error path)."""
    import openai

    if isinstance(exc, httpx.TimeoutException):
        return openai.APITimeoutError(request=dummy_request(httpx))
    return openai.APIConnectionError(message=str(exc), request=dummy_request(httpx))


class Headers(dict[str, str]):
    """Response headers, lower-cased, for the few the backend reads (Retry-After)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        super().__init__((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw)


def dummy_request(httpx: Any) -> Any:
    return httpx.Request("POST", "http://localhost/chat/completions")


def status_error(status: int, content: bytes, headers: Headers) -> Exception:
    """The SDK's exception for an HTTP error status, so both transports share one error path."""
    import openai

    from tailorbench.models.http_transport import httpx_module

    httpx = httpx_module()
    response = httpx.Response(status, headers=list(headers.items()), content=content, request=dummy_request(httpx))
    try:
        body: Any = json.loads(content)
    except ValueError:
        body = content.decode("utf-8", "replace")
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else str(body)[:300]
    cls: Any = openai.APIStatusError
    if status == 429:
        cls = openai.RateLimitError
    elif status >= 500:
        cls = openai.InternalServerError
    return cls(f"Error code: {status} - {message}", response=response, body=body)
