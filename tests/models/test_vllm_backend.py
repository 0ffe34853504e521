"""The vLLM backends (`vllm:`, `rm:vllm:`) against the HF ones on the same tiny models, and the `vllm:` engines as
Ray Data LLM replicas (`--executor ray`) against the local engine.

vLLM runs in its own venv (scripts/ensure_vllm_venv.py builds it once into the test cache; `make test` does):
tests/models/vllm_checks.py runs there, once per session, starting each engine once, and writes what it saw to
a JSON file; these tests compare it with the HF backends run here. A machine without the venv fails with the
command that builds it, never passes by skipping. Option checks and the refusal of the feature-head recipe need
no engine and run in this venv alone.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeOptions, make_judge
from tailorbench.models.backends import backend_options, make_chat_model
from tests.helpers import netns

#: two local engine starts and three Ray Data ones on a loaded 2-core machine
pytestmark = pytest.mark.timeout(1500)
REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKS = Path(__file__).with_name("vllm_checks.py")
HOW_TO_BUILD = ("run `make test`, or build it directly with `.venv/bin/python scripts/ensure_vllm_venv.py` "
                "(cache: $TAILORBENCH_CACHE or ~/.cache/tailorbench)")
#: |logprob(vLLM) - logprob(HF)| allowed on the tiny fp32 model (float reductions differ between the kernels)
LOGPROB_TOL = 2e-3
#: label margins below this are near-ties: a flipped verdict there is reported, not failed
NEAR_TIE = 1e-2
#: |score(vLLM pooling) - score(HF)| allowed for the fp32 sequence classifier
SCORE_TOL = 1e-4


def _venv_module() -> ModuleType:
    path = REPO_ROOT / "scripts" / "ensure_vllm_venv.py"
    spec = importlib.util.spec_from_file_location("tailorbench_vllm_venv", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def vllm_paths() -> Any:
    venv = _venv_module()
    paths = venv.vllm_paths()
    if not venv.models_current(paths):
        pytest.fail(f"tiny vLLM test models missing or stale under {paths.llama.parent}: {HOW_TO_BUILD}",
                    pytrace=False)
    return paths


@pytest.fixture(scope="session")
def vllm_report(vllm_paths: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run tests/models/vllm_checks.py once in the vLLM venv; its JSON report. Once per test run, not per xdist
    worker: the first worker to ask runs it under a lock in the run's shared temporary folder, and a worker that
    asks later reads that report (two engines at once would share two cores, and two local Ray clusters collide)."""
    if not _venv_module().venv_current(vllm_paths):
        pytest.fail(f"the vLLM venv is missing or stale at {vllm_paths.venv}: {HOW_TO_BUILD}", pytrace=False)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with (shared / "vllm-checks.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "vllm-checks" / "report.json"
        if done.is_file():
            return cast(dict[str, Any], json.loads(done.read_text()))
        return _run_vllm_checks(vllm_paths, shared / "vllm-checks")


def _run_vllm_checks(vllm_paths: Any, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "TAILORBENCH_CALL_CACHE": str(work / "calls.sqlite"),
           "PYTHONPATH": str(REPO_ROOT / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    # its `--executor ray` checks start a local Ray, which binds beyond loopback: run it where loopback is all
    # there is (tests/helpers/netns.py), where that can be made
    cmd = [*(netns.prefix() or ()), str(vllm_paths.python), str(CHECKS), "--llama", str(vllm_paths.llama),
           "--seqcls", str(vllm_paths.seqcls), "--work", str(work)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1440, check=False)
    if proc.returncode != 0 or not (work / "report.json").is_file():
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}",
                    pytrace=False)
    report: dict[str, Any] = json.loads((work / "report.json").read_text())
    return report


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return str(row["case_id"]), str(row["order"])


@pytest.fixture(scope="module")
def hf_runs(vllm_paths: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The same `tailor eval` runs as the vLLM checks, with `llm:hf:` on the same model (its own cache)."""
    work = tmp_path_factory.mktemp("hf")
    out: dict[str, list[dict[str, Any]]] = {}
    for name, extra in (("logprobs", ["--judge-option", "verdict=logprobs"]), ("text", [])):
        run = work / name
        result = CliRunner().invoke(app, [
            "eval", "--data", "demo", "--no-progress", "--limit", "4", "--judge", f"llm:hf:{vllm_paths.llama}",
            "--judge-option", "dtype=float32", "--judge-option", f"cache_path={work / 'calls.sqlite'}",
            "--out", str(run), *extra])
        assert result.exit_code == 0, result.output
        out[name] = _rows(run)
    return out


# -- options and refusals (no engine) -------------------------------------------------------------------------


def test_engine_options_are_the_config_fields() -> None:
    options = backend_options("vllm")
    assert {"tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "dtype", "enforce_eager",
            "chunk_size", "cache_path", "cache_policy"} <= options
    assert "concurrency" not in options  # a local engine: it batches, the wrapper does not limit it
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        make_chat_model("vllm:/nowhere", {"tensor_parallel_size": "two"})
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        make_chat_model("vllm:/nowhere", {"gpu_memory_utilization": "1.5"})
    with pytest.raises(ConfigError, match="do not apply to the vllm backend"):
        make_chat_model("vllm:/nowhere", {"device": "cuda"})
    model = make_chat_model("vllm:/nowhere", {"enforce_eager": "true", "max_model_len": "256"})
    assert model.describe()["engine"]["enforce_eager"] is True  # typed; nothing starts before the first call


def test_structured_output_is_guided_decoding_and_other_request_options_are_refused() -> None:
    """`response_format` (what `tailor build` sends) becomes vLLM's structured outputs, compact by the engine's
    `compact_json`; a request option the engine would ignore is refused with its name."""
    import asyncio

    from tailorbench.models.base import GenParams
    from tailorbench.models.vllm_backend import VLLMChatAPI, _Call

    api = VLLMChatAPI("/nowhere")
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}}}
    assert api._structured({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}) == \
        {"json": json.dumps(schema), "json_object": None}
    assert api._structured({"type": "json_object", "schema": schema})["json"] == json.dumps(schema)
    assert api._structured({"type": "json_object"}) == {"json": None, "json_object": True}
    with pytest.raises(ConfigError, match="response_format"):
        api._structured({"type": "text"})
    assert api.config.engine_kwargs()["structured_outputs_config"] == {"backend": "xgrammar",
                                                                     "disable_any_whitespace": True}
    assert "structured_outputs_config" not in VLLMChatAPI("/nowhere", compact_json="false").config.engine_kwargs()

    async def kwargs(params: GenParams, uniform: bool) -> dict[str, Any]:
        return api._sampling_kwargs(_Call("chat", [{"role": "user", "content": "hi"}], params), uniform=uniform)

    rows = asyncio.run(kwargs(GenParams(max_tokens=5), uniform=True))
    assert rows == {"top_p": 1.0, "seed": None, "stop": None, "logprobs": None, "logprob_token_ids": None,
                    "max_tokens": 5, "temperature": 0.0, "structured_outputs": None}  # one shape for every row
    with pytest.raises(ConfigError, match="guided_choice does not apply to the vllm backend"):
        asyncio.run(kwargs(GenParams(extra=(("guided_choice", ["A", "B"]),)), uniform=False))


def test_ray_data_rows_read_as_the_local_engine_output() -> None:
    """A Ray Data LLM output row (token ids as an array, logprob keys as strings) in vLLM's RequestOutput shape;
    the finish reason, which the row lacks, inferred from the token budget and the end-of-sequence token."""
    import numpy as np

    from tailorbench.models.vllm_ray_data import RowOutput

    row = {"generated_text": "A", "generated_tokens": np.array([65, 2]),
           "logprobs": [{"65": {"logprob": -0.1, "rank": 1, "decoded_token": "A"}, "66": None}, None]}
    out = RowOutput.from_row(row, max_tokens=2, eos_token_id=2).outputs[0]
    assert out.token_ids == [65, 2] and out.finish_reason == "stop" and out.text == "A"
    assert out.logprobs is not None and out.logprobs[0][65].logprob == -0.1 and 66 not in out.logprobs[0]
    assert out.logprobs[1] == {}  # one entry per generated token, in order
    assert RowOutput.from_row({"generated_tokens": [5, 6]}, 2, 2).outputs[0].finish_reason == "length"
    assert RowOutput.from_row({"generated_tokens": [5]}, 2, 2).outputs[0].finish_reason == "stop"  # a stop string


def test_without_vllm_the_run_stops_with_the_install_line(vllm_paths: Any, tmp_path: Path) -> None:
    """The project venv has no vLLM: the judge's preflight says how to install it (exit 2), before any verdict."""
    assert importlib.util.find_spec("vllm") is None, "the project venv holds no vLLM (it pins its own transformers)"
    result = CliRunner().invoke(app, ["eval", "--data", "demo", "--no-progress", "--limit", "1", "--judge",
                                      f"llm:vllm:{vllm_paths.llama}", "--out", str(tmp_path / "run"),
                                      "--judge-option", "cache_policy=off"])
    assert result.exit_code == 2, result.output
    assert "tailorbench[vllm]" in result.output and "environment of its own" in result.output


def test_feature_head_checkpoint_is_refused_naming_the_hf_path(vllm_paths: Any, tmp_path: Path) -> None:
    from tailorbench.models.reward_hf import RewardFormat, write_format

    ckpt = tmp_path / "feature-head"
    shutil.copytree(vllm_paths.seqcls, ckpt)
    write_format(ckpt, RewardFormat(features=["persona_overlap", "answer_ngrams"], feature_weights=[0.5, 1.0],
                                    feature_mean=[0.0, 0.0], feature_std=[1.0, 1.0]),
                 {"trained_by": "tailor train-rm"})
    with pytest.raises(ConfigError) as caught:
        make_judge(f"rm:vllm:{ckpt}")
    message = str(caught.value)
    assert f"rm:{ckpt}" in message and "persona_overlap" in message and "answer_ngrams" in message
    with pytest.raises(ConfigError, match="unknown rm judge option"):
        make_judge(f"rm:vllm:{vllm_paths.seqcls}", JudgeOptions(extra={"precision": "bf16"}))


def test_a_cache_without_the_venv_is_not_current(tmp_path: Path) -> None:
    """What the fixtures ask before failing with the build command (a machine without the venv never passes)."""
    venv = _venv_module()
    paths = venv.VLLMPaths(tmp_path)
    assert not venv.venv_current(paths) and not venv.models_current(paths)
    paths.python.parent.mkdir(parents=True)
    paths.python.write_text("")
    paths.venv_stamp.write_text(json.dumps({"vllm": "0.1.0"}))  # another vLLM: stale
    assert not venv.venv_current(paths)


# -- against the engine (one vLLM process for the session) ----------------------------------------------------


def test_vllm_judge_end_to_end(vllm_report: dict[str, Any]) -> None:
    for name in ("logprobs", "text"):
        rows = vllm_report[name]["first"]["rows"]
        assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}, rows  # 4 cases x 2 orders
        assert not any(r["cached"] for r in rows)
        model = vllm_report[name]["first"]["manifest"]["config"]["judge_description"]["model"]
        assert model["backend"] == "vllm" and model["engine_requests"] == 8
        assert model["engine"]["enforce_eager"] is True and model["stats"]["requests"] == 8
    assert all(r["scores"] for r in vllm_report["logprobs"]["first"]["rows"])


def test_rerun_from_cache_makes_no_engine_call(vllm_report: dict[str, Any]) -> None:
    for name in ("logprobs", "text"):
        first, again = vllm_report[name]["first"], vllm_report[name]["again"]
        assert all(r["cached"] for r in again["rows"])
        model = again["manifest"]["config"]["judge_description"]["model"]
        assert model["engine_calls"] == 0 and model["stats"]["requests"] == 0 and model["stats"]["cache_hits"] == 8
        assert [(_key(r), r["choice"]) for r in first["rows"]] == [(_key(r), r["choice"]) for r in again["rows"]]


def test_chunks_and_resume_redo_only_what_was_lost(vllm_report: dict[str, Any]) -> None:
    chunked = vllm_report["chunked"]
    model = chunked["full"]["manifest"]["config"]["judge_description"]["model"]
    assert model["chunk_size"] == 2 and model["largest_chunk"] == 2 and model["engine_requests"] == 8
    resumed = chunked["resumed"]
    assert sorted(_key(r) for r in resumed["rows"]) == sorted(_key(r) for r in chunked["full"]["rows"])
    again = resumed["manifest"]["config"]["judge_description"]["model"]
    assert again["engine_requests"] == chunked["dropped"]  # the lost lines only, nothing finished repeated
    before = {_key(r): r["choice"] for r in chunked["full"]["rows"]}
    assert all(before[_key(r)] == r["choice"] for r in resumed["rows"])


def test_gen_eval_generates_and_judges_through_the_backend(vllm_report: dict[str, Any]) -> None:
    gen = vllm_report["gen_eval"]
    assert gen["generations"] and gen["verdicts"]
    generated = [row for row in gen["generations"] if row["role"] == "model"]
    assert generated and all(str(row.get("answer", "")).strip() for row in generated), generated[:2]
    assert {row["status"] for row in gen["verdicts"]} == {"ok"}
    assert gen["manifest"]["model"].startswith("vllm:") and gen["manifest"]["judge"].startswith("llm:vllm:")


def _engine_on(run: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = run["manifest"]["config"]["judge_description"]["model"]["engine_on"]
    return block


def test_ray_data_llm_replicas_judge_as_the_local_engine(vllm_report: dict[str, Any]) -> None:
    """`--executor ray` with a vllm: judge: the engine is a Ray Data LLM replica (vLLMEngineProcessorConfig +
    build_processor); the verdicts and label scores equal the local engine's, every request answered once."""
    ray_run = vllm_report["ray_data"]["logprobs"]["first"]
    rows, local = ray_run["rows"], {_key(r): r for r in vllm_report["logprobs"]["first"]["rows"]}
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"} and not any(r["cached"] for r in rows)
    for row in rows:
        ref = local[_key(row)]
        assert row["choice"] == ref["choice"], (row, ref)
        for label, value in ref["scores"].items():
            assert abs(row["scores"][label] - value) <= LOGPROB_TOL, (row["scores"], ref["scores"])
    engine = _engine_on(ray_run)
    assert engine["kind"] == "ray_data" and engine["replicas"] == 1 and engine["datasets"] == 1
    assert engine["rows"] == 8 and engine["failed_rows"] == 0 and engine["engine_starts"] == 1, engine
    model = ray_run["manifest"]["config"]["judge_description"]["model"]
    assert model["engine_requests"] == 8 and model["stats"]["requests"] == 8 and model["stats"]["failures"] == 0


def test_ray_data_rerun_is_served_by_the_cache(vllm_report: dict[str, Any]) -> None:
    again = vllm_report["ray_data"]["logprobs"]["again"]
    assert all(r["cached"] for r in again["rows"]) and len(again["rows"]) == 8
    engine = _engine_on(again)
    assert engine["datasets"] == 0 and engine["engine_starts"] == 0 and engine["rows"] == 0, engine
    assert again["manifest"]["config"]["judge_description"]["model"]["stats"]["requests"] == 0


def test_ray_data_gen_eval_generates_and_judges_as_the_local_engine(vllm_report: dict[str, Any]) -> None:
    """gen-eval's generation (greedy text) and its judge on Ray Data replicas: the same answers and verdicts as
    gen-eval on the local engine."""
    ray_gen, local = vllm_report["ray_data"]["gen_eval"], vllm_report["gen_eval"]

    def answers(gen: dict[str, Any]) -> dict[tuple[str, str], tuple[Any, Any, Any]]:
        return {(r["case_id"], r["role"]): (r["answer"], r["finish_reason"], r["completion_tokens"])
                for r in gen["generations"]}

    def verdicts(gen: dict[str, Any]) -> dict[tuple[str, str], tuple[Any, Any]]:
        return {(r["case_id"], r["order"]): (r["raw"], r["choice"]) for r in gen["verdicts"]}

    assert answers(ray_gen) == answers(local) and verdicts(ray_gen) == verdicts(local)
    assert {r["status"] for r in ray_gen["verdicts"]} == {"ok"}


def test_build_is_guided_and_generates_on_ray_data_as_on_the_local_engine(vllm_report: dict[str, Any]) -> None:
    """`tailor build --until profile` with a vllm: model: `json_schema` is vLLM's guided decoding (every reply
    parses); under `--executor ray` its calls go to a Ray Data replica and give the same records."""
    local, ray_run = vllm_report["build"]["local"], vllm_report["build"]["ray_data"]

    def counts(run: dict[str, Any]) -> dict[str, Any]:  # the stage's counters (its fingerprint has the cache path)
        stage: dict[str, Any] = run["summary"]["stages"][0]
        return {k: v for k, v in stage.items() if k != "fingerprint"}

    stage = counts(local)
    assert stage["name"] == "profile" and stage["invalid_json"] == 0 and stage["truncated"] == 0, stage
    assert local["exit_code"] == 0 and stage["records"] == 1 and local["records"]  # guided: the reply parses
    assert ray_run["exit_code"] == 0 and ray_run["records"] == local["records"] and counts(ray_run) == stage
    engine = ray_run["summary"]["model"]["engine_on"]
    assert engine["kind"] == "ray_data" and engine["rows"] == stage["attempts"], (engine, stage)
    assert engine["failed_rows"] == 0 and "engine_on" not in local["summary"]["model"]


def test_verdicts_equal_the_hf_backend(vllm_report: dict[str, Any], hf_runs: dict[str, list[dict[str, Any]]],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Greedy text verdicts are equal; logprob verdicts are equal except near-ties, which are reported."""
    hf_text = {_key(r): r for r in hf_runs["text"]}
    for row in vllm_report["text"]["first"]["rows"]:
        assert (row["raw"], row["choice"]) == (hf_text[_key(row)]["raw"], hf_text[_key(row)]["choice"]), row
    hf_lp = {_key(r): r for r in hf_runs["logprobs"]}
    near_ties = []
    largest = 0.0
    for row in vllm_report["logprobs"]["first"]["rows"]:
        ref = hf_lp[_key(row)]
        for label, value in ref["scores"].items():
            largest = max(largest, abs(row["scores"][label] - value))
            assert abs(row["scores"][label] - value) <= LOGPROB_TOL, (row["scores"], ref["scores"])
        if row["choice"] != ref["choice"]:
            margin = abs(ref["scores"]["A"] - ref["scores"]["B"])
            assert margin < NEAR_TIE, (row, ref)
            near_ties.append((_key(row), margin))
    with capsys.disabled():
        print(f"\nvLLM vs HF: largest label logprob difference {largest:.2g} (tolerance {LOGPROB_TOL})")
        if near_ties:
            print(f"\nvLLM vs HF: {len(near_ties)} near-tie verdict(s) differ (margin < {NEAR_TIE}): {near_ties}")


def test_generation_and_label_scores_equal_the_hf_backend(vllm_report: dict[str, Any], vllm_paths: Any) -> None:
    import asyncio

    from tailorbench.models.base import CallFailure, GenParams

    sys.path.insert(0, str(CHECKS.parent))
    try:
        import vllm_checks
    finally:
        sys.path.remove(str(CHECKS.parent))
    direct = vllm_report["direct"]
    model = make_chat_model(f"hf:{vllm_paths.llama}", {"cache_policy": "off"})

    async def hf() -> list[Any]:
        out = []
        for prompt in vllm_checks.CHAT_PROMPTS:
            text = await model.chat(prompt, GenParams(temperature=0.0, max_tokens=16))
            with_lp = await model.chat(prompt, GenParams(temperature=0.0, max_tokens=8, logprobs=True,
                                                         top_logprobs=5))
            scored = await model.choice_logprobs(prompt, ("A", "B"), GenParams(max_tokens=1, logprobs=True))
            assert not isinstance(text, CallFailure) and not isinstance(with_lp, CallFailure)
            assert not isinstance(scored, CallFailure)
            out.append((text.text, with_lp.logprobs or [], scored[0]))
        await model.aclose()
        return out

    for k, (text, token_logprobs, choices) in enumerate(asyncio.run(hf())):
        assert direct["text"][k] == text
        vllm_tokens = direct["token_logprobs"][k]
        assert [t[0] for t in vllm_tokens] == [t.token for t in token_logprobs]
        for (_, logprob, _top), ref in zip(vllm_tokens, token_logprobs):
            assert abs(logprob - ref.logprob) <= LOGPROB_TOL
        assert set(direct["choices"][k]) == set(choices) == {"A", "B"}  # exact for both labels, in or out of the top
        for label, value in choices.items():
            assert abs(direct["choices"][k][label] - value) <= LOGPROB_TOL


def test_pooling_scores_equal_the_hf_reward_model(vllm_report: dict[str, Any], vllm_paths: Any) -> None:
    from tailorbench.models.reward_hf import HFRewardModel

    sys.path.insert(0, str(CHECKS.parent))
    try:
        import vllm_checks
    finally:
        sys.path.remove(str(CHECKS.parent))
    scorer = HFRewardModel(str(vllm_paths.seqcls), precision="fp32", max_length=64)
    scores, flags = scorer.score(vllm_checks.TRIPLES)
    pooled = vllm_report["pooling"]
    assert pooled["truncated"] == flags.tolist() and any(pooled["truncated"])
    for got, want in zip(pooled["scores"], scores.tolist()):
        assert abs(got - want) <= SCORE_TOL, (pooled["scores"], scores.tolist())
    assert len(set(pooled["scores"])) == len(pooled["scores"])  # distinct inputs, distinct scores
