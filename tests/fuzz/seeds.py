"""The seed table of the CLI fuzz suite (`test_fuzz_cli.py`): one small valid input per input kind, built once per
process and copied per generated case, the fields of each that the misread classes aim at, and one valid
invocation (or a few) per verb, written with placeholders for the inputs.

A recipe is a `tailor` argument list in which `{KIND}` (or `{KIND#2}`, a second input of the same kind) stands for
a copy of the seed of that kind, `@{KIND}` for `@` and its path (options that read `@FILE`), `{state:KIND}` for an
input that is also the command's own state (an annotation folder, a study, a run resumed: the verb may change
it), and `{out}` for the output folder (it does not exist before the verb runs). Every verb the CLI lists has a
recipe here, or the suite fails naming it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "src" / "tailorbench" / "threestage" / "example"
INTEROP = REPO_ROOT / "tests" / "interop" / "data"
ANNOTATION = REPO_ROOT / "tests" / "annotation" / "data"


@dataclass(frozen=True)
class Fields:
    """What the misread classes aim at in one file, as dotted paths (`*`: every element of a list, every value of
    a mapping), applied to one record of a JSONL / CSV file or to the whole document of a JSON / YAML file."""

    ints: tuple[str, ...] = ()  # integers (and counts): a bool there is a wrong type
    texts: tuple[str, ...] = ()  # text the verb reads as text (ids, answers, names): a number there
    required: tuple[str, ...] = ()  # keys every record must have: dropped
    indices: tuple[str, ...] = ()  # integer indices and ids: negative, underscored, not an integer
    positions: tuple[str, ...] = ()  # positions into a sequence: as indices, and also past its end
    enums: tuple[str, ...] = ()  # values from a closed set: an unknown one
    urls: tuple[str, ...] = ()  # http(s) URLs: another scheme


@dataclass(frozen=True)
class Seed:
    """One input kind: how to build it at a path (a file or a folder), and the fields of its files (by the file's
    path inside a folder seed; "" for a file seed)."""

    name: str
    build: Callable[[Path], None]
    fields: dict[str, Fields] = field(default_factory=dict)


# --- builders -------------------------------------------------------------------------------------------------

def _copy_from(source: Path) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        if source.is_dir():
            shutil.copytree(source, path)
        else:
            shutil.copyfile(source, path)
    return build


def _jsonl(rows: Sequence[Mapping[str, object]]) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return build


def _text(text: str) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        path.write_text(text, encoding="utf-8")
    return build


_PERSONA = {"Demographics": {"Age": 34, "Occupation": "nurse"}, "Preference": {"Food": "vegetarian"}}
BENCH_ROWS: list[dict[str, object]] = [
    {"id": f"c{k}", "split": ("general", "specific")[k % 2], "tier": ("easy", "medium", "hard")[k % 3],
     "user_id": f"u{k % 3}", "persona": _PERSONA, "question": f"What should I cook tonight? ({k})",
     "chosen": f"A vegetarian curry that fits your night shifts, ready in twenty minutes ({k}).",
     "rejected": f"A steak ({k}).", "meta": {"source": "fuzz"}}
    for k in range(12)
]
_BENCH = Fields(texts=("id", "question", "chosen", "rejected"),
                required=("split", "tier", "user_id", "question", "chosen", "rejected"),
                enums=("split", "tier"))

RATINGS_ROWS: list[dict[str, object]] = [
    {"item": f"it{k}", "rater": r, "label": ("A", "B")[(k + n) % 2 if n < 2 else k % 2], "group": "human"}
    for k in range(4) for n, r in enumerate(("ann1", "ann2", "ann3"))
]


def _ratings_csv(path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["item", "rater", "label", "group"])
    for r in RATINGS_ROWS:
        writer.writerow([r["item"], r["rater"], r["label"], r["group"]])
    path.write_text(buffer.getvalue(), encoding="utf-8")


_TRAIN = {"data": "demo", "model": "minilm", "train_scope": "features", "features": ["length"], "epochs": 1,
          "batch_size": 8, "max_steps": 1, "n_boot": 10, "precision": "fp32", "seed": 0}
_MAP = {"item": "data.pair_id", "rater": "completed_by", "a": "data.personalized", "b": "data.generic",
        "left": "data.response_left", "right": "data.response_right"}


def _build_config(path: Path) -> None:
    doc = yaml.safe_load((REPO_ROOT / "examples" / "construction" / "config-small.yaml").read_text(encoding="utf-8"))
    path.mkdir()
    shutil.copyfile(REPO_ROOT / "examples" / "construction" / "memory.jsonl", path / "memory.jsonl")
    doc["model"] = "illustrative:builder"
    doc["out"] = "build-out"
    doc.pop("structured_output", None)
    (path / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _study(path: Path) -> None:
    """A study as `study init` makes it, with the demo's illustrative models (no network)."""
    from tailorbench.humanstudy.demo_model import register

    register()
    path.mkdir()
    for name, source in (("conversations.jsonl", "conversations.jsonl"), ("prompts.jsonl", "relevance_items.jsonl")):
        shutil.copyfile(EXAMPLE / source, path / name)
    crowd = {"kind": "prolific", "places": 3, "quota": 6, "reward": 1.0, "currency": "GBP", "time_limit_min": 30,
             "completion_code": "DONE1"}
    doc = {"name": "fuzz", "inputs": {"conversations": "conversations.jsonl", "prompts": "prompts.jsonl"},
           "models": {"extractor": "illustrative:extractor", "generator": "illustrative:generator",
                      "judges": {"j1": "illustrative:judge"}, "max_tokens": 64},
           "annotation": {"base_url": "http://127.0.0.1:8000"},
           "statistics": {"n_boot": 20, "seed": 0, "min_shared": 2, "min_items": 3},
           "report": {"dir": "report", "illustrative": True},
           "stages": {s: {"n": 2, "crowd": dict(crowd)} for s in ("extraction", "relevance", "incorporation")}}
    (path / "study.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _cli(*args: str) -> None:
    """Run `tailor ARGS` in-process while building a seed (it must succeed)."""
    from click.testing import CliRunner

    from tests.fuzz.hostile import command

    result = CliRunner().invoke(command(), list(args))
    if result.exit_code != 0:
        raise RuntimeError(f"building a seed: tailor {' '.join(args)}: exit {result.exit_code}: {result.output}"
                           f"{result.exception!r}")


def _personamem(path: Path) -> None:
    from tests.helpers.benchmark_fixtures import make_personamem

    make_personamem(path)


def _run(path: Path) -> None:
    """A finished run of the `longer` judge on the benchmark seed (kept beside it: the manifest names it)."""
    from tailorbench import api

    data = path.parent / "bench.jsonl"
    _jsonl(BENCH_ROWS)(data)
    api.eval(str(data), judge="longer", out=path, n_boot=10)


def _run_labels(path: Path) -> None:
    """People's labels (long format, three raters) on the cases of the run seed."""
    ids = sorted({json.loads(line)["case_id"] for line in (_built("run") / "predictions.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()})
    _jsonl([{"item": i, "rater": r, "label": "A" if (k + n) % 3 else "B"} for k, i in enumerate(ids)
            for n, r in enumerate(("ann1", "ann2", "ann3"))])(path)


def _estimate_sample(path: Path) -> None:
    """The sampling plan of `estimate sample` over the benchmark the run seed judged (every case drawn)."""
    data = path.parent / "bench.jsonl"
    _jsonl(BENCH_ROWS)(data)
    _cli("estimate", "sample", "--data", str(data), "--size", str(len(BENCH_ROWS)), "--out", str(path))


_BATCH_SPEC = "openai:gpt-4o-mini@http://127.0.0.1:9/v1"
_BATCH_FILE = hashlib.sha256(_BATCH_SPEC.encode()).hexdigest()[:16] + ".json"


def _batch_run(path: Path) -> None:
    """A finished run with a batch state file whose one batch has ended (status and cancel call nobody)."""
    from tailorbench.models.batch_state import STATE_DIR, VERSION, state_path

    _run(path)
    spec = _BATCH_SPEC
    (path / STATE_DIR).mkdir()
    state_path(path, spec).write_text(json.dumps({
        "version": VERSION, "spec": spec, "provider": "openai", "options": {},
        "entries": [{"chunk": "0", "status": "ended", "created": 1.0, "custom_ids": ["c0:AB", "c0:BA"],
                     "batch_id": "batch_1"}]}), encoding="utf-8")


def _annotation(path: Path) -> None:
    """An annotation folder (SQLite) with a pairwise project holding items, an annotator and a crowd study."""
    d = str(path)
    _cli("annotate", "project", "create", "study", "--task-type", "pairwise", "--n", "2", "--dir", d)
    _cli("annotate", "import", "study", str(ANNOTATION / "paircase.jsonl"), "--dir", d)
    _cli("annotate", "annotator", "add", "alice", "--project", "study", "--dir", d)
    _cli("annotate", "crowd", "create", "study", "--quota", "6", "--max-participants", "2", "--completion-code",
         "C1A2B3", "--dir", d)
    from tailorbench.annotation import studies
    from tailorbench.api.annotate import database

    db = database(path)
    secret = studies.link(db, 1, "http://127.0.0.1:8000").split("/s/")[1].split("?")[0]
    studies.enter(db, secret, studies.EntryParams(PARTICIPANT, "st1", "se1"))  # a participant has arrived


PARTICIPANT = "5f0c0ffee0c0ffee0c0ffee0"


def _finished_study(path: Path) -> None:
    _cli("study", "demo", str(path))


def _arena(path: Path) -> None:
    """An arena as `arena init --example` makes it (the illustrative model: no network)."""
    _cli("arena", "init", str(path), "--example")


def _finished_arena(path: Path) -> None:
    """The demo's arena after two simulated participants, and a crowd participant `ARENA_PARTICIPANT` who
    consented (what `arena delete --participant` names)."""
    from tailorbench.arena.store import ArenaStore

    _cli("arena", "demo", str(path), "--participants", "2")
    store = ArenaStore(f"sqlite:///{path / 'arena.sqlite'}")
    try:
        store.new_participant(ARENA_PARTICIPANT)
    finally:
        store.dispose()


ARENA_PARTICIPANT = "ARENAFUZZ1"


def _call_cache(path: Path) -> None:
    """The model call cache (a SQLite file) after the illustrative A/B judge answered the example's tasks."""
    _cli("stages", "judge-ab", "--tasks", str(EXAMPLE / "ab_tasks.jsonl"), "--model", "illustrative:judge", "--out",
         str(path.parent / "judged" / "ratings.jsonl"))
    _copy_file(Path(os.environ["TAILORBENCH_CALL_CACHE"]), path)


def _stage_report(path: Path) -> None:
    _cli("stages", "example", "--out", str(path), "--n-boot", "10")


def _verifier(path: Path) -> None:
    path.mkdir()
    _cli("stages", "train-verifier", "--items", str(EXAMPLE / "stage1_items.jsonl"),
         "--human", str(EXAMPLE / "ann_1_task1.jsonl"), "--human", str(EXAMPLE / "ann_2_task1.jsonl"),
         "--human", str(EXAMPLE / "ann_3_task1.jsonl"), "--out", str(path / "v"), "--n-boot", "10")


def _classifier(path: Path) -> None:
    path.mkdir()
    _cli("stages", "train-relevance", "--items", str(EXAMPLE / "relevance_items.jsonl"),
         "--human", str(EXAMPLE / "ann_1_task3.jsonl"), "--human", str(EXAMPLE / "ann_2_task3.jsonl"),
         "--human", str(EXAMPLE / "ann_3_task3.jsonl"), "--out", str(path / "c"), "--n-boot", "10")


def _template(path: Path) -> None:
    path.write_text("Answer for this user.\n{{ prompt }}\n", encoding="utf-8")


def _refine_template(path: Path) -> None:
    path.write_text("<|system|>\nList what the user said about themselves.\n<|user|>\n{{ turns | tojson }}\n"
                    "Not these: {{ rejected | tojson }}\n", encoding="utf-8")


def _memory(path: Path) -> None:
    rows = [{"user_id": f"u{k % 3}", "id": f"m{k}", "text": f"I work night shifts and cook vegetarian food ({k})."}
            for k in range(6)]
    _jsonl(rows)(path)


def _potato_ab(path: Path) -> None:
    shutil.copytree(INTEROP / "potato2_ab_rating", path)


# --- the table ------------------------------------------------------------------------------------------------

_TASK1 = Fields(texts=("attr_judgments.*.judgment",), indices=("index",), required=("index", "annotator",
                "attr_judgments"), enums=("attr_judgments.*.judgment",))
_TASK3 = Fields(texts=("relevance_judgments.*.attribute",), indices=("index",),
                required=("index", "annotator", "relevance_judgments"))
_ITEMS1 = Fields(texts=("attributes.*",), indices=("index",), required=("index", "user_id", "attributes"))
_ITEMS2 = Fields(texts=("prompt", "attributes.*"), indices=("index", "prompt_index"),
                 required=("index", "user_id", "prompt", "attributes"))
_AB_TASKS = Fields(texts=("prompt", "generic", "personalized"),
                   required=("id", "prompt", "generic", "personalized", "attributes"))
_LONG = Fields(required=("item", "rater", "label"), enums=("group",))  # ids may be numbers
_RUN = {"manifest.json": Fields(ints=("seed",), texts=("judge",), enums=("run_kind",)),
        "predictions.jsonl": Fields(texts=("case_id", "judge"), required=("case_id", "order", "choice"),
                                    enums=("order", "choice", "setting"))}
_STUDY_YAML = Fields(ints=("stages.extraction.n", "stages.extraction.crowd.places", "stages.relevance.crowd.quota",
                           "statistics.n_boot", "statistics.min_shared"),
                     texts=("name", "models.extractor", "models.judges.j1", "inputs.conversations"),
                     required=("models", "inputs", "stages.extraction.crowd.completion_code"),
                     enums=("stages.extraction.crowd.kind",),
                     urls=("annotation.base_url",))
_ARENA_YAML = Fields(ints=("battles.per_participant", "battles.seed", "leaderboard.min_battles"),
                     texts=("name", "contestants.*.model", "contestants.*.name", "questions.pool.*"),
                     required=("contestants", "name"), enums=("crowd.kind", "battles.on_restart"))
_CONVERSATIONS = Fields(texts=("conversations.*.*.content",), required=("user_id", "conversations"),
                        enums=("conversations.*.*.role",))

SEEDS: dict[str, Seed] = {
    "bench": Seed("bench.jsonl", _jsonl(BENCH_ROWS), {"": _BENCH}),
    "pairs": Seed("pairs.jsonl", _copy_from(ANNOTATION / "pairwise.jsonl"),
                  {"": Fields(texts=("question", "answer_a", "answer_b"),
                              required=("id", "question", "answer_a", "answer_b"), enums=("split",))}),
    "ratings": Seed("ratings.jsonl", _jsonl(RATINGS_ROWS), {"": _LONG}),
    "ratings_csv": Seed("ratings.csv", _ratings_csv, {"": Fields(required=("item", "rater", "label"))}),
    "map": Seed("map.yaml", _text(yaml.safe_dump(_MAP, sort_keys=False)),
                {"": Fields(texts=("item", "a", "b", "left"))}),
    "train_config": Seed("rm.yaml", _text(yaml.safe_dump(_TRAIN, sort_keys=False)),
                         {"": Fields(ints=("epochs", "batch_size", "max_steps", "n_boot", "seed"),
                                     texts=("data", "model"), enums=("train_scope", "precision", "features.*"))}),
    "build": Seed("build", _build_config, {"config.yaml": Fields(
        ints=("seed", "retries", "profile.max_attributes", "questions.per_user"),
        texts=("name", "model", "memory", "users.*"), required=("model", "memory", "users"),
        enums=("questions.scenes.*",))}),
    "label_studio": Seed("export.json", _copy_from(INTEROP / "label_studio_foreign_pairwise.json"),
                         {"": Fields(required=("0.data",),
                                     enums=("0.annotations.0.result.0.value.selected",))}),
    "argilla_flat": Seed("records.json", _copy_from(INTEROP / "argilla_sdk_pairwise_records_flat.json"),
                         {"": Fields(enums=("0.choice.responses.0", "0.tb_task", "0.tb_swap"))}),
    "argilla_nested": Seed("records.json", _copy_from(INTEROP / "argilla_sdk_pairwise_records_nested.json"),
                           {"": Fields(enums=("0.responses.choice.0.value", "0.metadata.tb_task"))}),
    "potato": Seed("project", _copy_from(INTEROP / "potato2_pairwise"),
                   {"config.yaml": Fields(required=("annotation_schemes",),
                                          enums=("annotation_schemes.0.annotation_type",))}),
    "potato_ab": Seed("project", _potato_ab),
    "run": Seed("run", _run, _RUN),
    "batch_run": Seed("run", _batch_run, {f"batches/{_BATCH_FILE}": Fields(
        texts=("spec", "entries.*.batch_id"), required=("version", "spec", "entries", "entries.*.status"),
        enums=("entries.*.status",))}),
    "annotation": Seed("annotation", _annotation),
    "study": Seed("study", _study, {"study.yaml": _STUDY_YAML, "conversations.jsonl": _CONVERSATIONS}),
    "finished_study": Seed("study", _finished_study, {"study.yaml": _STUDY_YAML}),
    "arena": Seed("arena", _arena, {"arena.yaml": _ARENA_YAML}),
    "finished_arena": Seed("arena", _finished_arena, {"arena.yaml": _ARENA_YAML}),
    "run_labels": Seed("labels.jsonl", _run_labels, {"": _LONG}),
    "estimate_sample": Seed("sample.jsonl", _estimate_sample, {"": _BENCH}),
    "call_cache": Seed("cache.sqlite", _call_cache),
    "consent": Seed("consent.txt", _text("You agree to label pairs of answers.\n")),
    "memory": Seed("memory.jsonl", _memory, {"": Fields(texts=("text",), required=("user_id", "id", "text"))}),
    # PersonaMem's questions CSV and its shared contexts (the benchmark layout read by `eval --data`)
    "personamem": Seed("pm", _personamem, {"questions_32k.csv": Fields(
        positions=("end_index_in_shared_context",),  # CSV: every value is text, no wrong type
        required=("question_id", "shared_context_id", "end_index_in_shared_context", "correct_answer"))}),
    "stage_items": Seed("items.jsonl", _copy_from(EXAMPLE / "stage1_items.jsonl"), {"": _ITEMS1}),
    "relevance_items": Seed("items.jsonl", _copy_from(EXAMPLE / "relevance_items.jsonl"), {"": _ITEMS2}),
    "task1": Seed("ann_1_task1.jsonl", _copy_from(EXAMPLE / "ann_1_task1.jsonl"), {"": _TASK1}),
    "task1b": Seed("ann_2_task1.jsonl", _copy_from(EXAMPLE / "ann_2_task1.jsonl"), {"": _TASK1}),
    "task3": Seed("ann_1_task3.jsonl", _copy_from(EXAMPLE / "ann_1_task3.jsonl"), {"": _TASK3}),
    "task3b": Seed("ann_2_task3.jsonl", _copy_from(EXAMPLE / "ann_2_task3.jsonl"), {"": _TASK3}),
    "llm_votes": Seed("llm_relevance.jsonl", _copy_from(EXAMPLE / "illustrative-llm_relevance.jsonl"),
                      {"": Fields(texts=("items.*.attribute",), indices=("sample_index",),
                                  required=("model", "items"))}),
    "ab_tasks": Seed("ab_tasks.jsonl", _copy_from(EXAMPLE / "ab_tasks.jsonl"), {"": _AB_TASKS}),
    "ab_ratings": Seed("ab_ratings.jsonl", _copy_from(EXAMPLE / "ab_ratings.jsonl"), {"": _LONG}),
    "rm_scores": Seed("rm_scores.jsonl", _copy_from(EXAMPLE / "rm_scores.jsonl"),
                      {"": Fields(required=("item", "rater", "score"))}),
    "taxonomy": Seed("taxonomy.jsonl", _copy_from(EXAMPLE / "taxonomy_human.jsonl"),
                     {"": Fields(texts=("attribute", "category"), indices=("index",),
                                 required=("index", "attribute"))}),  # a category may be null
    "conversations": Seed("conversations.jsonl", _copy_from(EXAMPLE / "conversations.jsonl"), {"": _CONVERSATIONS}),
    "stage_report": Seed("reports", _stage_report),
    "verifier": Seed("verifier", _verifier),
    "classifier": Seed("classifier", _classifier),
    "template": Seed("template.jinja", _template),
    "refine_template": Seed("refine.jinja", _refine_template),
}

#: the valid invocations of every verb (`tailor --help`, recursively), with the exit codes a valid one may end in
RECIPES: dict[str, list[list[str]]] = {
    "eval": [["eval", "--data", "{bench}", "--judge", "longer", "--out", "{out}/run", "--n-boot", "10",
              "--no-progress"],
             ["eval", "--data", "{bench}", "--judge", "longer", "--setting", "rag", "--memory", "{memory}",
              "--out", "{out}/run", "--n-boot", "10", "--no-progress"],
             ["eval", "--data", "{personamem}/questions_32k.csv", "--judge", "first", "--task", "pairwise",
              "--out", "{out}/run", "--n-boot", "10", "--no-progress"],
             ["eval", "--resume", "{state:run}", "--n-boot", "10", "--no-progress"]],
    "report": [["report", "{run}", "--out", "{out}/report"], ["report", "{run}", "{run#2}", "--out", "{out}/r"]],
    "compare": [["compare", "{run}", "{run#2}", "--n-boot", "10"]],
    "agree": [["agree", "{ratings}", "--resamples", "10", "--out", "{out}/a.json"],
              ["agree", "{ratings_csv}", "--resamples", "10", "--out", "{out}/a.json"],
              ["agree", "{label_studio}", "--map", "{map}", "--resamples", "10", "--out", "{out}/a.json"]],
    "tiers": [["tiers", "{ratings}", "--items", "{pairs}", "--out", "{out}/b.jsonl", "--resamples", "10",
               "--min-ratings", "2"]],
    "train-rm": [["train-rm", "--config", "{train_config}", "--data", "{bench}", "--out", "{out}/rm",
                  "--no-progress"]],
    "gen-eval": [["gen-eval", "--model", "illustrative:gen", "--data", "{bench}", "--judge", "longer", "--out",
                  "{out}/g", "--per-tier", "1", "--n-boot", "10", "--validate-cases", "2", "--no-progress"],
                 ["gen-eval", "--model", "illustrative:gen", "--data", "{bench}", "--judge", "longer",
                  "--judge-run", "{run}", "--out", "{out}/g", "--per-tier", "1", "--n-boot", "10",
                  "--no-progress"]],
    "estimate runs": [["estimate", "runs", "{run}", "--proxy", "{run#2}", "--labels", "{run_labels}",
                       "--assume-uniform", "--out", "{out}/e.json"],
                      ["estimate", "runs", "{run}", "--proxy", "{run#2}", "--sample", "{estimate_sample}", "--out",
                       "{out}/e.json"]],
    "estimate plan": [["estimate", "plan", "{run}", "--proxy", "{run#2}", "--labels", "{run_labels}", "--out",
                       "{out}/plan.json"]],
    "estimate sample": [["estimate", "sample", "--data", "{bench}", "--share", "0.5", "--out", "{out}/s.jsonl"],
                        ["estimate", "sample", "--data", "demo", "--proxy", "{run}", "--share", "0.5", "--out",
                         "{out}/s.jsonl"]],
    "view": [["view", "{run}", "--bundle", "{out}/site", "--n-boot", "5"],
             ["view", "{run}", "{run#2}", "--port", "0", "--n-boot", "5"]],
    "data check": [["data", "check", "{bench}"]],
    "data convert": [["data", "convert", "{bench}", "--out", "{out}/c.jsonl"]],
    "data push": [["data", "push", "{bench}", "me/bench", "--license", "cc-by-4.0", "--dry-run", "{out}/hub"]],
    "cache stats": [["cache", "stats", "--path", "{state:call_cache}"]],
    "cache clear": [["cache", "clear", "--path", "{state:call_cache}", "--model-name", "illustrative:judge", "--yes"],
                    ["cache", "clear", "--path", "{state:call_cache}", "--older-than", "1d", "--yes"]],
    "annotate serve": [["annotate", "serve", "--dir", "{state:annotation}", "--port", "18000"]],
    "annotate import": [["annotate", "import", "study", "{pairs}", "--dir", "{state:annotation}"]],
    "annotate progress": [["annotate", "progress", "study", "--agreement", "--dir", "{state:annotation}"]],
    "annotate release": [["annotate", "release", "study", "--dir", "{state:annotation}"]],
    "annotate export": [["annotate", "export", "study", "--out", "{out}/e", "--dir", "{state:annotation}"],
                        ["annotate", "export", "study", "--out", "{out}/e", "--output-format", "label-studio",
                         "--predictions", "{run}", "--dir", "{state:annotation}"]],
    "annotate export-items": [["annotate", "export-items", "{bench}", "--task-type", "pairwise", "--output-format",
                               "label-studio", "--out", "{out}/ls"],
                              ["annotate", "export-items", "{bench}", "--task-type", "pairwise", "--output-format",
                               "argilla", "--predictions", "{run}", "--out", "{out}/p"]],
    "annotate import-labels": [["annotate", "import-labels", "{label_studio}", "--out", "{out}/r.jsonl"],
                               ["annotate", "import-labels", "{label_studio}", "--map", "{map}", "--out",
                                "{out}/r.jsonl"],
                               ["annotate", "import-labels", "{argilla_flat}", "--out", "{out}/r.jsonl"],
                               ["annotate", "import-labels", "{argilla_nested}", "--out", "{out}/r.jsonl"],
                               ["annotate", "import-labels", "{potato}", "--out", "{out}/r.jsonl"],
                               ["annotate", "import-labels", "{potato_ab}", "--out", "{out}/r.jsonl"]],
    "annotate project create": [["annotate", "project", "create", "second", "--task-type", "pairwise", "--dir",
                                 "{state:annotation}"]],
    "annotate project list": [["annotate", "project", "list", "--dir", "{state:annotation}"]],
    "annotate annotator add": [["annotate", "annotator", "add", "bob", "--project", "study", "--dir",
                                "{state:annotation}"]],
    "annotate annotator join": [["annotate", "annotator", "join", "alice", "--project", "study", "--dir",
                                 "{state:annotation}"]],
    "annotate annotator link": [["annotate", "annotator", "link", "alice", "--dir", "{state:annotation}"]],
    "annotate annotator deactivate": [["annotate", "annotator", "deactivate", "alice", "--dir",
                                       "{state:annotation}"]],
    "annotate annotator activate": [["annotate", "annotator", "activate", "alice", "--dir", "{state:annotation}"]],
    "annotate annotator list": [["annotate", "annotator", "list", "--dir", "{state:annotation}"]],
    "annotate crowd create": [["annotate", "crowd", "create", "study", "--quota", "6", "--max-participants", "2",
                               "--completion-code", "C9", "--consent", "@{consent}", "--dir", "{state:annotation}"]],
    "annotate crowd list": [["annotate", "crowd", "list", "--dir", "{state:annotation}"]],
    "annotate crowd participants": [["annotate", "crowd", "participants", "1", "--dir", "{state:annotation}"]],
    "annotate crowd link": [["annotate", "crowd", "link", "1", "--dir", "{state:annotation}"]],
    "annotate crowd close": [["annotate", "crowd", "close", "1", "--dir", "{state:annotation}"]],
    "annotate crowd release": [["annotate", "crowd", "release", "1", "--dir", "{state:annotation}"]],
    "annotate crowd reissue": [["annotate", "crowd", "reissue", "5f0c0ffee0c0ffee0c0ffee0", "--study", "1", "--dir",
                                "{state:annotation}"]],
    "stages report-relevance": [["stages", "report-relevance", "--human", "{task3}", "--human", "{task3b}",
                                 "--model", "{llm_votes}", "--items", "{relevance_items}", "--min-shared", "2",
                                 "--min-items", "3", "--resamples", "10", "--out", "{out}/rel.json", "--report",
                                 "{out}/rep"]],
    "stages report-extraction": [["stages", "report-extraction", "--items", "{stage_items}", "--human", "{task1}",
                                  "--human", "{task1b}", "--taxonomy", "{taxonomy}", "--resamples", "10", "--out",
                                  "{out}/ex.json", "--report", "{out}/rep"]],
    "stages report-incorporation": [["stages", "report-incorporation", "--tasks", "{ab_tasks}", "--ratings",
                                     "{ab_ratings}", "--scores", "{rm_scores}", "--resamples", "10", "--out",
                                     "{out}/inc.json", "--report", "{out}/rep"]],
    "stages summary": [["stages", "summary", "{state:stage_report}"]],
    "stages train-verifier": [["stages", "train-verifier", "--items", "{stage_items}", "--human", "{task1}",
                               "--human", "{task1b}", "--out", "{out}/v", "--resamples", "10"]],
    "stages train-relevance": [["stages", "train-relevance", "--items", "{relevance_items}", "--human", "{task3}",
                                "--human", "{task3b}", "--model", "{llm_votes}", "--out", "{out}/c",
                                "--resamples", "10"]],
    "stages baseline": [["stages", "baseline", "--items", "{relevance_items}", "--human", "{task3}", "--human",
                         "{task3b}", "--out", "{out}/votes.jsonl"]],
    "stages export-relevance": [["stages", "export-relevance", "--items", "{relevance_items}", "--out",
                                 "{out}/tasks.jsonl"]],
    "stages generate": [["stages", "generate", "--items", "{relevance_items}", "--human", "{task3}", "--model",
                         "illustrative:gen", "--out", "{out}/gen"],
                        ["stages", "generate", "--items", "{relevance_items}", "--predicted", "{llm_votes}",
                         "--model", "illustrative:gen", "--personalized-template", "{template}",
                         "--generic-template", "{template#2}", "--out", "{out}/gen"]],
    "stages judge-relevance": [["stages", "judge-relevance", "--items", "{relevance_items}", "--model",
                                "illustrative:judge", "--out", "{out}/votes.jsonl"]],
    "stages extract": [["stages", "extract", "--conversations", "{conversations}", "--model",
                        "illustrative:extractor", "--out", "{out}/items.jsonl"]],
    "stages export-tasks": [["stages", "export-tasks", "--items", "{stage_items}", "--out", "{out}/tasks.jsonl"]],
    "stages categorise": [["stages", "categorise", "--items", "{stage_items}", "--human", "{task1}", "--model",
                           "illustrative:judge", "--out", "{out}/taxonomy.jsonl"]],
    "stages judge-ab": [["stages", "judge-ab", "--tasks", "{ab_tasks}", "--model", "illustrative:judge", "--out",
                         "{out}/ratings.jsonl"]],
    "stages example": [["stages", "example", "--out", "{out}/ex", "--n-boot", "10", "--no-interventions"]],
    "stages verify": [["stages", "verify", "--items", "{stage_items}", "--verifier", "{verifier}/v/verifier.npz",
                       "--out", "{out}/kept.jsonl"],
                      ["stages", "verify", "--items", "{stage_items}", "--verifier", "{verifier}/v/verifier.npz",
                       "--model", "illustrative:extractor", "--template", "{refine_template}", "--out",
                       "{out}/kept.jsonl"]],
    "stages classify-relevance": [["stages", "classify-relevance", "--items", "{relevance_items}", "--classifier",
                                   "{classifier}/c/relevance_classifier.npz", "--out", "{out}/votes.jsonl"]],
    "build run": [["build", "run", "{build}/config.yaml", "--out", "{out}/b", "--until", "profile"]],
    "batch status": [["batch", "status", "{batch_run}", "--no-live"]],
    "batch cancel": [["batch", "cancel", "{state:batch_run}"]],
    "study init": [["study", "init", "{out}/s"]],
    "study plan": [["study", "plan", "{study}"], ["study", "plan", "{finished_study}"]],
    "study run": [["study", "run", "{state:study}"],
                  ["study", "run", "{state:study}", "--watch", "--interval", "0.05", "--max-wait", "0.1"]],
    "study status": [["study", "status", "{finished_study}"], ["study", "status", "{study}"]],
    "study report": [["study", "report", "{state:finished_study}"]],
    "study demo": [["study", "demo", "{out}/d"]],
    "ls": [["ls"], ["ls", "judges", "--json"], ["ls", "suites"]],
    "arena init": [["arena", "init", "{out}/a"], ["arena", "init", "{out}/a", "--example", "--json"]],
    "arena plan": [["arena", "plan", "{arena}"], ["arena", "plan", "{finished_arena}", "--json"]],
    "arena run": [["arena", "run", "{state:arena}", "--port", "18001"]],
    "arena status": [["arena", "status", "{finished_arena}"], ["arena", "status", "{finished_arena}", "--json"]],
    "arena leaderboard": [["arena", "leaderboard", "{state:finished_arena}"],
                          ["arena", "leaderboard", "{state:finished_arena}", "--out", "{out}/lb", "--reveal-ids"]],
    "arena delete": [["arena", "delete", "{state:finished_arena}", "--participant", ARENA_PARTICIPANT]],
    "arena demo": [["arena", "demo", "{out}/d", "--participants", "2"]],
    "arena export": [["arena", "export", "{state:finished_arena}", "--out", "{out}/arena.jsonl"],
                     ["arena", "export", "{state:finished_arena}", "--out", "{out}/items.jsonl", "--output-format",
                      "annotate", "--reveal-ids", "--json"]],
}

#: exit codes a valid invocation may end in, where not 0 alone (a stage that makes nothing of an illustrative model)
VALID_EXITS: dict[str, tuple[int, ...]] = {"build run": (0, 3)}

#: options that take a file, a folder or a config but are not fuzzed, each with why
NOT_FUZZED: dict[tuple[str, str], str] = {
    ("eval", "--data-root"): "the hub cache root of a hub benchmark (read offline only when already cached)",
    ("eval", "--out"): "the output",
    ("report", "--out"): "the output",
    ("agree", "--out"): "the output",
    ("agree", "--tier-file"): "the output (tiers.json written beside the ratings)",
    ("tiers", "--out"): "the output",
    ("tiers", "--map"): "the --map reader of `agree` (interop/mapping.py), fuzzed there",
    ("train-rm", "--out"): "the output",
    ("gen-eval", "--out"): "the output",
    ("gen-eval", "--resume"): "a gen-eval run directory resumed: its readers are fuzzed through `eval --resume`",
    ("gen-eval", "--memory"): "the memory file of the rag setting: fuzzed through `eval --memory`",
    ("gen-eval", "--data-root"): "the hub cache root of a hub benchmark",
    ("view", "--bundle"): "the output",
    ("estimate runs", "--versus"): "a second run directory: the run reader of RUN and --proxy",
    ("estimate runs", "--out"): "the output",
    ("estimate plan", "--versus"): "a second run directory: the run reader of RUN and --proxy",
    ("estimate plan", "--out"): "the output",
    ("estimate sample", "--out"): "the output",
    ("estimate sample", "--dir"): "the annotation folder --project creates and imports the plan into "
                                  "(annotate import is fuzzed)",
    ("data convert", "--out"): "the output",
    ("data push", "--dry-run"): "the output",
    ("stages report-relevance", "--export"): "the annotation service's export: the same long format as --human's",
    ("stages report-relevance", "--votes"): "the same file format as --model",
    ("stages report-relevance", "--out"): "the output",
    ("stages report-relevance", "--report"): "the output",
    ("stages report-extraction", "--export"): "the annotation service's export: the long rating format",
    ("stages report-extraction", "--out"): "the output",
    ("stages report-extraction", "--report"): "the output",
    ("stages report-incorporation", "--out"): "the output",
    ("stages report-incorporation", "--report"): "the output",
    ("stages train-verifier", "--export"): "the long rating format, fuzzed through `stages report-extraction`",
    ("stages train-verifier", "--out"): "the output",
    ("stages train-relevance", "--export"): "the long rating format",
    ("stages train-relevance", "--votes"): "the same file format as --model",
    ("stages train-relevance", "--out"): "the output",
    ("stages baseline", "--out"): "the output",
    ("stages export-relevance", "--out"): "the output",
    ("stages generate", "--export"): "the long rating format",
    ("stages generate", "--out"): "the output",
    ("stages judge-relevance", "--out"): "the output",
    ("stages extract", "--out"): "the output",
    ("stages export-tasks", "--out"): "the output",
    ("stages categorise", "--out"): "the output",
    ("stages judge-ab", "--out"): "the output",
    ("stages example", "--out"): "the output",
    ("stages verify", "--out"): "the output",
    ("stages classify-relevance", "--out"): "the output",
    ("build run", "--out"): "the output",
    ("annotate export", "--out"): "the output",
    ("annotate export-items", "--out"): "the output",
    ("annotate import-labels", "--out"): "the output",

}

#: option names that take a file, a folder or a config though their type is text
FILE_OPTIONS = frozenset({"--data", "--config", "--items", "--human", "--map", "--memory", "--consent", "--path",
                          "--dir", "--tasks", "--ratings", "--scores", "--conversations", "--verifier",
                          "--classifier", "--template", "--predictions", "--taxonomy", "--predicted"})


_TMP: list[Path] = []


@cache
def _seed_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="tb-fuzz-seeds-"))
    _TMP.append(root)
    return root


@cache
def _built(kind: str) -> Path:
    """The seed of `kind`, built once per process (under its own folder: a folder seed may leave files beside)."""
    home = _seed_root() / kind
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    (home / ".build-src").mkdir()
    built = home / ".build-src" / SEEDS[kind].name
    path = home / SEEDS[kind].name
    cache_file = home / "calls.sqlite"
    before = os.environ.get("TAILORBENCH_CALL_CACHE")
    os.environ["TAILORBENCH_CALL_CACHE"] = str(cache_file)
    try:
        SEEDS[kind].build(built)
        _settle(built, path)
    finally:
        if before is None:
            os.environ.pop("TAILORBENCH_CALL_CACHE", None)
        else:
            os.environ["TAILORBENCH_CALL_CACHE"] = before
    return path


def _settle(source: Path, target: Path) -> None:
    """A still copy of a freshly built seed: SQLite databases (which this process may still hold open, their
    write-ahead log beside them) copied through SQLite's backup into one file, so no copy changes afterwards."""
    if source.is_file():
        _copy_file(source, target)
        return
    target.mkdir()
    for path in sorted(source.rglob("*")):
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(exist_ok=True)
        elif not path.name.endswith(("-wal", "-shm", "-journal")):
            _copy_file(path, dest)


def _copy_file(source: Path, target: Path) -> None:
    if source.read_bytes()[:16] == b"SQLite format 3\x00":
        with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
            src.backup(dst)
        with closing(sqlite3.connect(target)) as dst:
            dst.execute("PRAGMA journal_mode=WAL")  # as the package opens it (a reader changes nothing then)
    else:
        shutil.copy2(source, target)


def place(kind: str, target: Path) -> None:
    """A fresh copy of the seed of `kind` at `target`."""
    source = _built(kind)
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copyfile(source, target)


def cleanup() -> None:
    for root in _TMP:
        shutil.rmtree(root, ignore_errors=True)
