"""Session fixtures for the real parts: the tiny model and llama.cpp's OpenAI-compatible server.

The assets are built and cached by ``scripts/ensure_test_assets.py`` (``make test`` runs it first).  When
they are missing or stale the fixtures fail loudly with the command to run: a test that needs the real
server must never pass by being skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from perf.listening import check_loopback

from tests.helpers.counting_proxy import CountingProxy
from tests.helpers.loopback import guard_listen

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_SCRIPT = REPO_ROOT / "scripts" / "ensure_test_assets.py"
HOW_TO_BUILD = (
    "run `make test`, or build them directly with `.venv/bin/python scripts/ensure_test_assets.py` "
    "(cache: $TAILORBENCH_CACHE or ~/.cache/tailorbench)"
)
SERVER_START_TIMEOUT_S = 60.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `ray` tests go to tests/test_ray_isolated.py's namespace run when it is collected with them."""
    from tests.helpers import netns
    from tests.test_ray_isolated import RAY_IDS

    if netns.inside():
        return
    ray_items = [item for item in items if item.get_closest_marker("ray") is not None]
    wrapper = any(item.nodeid.startswith("tests/test_ray_isolated.py") for item in items)
    if not ray_items:
        return
    if wrapper and netns.prefix() is not None:
        config.stash[RAY_IDS] = [item.nodeid for item in ray_items]
        kept = [item for item in items if item.get_closest_marker("ray") is None]
        config.hook.pytest_deselected(items=ray_items)
        items[:] = kept
        return
    import warnings

    warnings.warn(f"{len(ray_items)} Ray tests run in this process: Ray's servers listen beyond loopback here "
                  "(run them with tests/test_ray_isolated.py, as root, for a loopback-only network)", stacklevel=1)


@pytest.fixture(scope="session", autouse=True)
def loopback_only() -> Iterator[None]:
    """Every server the suite starts in this process listens on loopback only (a listen() elsewhere raises);
    the servers started as processes are checked by their fixtures from their listening sockets (/proc)."""
    undo = guard_listen()
    yield
    undo()


def assert_loopback(proc: subprocess.Popen[Any], name: str) -> None:
    """Fail the test unless every TCP socket `proc` (and its children) listens on is on loopback."""
    if sys.platform.startswith("linux"):
        try:
            check_loopback(proc.pid, name)
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)


def _assets_module() -> ModuleType:
    """Import the asset script by path, so the paths and the recipe hash have one source of truth."""
    spec = importlib.util.spec_from_file_location("tailorbench_test_assets", ASSETS_SCRIPT)
    if spec is None or spec.loader is None:
        pytest.fail(f"cannot load {ASSETS_SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def test_assets() -> ModuleType:
    """The asset module, after checking that the cached tiny model matches the current recipe."""
    assets = _assets_module()
    paths = assets.asset_paths()
    if not assets.model_current(paths):
        what = "stale (the build recipe changed)" if paths.stamp.is_file() else "missing"
        pytest.fail(f"tiny test model {what} under {paths.models}: {HOW_TO_BUILD}", pytrace=False)
    return assets


@pytest.fixture(scope="session")
def tiny_hf_model_dir(test_assets: ModuleType) -> Path:
    """HF directory of the tiny Llama (AutoModelForCausalLM / AutoTokenizer load it)."""
    return Path(test_assets.asset_paths().hf_dir)


@pytest.fixture(scope="session")
def tiny_gguf(test_assets: ModuleType) -> Path:
    """The same tiny Llama as an f32 GGUF file for llama.cpp."""
    return Path(test_assets.asset_paths().gguf)


@pytest.fixture(scope="session")
def tiny_model_info(test_assets: ModuleType) -> dict[str, object]:
    """The build stamp: recipe hash, expected chat reply and verdict, training stats."""
    return dict(json.loads(test_assets.asset_paths().stamp.read_text()))


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """A running llama.cpp server behind a counting proxy.

    ``base_url`` goes through the proxy (use it in tests); ``direct_base_url`` bypasses it.
    """

    base_url: str
    direct_base_url: str
    model: str
    proxy: CountingProxy
    process: subprocess.Popen[bytes]
    log_path: Path

    def count(self, path: str | None = "/v1/chat/completions") -> int:
        """Requests the server received on ``path`` since the last reset (all paths when None)."""
        return self.proxy.count(path)

    def reset(self) -> None:
        """Forget the counted requests."""
        self.proxy.reset()

    def log_tail(self, n: int = 40) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])


def _get_json(url: str, timeout: float = 2.0, headers: dict[str, str] | None = None) -> dict[str, object]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as resp:
        return dict(json.loads(resp.read()))


@contextlib.contextmanager
def _llama_server(
    tiny_gguf: Path, test_assets: ModuleType, log_dir: Path, api_key: str | None = None
) -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` on 127.0.0.1 serving the tiny GGUF, with a counting proxy in front;
    with ``api_key`` the server refuses (401) every request without ``Authorization: Bearer <api_key>``."""
    if not test_assets.server_importable():
        pytest.fail(
            f"llama_cpp.server ({test_assets.LLAMA_CPP_VERSION}) is not installed: {HOW_TO_BUILD}", pytrace=False
        )
    port = free_port()
    log_path = log_dir / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(tiny_gguf),
        "--model_alias",
        test_assets.MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--logits_all",
        "true",  # needed for logprobs / top_logprobs
        "--seed",
        "0",
    ]
    if api_key is not None:
        cmd += ["--api_key", api_key]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key is not None else {}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    direct = f"http://127.0.0.1:{port}"
    proxy: CountingProxy | None = None
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        models: dict[str, object] | None = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                models = _get_json(f"{direct}/v1/models", headers=headers)
                break
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.1)
        if models is None:
            tail = log_path.read_text(errors="replace")[-3000:]
            state = f"exited with {proc.returncode}" if proc.poll() is not None else "did not answer in time"
            pytest.fail(f"llama.cpp server {state}: {' '.join(cmd)}\n--- server log ---\n{tail}", pytrace=False)
        data = models.get("data")
        assert isinstance(data, list) and data, f"/v1/models answered without models: {models}"
        assert_loopback(proc, "llama.cpp server")
        proxy = CountingProxy(direct).start()
        yield LlamaServer(
            base_url=f"{proxy.url}/v1",
            direct_base_url=f"{direct}/v1",
            model=str(data[0]["id"]),
            proxy=proxy,
            process=proc,
            log_path=log_path,
        )
    finally:
        if proxy is not None:
            proxy.stop()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def llama_server(
    tiny_gguf: Path, test_assets: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """The real llama.cpp server (no key) behind a counting proxy."""
    with _llama_server(tiny_gguf, test_assets, tmp_path_factory.mktemp("llama_server")) as server:
        yield server


#: the key `llama_server_keyed` requires
LLAMA_KEY = "sk-tailorbench-llama-0123456789"


@pytest.fixture(scope="session")
def llama_server_keyed(
    tiny_gguf: Path, test_assets: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """The real llama.cpp server started with ``--api_key LLAMA_KEY``, as hosted providers check keys."""
    with _llama_server(tiny_gguf, test_assets, tmp_path_factory.mktemp("llama_keyed"), api_key=LLAMA_KEY) as server:
        yield server


@pytest.fixture(autouse=True)
def call_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets a private model-call cache (never the user's ~/.cache one, inherited by subprocesses),
    so call counts at the server mean something; shared connections are closed afterwards."""
    path = tmp_path / "calls.sqlite"
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(path))
    monkeypatch.delenv("TAILORBENCH_CACHE_POLICY", raising=False)
    yield path
    cache = sys.modules.get("tailorbench.models.cache")
    if cache is not None:
        for key in list(cache._OPEN):
            cache._OPEN.pop(key).close()
