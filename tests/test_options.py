"""Typed option reading: every bad value is one ConfigError naming the option, before any work."""

from __future__ import annotations

import pytest

from tailorbench.errors import ConfigError
from tailorbench.models.backends import make_chat_model
from tailorbench.options import as_bool, as_choice, as_float, as_int


def test_readers() -> None:
    assert as_int("n", "12") == 12 and as_int("n", 1e3) == 1000 and as_int("n", "2e2") == 200
    assert as_float("x", "5e-5") == pytest.approx(5e-5) and as_float("x", 2) == 2.0
    assert as_bool("b", "Yes") is True and as_bool("b", "off") is False and as_bool("b", 0) is False
    assert as_choice("c", "lean", ("lean", "httpx")) == "lean"
    for call in (lambda: as_int("n", "abc"), lambda: as_int("n", "1.5"), lambda: as_int("n", True),
                 lambda: as_int("n", 0, minimum=1), lambda: as_float("x", "nan"), lambda: as_float("x", "inf"),
                 lambda: as_float("x", 0, minimum=0, exclusive_minimum=True), lambda: as_bool("b", "maybe"),
                 lambda: as_choice("c", "tcp", ("lean", "httpx"))):
        with pytest.raises(ConfigError, match=r"option [nxbc] must be"):
            call()


@pytest.mark.parametrize(("options", "message"), [
    ({"timeout": "abc"}, "option timeout must be a number > 0"),
    ({"concurrency": "0"}, "option concurrency must be an integer >= 1"),
    ({"concurrency": "-3"}, "option concurrency must be an integer >= 1"),
    ({"max_retries": "-1"}, "option max_retries must be an integer >= 0"),
    ({"max_concurrency": "x"}, "option max_concurrency must be an integer"),
    ({"adaptive": "maybe"}, "option adaptive must be true or false"),
    ({"transport": "tcp"}, "option transport must be one of lean, httpx"),
    ({"api_key_env": "NOT A NAME"}, "api_key_env must be an environment variable name"),
    ({"headers": "[1]"}, "headers must be a JSON object"),
])
def test_backend_options_are_checked(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_chat_model("openai:m@http://127.0.0.1:8000/v1", options)


@pytest.mark.parametrize(("spec", "message"), [
    ("openai:m@http://127.0.0.1:notaport/v1", "the port must be a number"),
    ("openai:m@http://127.0.0.1:99999/v1", "the port must be a number"),
    ("openai:m@ftp://host/v1", "must be an http"),
    ("openai:m@http://:8/v1", "has no host"),
])
def test_bad_base_urls(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_chat_model(spec)
