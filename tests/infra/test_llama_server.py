"""The real test server works the way the model-layer tests rely on.

If these fail, every test on top of the llama.cpp server would fail for a reason that has nothing to do
with tailorbench: check the infrastructure first.
"""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.conftest import LlamaServer
from tests.helpers.counting_proxy import CountingProxy, Reply

CHAT = [{"role": "user", "content": "Hello, who are you?"}]
JUDGE = [
    {"role": "system", "content": "You are a careful judge of personalized answers."},
    {
        "role": "user",
        "content": (
            "Persona: the user likes hiking and coffee, prefers short answers.\n"
            "Question: what should I do this weekend?\n"
            "Answer A: Go hiking in the hills and bring a thermos of coffee.\n"
            "Answer B: Stay home and read a book.\n"
            "Which answer is more personalized for this user? Answer A or B."
        ),
    },
]
JUDGE_ZH = [
    {
        "role": "user",
        "content": (
            "用户画像：喜欢咖啡。\n问题：推荐一种饮品？\n回答A：咖啡。\n回答B：茶。\n哪个回答更个性化？请只回答A或B。"
        ),
    }
]
#: llama.cpp's f32 kernels sum in an order that depends on the CPU features its wheel was built for: the same
#: model gave differences up to 1.9e-3 on one build and 2.7e-3 on another (2026-12-01), against HF's float64
#: log-softmax of float32 logits
LOGPROB_TOL = 5e-3


@pytest.fixture(scope="module")
def client(llama_server: LlamaServer) -> OpenAI:
    return OpenAI(base_url=llama_server.base_url, api_key="not-needed", max_retries=0, timeout=60)


def _chat(client: OpenAI, model: str, messages: list[dict[str, str]], **kw: Any) -> Any:
    params: dict[str, Any] = {"temperature": 0, "max_tokens": 16, **kw}
    return client.chat.completions.create(model=model, messages=messages, **params)  # type: ignore[arg-type]


def test_models_endpoint_reports_the_alias(llama_server: LlamaServer) -> None:
    assert llama_server.model == "tiny-llama"
    assert llama_server.base_url.endswith("/v1")


def test_plain_chat_is_deterministic(
    client: OpenAI, llama_server: LlamaServer, tiny_model_info: dict[str, object]
) -> None:
    first = _chat(client, llama_server.model, CHAT)
    second = _chat(client, llama_server.model, CHAT)
    assert first.choices[0].message.content == tiny_model_info["chat_reply"]
    assert second.choices[0].message.content == first.choices[0].message.content
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0


@pytest.mark.parametrize("messages", [JUDGE, JUDGE_ZH], ids=["en", "zh"])
def test_judge_prompt_gets_a_parseable_verdict(
    client: OpenAI, llama_server: LlamaServer, messages: list[dict[str, str]]
) -> None:
    resp = _chat(client, llama_server.model, messages)
    assert resp.choices[0].message.content.strip() in {"A", "B"}
    assert resp.choices[0].finish_reason == "stop"


def test_streaming_chat_through_the_proxy(
    client: OpenAI, llama_server: LlamaServer, tiny_model_info: dict[str, object]
) -> None:
    stream = _chat(client, llama_server.model, CHAT, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == tiny_model_info["chat_reply"]


def test_logprobs_and_top_logprobs(client: OpenAI, llama_server: LlamaServer) -> None:
    resp = _chat(client, llama_server.model, JUDGE, logprobs=True, top_logprobs=5)
    content = resp.choices[0].logprobs.content
    assert content, "no logprobs returned"
    first = content[0]
    assert first.token == resp.choices[0].message.content.strip()[:1]
    tops = first.top_logprobs
    assert len(tops) == 5
    values = [t.logprob for t in tops]
    assert values == sorted(values, reverse=True)
    assert all(v <= 0.0 for v in values)
    assert tops[0].token == first.token
    assert math.isclose(tops[0].logprob, first.logprob, abs_tol=1e-6)
    assert sum(math.exp(v) for v in values) <= 1.0 + 1e-4


def test_proxy_counts_requests_at_the_server(client: OpenAI, llama_server: LlamaServer) -> None:
    llama_server.reset()
    assert llama_server.count() == 0
    _chat(client, llama_server.model, CHAT)
    _chat(client, llama_server.model, JUDGE)
    client.models.list()
    # Requests that bypass the proxy are not counted.
    direct = OpenAI(base_url=llama_server.direct_base_url, api_key="x", max_retries=0)
    _chat(direct, llama_server.model, CHAT)
    assert llama_server.count("/v1/chat/completions") == 2
    assert llama_server.count("/v1/models") == 1
    assert llama_server.count(None) == 3
    llama_server.reset()
    assert llama_server.count() == 0


def test_proxy_intercept_answers_instead_of_the_server(llama_server: LlamaServer) -> None:
    """The hook fault-injection tests build on: a 429 with Retry-After, counted but not forwarded."""
    upstream = llama_server.direct_base_url.removesuffix("/v1")
    hits = {"n": 0}

    def once_429(method: str, path: str, body: bytes) -> Reply | None:
        hits["n"] += 1
        if hits["n"] == 1:
            return Reply(429, b'{"error": "slow down"}', {"Retry-After": "0", "Content-Type": "application/json"})
        return None

    with CountingProxy(upstream, intercept=once_429) as proxy:
        c = OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=2)
        resp = _chat(c, llama_server.model, CHAT)
        assert resp.choices[0].message.content
        assert proxy.count("/v1/chat/completions") == 2
        assert proxy.count("/v1/chat/completions", forwarded_only=True) == 1


def _post_json(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return dict(json.loads(resp.read()))


def test_llama_cpp_tokenizes_like_hf(llama_server: LlamaServer, tiny_hf_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_hf_model_dir)
    for messages in (CHAT, JUDGE, [{"role": "user", "content": "我想在apple工作1314151天～ I've been 'told"}]):
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        hf_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        server = llama_server.direct_base_url.removesuffix("/v1")
        ll_ids = _post_json(f"{server}/extras/tokenize", {"input": prompt})["tokens"]
        assert ll_ids == hf_ids


def test_hf_logits_agree_with_llama_cpp(client: OpenAI, llama_server: LlamaServer, tiny_hf_model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_hf_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_hf_model_dir, dtype=torch.float32).eval()
    for messages in (CHAT, JUDGE, JUDGE_ZH):
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            logits = model(input_ids=ids["input_ids"]).logits[0, -1]
        hf_lp = torch.log_softmax(logits.double(), dim=-1)
        hf_top = torch.topk(hf_lp, 5)

        resp = _chat(client, llama_server.model, messages, logprobs=True, top_logprobs=5, max_tokens=1)
        first = resp.choices[0].logprobs.content[0]
        assert first.token == tok.decode([int(hf_top.indices[0])])
        ll_values = [t.logprob for t in first.top_logprobs]
        for hf_v, ll_v in zip(hf_top.values.tolist(), ll_values):
            assert abs(hf_v - ll_v) < LOGPROB_TOL, (hf_top, first.top_logprobs)

        # Greedy continuations agree too.
        gen = model.generate(
            ids["input_ids"],
            max_new_tokens=16,
            do_sample=False,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        hf_text = tok.decode(gen[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        assert _chat(client, llama_server.model, messages).choices[0].message.content == hf_text
