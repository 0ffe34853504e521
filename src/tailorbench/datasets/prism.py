"""PRISM (Hugging Face HannahKirk/prism-alignment; human-written text CC BY 4.0, model responses CC BY-NC 4.0),
read from its `utterances.jsonl` (one rated model response a line: `conversation_id`, `user_id`, `turn`,
`user_prompt`, `model_response`, `model_name`, `score` 1-100, `if_chosen`, `conversation_type`) and `survey.jsonl`
(one participant a line, `user_id` plus their profile: demographics, `self_description`, `stated_prefs`, ...).

Each interaction (conversation, turn) gives one case per rated answer the participant did not choose: the chosen
answer against it, the participant's survey profile as the persona (so every judge, RM training and report runs
on it). Splits: `conversation_type` (`unguided`, `values guided`, `controversy guided`). Tiers: one, `rated`,
unless the option `strata=FIELD` names a survey field (`gender`, `age`, `location`...): each of its values is a tier,
in order of first appearance (a nested field with a dot: `location.reside_region`).

The authors' conventions, as options (docs/benchmarks.md, "PRISM"):
- `tie_threshold=5` (the default): a pair whose score gap (chosen minus other) is within 5 points is a tie, not a
  preference, as `extract_battles(openers, tie_thresh=5)` of the authors' `src/data_analysis/ranking.py` counts
  it; a gap of 0 never is one (two equal scores: the "chosen" answer was then picked at random); a pair whose
  other answer scored more than the threshold above the chosen one contradicts it and is left out too. Both are
  counted (`ties`, `contradicted`). `tie_threshold=0` keeps every pair with a positive gap.
- `openers_only=true`: turn 0 only, where the answers come from different models (later turns pair samples of
  the model the participant chose); `pairs=battles`: every pair of an interaction's rated answers by score, the
  higher scored one as chosen, as `extract_battles` makes the model battles (openers only, one answer per model).
- `balanced=true`: participants of the census-balanced subset only (`included_in_balanced_subset`).
- the persona is the survey's self-description, demographics and stated preferences (`PERSONA_FIELDS`);
  consent, timing, ordering and study-admin fields stay out (`persona_fields=all` keeps every field).
- an interaction whose chosen answer appears twice with identical text (two `if_chosen` rows) is read as one
  chosen answer and counted (`double_chosen_identical`); two chosen answers of different text are an invalid row.
- an answer whose text is the release's placeholder `EMPTY STRING` is flagged (`meta.empty_response`) and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.choice import unknown_options
from tailorbench.datasets.layouts import Layout, register_layout
from tailorbench.datasets.rows import InvalidRows, pair_hash, read_jsonl, require_id, require_text
from tailorbench.errors import ConfigError, DataError
from tailorbench.options import as_bool, as_float
from tailorbench.schema import PairCase

CONVERSATION_TYPES = ("unguided", "values guided", "controversy guided")
#: the survey fields a persona shows: self-description, demographics, stated preferences (the codebook's groups)
PERSONA_FIELDS = ("self_description", "system_string", "age", "gender", "employment_status", "education",
                  "marital_status", "english_proficiency", "religion", "ethnicity", "location", "stated_prefs")
#: the authors' `tie_thresh`
TIE_THRESHOLD = 5
#: the release's placeholder for an empty model answer
EMPTY = "EMPTY STRING"
PAIRS = ("chosen", "battles")
OPTIONS = ("strata", "tie_threshold", "openers_only", "pairs", "balanced", "persona_fields")
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


@dataclass(frozen=True)
class PrismOptions:
    """The layout's options, checked (docstring of the module)."""

    strata: str | None = None
    tie_threshold: float = TIE_THRESHOLD
    openers_only: bool = False
    pairs: str = "chosen"
    balanced: bool = False
    persona_fields: str = "profile"

    @classmethod
    def read(cls, options: Mapping[str, Any]) -> PrismOptions:
        unknown_options("prism", options, OPTIONS)
        pairs = str(options.get("pairs", "chosen"))
        fields = str(options.get("persona_fields", "profile"))
        if pairs not in PAIRS:
            raise ConfigError(f"option pairs must be one of {', '.join(PAIRS)}, got {pairs!r}")
        if fields not in ("profile", "all"):
            raise ConfigError(f"option persona_fields must be profile or all, got {fields!r}")
        threshold = as_float("tie_threshold", options.get("tie_threshold", TIE_THRESHOLD), minimum=0.0)
        return cls(str(options["strata"]) if options.get("strata") else None, threshold,
                   as_bool("openers_only", options.get("openers_only", False)), pairs,
                   as_bool("balanced", options.get("balanced", False)), fields)


def persona_of(profile: Mapping[str, Any], fields: str) -> dict[str, Any]:
    """What a judge sees of a participant: `PERSONA_FIELDS` in the survey's order, or every field (`all`)."""
    if fields == "all":
        return dict(profile)
    return {k: v for k, v in profile.items() if k in PERSONA_FIELDS}


def _balanced(profile: Mapping[str, Any]) -> bool:
    value = profile.get("included_in_balanced_subset")
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def _chosen(rated: list[dict[str, Any]], invalid: InvalidRows, path: Path, conversation: str, turn: int,
            counts: dict[str, int]) -> dict[str, Any] | None:
    """The interaction's one chosen answer: two chosen rows of identical text are one (counted); two of different
    text are an invalid row; none is counted."""
    chosen = [u for u in rated if u["if_chosen"]]
    if not chosen:
        counts["interactions_without_choice"] += 1
        return None
    if len({u["model_response"] for u in chosen}) > 1:
        invalid.handle(DataError(path, chosen[1]["line"], "if_chosen", f"a second chosen answer of other text in "
                                 f"conversation {conversation!r} turn {turn} (first at line {chosen[0]['line']})"))
        return None
    if len(chosen) > 1:
        counts["double_chosen_identical"] += 1
    return chosen[0]


def _battles(rated: list[dict[str, Any]], threshold: float, counts: dict[str, int]
             ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """`extract_battles` of one interaction: one answer per model name (the last, as its dict keeps it), every
    pair of them, the higher scored one first; pairs within the threshold are ties (counted)."""
    store: dict[Any, dict[str, Any]] = {}
    for u in rated:
        if u["model_name"] is not None:
            store[u["model_name"]] = u
    out = []
    answers = list(store.values())
    for i, a in enumerate(answers):
        for b in answers[i + 1:]:
            if abs(a["score"] - b["score"]) <= threshold:
                counts["ties"] += 1
            else:
                out.append((a, b) if a["score"] > b["score"] else (b, a))
    return out


def read_prism(folder: Path, invalid: InvalidRows, opts: PrismOptions | str | None = None
               ) -> tuple[list[PairCase], dict[str, Any]]:
    opts = opts if isinstance(opts, PrismOptions) else PrismOptions(strata=opts)
    strata = opts.strata
    survey_path, path = folder / SURVEY, folder / UTTERANCES
    profiles = read_survey(survey_path, invalid)
    check_strata(profiles, strata, survey_path)
    counts = {"interactions_without_choice": 0, "double_chosen_identical": 0, "ties": 0, "contradicted": 0,
              "later_turns_left_out": 0, "users_outside_balanced_subset": 0, "empty_string_responses": 0}
    kept_users = {u for u, p in profiles.items() if not opts.balanced or _balanced(p)}
    counts["users_outside_balanced_subset"] = len(profiles) - len(kept_users)
    turns: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for line, row in read_jsonl(path, invalid):
        try:
            utterance = _utterance(row, path, line)
            if utterance["user_id"] not in profiles:
                raise DataError(path, line, "user_id", f"no survey row for {utterance['user_id']!r} in {survey_path}")
        except DataError as error:
            invalid.handle(error)
            continue
        counts["empty_string_responses"] += utterance["model_response"].strip() == EMPTY
        if utterance["user_id"] not in kept_users:
            continue
        if opts.openers_only and utterance["turn"] != 0:
            counts["later_turns_left_out"] += 1
            continue
        turns[(utterance["conversation_id"], utterance["turn"])].append(utterance)
    cases: list[PairCase] = []
    for (conversation, turn), rated in turns.items():
        if opts.pairs == "battles":
            pairs = _battles(rated, opts.tie_threshold, counts)
        else:
            best = _chosen(rated, invalid, path, conversation, turn, counts)
            if best is None:
                continue
            pairs = []
            for other in rated:
                if other["if_chosen"] or other["model_response"] == best["model_response"]:
                    continue
                gap = best["score"] - other["score"]
                if abs(gap) <= opts.tie_threshold or gap == 0:
                    counts["ties"] += 1
                elif gap < 0:
                    counts["contradicted"] += 1
                else:
                    pairs.append((best, other))
        for best, other in pairs:
            profile = profiles[best["user_id"]]
            user, question = best["user_id"], best["user_prompt"]
            empty = EMPTY in (best["model_response"].strip(), other["model_response"].strip())
            cases.append(PairCase(
                id=f"{conversation}/{turn}/{other['line']}" + (f"/{best['line']}" if opts.pairs == "battles" else ""),
                split=best["conversation_type"], tier=_stratum(profile, strata), user_id=user,
                persona=persona_of(profile, opts.persona_fields), question=question,
                chosen=best["model_response"], rejected=other["model_response"],
                meta={"pair_hash": pair_hash(user, question, best["model_response"], other["model_response"]),
                      "turn": turn, "score_gap": best["score"] - other["score"],
                      "chosen_model": best["model_name"], "rejected_model": other["model_name"],
                      **({"empty_response": True} if empty else {})},
            ))
    return cases, {"interactions": len(turns), "users": len(profiles), **counts,
                   "options": {"tie_threshold": opts.tie_threshold, "openers_only": opts.openers_only,
                               "pairs": opts.pairs, "balanced": opts.balanced, "persona_fields": opts.persona_fields}}


@register_layout
class PrismLayout(Layout):
    """PRISM's rated utterances as pairs per participant, their survey profile as the persona."""

    labels: ClassVar[str] = "human-labelled"
    chosen_is: ClassVar[str] = (
        "the answer the participant chose among the answers to their own prompt (PRISM: each participant "
        "rated and chose answers in their own conversations)"
    )

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
        opts = PrismOptions.read(options)
        cases, stats = read_prism(path, invalid, opts)
        tiers = tuple(dict.fromkeys(c.tier for c in cases)) or (DEFAULT_TIER,)
        return Benchmark(spec, self.name, cases, invalid, files=self.files(path), splits=self.splits, tiers=tiers,
                         layout_stats={**stats, "strata": opts.strata, "card": dict(self.card)})

    def files(self, path: Path) -> list[Path]:
        return [path / SURVEY, path / UTTERANCES]
