"""The local HF backend on the same tiny model the llama.cpp server serves: same answers, same logits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tailorbench.models.backends import make_chat_model
from tailorbench.models.base import ChatResult, GenParams
from tests.conftest import LlamaServer

PROMPTS = [
    [{"role": "user", "content": "Persona: likes tea\nQuestion: a drink?\nAnswer A: tea\nAnswer B: beer\n"
                                 "Answer A or B."}],
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello please recommend a book"}],
]


def test_hf_logits_agree_with_llama_cpp(
    llama_server: LlamaServer, tiny_hf_model_dir: Path, call_cache: Path, tiny_model_info: dict[str, object]
) -> None:
    params = GenParams(max_tokens=1, logprobs=True, top_logprobs=10)

    async def run() -> tuple[list[Any], list[Any], Any]:
        hf = make_chat_model(f"hf:{tiny_hf_model_dir}", {"cache_policy": "off"})
        server = make_chat_model(f"openai:{llama_server.model}@{llama_server.base_url}", {"cache_policy": "off"})
        await hf.preflight()
        wide = GenParams(max_tokens=1, logprobs=True, top_logprobs=30)  # room for ties at the bottom of the top 10
        local = [await hf.chat(p, wide) for p in PROMPTS]
        remote = [await server.chat(p, params) for p in PROMPTS]
        choice = await hf.choice_logprobs(PROMPTS[0], ["A", "B"], GenParams())
        await server.aclose()
        await hf.aclose()
        return local, remote, choice

    local, remote, choice = asyncio.run(run())
    for a, b in zip(local, remote):
        assert isinstance(a, ChatResult) and isinstance(b, ChatResult) and a.logprobs and b.logprobs
        assert a.text == b.text
        top_hf, top_cpp = a.logprobs[0].top, b.logprobs[0].top
        assert list(top_hf)[:3] == list(top_cpp)[:3]
        assert a.logprobs[0].token == b.logprobs[0].token
        compared = 0
        for token, logprob in top_cpp.items():
            if not token.strip():
                continue  # llama.cpp spells partial-byte and special tokens as "", several per position
            compared += 1
            assert top_hf[token] == pytest.approx(logprob, abs=2e-3), token
        assert compared >= 5
    assert not isinstance(choice, Exception) and not hasattr(choice, "error")
    scores, _ = choice  # type: ignore[misc]
    assert scores["A"] > scores["B"] and tiny_model_info["verdict"] == "A"


def test_hf_batched_generation_matches_single(tiny_hf_model_dir: Path, call_cache: Path) -> None:
    params = GenParams(max_tokens=12)

    async def run() -> tuple[list[Any], list[Any]]:
        hf = make_chat_model(f"hf:{tiny_hf_model_dir}", {"cache_policy": "off", "batch_size": 4})
        together = await asyncio.gather(*(hf.chat(p, params) for p in PROMPTS))
        alone = [await hf.chat(p, params) for p in PROMPTS]
        await hf.aclose()
        return list(together), alone

    together, alone = asyncio.run(run())
    assert [r.text for r in together] == [r.text for r in alone]
    assert together[0].text == "A"
