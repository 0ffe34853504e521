"""Keys per judge: two providers, each checking its own key, judged in one run; manifests keep the variable's
name (never its value) and `--resume` reads the key from the environment again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.recording_server import RecordingServer

KEY_A, KEY_B = "sk-provider-a-11112222", "sk-provider-b-33334444"


def _tailor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tailorbench.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)


def test_two_providers_two_keys_one_run(tmp_path: Path, call_cache: Path) -> None:
    env = dict(os.environ, TB_KEY_A=KEY_A, TB_KEY_B=KEY_B)
    with RecordingServer(require_key=KEY_A) as a, RecordingServer(require_key=KEY_B) as b:
        result = _tailor("eval", "--data", "demo", "--limit", "2", "--setting", "none", "--no-progress",
                         "--judge", f"llm:openai:rec-model@{a.url}/v1[api_key_env=TB_KEY_A]",
                         "--judge", f"llm:openai:rec-model@{b.url}/v1[api_key_env=TB_KEY_B,max_retries=0]",
                         "--out", str(tmp_path / "runs"), env=env)
        assert result.returncode == 0, result.stderr
        for server, key in ((a, KEY_A), (b, KEY_B)):
            chat = server.chat_requests()
            assert len(chat) == 4
            assert all(("authorization", f"Bearer {key}") in r.header_set() for r in chat)
        runs = sorted((p for p in (tmp_path / "runs").iterdir() if p.is_dir()), key=lambda p: "TB_KEY_A" not in p.name)
        assert len(runs) == 2
        manifests = [json.loads((r / "manifest.json").read_text()) for r in runs]
        described = {m["config"]["judge_description"]["model"]["api_key_env"] for m in manifests}
        assert described == {"TB_KEY_A", "TB_KEY_B"}
        for run in runs:
            text = (run / "manifest.json").read_text()
            assert KEY_A not in text and KEY_B not in text
        # resume reads the variable again (the cache emptied, so calls are really made): without it, the refusal
        # names it; with it, provider A gets its key again
        (runs[0] / "predictions.jsonl").write_text("")
        (runs[0] / "results.json").unlink(missing_ok=True)
        for path in call_cache.parent.glob(call_cache.name + "*"):
            path.unlink()
        missing = {k: v for k, v in env.items() if k not in ("TB_KEY_A", "TB_KEY_B")}
        refused = _tailor("eval", "--resume", str(runs[0]), "--no-progress", env=missing)
        assert refused.returncode == 2 and "$TB_KEY_A (not set;" in refused.stderr, refused.stderr
        a.reset()
        again = _tailor("eval", "--resume", str(runs[0]), "--no-progress", env=env)
        assert again.returncode == 0, again.stderr
        chat = a.chat_requests()
        assert len(chat) == 4 and all(("authorization", f"Bearer {KEY_A}") in r.header_set() for r in chat)
