"""Retrieval on small Chinese and English memory sets with known relevant items: recall@k per retriever."""

from __future__ import annotations

import numpy as np
import pytest

from tailorbench.errors import ConfigError
from tailorbench.memory.retrieval import BM25Index, MemoryIndex, rrf, top_k
from tailorbench.memory.tokenize import tokenize

EN = [
    "I'm a backend engineer and write Go services every day.",
    "Training for a half marathon, I run four mornings a week.",
    "I've been vegetarian for ten years and cook lentil soup a lot.",
    "My daughter is six and loves drawing horses.",
    "We adopted a grey cat named Pixel last spring.",
    "I get seasick, so boat trips are out for me.",
    "Saving money for a down payment on an apartment in Toronto.",
    "I play jazz piano in a small band on Fridays.",
    "Allergic to peanuts since childhood.",
    "Learning Japanese with flashcards before my trip to Kyoto.",
    "I prefer short direct answers without long introductions.",
    "My knee hurts after long hikes downhill.",
]
EN_QUERIES = [
    ("What should I eat before my long run on the weekend?", {1}),
    ("Suggest a dinner recipe for tonight, no meat please.", {2}),
    ("Any tips for flashcards to learn Japanese faster?", {9}),
    ("How do I budget for buying an apartment?", {6}),
    ("Which snacks are safe for someone with a peanut allergy?", {8}),
    ("Gift ideas for a six year old who likes drawing?", {3}),
]
ZH = [
    "我在杭州做小学数学老师。",
    "周末喜欢带女儿去西湖边骑自行车。",
    "最近在控制饮食，不吃辣的菜。",
    "我对花生过敏，吃东西要特别小心。",
    "正在准备考研，每天晚上复习英语。",
    "家里养了一只橘猫，名字叫馒头。",
    "我不喜欢热闹的聚会，更愿意在家看书。",
    "计划明年去日本京都旅行。",
    "膝盖不好，爬山下坡会疼。",
    "每天通勤要坐一个小时地铁。",
]
ZH_QUERIES = [
    ("给我推荐几道不辣的家常菜", {2}),
    ("考研英语怎么复习效率高？", {4}),
    ("橘猫不爱吃猫粮怎么办？", {5}),
    ("去京都旅行有什么推荐的景点？", {7}),
    ("地铁通勤时间怎么利用起来？", {9}),
    ("数学课上可以玩什么小游戏？", {0}),
]


def recall_at_k(index: MemoryIndex, user: str, queries: list[tuple[str, set[int]]], k: int) -> float:
    hits = index.search([(user, q) for q, _ in queries], k)
    found = sum(len({pos for pos, _ in h} & rel) for h, (_, rel) in zip(hits, queries))
    return found / sum(len(rel) for _, rel in queries)


def test_tokenizer_mixes_cjk_bigrams_and_words() -> None:
    assert tokenize("我喜欢用Python写代码, I love the Alps 2024年 猫") == [
        "我", "喜", "欢", "用", "我喜", "喜欢", "欢用", "python", "写", "代", "码", "写代", "代码", "love", "alp",
        "2024", "年", "猫"]
    assert tokenize("peanuts glass bus") == ["peanut", "glass", "bus"]
    assert tokenize("") == [] and tokenize("the of and") == []


def test_bm25_recall() -> None:
    index = MemoryIndex("bm25").build({"en": EN, "zh": ZH})
    assert recall_at_k(index, "zh", ZH_QUERIES, 1) == 1.0
    # "no meat" -> "vegetarian" is a paraphrase: no lexical retriever finds it (dense does, below)
    assert recall_at_k(index, "en", EN_QUERIES, 1) >= 4 / 6
    assert recall_at_k(index, "en", EN_QUERIES, 3) == 5 / 6


def test_whitespace_tokens_fail_on_chinese() -> None:
    """Why the tokenizer exists: bm25s' whitespace split makes each Chinese sentence one token."""
    import bm25s

    plain = bm25s.BM25()
    plain.index([t.split() for t in ZH], show_progress=False)
    assert all(not np.any(plain.get_scores(q.split())) for q, _ in ZH_QUERIES)


def test_users_are_isolated_and_short_lists_are_honest() -> None:
    index = MemoryIndex("bm25").build({"en": EN, "zh": ZH})
    (en_hits, zh_hits, none_hits, unknown) = index.search(
        [("en", "猫"), ("zh", "猫"), ("zh", "quantum chromodynamics"), ("nobody", "cat")], 5)
    assert en_hits == [] and [p for p, _ in zh_hits] == [5]
    assert none_hits == [] and unknown == []
    with pytest.raises(ConfigError):
        index.search([("en", "x")], 0)
    with pytest.raises(ConfigError, match="unknown retriever"):
        MemoryIndex("tfidf")


def test_dense_and_hybrid_recall_with_minilm() -> None:
    from tailorbench.models.encoder_hf import HFEncoder

    encoder = HFEncoder()
    dense = MemoryIndex("dense", encoder=encoder).build({"en": EN, "zh": ZH})
    assert recall_at_k(dense, "en", EN_QUERIES, 3) >= 5 / 6
    hybrid = MemoryIndex("hybrid", encoder=encoder).build({"en": EN, "zh": ZH})
    assert recall_at_k(hybrid, "en", EN_QUERIES, 3) == 1.0
    # MiniLM is English-only; the lexical half keeps Chinese recall up in the fusion
    assert recall_at_k(hybrid, "zh", ZH_QUERIES, 3) == 1.0
    description = hybrid.describe()
    assert description["fusion"]["method"] == "rrf" and description["encoder"]["pooling"] == "mean"


def test_top_k_and_rrf_are_deterministic() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.0, 0.9], dtype=np.float32)
    assert top_k(scores, 3) == [(1, pytest.approx(0.9)), (4, pytest.approx(0.9)), (0, 0.5)]
    assert [p for p, _ in top_k(scores, 10, positive_only=True)] == [1, 4, 0, 2]
    assert [p for p, _ in rrf([[(1, 1.0), (2, 0.5)], [(2, 1.0), (3, 0.2)]], 3)] == [2, 1, 3]
    assert BM25Index([]).search("anything", 3) == []
