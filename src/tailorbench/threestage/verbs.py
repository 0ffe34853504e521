"""Python twins of the `tailor stages ...` verbs (the CLI is a thin layer over these).

Each verb claims its output first (`files.as_output`: the output rule, checked before anything is read or a
model called, and nothing created until the first write) and writes only through the `Output` it got: an output
is never one of the verb's inputs or a folder holding one, and a non-empty folder that no verb made is refused.
A caller that claimed a folder itself (`run_example`, which reads back the votes it wrote there) hands the
`Output` on instead of a path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tailorbench.files import Output, as_output, load_json, only_names
from tailorbench.threestage.recentering_formats import read_relevance
from tailorbench.threestage.relevance.analysis import DEFAULT_MIN_SHARED, relevance_report

#: a path given as --out of a verb that writes one file, or a folder, or the folder a caller claimed
Out = Output | str | Path


def read_items(path: str | Path) -> list[Any]:
    from tailorbench.threestage.recentering_formats import read_relevance_items

    return read_relevance_items(path)


def baseline(
    items: str | Path,
    human: Sequence[str | Path],
    method: str,
    out: Out,
    val_fraction: float = 0.5,
    seed: int = 0,
    encoder_path: str | None = None,
) -> dict[str, Any]:
    """Stage-2 baseline votes (bm25 | embedding) for the test users, threshold chosen on validation users."""
    from tailorbench.threestage.relevance.retrieval_baselines import run_baseline

    dest = as_output(out, inputs=[items, *human, encoder_path])
    ratings, _ = read_relevance(human, ())
    encoder = None
    if method == "embedding":
        from tailorbench.models.encoder_hf import HFEncoder

        encoder = HFEncoder(encoder_path)
    return run_baseline(read_items(items), ratings, method, dest, val_fraction, seed, encoder)


def judge_relevance(
    items: str | Path, model: str, out: Out, name: str | None = None, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """LLM relevance votes for every attribute of every item, through models/."""
    from tailorbench.threestage.relevance.judge import judge_relevance as run

    dest = as_output(out, inputs=[items])
    return run(read_items(items), model, dest, name, options)


def stage2_ratings(
    human: Sequence[str | Path] = (),
    model: Sequence[str | Path] = (),
    export: Sequence[str | Path] = (),
    items: str | Path | None = None,
) -> tuple[Any, Any]:
    """Re-Centering human and model files plus annotation-service exports (mapped through `items`) -> one
    rating set and what did not line up."""
    from tailorbench.agreement.ratings import merge_ratings
    from tailorbench.errors import ConfigError
    from tailorbench.threestage.recentering_formats import HUMAN, MODEL, align, read_relevance_file

    if not human and not export:
        raise ConfigError("give stage-2 human labels: --human (Re-Centering task-3 files) or --export "
                          "(annotation-service exports, with --items)")
    parts = [read_relevance_file(p, HUMAN) for p in human]
    unknown = 0
    if items is not None and not export:  # only --export needs it; given, it is read (a broken file is named)
        read_items(items)
    if export:
        if items is None:
            raise ConfigError("--export needs --items: the item file the relevance tasks were exported from")
        from tailorbench.threestage.relevance.annotation import from_relevance_export

        extra, al = from_relevance_export(read_items(items), export)
        parts.append(extra)
        unknown = al.lines_for_unknown_items
    parts += [read_relevance_file(p, MODEL) for p in model]
    ratings = merge_ratings(parts)
    alignment = align(ratings.ratings)
    alignment.lines_for_unknown_items += unknown
    return ratings, alignment


def relevance(
    human: Sequence[str | Path] = (),
    model: Sequence[str | Path] = (),
    min_shared: int = DEFAULT_MIN_SHARED,
    n_resamples: int = 1000,
    seed: int = 0,
    report_dir: Out | None = None,
    export: Sequence[str | Path] = (),
    items: str | Path | None = None,
    epsilon: float | None = None,
    min_items: int = 30,
    annotators: str | None = None,
) -> dict[str, Any]:
    """Stage 2: human task-3 files and/or annotation-service exports, plus model vote files -> the report (with
    each model's human admissibility: the alternative-annotator test with `epsilon` or the margin the authors
    advise for `annotators` (expert 0.2, skilled 0.15, crowd 0.1), `min_items`)."""
    dest = _report_dir(report_dir, [*human, *model, *export, items])
    ratings, alignment = stage2_ratings(human, model, export, items)
    report = relevance_report(ratings, alignment, min_shared=min_shared, n_resamples=n_resamples, seed=seed,
                              epsilon=epsilon, min_items=min_items, annotators=annotators)
    _write_report("relevance", report, dest)
    return report


def _report_dir(report_dir: Out | None, inputs: Sequence[str | Path | None]) -> Output | None:
    """The claimed report directory of an analysis verb (None: the report is only returned). A folder of stage
    reports is the verbs' own (`report.is_report_dir`), so a rerun replaces them."""
    from tailorbench.threestage.report import is_report_dir

    if report_dir is None:
        return None
    return as_output(report_dir, inputs=inputs, directory=True, ours=is_report_dir)


def _write_report(stage: str, report: dict[str, Any], dest: Output | None) -> None:
    if dest is not None:
        from tailorbench.threestage.report import write_stage_report

        write_stage_report(stage, report, dest)


def export_relevance(items: str | Path, out: Out) -> dict[str, Any]:
    """Stage-2 items -> the annotation service's `relevance` task JSONL."""
    from tailorbench.threestage.relevance.annotation import export_relevance_tasks

    dest = as_output(out, inputs=[items])
    return export_relevance_tasks(read_items(items), dest)


def generate(
    items: str | Path,
    model: str,
    out: Out,
    conditions: Sequence[str] | None = None,
    human: Sequence[str | Path] = (),
    export: Sequence[str | Path] = (),
    predicted: Sequence[str | Path] = (),
    predictor: str | None = None,
    name: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = 512,
    seed: int | None = None,
    generic_template: str | Path | None = None,
    personalized_template: str | Path | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Stage 3: generic and personalized answers (gold / predicted / no attributes) -> A/B-rating tasks.
    Default conditions: gold when human labels are given, predicted when votes are, and always none."""
    from tailorbench.models.base import GenParams
    from tailorbench.threestage.incorporation.generation import (
        GENERATIONS_FILE,
        MANIFEST_FILE,
        TASKS_FILE,
        load_templates,
    )
    from tailorbench.threestage.incorporation.generation import generate as run
    from tailorbench.threestage.recentering_formats import MODEL, read_relevance_file

    dest = as_output(out, inputs=[items, *human, *export, *predicted, generic_template, personalized_template],
                     directory=True, ours=only_names([GENERATIONS_FILE, MANIFEST_FILE, TASKS_FILE], MANIFEST_FILE))
    gold = stage2_ratings(human, (), export, items)[0] if human or export else None
    pred = None
    if predicted:
        from tailorbench.agreement.ratings import merge_ratings

        pred = merge_ratings([read_relevance_file(p, MODEL) for p in predicted])
    if conditions is None:
        conditions = [c for c, have in (("gold", gold), ("predicted", pred), ("none", True)) if have is not None]
    templates = load_templates(generic_template, personalized_template)
    params = GenParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
    return run(read_items(items), model, dest, conditions, gold, pred, predictor, name, params, templates, options)


def stage1_ratings(items: str | Path, human: Sequence[str | Path] = (), export: Sequence[str | Path] = ()
                   ) -> tuple[Any, Any, Any]:
    """The stage-1 item file plus Re-Centering task-1 files and/or annotation-service exports -> (items,
    ratings accepted/uncertain/rejected, alignment)."""
    from tailorbench.agreement.ratings import merge_ratings
    from tailorbench.errors import ConfigError
    from tailorbench.threestage.extraction.annotation import from_annotation_export
    from tailorbench.threestage.recentering_formats import read_stage1

    if not human and not export:
        raise ConfigError("give --human task-1 files or --export annotation-service exports")
    parsed, ratings, alignment = read_stage1(items, human)
    if export:
        extra, al2 = from_annotation_export(parsed, export)
        ratings = merge_ratings([ratings, extra])
        alignment.lines_for_unknown_items += al2.lines_for_unknown_items
    return parsed, ratings, alignment


def extraction(
    items: str | Path,
    human: Sequence[str | Path] = (),
    export: Sequence[str | Path] = (),
    taxonomy: Sequence[str | Path] = (),
    n_resamples: int = 1000,
    seed: int = 0,
    report_dir: Out | None = None,
) -> dict[str, Any]:
    """Stage 1 from the item file plus Re-Centering task-1 files and/or annotation-service exports."""
    from tailorbench.threestage.extraction.analysis import extraction_report, read_taxonomy

    dest = _report_dir(report_dir, [items, *human, *export, *taxonomy])
    parsed, ratings, alignment = stage1_ratings(items, human, export)
    report = extraction_report(parsed, ratings, alignment, read_taxonomy(taxonomy), n_resamples, seed)
    _write_report("extraction", report, dest)
    return report


def categorise(items: str | Path, human: Sequence[str | Path], model: str, out: Out,
               name: str | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """LLM error categories for the attributes the human majority rejected."""
    from tailorbench.threestage.extraction.categorise import categorise as run
    from tailorbench.threestage.recentering_formats import read_stage1

    dest = as_output(out, inputs=[items, *human])
    parsed, ratings, _ = read_stage1(items, human)
    return run(parsed, ratings, model, dest, name, options)


def extract(conversations: str | Path, model: str, out: Out, name: str | None = None,
            options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Stage 1's extractor over a conversations file -> the stage-1 item file."""
    from tailorbench.threestage.extraction.extract import extract as run

    dest = as_output(out, inputs=[conversations])
    return run(conversations, model, dest, name, options)


def export_tasks(items: str | Path, out: Out) -> dict[str, Any]:
    """Stage-1 items -> the annotation service's `attributes` task JSONL."""
    from tailorbench.threestage.extraction.annotation import export_attribute_tasks

    dest = as_output(out, inputs=[items])
    return export_attribute_tasks(items, dest)


def incorporation(
    tasks: str | Path,
    ratings: Sequence[str | Path],
    scores: Sequence[str | Path] = (),
    n_resamples: int = 1000,
    seed: int = 0,
    report_dir: Out | None = None,
) -> dict[str, Any]:
    """Stage 3 from the A/B task file, long-format ratings (humans and judges) and optional scorer files."""
    from tailorbench.threestage.incorporation.analysis import incorporation_report, read_incorporation

    dest = _report_dir(report_dir, [tasks, *ratings, *scores])
    parsed, rating_set, score_map = read_incorporation(tasks, ratings, scores)
    report = incorporation_report(parsed, rating_set, score_map, n_resamples, seed)
    _write_report("incorporation", report, dest)
    return report


def judge_ab(tasks: str | Path, model: str, out: Out, name: str | None = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """An LLM judge's 1..5 ratings of every A/B task's attributes, in the long format."""
    from tailorbench.threestage.incorporation.analysis import read_ab_tasks
    from tailorbench.threestage.incorporation.judge import judge_ab as run

    dest = as_output(out, inputs=[tasks])
    return run(read_ab_tasks(tasks), model, dest, name, options)


def example_dir() -> Path:
    """The bundled, illustrative example study (package data)."""
    return Path(__file__).resolve().parent / "example"


def run_example(out: Out, model: str | None = None, n_resamples: int = 1000, seed: int = 0,
                options: dict[str, Any] | None = None, interventions: bool = True,
                encoder: Any = None) -> dict[str, Any]:
    """All three stages on the bundled example study; with `model`, that model also extracts, categorises,
    votes on relevance, rates A/B pairs and generates new A/B tasks (its invalid answers are counted). With
    `interventions`, the verifier and the relevance classifier are trained and judged on held-out users (the
    MiniLM encoder). Figures are illustrative. Every file lands in the one folder claimed here (each step gets
    its file of it, or the folder itself, as an `Output`: the steps read back what the ones before them wrote)."""
    from tailorbench.errors import require_extra
    from tailorbench.threestage.report import write_summary

    require_extra("bm25s", "retrieval", "tailor stages example (its BM25 baseline)")  # before any work
    if interventions and encoder is None:
        require_extra("torch", "local", "tailor stages example (the interventions' MiniLM encoder)")
    ex = example_dir()
    dest = as_output(out, inputs=[ex], directory=True)
    humans1 = sorted(ex.glob("ann_*_task1.jsonl"))
    humans3 = sorted(ex.glob("ann_*_task3.jsonl"))
    models3 = [ex / "illustrative-llm_relevance.jsonl"]
    taxonomy = [ex / "taxonomy_human.jsonl"]
    ratings3 = [ex / "ab_ratings.jsonl"]
    calls: dict[str, Any] = {}
    if model is not None:
        calls["extract"] = extract(ex / "conversations.jsonl", model, as_output(dest, name="extracted_items.jsonl"),
                                   "live-model", options)
        calls["taxonomy"] = categorise(ex / "stage1_items.jsonl", humans1, model,
                                       as_output(dest, name="taxonomy_model.jsonl"), "live-model", options)
        taxonomy.append(dest.path("taxonomy_model.jsonl"))
        calls["relevance"] = judge_relevance(ex / "relevance_items.jsonl", model,
                                             as_output(dest, name="live_relevance.jsonl"), "live-model", options)
        models3.append(dest.path("live_relevance.jsonl"))
        calls["ab"] = judge_ab(ex / "ab_tasks.jsonl", model, as_output(dest, name="live_ab.jsonl"), "live-model",
                               options)
        ratings3.append(dest.path("live_ab.jsonl"))
    calls["bm25"] = baseline(ex / "relevance_items.jsonl", humans3, "bm25",
                             as_output(dest, name="bm25_relevance.jsonl"), seed=seed)
    models3.append(dest.path("bm25_relevance.jsonl"))
    reports = {
        "extraction": extraction(ex / "stage1_items.jsonl", humans1, taxonomy=taxonomy, n_resamples=n_resamples,
                                 seed=seed, report_dir=dest),
        "relevance": relevance(humans3, models3, min_shared=20, n_resamples=n_resamples, seed=seed,
                               report_dir=dest),
        "incorporation": incorporation(ex / "ab_tasks.jsonl", ratings3, [ex / "rm_scores.jsonl"],
                                       n_resamples=n_resamples, seed=seed, report_dir=dest),
    }
    predicted = [dest.path("bm25_relevance.jsonl")]
    if interventions:
        encoder = encoder or load_encoder()
        reports["verifier"] = train_verifier(ex / "stage1_items.jsonl", dest, humans1, seed=seed,
                                             n_resamples=n_resamples, encoder=encoder)
        reports["relevance_classifier"] = train_relevance(ex / "relevance_items.jsonl", dest, humans3, model=models3,
                                                          seed=seed, n_resamples=n_resamples, encoder=encoder)
        predicted = [Path(reports["relevance_classifier"]["votes"])]
    if model is not None:
        calls["generate"] = generate(ex / "relevance_items.jsonl", model, dest.path("generated"), human=humans3,
                                     predicted=predicted, name="live-model", max_tokens=256, options=options)
    write_summary(reports, dest, illustrative=True)
    return {"out": str(dest.path()), "calls": calls, "illustrative": True, **reports}


def summary(report_dir: str | Path,
            check: Callable[[Path, str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The combined summary from the stage JSON files already in `report_dir`, written beside them (the folder a
    stage verb wrote, or one holding nothing but stage reports: `report.is_report_dir`). `check(path, stage,
    report)`, where given, checks each stage report's figures (the API checks them against its result models)
    before anything is written."""
    from tailorbench.errors import DataError
    from tailorbench.threestage.report import STAGES, is_report_dir, summary_rows, write_summary

    dest = as_output(report_dir, "REPORT_DIR", directory=True, ours=is_report_dir)
    d = dest.path()
    reports = {s: load_json(d / f"{s}.json", dict, "a stage report (a JSON object)") for s in STAGES
               if (d / f"{s}.json").is_file()}
    for stage, report in reports.items():  # a stage's own report edited by hand: named, not a traceback
        try:
            summary_rows({stage: report})
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise DataError(d / f"{stage}.json", None, None, "not a stage report as tailorbench writes it "
                            f"({type(exc).__name__}: {exc}); run the stage verb again") from None
        if check is not None:
            check(d / f"{stage}.json", stage, report)
    write_summary(reports, dest)
    return reports


# --- interventions --------------------------------------------------------------------------------------


def load_encoder(path: str | None = None, head_meta: dict[str, Any] | None = None) -> Any:
    """The frozen encoder of the interventions: `path`, else the one a trained head was built on, else MiniLM."""
    from tailorbench.models.encoder_hf import HFEncoder

    if path is None and head_meta is not None:
        path = (head_meta.get("encoder") or {}).get("encoder")
    return HFEncoder(path)


def train_verifier(
    items: str | Path,
    out: Out,
    human: Sequence[str | Path] = (),
    export: Sequence[str | Path] = (),
    test_fraction: float = 0.5, seed: int = 0, l2: float = 1.0, threshold: float = 0.5, n_resamples: int = 1000,
    encoder_path: str | None = None, encoder: Any = None,
) -> dict[str, Any]:
    """Stage-1 intervention: train the verifier on training users' labels, judge it on held-out users; writes
    verifier.npz, verifier_heldout.jsonl and the verifier report (json/md/html) in `out`."""
    from tailorbench.threestage.extraction.verifier import HEAD_FILE
    from tailorbench.threestage.extraction.verifier import train_verifier as run
    from tailorbench.threestage.report import write_stage_report
    from tailorbench.threestage.statistics import HeadFit

    dest = as_output(out, inputs=[items, *human, *export, encoder_path], directory=True,
                     ours=only_names(["verifier*"], HEAD_FILE))
    parsed, ratings, _ = stage1_ratings(items, human, export)
    fit = HeadFit(test_fraction, seed, l2, threshold, n_resamples)
    report = run(parsed, ratings, encoder or load_encoder(encoder_path), dest, fit)
    write_stage_report("verifier", report, dest)
    return report


def verify(
    items: str | Path,
    verifier: str | Path,
    out: Out,
    model: str | None = None,
    rounds: int = 1,
    name: str | None = None,
    template: str | Path | None = None,
    options: dict[str, Any] | None = None,
    encoder_path: str | None = None,
    encoder: Any = None,
) -> dict[str, Any]:
    """Verify-and-refine an extraction (stage-1 item file): drop what the verifier rejects, or re-ask `model`."""
    from tailorbench.threestage.extraction.verifier import verify_and_refine
    from tailorbench.threestage.recentering_formats import read_stage1_items
    from tailorbench.threestage.statistics import LogisticHead

    dest = as_output(out, inputs=[items, verifier, template])
    head = LogisticHead.load(verifier)
    return verify_and_refine(read_stage1_items(items), head, encoder or load_encoder(encoder_path, head.meta), dest,
                             model, rounds, name, template, options)


def train_relevance(
    items: str | Path,
    out: Out,
    human: Sequence[str | Path] = (),
    export: Sequence[str | Path] = (),
    model: Sequence[str | Path] = (),
    test_fraction: float = 0.5, seed: int = 0, l2: float = 1.0, threshold: float = 0.5, n_resamples: int = 1000,
    encoder_path: str | None = None, encoder: Any = None,
) -> dict[str, Any]:
    """Stage-2 intervention: train the relevance classifier on training users' labels; compare it on held-out
    users with the embedding cosine and the given vote files (`model`); writes head, votes and report in `out`."""
    from tailorbench.threestage.relevance.classifier import HEAD_FILE, train_relevance_classifier
    from tailorbench.threestage.report import write_stage_report
    from tailorbench.threestage.statistics import HeadFit

    dest = as_output(out, inputs=[items, *human, *export, *model, encoder_path], directory=True,
                     ours=only_names(["relevance_classifier*"], HEAD_FILE))
    ratings, _ = stage2_ratings(human, model, export, items)
    fit = HeadFit(test_fraction, seed, l2, threshold, n_resamples)
    report = train_relevance_classifier(read_items(items), ratings, encoder or load_encoder(encoder_path), dest, fit)
    write_stage_report("relevance_classifier", report, dest)
    return report


def classify_relevance(items: str | Path, classifier: str | Path, out: Out, name: str | None = None,
                       encoder_path: str | None = None, encoder: Any = None) -> dict[str, Any]:
    """Votes of a trained relevance classifier for a stage-2 item file (feed them to `relevance` or `generate`)."""
    from tailorbench.threestage.relevance.classifier import NAME, classify
    from tailorbench.threestage.statistics import LogisticHead

    dest = as_output(out, inputs=[items, classifier])
    head = LogisticHead.load(classifier)
    return classify(read_items(items), head, encoder or load_encoder(encoder_path, head.meta), dest, name or NAME)
