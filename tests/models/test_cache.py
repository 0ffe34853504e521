"""The SQLite call cache: keys, policies, concurrent writers, no secrets, the `tailor cache` verbs."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.models.cache import CallCache, call_key, public_url

MESSAGES = [{"role": "user", "content": "你好 hello"}]


def _key(**params: object) -> str:
    return call_key("openai", "m", "http://h/v1", "chat", MESSAGES, {"temperature": 0, **params})


def test_key_depends_on_every_part() -> None:
    base = _key()
    assert base == _key()
    assert base != _key(temperature=0.5)
    assert base != call_key("openai", "m2", "http://h/v1", "chat", MESSAGES, {"temperature": 0})
    assert base != call_key("openai", "m", "http://other/v1", "chat", MESSAGES, {"temperature": 0})
    assert base != call_key("hf", "m", "http://h/v1", "chat", MESSAGES, {"temperature": 0})
    assert call_key("openai", "m", "http://u:secret@h/v1", "chat", MESSAGES, {}) == call_key(
        "openai", "m", "http://h/v1", "chat", MESSAGES, {}
    )
    assert public_url("http://u:secret@h:1/v1") == "http://h:1/v1"


def test_policies(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    rw = CallCache(path, "read-write")
    rw.put("k1", "openai", "m", "http://u:sk-secret@h/v1", "chat", {"text": "A"})
    assert rw.get("k1") == {"text": "A"}
    ro = CallCache(path, "read-only")
    assert ro.get("k1") == {"text": "A"}
    ro.put("k2", "openai", "m", None, "chat", {"text": "B"})
    assert ro.get("k2") is None
    off = CallCache(path, "off")
    assert off.get("k1") is None and not off.enabled
    rw.close()
    ro.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"sk-secret" not in raw


def _writer(path: str, worker: int, n: int) -> None:
    cache = CallCache(path, "read-write")
    for i in range(n):
        cache.put(f"{worker}-{i}", "openai", "m", None, "chat", {"text": str(i)})
    cache.close()


def test_concurrent_writers(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    stats = api.cache_stats(path).to_dict()
    assert stats["entries"] == 600


def test_cli_stats_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    cache.put("a", "openai", "m1", None, "chat", {"text": "A"})
    cache.put("b", "openai", "m2", None, "chat", {"text": "B"})
    cache.close()
    runner = CliRunner()
    out = runner.invoke(app, ["cache", "stats", "--path", str(path), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["entries"] == 2
    out = runner.invoke(app, ["cache", "clear", "--path", str(path), "--model", "m1", "--yes"])
    assert out.exit_code == 0, out.output
    assert api.cache_stats(path).to_dict()["entries"] == 1
    assert api.cache_clear(path).removed == 1
    assert api.cache_stats(path).to_dict()["entries"] == 0
