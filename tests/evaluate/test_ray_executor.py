"""`--executor ray` on a real two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`: a head and a
worker node, separate raylets of one CPU each, so the two workers of a run land on different nodes), with the
`rm:` judge on a tiny BERT and the LLM judge against the real llama.cpp server (requests counted at its proxy):
the predictions equal one process's, line for line after sorting (`latency_s` and `cached` aside); a re-run is
served by the call cache; a worker killed mid-run (`ray.kill`) is replaced and its batches redone, counted in
the manifest; a driver killed with SIGKILL and resumed loses nothing and repeats at most the batches in flight."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tailorbench.errors import ConfigError
from tailorbench.evaluate.runner import EvalConfig, run_eval
from tailorbench.judges.base import make_judge
from tests.conftest import LlamaServer
from tests.evaluate.test_crash_resume import CHAT, _slow
from tests.helpers.counting_proxy import CountingProxy
from tests.helpers.rm_models import tiny_bert

TAILOR = str(Path(sys.executable).parent / "tailor")
#: 12 cases x 2 orders
CASES = 12
CALLS = 2 * CASES


@pytest.fixture(scope="module")
def cluster(ray_runtime: None) -> Iterator[str]:
    """A head node and a worker node (separate raylet processes); yields the GCS address. Ray binds `::` and
    the machine's address whatever it is told, so this module runs in a network namespace with loopback alone
    (tests/test_ray_isolated.py), where that address is 127.0.0.1. `ray_runtime` marks its users `ray`."""
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes()
        yield str(nodes.address)
    finally:
        import ray

        ray.shutdown()
        nodes.shutdown()


def _rows(run: Path, name: str = "predictions.jsonl") -> list[dict[str, Any]]:
    path = run / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _comparable(run: Path, name: str = "predictions.jsonl") -> list[str]:
    """The prediction (or verdict) lines, sorted, without what differs between two runs of the same calls."""
    out = []
    for row in _rows(run, name):
        row.pop("latency_s")
        row.pop("cached")
        out.append(json.dumps(row, sort_keys=True))
    return sorted(out)


def _executor(run: Path) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text())
    block: dict[str, Any] = manifest["config"]["judge_description"]["executor"]
    return {**block, "status": manifest["status"], "call_stats": manifest["config"].get("call_stats")}


def _llm(server_url: str, model: str, limit: int = CASES) -> EvalConfig:
    options = {"concurrency": "2", "adaptive": "false"}
    return EvalConfig(data="demo", judge=f"llm:openai:{model}@{server_url}", limit=limit, n_boot=50,
                      judge_options=options)


def test_rm_on_two_nodes_equals_one_process(cluster: str, tmp_path: Path) -> None:
    # rm_batch_size=1: every answer is scored alone in both runs (a scoring batch's padding changes the float
    # summation order, so batches of other compositions agree only to rounding)
    config = EvalConfig(data="demo", judge=f"rm:{tiny_bert(tmp_path / 'm')}", n_boot=50,
                        judge_options={"rm_batch_size": "1"})
    run_eval(config, tmp_path / "local", progress=False)
    run_eval(replace(config, executor="ray", ray_address=cluster), tmp_path / "ray", progress=False)
    assert _comparable(tmp_path / "ray") == _comparable(tmp_path / "local")
    block = _executor(tmp_path / "ray")
    assert block["workers"] == 2 and block["nodes"] == 2 and block["replaced_workers"] == 0
    assert block["status"] == "finished"
    results = [json.loads((tmp_path / r / "results.json").read_text())["metrics"] for r in ("local", "ray")]
    assert results[0] == results[1]


def test_llm_judge_equals_one_process_and_a_rerun_makes_no_call(
    cluster: str, llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _llm(llama_server.base_url, llama_server.model)
    monkeypatch.setenv("TAILORBENCH_CACHE_POLICY", "off")  # the one-process run leaves the cache empty
    run_eval(config, tmp_path / "local", progress=False)
    monkeypatch.delenv("TAILORBENCH_CACHE_POLICY")
    distributed = replace(config, executor="ray", ray_address=cluster)
    llama_server.reset()
    run_eval(distributed, tmp_path / "ray", progress=False)
    assert llama_server.count() == CALLS
    assert _comparable(tmp_path / "ray") == _comparable(tmp_path / "local")
    assert _executor(tmp_path / "ray")["call_stats"]["requests"] == CALLS  # summed over the workers
    llama_server.reset()
    run_eval(distributed, tmp_path / "again", progress=False)
    assert llama_server.count(None) == 0  # every call from the cache, no preflight either
    assert all(row["cached"] for row in _rows(tmp_path / "again"))
    assert _comparable(tmp_path / "again") == _comparable(tmp_path / "local")


def test_a_killed_worker_is_replaced_and_its_batches_redone(
    cluster: str, llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    monkeypatch.setenv("TAILORBENCH_CACHE_POLICY", "off")  # every batch redone is a call again
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    with CountingProxy(upstream, intercept=_slow(0.2)) as proxy:
        config = _llm(f"{proxy.url}/v1", llama_server.model)
        run_eval(config, tmp_path / "local", progress=False)
        killed: list[str] = []

        def kill_one_worker() -> None:
            while len(_rows(tmp_path / "ray")) < 3:
                time.sleep(0.02)
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                     if a["namespace"] == "tailorbench"]
            ray.kill(ray.get_actor(sorted(names)[0], namespace="tailorbench"))
            killed.append(sorted(names)[0])

        killer = threading.Thread(target=kill_one_worker, daemon=True)
        killer.start()
        run_eval(replace(config, executor="ray", ray_address=cluster), tmp_path / "ray", progress=False)
        killer.join(timeout=10)
    assert killed, "the run ended before a worker could be killed"
    assert _comparable(tmp_path / "ray") == _comparable(tmp_path / "local")
    block = _executor(tmp_path / "ray")
    assert block["replaced_workers"] == 1 and block["redone_batches"] >= 1 and block["redone_verdicts"] >= 1
    assert block["worker_errors"] and block["worker_errors"][0].startswith(killed[0])
    assert block["status"] == "finished"


def test_a_killed_driver_resumes_losing_nothing(
    cluster: str, llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAILORBENCH_CACHE_POLICY", "off")  # what a resume does not repeat is down to the lines
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    run = tmp_path / "ray"
    with CountingProxy(upstream, intercept=_slow(0.2)) as proxy:
        config = _llm(f"{proxy.url}/v1", llama_server.model)
        run_eval(config, tmp_path / "local", progress=False)
        proxy.reset()
        cmd = [TAILOR, "eval", "--data", "demo", "--limit", str(CASES), "--n-boot", "50", "--judge", config.judge,
               "--judge-option", "concurrency=2", "--judge-option", "adaptive=false", "--executor", "ray",
               "--ray-address", cluster, "--out", str(run), "--no-progress"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while proc.poll() is None and len(_rows(run)) < 3:
            time.sleep(0.02)
        if proc.poll() is not None:
            pytest.fail(f"the run ended (rc {proc.returncode}) before it could be killed: {proc.communicate()[1]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)  # calls the dead driver's workers had started still reach the server
        written, sent = len(_rows(run)), proxy.count(CHAT)
        # 2 workers x depth 2 batches of ceil(24 / (2 x 4)) = 3 (executors.RayJudgePool.prepare)
        in_flight = 2 * 2 * 3
        assert 3 <= written < CALLS and sent - written <= in_flight
        resumed = subprocess.run([TAILOR, "eval", "--resume", str(run), "--no-progress"], capture_output=True,
                                 text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert "was interrupted (its process ended without finishing" in resumed.stderr
        assert proxy.count(CHAT) - CALLS <= in_flight  # repeated: at most the batches in flight at the kill
    assert _comparable(run) == _comparable(tmp_path / "local")  # nothing lost, nothing twice
    assert _executor(run)["status"] == "finished"


def test_gen_eval_judges_on_the_cluster(cluster: str, llama_server: LlamaServer, tmp_path: Path) -> None:
    """gen-eval's verdicts and its judge-validation run go through the executor; generation stays local."""
    from tailorbench.geneval.config import GenEvalConfig
    from tailorbench.geneval.run import run_gen_eval

    config = GenEvalConfig(model=f"openai:{llama_server.model}@{llama_server.base_url}", judge="longer",
                           per_tier=2, max_tokens=24, n_boot=50, validate_cases=4)
    run_gen_eval(config, tmp_path / "local", progress=False)
    run_gen_eval(replace(config, executor="ray", ray_address=cluster), tmp_path / "ray", progress=False)
    assert _comparable(tmp_path / "ray", "verdicts.jsonl") == _comparable(tmp_path / "local", "verdicts.jsonl")
    assert len(_rows(tmp_path / "ray", "verdicts.jsonl")) == 24  # 12 cases x 2 orders
    validation = tmp_path / "ray" / "judge_validation"
    assert _comparable(validation) == _comparable(tmp_path / "local" / "judge_validation")
    assert _executor(validation)["workers"] == 2
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["config"]["executor"] == "ray"


def test_options_are_checked_before_any_work(tmp_path: Path) -> None:
    config = EvalConfig(data="demo", judge="longer", n_boot=50)
    for bad, says in ((replace(config, executor="spark"), "--executor"),
                      (replace(config, ray_address="127.0.0.1:6379"), "--ray-address needs --executor ray"),
                      (replace(config, executor="ray", executor_options={"wokers": "2"}), "unknown ray executor"),
                      (replace(config, executor="ray", executor_options={"workers": "0"}), "workers")):
        with pytest.raises(ConfigError, match=says):
            run_eval(bad, tmp_path / "run", progress=False)
    with pytest.raises(ConfigError, match="not a judge object"):
        run_eval(replace(config, executor="ray"), tmp_path / "run", progress=False, judge=make_judge("longer"))
    assert not (tmp_path / "run").exists()


def test_a_vllm_model_runs_its_engines_on_ray_data() -> None:
    """Under `--executor ray` a vllm: judge stays in the driver (one wrapper: cache, resume, accounting) and its
    engines become Ray Data LLM replicas (models/vllm_ray_data.py, run in tests/models/test_vllm_backend.py);
    other judges get the actor pool. Nothing connects until the first call."""
    from tailorbench.evaluate.executors import build_judge, generator_options, runs_on_vllm
    from tailorbench.judges.base import JudgeOptions
    from tailorbench.models.vllm_ray_data import DEFAULT_CHUNK, RayDataSettings

    assert runs_on_vllm("llm:vllm:/models/judge") and runs_on_vllm("llm:vllm:/models/judge[verdict=logprobs]")
    assert not runs_on_vllm("llm:hf:/models/judge") and not runs_on_vllm("rm:vllm:/models/rm")
    judge = build_judge("llm:vllm:/models/judge", JudgeOptions(), "ray", "head:6379",
                        {"workers": "2", "num_gpus": "1"})
    model = judge.describe()["model"]
    assert model["chunk_size"] == DEFAULT_CHUNK and model["engine_on"]["kind"] == "ray_data"
    assert model["engine_on"]["datasets"] == 0
    options = generator_options("vllm:/models/gen", {"seed": 1}, "ray", None, {"workers": "3"})
    assert options["seed"] == 1 and options["ray_data"] == RayDataSettings(replicas=3, num_cpus=1.0)
    assert generator_options("openai:m@http://127.0.0.1:9/v1", {}, "ray", None, {}) == {}
    assert generator_options("vllm:/models/gen", {}, "local", None, {}) == {}
    with pytest.raises(ConfigError, match="depth: a vllm: model's engines run as Ray Data LLM replicas"):
        build_judge("llm:vllm:/models/judge", JudgeOptions(), "ray", None, {"depth": "3"})
    with pytest.raises(ConfigError, match="start_timeout"):
        generator_options("vllm:/models/gen", {}, "ray", None, {"start_timeout": "60"})
    with pytest.raises(ConfigError, match="ray_data is not an option"):
        make_judge("llm:vllm:/models/judge", JudgeOptions(extra={"ray_data": "yes"}))
