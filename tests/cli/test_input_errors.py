"""Every bad input is one clear `error: ...` line and exit code 2, found before any work, and nothing already
stored is damaged (issue: "every input error a clear message"). Each case runs the real CLI in process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailorbench.cli.app import app
from tailorbench.evaluate.results import compute_results, load_results
from tests.helpers.pf_data import make_hub, make_mirror, native_row, write_jsonl

runner = CliRunner()


def _tailor(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is a failure of this suite, never an acceptable answer
    return result.exit_code, result.stdout, result.stderr


def _bad(*args: str, says: tuple[str, ...] = ()) -> str:
    code, _, err = _tailor(*args)
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for text in says:
        assert text in err, err
    return err


def _run(tmp_path: Path, name: str = "run", *extra: str) -> Path:
    out = tmp_path / name
    code, _, err = _tailor("eval", "--data", "demo", "--judge", "longer", "--limit", "4", "--n-boot", "20",
                           "--no-progress", "--out", str(out), *extra)
    assert code == 0, err
    return out


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
            and p.name != "run.lock"}


# --- resume ------------------------------------------------------------------------------------------------

def test_resume_on_a_parent_of_several_runs_names_them(tmp_path: Path) -> None:
    code, _, err = _tailor("eval", "--data", "demo", "--judge", "longer", "--judge", "first", "--limit", "3",
                           "--n-boot", "20", "--no-progress", "--out", str(tmp_path / "matrix"))
    assert code == 0, err
    _bad("eval", "--resume", str(tmp_path / "matrix"), says=("holds 2 runs", "first__persona", "--resume"))


def test_resume_on_a_missing_directory(tmp_path: Path) -> None:
    _bad("eval", "--resume", str(tmp_path / "nope"), says=("no such run directory",))
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("damage", ["corrupt line", "not an object", "no case_id"])
def test_resume_on_a_corrupt_predictions_line_names_it_and_changes_nothing(tmp_path: Path, damage: str) -> None:
    run = _run(tmp_path)
    path = run / "predictions.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    bad = {"corrupt line": b'{"case_id": "x", \n', "not an object": b"[1]\n",
           "no case_id": b'{"order": "AB"}\n'}[damage]
    path.write_bytes(lines[0] + bad + b"".join(lines[1:]) + b'{"torn')
    before = _snapshot(run)
    err = _bad("eval", "--resume", str(run), says=(f"{path}:2",))
    if damage == "no case_id":
        assert "'case_id'" in err
    assert _snapshot(run) == before  # not even the torn last line is cut while a line is bad


@pytest.mark.parametrize("manifest", [None, b"{not json", b"[1, 2]", b'{"judge": "longer"}',
                                      b'{"config": {"n_boot": "many"}}'])
def test_resume_on_a_missing_or_corrupt_manifest(tmp_path: Path, manifest: bytes | None) -> None:
    run = _run(tmp_path)
    path = run / "manifest.json"
    if manifest is None:
        path.unlink()
    else:
        path.write_bytes(manifest)
    before = _snapshot(run)
    _bad("eval", "--resume", str(run), says=(str(run),))
    assert _snapshot(run) == before


def test_resume_from_another_directory_after_a_relative_data_path(tmp_path: Path) -> None:
    bench = write_jsonl(tmp_path / "data" / "bench.jsonl",
                        [native_row(id=f"c{k}", question=f"Q{k}?") for k in range(3)])
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        code, _, err = _tailor("eval", "--data", "data/bench.jsonl", "--judge", "longer", "--n-boot", "20",
                               "--no-progress", "--out", "run")
    finally:
        os.chdir(cwd)
    assert code == 0, err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["data"] == str(bench.resolve()) and manifest["config"]["data"] == str(bench.resolve())
    (tmp_path / "run" / "results.json").unlink()
    code, _, err = _tailor("eval", "--resume", str(tmp_path / "run"), "--no-progress")  # from the repo root
    assert code == 0, err
    demo = json.loads((_run(tmp_path, "demo_run") / "manifest.json").read_text())
    assert demo["data"] == "demo"


# --- numeric and judge options, checked before any work -----------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["--n-boot", "0"], "--n-boot"),
    (["--n-boot", "-5"], "--n-boot"),
    (["--limit", "0"], "--limit"),
    (["--batch-size", "0"], "--batch-size"),
    (["--top-k", "0", "--setting", "rag"], "--top-k"),
    (["--judge-option", "batch_size=abc"], "batch_size"),
    (["--judge-option", "batch_size=0"], "batch_size"),
    (["--judge-option", "temperature=0"], "it takes only batch_size"),
    (["--judge", "first", "--judge-option", "x=1"], "it takes only batch_size"),
    (["--judge", "random:abc"], "random:SEED"),
    (["--judge", "longer:5"], "takes no argument"),
    (["--judge", "longer[batch_size=-1]"], "batch_size"),
    (["--orders", "sideways"], "--orders"),
    (["--ci-unit", "item"], "--ci-unit"),
    (["--persona-sections", "Nonexistent"], "Demographics"),
    (["--split", "weird"], "split"),
])
def test_bad_options_exit_2_before_any_verdict(tmp_path: Path, args: list[str], says: str) -> None:
    out = tmp_path / "run"
    _bad("eval", "--data", "demo", "--limit", "4", "--no-progress", "--out", str(out), *args, says=(says,))
    assert not (out / "predictions.jsonl").exists()


@pytest.mark.parametrize(("judge", "option"), [
    ("rm:/nonexistent/model", "temperature=0"),
    ("embedding", "template=x.jinja"),
    ("rm:/nonexistent/model", "rm_batch_size=0"),
    ("rm:/nonexistent/model", "precision=fp64"),
    ("embedding", "max_length=abc"),
    ("llm:openai:m@http://127.0.0.1:9/v1", "batch_size=abc"),
    ("llm:openai:m@http://127.0.0.1:9/v1", "max_tokens=-1"),
    ("llm:openai:m@http://127.0.0.1:9/v1", "temperature=hot"),
])
def test_every_judge_checks_its_options_the_same_way(tmp_path: Path, judge: str, option: str) -> None:
    key = option.split("=")[0]
    err = _bad("eval", "--data", "demo", "--limit", "2", "--no-progress", "--judge", judge, "--judge-option",
               option, "--out", str(tmp_path / "run"), says=(key,))
    if key in ("temperature", "template") and not judge.startswith("llm"):
        assert "known: " in err  # an unknown key names the known ones


def test_a_run_that_never_started_is_not_left_finished(tmp_path: Path) -> None:
    """--n-boot 0 used to be found only after every verdict was judged, leaving a finished run without results."""
    out = tmp_path / "run"
    _bad("eval", "--data", "demo", "--n-boot", "0", "--no-progress", "--out", str(out))
    assert not out.exists()


# --- outputs that cannot be written ------------------------------------------------------------------------

def _ratings(tmp_path: Path, raters: int = 3) -> tuple[Path, Path]:
    items = write_jsonl(tmp_path / "items.jsonl", [
        {"id": f"p{k}", "split": "general", "user_id": "u", "persona": {}, "question": f"q{k}?",
         "answer_a": f"a{k}", "answer_b": f"b{k}"} for k in range(4)])
    ratings = write_jsonl(tmp_path / "ratings.jsonl", [
        {"item": f"p{k}", "rater": f"r{r}", "label": "A" if (k + r) % 3 else "B"}
        for k in range(4) for r in range(raters)])
    return items, ratings


@pytest.mark.parametrize("verb", ["eval", "agree", "tiers"])
def test_an_out_that_cannot_be_written_is_refused_before_work(tmp_path: Path, verb: str) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me\n")
    out = blocker / "sub" / ("run" if verb == "eval" else "out.json")
    items, ratings = _ratings(tmp_path)
    args = {"eval": ["eval", "--data", "demo", "--limit", "2", "--no-progress", "--out", str(out)],
            "agree": ["agree", str(ratings), "--resamples", "10", "--out", str(out)],
            "tiers": ["tiers", str(ratings), "--items", str(items), "--resamples", "10", "--out", str(out)]}[verb]
    _bad(*args, says=("--out", str(out)))
    assert blocker.read_text() == "keep me\n"


def test_an_out_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    items, ratings = _ratings(tmp_path)
    (tmp_path / "dir").mkdir()
    _bad("agree", str(ratings), "--out", str(tmp_path / "dir"), says=("is a directory",))
    _bad("eval", "--data", "demo", "--out", str(items), "--no-progress", says=("is a file",))


def test_tiers_with_one_rater_does_not_overwrite_out(tmp_path: Path) -> None:
    items, ratings = _ratings(tmp_path, raters=1)
    out = tmp_path / "bench.jsonl"
    out.write_text("precious\n")
    _bad("tiers", str(ratings), "--items", str(items), "--out", str(out), "--resamples", "10",
         says=("no item has a tier", "fewer than 3 ratings", "not written"))
    assert out.read_text() == "precious\n"
    items, ratings = _ratings(tmp_path, raters=3)
    code, _, err = _tailor("tiers", str(ratings), "--items", str(items), "--out", str(out), "--resamples", "10")
    assert code == 0 and len(out.read_text().splitlines()) == 4, err


# --- data ------------------------------------------------------------------------------------------------------

def test_duplicate_explicit_ids_in_mirror_rows_name_both_places(tmp_path: Path) -> None:
    root = make_mirror(tmp_path / "mirror")
    easy, hard = root / "general_easy.jsonl", root / "general_hard.jsonl"
    first = [dict(json.loads(line), id="same") for line in easy.read_text().splitlines()][:1]
    write_jsonl(easy, first + [json.loads(line) for line in easy.read_text().splitlines()][1:])
    write_jsonl(hard, [dict(json.loads(line), id="same" if k == 1 else f"h{k}")
                       for k, line in enumerate(hard.read_text().splitlines())])
    _bad("data", "check", str(root), says=(f"{hard}:2", f"{easy}:1", "duplicate id 'same'"))


def test_duplicate_explicit_ids_in_hub_rows_name_both_places(tmp_path: Path) -> None:
    root = make_hub(tmp_path / "hub")
    path = root / "data" / "general" / "easy.jsonl"
    rows = [dict(json.loads(line), id="twice") for line in path.read_text().splitlines()]
    write_jsonl(path, rows)
    _bad("data", "check", str(root), says=(f"{path}:2", f"{path}:1", "duplicate id 'twice'"))


@pytest.mark.parametrize("layout", ["native", "hub", "mirror"])
def test_a_persona_nested_100000_levels_deep_is_a_data_error(tmp_path: Path, layout: str) -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    shallow_deep = json.loads('{"a": ' * 200 + "1" + "}" * 200)  # parses, but is no persona
    if layout == "native":
        path = tmp_path / "bench.jsonl"
        row = json.dumps(native_row(id="ok")) + "\n"
        path.write_text(row + json.dumps(native_row(id="deep"))[:-1] + ', "persona": ' + deep + "}\n")
        _bad("data", "check", str(path), says=(f"{path}:2",))
        path.write_text(row + json.dumps(native_row(id="deep", persona=shallow_deep)) + "\n")
        _bad("data", "check", str(path), says=(f"{path}:2", "'persona'", "levels deep"))
    elif layout == "hub":
        root = make_hub(tmp_path / "hub")
        personas = root / "persona" / "all_personas.jsonl"
        personas.write_text(personas.read_text() + json.dumps({"user_id": "deep", **shallow_deep}) + "\n")
        _bad("data", "check", str(root), says=(f"{personas}:3", "levels deep"))
    else:
        root = make_mirror(tmp_path / "mirror")
        path = root / "persona_all" / "Deep_1.json"
        path.write_text(deep)
        _bad("data", "check", str(root), says=(str(path), "nested too deeply"))
        path.write_text(json.dumps(shallow_deep))
        _bad("data", "check", str(root), says=(str(path), "levels deep"))


# --- report ----------------------------------------------------------------------------------------------------

def test_report_never_trusts_a_stale_results_json(tmp_path: Path) -> None:
    run = _run(tmp_path)
    stored = json.loads((run / "results.json").read_text())
    assert stored["predictions_sha256"] and load_results(run)["metrics"] == stored["metrics"]
    # predictions change behind results.json's back: every row now wrong
    path = run / "predictions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "correct": False, "choice": "B" if r["order"] == "AB" else "A",
                                        "status": "ok"}) + "\n" for r in rows))
    code, out, err = _tailor("report", str(run), "--out", str(tmp_path / "board"), "--json")
    assert code == 0, err
    board = json.loads(out)[0]
    assert board["metrics"]["all"]["accuracy"] == 0.0 == compute_results(run)["metrics"]["all"]["accuracy"]
    (run / "results.json").write_text("{torn")
    assert load_results(run)["metrics"]["all"]["accuracy"] == 0.0


def test_compare_checks_n_boot_first(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _bad("compare", str(run), str(run), "--n-boot", "0", says=("--n-boot",))


@pytest.mark.parametrize("what", ["file", "missing", "empty", "corrupt"])
def test_report_refuses_what_is_not_a_run(tmp_path: Path, what: str) -> None:
    """(A folder of runs is the runs in it: tests/cli/test_run_folders.py.)"""
    run = _run(tmp_path, "runs/x")
    target = {"file": run / "report.md", "missing": tmp_path / "nope", "empty": tmp_path / "empty",
              "corrupt": run}[what]
    if what == "corrupt":
        (run / "manifest.json").write_text("{")
    if what == "empty":
        target.mkdir()
    _bad("report", str(target), "--out", str(tmp_path / "board"), says=(str(target),))


# --- configs ---------------------------------------------------------------------------------------------------

def test_train_config_accepts_scientific_notation_and_names_bad_fields(tmp_path: Path) -> None:
    from tailorbench.train.config import load_config

    good = tmp_path / "rm.yaml"
    good.write_text("data: demo\nout: runs/rm\nlearning_rate: 5e-5\nngram_l2: 1.7e-4\nmax_steps: 1e2\n")
    config = load_config(good)
    assert config.learning_rate == 5e-5 and config.ngram_l2 == 1.7e-4 and config.max_steps == 100
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: demo\nout: runs/rm\nepochs: two\n")
    _bad("train-rm", "--config", str(bad), says=(str(bad), "epochs"))
    bad.write_text("data: demo\nout: runs/rm\nfeatures: length\n")
    _bad("train-rm", "--config", str(bad), says=("features", "list"))


# --- every verb: numeric and choice options, config fields, KEY=VALUE options and --out, before any work ----

_SERVER = "openai:m@http://127.0.0.1:9/v1"  # nothing listens there: a call would fail, not hang
_GEN_EVAL = ["gen-eval", "--model", _SERVER, "--data", "demo", "--no-progress", "--out", "{out}"]


def _verb_cases() -> list[tuple[list[str], str]]:
    """(arguments with {out} / {tmp} placeholders, text the error must contain): each a different check."""
    items, model = ["--items", "{tmp}/items.jsonl"], ["--model", _SERVER]
    cases: list[tuple[list[str], str]] = [
        # gen-eval
        ([*_GEN_EVAL, "--per-tier", "0"], "--per-tier"),
        ([*_GEN_EVAL, "--n-boot", "0"], "--n-boot"),
        ([*_GEN_EVAL, "--temperature", "-1"], "--temperature"),
        ([*_GEN_EVAL, "--temperature", "nan"], "--temperature"),
        ([*_GEN_EVAL, "--max-tokens", "0"], "--max-tokens"),
        ([*_GEN_EVAL, "--batch-size", "0"], "--batch-size"),
        ([*_GEN_EVAL, "--validate-cases", "-1"], "--validate-cases"),
        ([*_GEN_EVAL, "--setting", "rag", "--top-k", "0"], "--top-k"),
        ([*_GEN_EVAL, "--max-failed", "1.5"], "--max-failed"),
        ([*_GEN_EVAL, "--model-option", "concurrency=0"], "concurrency"),
        ([*_GEN_EVAL, "--model-option", "timeout=abc"], "timeout"),
        ([*_GEN_EVAL, "--model-option", "max_retries=-1"], "max_retries"),
        ([*_GEN_EVAL, "--reference", _SERVER, "--model-option", "color=red"], "color"),
        ([*_GEN_EVAL, "--judge-option", "batch_size=0"], "batch_size"),
        ([*_GEN_EVAL, "--judge", "llm:" + _SERVER, "--judge-option", "max_tokens=-1"], "max_tokens"),
        # stages
        (["stages", "report-relevance", "--min-shared", "0", "--out", "{out}"], "--min-shared"),
        (["stages", "report-relevance", "--resamples", "0", "--out", "{out}"], "--resamples"),
        (["stages", "report-relevance", "--report", "{out}", "--resamples", "-2"], "--resamples"),
        (["stages", "baseline", *items, "--out", "{out}", "--eval-fraction", "1"], "--eval-fraction"),
        (["stages", "baseline", *items, "--out", "{out}", "--eval-fraction", "nan"], "--eval-fraction"),
        (["stages", "baseline", *items, "--out", "{out}", "--val-fraction", "0"], "--val-fraction"),
        (["stages", "baseline", *items, "--out", "{out}", "--method", "tfidf"], "--method"),
        (["stages", "generate", *items, *model, "--out", "{out}", "--temperature", "-0.5"], "--temperature"),
        (["stages", "generate", *items, *model, "--out", "{out}", "--max-tokens", "0"], "--max-tokens"),
        (["stages", "generate", *items, *model, "--out", "{out}", "--condition", "golden"], "--condition"),
        (["stages", "generate", *items, *model, "--out", "{out}", "--model-option", "concurrency=0"],
         "concurrency"),
        (["stages", "judge-relevance", *items, *model, "--out", "{out}", "--model-option", "max_retries=-1"],
         "max_retries"),
        (["stages", "report-extraction", *items, "--resamples", "0", "--out", "{out}"], "--resamples"),
        (["stages", "report-incorporation", "--tasks", "{tmp}/t.jsonl", "--resamples", "-1", "--out", "{out}"],
         "--resamples"),
        (["stages", "extract", "--conversations", "{tmp}/c.jsonl", *model, "--out", "{out}", "--model-option",
          "timeout=0"], "timeout"),
        (["stages", "judge-ab", "--tasks", "{tmp}/t.jsonl", *model, "--out", "{out}", "--model-option",
          "concurrency=abc"], "concurrency"),
        (["stages", "example", "--out", "{out}", "--resamples", "0"], "--resamples"),
        (["stages", "train-verifier", *items, "--out", "{out}", "--eval-fraction", "0"], "--eval-fraction"),
        (["stages", "train-verifier", *items, "--out", "{out}", "--l2", "0"], "--l2"),
        (["stages", "train-verifier", *items, "--out", "{out}", "--threshold", "1.5"], "--threshold"),
        (["stages", "train-relevance", *items, "--out", "{out}", "--l2", "nan"], "--l2"),
        (["stages", "train-relevance", *items, "--out", "{out}", "--test-fraction", "1.2"], "--eval-fraction"),
        (["stages", "train-relevance", *items, "--out", "{out}", "--resamples", "0"], "--resamples"),
        (["stages", "verify", *items, "--verifier", "{tmp}/v.npz", "--out", "{out}", "--rounds", "-1"], "--rounds"),
        # annotate (checked before the database is opened, so not even annotate.sqlite is created)
        (["annotate", "project", "create", "p", "--task", "pairwise", "--n", "0", "--dir", "{out}"], "--n"),
        (["annotate", "project", "create", "p", "--task", "pairwise", "--gold-every", "0", "--dir", "{out}"],
         "--gold-every"),
        (["annotate", "project", "create", "p", "--task-type", "ranking", "--dir", "{out}"], "--task-type"),
        (["annotate", "import", "p", "{tmp}/items.jsonl", "--input-format", "xml", "--dir", "{out}"],
         "--input-format"),
        (["annotate", "release", "p", "--older-than", "-1", "--dir", "{out}"], "--older-than"),
        (["annotate", "release", "p", "--older-than", "nan", "--dir", "{out}"], "--older-than"),
        (["annotate", "release", "p", "--older-than-hours", "-1", "--dir", "{out}"], "--older-than"),
        (["annotate", "serve", "--port", "0", "--dir", "{out}"], "--port"),
        (["annotate", "export", "p", "--out", "{out}", "--easy", "1.5", "--dir", "{tmp}/db"], "--easy"),
        (["annotate", "export", "p", "--out", "{out}", "--medium", "nan", "--dir", "{tmp}/db"], "--medium"),
        (["annotate", "export", "p", "--out", "{out}", "--medium", "0.9", "--dir", "{tmp}/db"], "medium <= easy"),
        (["annotate", "export", "p", "--out", "{out}", "--min-ratings", "1", "--dir", "{tmp}/db"], "--min-ratings"),
        # agree, tiers
        (["agree", "{tmp}/ratings.jsonl", "--level", "1", "--out", "{out}"], "--level"),
        (["tiers", "{tmp}/ratings.jsonl", *items, "--easy", "nan", "--out", "{out}"], "--easy"),
    ]
    return cases


@pytest.mark.parametrize(("args", "says"), _verb_cases(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_every_verb_checks_its_options_before_any_work(tmp_path: Path, args: list[str], says: str) -> None:
    out = tmp_path / "out"
    filled = [a.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for a in args]
    err = _bad(*filled, says=(says,))
    assert err.count("\n") == 1, err  # one line
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))  # nothing written, not even the directory
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("verb", [
    [*_GEN_EVAL],
    ["stages", "report-relevance", "--out", "{out}/r.json"],
    ["stages", "generate", "--items", "{tmp}/i.jsonl", "--model", _SERVER, "--out", "{out}/gen"],
    ["stages", "export-tasks", "--items", "{tmp}/i.jsonl", "--out", "{out}/tasks.jsonl"],
    ["stages", "classify-relevance", "--items", "{tmp}/i.jsonl", "--classifier", "{tmp}/c.npz", "--out",
     "{out}/v.jsonl"],
    ["stages", "train-verifier", "--items", "{tmp}/i.jsonl", "--out", "{out}/verifier"],
    ["annotate", "export", "p", "--out", "{out}/export", "--dir", "{tmp}/db"],
])
def test_every_verb_refuses_an_out_that_cannot_be_written(tmp_path: Path, verb: list[str]) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me\n")
    out = blocker / "sub"
    filled = [a.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for a in verb]
    _bad(*filled, says=("--out", str(out)))
    assert blocker.read_text() == "keep me\n"
    assert not (tmp_path / "db").exists()


def _build_config(tmp_path: Path, out: Path, **changes: str) -> Path:
    """A build config (the small example's shape) with some lines replaced: `generation="{...}"`."""
    lines = {"name": "t", "model": _SERVER, "model_options": "{max_retries: 1}", "memory":
             str(Path(__file__).parents[2] / "examples" / "construction" / "memory.jsonl"), "out": str(out),
             "generation": "{temperature: 0.0, max_tokens: 400}", **changes}
    path = tmp_path / "build.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in lines.items()))
    return path


@pytest.mark.parametrize(("changes", "says"), [
    ({"generation": "{temperature: -1}"}, "generation.temperature"),
    ({"generation": "{temperature: .nan}"}, "generation.temperature"),
    ({"generation": "{temperature: abc}"}, "generation.temperature"),
    ({"generation": "{max_tokens: 0}"}, "generation.max_tokens"),
    ({"profile": "{max_tokens: 0}"}, "profile.max_tokens"),
    ({"answers": "{max_tokens: -5}"}, "answers.max_tokens"),
    ({"questions": "{per_user: 0}"}, "questions.per_user"),
    ({"retries": "11"}, "retries"),
    ({"model_options": "{concurrency: 0}"}, "concurrency"),
    ({"model_options": "{timeout: soon}"}, "timeout"),
    ({"model_options": "{colour: red}"}, "colour"),
    ({"executor": "cluster"}, "executor"),
    ({"executor": "ray"}, "vllm:"),  # only a vllm: model's generation spreads over a cluster
    ({"ray_address": "head:6379"}, "--ray-address needs --executor ray"),
    ({"executor": "ray", "executor_options": "{colour: red}"}, "colour"),
])
def test_build_checks_its_config_before_any_work(tmp_path: Path, changes: dict[str, str], says: str) -> None:
    out = tmp_path / "build-out"
    config = _build_config(tmp_path, out, **changes)
    _bad("build", "run", str(config), says=(says,))
    assert not out.exists()


def test_build_executor_flags_are_checked_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "build-out"
    config = _build_config(tmp_path, out)
    _bad("build", "run", str(config), "--executor", "ray", says=("--executor ray", "vllm:"))
    _bad("build", "run", str(config), "--executor-option", "workers=2", says=("--executor-option",))
    assert not out.exists()


def test_build_refuses_an_out_that_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me\n")
    config = _build_config(tmp_path, blocker / "sub")
    _bad("build", "run", str(config), says=("out", str(blocker / "sub")))
    _bad("build", "run", str(_build_config(tmp_path, tmp_path / "x")), "--out", str(blocker / "sub"),
         says=(str(blocker / "sub"),))
    assert blocker.read_text() == "keep me\n"


@pytest.mark.parametrize(("field", "says"), [("n_boot: 0", "n_boot"), ("log_every: -1", "log_every"),
                                             ("max_steps: -3", "max_steps"), ("weight_decay: -0.1", "weight_decay"),
                                             ("learning_rate: .nan", "learning_rate")])
def test_train_config_ranges(tmp_path: Path, field: str, says: str) -> None:
    config = tmp_path / "rm.yaml"
    out = tmp_path / "rm"
    config.write_text(f"data: demo\nout: {out}\n{field}\n")
    _bad("train-rm", "--config", str(config), says=(says,))
    assert not out.exists()


def test_train_rm_refuses_an_out_that_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me\n")
    _bad("train-rm", "--data", "demo", "--out", str(blocker / "rm"), says=("out", str(blocker / "rm")))
    assert blocker.read_text() == "keep me\n"
