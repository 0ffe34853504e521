"""A server that checks API keys, as every hosted provider does: llama.cpp's server started with `--api_key`.

Right key (from the variable `api_key_env` names) -> the run succeeds; wrong or missing key -> the run stops at
the first 401 with one message naming the variable, and exits non-zero. Run for every transport.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tailorbench.errors import CredentialsError
from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatRequest, GenParams
from tests.conftest import LLAMA_KEY, LlamaServer

TRANSPORTS = ("lean", "httpx")
VAR = "TB_LLAMA_KEY"


def _eval(server: LlamaServer, out: Path, transport: str, key: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (VAR, "OPENAI_API_KEY")}
    if key is not None:
        env[VAR] = key
    cmd = [sys.executable, "-m", "tailorbench.cli.app", "eval", "--data", "demo", "--limit", "3", "--setting", "none",
           "--judge", f"llm:openai:{server.model}@{server.base_url}", "--judge-option", f"api_key_env={VAR}",
           "--judge-option", f"transport={transport}", "--judge-option", "max_tokens=4", "--no-progress",
           "--out", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_right_key_succeeds(llama_server_keyed: LlamaServer, tmp_path: Path, transport: str) -> None:
    llama_server_keyed.reset()
    result = _eval(llama_server_keyed, tmp_path / "run", transport, LLAMA_KEY)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["status"] != "failed" for r in rows)
    assert llama_server_keyed.count() == 6


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("key", ["sk-wrong-key-000000", None], ids=["wrong", "missing"])
def test_wrong_or_missing_key_stops_with_one_message(
    llama_server_keyed: LlamaServer, tmp_path: Path, transport: str, key: str | None
) -> None:
    llama_server_keyed.reset()
    result = _eval(llama_server_keyed, tmp_path / "run", transport, key)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    state = "not set" if key is None else "set"
    assert f"${VAR} ({state};" in errors[0] and "401" in errors[0]
    assert "Traceback" not in result.stderr
    assert llama_server_keyed.count() == 0  # the preflight was refused: no chat call was made
    if key is not None:
        assert key not in result.stderr


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refusal_mid_run_sends_nothing_more(
    llama_server_keyed: LlamaServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the preflight (e.g. a key revoked during a run) the first 401 stops every later call."""
    monkeypatch.setenv(VAR, "sk-revoked-key-111111")
    model = make_chat_model(f"openai:{llama_server_keyed.model}@{llama_server_keyed.base_url}",
                            {"cache_policy": "off", "transport": transport, "concurrency": 1, "api_key_env": VAR})
    requests = [ChatRequest([{"role": "user", "content": f"q{i}"}], GenParams(max_tokens=2)) for i in range(8)]

    async def run() -> None:
        try:
            await model.chat_many(requests)
        finally:
            await model.aclose()

    llama_server_keyed.reset()
    with pytest.raises(CredentialsError, match=rf"\${VAR} \(set;"):
        asyncio.run(run())
    assert llama_server_keyed.count() == 1
