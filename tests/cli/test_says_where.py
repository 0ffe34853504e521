"""Every server prints its URL when it starts (and `annotate serve` how to log in as admin); every verb that
writes says where (the README's journeys check the same on the commands they run: tests/test_readme.py);
`make demo` says how to browse what it made."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import REPO_ROOT, free_port


def test_annotate_serve_prints_its_url_and_the_admin_login_hint(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tailorbench.cli.app", "annotate", "serve", "--dir",
                             str(tmp_path / "annotation"), "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    first, second = out.splitlines()[:2]
    assert first.startswith(f"tailor annotate serve: http://127.0.0.1:{port} (database sqlite")
    assert second == (f"admin login: `tailor annotate annotator add NAME --admin --dir {tmp_path / 'annotation'} "
                      f"--base-url http://127.0.0.1:{port}` prints a login link (it logs in once)")


def test_make_demo_says_where_it_wrote_and_how_to_browse() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^demo:.*?(?=^\S)", makefile, re.MULTILINE | re.DOTALL)
    assert rule, "the Makefile has no demo rule"
    assert "report: $(DEMO_OUT)/report.md and $(DEMO_OUT)/report.html" in rule.group(0)
    assert "tailor view $(DEMO_OUT)" in rule.group(0)
