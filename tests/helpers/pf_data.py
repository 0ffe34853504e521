"""Small PersonaFeedback-shaped fixtures that reproduce every quirk of the real release: hub and mirror
layouts, `spedific`, `mid`/`medium`, `reject` vs `rejected`, numeric and name user ids, misspelt persona
keys, extra sections and Chinese text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PERSONA_ZH: dict[str, Any] = {
    "Name": "小雨",
    "Demographics": {"Age": 29, "Gender": "女", "Nationality": "中国", "Language": ["中文", "英语"],
                     "Career_Information": "园艺设计师"},
    "Personality": {"Extraversion_or_Intraversion": "I", "Sensing_or_Intuition": "N",
                    "Thinking_or_Feeling": "F", "Judging_or_Pereceiving": "P",
                    "Values_and_Interests": ["喜欢枯山水庭院", "关心环保"]},
    "Preference": {"Local_Life": {"Food_Drinks": "偏爱抹茶和素食"}, "Content_Interests": "园艺纪录片"},
    "bias": {"Beliefs": "认为城市需要更多绿地"},
}
PERSONA_EN: dict[str, Any] = {
    "Name": "Tom",
    "Demographics": {"Age": 61, "Gender": "male", "Nationality": "UK", "Language": ["English"],
                     "Career_Information": "retired teacher"},
    "Personality": {"Extraversion_or_Introversion": "E", "Sensing_or_Intuition": "S",
                    "Thinking_or_Feeling": "T", "Judging_or_Perceiving": "J",
                    "Values_and_Interests": ["birdwatching", "history"]},
    "Preference": {"Travel": {"Leisure_Travel": "slow train journeys"}},
}


def rows(prefix: str, reject_key: str = "reject") -> list[dict[str, Any]]:
    """Three rows: Chinese, English, and one with chosen shorter than rejected."""
    return [
        {"question": f"{prefix}我该如何练习英语听力？",
         "chosen": "推荐你听园艺相关的英文播客，比如关于日本庭园的节目，结合你的兴趣。",
         reject_key: "多听英语新闻。"},
        {"question": f"{prefix} Where should I travel in spring?", "chosen": "A slow train through the Highlands.",
         reject_key: "Anywhere warm is good."},
        {"question": f"{prefix} What should I read next?", "chosen": "A history of birds.",
         reject_key: "Try a bestselling thriller from the airport shelf."},
    ]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


def make_hub(root: Path, numeric_ids: bool = True) -> Path:
    """Hub layout: data/{general,spedific}/{easy,medium,mid,hard}.jsonl + persona/all_personas.jsonl."""
    write_jsonl(root / "persona" / "all_personas.jsonl",
                [{"user_id": "xiaoyu_01", **PERSONA_ZH}, {"user_id": "tom_02", **PERSONA_EN}])
    users = ["1", "2", "1"] if numeric_ids else ["xiaoyu_01", "tom_02", "xiaoyu_01"]
    for split in ("general", "spedific"):
        for tier in ("easy", "mid", "hard"):
            key = "rejected" if tier == "hard" else "reject"
            items = rows(f"[{split}/{tier}] ", key)
            for item, user in zip(items, users):
                item["user_id"] = int(user) if user.isdigit() else user
            write_jsonl(root / "data" / split / f"{tier}.jsonl", items)
    return root


def make_mirror(root: Path) -> Path:
    """Release mirror: {general,specific}_{easy,mid,hard}.jsonl + persona_all/<user_id>.json."""
    (root / "persona_all").mkdir(parents=True, exist_ok=True)
    (root / "persona_all" / "小雨_2mwC.json").write_text(json.dumps(PERSONA_ZH, ensure_ascii=False), "utf-8")
    (root / "persona_all" / "Tom_x1.json").write_text(json.dumps(PERSONA_EN), "utf-8")
    (root / "persona_all" / "Unused_zz.json").write_text(json.dumps(PERSONA_EN), "utf-8")
    for split in ("general", "specific"):
        for tier in ("easy", "medium", "hard"):
            items = rows(f"[{split}/{tier}] ")
            for item, user in zip(items, ["小雨_2mwC", "Tom_x1", "小雨_2mwC"]):
                item["user_id"] = user
            write_jsonl(root / f"{split}_{'mid' if tier == 'medium' else tier}.jsonl", items)
    return root


def native_row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "c1", "split": "general", "tier": "easy", "user_id": "u1", "persona": PERSONA_EN,
        "question": "Where should I go?", "chosen": "A slow train trip.", "rejected": "Anywhere.", "meta": {},
    }
    row.update(overrides)
    return row
