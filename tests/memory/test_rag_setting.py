"""The rag setting: contexts retrieved from memory or persona facts, recorded in the manifest, end to end
through `tailor eval`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.evaluate.runner import plan
from tailorbench.evaluate.settings import SettingOptions, get_setting, known_settings
from tailorbench.schema import PairCase

runner = CliRunner()

MEMORY = [
    {"user_id": "zh1", "id": "1", "text": "我对花生过敏，吃东西要特别小心。", "time": "2025-03-01T10:00:00"},
    {"user_id": "zh1", "id": "2", "text": "家里养了一只橘猫，名字叫馒头。"},
    {"user_id": "zh1", "id": "3", "text": "每天通勤要坐一个小时地铁。"},
    {"user_id": "en1", "id": "1", "text": "Training for a half marathon, I run four mornings a week."},
    {"user_id": "en1", "id": "2", "text": "We adopted a grey cat named Pixel last spring."},
    {"user_id": "en1", "id": "3", "text": "Saving money for a down payment on an apartment."},
]
QUESTIONS = {
    "zh1": [("推荐一些适合我的零食，注意过敏", "1"), ("猫咪不爱吃猫粮怎么办", "2")],
    "en1": [("How should I plan my running week?", "1"), ("What toys does a cat like?", "2")],
}


def _cases() -> list[PairCase]:
    cases = []
    for user, qs in QUESTIONS.items():
        for k, (question, _) in enumerate(qs):
            for split in ("specific", "general"):
                cases.append(PairCase(
                    id=f"{user}-{k}-{split}", split=split, tier="easy", user_id=user,
                    persona={"Demographics": {"Age": 30, "Occupation": "teacher"},
                             "Preference": {"Pets": "likes cats", "Food": ["tea", "noodles"]}},
                    question=question, chosen="A fitting, personal and longer answer.", rejected="Generic."))
    return cases


def _write(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "bench.jsonl"
    data.write_text("".join(c.model_dump_json() + "\n" for c in _cases()), encoding="utf-8")
    memory = tmp_path / "memory.jsonl"
    memory.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in MEMORY), encoding="utf-8")
    return data, memory


def test_contexts_from_memory_hold_the_relevant_item(tmp_path: Path) -> None:
    _, memory = _write(tmp_path)
    options = SettingOptions(extra={"memory": str(memory), "top_k": 1})
    tasks = plan(_cases(), "rag", "random", 0, options)
    expected = {(u, q): next(m["text"] for m in MEMORY if m["user_id"] == u and m["id"] == mid)
                for u, qs in QUESTIONS.items() for q, mid in qs}
    for task in tasks:
        context = task.input.context
        assert context is not None and context.startswith("Memory retrieved for this question (top 1 of 3, bm25)")
        assert expected[(task.case.user_id, task.case.question)] in context
        assert task.input.persona is None  # the judge sees retrieved memory, not the profile
    assert "[2025-03-01] 我对花生过敏" in tasks[0].input.context  # type: ignore[operator]
    rag = options.extra["rag"]
    assert rag["source"] == "memory" and rag["users_from_memory"] == 2 and rag["corpus_items"] == 6
    assert "rag" in known_settings()


def test_persona_facts_without_memory() -> None:
    options = SettingOptions(extra={"retriever": "bm25", "top_k": 2})
    # a Chinese question shares no token with English facts: no context rather than arbitrary facts
    assert get_setting("rag")(_cases()[2], options) is None
    tasks = plan(_cases(), "rag", "random", 0, options)
    en_cat = next(t for t in tasks if t.case.question == "What toys does a cat like?")
    assert en_cat.input.context is not None and "Preference > Pets: likes cats" in en_cat.input.context
    assert options.extra["rag"]["source"] == "persona_facts"


def test_eval_rag_end_to_end_with_memory(tmp_path: Path) -> None:
    data, memory = _write(tmp_path)
    out = tmp_path / "runs"
    result = runner.invoke(app, ["eval", "--data", str(data), "--judge", "longer", "--setting", "rag", "--setting",
                                 "persona", "--setting", "none", "--memory", str(memory), "--retriever", "hybrid",
                                 "--top-k", "2", "--out", str(out), "--n-boot", "200", "--no-progress"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "longer__rag" / "manifest.json").read_text())
    options = manifest["config"]["setting_options"]
    assert options["retriever"] == "hybrid" and options["top_k"] == 2 and options["memory"] == str(memory.resolve())
    assert options["rag"]["fusion"]["method"] == "rrf" and options["rag"]["users_from_memory"] == 2
    lines = (out / "longer__rag" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(_cases())
    report = (out / "report.md").read_text()
    assert all(f"| longer | {s} |" in report for s in ("rag", "persona", "none"))  # side by side


def test_eval_rag_on_persona_facts_of_demo(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--data", "demo", "--judge", "longer", "--setting", "rag", "--out",
                                 str(out), "--n-boot", "200", "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    rag = json.loads((out / "manifest.json").read_text())["config"]["setting_options"]["rag"]
    assert rag["source"] == "persona_facts" and rag["retriever"] == "bm25" and rag["top_k"] == 5
    assert rag["users_from_persona_facts"] == rag["users"] > 0
    bad = runner.invoke(app, ["eval", "--data", "demo", "--setting", "rag", "--retriever", "tfidf", "--out",
                              str(tmp_path / "bad"), "--no-progress"])
    assert bad.exit_code == 2 and "unknown retriever 'tfidf'" in bad.output
