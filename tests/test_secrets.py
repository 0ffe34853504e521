"""Secrets never leave the process: a fake credential in every place a user could put one, then every file the
run wrote, its stderr and the call cache are searched for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tailorbench.redact import MASK, public_options, public_url, redact, register_secret
from tests.helpers.recording_server import RecordingServer

SECRETS = {
    "password": "pw-in-url-5f1e2d3c",
    "query": "qk-in-url-9a8b7c6d",
    "header": "hv-literal-1234abcd",
    "header_env": "hv-from-env-77aa88bb",
    "key_env": "sk-from-env-0f0e0d0c",
}


def test_public_url_and_redact() -> None:
    assert public_url("http://u:secret@h:1/v1") == "http://h:1/v1"
    assert public_url("https://h/v1?api-key=abc&api-version=2") == f"https://h/v1?api-key={MASK}&api-version=2"
    assert public_url("https://h/v1?Key=abc&token=t") == f"https://h/v1?Key={MASK}&token={MASK}"
    assert public_url("https://h/v1") == "https://h/v1"
    text = "failed: POST http://me:pw@host:8/v1/chat?key=zz gave 500"
    assert redact(text) == f"failed: POST http://host:8/v1/chat?key={MASK} gave 500"
    register_secret("registered/secret+value")
    assert redact("x registered/secret+value y") == f"x {MASK} y"
    assert redact("q=registered%2Fsecret%2Bvalue") == f"q={MASK}"  # its URL-encoded form too
    register_secret("short")  # too short to mask everywhere: it would damage ordinary text
    assert redact("a short text") == "a short text"


def test_public_options_masks_literal_headers() -> None:
    options = {"headers": json.dumps({"X-Key": "abc", "X-Ref": "$VAR"}), "api_key_env": "TB_KEY"}
    assert public_options(options) == {"headers": {"X-Key": MASK, "X-Ref": "$VAR"}, "api_key_env": "TB_KEY"}


def _tailor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tailorbench.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)


def _leaks(root: Path, extra: list[Path], outputs: list[str]) -> list[str]:
    forms = {f for s in SECRETS.values() for f in (s, quote(s, safe=""))}
    found = []
    files = [p for p in root.rglob("*") if p.is_file()] + [p for p in extra if p.exists()]
    for path in files:
        data = path.read_bytes()
        found += [f"{path}: {s}" for s in forms if s.encode() in data]
        found += [f"{path} (name): {s}" for s in forms if s in str(path)]
    for text in outputs:
        found += [f"output: {s}" for s in forms if s in text]
    return found


@pytest.mark.parametrize("refused", [False, True], ids=["accepted", "refused"])
def test_no_secret_reaches_any_file_or_stderr(tmp_path: Path, call_cache: Path, refused: bool) -> None:
    env = dict(os.environ, TB_KEY=SECRETS["key_env"], TB_HDR=SECRETS["header_env"], PYTHONPATH=os.getcwd())
    with RecordingServer(require_key="another-key-entirely" if refused else None) as server:
        base = f"http://tbuser:{SECRETS['password']}@127.0.0.1:{server.port}/v1?api-key={SECRETS['query']}"
        headers = json.dumps({"X-Api-Key": SECRETS["header"], "X-Other": "$TB_HDR"})
        out = tmp_path / "runs"
        # two settings: a matrix run, so run directory names are made from the spec too
        result = _tailor("eval", "--data", "demo", "--limit", "3", "--setting", "none", "--setting", "persona",
                         "--judge", f"llm:openai:rec-model@{base}",
                         "--judge-option", f"headers={headers}", "--judge-option", "api_key_env=TB_KEY",
                         "--judge-option", "max_retries=0", "--no-progress", "--out", str(out), env=env)
        outputs = [result.stdout, result.stderr]
        if not refused:
            assert result.returncode == 0, result.stderr
            # the server got every credential where the user put it
            chat = server.chat_requests()
            assert chat and all(SECRETS["query"] in r.target for r in chat)
            assert all((("x-api-key", SECRETS["header"]) in r.header_set()) for r in chat)
            assert all((("x-other", SECRETS["header_env"]) in r.header_set()) for r in chat)
            runs = [p for p in out.iterdir() if p.is_dir()]
            assert len(runs) == 2 and all("openai" in r.name for r in runs)
            for sub in (["report", *map(str, runs), "--out", str(tmp_path / "board")],
                        ["eval", "--resume", str(next(r for r in runs if "openai" in r.name)), "--no-progress"]):
                again = _tailor(*sub, env=env)
                outputs += [again.stdout, again.stderr]
            # the URL's key was never stored, so a resume cannot rebuild it: a clear error, not a keyless run
            assert again.returncode == 2 and "masked credential" in again.stderr, again.stderr
        else:
            assert result.returncode == 2, result.stderr
            assert "$TB_KEY" in result.stderr and "401" in result.stderr
    leaks = _leaks(tmp_path, [call_cache, Path(str(call_cache) + "-wal")], outputs)
    assert not leaks, leaks
