"""Fuzzing the long rating format (JSONL and CSV) that every agreement statistic reads, in process and through
`tailor agree` (Typer's CliRunner): valid files load to exactly their ratings, defects name file, line, field."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tailorbench.agreement.ratings import read_ratings, read_ratings_file
from tailorbench.agreement.records import GROUPS
from tailorbench.cli.app import app
from tailorbench.errors import DataError
from tests.fuzz.conftest import count, expect_error, fuzz, workdir
from tests.fuzz.gen import name

_POOL = st.lists(name, min_size=1, max_size=4, unique=True)
_PAD = st.sampled_from(["", "", " ", "  "])
_KIND = st.sampled_from(["str", "int", "bool"])


@st.composite
def ratings(draw: st.DrawFn, csv_format: bool) -> list[dict[str, Any]]:
    """Ratings with unique (item, rater), one label type (CSV: text or integers), some null labels."""
    items, raters = draw(_POOL), draw(_POOL)
    pairs = draw(st.lists(st.tuples(st.sampled_from(items), st.sampled_from(raters)), min_size=2, max_size=8,
                          unique=True))
    kind = "int" if csv_format and draw(st.booleans()) else ("str" if csv_format else draw(_KIND))
    labels = {"str": st.sampled_from(["A", "B", "ok", "bad", "unsure"]), "int": st.integers(-2, 5),
              "bool": st.booleans()}[kind]
    out = []
    for item, rater in pairs:
        record: dict[str, Any] = {"item": draw(_PAD) + item + draw(_PAD), "rater": rater,
                                  "label": None if draw(st.integers(0, 6)) == 0 else draw(labels)}
        if draw(st.booleans()):
            record["group"] = draw(st.sampled_from(GROUPS))  # the documented groups; any other is a defect
        out.append(record)
    return out


def write(path: Path, records: list[dict[str, Any]], csv_format: bool, float_ints: bool = False) -> list[int]:
    """Write the records; returns the line of each."""
    if csv_format:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["item", "rater", "label", "group"])
        for r in records:
            label = r["label"]
            writer.writerow([r["item"], r["rater"], "" if label is None else str(label), r.get("group", "")])
        path.write_text(buffer.getvalue(), "utf-8")
        return list(range(2, len(records) + 2))
    lines = []
    for r in records:
        if float_ints and type(r["label"]) is int:
            r = {**r, "label": float(r["label"])}
        lines.append(json.dumps(r, ensure_ascii=False))
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return list(range(1, len(records) + 1))


def expected(records: list[dict[str, Any]], lines: list[int], path: Path) -> list[tuple[Any, ...]]:
    return [(r["item"].strip(), r["rater"], r["label"], r.get("group") or "human", str(path), line)
            for r, line in zip(records, lines) if r["label"] is not None]


@fuzz(300)
@given(st.booleans().flatmap(lambda c: st.tuples(st.just(c), ratings(c), st.booleans())))
def test_valid_ratings_load_to_exactly_their_records(case: tuple[bool, list[dict[str, Any]], bool]) -> None:
    count("ratings valid")
    csv_format, records, float_ints = case
    with workdir() as root:
        path = root / ("r.csv" if csv_format else "r.jsonl")
        lines = write(path, records, csv_format, float_ints)
        got = read_ratings_file(path)
        assert [(r.item, r.rater, r.label, r.group, r.source, r.line) for r in got.ratings] == expected(
            records, lines, path)
        assert all(type(r.label) is type(e["label"]) for r, e in zip(got.ratings, [x for x in records
                                                                                   if x["label"] is not None]))
        assert got.missing["null label"] == sum(r["label"] is None for r in records)


JSONL_DEFECTS = ("missing:item", "missing:rater", "missing:label", "type:item", "type:rater", "type:group",
                 "blank:item", "blank:rater", "blank:label", "label:float", "label:list", "duplicate", "mixed",
                 "json", "not-object")
CSV_DEFECTS = ("header:item", "header:rater", "header:label", "cells", "blank:item", "blank:rater", "duplicate")


def plant(data: st.DataObject, records: list[dict[str, Any]], csv_format: bool, path: Path
          ) -> tuple[int, str | None]:
    """Write the records with one defect; returns the (line, field) the error must name."""
    kind = data.draw(st.sampled_from(CSV_DEFECTS if csv_format else JSONL_DEFECTS))
    k = data.draw(st.integers(1 if kind == "duplicate" else 0, len(records) - 1))
    row = records[k]
    what, _, field = kind.partition(":")
    if what == "header":
        write(path, records, csv_format)
        header, *rest = path.read_text("utf-8").split("\n")
        path.write_text("\n".join([",".join(c for c in header.split(",") if c != field), *rest]), "utf-8")
        return 1, field
    if what == "missing":
        row.pop(field)
    elif what == "type":
        row[field] = data.draw(st.one_of(st.lists(st.integers(), max_size=2), st.booleans(),
                                         st.dictionaries(name, st.integers(), max_size=1),
                                         st.just(1.5)))
    elif what == "blank":
        row[field] = data.draw(st.sampled_from(["", " ", "\t "]))
    elif kind == "label:float":
        row["label"] = data.draw(st.sampled_from([1.5, -0.25, 1e-3]))
        field = "label"
    elif kind == "label:list":
        row["label"] = data.draw(st.one_of(st.lists(st.integers(), max_size=2), st.dictionaries(name, st.integers(),
                                                                                                 max_size=1)))
        field = "label"
    elif kind == "duplicate":
        j = data.draw(st.integers(0, k - 1))
        row["item"], row["rater"] = records[j]["item"], records[j]["rater"]
        field = "rater"
    elif kind == "mixed":
        labelled = [j for j, r in enumerate(records) if r["label"] is not None]
        if len(labelled) < 2:  # fill the null labels with one of the file's own type
            fill = records[labelled[0]]["label"] if labelled else "A"
            for r in records:
                r["label"] = fill if r["label"] is None else r["label"]
            labelled = list(range(len(records)))
        other = {"str": 7, "int": "x", "bool": "x"}[_kind(records[labelled[0]]["label"])]
        k = data.draw(st.sampled_from(labelled))
        records[k]["label"] = other
        # the error names the first rating whose type differs from the first rating's
        kinds = [_kind(records[j]["label"]) for j in labelled]
        culprit = next(j for j, kd in zip(labelled, kinds) if kd != kinds[0])
        lines = write(path, records, csv_format)
        return lines[culprit], "label"
    elif kind == "cells":
        lines = write(path, records, csv_format)
        text = path.read_text("utf-8").split("\n")
        text[lines[k] - 1] += ",extra"
        path.write_text("\n".join(text), "utf-8")
        return lines[k], None
    lines = write(path, records, csv_format)
    if kind in ("json", "not-object"):
        text = path.read_text("utf-8").split("\n")
        good = text[lines[k] - 1]
        text[lines[k] - 1] = good[: data.draw(st.integers(1, len(good) - 1))] if kind == "json" else "[1, 2]"
        path.write_text("\n".join(text), "utf-8")
        return lines[k], None
    return lines[k], field


def _kind(label: Any) -> str:
    return "bool" if isinstance(label, bool) else "int" if isinstance(label, int) else "str"


@fuzz(250)
@given(st.data())
def test_every_ratings_defect_names_file_line_field(data: st.DataObject) -> None:
    csv_format = data.draw(st.booleans())
    base = data.draw(ratings(csv_format))
    for _ in range(5):
        count("ratings defect")
        records = [dict(r) for r in base]
        with workdir() as root:
            path = root / ("r.csv" if csv_format else "r.jsonl")
            line, field = plant(data, records, csv_format, path)
            try:
                read_ratings([path])
            except DataError as error:
                expect_error(error, path, line, field)
            else:
                raise AssertionError(f"{path} was accepted:\n{path.read_text()}")


@fuzz(40)
@given(st.data())
def test_tailor_agree_reports_each_defect_in_one_line(data: st.DataObject) -> None:
    """The same defects through the CLI: exit 2, one `error:` line naming file:line, nothing written."""
    count("agree cli defect")
    csv_format = data.draw(st.booleans())
    records = data.draw(ratings(csv_format))
    with workdir() as root:
        path = root / ("r.csv" if csv_format else "r.jsonl")
        line, field = plant(data, records, csv_format, path)
        out = root / "agree.json"
        result = CliRunner().invoke(app, ["agree", str(path), "--resamples", "10", "--out", str(out), "--json"])
        assert result.exit_code == 2 and not isinstance(result.exception, Exception), result.exception
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert f"{path}:{line}" in result.stderr and (field is None or f"'{field}'" in result.stderr)
        assert not out.exists()
