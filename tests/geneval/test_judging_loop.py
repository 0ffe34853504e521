"""gen-eval's judging goes through the one judge loop (`evaluate/judging.judge_pairs`), as `tailor eval` does: a
batch's verdicts land on disk the moment it finishes (several batches in flight), a streaming judge's verdicts
one by one, a judge that raises leaves every finished verdict on disk and a resume judges only the rest, and the
first Ctrl-C drains the calls in flight. No model is called: the generations are written beforehand, so the run
goes straight to its judge."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tailorbench.datasets import load_benchmark
from tailorbench.errors import CredentialsError
from tailorbench.evaluate.runner import RunInterrupted
from tailorbench.geneval import GenEvalConfig
from tailorbench.geneval.generate import GENERATIONS, MODEL, PhraseCache, chosen_rows
from tailorbench.geneval.run import VERDICTS, load_config, resume_gen_eval, run_gen_eval, select_cases
from tailorbench.judges.base import JudgeBase, JudgeOptions, register_judge
from tailorbench.schema import JudgeInput, Verdict

#: the model under test is never called (its answers are on disk); a spec that builds without connecting
UNUSED_MODEL = "openai:unused@http://127.0.0.1:9/v1"


class LoopJudge(JudgeBase):
    """Batches of 4. `fail_after`: the batch that would start past this many verdicts raises (a server refusing
    the key); `sigint_at`: that batch sends this process SIGINT; `wait_for_second`: batch 1 returns only once
    the verdicts file holds batch 2's lines (a loop that writes a batch only after the one before it would
    never get there)."""

    batch_size = 4
    #: inputs per batch, in the order the batches were handed over (every instance of a test)
    batches: ClassVar[list[int]] = []
    out: ClassVar[Path | None] = None

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        number = len(LoopJudge.batches) + 1
        LoopJudge.batches.append(len(inputs))
        if self.mode == "raise" and number == 3:
            raise CredentialsError("loop: the server refused the credentials (HTTP 401)")
        if self.mode == "sigint" and number == 2:
            os.kill(os.getpid(), signal.SIGINT)
        if self.mode == "wait" and number == 1:
            assert LoopJudge.out is not None
            for _ in range(500):
                if len(_lines(LoopJudge.out / VERDICTS)) >= len(inputs):
                    break
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("batch 2 was not written while batch 1 was still in flight")
        await asyncio.sleep(0)
        return [Verdict(choice="A") for _ in inputs]


class StreamJudge(LoopJudge):
    """A streaming judge: before handing over verdict k it checks that the k before it are on disk."""

    async def judge_stream(self, inputs: Sequence[JudgeInput], stop: asyncio.Event
                           ) -> AsyncIterator[tuple[int, Verdict]]:
        assert LoopJudge.out is not None
        for position in range(len(inputs)):
            assert len(_lines(LoopJudge.out / VERDICTS)) == position
            LoopJudge.batches.append(1)
            await asyncio.sleep(0)
            yield position, Verdict(choice="B")


@register_judge("loop")
def _loop(arg: str | None, options: JudgeOptions) -> LoopJudge:
    return (StreamJudge if arg == "stream" else LoopJudge)(arg or "ok")


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prepared_run(tmp_path: Path, judge: str, per_tier: int = 1) -> tuple[GenEvalConfig, Path, int]:
    """A run directory whose generations (model and reference) are all written: `per_tier` cases per split x
    tier (6 with 1), two verdicts to ask for each."""
    config = GenEvalConfig(data="demo", model=UNUSED_MODEL, judge=judge, per_tier=per_tier, validate_cases=0,
                           n_boot=20)
    cases = select_cases(config, load_benchmark("demo"))
    rows = chosen_rows(cases, PhraseCache())
    rows += [{**r, "role": MODEL, "source": UNUSED_MODEL} for r in rows]
    out = tmp_path / "run"
    out.mkdir()
    (out / GENERATIONS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    LoopJudge.batches = []
    LoopJudge.out = out
    return config, out, 2 * len(cases)


def test_a_batch_lands_on_disk_while_an_earlier_one_is_in_flight(tmp_path: Path) -> None:
    config, out, total = _prepared_run(tmp_path, "loop:wait")
    run_gen_eval(config, out, resume=True, progress=False)
    verdicts = _lines(out / VERDICTS)
    assert len(verdicts) == total and len({(v["case_id"], v["order"]) for v in verdicts}) == total
    first_two = [c.id for c in select_cases(config, load_benchmark("demo"))[:2]]
    # batch 1 (both orders of the first two cases) was written last, after the batches started with it
    assert {v["case_id"] for v in verdicts[-4:]} == set(first_two)
    assert {v["case_id"] for v in verdicts[:4]}.isdisjoint(first_two)
    assert json.loads((out / "results.json").read_text())["status"] == "finished"


def test_a_streaming_judge_is_written_verdict_by_verdict(tmp_path: Path) -> None:
    config, out, total = _prepared_run(tmp_path, "loop:stream")
    run_gen_eval(config, out, resume=True, progress=False)
    verdicts = _lines(out / VERDICTS)
    assert len(verdicts) == total and LoopJudge.batches == [1] * total
    # choice B: the generated answer won in order BA, lost in order AB
    assert all(v["winner"] == ("generated" if v["order"] == "BA" else "reference") for v in verdicts)


def test_a_judge_that_raises_keeps_the_finished_verdicts_and_resume_judges_only_the_rest(tmp_path: Path) -> None:
    config, out, total = _prepared_run(tmp_path, "loop:raise")
    with pytest.raises(CredentialsError):
        run_gen_eval(config, out, resume=True, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "stopped" and "HTTP 401" in manifest["error"]
    assert manifest["kind"] == "gen-eval" and manifest["orders"] == "both"
    kept = _lines(out / VERDICTS)
    # batches 1, 2 (in flight with 3) finished and were written; batch 3 raised
    assert len(kept) == 8 and LoopJudge.batches == [4, 4, 4]
    manifest["config"]["judge"] = "loop"  # the same run, with a judge that no longer raises
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    LoopJudge.batches = []
    resume_gen_eval(out, progress=False)
    assert sum(LoopJudge.batches) == total - len(kept)  # only the missing verdicts were asked for
    verdicts = _lines(out / VERDICTS)
    assert verdicts[: len(kept)] == kept
    assert len(verdicts) == total and len({(v["case_id"], v["order"]) for v in verdicts}) == total
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"


def test_ctrl_c_drains_the_batches_in_flight_then_resume_finishes(tmp_path: Path) -> None:
    config, out, total = _prepared_run(tmp_path, "loop:sigint", per_tier=3)  # 36 verdicts, 9 batches
    with pytest.raises(RunInterrupted) as stopped:
        run_gen_eval(config, out, resume=True, progress=False)
    assert str(stopped.value) == f"tailor gen-eval --resume {out}"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    kept = _lines(out / VERDICTS)
    # the 3 batches in flight when Ctrl-C came were finished and written; none started after it
    assert len(kept) == sum(LoopJudge.batches) < total
    manifest["config"]["judge"] = "loop"
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    LoopJudge.batches = []
    resume_gen_eval(out, progress=False)
    assert sum(LoopJudge.batches) == total - len(kept)
    assert len(_lines(out / VERDICTS)) == total


def test_a_manifest_written_before_the_manifest_model_still_resumes(tmp_path: Path) -> None:
    """The plain-dict manifest of earlier versions (no orders, tier_overlap, user_attributes) resumes."""
    config, out, total = _prepared_run(tmp_path, "loop")
    old = {"kind": "gen-eval", "tailorbench_version": "0.1.0", "created_at": "2026-01-01T00:00:00+00:00",
           "model": UNUSED_MODEL, "reference": "chosen", "judge": "loop", "setting": "persona",
           "judge_setting": "persona", "data": "demo", "dataset_fingerprint": "x", "seed": 0,
           "config": {**config.__dict__}, "versions": {}, "data_stats": {}, "n_cases": total // 2,
           "cases_per_split_tier": {}, "status": "running"}
    (out / "manifest.json").write_text(json.dumps(old), encoding="utf-8")
    assert load_config(out) == config
    resume_gen_eval(out, progress=False)
    assert len(_lines(out / VERDICTS)) == total
    results = json.loads((out / "results.json").read_text())
    assert results["kind"] == "gen-eval" and results["status"] == "finished"
