"""A PersonaFeedback-sized study (hundreds of users): `plan`'s model-call count of every model step, taken before
`run` reaches it (the extractor's at once, the others once the labels they are built from are in), equals the
calls `run` then makes; the labels come from own
annotators through the service's assignment and submission path (the HTTP path is test_study.py's)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailorbench.humanstudy.config import load_config
from tailorbench.humanstudy.plan import study_plan
from tailorbench.humanstudy.run import advance, database
from tests.study.helpers import register, study_yaml

pytestmark = pytest.mark.slow
N_USERS = 400


def _inputs(d: Path) -> tuple[Path, Path]:
    conv, prompts = d / "conversations.jsonl", d / "prompts.jsonl"
    with conv.open("w") as c, prompts.open("w") as p:
        for u in range(N_USERS):
            turns = [{"role": "user", "content": f"User {u} asks question {t}."} for t in range(3)]
            c.write(json.dumps({"user_id": f"u{u}", "conversations": [turns], "source": "synthetic"}) + "\n")
            p.write(json.dumps({"user_id": f"u{u}", "prompt_index": 0, "prompt": f"Help user {u} plan a week."})
                    + "\n")
    return conv, prompts


def _form(task: str, payload: dict[str, Any]) -> dict[str, str]:
    """What an annotator who agrees with a fixed truth (a hash of the attribute) submits."""
    out = {}
    for a in payload["attributes"]:
        h = int(hashlib.sha256(a["text"].encode()).hexdigest()[0], 16)
        if task == "attributes":
            out[f"j_{a['key']}"] = "accepted" if h < 12 else "rejected"
        elif task == "relevance":
            out[f"r_{a['key']}"] = "yes" if h < 8 else "no"
        else:
            out[f"s_{a['key']}"] = str(1 + h % 5)
    return out


def _label_all(d: Path, stage: str) -> int:
    from tailorbench.annotation import service

    cfg = load_config(d)
    db = database(cfg, d)
    project = json.loads((d / "steps" / f"{stage}.annotate" / "project.json").read_text())["project"]
    n = 0
    try:
        users = {u["name"]: u["id"] for u in service.list_users(db)}
        pid = next(p["id"] for p in service.list_projects(db) if p["name"] == project)
        task = next(p["task_type"] for p in service.list_projects(db) if p["name"] == project)
        for name in ("a1", "a2"):
            while True:
                with db.session() as s:
                    cur = service.next_assignment(s, users[name], pid)
                    if cur is None:
                        break
                    assert cur.item is not None
                    service.submit(s, users[name], cur.id, _form(task, cur.item[1]))
                    n += 1
    finally:
        db.dispose()
    return n


def test_plan_counts_equal_the_calls_run_makes_on_a_large_study(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAILORBENCH_CALL_CACHE", str(tmp_path / "calls.sqlite"))
    scripted = register()
    d = tmp_path / "s"
    d.mkdir()
    conv, prompts = _inputs(d)
    data = yaml.safe_load(study_yaml())
    data["inputs"] = {"conversations": str(conv), "prompts": str(prompts)}
    for stage in data["stages"].values():
        stage["crowd"] = {"kind": "own", "annotators": ["a1", "a2"]}
    (d / "study.yaml").write_text(yaml.safe_dump(data))
    planned: dict[str, int] = {}
    for _ in range(4):
        for s in study_plan(load_config(d), d)["steps"]:
            if s["kind"] == "model" and s["status"] != "done" and s["calls"] is not None:
                planned[s["id"]] = s["calls"]
        got = advance(d)
        if got["finished"]:
            break
        assert _label_all(d, got["waiting"]["stage"]) > 0
    assert got["finished"]
    state = json.loads((d / "state.json").read_text())["steps"]
    made = {k: v["info"]["calls"] for k, v in state.items() if "calls" in v["info"]}
    made["incorporation.generate"] = state["incorporation.generate"]["info"]["generations"]["calls"]
    assert planned == made and made["extraction.extract"] == N_USERS  # every count known before its step ran
    after = {s["id"]: s["calls"] for s in study_plan(load_config(d), d)["steps"] if s["kind"] == "model"}
    assert after == made and made["relevance.judge.j1"] > N_USERS and made["incorporation.judge.j1"] > 0
    assert len(scripted.attempts) == len(set(scripted.attempts)) <= sum(made.values())
