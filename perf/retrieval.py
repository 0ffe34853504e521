"""Lexical retrieval speed: our bm25s retriever (CJK-aware tokenizer) vs `rank-bm25`, on 10,000 synthetic
memory items in Chinese and in English. Both use the same tokens, so the comparison is of the engines;
tokenizing is timed separately. Prints one JSON line per language and a markdown table.

    .venv/bin/python perf/retrieval.py [--items 10000] [--queries 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from tailorbench.memory.retrieval import BM25Index
from tailorbench.memory.tokenize import tokenize

_ZH = ("花生 过敏 猫粮 橘猫 地铁 通勤 考研 英语 复习 杭州 西湖 骑车 女儿 数学 老师 饮食 清淡 辣椒 京都 旅行 膝盖 "
            "爬山 聚会 看书 咖啡 茶叶 跑步 马拉松 预算 房子 工作 加班 周末 电影 音乐 钢琴 做饭 面条 医院 睡眠")
ZH_WORDS = _ZH.split()
_EN = ("peanut allergy cat food subway commute exam english review lake bike daughter math teacher diet spicy "
       "kyoto travel knee hiking party reading coffee tea running marathon budget apartment work overtime "
            "weekend movie music piano cooking noodles hospital sleep garden camera vegetarian")
EN_WORDS = _EN.split()


def corpus(words: list[str], n: int, rng: random.Random, zh: bool) -> list[str]:
    sep = "" if zh else " "
    return [sep.join(rng.choice(words) for _ in range(rng.randint(6, 14))) for _ in range(n)]


def bench(lang: str, n_items: int, n_queries: int, seed: int) -> dict[str, float | int | str]:
    import numpy as np
    from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

    rng = random.Random(seed)
    words = ZH_WORDS if lang == "zh" else EN_WORDS
    docs = corpus(words, n_items, rng, lang == "zh")
    queries = corpus(words, n_queries, rng, lang == "zh")

    started = time.perf_counter()
    tokens = [tokenize(d) for d in docs]
    tokenize_s = time.perf_counter() - started

    started = time.perf_counter()
    ours = BM25Index(docs)
    ours_index_s = time.perf_counter() - started - tokenize_s  # BM25Index tokenizes inside; report the engine
    started = time.perf_counter()
    for q in queries:
        ours.search(q, 10)
    ours_qps = n_queries / (time.perf_counter() - started)

    started = time.perf_counter()
    theirs = BM25Okapi(tokens)
    theirs_index_s = time.perf_counter() - started
    sample = queries[: max(1, n_queries // 5)]  # rank-bm25 is slow: a fifth of the queries is enough to time it
    started = time.perf_counter()
    for q in sample:
        scores = theirs.get_scores(tokenize(q))
        np.argpartition(-scores, 10)[:10]
    theirs_qps = len(sample) / (time.perf_counter() - started)
    return {"lang": lang, "items": n_items, "queries": n_queries, "tokenize_s": round(tokenize_s, 3),
            "ours_index_s": round(max(ours_index_s, 0.0), 3), "ours_qps": round(ours_qps),
            "rank_bm25_index_s": round(theirs_index_s, 3), "rank_bm25_qps": round(theirs_qps),
            "speedup_qps": round(ours_qps / theirs_qps, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    BM25Index(["warm up the imports"])  # bm25s imports on first use: not part of an index time
    rows = [bench(lang, args.items, args.queries, args.seed) for lang in ("zh", "en")]
    for row in rows:
        print(json.dumps(row))
    print("\n| language | items | tokenize s | bm25s index s | bm25s queries/s | rank-bm25 index s | "
          "rank-bm25 queries/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['lang']} | {r['items']:,} | {r['tokenize_s']} | {r['ours_index_s']} | {r['ours_qps']:,} | "
              f"{r['rank_bm25_index_s']} | {r['rank_bm25_qps']:,} | {r['speedup_qps']}x |")


if __name__ == "__main__":
    main()
