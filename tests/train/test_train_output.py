"""The output rule at the entry of `tailor train-rm` (files.py's one door, issue 42 point 1): an --out that is its
data, a folder holding its data, or a non-empty folder no verb made is exit 2 before any data is read or a model
loaded, and nothing on disk changes. At the base commit 97f6c24 each of these wrote train_config.yaml (and, with
data that reads, the whole checkpoint) into the folder named."""

from __future__ import annotations

import hashlib
from pathlib import Path

from typer.testing import CliRunner

from tailorbench.cli.app import app


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_train_rm_refuses_an_out_of_its_inputs_or_a_strangers(tmp_path: Path) -> None:
    data = tmp_path / "d" / "pairs.jsonl"
    data.parent.mkdir()
    data.write_text('{"not": "read"}\n', encoding="utf-8")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("\\chapter{Results}\n", encoding="utf-8")
    before = tree(tmp_path)
    for out, says in ((data.parent, "holds this command's input"), (data, "input"),
                      (tmp_path / "thesis", "already holds files")):
        result = CliRunner().invoke(app, ["train-rm", "--data", str(data), "--out", str(out), "--no-progress"])
        assert result.exit_code == 2, result.output
        assert result.output.count("error:") == 1 and says in result.output, result.output
        assert tree(tmp_path) == before
