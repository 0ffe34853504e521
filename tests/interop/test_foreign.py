"""Projects tailorbench did not make, and today's Potato: files the real tools wrote.

- `data/label_studio_foreign_pairwise.json`: a real Label Studio 1.23.2 export of a 12-pair, 3-annotator project
  with a team's own Pairwise config (data keys `pair_id`, `response_left`, `response_right`, `personalized`,
  `generic`; the personalized answer placed at random per task), made by `perf/label_studio_roundtrip.py
  --save-foreign` (the votes given, "a" = the personalized answer, beside it as `.votes.json`).
- `data/potato2_{pairwise,ab_rating}/`: tailorbench's Potato export after a real Potato 2.12.1 server on loopback
  took two annotators' labels over HTTP (`perf/potato_roundtrip.py --save`; the labels given in
  `labels_given.json`): its `user_state.json`, `annotation_history.jsonl` and `exports/jsonl/annotations.jsonl`.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
from typer.testing import CliRunner

from tailorbench.agreement import AgreeOptions, agreement_report
from tailorbench.agreement.records import Rating, RatingSet
from tailorbench.cli.app import app
from tailorbench.errors import ConfigError, DataError
from tailorbench.interop import detect_format, parse_map, read_export
from tests.interop.conftest import DATA

LS = DATA / "label_studio_foreign_pairwise.json"
MAP = "item=data.pair_id,a=data.personalized,b=data.generic,left=data.response_left,right=data.response_right"


def _reference(ratings: RatingSet) -> tuple[float, float]:
    """Fleiss' kappa by statsmodels and Krippendorff's alpha (nominal) by krippendorff, on the same votes."""
    by_item: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in ratings.ratings:
        by_item[r.item][r.rater] = r.label
    labels = sorted({str(r.label) for r in ratings.ratings})
    raters = sorted({r.rater for r in ratings.ratings})
    table = np.array([[labels.index(str(by_item[i][r])) for r in raters] for i in sorted(by_item)])
    counts, _ = aggregate_raters(table)
    data = np.array([[labels.index(str(by_item[i][r])) if r in by_item[i] else np.nan for i in sorted(by_item)]
                     for r in raters], dtype=float)
    return float(fleiss_kappa(counts)), float(krippendorff.alpha(reliability_data=data,
                                                                 level_of_measurement="nominal"))


def _ours(ratings: RatingSet) -> tuple[float, float]:
    report = agreement_report(ratings, None, AgreeOptions(50, 0))
    return report["fleiss_kappa"]["value"], report["krippendorff_alpha"]["nominal"]["value"]


def test_label_studio_export_without_a_mapping_is_read_as_sides() -> None:
    assert detect_format(LS) == "label-studio"
    ratings, report = read_export(LS)
    tasks = json.loads(LS.read_text(encoding="utf-8"))
    assert report.ratings == 36 and not report.unmappable
    assert {r.item for r in ratings.ratings} == {str(t["id"]) for t in tasks}
    assert {r.label for r in ratings.ratings} <= {"left", "right"}
    assert report.mapping and report.mapping["labels"].startswith("sides") and report.mapping["item"] == "id"
    assert any("about sides" in note for note in report.notes)
    assert _ours(ratings) == pytest.approx(_reference(ratings), abs=1e-12)


def test_label_studio_export_with_a_mapping_gives_the_answers_voted() -> None:
    ratings, report = read_export(LS, "label-studio", MAP)
    votes = json.loads(LS.with_suffix(".votes.json").read_text(encoding="utf-8"))
    ids = {email: str(uid) for email, uid in votes["users"].items()}
    want = {(item, ids[email]): {"a": "A", "b": "B"}[v] for item, email, v in votes["votes"]}
    assert {(r.item, r.rater): r.label for r in ratings.ratings} == want
    assert report.mapping == {"given": parse_map(MAP).to_dict(), "item": "data.pair_id", "rater": "completed_by",
                              "question": ["preference"], "labels": "answers A / B"}
    assert _ours(ratings) == pytest.approx(_reference(ratings), abs=1e-12)
    # answers are what the sides meant: the side-based kappa differs wherever the placement was swapped
    assert _ours(ratings) != _ours(read_export(LS)[0])


def test_a_mapping_that_maps_nothing_is_exit_2_with_the_reason(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "ratings.jsonl"
    bad = runner.invoke(app, ["annotate", "import-labels", str(LS), "--out", str(out), "--map", "item=data.nope"])
    assert bad.exit_code == 2 and "no item id at 'data.nope'" in bad.output and not out.exists()
    agree = runner.invoke(app, ["agree", str(LS), "--map", "item=data.nope", "--n-boot", "10"])
    assert agree.exit_code == 2 and "no item id" in agree.output
    ok = runner.invoke(app, ["annotate", "import-labels", str(LS), "--out", str(out), "--map", MAP, "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["ratings"] == 36
    meta = json.loads(out.with_suffix(".meta.json").read_text(encoding="utf-8"))
    assert meta["mapping"]["labels"] == "answers A / B" and meta["tool"] == "label-studio"
    assert len(out.read_text(encoding="utf-8").splitlines()) == 36


def test_a_mapping_file_and_bad_mappings(tmp_path: Path) -> None:
    spec = tmp_path / "map.yaml"
    spec.write_text("item: data.pair_id\na: data.personalized\nb: data.generic\nleft: data.response_left\n"
                    "right: data.response_right\n", encoding="utf-8")
    assert parse_map(str(spec)) == parse_map(MAP)
    for wrong in ("item", "colour=red", "a=data.x"):
        with pytest.raises(ConfigError):
            parse_map(wrong)


def test_a_side_that_shows_neither_answer_is_unmappable_with_its_line(tmp_path: Path) -> None:
    tasks = json.loads(LS.read_text(encoding="utf-8"))
    tasks[2]["data"]["response_left"] = "something else"
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    _ratings, report = read_export(path, "label-studio", MAP)
    lefts = sum(a["result"][0]["value"]["selected"] == "left" for a in tasks[2]["annotations"])
    assert report.not_rated["unmappable"] == lefts and report.ratings == 36 - lefts
    assert {u["line"] for u in report.unmappable} == {3}
    assert "shows neither answer A" in report.unmappable[0]["reason"]


@pytest.mark.parametrize("task", ["pairwise", "ab_rating"])
def test_potato2_files_give_the_labels_given_and_their_kappas(task: str) -> None:
    project = DATA / f"potato2_{task}"
    assert detect_format(project) == "potato"
    ratings, report = read_export(project)
    given = {(item, rater): label for item, rater, label in
             json.loads((project / "labels_given.json").read_text(encoding="utf-8"))}
    assert {(r.item, r.rater): r.label for r in ratings.ratings} == given
    assert not report.unmappable and {Path(s).name for s in report.sources} == {"user_state.json"}
    direct = RatingSet(ratings=[Rating(i, r, label) for (i, r), label in given.items()])
    assert _ours(ratings) == _ours(direct)
    if task == "pairwise":
        assert report.confidence == {"2": len(given)}


def test_potato2_annotator_folders_without_their_states_are_refused(tmp_path: Path) -> None:
    """At 97f6c24 a Potato 2 folder whose annotators kept `annotation_history.jsonl` but lost `user_state.json`
    (their current labels) was read from the lagging periodic export instead, silently: 1 of the 30 annotations
    of the fuzz case, exit 0, no note. Now exit 2 naming the annotator folder; one missing state is enough."""
    project = tmp_path / "p"
    shutil.copytree(DATA / "potato2_pairwise", project)
    (project / "annotation_output" / "bob" / "user_state.json").unlink()
    with pytest.raises(DataError, match=r"annotation_output/bob: .* no user_state\.json"):
        read_export(project)
    out = tmp_path / "ratings.jsonl"
    result = CliRunner().invoke(app, ["annotate", "import-labels", str(project), "--out", str(out)])
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "bob" in result.stderr, result.output
    assert not out.exists()


def test_potato2_export_file_alone_is_read_with_a_note(tmp_path: Path) -> None:
    """Only Potato 2's periodic export (`exports/jsonl/annotations.jsonl`) copied, no annotator folder: it is
    read, and the import says so (a note printed and kept in OUT.meta.json, with the count): the export holds
    the labels as of its last write, so it may lag (at 97f6c24: no note)."""
    project = tmp_path / "p"
    shutil.copytree(DATA / "potato2_pairwise", project)
    for folder in ("alice", "bob"):
        shutil.rmtree(project / "annotation_output" / folder)
    _ratings, report = read_export(project)
    rows = (project / "annotation_output/exports/jsonl/annotations.jsonl").read_text().splitlines()
    assert report.ratings == len(rows) >= 1 and not report.unmappable
    [note] = report.notes
    assert "periodic export" in note and f"{len(rows)} annotation(s)" in note and "may lag" in note
    out = tmp_path / "ratings.jsonl"
    result = CliRunner().invoke(app, ["annotate", "import-labels", str(project), "--out", str(out)])
    assert result.exit_code == 0 and "periodic export" in result.stdout, result.output
    meta = json.loads(out.with_suffix(".meta.json").read_text(encoding="utf-8"))
    assert meta["notes"] == [note] and meta["annotations"] == len(rows)
    with pytest.raises(DataError, match="no annotator output"):
        shutil.rmtree(project / "annotation_output/exports")
        read_export(project)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda text: text.replace("annotation_schemes:", "annotation_scheme:"), "annotation_schemes"),
    (lambda text: text.replace("data_files:", "data_file:"), "data_files"),
    (lambda text: text.replace("annotation_schemes:", "annotation_schemes: 3\nx:"), "annotation_schemes"),
])
@pytest.mark.parametrize("verb", ["import-labels", "agree"])
def test_a_broken_potato_config_says_what_is_wrong_with_it(tmp_path: Path, edit: Any, field: str,
                                                           verb: str) -> None:
    """At 97f6c24 a Potato project whose config lost `annotation_schemes` (a misspelt key) was not recognised as
    Potato: `tailor agree` read the folder as a run directory and said predictions.jsonl was missing, and
    `import-labels` said it was no export at all. Now the config's file and field are named."""
    project = tmp_path / "p"
    shutil.copytree(DATA / "potato2_pairwise", project)
    config = project / "config.yaml"
    config.write_text(edit(config.read_text(encoding="utf-8")), encoding="utf-8")
    args = ["agree", str(project)] if verb == "agree" else [
        "annotate", "import-labels", str(project), "--out", str(tmp_path / "r.jsonl")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {config}: field '{field}'"), result.stderr
    assert "predictions" not in result.stderr


def test_a_potato_folder_without_its_config_names_the_config(tmp_path: Path) -> None:
    """The output folder (annotation_output/) marks a Potato project even when its config.yaml was not copied
    (at 97f6c24: read as a run directory without predictions.jsonl)."""
    project = tmp_path / "p"
    shutil.copytree(DATA / "potato2_pairwise", project)
    (project / "config.yaml").unlink()
    result = CliRunner().invoke(app, ["agree", str(project)])
    assert result.exit_code == 2 and "no Potato config" in result.stderr, result.output


def _nested_with_status(flat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SDK's flat records (statuses kept) as nested records whose responses carry their status, the shape
    the argilla_sdk pre-release's `Record.to_dict` wrote (`{"value", "user_id", "status"}`)."""
    out = []
    for row in flat:
        record: dict[str, Any] = {"id": row["id"], "metadata": {k: row[k] for k in row if k.startswith("tb_")},
                                  "responses": {}}
        for key in [k for k in row if k.endswith(".responses")]:
            question = key[: -len(".responses")]
            record["responses"][question] = [
                {"value": v, "user_id": u, "status": s}
                for v, u, s in zip(row[key], row[f"{key}.users"], row[f"{key}.status"])]
        out.append(record)
    return out


def test_argilla_nested_and_flat_exports_of_the_same_responses_agree(tmp_path: Path) -> None:
    flat = DATA / "argilla_sdk_pairwise_records_flat.json"
    nested = tmp_path / "records.json"
    nested.write_text(json.dumps(_nested_with_status(json.loads(flat.read_text(encoding="utf-8")))), "utf-8")
    (a, ra), (b, rb) = read_export(flat), read_export(nested)
    assert sorted((r.item, r.rater, r.label) for r in a.ratings) == sorted((r.item, r.rater, r.label)
                                                                          for r in b.ratings)
    assert ra.not_rated == rb.not_rated and rb.not_rated["draft"] == 1 and rb.not_rated["discarded"] == 1
    assert not rb.notes  # every response carried its status
    opts = AgreeOptions(100, 0)
    assert agreement_report(a, None, opts)["fleiss_kappa"] == agreement_report(b, None, opts)["fleiss_kappa"]


def test_argilla_records_made_without_tailorbench(tmp_path: Path) -> None:
    """A team's own dataset: a LabelQuestion over fields shown left / right, a RatingQuestion beside it."""
    records = [{"id": f"r{i}", "fields": {"left": f"L{i}", "right": f"R{i}", "mine": f"L{i}" if i % 2 else f"R{i}",
                                          "other": f"R{i}" if i % 2 else f"L{i}"},
                "responses": {"better": [{"value": side, "user_id": user, "status": "submitted"}
                                         for user, side in (("u1", "left"), ("u2", "right"))],
                              "quality": [{"value": 4, "user_id": "u1", "status": "submitted"}]}}
               for i in range(4)]
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    _, report = read_export(path, "argilla")
    assert report.ratings == 4 and report.not_rated["unmappable"] == 4  # u1 answered two questions: which one?
    assert all("give --map question=NAME" in u["reason"] for u in report.unmappable)
    ratings, report = read_export(path, "argilla", "question=better,a=fields.mine,b=fields.other,left=fields.left,"
                                                   "right=fields.right")
    got = {(r.item, r.rater): r.label for r in ratings.ratings}
    assert got == {(f"r{i}", u): ("A" if (side == "left") == bool(i % 2) else "B")
                   for i in range(4) for u, side in (("u1", "left"), ("u2", "right"))}
    assert report.mapping and report.mapping["labels"] == "answers A / B"
    quality, _ = read_export(path, "argilla", "question=quality")
    assert {r.label for r in quality.ratings} == {4}


def test_potato_project_made_without_tailorbench(tmp_path: Path) -> None:
    """A team's Potato 2 project: its own data rows (no tb_unit), a radio scheme with its own labels."""
    project = tmp_path / "p"
    shutil.copytree(DATA / "potato2_pairwise", project)
    rows = [json.loads(line) for line in (project / "data/units.jsonl").read_text().splitlines()]
    (project / "data/units.jsonl").write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n"
                                                      for r in rows), encoding="utf-8")
    ratings, report = read_export(project)
    # detected: the radio scheme `choice` (Answer 1 / Answer 2) as sides, the one pairwise question
    assert report.ratings == len(rows) * 2 and {r.label for r in ratings.ratings} <= {"left", "right"}
    assert report.mapping and report.mapping["question"] == ["choice"]
    assert any("about sides" in n for n in report.notes)
    confidence, _ = read_export(project, "potato", "question=confidence")
    assert {r.label for r in confidence.ratings} == {2}


def test_agree_says_when_agreement_is_about_sides() -> None:
    result = CliRunner().invoke(app, ["agree", str(LS), "--n-boot", "10", "--json"])
    assert result.exit_code == 0, result.output
    assert any("about sides" in note and str(LS) in note for note in json.loads(result.output)["notes"])


def _ls_task(n: int, result: list[dict[str, Any]]) -> dict[str, Any]:
    """A task of Label Studio's documented JSON export, annotated by users 1 and 2 with `result`."""
    return {"id": n, "data": {"text": f"review {n}"}, "drafts": [], "predictions": [],
            "annotations": [{"id": n * 10 + u, "completed_by": u, "was_cancelled": False, "result": result}
                            for u in (1, 2)]}


def test_label_studio_choices_rating_and_number_are_detected(tmp_path: Path) -> None:
    kinds = {"choices": ("sentiment", {"choices": ["Positive"]}, "Positive"),
             "rating": ("stars", {"rating": 4}, 4), "number": ("score", {"number": 7.0}, 7)}
    for kind, (name, value, label) in kinds.items():
        path = tmp_path / f"{kind}.json"
        path.write_text(json.dumps([_ls_task(n, [{"from_name": name, "to_name": "text", "type": kind,
                                                  "value": value}]) for n in (1, 2)]), encoding="utf-8")
        ratings, report = read_export(path)
        assert {(r.item, r.rater, r.label) for r in ratings.ratings} == {
            (str(n), str(u), label) for n in (1, 2) for u in (1, 2)}
        assert report.mapping and report.mapping["question"] == [name] and report.mapping["labels"] == "values"
    both = tmp_path / "both.json"
    both.write_text(json.dumps([_ls_task(1, [
        {"from_name": "sentiment", "to_name": "text", "type": "choices", "value": {"choices": ["Same"]}},
        {"from_name": "stars", "to_name": "text", "type": "rating", "value": {"rating": 2}}])]), encoding="utf-8")
    _, report = read_export(both)
    assert report.not_rated["unmappable"] == 2 and "question=NAME" in report.unmappable[0]["reason"]
    _, report = read_export(both, "label-studio", "question=sentiment,value.Same=tie")
    assert report.not_rated == {"tie (abstention)": 2}
