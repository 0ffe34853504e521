"""Session fixtures for the real parts: the tiny model and llama.cpp's OpenAI-compatible server.

The assets are built and cached by ``scripts/ensure_test_assets.py`` (``make test`` runs it first).  When
they are missing or stale the fixtures fail loudly with the command to run: a test that needs the real
server must never pass by being skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
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

from tests.helpers import machine
from tests.helpers.counting_proxy import CountingProxy
from tests.helpers.loopback import guard_listen

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_SCRIPT = REPO_ROOT / "scripts" / "ensure_test_assets.py"
HOW_TO_BUILD = (
    "run `make test`, or build them directly with `.venv/bin/python scripts/ensure_test_assets.py` "
    "(cache: $TAILORBENCH_CACHE or ~/.cache/tailorbench)"
)
SERVER_START_TIMEOUT_S = 60.0


#: where the heavy test assets are (scripts/ensure_test_assets.py reads it first): the cache `make assets` fills,
#: shared by every worker and only read by the tests
ASSETS_ENV = "TAILORBENCH_TEST_ASSETS"
SCRATCH = pytest.StashKey[Path]()
#: the durations report every run writes (beside pytest's own `--durations` table); TAILOR_DURATIONS moves it
DURATIONS = Path(os.environ.get("TAILOR_DURATIONS", REPO_ROOT / "runs" / "test-durations.txt"))
#: this process's tests: seconds (setup, call and teardown), outcome, worker, derived markers
_TESTS: dict[str, dict[str, Any]] = {}
_STARTED: list[float] = []
#: the machine probe and CPU ticks before the run (tests/helpers/machine.py), in the controller
_MACHINE: list[Any] = []


def worker_id() -> str:
    """This process's pytest-xdist worker (`gw0`, `gw1`, ...), or `main` in a run without workers."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def pytest_configure(config: pytest.Config) -> None:
    """Each process (each xdist worker) gets its own run-time cache: `$TAILORBENCH_CACHE` (the viewer's indexes of
    read-only runs, ...) points at a scratch folder of its own, removed at the end, while the asset cache it named
    before moves to `$TAILORBENCH_TEST_ASSETS`, shared read-only."""
    if ASSETS_ENV not in os.environ:
        base = os.environ.get("TAILORBENCH_CACHE")
        os.environ[ASSETS_ENV] = str(Path(base).expanduser() if base else Path.home() / ".cache" / "tailorbench")
    scratch = Path(tempfile.mkdtemp(prefix=f"tailorbench-cache-{worker_id()}-"))
    os.environ["TAILORBENCH_CACHE"] = str(scratch)
    config.stash[SCRATCH] = scratch
    _STARTED[:] = [time.time()]
    if not hasattr(config, "workerinput"):  # the controller: how fast the machine is before the run
        _MACHINE[:] = [machine.probe_seconds(), machine.cpu_ticks()]
    _hf_logs_to_current_stderr()


class _CurrentStderr:
    """A stream that writes to whatever `sys.stderr` is at the moment of the write."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _hf_logs_to_current_stderr() -> None:
    """transformers' own log handler keeps the `sys.stderr` of the moment it was made; made while a CliRunner
    captured a verb's output, it later wrote into that closed capture, and logging's `--- Logging error ---`
    traceback landed in another verb's output (the CLI fuzz walk of `train-rm` failed on it in a full run). Made
    here, before any test, it writes to the stderr of each record's moment, as the package's own handler does."""
    if importlib.util.find_spec("transformers") is None:
        return
    from transformers.utils import logging as hf_logging

    hf_logging.get_logger()  # makes the library's handler
    handler = getattr(hf_logging, "_default_handler", None)
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(_CurrentStderr())  # type: ignore[arg-type]


def pytest_unconfigure(config: pytest.Config) -> None:
    scratch = config.stash.get(SCRATCH, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def _cpu_now() -> float:
    """CPU seconds (user + system) of this process and of the children it has waited for: a test's subprocesses
    (`tailor` runs, servers it stopped) count in the test that reaped them."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_CPU_MARK: list[float] = [0.0]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    _CPU_MARK[0] = _cpu_now()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Each phase's report carries the CPU seconds it took (`cpu_s`, a user property that xdist sends on)."""
    report = yield
    now = _cpu_now()
    report.user_properties.append(("cpu_s", now - _CPU_MARK[0]))
    _CPU_MARK[0] = now
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count each test's setup, call and teardown (in the controller of an xdist run, from the workers' reports)."""
    entry = _TESTS.setdefault(report.nodeid, {"seconds": 0.0, "cpu_s": 0.0, "outcome": "passed",
                                              "worker": worker_id()})
    entry["seconds"] += report.duration
    entry["cpu_s"] += sum(v for k, v in report.user_properties if k == "cpu_s")
    node = getattr(report, "node", None)  # xdist: the worker the report came from
    gateway = getattr(node, "gateway", None)
    if gateway is not None:
        entry["worker"] = str(gateway.id)
    if report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"
    markers = sorted(m for m in (*FIXTURE_MARKERS, "fuzz") if m in report.keywords)
    if markers:
        entry["markers"] = markers


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the durations report: the run's wall time, its workers, the slowest tests and the time per file and
    per marker. Not by an xdist worker (the controller writes it) nor by the Ray tests' namespace run."""
    from tests.helpers import netns

    config = session.config
    if hasattr(config, "workerinput"):
        _hand_over_fuzz_counts(config)
        return
    if netns.inside() or not _TESTS or not _STARTED:
        return
    wall = time.time() - _STARTED[0]
    speed = machine.summary(_MACHINE[0], machine.probe_seconds(), _MACHINE[1], machine.cpu_ticks()) \
        if _MACHINE else None
    write_durations(DURATIONS, _TESTS, wall, int(exitstatus), str(getattr(config.option, "numprocesses", None) or 0),
                    speed)


def _hand_over_fuzz_counts(config: pytest.Config) -> None:
    """An xdist worker sends the CLI fuzz walk's counts to the controller, which prints the walk's table for the
    whole run (tests/fuzz/conftest.py prints it where it runs in the process that collected it)."""
    fuzz = sys.modules.get("tests.fuzz.test_fuzz_cli")
    workeroutput = getattr(config, "workeroutput", None)
    if fuzz is None or workeroutput is None or not fuzz.COUNTS:
        return
    from tests.fuzz.conftest import GENERATED

    workeroutput["fuzz"] = {
        "generated": dict(GENERATED), "counts": [[*k, n] for k, n in fuzz.COUNTS.items()],
        "failures": [[*k, v] for k, v in fuzz.FAILURES.items()],
        "known_seen": [[*k, n] for k, n in fuzz.KNOWN_SEEN.items()],
        "known_where": [[*k, v] for k, v in fuzz.KNOWN_WHERE.items()]}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller adds a worker's fuzz counts to its own (`_hand_over_fuzz_counts`)."""
    data = getattr(node, "workeroutput", {}).get("fuzz")
    if not data:
        return
    from tests.fuzz import test_fuzz_cli as fuzz
    from tests.fuzz.conftest import GENERATED

    GENERATED.update(data["generated"])
    for verb, cls, n in data["counts"]:
        fuzz.COUNTS[verb, cls] += n
    for verb, cls, problems in data["failures"]:
        fuzz.FAILURES.setdefault((verb, cls), []).extend(problems)
    for pattern, cls, problem, n in data["known_seen"]:
        fuzz.KNOWN_SEEN[pattern, cls, problem] += n
    for pattern, cls, problem, where in data["known_where"]:
        fuzz.KNOWN_WHERE.setdefault((pattern, cls, problem), {}).update(where)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The fuzz walk's table in an xdist run, where the controller never loads tests/fuzz/conftest.py."""
    fuzz_conftest = REPO_ROOT / "tests" / "fuzz" / "conftest.py"
    if hasattr(config, "workerinput") or any(getattr(plugin, "__file__", None) == str(fuzz_conftest)
                                             for plugin in config.pluginmanager.get_plugins()):
        return
    fuzz = sys.modules.get("tests.fuzz.test_fuzz_cli")
    if fuzz is None or not fuzz.COUNTS:
        return
    from tests.fuzz.conftest import pytest_terminal_summary as fuzz_summary

    fuzz_summary(terminalreporter)


def write_durations(path: Path, tests: dict[str, dict[str, Any]], wall_s: float, exitstatus: int,
                    workers: str, speed: dict[str, float | None] | None = None) -> None:
    """`path` (text) and `path` with .json: every test's seconds, outcome, worker and derived markers, and how fast
    the machine was (`speed`: tests/helpers/machine.py)."""
    total = sum(t["seconds"] for t in tests.values())
    cpu = sum(t.get("cpu_s", 0.0) for t in tests.values())
    cpu_by_file: dict[str, float] = {}
    for nodeid, t in tests.items():
        cpu_by_file[nodeid.split("::")[0]] = cpu_by_file.get(nodeid.split("::")[0], 0.0) + t.get("cpu_s", 0.0)
    by_file: dict[str, float] = {}
    by_marker: dict[str, float] = {}
    by_worker: dict[str, float] = {}
    for nodeid, t in tests.items():
        by_file[nodeid.split("::")[0]] = by_file.get(nodeid.split("::")[0], 0.0) + t["seconds"]
        by_worker[t["worker"]] = by_worker.get(t["worker"], 0.0) + t["seconds"]
        for m in t.get("markers", ["(none)"]):
            by_marker[m] = by_marker.get(m, 0.0) + t["seconds"]
    outcomes: dict[str, int] = {}
    for t in tests.values():
        outcomes[t["outcome"]] = outcomes.get(t["outcome"], 0) + 1
    lines = [f"wall {wall_s:.1f} s; {len(tests)} tests ({', '.join(f'{n} {k}' for k, n in sorted(outcomes.items()))});"
             f" {total:.1f} s of test time, {cpu:.1f} s of CPU; workers: {workers}; exit status {exitstatus}",
             *([_machine_line(speed)] if speed else []),
             "", "per worker (s):", *(f"  {w:>8} {s:9.1f}" for w, s in sorted(by_worker.items())),
             "", "per marker (s; a test counts under each of its markers):",
             *(f"  {m:>8} {s:9.1f}" for m, s in sorted(by_marker.items(), key=lambda kv: -kv[1])),
             "", "slowest 40 tests (s of wall time, s of CPU):",
             *(f"  {t['seconds']:8.1f} {t.get('cpu_s', 0.0):8.1f} {t['worker']:>5} {nodeid}"
               for nodeid, t in sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:40]),
             "", "most CPU, 40 tests (s of CPU, s of wall time):",
             *(f"  {t.get('cpu_s', 0.0):8.1f} {t['seconds']:8.1f} {t['worker']:>5} {nodeid}"
               for nodeid, t in sorted(tests.items(), key=lambda kv: -kv[1].get("cpu_s", 0.0))[:40]),
             "", "per file, slowest 40 (s of wall time, s of CPU):",
             *(f"  {s:8.1f} {cpu_by_file[f]:8.1f} {f}"
               for f, s in sorted(by_file.items(), key=lambda kv: -kv[1])[:40])]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.with_suffix(".json").write_text(json.dumps(
        {"wall_s": round(wall_s, 1), "workers": workers, "exitstatus": exitstatus, "test_seconds": round(total, 1),
         "cpu_seconds": round(cpu, 1), "machine": speed,
         "tests": {k: {**v, "seconds": round(v["seconds"], 3), "cpu_s": round(v.get("cpu_s", 0.0), 3)}
                   for k, v in sorted(tests.items())}}, indent=1),
        encoding="utf-8")


def _machine_line(speed: dict[str, float | None]) -> str:
    def share(key: str) -> str:
        value = speed[key]
        return "unknown" if value is None else f"{100 * value:.0f} %"

    return (f"machine: the probe loop took {speed['probe_before_s']:.3f} s before the run and "
            f"{speed['probe_after_s']:.3f} s after (tests/helpers/machine.py); cores busy {share('busy_share')} of "
            f"the run, steal {share('steal_share')}")


#: a test that uses one of these fixtures (directly or through another fixture) gets the marker: the markers
#: select (`make test-fast` leaves out slow, server, browser and ray) and are never applied by hand
FIXTURE_MARKERS: dict[str, frozenset[str]] = {
    # the cached test assets: the tiny model, its GGUF and the llama.cpp server serving it
    "server": frozenset({"test_assets", "llama_server", "llama_server_keyed"}),
    "postgres": frozenset({"pg_url", "pg_admin"}),
    "browser": frozenset({"browser"}),
    "ray": frozenset({"ray_runtime"}),
    "slow": frozenset({"ray_runtime", "vllm_report"}),
}
#: tests with no fixture that tells, measured at 30 s or more of wall time in a durations report of the fast set
#: (runs/test-durations.json, two workers on a loaded 2-core machine): `slow`, so `make test-fast` leaves them to
#: `make test`; file::function, every parametrization
MEASURED_SLOW = frozenset({
    # arena-rank in its own venv: jax's import and compilation, 35 s of CPU (the first test runs it for both)
    "tests/arena/test_arena_rank.py::test_ratings_equal_arena_rank_item_by_item",
    "tests/arena/test_arena_rank.py::test_style_control_equals_arena_rank_without_its_penalty",
    "tests/evaluate/test_compare.py::test_per_tier_cells_and_three_runs",
    "tests/evaluate/test_reliability.py::test_every_figure_recomputed_from_predictions",
    "tests/judges/test_reward_model.py::test_batched_equals_one_at_a_time",
    "tests/models/test_batch_eval.py::test_a_refused_key_on_resume_loses_nothing_written",
    "tests/models/test_batch_eval.py::test_gen_eval_batch_kill_9_then_resume",
    "tests/models/test_batch_eval.py::test_status_and_cancel_of_a_run_left_waiting_then_resume",
    "tests/models/test_cache_key.py::test_key_equals_the_reference",
    "tests/models/test_cache_key.py::test_other_message_shapes_use_the_reference_encoder",
    "tests/models/test_keys_per_judge.py::test_two_providers_two_keys_one_run",
    "tests/study/test_study.py::test_cli_demo_runs_the_bundled_example_from_init_to_report",
    "tests/study/test_study.py::test_example_study_from_empty_dir_to_report_with_simulated_people",
    "tests/study/test_study.py::test_interventions_when_asked_are_trained_on_the_study_labels",
    "tests/study/test_study.py::test_kill_9_during_a_model_step_and_while_waiting_repeats_nothing",
    "tests/study/test_study.py::test_kill_9_during_an_import_imports_once_and_opens_one_crowd_study",
    "tests/study/test_study.py::test_run_watch_continues_as_people_label_and_gives_up_after_max_wait",
    "tests/study/test_study_humans.py::test_people_rate_a_sample_and_the_report_shows_judge_only_beside_anchored",
    "tests/study/test_study_humans.py::test_share_1_gives_an_anchored_figure_equal_to_peoples_own",
    "tests/test_one_door.py::test_a_planted_rmtree_is_found",
    "tests/test_one_door.py::test_every_write_goes_through_the_door",
    "tests/test_one_reader.py::test_a_planted_yaml_safe_load_is_found",
    "tests/test_one_reader.py::test_every_user_file_is_read_by_the_one_reader",
    "tests/test_secrets.py::test_no_secret_reaches_any_file_or_stderr",
})
#: the generated-input suites (tests/fuzz/): marked `fuzz` by where they live
FUZZ_DIR = "tests/fuzz/"
#: the xdist group of the engines that take both cores while they run (vLLM, Ray): never two at once
ENGINES = "engines"
ENGINE_FIXTURES = frozenset({"ray_runtime", "vllm_report"})
RAY_WRAPPER = "tests/test_ray_isolated.py::"
#: the files whose tests form the `engines` group. The scheduler groups by file, not by marker: with pytest 9,
#: pytest-xdist 3.8's loadgroup never sees an `xdist_group` mark (it renames `item._nodeid`, which pytest 9 no longer
#: reads; measured: three marked tests went to two workers), so `EnginesScheduling` below does the grouping
ENGINE_FILES = ("tests/models/test_vllm_backend.py::", RAY_WRAPPER)


@pytest.hookimpl(optionalhook=True)  # unknown when xdist is not loaded (`-p no:xdist`)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` with the `engines` group made from ENGINE_FILES (see there)."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class EnginesScheduling(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(ENGINE_FILES):
                return ENGINES
            return str(super()._split_scope(nodeid))

    return EnginesScheduling(config, log)


def derive_markers(item: pytest.Item) -> None:
    """The markers and the xdist group `item` gets from the fixtures it uses (FIXTURE_MARKERS, ENGINES)."""
    used = set(getattr(item, "fixturenames", ()))
    for marker, fixtures in FIXTURE_MARKERS.items():
        if used & fixtures and item.get_closest_marker(marker) is None:
            item.add_marker(marker)
    if item.nodeid.split("[")[0] in MEASURED_SLOW and item.get_closest_marker("slow") is None:
        item.add_marker("slow")
    if item.nodeid.startswith(FUZZ_DIR) and item.get_closest_marker("fuzz") is None:
        item.add_marker("fuzz")
    # the namespace run of the Ray tests is their engine (tests/test_ray_isolated.py); it carries no `ray` marker,
    # which would send it to itself
    if "vllm_report" in used and not item.nodeid.startswith(ENGINE_FILES):
        raise pytest.UsageError(f"{item.nodeid} uses vllm_report outside ENGINE_FILES (tests/conftest.py): "
                                "its engine would start on a second worker")
    if used & ENGINE_FIXTURES or item.nodeid.startswith(RAY_WRAPPER):
        item.add_marker(pytest.mark.xdist_group(ENGINES))
        if item.get_closest_marker("slow") is None:
            item.add_marker("slow")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from fixtures (before `-m` selects); then the `ray` tests go to tests/test_ray_isolated.py's
    namespace run when it is collected with them."""
    from tests.helpers import netns
    from tests.test_ray_isolated import RAY_IDS

    for item in items:
        derive_markers(item)
    if netns.inside():
        return
    ray_items = [item for item in items if item.get_closest_marker("ray") is not None]
    wrapper = any(item.nodeid.startswith(RAY_WRAPPER) for item in items)
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


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retried model calls wait no back-off in the tests, once for all of them: the wrapper's default
    `backoff_base` is 0 here. A test of the back-off itself passes its own `backoff_base` (which wins), and a
    `tailor` run in a subprocess keeps the product's default unless its command line sets one."""
    from tailorbench.models.model import Model

    defaults = Model.__init__.__kwdefaults__
    assert defaults is not None and "backoff_base" in defaults, "Model() lost its backoff_base option"
    monkeypatch.setitem(defaults, "backoff_base", 0.0)


@pytest.fixture(scope="session")
def ray_runtime() -> Iterator[None]:
    """Declares that a test starts Ray (so it is marked `ray` and `slow` and goes to the engines' xdist group,
    and to tests/test_ray_isolated.py's loopback-only namespace where that can be made); usage stats off."""
    previous = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    yield
    if previous is None:
        os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = previous


#: the PostgreSQL server the annotation tests use (trust auth); each worker makes its own database there
PG_URL = os.environ.get("TAILOR_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


#: the databases `pg_url` makes: worker and process id (two runs at once on one server never meet either)
WORKER_DB = re.compile(r"^test_(?:gw\d+|main)_(\d+)$")


def worker_database(worker: str, pid: int) -> str:
    """The database of one pytest-xdist worker (`main` without workers) of one process: `test_gw0_4242`."""
    return f"test_{re.sub(r'[^a-z0-9_]', '_', worker.lower())}_{pid}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """This worker's own PostgreSQL database, created empty on the server of TAILOR_TEST_PG_URL (trust auth) and
    dropped at the end (with those of runs that died before dropping theirs), so parallel workers never share
    tables, locks or sequences; fails (never skips) when the server is not reachable."""
    from sqlalchemy import create_engine, make_url, text

    base = make_url(PG_URL)
    name = worker_database(worker_id(), os.getpid())
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            existing = [row[0] for row in conn.execute(text("SELECT datname FROM pg_database"))]
            for old in existing:
                match = WORKER_DB.match(old)
                if match and not _pid_alive(int(match.group(1))):
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # pragma: no cover - environment problem
        admin.dispose()
        pytest.fail(f"PostgreSQL at {PG_URL} is not reachable ({exc}); start it (CI does) or set TAILOR_TEST_PG_URL")
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_admin(pg_url: str) -> Iterator[Any]:
    """An engine on this worker's PostgreSQL database (`pg_url`)."""
    from sqlalchemy import create_engine

    engine = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()
