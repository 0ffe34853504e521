"""The vLLM half of tests/models/test_vllm_backend.py, run with the vLLM venv's python (vLLM pins its own
transformers, so it cannot run in the project venv). One process, so the in-process chat engine starts once
(about 34 s on a CPU) and the pooling engine once; the `--executor ray` checks then run four Ray Data LLM
datasets on a local Ray (eval, gen-eval's generation and judge, build), one replica start each. Every check that
needs an engine is here, and its findings go to one JSON file that the test compares with the HF backends and
the local engine in the project venv.

    VLLM_CPU_KVCACHE_SPACE=1 python tests/models/vllm_checks.py --llama DIR --seqcls DIR --work DIR

vLLM spawns its engine process, hence the `__main__` guard.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

#: engine options of every check (a CPU: bounded memory, no compilation)
ENGINE = {"dtype": "float32", "max_model_len": 2048, "gpu_memory_utilization": 0.1, "enforce_eager": True}
#: chat prompts for greedy generation (text and token logprobs)
CHAT_PROMPTS = [
    [{"role": "user", "content": "hello there"}],
    [{"role": "system", "content": "the user likes tea"}, {"role": "user", "content": "recommend a book please"}],
    [{"role": "user", "content": "Persona: the user likes hiking.\nQuestion: which answer is better?\n"
                                 "Answer A: a long one. Answer B: a short one.\nAnswer A or B."}],
]
#: (context, question, answer) triples for the pooling check; the long one is cut at max_length 64
TRIPLES: list[tuple[str | None, str, str]] = [
    ("the user likes hiking and coffee", "which trail should I take?", "the river trail near the city"),
    (None, "what should I cook tonight?", "a simple soup with garden vegetables"),
    ("the user is a student who reads books", "how do I plan my week?", "write a short plan every morning"),
    ("the user likes music " * 30, "any advice?", "listen to new music while you work " * 10),
]


def _eval(args: list[str]) -> dict[str, Any]:
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    out = CliRunner().invoke(app, ["eval", "--data", "demo", "--no-progress", "--json", *args])
    if out.exit_code != 0:
        raise SystemExit(f"tailor eval {' '.join(args)} exited {out.exit_code}:\n{out.output}")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


#: the small construction example (examples/construction/config-small.yaml) on the tiny model, with vLLM's guided
#: decoding (`json_schema`) and the engine options of every check
BUILD = """name: small
structured_output: json_schema
memory: {memory}
seed: 0
retries: 1
generation: {{temperature: 0.0, max_tokens: 400}}
users: [u_sam]
model_options: {options}
profile: {{max_memory_items: 3, max_attributes: 2, key_chars: 8, value_chars: 12, max_evidence: 1, item_chars: 60}}
"""


def _build(llama: str, work: Path, name: str, extra: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """`tailor build run --until profile` with the vllm: model: its exit code, summary and profile records."""
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    memory = Path(__file__).resolve().parents[2] / "examples" / "construction" / "memory.jsonl"
    config = work / f"{name}.yaml"
    config.write_text(BUILD.format(memory=memory, options=json.dumps({**ENGINE, **options})))
    out = work / name
    done = CliRunner().invoke(app, ["build", "run", str(config), "--model", f"vllm:{llama}", "--out", str(out),
                                    "--until", "profile", "--json", *extra])
    if done.exit_code not in (0, 3) or not done.stdout.strip():
        raise SystemExit(f"build {name} exited {done.exit_code}:\n{done.output}")
    records = out / "profile.jsonl"
    return {"exit_code": done.exit_code, "summary": json.loads(done.stdout),
            "records": [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
            if records.exists() else []}


def _run_files(run: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines() if line.strip()]
    return {"rows": rows, "manifest": json.loads((run / "manifest.json").read_text())}


def _options(extra: dict[str, Any]) -> list[str]:
    return [arg for k, v in {**ENGINE, **extra}.items() for arg in ("--judge-option", f"{k}={v}")]


async def _chat_checks(llama: str) -> dict[str, Any]:
    """Greedy generation (text, then with token logprobs) and label scoring straight through the backend."""
    from tailorbench.models.backends import make_chat_model
    from tailorbench.models.base import CallFailure, GenParams

    model = make_chat_model(f"vllm:{llama}", {**ENGINE, "cache_policy": "off"})
    out: dict[str, Any] = {"text": [], "token_logprobs": [], "choices": []}
    greedy = GenParams(temperature=0.0, max_tokens=16)
    with_lp = GenParams(temperature=0.0, max_tokens=8, logprobs=True, top_logprobs=5)
    for prompt in CHAT_PROMPTS:
        for params, key in ((greedy, "text"), (with_lp, "token_logprobs")):
            result = await model.chat(prompt, params)
            assert not isinstance(result, CallFailure), result
            if key == "text":
                out[key].append(result.text)
            else:
                out[key].append([[t.token, t.logprob, t.top] for t in result.logprobs or []])
        scored = await model.choice_logprobs(prompt, ("A", "B"), GenParams(max_tokens=1, logprobs=True))
        assert not isinstance(scored, CallFailure), scored
        out["choices"].append(scored[0])
    out["describe"] = model.describe()
    await model.aclose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama", required=True)
    parser.add_argument("--seqcls", required=True)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    work: Path = args.work
    report: dict[str, Any] = {}

    from tailorbench.aio import run_sync
    from tailorbench.models.backends import make_chat_model

    # one reference held for the whole script: every judge below shares this engine (models/vllm_engine.py)
    hold = make_chat_model(f"vllm:{args.llama}", dict(ENGINE))
    began = time.perf_counter()
    run_sync(hold.preflight())
    report["engine_start_s"] = round(time.perf_counter() - began, 1)

    judge = f"llm:vllm:{args.llama}"
    for name, extra in (("logprobs", {"verdict": "logprobs"}), ("text", {})):
        first = work / f"{name}-1"
        began = time.perf_counter()
        _eval(["--judge", judge, "--limit", "4", "--out", str(first), *_options(extra)])
        seconds = round(time.perf_counter() - began, 2)
        again = work / f"{name}-2"
        _eval(["--judge", judge, "--limit", "4", "--out", str(again), *_options(extra)])
        report[name] = {"first": _run_files(first), "again": _run_files(again), "first_s": seconds}

    # chunks and resume: chunk_size=2, no cache; the last 3 lines lost as if the process had died; resume
    chunked = work / "chunked"
    _eval(["--judge", judge, "--limit", "4", "--out", str(chunked),
           *_options({"verdict": "logprobs", "chunk_size": 2, "cache_policy": "off"})])
    lines = (chunked / "predictions.jsonl").read_text().splitlines(keepends=True)
    full = _run_files(chunked)
    (chunked / "predictions.jsonl").write_text("".join(lines[:-3]))
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    resumed = CliRunner().invoke(app, ["eval", "--resume", str(chunked), "--no-progress"])
    if resumed.exit_code != 0:
        raise SystemExit(f"resume exited {resumed.exit_code}:\n{resumed.output}")
    report["chunked"] = {"full": full, "resumed": _run_files(chunked), "dropped": 3}

    # gen-eval: generation and its judge through the same backend (and the same engine)
    gen = work / "gen-eval"
    model_options = [arg for k, v in ENGINE.items() for arg in ("--model-option", f"{k}={v}")]
    done = CliRunner().invoke(app, ["gen-eval", "--data", "demo", "--model", f"vllm:{args.llama}", "--judge", judge,
                                    "--per-tier", "1", "--validate-cases", "0", "--max-tokens", "16",
                                    "--no-progress", "--out", str(gen), *model_options, *_options({})])
    if done.exit_code != 0:
        raise SystemExit(f"gen-eval exited {done.exit_code}:\n{done.output}")
    report["gen_eval"] = {name: [json.loads(line) for line in (gen / f"{name}.jsonl").read_text().splitlines()
                                 if line.strip()] for name in ("generations", "verdicts")}
    report["gen_eval"]["manifest"] = json.loads((gen / "manifest.json").read_text())

    report["direct"] = run_sync(_chat_checks(args.llama))
    report["build"] = {"local": _build(args.llama, work, "build-local", [], {})}
    run_sync(hold.aclose())  # the chat engine shuts down before the Ray Data and pooling ones start

    # --executor ray: the same runs with each engine a Ray Data LLM replica on a local Ray, with their own call
    # cache (so every call reaches an engine); then a re-run that the cache serves
    ray_cache = {"cache_path": str(work / "ray-calls.sqlite")}
    on_ray = ["--executor", "ray", "--executor-option", "workers=1"]
    first, again = work / "ray-logprobs-1", work / "ray-logprobs-2"
    began = time.perf_counter()
    _eval(["--judge", judge, "--limit", "4", "--out", str(first), *on_ray,
           *_options({"verdict": "logprobs", **ray_cache})])
    seconds = round(time.perf_counter() - began, 1)
    _eval(["--judge", judge, "--limit", "4", "--out", str(again), *on_ray,
           *_options({"verdict": "logprobs", **ray_cache})])
    report["ray_data"] = {"logprobs": {"first": _run_files(first), "again": _run_files(again), "first_s": seconds}}
    # gen-eval: the generation (text) and its judge, each model's engine a replica
    gen_ray = work / "ray-gen-eval"
    ray_model_options = [arg for k, v in {**ENGINE, **ray_cache}.items() for arg in ("--model-option", f"{k}={v}")]
    done = CliRunner().invoke(app, ["gen-eval", "--data", "demo", "--model", f"vllm:{args.llama}", "--judge", judge,
                                    "--per-tier", "1", "--validate-cases", "0", "--max-tokens", "16",
                                    "--no-progress", "--out", str(gen_ray), *on_ray, *ray_model_options,
                                    *_options(ray_cache)])
    if done.exit_code != 0:
        raise SystemExit(f"gen-eval --executor ray exited {done.exit_code}:\n{done.output}")
    report["ray_data"]["gen_eval"] = {name: [json.loads(line) for line in (gen_ray / f"{name}.jsonl").read_text()
                                             .splitlines() if line.strip()] for name in ("generations", "verdicts")}
    report["ray_data"]["gen_eval"]["manifest"] = json.loads((gen_ray / "manifest.json").read_text())
    report["build"]["ray_data"] = _build(args.llama, work, "build-ray", on_ray, ray_cache)

    from tailorbench.judges.base import JudgeOptions, make_judge

    rm = make_judge(f"rm:vllm:{args.seqcls}", JudgeOptions(extra={**ENGINE, "max_model_len": 512,
                                                                  "max_length": 64}))
    scorer = rm.scorer  # type: ignore[attr-defined]
    began = time.perf_counter()
    scores, flags = scorer.score(TRIPLES)
    report["pooling"] = {"scores": scores.tolist(), "truncated": flags.tolist(), "describe": scorer.describe(),
                         "seconds": round(time.perf_counter() - began, 1)}
    run_sync(rm.aclose())
    (work / "report.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
