"""The study report (`report` step, `tailor study report`): the three stage reports side by side, the headline
figures the stage verbs compute (human-human and human-model agreement with CIs, each judge's admissibility
where a stage has judges), and what the annotation took (labels, annotators). Every figure is the stage report's
own (threestage/): the chain gives what the links give."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tailorbench.files import Output, claim_output, load_json, only_names
from tailorbench.humanstudy.config import CONFIG_FILE, StudyConfig, database_place
from tailorbench.humanstudy.state import LOCK_FILE, MADE_BY, STATE_FILE, STEPS_DIR, StudyState

REPORT_JSON = "study.json"
REPORT_MD = "study.md"


def stage_figures(stage: str, report: dict[str, Any]) -> dict[str, Any]:
    """A stage report's agreement figures: human-human (and human-model) with CIs, and admissibility."""
    out: dict[str, Any] = {}
    if stage == "extraction":
        agree = report.get("agreement") or {}
        out["human_human"] = {"fleiss_kappa": agree.get("fleiss_kappa"),
                              "cohen_kappa": agree.get("human_human_cohen_kappa"),
                              "krippendorff_alpha_ordinal": agree.get("krippendorff_alpha_ordinal")}
    elif stage == "relevance":
        detail = report.get("group_kappa_detail") or {}
        for kind, value in (report.get("group_kappa") or {}).items():
            out[kind.replace("-", "_")] = {"cohen_kappa": value, "ci": (detail.get(kind) or {}).get("ci")}
    else:
        h = (report.get("humans") or {}).get("per_item_mean") or {}
        out["humans"] = {"share_no_better": h.get("share_no_better"), "ci": h.get("share_no_better_ci")}
        out["judges"] = {name: {"inflation": e.get("inflation"), "ci": e.get("inflation_ci")}
                         for name, e in (report.get("judges") or {}).items()}
    if report.get("admissibility") is not None:
        out["admissibility"] = report["admissibility"]
    return out


ANCHORED_HEADER = ["judge", "measure", "judge-only [95% CI]", "people on the sample [95% CI]",
                   "human-anchored [95% CI]", "judge-only - anchored", "tasks rated / tasks"]
ANCHORED_NOTE = ("Stage 3, judge-only and human-anchored: people rated a sample of the tasks "
                 "(stages.incorporation.humans); *judge-only* is the judge's figure over every task, *people on the "
                 "sample* theirs (weighted by the sample's design), *human-anchored* the judge's ratings corrected "
                 "by people's (prediction-powered inference: valid whatever the judge's bias); judge-only minus "
                 "anchored is the judge's inflation against what people would say. Definitions and each "
                 "estimate's notes: anchored.md.")


def anchored_rows(anchored: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The study report's rows of stage 3's anchored estimates (humanstudy/anchoring.figures)."""
    from tailorbench.reporting import with_ci

    def shown(block: dict[str, Any] | None) -> str:
        return "-" if block is None else with_ci(block["estimate"], block["ci"])

    rows = []
    for judge, measures in anchored.items():
        for measure, f in measures.items():
            diff = f["judge_minus_anchored"]
            rows.append([judge, measure.replace("_", " "), shown(f["judge_only"]), shown(f["human_only"]),
                         shown(f["anchored"]), "-" if diff is None else f"{diff:+.3f}",
                         f"{f['tasks_rated_by_people']} / {f['tasks']}"])
    return rows


def _anchored(config: StudyConfig, state: StudyState, out: Output) -> dict[str, dict[str, Any]]:
    """Stage 3's anchored estimates (when people rated a sample), copied from the analyse step into the report
    with anchored.md; their figures."""
    cfg = config.stage("incorporation")
    if cfg is None or cfg.humans is None:
        return {}
    from tailorbench.estimation.records import EstimateReport
    from tailorbench.humanstudy.anchoring import ANCHORED_MD, MEASURES, estimate_file, figures

    src = state.step_dir("incorporation.analyse")
    estimates = []
    for judge in config.models.judges:
        for measure in MEASURES:
            path = src / estimate_file(judge, measure)
            report = EstimateReport.read(path)
            assert isinstance(report, EstimateReport)
            estimates.append((judge, measure, report))
            out.copy_in(path, path.name)
    out.copy_in(src / ANCHORED_MD, ANCHORED_MD)
    return figures(estimates)


def report_output(config: StudyConfig, study_dir: Path) -> Output:
    """The report place (`report.dir`) claimed through the files module's door: inside the study folder and never
    the study's own state (its config, state, steps, lock, annotation database) nor an input, nor a folder
    holding one of them; an existing folder there must be an earlier study report (its marker, or nothing but
    report files beside study.json). A config file passes no force: a refusal is exit 2. Creates nothing."""
    study_dir = Path(study_dir)
    own = [study_dir / name for name in (CONFIG_FILE, STATE_FILE, STEPS_DIR, LOCK_FILE)]
    inputs = [config.inputs.conversations, config.inputs.prompts,
              *[cfg.gold for s in config.run_stages() if (cfg := config.stage(s)) is not None]]
    return claim_output("report.dir", study_dir / config.report.dir, directory=True, within=study_dir,
                        state=[*own, database_place(config, study_dir)], inputs=inputs, made_by=MADE_BY,
                        ours=only_names(("*.json", "*.md", "*.html"), REPORT_JSON))


def write_study_report(study_dir: Path, config: StudyConfig, state: StudyState, out: Output) -> dict[str, Any]:
    """study.json / study.md and the stage reports with their summary in `out` (the report step's folder), and a
    copy in the config's report place, which replaces the earlier report as a whole only once it is complete
    (`Output.staged`): nothing else there is ever removed."""
    from tailorbench.threestage.report import write_summary

    place = report_output(config, study_dir)  # checked again: the folder may have changed since the config was read
    reports: dict[str, dict[str, Any]] = {}
    for stage in config.run_stages():
        src = state.step_dir(f"{stage}.analyse")
        reports[stage] = load_json(src / f"{stage}.json", dict, "a stage report")
        for ext in ("json", "md", "html"):
            out.copy_in(src / f"{stage}.{ext}", f"{stage}.{ext}")
    for step_id, name in (("extraction.verifier", "verifier"), ("relevance.classifier", "relevance_classifier")):
        src = state.step_dir(step_id)
        if config.report.interventions and (src / f"{name}.json").is_file():
            reports[name] = load_json(src / f"{name}.json", dict, "an intervention report")
            for ext in ("json", "md", "html"):
                out.copy_in(src / f"{name}.{ext}", f"{name}.{ext}")
    anchored = _anchored(config, state, out)
    write_summary(reports, out.ensure(), illustrative=config.report.illustrative)
    labels = {stage: state.info(f"{stage}.collect") for stage in config.run_stages()}
    stages: dict[str, dict[str, Any]] = {
        stage: {"figures": stage_figures(stage, reports[stage]),
                "labels": {"items": labels[stage].get("regular_items"), "gold_items": labels[stage].get("gold_items"),
                           "labels": labels[stage].get("labels"), "ratings": labels[stage].get("ratings")},
                "report": f"{stage}.json"} for stage in config.run_stages()}
    if anchored:
        stages["incorporation"]["figures"]["anchored"] = anchored
    body = {"study": config.name, "illustrative": config.report.illustrative, "stages": stages,
            "interventions": {name: f"{name}.json" for name in ("verifier", "relevance_classifier")
                              if name in reports}}
    out.write_json(REPORT_JSON, body)
    out.write_text(REPORT_MD, study_markdown(config.name, reports, stages, anchored, config.report.illustrative))
    with place.staged() as folder:
        copy = claim_output("report.dir", folder, directory=True, made_by=MADE_BY)
        for made in sorted(out.path().iterdir()):
            if made.is_file() and not made.name.startswith("."):
                copy.copy_in(made, made.name)
    return {"out": str(place.path()), "stages": list(reports), "illustrative": config.report.illustrative}


ANNOTATION_HEADER = ["stage", "items", "gold items", "labels", "attribute ratings"]
#: what the Annotation table counts, named apart: the console's and `tailor study status`'s unit is the label
LABELS_DEFINITION = ("*labels*: one annotator's answer to one item, what `tailor study run` waits for and `tailor "
                     "study status` counts (items x annotators per item); *attribute ratings*: one per attribute of "
                     "a label (an item shows one or several attributes), the unit the stage reports count; *gold "
                     "items*: the quality-control items, left out of every figure")


def _count(value: Any) -> str:
    return "–" if value is None else str(value)


def study_markdown(name: str, reports: dict[str, dict[str, Any]], stages: dict[str, dict[str, Any]],
                   anchored: dict[str, dict[str, Any]], illustrative: bool) -> str:
    """study.md: the headline (each stage's headline figures with their CI, the anchored estimates), the stage
    reports as links, the figures, what the annotation took (labels and attribute ratings, named apart), the
    definitions of every figure and the notes."""
    from tailorbench.reporting import Table
    from tailorbench.threestage.report import Page, render_markdown, summary_tables

    page = Page.of(reports)
    lead = list(page.headline)
    definitions = [*page.definitions[:-1], (LABELS_DEFINITION, None), *page.definitions[-1:]]
    rows = [[s, *(_count(b["labels"].get(k)) for k in ("items", "gold_items", "labels", "ratings"))]
            for s, b in stages.items()]
    tables: list[Table] = [*summary_tables(reports), ("Annotation", ANNOTATION_HEADER, rows)]
    notes = ["Every figure is its stage report's own (linked above)."]
    if anchored:
        lead.append((anchored_sentence(anchored), None))
        tables.append(("Stage 3: judge-only and human-anchored", ANCHORED_HEADER, anchored_rows(anchored)))
        notes.append(ANCHORED_NOTE)
    if illustrative:
        notes.insert(0, "Illustrative only: the bundled example run with an illustrative model and simulated "
                        "participants (tailor study demo); no figure here says anything about a model or a person.")
    return render_markdown(f"Study {name}", tables, [], notes, replace(page, headline=lead, definitions=definitions))


def anchored_sentence(anchored: dict[str, dict[str, Any]]) -> str:
    """The headline's line of stage 3's anchored estimates: each judge's human-anchored share no better (or its
    first measure) beside its judge-only figure, on how many tasks people rated."""
    from tailorbench.reporting import with_ci

    parts = []
    for judge, measures in anchored.items():
        measure, f = next(((m, f) for m, f in measures.items() if m == "share_no_better"),
                          next(iter(measures.items())))
        shown = [with_ci(f[k]["estimate"], f[k]["ci"]) if f[k] else "–" for k in ("anchored", "judge_only")]
        parts.append(f"{judge} {measure.replace('_', ' ')} {shown[0]} human-anchored against {shown[1]} judge-only "
                     f"({f['tasks_rated_by_people']} / {f['tasks']} tasks rated by people)")
    return f"Stage 3 with people on a sample: {'; '.join(parts)}."
