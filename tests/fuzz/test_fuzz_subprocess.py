"""A small sample of the generated defects through real `tailor` processes: what a user sees is exit code 2 and
one `error:` line naming file:line (and field), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.conftest import count, fuzz, workdir
from tests.fuzz.gen import NATIVE_DEFECTS, layout_text, native_rows, plant_native
from tests.fuzz.test_fuzz_ratings import plant, ratings

REPO = Path(__file__).resolve().parents[2]


def tailor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "tailorbench.cli.app", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120)


def check(proc: subprocess.CompletedProcess[str], where: str, field: str | None) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: "), proc.stderr
    assert proc.stderr.count("\n") == 1 and where in proc.stderr, proc.stderr
    assert field is None or f"'{field}'" in proc.stderr, proc.stderr


@fuzz(5)
@given(st.data())
def test_native_defects_through_a_real_process(data: st.DataObject) -> None:
    count("subprocess benchmark")
    rows = data.draw(native_rows(min_rows=2, max_rows=3))
    kind, field = data.draw(st.sampled_from([d for d in NATIVE_DEFECTS if d[0] not in ("json", "not-object",
                                                                                        "encoding")]))
    k = data.draw(st.integers(1 if kind == "duplicate" else 0, len(rows) - 1))
    plant_native(data.draw, rows, k, kind)
    raw, lines = data.draw(layout_text(rows))
    with workdir() as root:
        path = root / "bench.jsonl"
        path.write_bytes(raw)
        check(tailor("data", "check", str(path)), f"{path}:{lines[k]}", field)


@fuzz(3)
@given(st.data())
def test_ratings_defects_through_a_real_process(data: st.DataObject) -> None:
    count("subprocess ratings")
    csv_format = data.draw(st.booleans())
    records = data.draw(ratings(csv_format))
    with workdir() as root:
        path = root / ("r.csv" if csv_format else "r.jsonl")
        line, field = plant(data, records, csv_format, path)
        out = root / "agree.json"
        check(tailor("agree", str(path), "--resamples", "10", "--out", str(out)), f"{path}:{line}", field)
        assert not out.exists()


def test_a_deep_persona_through_a_real_process(tmp_path: Path) -> None:
    count("subprocess persona")
    path = tmp_path / "bench.jsonl"
    row = {"id": "a", "split": "general", "tier": "easy", "user_id": "u", "question": "q?", "chosen": "x",
           "rejected": "y"}
    path.write_text(json.dumps(row) + "\n" + json.dumps(row)[:-1] + ', "id": "b", "persona": '
                    + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}\n")
    check(tailor("data", "check", str(path)), f"{path}:2", None)
