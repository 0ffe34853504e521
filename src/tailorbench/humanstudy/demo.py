"""`tailor study init` (the bundled example study into a directory) and `tailor study demo` (that study end to
end on SQLite: the illustrative model for every model step, simulated participants through each stage's study
link over HTTP against the real annotation server on 127.0.0.1). The demo's figures are illustrative only, and
its report says so.

Both write through the files module's door: the folder is claimed before anything is made (a path that is a
file or lies under one, or a folder of someone else's files, is exit 2 and nothing is created), its files are
written atomically, study.yaml last, and the folder carries the marker of the verb that made it. A demo killed
anywhere is continued by `tailor study demo` on the same folder (the marker says the demo made it): the study
goes on from its state, and the simulated participants the killed process left holding crowd places are
released first, as the platform does for a participant who returns a study.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.files import MARKER, claim_output, is_ours, load_json, load_yaml
from tailorbench.humanstudy.config import CONFIG_FILE
from tailorbench.humanstudy.state import MADE_BY

EXAMPLE = Path(__file__).resolve().parent / "example"
#: the three-stage example's users: conversations (stage 1) and new prompts (stage 2)
STAGES_EXAMPLE = Path(__file__).resolve().parents[1] / "threestage" / "example"
#: what each simulated participant of the demo gets right
DEMO_ACCURACY = (0.95, 0.85, 0.75)
#: the maker the demo's folder marker names, so a later `tailor study demo` knows the folder as a demo's
DEMO_MADE_BY = "tailor study demo"
#: the platform ids of the demo's simulated participants start so (then the stage and a number)
SIMULATED = "sim-"


def _example_config(demo: bool) -> str:
    """The example's study.yaml; for the demo, its models replaced by the illustrative one and its report
    marked illustrative."""
    import yaml

    if not demo:
        return (EXAMPLE / CONFIG_FILE).read_text(encoding="utf-8")
    data = load_yaml(EXAMPLE / CONFIG_FILE, dict, "a study config")
    data["models"].update(extractor="illustrative:extractor", generator="illustrative:generator",
                          judges={"illustrative-judge": "illustrative:judge"})
    data["report"]["illustrative"] = True
    data["annotation"].pop("db", None)
    return str(yaml.safe_dump(data, sort_keys=False))


def init_study(study_dir: str | Path, force: bool = False, demo: bool = False) -> dict[str, Any]:
    """Write the bundled example study into `study_dir`: study.yaml (edit its models and crowd settings) and
    its input files. An existing study.yaml is kept unless `force`; a folder holding someone else's files is
    refused unless `force` (nothing is created when refused)."""
    d = Path(study_dir)
    if (d / CONFIG_FILE).is_file() and not force:
        raise ConfigError(f"{d / CONFIG_FILE} exists already (--force writes over it)")
    out = claim_output("STUDY_DIR", d, directory=True, force=force, made_by=DEMO_MADE_BY if demo else MADE_BY,
                       hint=" (or --force to write the example study into it anyway)")
    files = {"conversations.jsonl": STAGES_EXAMPLE / "conversations.jsonl",
             "prompts.jsonl": STAGES_EXAMPLE / "relevance_items.jsonl"}
    for name, src in files.items():
        out.copy_in(src, name)
    out.write_text(CONFIG_FILE, _example_config(demo))  # last: a folder with study.yaml holds the whole example
    return {"dir": str(d), "config": str(d / CONFIG_FILE), "files": sorted([CONFIG_FILE, *files])}


def _made_by_demo(d: Path) -> bool:
    """Whether `d` is a folder an earlier `tailor study demo` made (its marker names the demo)."""
    if not d.is_dir() or not is_ours(d):
        return False
    return load_json(d / MARKER, dict, "a folder marker").get("made_by") == DEMO_MADE_BY


def run_demo(study_dir: str | Path, seed: int = 0, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The bundled example from `init` to `report` with simulated people; returns the last run's result with
    the participants of each stage. On a folder an earlier demo made (killed, or finished) it goes on from
    where that one stopped."""
    from tailorbench.humanstudy.config import load_config
    from tailorbench.humanstudy.demo_model import register
    from tailorbench.humanstudy.run import advance, database
    from tailorbench.humanstudy.simulate import Behaviour, crowd, release_left, serving
    from tailorbench.humanstudy.state import StudyState

    d = Path(study_dir)
    if _made_by_demo(d):
        if not (d / CONFIG_FILE).is_file():  # killed before init finished: the example again
            init_study(d, force=True, demo=True)
        if not load_config(d).report.illustrative:
            raise ConfigError(f"{d / CONFIG_FILE}: no longer the demo's study (report.illustrative is not true): "
                              "`tailor study run` runs it; the demo goes on only with its own config")
        if say is not None:
            say(f"{d}: an earlier demo's folder: going on from where it stopped")
    else:
        if d.is_dir() and any(d.iterdir()):
            raise ConfigError(f"{d}: the demo needs a new or empty directory, or one an earlier `tailor study "
                              "demo` made (it goes on from where that one stopped)")
        init_study(d, demo=True)
    register()
    people: dict[str, list[dict[str, Any]]] = {}
    for _ in range(8):
        got = advance(d, say)
        if got["finished"] or got["waiting"] is None:
            got["participants"] = people
            return got
        stage, link = got["waiting"]["stage"], got["waiting"]["link"]
        config = load_config(d)
        cfg = config.stage(stage)
        if cfg is None or cfg.crowd.kind != "prolific" or link is None:
            raise ConfigError(f"{d / CONFIG_FILE}: stages.{stage}.crowd: the demo's participants need a crowd study "
                              "(kind: prolific)")
        study_id = StudyState(d, readonly=True).info(f"{stage}.annotate").get("study")
        if not isinstance(study_id, int):
            raise ConfigError(f"{d / 'state.json'}: steps.{stage}.annotate.info.study: no crowd study recorded")
        db = database(config, d)
        try:
            prefix = f"{SIMULATED}{stage}-"
            left = release_left(db, study_id, prefix=prefix)  # a killed demo's participants: their places back
            if left and say is not None:
                say(f"{stage}: released {len(left)} simulated participant(s) an earlier run left mid-way")
            from tailorbench.annotation import studies

            taken = {p["external_id"] for p in studies.participants(db, study_id)}
            names = (name for k in count(1) if (name := f"{prefix}{k}") not in taken)
            cast = [(next(names), Behaviour(DEMO_ACCURACY[i % len(DEMO_ACCURACY)], seconds=15.0 + 5 * i))
                    for i in range(cfg.crowd.places)]
            with serving(db) as url:
                outcomes = crowd(db, study_id, link, cast, seed=seed, base_url=url)
            people.setdefault(stage, []).extend(o.__dict__ for o in outcomes)
        finally:
            db.dispose()
        if say is not None:
            say(f"{stage}: {len(people.get(stage, []))} simulated participant(s) took part")
    raise ConfigError(f"{d}: the demo did not finish (simulated participants left labels missing)")
