"""Fuzzing `tailor view --bundle` over damaged run directories and `tailor data push --dry-run` over damaged
benchmarks: a run's manifest.json or a predictions line, a native benchmark's rows, its layout
sidecar and the tiers.json beside it, each a valid file with hostile edits planted; licences drawn from the
hub's identifiers and from what a user might type. The oracle (`hostile.check_verb`): exit 0, 2 or 3 with a
one-line message, no traceback, and no file outside the bundle / dry-run folder changed (the viewer's own index
cache beside a run, `.view-index.json`, aside: it is the one file the viewer keeps there, docs/view.md)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tailorbench import api
from tests.fuzz.conftest import count, fuzz, workdir
from tests.fuzz.hostile import check_verb, damage_bytes, hostile_value, json_bytes, mutate


@cache
def _template() -> Path:
    """One finished demo run (6 cases, both orders) and its benchmark as native JSONL with tiers.json beside it,
    made once per process and copied per input."""
    root = Path(tempfile.mkdtemp(prefix="tb-fuzz-view-"))
    atexit.register(shutil.rmtree, root, True)
    api.eval("demo", judge="longer", out=root / "run", limit=6, n_boot=5, progress=False)
    (root / "run" / ".view-index.json").unlink(missing_ok=True)
    api.convert_data("demo", root / "bench" / "benchmark.jsonl")
    (root / "bench" / "tiers.json").write_text(json.dumps({
        "rule": {"statistic": "P_i", "min_ratings": 3, "easy": ">= 0.75"},
        "tiers": {"easy": {"n": 3, "fleiss_kappa": {"value": 0.5, "ci": [0.1, 0.9]}}}}), encoding="utf-8")
    return root


#: the files of a run a user edits or damages; results.json is left out: it is the run's derived file, trusted
#: while it records the digest of the predictions it was computed from (a hand edit that keeps the digest is
#: not caught yet, docs/view.md)
_RUN_FILES = st.sampled_from(["manifest.json", "manifest.json", "predictions.jsonl"])


@fuzz(300)
@given(st.data(), st.lists(_RUN_FILES, min_size=1, max_size=2, unique=True), st.integers(1, 2))
def test_view_bundle_of_a_damaged_run(data: st.DataObject, targets: list[str], runs: int) -> None:
    count("view bundle")
    with workdir() as root:
        shutil.copytree(_template() / "run", root / "run")
        run = root / "run"
        for name in targets:
            path = run / name
            if name == "predictions.jsonl":
                lines = path.read_bytes().splitlines()
                k = data.draw(st.integers(0, len(lines) - 1))
                # a line replaced or torn (typed defects of a line's fields: test_fuzz_runs.py)
                lines[k] = json_bytes(data.draw, data.draw(hostile_value))
                path.write_bytes(b"\n".join(lines) + b"\n")
            else:
                path.write_bytes(json_bytes(data.draw, mutate(data.draw, json.loads(path.read_bytes()))))
        out = root / "out"
        given_runs = [str(run)] * runs if data.draw(st.booleans()) else [str(run), str(_template() / "run")][:runs]
        bundle = out / "site"
        check_verb(root, ["view", *given_runs, "--bundle", str(bundle), "--n-boot", "5"], out,
                   names=(".view-index.json",), done=(bundle / "index.html").is_file)


_LICENCES = st.one_of(st.sampled_from(["cc-by-4.0", "MIT", "other", "odc-by", " apache-2.0 "]),
                      st.sampled_from(["", "whatever", "CC BY 4.0", "gpl-4", "cc-by-4.0\x00"]))


@fuzz(500)
@given(st.data(), st.sampled_from(["rows", "rows", "layout", "tiers", "bytes"]), _LICENCES,
       st.sampled_from(["me/bench", "me/bench", "not a repo", "me/"]))
def test_data_push_dry_run_of_a_damaged_benchmark(data: st.DataObject, target: str, licence: str,
                                                 repo: str) -> None:
    count("data push dry run")
    with workdir() as root:
        bench = root / "bench"
        shutil.copytree(_template() / "bench", bench)
        data_file = bench / "benchmark.jsonl"
        lines = data_file.read_bytes().splitlines()
        if target == "rows":
            k = data.draw(st.integers(0, len(lines) - 1))
            lines[k] = json_bytes(data.draw, mutate(data.draw, json.loads(lines[k]), changes=2))
            data_file.write_bytes(b"\n".join(lines) + b"\n")
        elif target == "layout":
            layout = mutate(data.draw, {"splits": ["specific", "general"], "tiers": ["easy", "medium", "hard"]})
            (bench / "benchmark.layout.json").write_bytes(json_bytes(data.draw, layout))
        elif target == "tiers":
            tiers = bench / "tiers.json"
            tiers.write_bytes(json_bytes(data.draw, mutate(data.draw, json.loads(tiers.read_bytes()))))
        else:
            data_file.write_bytes(damage_bytes(data.draw, data_file.read_bytes()))
        out = root / "out"
        source = str(bench if data.draw(st.booleans()) else data_file)
        check_verb(root, ["data", "push", source, repo, "--license", licence, "--dry-run", str(out / "hub")], out,
                   done=(out / "hub" / "README.md").is_file)
