"""Fuzzing the benchmark readers (native JSONL, hub and release-mirror layouts) in process.

Valid inputs must load to exactly the cases they were generated from; every planted defect must stop the load
with a DataError naming its file, line and field, and with --skip-invalid be the one row skipped while every
other case still loads exactly."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tailorbench.datasets import load_benchmark
from tailorbench.datasets.rows import pair_hash
from tailorbench.errors import DataError
from tailorbench.files import MAX_NESTING
from tailorbench.personas import normalise_persona
from tailorbench.schema import PairCase
from tests.fuzz.conftest import count, expect_error, fuzz, workdir
from tests.fuzz.gen import NATIVE_DEFECTS, layout_text, name, native_rows, persona, plant_native, text, too_deep

#: defective files planted in copies of each generated benchmark
DEFECTS_PER_EXAMPLE = 7


def expected_native(rows: list[dict[str, Any]], lines: list[int], stem: str) -> list[dict[str, Any]]:
    out = []
    for row, line in zip(rows, lines):
        user = str(row["user_id"])
        meta = dict(row.get("meta") or {})
        meta.setdefault("pair_hash", pair_hash(user, row["question"], row["chosen"], row["rejected"]))
        out.append({
            "id": row["id"] if row.get("id") not in (None, "") else f"{row['split']}/{row['tier']}/{stem}:{line}",
            "split": row["split"], "tier": row["tier"], "user_id": user,
            "persona": normalise_persona(row.get("persona") or {})[0],
            "question": row["question"], "chosen": row["chosen"], "rejected": row["rejected"], "meta": meta,
        })
    return out


def dumped(cases: list[PairCase]) -> list[dict[str, Any]]:
    return [c.model_dump() for c in cases]


@fuzz(300)
@given(st.data())
def test_valid_native_jsonl_loads_to_exactly_its_rows(data: st.DataObject) -> None:
    rows = data.draw(native_rows())
    for _ in range(2):  # the same rows in two generated layouts (blank lines, CRLF, BOM, escapes)
        count("native valid")
        raw, lines = data.draw(layout_text(rows))
        with workdir() as root:
            path = root / "bench.jsonl"
            path.write_bytes(raw)
            bench = load_benchmark(path)
            assert bench.layout == "native" and not bench.invalid.rows
            assert dumped(bench.cases) == expected_native(rows, lines, "bench")


@fuzz(300)
@given(st.data())
def test_every_native_defect_names_file_line_field(data: st.DataObject) -> None:
    """Each example plants several defects, one file each, in copies of one generated benchmark."""
    base = data.draw(native_rows(min_rows=2))
    for _ in range(DEFECTS_PER_EXAMPLE):
        count("native defect")
        rows = copy.deepcopy(base)
        kind, field = data.draw(st.sampled_from(NATIVE_DEFECTS))
        k = data.draw(st.integers(1 if kind == "duplicate" else 0, len(rows) - 1))
        raw_line = plant_native(data.draw, rows, k, kind)
        raw, lines = data.draw(layout_text(rows))
        if raw_line is not None:  # swap row k's line for the raw bytes
            parts = raw.split(b"\n")
            index = lines[k] - 1
            bom = b"\xef\xbb\xbf" if index == 0 and raw.startswith(b"\xef\xbb\xbf") else b""
            parts[index] = bom + raw_line + (b"\r" if parts[index].endswith(b"\r") else b"")
            raw = b"\n".join(parts)
        with workdir() as root:
            path = root / "bench.jsonl"
            path.write_bytes(raw)
            try:
                load_benchmark(path)
            except DataError as error:
                expect_error(error, path, lines[k], field)
            else:
                raise AssertionError(f"defect {kind} on line {lines[k]} was accepted")
            # skipped instead: exactly that row is counted, every other row loads exactly
            bench = load_benchmark(path, skip_invalid=True)
            assert [(e.line, e.field) for e in bench.invalid.rows] == [(lines[k], field)]
            others = [r for j, r in enumerate(rows) if j != k]
            other_lines = [line for j, line in enumerate(lines) if j != k]
            assert dumped(bench.cases) == expected_native(others, other_lines, "bench")


# --- PersonaFeedback layouts -------------------------------------------------------------------------------

HUB_SPLITS = {"general": "general", "specific": "specific", "spedific": "specific"}
HUB_TIERS = {"easy": "easy", "medium": "medium", "mid": "medium", "hard": "hard"}


@st.composite
def pf_dataset(draw: st.DrawFn, layout: str) -> dict[str, Any]:
    """A hub or mirror dataset: personas (with where each is), tier files of rows, and the expected cases."""
    keys = draw(st.lists(name, min_size=1, max_size=4, unique=True))
    profiles = [{**draw(persona), "Name": draw(text)} for _ in keys]
    persona_lines: dict[str, int] = {}
    persona_rows: list[dict[str, Any] | None] = []  # hub: None is a blank line
    by_name: list[bool] = []
    for key, profile in zip(keys, profiles):
        if layout == "hub":
            for _ in range(draw(st.integers(0, 1))):
                persona_rows.append(None)
            named = draw(st.booleans())
            by_name.append(named)
            persona_rows.append({"user_id": key, **profile} if named else profile)
            persona_lines[key] = len(persona_rows)
        else:
            by_name.append(True)
    # the key a case ends up with: the name, or (hub, unnamed) the persona's line number
    final_keys = [k if named else str(persona_lines[k]) for k, named in zip(keys, by_name)]
    normalised = {fk: normalise_persona(p)[0] for fk, p in zip(final_keys, profiles)}
    splits = list(HUB_SPLITS) if layout == "hub" else ["general", "specific"]
    tiers = list(HUB_TIERS) if layout == "hub" else ["easy", "mid", "medium", "hard"]
    combos = draw(st.lists(st.tuples(st.sampled_from(splits), st.sampled_from(tiers)), min_size=1, max_size=3,
                           unique_by=lambda c: (HUB_SPLITS[c[0]], c[1])))
    files: list[tuple[str, list[dict[str, Any]]]] = []
    ids = iter(draw(st.lists(st.integers(0, 9999), min_size=20, max_size=20, unique=True)))
    for split_name, tier_name in combos:
        rows = []
        for _ in range(draw(st.integers(1, 4))):
            j = draw(st.integers(0, len(keys) - 1))
            ref: Any = keys[j]
            if layout == "hub" and (not by_name[j] or draw(st.booleans())):  # the hub's line-number ids
                line = persona_lines[keys[j]]
                ref = draw(st.sampled_from([line, str(line)]))
            chosen = draw(text)
            row = {"user_id": ref, "question": draw(text), "chosen": chosen,
                   draw(st.sampled_from(["reject", "rejected"])): draw(text.filter(lambda s, c=chosen: s != c))}
            if draw(st.integers(0, 3)) == 0:
                row["id"] = f"pf-{next(ids)}"
            rows.append((row, final_keys[j]))
        rel = f"data/{split_name}/{tier_name}.jsonl" if layout == "hub" else f"{split_name}_{tier_name}.jsonl"
        files.append((rel, rows))
    files.sort(key=lambda f: f[0])
    return {"keys": keys, "profiles": profiles, "persona_rows": persona_rows, "files": files,
            "normalised": normalised, "by_name": by_name, "persona_lines": persona_lines}


def write_pf(root: Path, layout: str, ds: dict[str, Any]) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    if layout == "hub":
        path = root / "persona" / "all_personas.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(("" if r is None else json.dumps(r, ensure_ascii=False)) + "\n"
                                for r in ds["persona_rows"]), "utf-8")
        paths["personas"] = path
    else:
        (root / "persona_all").mkdir()
        for key, profile in zip(ds["keys"], ds["profiles"]):
            (root / "persona_all" / f"{key}.json").write_text(json.dumps(profile, ensure_ascii=False), "utf-8")
    for rel, rows in ds["files"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r, _ in rows), "utf-8")
        paths[rel] = path
    return paths


def expected_pf(layout: str, ds: dict[str, Any], skip: tuple[str, int] | None = None) -> list[dict[str, Any]]:
    out = []
    for rel, rows in ds["files"]:
        if layout == "hub":
            _, split_dir, tier_file = rel.split("/")
            split, tier, stem = HUB_SPLITS[split_dir], HUB_TIERS[tier_file[:-6]], tier_file[:-6]
        else:
            split_name, tier_name = rel[:-6].split("_")
            split, tier, stem = split_name, HUB_TIERS[tier_name], rel[:-6]
        for line, (row, key) in enumerate(rows, start=1):
            if skip == (rel, line):
                continue
            rejected = row.get("rejected", row.get("reject"))
            meta: dict[str, Any] = {"pair_hash": pair_hash(key, row["question"], row["chosen"], rejected)}
            if str(row["user_id"]) != key:
                meta["source_user_id"] = row["user_id"]
            out.append({"id": row.get("id") or f"{split}/{tier}/{stem}:{line}", "split": split, "tier": tier,
                        "user_id": key, "persona": ds["normalised"][key], "question": row["question"],
                        "chosen": row["chosen"], "rejected": rejected, "meta": meta})
    return out


@fuzz(120)
@given(st.sampled_from(["hub", "mirror"]).flatmap(lambda lay: st.tuples(st.just(lay), pf_dataset(lay))))
def test_valid_personafeedback_layouts_load_to_exactly_their_rows(case: tuple[str, dict[str, Any]]) -> None:
    count("pf valid")
    layout, ds = case
    with workdir() as root:
        write_pf(root, layout, ds)
        bench = load_benchmark(root)
        assert bench.layout == layout and not bench.invalid.rows
        assert dumped(bench.cases) == expected_pf(layout, ds)
        assert bench.personas_total == len(ds["keys"])


ROW_DEFECTS = ("missing:question", "missing:chosen", "missing:reject", "missing:user_id", "blank:question",
               "type:chosen", "unknown-user", "same", "duplicate", "json", "not-object")
def _depth(value: object) -> int:
    """Levels of objects and lists in `value` (the generated values nest along one branch)."""
    depth = 0
    while isinstance(value, dict | list) and value:
        depth += 1
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return depth + (1 if isinstance(value, dict | list) else 0)


PERSONA_DEFECTS = ("persona:json", "persona:deep", "persona:not-object", "persona:duplicate")


@fuzz(100)
@given(st.data())
def test_every_personafeedback_defect_names_file_line_field(data: st.DataObject) -> None:
    """Each example plants several defects, one dataset each, in copies of one generated dataset."""
    layout = data.draw(st.sampled_from(["hub", "mirror"]))
    ds = data.draw(pf_dataset(layout))
    for _ in range(DEFECTS_PER_EXAMPLE):
        count("pf defect")
        _one_pf_defect(data, layout, ds)


def _one_pf_defect(data: st.DataObject, layout: str, ds: dict[str, Any]) -> None:
    kind = data.draw(st.sampled_from(ROW_DEFECTS + PERSONA_DEFECTS))
    flat = [(rel, line) for rel, rows in ds["files"] for line in range(1, len(rows) + 1)]
    if kind == "duplicate" and len(flat) < 2:
        kind = "same"
    if kind == "persona:duplicate" and layout == "mirror":
        kind = "persona:deep"  # one file per persona: a mirror cannot repeat a key
    with workdir() as root:
        paths = write_pf(root, layout, ds)
        if kind.startswith("persona:"):
            j = data.draw(st.integers(0, len(ds["keys"]) - 1))
            key = ds["keys"][j]
            if layout == "mirror":
                path = root / "persona_all" / f"{key}.json"
                good = path.read_text("utf-8")
                where = {"persona:json": (1, None), "persona:not-object": (1, None), "persona:deep": (None, "persona")}
                bad = {"persona:json": good[: data.draw(st.integers(1, len(good) - 1))],
                       "persona:not-object": json.dumps([ds["profiles"][j]]),
                       "persona:deep": json.dumps({"Preference": data.draw(too_deep)})}[kind]
                path.write_text(bad, "utf-8")
                line, field = where[kind]
            else:
                path = paths["personas"]
                lines = path.read_text("utf-8").split("\n")
                line = ds["persona_lines"][key]
                field = {"persona:json": None, "persona:not-object": None, "persona:deep": "persona",
                         "persona:duplicate": "user_id"}[kind]
                if kind == "persona:json":
                    lines[line - 1] = lines[line - 1][: data.draw(st.integers(1, len(lines[line - 1]) - 1))]
                elif kind == "persona:not-object":
                    lines[line - 1] = "[1, 2]"
                elif kind == "persona:deep":
                    deep_row = {"user_id": f"{key}_deep", "Bias": data.draw(too_deep)}
                    if not ds["by_name"][j]:
                        deep_row = {"Name": "x", "Bias": data.draw(too_deep)}
                    lines[line - 1] = json.dumps(deep_row)
                    # deeper than every JSONL line may be (files.MAX_NESTING), the line reader names the key the
                    # deep value is under; less deep, the persona reader's own bound names the persona
                    if 1 + _depth(deep_row["Bias"]) > MAX_NESTING:
                        field = "Bias"
                else:  # the same key again (a name, or the line number an unnamed persona goes by), last
                    again = key if ds["by_name"][j] else str(line)
                    lines.insert(len(lines) - 1, json.dumps({"user_id": again, "Name": "again"}))
                    line = len(lines) - 1
                path.write_text("\n".join(lines), "utf-8")
            skip = None
        else:
            rel, line = data.draw(st.sampled_from(flat if kind != "duplicate" else flat[1:]))
            path = paths[rel]
            rows = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
            row = rows[line - 1]
            rejected_key = "rejected" if "rejected" in row else "reject"
            field = {"missing:question": "question", "missing:chosen": "chosen", "missing:reject": "reject",
                     "missing:user_id": "user_id", "blank:question": "question", "type:chosen": "chosen",
                     "unknown-user": "user_id", "same": rejected_key, "duplicate": "id"}.get(kind)
            raw: str | None = None
            if kind.startswith("missing:"):
                row.pop(kind.split(":")[1], None)
                if kind == "missing:reject":
                    row.pop("rejected", None)
            elif kind == "blank:question":
                row["question"] = data.draw(st.sampled_from(["", " ", "\t"]))
            elif kind == "type:chosen":
                row["chosen"] = data.draw(st.one_of(st.lists(st.integers(), max_size=2), st.booleans(),
                                                    st.dictionaries(name, st.integers(), max_size=1)))
            elif kind == "unknown-user":
                row["user_id"] = data.draw(st.sampled_from(["no-one", "", 0, 999, "9999"]))
            elif kind == "same":
                row[rejected_key] = row["chosen"]
            elif kind == "duplicate":
                first = flat.index((rel, line))
                other_rel, other_line = data.draw(st.sampled_from(flat[:first]))
                other_path = paths[other_rel]
                other_rows = [json.loads(x) for x in other_path.read_text("utf-8").splitlines()]
                other_rows[other_line - 1]["id"] = row["id"] = "twice"
                if other_path == path:
                    rows[other_line - 1]["id"] = "twice"
                else:
                    other_path.write_text("".join(json.dumps(r) + "\n" for r in other_rows), "utf-8")
            elif kind == "json":
                good = json.dumps(row)
                raw = good[: data.draw(st.integers(1, len(good) - 1))]
            elif kind == "not-object":
                raw = data.draw(st.sampled_from(["[1]", "2", '"x"', "null"]))
            text_rows = [json.dumps(r, ensure_ascii=False) for r in rows]
            if raw is not None:
                text_rows[line - 1] = raw
            path.write_text("".join(t + "\n" for t in text_rows), "utf-8")
            skip = (rel, line)
        try:
            load_benchmark(root)
        except DataError as error:
            expect_error(error, path, line, field)
        else:
            raise AssertionError(f"defect {kind} in {path}:{line} was accepted")
        if skip is not None and kind != "duplicate":
            bench = load_benchmark(root, skip_invalid=True)
            assert [(e.path, e.line, e.field) for e in bench.invalid.rows] == [(str(path), line, field)]
            assert dumped(bench.cases) == expected_pf(layout, ds, skip)
