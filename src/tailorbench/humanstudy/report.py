"""The study report (`report` step, `tailor study report`): the three stage reports side by side, the headline
figures the stage verbs compute (human-human and human-model agreement with CIs, each judge's admissibility
where a stage has judges), and what the annotation took (labels, annotators). Every figure is the stage report's
own (threestage/): the chain gives what the links give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tailorbench.humanstudy.config import StudyConfig
from tailorbench.humanstudy.state import StudyState

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


def write_study_report(study_dir: Path, config: StudyConfig, state: StudyState, tmp: Path) -> dict[str, Any]:
    """study.json / study.md and the stage reports with their summary in `tmp` (the report step's folder), and a
    copy in the config's report place."""
    from tailorbench.threestage.report import render_markdown, summary_rows, write_summary

    reports: dict[str, dict[str, Any]] = {}
    for stage in config.run_stages():
        src = state.step_dir(f"{stage}.analyse")
        reports[stage] = json.loads((src / f"{stage}.json").read_text(encoding="utf-8"))
        for ext in ("json", "md", "html"):
            shutil.copyfile(src / f"{stage}.{ext}", tmp / f"{stage}.{ext}")
    for step_id, name in (("extraction.verifier", "verifier"), ("relevance.classifier", "relevance_classifier")):
        src = state.step_dir(step_id)
        if config.report.interventions and (src / f"{name}.json").is_file():
            reports[name] = json.loads((src / f"{name}.json").read_text(encoding="utf-8"))
            for ext in ("json", "md", "html"):
                shutil.copyfile(src / f"{name}.{ext}", tmp / f"{name}.{ext}")
    write_summary(reports, tmp, illustrative=config.report.illustrative)
    labels = {stage: state.info(f"{stage}.collect") for stage in config.run_stages()}
    stages: dict[str, dict[str, Any]] = {
        stage: {"figures": stage_figures(stage, reports[stage]),
                "labels": {"items": labels[stage].get("regular_items"), "gold_items": labels[stage].get("gold_items"),
                           "ratings": labels[stage].get("ratings")},
                "report": f"{stage}.json"} for stage in config.run_stages()}
    body = {"study": config.name, "illustrative": config.report.illustrative, "stages": stages,
            "interventions": {name: f"{name}.json" for name in ("verifier", "relevance_classifier")
                              if name in reports}}
    (tmp / REPORT_JSON).write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    rows = [[s, str(b["labels"]["items"]), str(b["labels"]["ratings"])] for s, b in stages.items()]
    tables = [("Headline figures", ["stage", "figure", "value [95% CI]", "detail"], summary_rows(reports)),
              ("Annotation", ["stage", "items", "ratings"], rows)]
    notes = [f"Stage reports: {', '.join(f'{s}.md' for s in reports)}; every figure is the stage report's own."]
    if config.report.illustrative:
        notes.insert(0, "Illustrative only: the bundled example run with an illustrative model and simulated "
                        "participants (tailor study demo); no figure here says anything about a model or a person.")
    (tmp / REPORT_MD).write_text(render_markdown(f"Study {config.name}", tables, [], notes), encoding="utf-8")
    place = config.report.dir if config.report.dir.is_absolute() else study_dir / config.report.dir
    if place.exists():
        shutil.rmtree(place)
    shutil.copytree(tmp, place)
    return {"out": str(place), "stages": list(reports), "illustrative": config.report.illustrative}
