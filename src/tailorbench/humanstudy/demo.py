"""`tailor study init` (the bundled example study into a directory) and `tailor study demo` (that study end to
end on SQLite: the illustrative model for every model step, simulated participants through each stage's study
link over HTTP against the real annotation server on 127.0.0.1). The demo's figures are illustrative only, and
its report says so."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.files import check_output
from tailorbench.humanstudy.config import CONFIG_FILE

EXAMPLE = Path(__file__).resolve().parent / "example"
#: the three-stage example's users: conversations (stage 1) and new prompts (stage 2)
STAGES_EXAMPLE = Path(__file__).resolve().parents[1] / "threestage" / "example"
#: what each simulated participant of the demo gets right
DEMO_ACCURACY = (0.95, 0.85, 0.75)


def init_study(study_dir: str | Path, force: bool = False) -> dict[str, Any]:
    """Write the bundled example study into `study_dir`: study.yaml (edit its models and crowd settings) and
    its input files. An existing study.yaml is kept unless `force`."""
    d = Path(study_dir)
    check_output("STUDY_DIR", d, directory=True, force=True)  # a file, or a path under one: exit 2, nothing made
    if (d / CONFIG_FILE).exists() and not force:
        raise ConfigError(f"{d / CONFIG_FILE} exists already (--force writes over it)")
    d.mkdir(parents=True, exist_ok=True)
    files = {CONFIG_FILE: EXAMPLE / CONFIG_FILE, "conversations.jsonl": STAGES_EXAMPLE / "conversations.jsonl",
             "prompts.jsonl": STAGES_EXAMPLE / "relevance_items.jsonl"}
    for name, src in files.items():
        shutil.copyfile(src, d / name)
    return {"dir": str(d), "config": str(d / CONFIG_FILE), "files": sorted(files)}


def _demo_config(study_dir: Path) -> None:
    """The example's models replaced by the illustrative one, its report marked illustrative."""
    import yaml

    from tailorbench.files import load_yaml

    path = study_dir / CONFIG_FILE
    data = load_yaml(path, dict, "a study config")
    data["models"].update(extractor="illustrative:extractor", generator="illustrative:generator",
                          judges={"illustrative-judge": "illustrative:judge"})
    data["report"]["illustrative"] = True
    data["annotation"].pop("db", None)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def run_demo(study_dir: str | Path, seed: int = 0, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The bundled example from `init` to `report` with simulated people; returns the last run's result with
    the participants of each stage."""
    from tailorbench.humanstudy.config import load_config
    from tailorbench.humanstudy.demo_model import register
    from tailorbench.humanstudy.run import advance, database
    from tailorbench.humanstudy.simulate import Behaviour, participate, serving

    d = Path(study_dir)
    check_output("STUDY_DIR", d, directory=True, force=True)
    if d.exists() and any(d.iterdir()):
        raise ConfigError(f"{d}: the demo needs a new or empty directory")
    init_study(d)
    _demo_config(d)
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
        assert cfg is not None and cfg.crowd.kind == "prolific"
        db = database(config, d)
        try:
            with serving(db) as url:
                for i in range(cfg.crowd.places):
                    behaviour = Behaviour(DEMO_ACCURACY[i % len(DEMO_ACCURACY)], seconds=15.0 + 5 * i)
                    out = participate(link, f"sim-{stage}-{i + 1}", behaviour, seed=seed, base_url=url)
                    people.setdefault(stage, []).append(out.__dict__)
        finally:
            db.dispose()
        if say is not None:
            say(f"{stage}: {len(people[stage])} simulated participant(s) took part")
    raise ConfigError(f"{d}: the demo did not finish (simulated participants left labels missing)")
