"""A plugin proves the core is extensible without editing it: tests/plugins/demo_plugin, a package of its own,
is installed with `pip install --target TMP` (the test venv stays clean) and every process below runs with
`PYTHONPATH=TMP`. It registers, by entry point only, a judge (`vowels`), a model backend (`echo`), a benchmark
layout with its own splits and tiers (`tone`), a setting (`shout`) and an annotation task type (`three_way`):
`tailor eval` with them writes a report whose tables show the plugin's tiers, and `tailor annotate serve`
serves the plugin's task page."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_loopback

PLUGIN = Path(__file__).parent / "demo_plugin"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    target = tmp_path_factory.mktemp("plugin-site")
    build = tmp_path_factory.mktemp("plugin-build")
    source = build / "demo_plugin"  # setuptools writes build/ and *.egg-info beside the sources: not in tests/
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--no-index", "--target", str(target), str(source)],
                   check=True, cwd=build, env={**os.environ, "PIP_NO_CACHE_DIR": "1"}, timeout=300)
    assert list(target.glob("tailorbench_demo_plugin-*.dist-info/entry_points.txt"))
    env = {**os.environ, "PYTHONPATH": str(target), "HF_HUB_OFFLINE": "1", "TAILORBENCH_CACHE_POLICY": "off"}
    return env


def tailor(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tailorbench.cli.app", *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=300, check=False)


def _rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def make_tone(root: Path) -> Path:
    root.mkdir()
    (root / "tone.json").write_text("{}", encoding="utf-8")
    for split in ("formal", "casual"):
        for tier in ("low", "high"):
            _rows(root / f"{split}-{tier}.jsonl", [
                {"user": f"u{i}", "question": f"{split} {tier} question {i}?",
                 "chosen": "a longer answer with many vowels in it" if i % 2 else "short",
                 "rejected": "terse" if i % 2 else "another answer, longer and with more vowels"}
                for i in range(4)])
    return root


def test_eval_with_the_plugins_judge_backend_layout_and_setting(plugin_env: dict[str, str], tmp_path: Path) -> None:
    data = make_tone(tmp_path / "tone")
    out = tmp_path / "run"
    done = tailor(plugin_env, "eval", "--data", str(data), "--judge", "vowels", "--judge", "llm:echo:m",
                  "--setting", "shout", "--setting", "none", "--out", str(out), "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "vowels__shout" / "results.json").read_text(encoding="utf-8"))
    assert results["metrics"]["all"]["n"] == 16
    assert results["benchmark_names"]["splits"] == ["formal", "casual"]
    report = (out / "report.md").read_text(encoding="utf-8")
    for name in ("formal", "casual", "low", "high", "vowels", "llm:echo:m", "shout"):
        assert name in report, name
    assert not re.search(r"\b(specific|general|easy|medium|hard)\b", report)
    predictions = [json.loads(line) for line in
                   (out / "llm_echo_m__shout" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(predictions) == 32 and {p["choice"] for p in predictions} == {"A"}  # both orders, the echo's "A"
    manifest = json.loads((out / "llm_echo_m__shout" / "manifest.json").read_text(encoding="utf-8"))
    model = manifest["config"]["judge_description"]["model"]
    assert model["backend"] == "echo" and model["stats"]["requests"] == 32  # through the one model wrapper
    unknown = tailor(plugin_env, "eval", "--data", str(data), "--judge", "nope", "--out", str(tmp_path / "x"),
                     cwd=tmp_path)
    assert unknown.returncode == 2 and "vowels" in unknown.stderr  # the known judges include the plugin's


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(plugin_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A project of the plugin's task type with items and an annotator, served by `tailor annotate serve`."""
    project = tmp_path / "annotation"
    items = tmp_path / "items.jsonl"
    _rows(items, [{"id": "q1", "question": "Best tea for a cold evening?", "options": ["Sencha", "Chai", "Mint"]},
                  {"id": "q2", "question": "Best dog for a flat?", "options": ["Pug", "Husky", "Great Dane"]}])
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    steps = [("annotate", "project", "create", "tw", "--task", "three_way", "--n", "1"),
             ("annotate", "import", "tw", str(items)),
             ("annotate", "annotator", "add", "ann", "--project", "tw", "--base-url", base, "--json")]
    for step in steps:
        done = tailor(plugin_env, *step, "--dir", str(project), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    link = json.loads(done.stdout)["login_link"]
    server = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "annotate", "serve", "--dir",
                               str(project), "--port", str(port)], env=plugin_env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert_loopback(server, "tailor annotate serve")
        yield base, link
    finally:
        server.terminate()
        server.wait(20)


def test_the_annotation_service_serves_the_plugins_task_type(served: tuple[str, str]) -> None:
    base, link = served
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(link, timeout=10) as page:  # the login link asks for a confirmation (a form)
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.read().decode("utf-8"))
    assert nonce is not None
    # confirming sets the session and leads to the projects
    with opener.open(link, data=urllib.parse.urlencode({"nonce": nonce.group(1)}).encode(), timeout=10) as page:
        assert page.status == 200
    with opener.open(f"{base}/p/1", timeout=10) as page:
        html = page.read().decode("utf-8")
    assert 'data-task="three_way"' in html and html.count('name="choice"') == 3
    assert "Best tea for a cold evening?" in html or "Best dog for a flat?" in html
