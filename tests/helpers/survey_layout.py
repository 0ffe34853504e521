"""A benchmark layout that is nothing like PersonaFeedback, for the tests that annotate and build on any layout:
`survey.json` marks the directory, `rows.jsonl` holds one pair per row under other field names (`pid`,
`profile`, `prompt`, `picked`, `other`, `region`, `strength`), the persona is a flat survey profile, and the
splits (`north`, `south`) and tiers (`weak`, `strong`) are its own."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tailorbench.datasets import Layout
from tailorbench.datasets.rows import InvalidRows, read_jsonl, require_text
from tailorbench.errors import DataError
from tailorbench.schema import PairCase

PROFILES = {
    "p1": {"age_band": "25-34", "diet": "vegetarian", "tone": "brief", "hobby": "climbing"},
    "p2": {"age_band": "55-64", "diet": "no restrictions", "tone": "detailed", "hobby": "gardening"},
    "p3": {"age_band": "18-24", "diet": "vegan", "tone": "playful", "hobby": "chess"},
}


class SurveyLayout(Layout):
    """Rows of a survey study: a participant's profile, a prompt and the answer they picked over another."""

    name = "survey"
    expects = "a directory with survey.json and rows.jsonl"
    splits = ("north", "south")
    tiers = ("weak", "strong")

    def detect(self, path: Path) -> bool:
        return path.is_dir() and (path / "survey.json").is_file()

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        file = path / "rows.jsonl"
        for line, row in read_jsonl(file, invalid):
            try:
                profile = row.get("profile")
                if not isinstance(profile, dict):
                    raise DataError(file, line, "profile", "expected an object")
                text = {key: require_text(row, key, file, line)
                        for key in ("region", "strength", "pid", "prompt", "picked", "other")}
                yield PairCase(id=str(row.get("rid") or f"rows:{line}"), split=text["region"], tier=text["strength"],
                               user_id=text["pid"], persona=profile, question=text["prompt"], chosen=text["picked"],
                               rejected=text["other"])
            except DataError as error:
                invalid.handle(error)


def make_survey(root: Path) -> Path:
    """Six pairs, two per participant, in both regions and both strengths."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "survey.json").write_text("{}", "utf-8")
    rows = []
    for k, (pid, profile) in enumerate(PROFILES.items()):
        for j, region in enumerate(("north", "south")):
            rows.append({"rid": f"r{k}{j}", "pid": pid, "profile": profile, "region": region,
                         "strength": ("weak", "strong")[(k + j) % 2], "prompt": f"Plan a {region} weekend, {pid}?",
                         "picked": f"A plan for {profile['hobby']} lovers in the {region}.",
                         "other": f"A generic {region} plan."})
    (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return root
