"""PRISM (Hugging Face HannahKirk/prism-alignment; human-written text CC BY 4.0, model responses CC BY-NC 4.0),
read from its `utterances.jsonl` (one rated model response a line: `conversation_id`, `user_id`, `turn`,
`user_prompt`, `model_response`, `model_name`, `score` 1-100, `if_chosen`, `conversation_type`) and `survey.jsonl`
(one participant a line, `user_id` plus their profile: demographics, `self_description`, `stated_prefs`, ...).

Each interaction (conversation, turn) gives one case per rated answer the participant did not choose: the chosen
answer against it, the participant's survey profile as the persona (so every judge, RM training and report runs
on it). Splits: `conversation_type` (`unguided`, `values guided`, `controversy guided`). Tiers: one, `rated`,
unless the option `strata=FIELD` names a survey field (`gender`, `age`, `location`...): each of its values is a tier,
in order of first appearance (a nested field with a dot: `location.reside_region`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.choice import unknown_options
from tailorbench.datasets.layouts import Layout, register_layout
from tailorbench.datasets.rows import InvalidRows, pair_hash, read_jsonl, require_id, require_text
from tailorbench.errors import ConfigError, DataError
from tailorbench.schema import PairCase

CONVERSATION_TYPES = ("unguided", "values guided", "controversy guided")
DEFAULT_TIER = "rated"
UTTERANCES, SURVEY = "utterances.jsonl", "survey.jsonl"


def read_survey(path: Path, invalid: InvalidRows) -> dict[str, dict[str, Any]]:
    """Profiles by user id (the row without `user_id`)."""
    out: dict[str, dict[str, Any]] = {}
    for line, row in read_jsonl(path, invalid):
        try:
            user = require_id(row, "user_id", path, line)
            if user in out:
                raise DataError(path, line, "user_id", f"user {user!r} appears twice")
        except DataError as error:
            invalid.handle(error)
            continue
        out[user] = {k: v for k, v in row.items() if k != "user_id"}
    return out


def _stratum(profile: Mapping[str, Any], field: str | None) -> str:
    if field is None:
        return DEFAULT_TIER
    value: Any = profile
    for part in field.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return str(value).strip() if value not in (None, "") else "unknown"


def survey_fields(profiles: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The fields `strata=` may name: every survey field holding a value other than an object, nested ones with
    a dot (`location.reside_region`), in order of first appearance."""
    found: dict[str, None] = {}
    for profile in profiles.values():
        stack: list[tuple[str, Mapping[str, Any]]] = [("", profile)]
        while stack:
            prefix, node = stack.pop()
            for key, value in node.items():
                if isinstance(value, Mapping):
                    stack.append((f"{prefix}{key}.", value))
                else:
                    found.setdefault(f"{prefix}{key}")
    return list(found)


def check_strata(profiles: Mapping[str, Mapping[str, Any]], field: str | None, survey: Path) -> None:
    """`strata=FIELD` must name a field some participant's survey row holds: a typo would put every case in
    tier `unknown` and still exit 0."""
    if field is None or not profiles:
        return
    if all(_stratum(profile, field) == "unknown" for profile in profiles.values()):
        fields = survey_fields(profiles)
        shown_fields = ", ".join(fields[:40]) + (f" ... ({len(fields)} in all)" if len(fields) > 40 else "")
        raise ConfigError(f"option strata: no participant in {survey} has a value for {field!r}; the survey "
                          f"fields are: {shown_fields}")


def _utterance(row: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    out: dict[str, Any] = {key: require_id(row, key, path, line) for key in ("conversation_id", "user_id")}
    out.update({key: require_text(row, key, path, line) for key in ("user_prompt", "model_response")})
    for key, kinds in (("turn", (int,)), ("score", (int, float)), ("if_chosen", (bool,))):
        value = row.get(key)
        if value is None:
            raise DataError(path, line, key, "missing required field")
        if isinstance(value, bool) != (kinds == (bool,)) or not isinstance(value, kinds):
            raise DataError(path, line, key, f"expected {'true/false' if kinds == (bool,) else 'a number'}, "
                                             f"got {value!r}")
        out[key] = value
    kind = row.get("conversation_type")
    if kind not in CONVERSATION_TYPES:
        raise DataError(path, line, "conversation_type", f"expected one of {', '.join(CONVERSATION_TYPES)}, "
                                                         f"got {kind!r}")
    out.update(conversation_type=kind, model_name=row.get("model_name"), line=line)
    return out


def read_prism(folder: Path, invalid: InvalidRows, strata: str | None) -> tuple[list[PairCase], dict[str, Any]]:
    survey_path, path = folder / SURVEY, folder / UTTERANCES
    profiles = read_survey(survey_path, invalid)
    check_strata(profiles, strata, survey_path)
    turns: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for line, row in read_jsonl(path, invalid):
        try:
            utterance = _utterance(row, path, line)
            if utterance["user_id"] not in profiles:
                raise DataError(path, line, "user_id", f"no survey row for {utterance['user_id']!r} in {survey_path}")
        except DataError as error:
            invalid.handle(error)
            continue
        turns[(utterance["conversation_id"], utterance["turn"])].append(utterance)
    cases: list[PairCase] = []
    no_choice = 0
    for (conversation, turn), rated in turns.items():
        chosen = [u for u in rated if u["if_chosen"]]
        if len(chosen) != 1:
            if len(chosen) > 1:
                invalid.handle(DataError(path, chosen[1]["line"], "if_chosen", f"a second chosen answer in "
                                         f"conversation {conversation!r} turn {turn} (first at line "
                                         f"{chosen[0]['line']})"))
            no_choice += len(chosen) == 0
            continue
        best = chosen[0]
        profile = profiles[best["user_id"]]
        for other in rated:
            if other is best or other["model_response"] == best["model_response"]:
                continue
            user, question = best["user_id"], best["user_prompt"]
            cases.append(PairCase(
                id=f"{conversation}/{turn}/{other['line']}", split=best["conversation_type"],
                tier=_stratum(profile, strata), user_id=user, persona=profile, question=question,
                chosen=best["model_response"], rejected=other["model_response"],
                meta={"pair_hash": pair_hash(user, question, best["model_response"], other["model_response"]),
                      "turn": turn, "score_gap": best["score"] - other["score"],
                      "chosen_model": best["model_name"], "rejected_model": other["model_name"]},
            ))
    return cases, {"interactions": len(turns), "interactions_without_choice": no_choice, "users": len(profiles)}


@register_layout
class PrismLayout(Layout):
    """PRISM's rated utterances as pairs per participant, their survey profile as the persona."""

    name = "prism"
    expects = "PRISM's folder with utterances.jsonl and survey.jsonl"
    splits = CONVERSATION_TYPES
    tiers = (DEFAULT_TIER,)
    priority = 20
    card: ClassVar[Mapping[str, str]] = {
        "licence": "human-written text CC BY 4.0; model responses CC BY-NC 4.0",
        "size": "1,500 participants, 8,011 conversations, 68,371 rated utterances",
        "citation": "Kirk et al., The PRISM Alignment Project, NeurIPS 2024 Datasets and Benchmarks",
        "source": "huggingface.co/datasets/HannahKirk/prism-alignment",
    }

    def detect(self, path: Path) -> bool:
        return path.is_dir() and (path / UTTERANCES).is_file() and (path / SURVEY).is_file()

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        yield from self.load(str(path), path, invalid, options).cases

    def load(self, spec: str, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Benchmark:
        unknown_options(self.name, options, ("strata",))
        strata = str(options["strata"]) if options.get("strata") else None
        cases, stats = read_prism(path, invalid, strata)
        tiers = tuple(dict.fromkeys(c.tier for c in cases)) or (DEFAULT_TIER,)
        return Benchmark(spec, self.name, cases, invalid, files=self.files(path), splits=self.splits, tiers=tiers,
                         layout_stats={**stats, "strata": strata, "card": dict(self.card)})

    def files(self, path: Path) -> list[Path]:
        return [path / SURVEY, path / UTTERANCES]
