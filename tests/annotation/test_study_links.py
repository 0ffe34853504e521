"""A crowd study's links are http(s) only (options.as_url; docs/data.md "Reading files"): the study link built on
`--base-url` and the completion redirect. At 97f6c24 a `javascript:` base URL was accepted silently (the link
handed to the platform, and from it to every participant, was `javascript:.../s/SECRET?...`), and
`--completion-url` was checked by its prefix only (`http://` with no host passed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailorbench.annotation import studies
from tailorbench.annotation.db import Database
from tailorbench.errors import ConfigError
from tests.annotation.test_study import _project


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "http://",
                                 "http://host:port", "ftp://example.org", "http://exa mple.org"])
def test_links_are_built_on_http_urls_only(db: Database, tmp_path: Path, url: str) -> None:
    _project(db, tmp_path)
    with pytest.raises(ConfigError, match="completion-url"):
        studies.create_study(db, "crowd", 4, 2, "DONE1", completion_url=url)
    study, _ = studies.create_study(db, "crowd", 4, 2, "DONE1")
    with pytest.raises(ConfigError, match="base-url"):
        studies.link(db, study, url)
    assert studies.link(db, study, "https://annotate.example.org/").startswith("https://annotate.example.org/s/")


@pytest.mark.parametrize("verb", [["annotator", "add", "ann"], ["annotator", "link", "ann"],
                                  ["crowd", "reissue", "P1"], ["crowd", "create", "crowd", "--quota", "4",
                                                               "--max-participants", "2", "--completion-code", "D1"]])
def test_a_non_http_base_url_is_refused_before_any_work(tmp_path: Path, verb: list[str]) -> None:
    """At 97f6c24 `--base-url javascript:...` made an account (or a study) and printed a javascript: login link."""
    from typer.testing import CliRunner

    from tailorbench.cli.app import app

    result = CliRunner().invoke(app, ["annotate", *verb, "--base-url", "javascript:alert(1)", "--dir",
                                      str(tmp_path / "ann")])
    assert result.exit_code == 2 and "--base-url" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "ann").exists()
