"""Writes the bundled example study (src/tailorbench/threestage/example/): six invented users, their conversations,
extracted attributes, prompts, answers, and ILLUSTRATIVE labels drawn with a fixed seed from hand-written
"intended" judgments plus noise. Its figures are illustrative only; rerun this script to regenerate it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "src" / "tailorbench" / "threestage" / "example"
RNG = np.random.default_rng(20260301)

# user: (source, turns, good attributes, problematic attributes with their error category, prompts)
USERS: list[dict[str, Any]] = [
    {"user": "u-01", "source": "real",
     "turns": ["Suggest a quick dinner without meat, I have 20 minutes after my run.",
               "What pace should I hold for my half marathon in Oslo next month?",
               "Rewrite this cover letter paragraph for a marketing job.", "Keep it short please."],
     "good": ["The user keeps a vegetarian diet.", "The user is training for a half marathon.",
              "The user lives in Oslo.", "The user prefers short, direct answers."],
     "bad": [("The user works in marketing.", "task-context confusion"),
             ("The user always cooks in under 20 minutes.", "overgeneralization")],
     "prompts": [("Plan my meals for next week.", [0, 1]), ("What should I wear for a run this weekend?", [1, 2]),
                 ("Explain how index funds work.", [3])]},
    {"user": "u-02", "source": "real",
     "turns": ["Translate 'good morning, children' into French.", "My two kids are 3 and 5, ideas for a rainy day?",
               "I just finished a night shift at the hospital, how do I fall asleep faster?",
               "Is there peanut in pesto? I'm allergic."],
     "good": ["The user has two young children.", "The user works night shifts at a hospital.",
              "The user is allergic to peanuts.", "The user is learning French."],
     "bad": [("The user is a French teacher.", "task-context confusion"),
             ("The user has trouble sleeping every night.", "overgeneralization")],
     "prompts": [("Suggest a weekend activity.", [0]), ("Recommend a podcast for my commute.", [1, 3]),
                 ("Give me a snack idea.", [2, 0])]},
    {"user": "u-03", "source": "real",
     "turns": ["Write a Python script that renames files by date.", "My dog chews everything in my small flat.",
               "How much should I save each month for a house deposit?", "Explain list comprehensions."],
     "good": ["The user programs in Python.", "The user has a dog.", "The user lives in a small apartment.",
              "The user is saving for a house."],
     "bad": [("The user is a professional photographer.", "unsupported"),
             ("The user teaches programming.", "task-context confusion")],
     "prompts": [("How can I automate renaming my photos?", [0]), ("What pet toys are worth buying?", [1, 2]),
                 ("Should I buy a new TV?", [3, 2])]},
    {"user": "u-04", "source": "synthetic",
     "turns": ["I retired from teaching last year and have time for my garden.",
               "Which vegetables grow well in the dry climate of rural Spain?",
               "My doctor said to watch my sugar because of type 2 diabetes.", "Recommend a novel about history."],
     "good": ["The user is a retired teacher.", "The user enjoys gardening.", "The user has type 2 diabetes.",
              "The user lives in rural Spain."],
     "bad": [("The user only reads historical novels.", "overgeneralization")],
     "prompts": [("Suggest a dessert recipe.", [2]), ("What can I plant in October?", [1, 3]),
                 ("Recommend a book.", [0])]},
    {"user": "u-05", "source": "synthetic",
     "turns": ["Help me study for my organic chemistry exam.", "Which guitar strings last longest?",
               "Cheap vegan meals for a student budget?", "I can only spend 50 euros this month on fun."],
     "good": ["The user studies chemistry at university.", "The user plays the guitar.", "The user is vegan.",
              "The user has a limited budget."],
     "bad": [("The user wants to become a chemist.", "unsupported")],
     "prompts": [("Plan a cheap dinner party.", [2, 3]), ("How do I study for exams efficiently?", [0]),
                 ("Which amplifier should I buy?", [1, 3])]},
    {"user": "u-06", "source": "synthetic",
     "turns": ["Write a caption for the new sourdough at my bakery.", "I get up at 4 am, how do I stay alert?",
               "Translate my menu into Spanish.", "My lower back hurts after long shifts."],
     "good": ["The user runs a small bakery.", "The user wakes up very early.",
              "The user speaks Spanish and English.", "The user has back pain."],
     "bad": [("The user is a professional translator.", "task-context confusion")],
     "prompts": [("Write an Instagram caption for my new product.", [0]), ("Suggest a morning routine.", [1, 3]),
                 ("What office chair should I get?", [3])]},
]
ANNOTATORS = ["ann_1", "ann_2", "ann_3"]


def write(name: str, rows: list[dict[str, Any]]) -> None:
    (OUT / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def noisy(value: Any, options: list[Any], p: float) -> Any:
    return options[int(RNG.integers(len(options)))] if RNG.random() < p else value


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    conv_rows, items, task1 = [], [], {a: [] for a in ANNOTATORS}
    taxonomy = []
    for i, u in enumerate(USERS):
        convs = [[{"role": "user", "content": t}, {"role": "assistant", "content": "(assistant reply)"}]
                 for t in u["turns"]]
        conv_rows.append({"user_id": u["user"], "conversations": convs, "source": u["source"]})
        attrs = u["good"] + [b for b, _ in u["bad"]]
        items.append({"index": i, "user_id": u["user"], "attributes": attrs, "conversations": convs,
                      "extractor": "illustrative-extractor", "source": u["source"]})
        intended = ["ok"] * len(u["good"]) + ["bad"] * len(u["bad"])
        for a in ANNOTATORS:
            js = [{"judgment": noisy(x, ["ok", "unsure", "bad"], 0.25), "note": ""} for x in intended]
            task1[a].append({"task": "1", "index": i, "attr_judgments": js, "missing_attrs": "", "overall_note": "",
                             "flagged": False, "annotator": a, "timestamp": "2026-03-01T10:00:00"})
        for b, cat in u["bad"]:
            taxonomy.append({"index": i, "user_id": u["user"], "attribute": b, "category": cat, "rater": "ann_1"})
    write("conversations.jsonl", conv_rows)
    write("stage1_items.jsonl", items)
    for a in ANNOTATORS:
        write(f"{a}_task1.jsonl", task1[a])
    write("taxonomy_human.jsonl", taxonomy)

    rel_items, task3 = [], {a: [] for a in ANNOTATORS}
    votes = []
    ab_tasks, ab_ratings = [], []
    index = 0
    for u in USERS:
        for p, (prompt, relevant) in enumerate(u["prompts"]):
            rel_items.append({"index": index, "user_id": u["user"], "prompt_index": p, "prompt": prompt,
                              "attributes": u["good"]})
            for a in ANNOTATORS:
                js = [{"attribute": t, "relevant": bool(noisy(j in relevant, [True, False], 0.2))}
                      for j, t in enumerate(u["good"])]
                task3[a].append({"task": "3", "index": index, "user_id": u["user"], "prompt_index": p,
                                 "relevance_judgments": js, "annotator": a, "note": "", "flagged": False,
                                 "timestamp": "2026-03-02T10:00:00"})
            # an over-eager illustrative LLM: says relevant much more often than humans
            votes.append({"model": "illustrative-llm", "sample_index": index, "user_id": u["user"],
                          "items": [{"attribute": t, "relevant": bool(j in relevant or RNG.random() < 0.45),
                                     "raw_answer": ""} for j, t in enumerate(u["good"])]})
            for j in relevant:
                attr = u["good"][j]
                explicit = RNG.random() < 0.5
                topic = attr.removeprefix("The user ").rstrip(".")
                personalized = (f"Since you mentioned that you {topic.replace('is ', 'are ').replace('has ', 'have ')}"
                                f", here is a tailored answer to: {prompt}" if explicit
                                else f"A tailored answer to: {prompt} (adapted quietly to your situation)")
                tid = f"ab-{index}-{j}"
                ab_tasks.append({"id": tid, "user_id": u["user"], "prompt": prompt,
                                 "generic": f"A general answer to: {prompt}", "personalized": personalized,
                                 "attributes": [attr], "meta": {"condition": "gold" if j % 2 == 0 else "predicted"}})
                quality = int(RNG.integers(-1, 2))
                for a in ANNOTATORS:
                    ab_ratings.append({"item": f"{tid}::1", "rater": a, "group": "human",
                                       "label": int(np.clip(quality + RNG.integers(-1, 2), -2, 2))})
                for judge, bonus in (("illustrative-judge-a", 1), ("illustrative-judge-b", 0)):
                    score = quality + bonus + (1 if explicit else 0) + int(RNG.integers(-1, 1))
                    ab_ratings.append({"item": f"{tid}::1", "rater": judge, "group": "model",
                                       "label": int(np.clip(score, -2, 2))})
            index += 1
    write("relevance_items.jsonl", rel_items)
    for a in ANNOTATORS:
        write(f"{a}_task3.jsonl", task3[a])
    write("illustrative-llm_relevance.jsonl", votes)
    write("ab_tasks.jsonl", ab_tasks)
    write("ab_ratings.jsonl", ab_ratings)
    rm = [{"item": r["item"], "rater": "illustrative-rm", "score": round(float(r["label"] + RNG.normal(0, 1.2)), 3)}
          for r in ab_ratings if r["rater"] == "ann_1"]
    write("rm_scores.jsonl", rm)


if __name__ == "__main__":
    main()
