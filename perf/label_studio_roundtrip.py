"""Round trip through a real Label Studio server: tailorbench's export in, three annotators' labels through its
API, its JSON export back into tailorbench; the kappas must equal those of the same labels given directly.

Label Studio (1.23.2) runs from its own virtual environment under ~/.cache/tailorbench/label-studio-venv
(created here on first use; never the project's), on loopback, with a data folder in a temporary directory.
For each of the four task types (pairwise: 36 pairs of the demo benchmark; attributes, relevance: 8 items x 3
attributes; A/B rating: 12 items x 2 attributes) it creates a project with the exported labeling config (the
pairwise one with a tie choice added, as a user's config might), imports the exported tasks (answers on swapped
sides for about half of them, drawn from the export's seed), creates three annotators, submits each one's label
of every task through `/api/tasks/ID/annotations` (the side or score that label means on that task's layout),
plus one skipped annotation and, for pairwise, three ties by a fourth user, exports
`/api/projects/ID/export?exportType=JSON` and reads it with `tailorbench.interop.read_export`. The server binds
127.0.0.1 (`--internal-host`; `--host` only sets its URL), checked from its listening sockets in /proc before any
request. Last, a project tailorbench did not make (a team's own Pairwise config and data keys, 12 pairs x 3
annotators): `--save-foreign FILE` keeps its export, as tests/interop/data/label_studio_foreign_pairwise.json was
made. Blind exports: every task's API object and labeling page as the server serves them to an annotator are
searched for tailorbench's unit fields (`tb_unit`, `tb_item`, `tb_task`, `tb_swap`) and the word "swap"
(`served_clean`); the annotators here play the truth from the export's key file, as a tool never can.

Run: .venv/bin/python perf/label_studio_roundtrip.py [--out result.json] [--save-foreign export.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.agreement.records import Label, Rating, RatingSet
from tailorbench.datasets import load_benchmark
from tailorbench.interop import export_items, read_export

sys.path.insert(0, str(Path(__file__).resolve().parent))
from listening import check_loopback, free_port, wait_healthy
from listening import ensure_venv as make_venv

VERSION = "1.23.2"
TOKEN = "tailorbench-bench-token-0123456789abcdef"
#: the statistics (values and intervals) that must equal those of the labels given directly
STATISTICS = ("fleiss_kappa", "krippendorff_alpha", "pairwise_cohen_kappa")
ANNOTATORS = ("ann1@example.org", "ann2@example.org", "ann3@example.org")


def ensure_venv() -> Path:
    return make_venv("label-studio-venv", f"label-studio=={VERSION}", "label-studio")


def write_items(folder: Path) -> dict[str, Path]:
    """A pairwise items file from the demo benchmark and a small A/B-rating items file."""
    pairs = folder / "pairwise.jsonl"
    with pairs.open("w", encoding="utf-8") as handle:
        for case in load_benchmark("demo").cases[:36]:
            handle.write(json.dumps({"id": case.id, "split": case.split, "user_id": case.user_id,
                                     "persona": case.persona, "question": case.question, "answer_a": case.chosen,
                                     "answer_b": case.rejected}) + "\n")
    attrs = ["works night shifts", {"id": "job", "text": "nurse"}, "likes jazz"]
    (folder / "attributes.jsonl").write_text("".join(json.dumps({
        "id": f"at{i}", "conversation": [{"role": "user", "content": f"I work nights at the hospital ({i})"},
                                         {"role": "assistant", "content": "That sounds demanding."}],
        "attributes": attrs}) + "\n" for i in range(8)), encoding="utf-8")
    (folder / "relevance.jsonl").write_text("".join(json.dumps({
        "id": f"rv{i}", "prompt": f"Suggest a weekend plan ({i})", "attributes": attrs}) + "\n" for i in range(8)),
        encoding="utf-8")
    ab = folder / "ab_rating.jsonl"
    with ab.open("w", encoding="utf-8") as handle:
        for i in range(12):
            handle.write(json.dumps({"id": f"ab{i}", "prompt": f"Suggest a dinner for tonight ({i})",
                                     "generic": "Pasta carbonara.",
                                     "personalized": "A lentil curry you can cook before your night shift.",
                                     "attributes": [{"id": "veg", "text": "vegetarian"},
                                                    {"id": "night", "text": "works night shifts"}]}) + "\n")
    return {"pairwise": pairs, "attributes": folder / "attributes.jsonl", "relevance": folder / "relevance.jsonl",
            "ab_rating": ab}


def start(exe: Path, data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LABEL_STUDIO_USERNAME": "admin@example.org", "LABEL_STUDIO_PASSWORD": "bench-password-1",
           "LABEL_STUDIO_USER_TOKEN": TOKEN, "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true"}
    log = (data_dir / "server.log").open("wb")
    # --internal-host is the bind address; --host only sets the URL Label Studio writes into its pages
    return subprocess.Popen([str(exe), "start", "--internal-host", "127.0.0.1", "--host", f"http://127.0.0.1:{port}",
                             "--port", str(port), "--no-browser", "--data-dir", str(data_dir)], env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def enable_legacy_token(data_dir: Path) -> None:
    """The API refuses the first user's token until legacy tokens are enabled (../shared/notes/environment.md)."""
    with sqlite3.connect(data_dir / "label_studio.sqlite3") as db:
        db.execute("UPDATE jwt_auth_jwtsettings SET legacy_api_tokens_enabled = 1")


def shown(task: str, swap: bool, label: Label) -> dict[str, Any]:
    """The result an annotator who means `label` submits on a task whose answers are swapped or not."""
    if task == "pairwise":
        first = (label == "B") if swap else (label == "A")
        return {"from_name": "choice", "to_name": "choice", "type": "pairwise",
                "value": {"selected": "left" if first else "right"}}
    if task in ("attributes", "relevance"):
        name, value = ("judgment", label) if task == "attributes" else ("relevant", "yes" if label else "no")
        return {"from_name": name, "to_name": "attribute", "type": "choices", "value": {"choices": [value]}}
    assert isinstance(label, int)
    return {"from_name": "score", "to_name": "answer2", "type": "rating",
            "value": {"rating": 3 - label if swap else 3 + label}}


UNIT_FIELDS = ("tb_unit", "tb_item", "tb_task", "tb_swap", "swap")


def served_is_blind(client: httpx.Client, pid: int, task_id: int) -> bool:
    """What the server sends an annotator for one task (its API object and its labeling page) holds none of
    tailorbench's unit fields."""
    pages = [client.get(f"/api/tasks/{task_id}"), client.get(f"/projects/{pid}/data", params={"task": task_id})]
    return all(not any(f in page.text for f in UNIT_FIELDS) for page in pages)


def run_task(client: httpx.Client, task: str, items: Path, work: Path, users: dict[str, int],
             rng: random.Random) -> dict[str, Any]:
    summary = export_items(items, task, "label-studio", work / task, seed=11)
    config = (work / task / "config.xml").read_text(encoding="utf-8")
    if task == "pairwise":  # a user's config with a tie choice, which the Pairwise tag lacks
        config = config.replace("</View>", '  <Choices name="tie" toName="answer1" choice="single">\n'
                                '    <Choice value="Tie"/>\n  </Choices>\n</View>')
    project = client.post("/api/projects", json={"title": f"tailorbench {task}", "label_config": config})
    project.raise_for_status()
    pid = project.json()["id"]
    tasks_json = json.loads((work / task / "tasks.json").read_text(encoding="utf-8"))
    client.post(f"/api/projects/{pid}/import", json=tasks_json).raise_for_status()
    listed = client.get("/api/tasks", params={"project": pid, "page_size": 1000}).json()
    ls_tasks = listed["tasks"] if isinstance(listed, dict) else listed
    space: list[Label] = {"pairwise": ["A", "B"], "attributes": ["accepted", "uncertain", "rejected"],
                          "relevance": [True, False]}.get(task, [-2, -1, 0, 1, 2])
    labels: dict[tuple[str, str], Label] = {}
    key = json.loads((work / task / "tailorbench-key.json").read_text(encoding="utf-8"))["units"]
    served_clean = all(served_is_blind(client, pid, t["id"]) for t in ls_tasks)
    t0 = time.perf_counter()
    for t in ls_tasks:
        unit = key[t["data"]["tb_ref"]]
        truth = rng.choice(space)
        for uid in users.values():
            label = truth if rng.random() < 0.7 else rng.choice(space)
            labels[unit["tb_unit"], str(uid)] = label
            client.post(f"/api/tasks/{t['id']}/annotations",
                        json={"result": [shown(task, unit["tb_swap"], label)], "completed_by": uid,
                              "lead_time": round(rng.uniform(3, 30), 2)}).raise_for_status()
    # one skipped annotation (Label Studio's Skip: was_cancelled), which must be counted, not rated
    admin = client.get("/api/current-user/whoami").json()["id"]
    client.post(f"/api/tasks/{ls_tasks[0]['id']}/annotations",
                json={"result": [], "was_cancelled": True, "completed_by": admin}).raise_for_status()
    if task == "pairwise":  # three ties, by the admin
        for t in ls_tasks[1:4]:
            client.post(f"/api/tasks/{t['id']}/annotations", json={"completed_by": admin, "result": [
                {"from_name": "tie", "to_name": "answer1", "type": "choices", "value": {"choices": ["Tie"]}}]},
                        ).raise_for_status()
    annotate_s = time.perf_counter() - t0
    export = client.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"})
    export.raise_for_status()
    path = work / task / "export.json"  # beside the key file, as a user keeps them
    path.write_bytes(export.content)
    ratings, report = read_export(path)
    got = {(r.item, r.rater): r.label for r in ratings.ratings}
    direct = RatingSet(ratings=[Rating(item, rater, label) for (item, rater), label in labels.items()])
    opts = AgreeOptions(200, 0)
    order = ["rejected", "uncertain", "accepted"] if task == "attributes" else None
    mine, want = agreement_report(ratings, order, opts), agreement_report(direct, order, opts)
    return {"task": task, "units": summary["units"], "swapped": summary["swapped"], "annotations": len(labels),
            "served_clean": served_clean,
            "labels_equal": got == labels, "fleiss_kappa": mine["fleiss_kappa"]["value"],
            "fleiss_kappa_direct": want["fleiss_kappa"]["value"],
            "kappas_equal": all(mine[k] == want[k] for k in STATISTICS),
            "not_rated": dict(report.not_rated), "unmappable": report.unmappable,
            "annotate_s": round(annotate_s, 1)}


#: a team's own pairwise config, made without tailorbench: its data keys, its control names, answers placed at
#: random per task (the data keeps which text is the personalized one)
FOREIGN_CONFIG = """<View>
  <Header value="Prompt"/>
  <Text name="prompt" value="$prompt"/>
  <Text name="left" value="$response_left"/>
  <Text name="right" value="$response_right"/>
  <Header value="Which response suits this user better?"/>
  <Pairwise name="preference" toName="left,right"/>
</View>
"""


def foreign_project(client: httpx.Client, users: dict[str, int], rng: random.Random, save: Path | None
                    ) -> dict[str, Any]:
    """12 pairs x 3 annotators in a project tailorbench did not make; its export is what tests/interop reads."""
    tasks = []
    for i in range(12):
        personalized, generic = f"A plan for a night-shift nurse ({i})", f"A general plan ({i})"
        flip = rng.random() < 0.5
        tasks.append({"pair_id": f"pair-{i:02d}", "prompt": f"Plan my weekend ({i})",
                      "response_left": generic if flip else personalized,
                      "response_right": personalized if flip else generic,
                      "personalized": personalized, "generic": generic})
    pid = client.post("/api/projects", json={"title": "team pairwise", "label_config": FOREIGN_CONFIG}).json()["id"]
    client.post(f"/api/projects/{pid}/import", json=tasks).raise_for_status()
    listed = client.get("/api/tasks", params={"project": pid, "page_size": 1000}).json()
    votes: dict[tuple[str, str], str] = {}
    for t in listed["tasks"] if isinstance(listed, dict) else listed:
        truth = rng.choice("ab")
        for email, uid in users.items():
            answer = truth if rng.random() < 0.75 else rng.choice("ab")
            on_left = (t["data"]["response_left"] == t["data"]["personalized"]) == (answer == "a")
            votes[t["data"]["pair_id"], email] = answer
            client.post(f"/api/tasks/{t['id']}/annotations", json={"completed_by": uid, "lead_time": 7.5, "result": [
                {"from_name": "preference", "to_name": "preference", "type": "pairwise",
                 "value": {"selected": "left" if on_left else "right"}}]}).raise_for_status()
    export = client.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"})
    export.raise_for_status()
    if save:
        save.write_bytes(export.content)
        save.with_suffix(".votes.json").write_text(json.dumps(
            {"users": users, "votes": [[item, email, v] for (item, email), v in sorted(votes.items())]}, indent=1)
            + "\n", encoding="utf-8")
    return {"task": "foreign pairwise", "tasks": len(tasks), "annotations": len(votes),
            "export_bytes": len(export.content)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="Write the result JSON here too.")
    parser.add_argument("--save-foreign", type=Path, help="Write the export of the project made without "
                        "tailorbench here (and the votes given, beside it as .votes.json).")
    args = parser.parse_args()
    t0 = time.perf_counter()
    exe = ensure_venv()
    with tempfile.TemporaryDirectory() as tmp:
        work, data_dir = Path(tmp), Path(tmp) / "ls-data"
        data_dir.mkdir()
        items = write_items(work)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start(exe, data_dir, port)
        try:
            started_s = wait_healthy(base, proc, "label-studio")
            sockets = check_loopback(proc.pid, "label-studio")
            enable_legacy_token(data_dir)
            with httpx.Client(base_url=base, headers={"Authorization": f"Token {TOKEN}"}, timeout=60) as client:
                users = {}
                for email in ANNOTATORS:
                    made = client.post("/api/users", json={"email": email, "username": email.split("@")[0]})
                    made.raise_for_status()
                    users[email] = made.json()["id"]
                rng = random.Random(5)
                results = [run_task(client, task, path, work, users, rng) for task, path in items.items()]
                foreign = foreign_project(client, users, rng, args.save_foreign)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    out = {"label_studio": VERSION, "started_s": round(started_s, 1), "total_s": round(time.perf_counter() - t0, 1),
           "listening": sockets, "results": results, "foreign": foreign}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if not all(r["labels_equal"] and r["kappas_equal"] and not r["unmappable"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
