"""`tailor compare A B [C ...]` per split x tier (docs/metrics.md, "Comparing runs"): the exact McNemar test equals
scipy's binomial test, Holm's adjustment equals statsmodels', the cells' differences are recomputed from the
runs' predictions, and bad input (different data, one run) is exit 2 with nothing written."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from tailorbench import api
from tailorbench.cli.app import app
from tailorbench.evaluate.compare import holm, mcnemar_exact


@pytest.mark.parametrize(("a", "b"), [(0, 1), (3, 9), (10, 24), (17, 17), (40, 3), (250, 301)])
def test_mcnemar_equals_scipy(a: int, b: int) -> None:
    assert mcnemar_exact(a, b) == pytest.approx(binomtest(a, a + b, 0.5).pvalue, abs=1e-12)
    assert mcnemar_exact(0, 0) is None


def test_holm_equals_statsmodels() -> None:
    p = [0.01, 0.04, 0.03, 0.2, 0.005]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-12)
    assert holm([0.02, None, 0.04]) == pytest.approx([0.04, None, 0.04])


def _scores(run: Path) -> dict[str, tuple[float, str, str]]:
    by_case: dict[str, list[dict]] = defaultdict(list)
    for line in (run / "predictions.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_case[row["case_id"]].append(row)
    return {c: (sum(r["correct"] for r in v) / len(v), v[0]["split"], v[0]["tier"]) for c, v in by_case.items()}


def test_per_tier_cells_and_three_runs(tmp_path: Path) -> None:
    for judge in ("longer", "embedding", "random"):
        api.eval("demo", judge=judge, out=tmp_path / judge, n_boot=100)
    result = api.compare(tmp_path / "longer", tmp_path / "embedding", tmp_path / "random", n_boot=100)
    a, b = _scores(tmp_path / "longer"), _scores(tmp_path / "embedding")
    cells = {c["cell"]: c for c in result.cells}
    assert set(cells) >= {"specific/easy", "general/hard", "specific/all", "all"}
    for name, c in cells.items():
        ids = [k for k in a if name == "all" or name == f"{a[k][1]}/all" or name == f"{a[k][1]}/{a[k][2]}"]
        assert c["n"] == len(ids)
        assert c["difference"] == pytest.approx(sum(a[k][0] - b[k][0] for k in ids) / len(ids))
        a_only = sum(a[k][0] > b[k][0] for k in ids)
        b_only = sum(a[k][0] < b[k][0] for k in ids)
        assert (c["mcnemar"]["a_only"], c["mcnemar"]["b_only"]) == (a_only, b_only)
        if a_only + b_only:
            assert c["mcnemar"]["p"] == pytest.approx(binomtest(a_only, a_only + b_only).pvalue, abs=1e-12)
        assert c["ci_users"] is not None and c["ci"][0] <= c["difference"] <= c["ci"][1]
    # three runs: each against the first, the p-values of a cell Holm-adjusted over the two comparisons
    assert len(result.comparisons) == 2
    ps = [comp["cells"][-1]["mcnemar"]["p"] for comp in result.comparisons]
    holms = [comp["cells"][-1]["mcnemar"]["p_holm"] for comp in result.comparisons]
    assert holms == pytest.approx(list(multipletests(ps, method="holm")[1]))


def test_bad_input_is_exit_2(tmp_path: Path) -> None:
    api.eval("demo", judge="longer", out=tmp_path / "a", n_boot=50)
    runner = CliRunner()
    one = runner.invoke(app, ["compare", str(tmp_path / "a")])
    assert one.exit_code == 2 and "at least two" in one.output
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "predictions.jsonl").write_text((tmp_path / "a" / "predictions.jsonl").read_text())
    manifest["dataset_fingerprint"] = "0" * 64
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(manifest))
    different = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert different.exit_code == 2 and "different data" in different.output
