"""`call_key` encodes messages with orjson for speed; it must equal the standard-library definition
(`reference_call_key`) on everything a user can send, or cached calls would silently miss (or collide)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tailorbench.models import cache as cache_module
from tailorbench.models.base import GenParams
from tailorbench.models.cache import FLUSH_AFTER_S, FLUSH_ROWS, CallCache, call_key, reference_call_key

# every code point but lone surrogates (which neither encoder writes as UTF-8), control characters included
TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200)
ROLE = st.sampled_from(["system", "user", "assistant", "tool", "ユーザー", 'a"b\\c', "\x00\x1f\x7f\u2028"])
MESSAGE = st.dictionaries(st.one_of(st.sampled_from(["role", "content", "name"]), TEXT),
                          st.one_of(ROLE, TEXT), max_size=4)
PARAMS = st.builds(
    GenParams,
    temperature=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-3, 3)),
    max_tokens=st.one_of(st.none(), st.integers(1, 1 << 40)),
    top_p=st.one_of(st.none(), st.floats(0, 1)),
    seed=st.one_of(st.none(), st.integers(-(1 << 70), 1 << 70)),
    stop=st.one_of(st.none(), st.lists(TEXT, max_size=3).map(tuple)),
    logprobs=st.booleans(),
    reasoning_effort=st.one_of(st.none(), TEXT),
)
SETTINGS = settings(max_examples=1500, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(messages=st.lists(MESSAGE, max_size=5), params=PARAMS, model=TEXT,
       base=st.sampled_from([None, "http://h/v1", "http://u:pw@h:1/v1?api-key=sk-x", "https://例え.jp/v1"]))
def test_key_equals_the_reference(messages: list[dict[str, str]], params: GenParams, model: str,
                                  base: str | None) -> None:
    for kind in ("chat", "choice"):
        fast = call_key("openai", model, base, kind, messages, params.key_dict())
        assert fast == reference_call_key("openai", model, base, kind, messages, params.key_dict())


@SETTINGS
@given(value=st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
                          lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(TEXT, inner, max_size=3)), max_leaves=10))
def test_other_message_shapes_use_the_reference_encoder(value: Any) -> None:
    """Multimodal parts, numbers, nesting: whatever is not a list of string dicts goes the standard way."""
    messages = [{"role": "user", "content": value}]
    assert call_key("hf", "m", None, "chat", messages, {}) == reference_call_key("hf", "m", None, "chat", messages, {})


def test_key_dict_is_memoised_per_instance_and_stays_exact() -> None:
    """0 and 0.0 are equal (and hash alike) but encode differently: the memo must not mix them up."""
    whole, real = GenParams(temperature=0), GenParams(temperature=0.0)
    assert real.key_dict()["temperature"] == 0.0 and type(real.key_dict()["temperature"]) is float
    assert type(whole.key_dict()["temperature"]) is int
    first = real.key_dict()
    first["temperature"] = 9  # a caller that changes its copy does not change the next one
    assert real.key_dict()["temperature"] == 0.0
    assert whole == real and real.key_dict() == GenParams(temperature=0.0).key_dict()


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def test_puts_made_together_share_a_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)

    async def main() -> None:
        for i in range(50):
            cache.put(f"k{i}", "openai", "m", None, "chat", {"text": str(i)})
        assert cache.get("k7") == {"text": "7"} and cache.contains("k49")  # pending rows are visible at once
        assert _rows(path) == 0
        await asyncio.sleep(0)
        cache.put("k50", "openai", "m", None, "chat", {"text": "50"})  # a later turn, within the window
        await asyncio.sleep(FLUSH_AFTER_S * 3)
        assert _rows(path) == 51 and cache.transactions == 1
        for i in range(FLUSH_ROWS):  # a full group is written at once
            cache.put(f"full{i}", "openai", "m", None, "chat", {"text": "x"})
        assert _rows(path) == 51 + FLUSH_ROWS and cache.transactions == 2

    asyncio.run(main())

    async def late() -> None:  # a put whose timer the ending loop takes with it (a window longer than the run)
        monkeypatch.setattr(cache_module, "FLUSH_AFTER_S", 600.0)
        cache.put("late", "openai", "m", None, "chat", {"text": "x"})

    asyncio.run(late())
    assert _rows(path) == 51 + FLUSH_ROWS and cache.contains("late")  # pending, still visible in this process
    monkeypatch.setattr(cache_module, "FLUSH_AFTER_S", FLUSH_AFTER_S)

    async def again() -> None:  # a put in a new loop schedules the write there, pending rows included
        cache.put("next", "openai", "m", None, "chat", {"text": "x"})
        await asyncio.sleep(FLUSH_AFTER_S * 3)

    asyncio.run(again())
    assert _rows(path) == 53 + FLUSH_ROWS and cache.transactions == 3
    cache.put("end", "openai", "m", None, "chat", {"text": "x"})
    cache.close()  # close writes what is pending (so does interpreter exit)
    sync = CallCache(path)
    sync.put("sync", "openai", "m", None, "chat", {"text": "y"})  # no loop: written at once
    assert _rows(path) == 55 + FLUSH_ROWS
    sync.close()


def test_settings_that_change_a_local_model_s_answers_are_in_the_key() -> None:
    """A bfloat16 run never reads a float32 run's answers (hf:, vllm:), nor a quantized engine's; where the
    engines run (in process or as Ray Data replicas) and how fast (chunk size) are not in the key."""
    from tailorbench.models.backends import make_chat_model
    from tailorbench.models.base import GenParams
    from tailorbench.models.vllm_ray_data import RayDataSettings

    messages = [{"role": "user", "content": "hi"}]

    def key(spec: str, **options: object) -> str:
        model = make_chat_model(spec, {**options, "cache_policy": "off"})
        return str(model._key(messages, GenParams()))

    assert key("hf:/models/m") == key("hf:/models/m", batch_size=2) != key("hf:/models/m", dtype="bfloat16")
    base = key("vllm:/models/m", dtype="float32")
    assert base == key("vllm:/models/m", dtype="float32", chunk_size=7, ray_data=RayDataSettings(replicas=2))
    assert base == key("vllm:/models/m", dtype="float32", tensor_parallel_size=2, gpu_memory_utilization=0.5)
    assert len({base, key("vllm:/models/m", dtype="bfloat16"), key("vllm:/models/m", dtype="float32",
                                                                   quantization="fp8")}) == 3
