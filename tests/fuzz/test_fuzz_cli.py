"""Every verb fuzzed by construction: the suite walks the `tailor` command itself (every verb of `tailor --help`,
recursively, hidden aliases aside), builds each verb's valid invocation from the seed table (`seeds.py`), and
then hands it inputs with ONE input changed per case by one mutation class:

- `hostile`: the edits of `hostile.py` (wrong types, deep nesting, dropped or renamed keys, control characters,
  truncated / BOM / latin-1 / NUL / CRLF bytes, a wrapped or replaced document), a file of a folder input
  removed, emptied or made a folder, or the output path taken by a stranger's file or folder;
- the misread classes (`hostile.MISREAD_CLASSES`): a wrong type (a bool for an integer, a number for text), a
  duplicate key, a dropped required key, a negative, underscored or out-of-range index, an unknown enum value, a
  non-http(s) URL, planted where `seeds.Fields` says the verb reads such a value.

The oracle is `hostile.run_verb` (exit 0, 2 or 3; exit 2 with one `error:` line; never a traceback; no file
outside the output or the command's own state changed; a stranger's file at the output path kept) plus: an input
of a misread class is never read with exit 0 and no `warning:` line; the unchanged recipe ends with exit 0.

A verb with no recipe, or whose file option is neither in a recipe nor in `seeds.NOT_FUZZED`, fails
`test_every_verb_has_a_seed` by name. Verbs that call a model use the longer-answer baseline judge or the
illustrative backend (`humanstudy/demo_model.py`); servers (`annotate serve`, `view` without --bundle) are run up
to the point of serving (the viewer binds port 0 on 127.0.0.1 and is closed, the annotation server is stopped
before it binds), `study run --watch` with a wait of 0.1 s.

Size: `TAILOR_FUZZ_SHARE` (default 0.1) of the full set of `FULL` inputs (`make fuzz`: 1), seeded and
deterministic. Failures already known and being fixed elsewhere are listed in `KNOWN` (verb, class -> reason):
they are counted, not failed. The count per verb x class is printed at the end and written as JSON to
`$TAILOR_FUZZ_REPORT` (default: `fuzz-cli.json` in pytest's temporary folder).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from typer.core import TyperArgument, TyperGroup

from tests.fuzz import seeds
from tests.fuzz.conftest import GENERATED, fuzz, workdir
from tests.fuzz.hostile import (
    CLASSES,
    MISREAD_CLASSES,
    Outcome,
    command,
    damage_bytes,
    deep,
    dump_json,
    dump_yaml,
    hostile_value,
    json_bytes,
    mutate,
    plant,
    run_verb,
)

#: inputs of the full run (`make fuzz`, TAILOR_FUZZ_SHARE=1); `make test` runs the default share
FULL = 21_000
SHARE = float(os.environ.get("TAILOR_FUZZ_SHARE", "0.1"))
#: inputs per verb never fewer than this, whatever the share
MIN_PER_VERB = 4
#: relative cost of one case where a verb is much slower than the rest (it gets fewer cases, never none)
COST: dict[str, float] = {"study demo": 40, "arena demo": 40, "stages example": 40, "stages verify": 12,
                          "stages classify-relevance": 12, "train-rm": 8, "stages train-verifier": 8, "study plan": 6,
                          "stages train-relevance": 4, "study run": 4, "study report": 3, "gen-eval": 3, "build run": 3,
                          "annotate serve": 2, "eval": 2}

#: failures known and being fixed where they belong: (verb pattern, class, problem pattern) -> reason
KNOWN: dict[tuple[str, str, str], str] = {}

#: per verb x class: inputs run; per verb x class x problem: failures (known ones apart)
COUNTS: Counter[tuple[str, str]] = Counter()
FAILURES: dict[tuple[str, str], list[str]] = {}
KNOWN_SEEN: Counter[tuple[str, str, str]] = Counter()
#: per known failure: the verbs it was seen in, with one case each
KNOWN_WHERE: dict[tuple[str, str, str], dict[str, str]] = {}
#: where the JSON report was written
REPORT_PATH: list[Path] = []
#: files a verb may write beside its inputs: the viewer's index of a run directory (a cache it rebuilds) and the
#: write-ahead log SQLite keeps beside a database any reader opens
_NAMES = (".view-index.json", "*.sqlite-wal", "*.sqlite-shm")

_SLOT = re.compile(r"\{(state:)?([a-z_0-9]+)(#\d+)?\}")


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    if isinstance(cmd, TyperGroup):
        for name, sub in cmd.commands.items():
            if not getattr(sub, "hidden", False):
                yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path), cmd


VERBS: dict[str, Any] = dict(_walk(command()))


def _takes_a_file(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = str(getattr(descriptor, "annotation", ""))
    if getattr(descriptor, "annotation", None) in (int, float, bool):
        return False
    return bool(getattr(descriptor, "is_path", False)) or "Path" in annotation or any(
        opt in seeds.FILE_OPTIONS for opt in param.opts)


def per_verb(verb: str) -> int:
    """Inputs of `verb` in this run: its part of FULL (cost-weighted) times the share, at least MIN_PER_VERB."""
    weights = {v: 1 / COST.get(v, 1) for v in VERBS}
    full = FULL * weights[verb] / sum(weights.values())
    return max(MIN_PER_VERB, math.ceil(full * SHARE))


# --- the seed table covers the CLI ----------------------------------------------------------------------------

def test_every_verb_has_a_seed() -> None:
    """Every verb has a recipe, every file option of it is in a recipe or named as not fuzzed (with why), and the
    table names no verb the CLI lacks."""
    missing = []
    for verb, cmd in VERBS.items():
        recipes = seeds.RECIPES.get(verb)
        if not recipes:
            missing.append(f"{verb}: no recipe in tests/fuzz/seeds.py RECIPES")
            continue
        used = {token for recipe in recipes for token in recipe}
        for param in cmd.params:
            if isinstance(param, TyperArgument) or not _takes_a_file(param):
                continue
            if not used & set(param.opts) and not any((verb, o) in seeds.NOT_FUZZED for o in param.opts):
                missing.append(f"{verb} {param.opts[0]}: takes a file but no recipe gives it one")
        for recipe in recipes:
            for m in _SLOT.finditer(" ".join(recipe)):
                if m.group(2) != "out" and m.group(2) not in seeds.SEEDS:
                    missing.append(f"{verb}: recipe names the unknown seed {m.group(2)}")
    stale = sorted(set(seeds.RECIPES) - set(VERBS))
    assert not missing and not stale, "\n".join(missing + [f"{v}: a recipe for no verb" for v in stale])


# --- one case -------------------------------------------------------------------------------------------------

def _slots(recipe: list[str]) -> list[tuple[str, str, bool]]:
    """(placeholder, seed kind, is state) of every input of a recipe, in order, each once."""
    seen: dict[str, tuple[str, str, bool]] = {}
    for token in recipe:
        for m in _SLOT.finditer(token):
            if m.group(2) != "out":
                seen.setdefault(m.group(0), (m.group(0), m.group(2), bool(m.group(1))))
    return list(seen.values())


def _input_path(root: Path, placeholder: str, kind: str) -> Path:
    folder = re.sub(r"[^a-z0-9]+", "-", placeholder).strip("-")
    return root / "in" / folder / seeds.SEEDS[kind].name


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def _applicable(recipe: list[str]) -> list[str]:
    """The classes a case of this recipe can carry (hostile always; a misread class where a seed has a field)."""
    out = ["hostile"]
    for cls in MISREAD_CLASSES:
        for _, kind, _ in _slots(recipe):
            if any(_paths(f, cls) for f in seeds.SEEDS[kind].fields.values()):
                out.append(cls)
                break
    return out


def _paths(fields: seeds.Fields, cls: str) -> tuple[str, ...]:
    return {"wrong-type": fields.ints + fields.texts, "duplicate-key": fields.required + fields.texts
            + fields.enums + fields.ints, "dropped-key": fields.required,
            "bad-index": fields.indices + fields.positions, "unknown-enum": fields.enums,
            "non-http-url": fields.urls}[cls]


def _read_doc(path: Path) -> tuple[str, Any]:
    """(format, document) of a file a misread class or a hostile edit works on."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return "jsonl", [json.loads(line) for line in text.splitlines() if line.strip()]
    if path.suffix == ".json":
        return "json", json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return "yaml", yaml_load(text)
    if path.suffix == ".csv":
        return "csv", list(csv.DictReader(io.StringIO(text)))
    raise ValueError(path)


def yaml_load(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def _plant_misread(draw: st.DrawFn, root: Path, slots: list[tuple[str, str, bool]], cls: str) -> str | None:
    """Plant `cls` in one input that has a place for it; returns what was changed (None: no input has one)."""
    spots = [(slot, rel, f) for slot in slots for rel, f in seeds.SEEDS[slot[1]].fields.items() if _paths(f, cls)]
    draw(st.randoms()).shuffle(spots)
    for (placeholder, kind, _), rel, fields in spots:
        target = _input_path(root, placeholder, kind)
        path = target / rel if rel else target
        fmt, doc = _read_doc(path)
        if fmt in ("jsonl", "csv"):
            order = list(range(len(doc)))
            draw(st.randoms()).shuffle(order)
            for k in order:
                got = plant(draw, doc[k], cls, fields)
                if got is not None:
                    _write_records(path, fmt, doc, k, got[1], cls)
                    return f"{path.name}:{k + 1} {got[2]}"
            continue
        got = plant(draw, doc, cls, fields)
        if got is None:
            continue
        path.write_text(dump_json(got[0], got[1]) if fmt == "json" else dump_yaml(got[0], got[1]), encoding="utf-8")
        return f"{path.name} {got[2]}"
    return None


def _write_records(path: Path, fmt: str, rows: list[Any], k: int, dup: tuple[str, Any] | None, cls: str) -> None:
    if fmt == "jsonl":
        path.write_text("".join((dump_json(r, dup) if n == k else json.dumps(r, ensure_ascii=False)) + "\n"
                                for n, r in enumerate(rows)), encoding="utf-8")
        return
    header = list(rows[0]) if rows else []
    for row in rows:
        header += [key for key in row if key not in header]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if cls == "dropped-key":  # a column dropped from the whole file
        gone = [h for h in header if h not in rows[k]]
        header = [h for h in header if h not in gone]
        writer.writerow(header)
        writer.writerows([[str(r.get(h, "")) for h in header] for r in rows])
    elif dup is not None:  # a column named twice
        key, (first, _original) = dup
        writer.writerow([*header, key])
        writer.writerows([[str(r.get(h, "")) if r.get(h) != "DUPLICATEDKEY0" else str(_original) for h in header]
                          + [str(first)] for r in rows])
    else:
        writer.writerow(header)
        writer.writerows([[str(r.get(h, "")) for h in header] for r in rows])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _hostile_file(draw: st.DrawFn, path: Path) -> str:
    """One hostile edit of one file (by its format), or of its bytes."""
    try:
        fmt, doc = _read_doc(path)
    except (ValueError, UnicodeDecodeError):
        fmt, doc = "bytes", None
    how = draw(st.integers(0, 9))
    if fmt == "bytes" or how == 0:
        data = path.read_bytes()
        path.write_bytes(draw(st.sampled_from([b"", b"\x00" * 8, data[: len(data) // 2], b"not this file\n"]))
                         if how == 0 or not data else damage_bytes(draw, data) if draw(st.booleans())
                         else data[: draw(st.integers(0, max(0, len(data) - 1)))])
        return f"bytes of {path.name}"
    if fmt == "jsonl":
        rows = list(doc)
        if not rows:
            path.write_bytes(json_bytes(draw, draw(hostile_value)) + b"\n")
            return f"{path.name}: one hostile line"
        k = draw(st.integers(0, len(rows) - 1))
        rows[k] = mutate(draw, rows[k], changes=2)
        path.write_bytes(b"".join((json_bytes(draw, r) if n == k else json.dumps(r).encode()) + b"\n"
                                  for n, r in enumerate(rows)))
        return f"{path.name}:{k + 1}"
    if fmt == "json":
        path.write_bytes(json_bytes(draw, mutate(draw, doc)))
        return path.name
    if fmt == "yaml":
        import yaml

        text = deep(yaml.safe_dump(mutate(draw, doc), allow_unicode=True, width=10**6, sort_keys=False), draw)
        path.write_bytes(damage_bytes(draw, text.encode("utf-8")))
        return path.name
    rows = list(doc)
    if rows:
        k = draw(st.integers(0, len(rows) - 1))
        key = draw(st.sampled_from(sorted(rows[k])))
        rows[k][key] = str(draw(hostile_value))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = list(rows[0]) if rows else ["item"]
    writer.writerow(header)
    writer.writerows([[str(r.get(h) or "") for h in header] for r in rows])
    path.write_bytes(damage_bytes(draw, buffer.getvalue().encode("utf-8")))
    return path.name


def _hostile(draw: st.DrawFn, root: Path, recipe: list[str], slots: list[tuple[str, str, bool]]) -> tuple[str,
                                                                                                          Path | None]:
    """A hostile edit of one input, or a stranger's file or folder where the output goes. Returns what was done
    and the stranger's file the verb must keep (None: none)."""
    outs = [t for t in recipe if "{out}" in t]
    if not slots or (outs and draw(st.integers(0, 4)) == 0):
        target = Path(draw(st.sampled_from(outs)).replace("{out}", str(root / "out")).split("/v/")[0])
        how = draw(st.integers(0, 2))
        if how == 0:  # the output's folder is a regular file
            (root / "out").write_text("a stranger's notes\n", encoding="utf-8")
            return "out is a file", root / "out"
        target.mkdir(parents=True)
        keep = target / draw(st.sampled_from(["thesis.tex", "tasks.json", "config.yaml", "study.yaml",
                                              "predictions.jsonl", "report.md", "manifest.json"]))
        keep.write_text("a stranger's file\n", encoding="utf-8")
        if how == 2 and target != root / "out":
            shutil.move(str(keep), str(root / "out" / "keep.txt"))
            return "a stranger's file beside the output", root / "out" / "keep.txt"
        return f"a stranger's {keep.name} in the output", keep
    placeholder, kind, _ = slots[draw(st.integers(0, len(slots) - 1))]
    path = _input_path(root, placeholder, kind)
    files = _files(path)
    chosen = files[draw(st.integers(0, len(files) - 1))] if files else path
    structural = draw(st.integers(0, 7))
    if structural == 0:
        if chosen.is_file():
            chosen.unlink()
        return f"{chosen.name} removed", None
    if structural == 1 and chosen.is_file():
        chosen.unlink()
        chosen.mkdir()
        return f"{chosen.name} a folder", None
    return _hostile_file(draw, chosen), None


def _known(verb: str, cls: str, problem: str) -> tuple[str, str, str] | None:
    for key in KNOWN:
        pattern, kcls, kproblem = key
        if fnmatch(verb, pattern) and fnmatch(cls, kcls) and re.search(kproblem, problem, re.DOTALL):
            return key
    return None


def _record(verb: str, cls: str, what: str, args: list[str], found: Outcome, misread: bool) -> None:
    COUNTS[verb, cls] += 1
    GENERATED[f"cli {verb}"] += 1
    problems = list(found.problems)
    if misread and found.exit_code == 0 and not found.warned:
        problems.append("misread: exit 0 and no warning")
    for problem in problems:
        key = _known(verb, cls, f"{problem} [{what}]")
        if key is not None:
            KNOWN_SEEN[key] += 1
            KNOWN_WHERE.setdefault(key, {}).setdefault(verb, f"{cls}: {problem} [{what}]"[:300])
            continue
        FAILURES.setdefault((verb, cls), []).append(f"{problem} [{what}] tailor {' '.join(args)} :: "
                                                    f"{(found.stderr or found.stdout)[-300:]!r}")


def _fill(recipe: list[str], root: Path) -> list[str]:
    out = []
    for token in recipe:
        token = token.replace("{out}", str(root / "out"))
        for m in list(_SLOT.finditer(token)):
            token = token.replace(m.group(0), str(_input_path(root, m.group(0), m.group(2))))
        out.append(token)
    return out


@contextmanager
def _inside(root: Path) -> Iterator[None]:
    """Run a case in its own folder (a verb's stray relative write lands where the tree hash sees it), and leave
    it before the folder is removed (a deleted working directory breaks later relative-path lookups)."""
    before = os.getcwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(before)


def _state(root: Path, slots: list[tuple[str, str, bool]]) -> list[Path]:
    return [_input_path(root, p, k) for p, k, state in slots if state]


def _place_all(root: Path, slots: list[tuple[str, str, bool]]) -> None:
    for placeholder, kind, _ in slots:
        target = _input_path(root, placeholder, kind)
        target.parent.mkdir(parents=True, exist_ok=True)
        seeds.place(kind, target)


@pytest.fixture(scope="module", autouse=True)
def _harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Servers stop where they would serve; model calls cached in a scratch file; the illustrative backend."""
    from tailorbench.humanstudy.demo_model import register
    from tailorbench.viewer.viewer import Viewer

    register()
    scratch = tmp_path_factory.mktemp("fuzz-cli")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAILORBENCH_CALL_CACHE", str(scratch / "calls.sqlite"))
        mp.setattr(Viewer, "serve_forever", lambda self: self.server.server_close() if self.server else None)
        yield
    _write_report(scratch)
    seeds.cleanup()


def _write_report(scratch: Path) -> None:
    target = Path(os.environ.get("TAILOR_FUZZ_REPORT") or scratch / "fuzz-cli.json")
    verbs = sorted({v for v, _ in COUNTS})
    table = {v: {c: COUNTS[v, c] for c in ("valid", *CLASSES) if COUNTS[v, c]} for v in verbs}
    report = {"share": SHARE, "inputs": sum(COUNTS.values()), "verbs": table,
              "classes": {c: sum(COUNTS[v, c] for v in verbs) for c in ("valid", *CLASSES)},
              "failures": {f"{v} / {c}": fs for (v, c), fs in FAILURES.items()},
              "known": {f"{p} / {c} / {q}": {"reason": KNOWN[p, c, q], "seen": n, "where": KNOWN_WHERE[p, c, q]}
                        for (p, c, q), n in KNOWN_SEEN.items()}}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=1), encoding="utf-8")
    REPORT_PATH.append(target)


def summary() -> list[str]:
    """The table printed at the end of the session: inputs per verb x class, failures, known failures seen."""
    if not COUNTS:
        return []
    classes = ("valid", *CLASSES)
    verbs = sorted({v for v, _ in COUNTS})
    width = max(len(v) for v in verbs)
    head = f"{'verb':<{width}} " + " ".join(f"{c:>13}" for c in classes) + f" {'total':>6}"
    lines = [f"fuzz (CLI walk): {sum(COUNTS.values())} inputs over {len(verbs)} verbs, share {SHARE}", head]
    for v in verbs:
        lines.append(f"{v:<{width}} " + " ".join(f"{COUNTS[v, c]:>13}" for c in classes)
                     + f" {sum(COUNTS[v, c] for c in classes):>6}")
    lines.append(f"{'all':<{width}} " + " ".join(f"{sum(COUNTS[v, c] for v in verbs):>13}" for c in classes)
                 + f" {sum(COUNTS.values()):>6}")
    failed = sum(len(fs) for fs in FAILURES.values())
    lines.append(f"failures: {failed}; known failures seen: {sum(KNOWN_SEEN.values())} "
                 f"({len(KNOWN_SEEN)} of {len(KNOWN)} listed)")
    lines += [f"  known: {p} / {c} / {q}: {n} ({KNOWN[p, c, q]})" for (p, c, q), n in sorted(KNOWN_SEEN.items())]
    if REPORT_PATH:
        lines.append(f"report: {REPORT_PATH[-1]}")
    return lines


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_fuzzed(verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verb's valid recipes end with exit 0; its generated cases pass the oracle (module docstring)."""
    recipes = seeds.RECIPES.get(verb)
    if not recipes:
        pytest.fail(f"{verb}: no recipe in tests/fuzz/seeds.py (test_every_verb_has_a_seed says which inputs)")
    if verb in ("annotate serve", "arena run"):  # built and checked, then stopped before it binds
        import uvicorn

        monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    for recipe in recipes:  # the valid invocation ends with exit 0 (or the codes VALID_EXITS allows)
        with workdir() as root, _inside(root):
            slots = _slots(recipe)
            _place_all(root, slots)
            args = _fill(recipe, root)
            found = run_verb(root, args, root / "out", names=_NAMES, skip=_state(root, slots))
            if found.exit_code not in seeds.VALID_EXITS.get(verb, (0,)):
                found.problems.append(f"the valid invocation ended with exit {found.exit_code}")
            _record(verb, "valid", "unchanged", args, found, misread=False)
    if not any(_slots(recipe) for recipe in recipes):  # a verb that reads no input (`ls`): nothing to mutate
        assert not FAILURES.get((verb, "valid")), FAILURES[verb, "valid"]
        return

    @settings(fuzz(per_verb(verb)), phases=[Phase.explicit, Phase.generate])
    @given(st.data())
    def one(data: st.DataObject) -> None:
        draw = cast(st.DrawFn, data.draw)
        recipe = data.draw(st.sampled_from(recipes))
        applicable = _applicable(recipe)
        cls = data.draw(st.sampled_from(applicable))
        with workdir() as root, _inside(root):
            slots = _slots(recipe)
            _place_all(root, slots)
            keep: Path | None = None
            what = None
            if cls != "hostile":
                what = _plant_misread(draw, root, slots, cls)
            if what is None:
                cls = "hostile"
                what, keep = _hostile(draw, root, recipe, slots)
            kept = keep.read_bytes() if keep is not None else None
            args = _fill(recipe, root)
            found = run_verb(root, args, root / "out", names=_NAMES, skip=_state(root, slots))
            if keep is not None and (not keep.is_file() or keep.read_bytes() != kept):
                found.problems.append(f"a stranger's file at the output changed: {keep.name}")
            _record(verb, cls, what, args, found, misread=cls in MISREAD_CLASSES)

    one()
    failures = {c: fs for (v, c), fs in FAILURES.items() if v == verb}
    assert not failures, "\n".join(f"{verb} / {c}: {len(fs)} failed, e.g.\n  " + "\n  ".join(fs[:3])
                                   for c, fs in failures.items())
