"""The README works as written: every `bash tested` block runs unchanged in a fresh directory, and every other
bash block is marked `bash template` with a first comment saying what to substitute.

The substitutions: in the local-model block, the lines `LLM_URL=...` and `MODEL=...` are pointed at the
llama.cpp server the tests start (the block's comment tells a reader to do the same for their server); a line
`PORT=...` (the annotation server's port) gets a free port. The fresh directory holds a copy of the repository's
`examples/` and `configs/`, which the commands name by relative path.

Each block runs traced (`_TRACE`: a marker line and a timestamp file before every command of the block's shell),
so each command's own output is known and each file it wrote (by modification time): every `tailor` command
that writes names the file or a folder above it, every server its http://127.0.0.1:PORT URL.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, LlamaServer, free_port

README = REPO_ROOT / "README.md"
_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    """(info string, body) of every fenced block in the README."""
    return [(m.group("info").strip(), m.group("body")) for m in _FENCE.finditer(README.read_text(encoding="utf-8"))]


def readme_tested_blocks() -> list[str]:
    return [body for info, body in blocks() if info == "bash tested"]


def test_every_bash_block_is_marked() -> None:
    bash = [(info, body) for info, body in blocks() if info.split()[:1] == ["bash"]]
    assert bash, "the README has no bash blocks"
    for info, body in bash:
        assert info in ("bash tested", "bash template"), f"unmarked block ```{info}:\n{body}"
        if info == "bash template":
            assert body.lstrip().startswith("#"), f"a template block must say what to substitute:\n{body}"
    assert len(readme_tested_blocks()) >= 3


#: what in a command needs an optional extra: (regular expression, the extras it needs)
NEEDS_EXTRA: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"tailor annotate (serve|project|import |annotator|progress|release|export |study)", ("web",)),
    (r"tailor study (run|demo|status)", ("web",)),
    (r"tailor train-rm|--judge rm:|--judge embedding", ("local",)),
    (r"--retriever (bm25|hybrid)|tailor stages example", ("retrieval",)),
    (r"--retriever (dense|hybrid)", ("local",)),
)


def _needed(body: str) -> set[str]:
    commands = "\n".join(line.split("#")[0] for line in body.splitlines())
    return {extra for pattern, extras in NEEDS_EXTRA if re.search(pattern, commands) for extra in extras}


def test_template_blocks_name_the_extras_they_need() -> None:
    """A template block (not run by the tests) says in its comments which extra its commands need beyond the
    core; the tested blocks need only `make demo`'s extras (checked on their imports below, and here on their
    commands). At 97f6c24 `tailor annotate serve` appeared in a template block without [web], and `make demo`
    did not install it."""
    for info, body in blocks():
        if info == "bash template":
            comments = " ".join(line.partition("#")[2] for line in body.splitlines())
            missing = {e for e in _needed(body) if f"[{e}]" not in comments}
            assert not missing, f"a template block needs {sorted(missing)} without naming it:\n{body}"
    tested = set().union(*(_needed(b) for b in readme_tested_blocks() if not _local(b)))
    assert {"web", "local", "retrieval"} <= tested and tested <= set(demo_extras()), tested


#: written into the block's PYTHONPATH as sitecustomize.py: every Python process the block starts appends to
#: $TB_IMPORTS_LOG, when it exits, the top-level modules that tailorbench's own code imported (what a library
#: imports only when it happens to be installed, such as transformers' optional accelerate, is not counted)
_IMPORT_LOG = """
import atexit, builtins, os
_seen = set()
_import = builtins.__import__
def _recording(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and globals and str(globals.get("__name__", "")).startswith("tailorbench"):
        _seen.add(name.split(".")[0])
    return _import(name, globals, locals, fromlist, level)
builtins.__import__ = _recording
def _log():
    with open(os.environ["TB_IMPORTS_LOG"], "a", encoding="utf-8") as handle:
        handle.write("".join(m + "\\n" for m in sorted(_seen)))
atexit.register(_log)
"""


def commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [c for c in (line.split(" #")[0].strip() for line in joined.splitlines()) if c and not c.startswith("#")]


#: a `tailor` command's option or argument that names what it writes
_WRITES = re.compile(r"^tailor (?:study demo (?P<study>\S+)|.*?(?:--out|-o|--bundle) (?P<out>\S+))")


def written_places(block: str) -> list[str]:
    """What each `tailor` command of a block writes (its --out, -o, --bundle, or a study's folder), as given."""
    return [m.group("study") or m.group("out") for c in commands(block) if (m := _WRITES.match(c))]


def served_urls(block: str) -> list[str]:
    """The URL each server a block starts listens on (`tailor annotate serve` and `tailor view` on $PORT)."""
    port = re.search(r"^PORT=(\d+)$", block, re.MULTILINE)
    servers = [c for c in commands(block) if re.match(r"tailor (annotate serve|view)\b", c) and "--bundle" not in c]
    assert not servers or port, f"a block starts a server without PORT=:\n{block}"
    return [f"http://127.0.0.1:{port.group(1)}" for _ in servers] if port else []


def check_says_where(block: str, result: subprocess.CompletedProcess[str], cwd: Path) -> None:
    """Every command that writes named the place it wrote in its own output, every server its URL in what follows
    its start: the block's places (its --out, --bundle, study folders) as a floor, and each file a `tailor` command
    wrote (found by its modification time, between the command's start and the next command's: `_TRACE`) named
    by its path or a folder above it, within the working directory."""
    said = result.stdout + result.stderr
    for place in written_places(block):
        assert place in said, f"no command said where it wrote {place}:\n{block}\n--- output ---\n{said[-3000:]}"
    steps = traced_steps(said)
    assert steps, f"the block ran no traced command:\n{said[-3000:]}"
    for k, (command, output, start) in enumerate(steps):
        if not command.startswith("tailor "):
            continue
        if _SERVER.match(command) and "--bundle" not in command:
            later = "".join(out for _, out, _ in steps[k:])
            assert "http://127.0.0.1:" in later, f"{command}: the server did not say its URL\n{later[-3000:]}"
            continue  # a server writes its database as it serves: the URL is what it names
        end = steps[k + 1][2] if k + 1 < len(steps) else None
        for path in written_between(cwd, start, end):
            assert any(p in output for p in _names_of(path)), (
                f"{command} wrote {path} without naming it or a folder above it\n--- its output ---\n{output[-3000:]}")
    for url in served_urls(block):
        assert url in said, f"the server did not say its URL {url}:\n{block}\n--- output ---\n{said[-3000:]}"


#: what starts a server of the README's blocks
_SERVER = re.compile(r"tailor (annotate serve|view)\b")

#: put before a block: every simple command of the block's own shell prints a marker line with its text and
#: touches a stamp (its start, by modification time), and stderr goes to stdout so each output follows its marker
_TRACE = """exec 2>&1
mkdir -p .trace
__step=0
trap '__step=$((__step + 1)); printf "\\n@@step %d %s\\n" "$__step" "$BASH_COMMAND"; touch ".trace/$__step"' DEBUG
"""
_MARKER = re.compile(r"^@@step (\d+) (.*)$", re.MULTILINE)


def traced_steps(said: str) -> list[tuple[str, str, int]]:
    """(command, its output, its step number: its stamp in .trace/) per traced command, in order."""
    marks = list(_MARKER.finditer(said))
    steps = []
    for k, m in enumerate(marks):
        output = said[m.end():marks[k + 1].start() if k + 1 < len(marks) else len(said)]
        steps.append((m.group(2), output, int(m.group(1))))
    return steps


def written_between(cwd: Path, start: int, end: int | None) -> list[Path]:
    """Files under `cwd` (hidden ones, the copied examples and configs, and the model-call cache aside) whose
    modification time falls between two stamps of `_TRACE` (step `start`'s and step `end`'s, or the end)."""
    t0 = (cwd / ".trace" / str(start)).stat().st_mtime_ns
    t1 = None if end is None else (cwd / ".trace" / str(end)).stat().st_mtime_ns
    cache = os.environ.get("TAILORBENCH_CALL_CACHE", "")
    out = []
    for path in sorted(cwd.rglob("*")):
        rel = path.relative_to(cwd)
        if (not path.is_file() or any(part.startswith(".") for part in rel.parts)
                or rel.parts[0] in ("examples", "configs") or (cache and str(path).startswith(cache))):
            continue
        mtime = path.stat().st_mtime_ns
        if t0 <= mtime and (t1 is None or mtime < t1):
            out.append(rel)
    return out


def _names_of(path: Path) -> list[str]:
    """How an output may name a written file: its path or a folder above it, at least two levels deep (`runs/x`,
    not the bare `runs` every example writes under), as given or absolute."""
    return [str(path), *(str(parent) for parent in path.parents if len(parent.parts) >= 2)]


def test_the_places_each_command_writes_are_found() -> None:
    """The check above reads every writing command of the tested blocks (so it cannot pass by finding none)."""
    plain = "\n".join(b for b in readme_tested_blocks() if not _local(b))
    assert {"runs/x", "runs/board", "runs/site", "runs/stages", "runs/study"} <= set(written_places(plain))
    assert served_urls("PORT=8000\n" + plain) == ["http://127.0.0.1:8000"]


def with_port(block: str) -> str:
    """The block with its `PORT=...` line set to a free port."""
    return re.sub(r"^PORT=.*$", f"PORT={free_port()}", block, flags=re.MULTILINE)


def _run(block: str, tmp_path: Path, imports_log: Path | None = None) -> subprocess.CompletedProcess[str]:
    for folder in ("examples", "configs"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if imports_log is not None:
        hook = tmp_path / ".imports"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_IMPORT_LOG, encoding="utf-8")
        env.update(PYTHONPATH=os.pathsep.join(p for p in (str(hook), env.get("PYTHONPATH", "")) if p),
                   TB_IMPORTS_LOG=str(imports_log))
    return subprocess.run(["bash", "-euo", "pipefail", "-c", _TRACE + block], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def demo_extras() -> list[str]:
    """The extras `make demo` installs (the Makefile's demo install rule installs `$(DEMO_EXTRAS)`)."""
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^\$\(VENV\)/\.demo-installed:[^\n]*\n\t\$\(call install,\$\(DEMO_EXTRAS\)\)", makefile,
                     re.MULTILINE)
    found = re.search(r"^DEMO_EXTRAS := (.+)$", makefile, re.MULTILINE)
    assert rule and found, "the Makefile's demo install rule names no extras"
    return [e.strip() for e in found.group(1).split(",")]


def installed_by(extras: list[str]) -> set[str]:
    """Every distribution `pip install -e '.[EXTRAS]'` installs: tailorbench's requirements with those extras,
    followed transitively through the installed distributions' own requirements (names canonicalized)."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    todo: list[tuple[str, frozenset[str]]] = [("tailorbench", frozenset(extras))]
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        names.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it can have been imported either
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (*wanted, "")):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return names


def foreign_imports(log: Path, extras: list[str]) -> dict[str, str]:
    """module -> distribution, for each module the block imported that comes from a distribution the extras do
    not install (the standard library and tailorbench itself aside)."""
    import importlib.metadata

    from packaging.utils import canonicalize_name

    owners = importlib.metadata.packages_distributions()
    allowed = installed_by(extras)
    out: dict[str, str] = {}
    for module in sorted(set(log.read_text(encoding="utf-8").split()) - {"sitecustomize"}):
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        if dists and not dists & allowed:
            out[module] = ", ".join(sorted(dists))
    return out


def _local(block: str) -> bool:
    return bool(re.search(r"^LLM_URL=", block, re.MULTILINE))


@pytest.mark.slow
def test_demo_blocks_run_as_written(tmp_path: Path, call_cache: Path) -> None:
    """Each demo block runs, and imports nothing but what `make demo`'s extras install: the blocks run here, in
    the full test venv, so a module from another extra (bm25s of [retrieval] before `make demo` installed it)
    would pass unnoticed without this check. At 97f6c24 the blocks did not include `tailor study demo` and the
    annotation server, which failed after `make demo` (no sqlalchemy / uvicorn: a traceback, exit 1)."""
    plain = [b for b in readme_tested_blocks() if not _local(b)]
    assert plain
    extras = demo_extras()
    for k, block in enumerate(plain):
        log = tmp_path / f"imports-{k}.txt"
        block = with_port(block)
        result = _run(block, tmp_path / f"block{k}", log)
        assert result.returncode == 0, f"README block failed:\n{block}\n--- output ---\n{result.stdout[-3000:]}"
        check_says_where(block, result, tmp_path / f"block{k}")
        assert not foreign_imports(log, extras), (
            f"README block imports modules that `make demo` (extras {extras}) does not install: "
            f"{foreign_imports(log, extras)}\n{block}")
    assert (tmp_path / "block0" / "runs" / "board" / "report.md").is_file()
    study = next(tmp_path / f"block{k}" / "runs" / "study" for k, b in enumerate(plain) if "study demo" in b)
    assert (study / "report" / "study.md").is_file()
    served = {m for k in range(len(plain)) for m in (tmp_path / f"imports-{k}.txt").read_text().split()}
    assert {"sqlalchemy", "uvicorn", "fastapi"} <= served, served


def test_the_demo_extras_are_the_ones_the_demo_block_needs() -> None:
    """The check above bites: without [retrieval], bm25s (imported by `tailor stages example`) is foreign, and
    without [web] so are SQLAlchemy and uvicorn (`tailor study demo`, `tailor annotate serve`); with the extras
    of `make demo` they are not."""
    extras = demo_extras()
    assert {"retrieval", "local", "web"} <= set(extras)
    assert "bm25s" in installed_by(extras) and "bm25s" not in installed_by(["local"])
    for dist in ("sqlalchemy", "uvicorn", "fastapi", "alembic"):
        assert dist in installed_by(extras) and dist not in installed_by(["local", "retrieval"]), dist


@pytest.mark.slow
def test_local_model_block_runs_against_a_real_server(tmp_path: Path, llama_server: LlamaServer,
                                                      call_cache: Path) -> None:
    local = [b for b in readme_tested_blocks() if _local(b)]
    assert len(local) == 1
    block = re.sub(r"^LLM_URL=.*$", f"LLM_URL={llama_server.base_url}", local[0], flags=re.MULTILINE)
    block = re.sub(r"^MODEL=.*$", f"MODEL={llama_server.model}", block, flags=re.MULTILINE)
    llama_server.reset()
    result = _run(block, tmp_path)
    assert result.returncode == 0, f"README block failed:\n{block}\n--- output ---\n{result.stdout[-3000:]}"
    check_says_where(block, result, tmp_path)
    assert llama_server.count() > 0
    for run in ("judge", "gen"):
        assert (tmp_path / "runs" / run / "results.json").is_file()
    assert (tmp_path / "runs" / "build" / "export" / "pairs.jsonl").is_file()


def _docs_named(text: str, bare: bool) -> set[str]:
    """The docs/ files a text names: `docs/NAME.md` anywhere, and (`bare`: in a doc, whose links are relative)
    a Markdown link to `NAME.md`."""
    names = set(re.findall(r"\bdocs/([\w-]+\.md)\b", text))
    if bare:
        names |= set(re.findall(r"\]\((?:\./)?([\w-]+\.md)(?:#[^)]*)?\)", text))
    return names


def test_every_doc_is_linked_from_the_readme() -> None:
    """Each file in docs/ is named by the README, or by a doc the README names (the README is the map)."""
    docs = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    reached = _docs_named(README.read_text(encoding="utf-8"), bare=False) & docs
    todo = list(reached)
    while todo:
        for name in _docs_named((REPO_ROOT / "docs" / todo.pop()).read_text(encoding="utf-8"), bare=True) & docs:
            if name not in reached:
                reached.add(name)
                todo.append(name)
    assert not docs - reached, f"docs the README does not lead to: {sorted(docs - reached)}"
    direct = _docs_named(README.read_text(encoding="utf-8"), bare=False)
    assert {"study.md", "benchmarks.md", "scale.md"} <= direct, direct
