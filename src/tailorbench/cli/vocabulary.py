"""One meaning per flag (docs/cli.md, "Vocabulary"): the meaning of every long flag any verb takes, declared once
(`MEANINGS`); the renamed flags whose old spellings still work (`OLD_SPELLINGS`, rewritten before a verb parses its
arguments); the one duration type (`DURATION`: seconds, or a number with a unit); and the checks and the flag
table that keep the verbs, this table and docs/cli.md saying the same (`second_meanings`, `flag_table`).

An option's meaning is the start of its help: every option's help begins with its flag's meaning below (case
aside), so `--model` cannot mean a model spec on one verb and vote files on another without `second_meanings`
naming both. A flag that only train-rm takes is an `RMTrainConfig` field: its meaning is the field's
`metadata["help"]`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer

#: long flag -> its one meaning (what every verb's help of that flag begins with)
MEANINGS: dict[str, str] = {
    # shared by many verbs
    "--json": "print the verb's result object as JSON on stdout",
    "--out": "what the verb writes",
    "--n-boot": "bootstrap resamples",
    "--seed": "seed of",
    "--data": "the benchmark",
    "--model": "model spec",
    "--model-option": "KEY=VALUE for the model backend",
    "--judge": "judge spec",
    "--judge-option": "KEY=VALUE passed to the judge",
    "--setting": "the context",
    "--max-failed": "exit with code 3 when",
    "--batch": "provider batch APIs",
    "--batch-size": "items per batch",
    "--resume": "continue an interrupted",
    "--progress": "progress bar on stderr",
    "--skip-invalid": "skip and count invalid rows",
    "--split": "keep these splits",
    "--tier": "keep these tiers",
    "--persona-sections": "keep only these persona sections",
    "--turns": "PrefEval",
    "--data-option": "KEY=VALUE for the benchmark's layout",
    "--retriever": "rag setting: the retriever",
    "--top-k": "rag setting: memory items shown",
    "--memory": "rag setting: memory JSONL",
    "--executor": "where the work runs",
    "--ray-address": "--executor ray",
    "--executor-option": "KEY=VALUE for the executor",
    "--temperature": "sampling temperature",
    "--max-tokens": "token budget per answer",
    "--level": "confidence level of the intervals",
    "--proxy": "the proxy",
    "--labels": "people's labels",
    "--versus": "a second system's pairwise run",
    "--epsilon": "alt-test cost-benefit margin epsilon",
    "--min-items": "alt-test: a human is tested only with",
    "--annotators": "who the humans are",
    "--expert": "a human rater whose labels are the truth",
    "--items": "item file",
    "--easy": "tiering: minimum P_i for the easy tier",
    "--medium": "tiering: minimum P_i for the medium tier",
    "--min-ratings": "tiering: ratings an item needs",
    "--input-format": "format of the files read",
    "--output-format": "format written",
    "--map": "a project tailorbench did not make",
    "--predictions": "tool formats: judge verdicts",
    "--path": "cache file",
    "--private": "create the hub repository private",
    "--dir": "annotation project directory",
    "--db": "annotation database URL",
    "--host": "address to listen on",
    "--port": "port to listen on",
    "--project": "annotation project",
    "--task-type": "a task type",
    "--n": "annotators per item",
    "--base-url": "address annotators reach the server at",
    "--link-valid-for": "how long a new login link stays valid",
    "--older-than": "age",
    "--human": "human annotations",
    "--export": "annotation-service exports",
    "--votes": "model vote JSONL",
    "--tasks": "A/B-rating task JSONL",
    "--name": "name written into the output",
    "--encoder": "encoder path",
    "--eval-fraction": "share of users held out for evaluation",
    "--l2": "L2 penalty of the logistic head",
    "--threshold": "decision threshold",
    "--instructions": "instructions text",
    "--gold-every": "one gold item after every K regular items",
    # one verb each (kept here so that a second verb taking the flag must mean the same)
    "--task": "the task the benchmark is asked as",
    "--protocol": "default",
    "--scorer-version": "PersonaMem",
    "--suite": "a YAML suite",
    "--data-root": "--suite: where the suite's relative data paths start",
    "--skip-missing": "--suite: leave out a benchmark whose data is not there",
    "--orders": "both",
    "--limit": "a seeded sample of this many cases",
    "--repeat": "judge N times",
    "--calibration": "require ECE and Brier",
    "--ci-unit": "bootstrap unit",
    "--push": "also publish the leaderboard",
    "--label-order": "category order",
    "--positive": "positive label",
    "--rater": "a rater to test as a judge against the humans",
    "--alignment": "alt-test alignment score",
    "--min-humans": "alt-test: an item counts only when",
    "--tier-file": "JSONL with id and tier per line",
    "--base-model": "starting checkpoint",
    "--config": "YAML file of RMTrainConfig fields",
    "--reference": "chosen",
    "--judge-setting": "context the judge sees",
    "--per-tier": "seeded sample of this many cases per split x tier",
    "--all": "every case instead of a sample",
    "--judge-run": "a `tailor eval` run of this judge",
    "--validate-cases": "without --judge-run",
    "--allow-remote": "allow a --host that is not loopback",
    "--bundle": "write the viewer as a static site",
    "--license": "the licence the data is shared under",
    "--dry-run": "write the folder that would be uploaded",
    "--model-name": "only the entries of this model",
    "--yes": "do not ask for confirmation",
    "--live": "also ask the provider for the status of the batches",
    "--secure-cookies": "always mark cookies Secure",
    "--proxy-headers": "trust X-Forwarded-Proto/For",
    "--max-form-kib": "largest request body",
    "--max-import-mib": "largest admin import upload",
    "--agreement": "add the agreement report so far",
    "--include-gold": "also export labels of gold items",
    "--min-submitted": "Argilla: annotators per record",
    "--admin": "create an admin instead of an annotator",
    "--quota": "items",
    "--max-participants": "participants working or done at most",
    "--completion-code": "the platform's completion code",
    "--completion-url": "completion URL",
    "--screenout-code": "the platform's screen-out code",
    "--screenout-gold-below": "screen out when the mean gold score is below this",
    "--screenout-after-gold": "gold items answered before the screen-out rule applies",
    "--time-limit": "how long a participant may take",
    "--param-id": "URL parameter of the participant id",
    "--param-study": "URL parameter of the platform's study id",
    "--param-session": "URL parameter of the platform's session id",
    "--consent": "your consent and information text",
    "--returned": "participant id(s) the platform reports returned",
    "--study": "study id",
    "--min-shared": "pairs need this many shared items",
    "--predicted": "predicted attributes",
    "--taxonomy": "error categories",
    "--ratings": "long-format ratings",
    "--scores": "reward-model or other scores",
    "--conversations": "JSONL",
    "--method": "bm25",
    "--condition": "gold | predicted | none",
    "--predictor": "rater to use when --predicted holds several",
    "--generic-template": "own Jinja template (generic)",
    "--personalized-template": "own Jinja template (personalized)",
    "--template": "own Jinja template for the refine prompt",
    "--interventions": "also train and judge the verifier",
    "--verifier": "verifier.npz",
    "--rounds": "refine rounds",
    "--classifier": "relevance_classifier.npz",
    "--until": "stop after this stage",
    "--force": "write over an existing",
    "--watch": "keep going",
    "--interval": "time between checks with --watch",
    "--max-wait": "with --watch",
    "--sample": "the sampling plan the labelled cases came from",
    "--assume-uniform": "no plan",
    "--check-library": "recompute the uniform cells with ppi-python",
    "--sampling": "uniform | stratified",
    "--size": "how many cases to draw",
    "--share": "the share of the cases to draw",
    "--half-width": "the wanted half-width of the interval",
    "--cases": "cases the study will have",
    "--draws": "simulated draws from the pilot",
    "--example": "the illustrative example arena",
    "--reveal-ids": "participant ids as they are",
    "--participant": "the participant whose data is deleted",
    "--participants": "how many simulated participants",
}

#: old spelling -> (the flags it may now be, the unit its numbers were in, a flag the verb must also take: ""
#: any): a verb that has none of those flags, or that still takes the old spelling itself, is left alone
OLD_SPELLINGS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "--order": (("--label-order",), "", ""),
    "--tiers": (("--tier-file",), "", ""),
    "--judge": (("--rater",), "", ""),
    "--task": (("--task-type",), "", ""),
    "--format": (("--input-format", "--output-format"), "", ""),
    "--model": (("--base-model", "--model-name"), "", ""),
    "--test-fraction": (("--eval-fraction",), "", "--l2"),
    "--older-than-days": (("--older-than",), "d", "--model-name"),
    "--older-than-hours": (("--older-than",), "h", "--dir"),
    "--link-days": (("--link-valid-for",), "d", ""),
    "--time-limit-min": (("--time-limit",), "m", ""),
}


def _flags(command: Any) -> set[str]:
    return {opt for p in getattr(command, "params", ()) for opt in (*p.opts, *p.secondary_opts)}


def renames(command: Any) -> dict[str, tuple[str, str]]:
    """old spelling -> (new flag, unit) for the old spellings `command` reads (the docs' table and the parser)."""
    have = _flags(command)
    out: dict[str, tuple[str, str]] = {}
    for old, (new, unit, also) in OLD_SPELLINGS.items():
        now = [flag for flag in new if flag in have]
        if now and old not in have and (not also or also in have):
            out[old] = (now[0], unit)
    return out


def rewrite_old_spellings(command: Any, args: list[str]) -> list[str]:
    """`--order A,B` -> `--label-order A,B`, `--older-than-days 30` -> `--older-than 30d` for the old spellings
    `command` reads; everything else (and all after `--`) passes unchanged."""
    table = renames(command)
    if not table:
        return args
    out: list[str] = []
    unit = ""
    for i, token in enumerate(args):
        if token == "--":
            out.extend(args[i:])
            break
        if unit:
            out.append(token + unit)
            unit = ""
            continue
        flag, eq, value = token.partition("=")
        if flag in table:
            new, unit_of = table[flag]
            if eq:
                out.append(f"{new}={value}{unit_of}")
            else:
                out.append(new)
                unit = unit_of
            continue
        out.append(token)
    return out


# -- durations: seconds everywhere ---------------------------------------------------------------------------

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DURATION_HELP = "seconds, or a number with a unit: 90s, 15m, 12h, 7d"


def seconds(value: Any) -> float:
    """A duration in seconds: `90`, `90s`, `15m`, `1.5h`, `7d` (the `parser` of every duration option)."""
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)\s*", str(value).lower())
    if match is None:
        raise typer.BadParameter(f"{value!r} is not a duration ({DURATION_HELP})")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def duration(default: str | None, flag: str, help: str) -> Any:
    """A duration option: seconds, or a number with a unit (s, m, h, d); the value is seconds (a float)."""
    return typer.Option(default, flag, parser=seconds, metavar="DURATION", help=f"{help} ({DURATION_HELP})")


#: RMTrainConfig fields whose flag is not `--field-name`, because that flag means something else on other verbs
#: (`--model` is a model spec; the field's old flag still works, OLD_SPELLINGS); cli/train_cmd.py builds its flags
#: from it
FIELD_FLAGS = {"model": "--base-model"}


# -- the checks ------------------------------------------------------------------------------------------------

def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def config_meanings() -> dict[str, str]:
    """train-rm's flags that are RMTrainConfig fields and no other verb's: flag -> the field's help."""
    from dataclasses import fields

    from tailorbench.api.training import RMTrainConfig

    out = {}
    for f in fields(RMTrainConfig):
        for flag in (FIELD_FLAGS.get(f.name, "--" + f.name.replace("_", "-")), *f.metadata.get("aliases", ())):
            out[flag] = f.metadata.get("help", "")
    return out


def leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(`stages relevance`, command) for every verb under `command`, hidden aliases left out."""
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            if not getattr(sub, "hidden", False):
                yield from leaves(sub, (*path, name))
    else:
        yield " ".join(path), command


def options(command: Any) -> Iterator[tuple[str, Any]]:
    """(long flag, param) of every shown option of a verb (`--help` aside)."""
    for param in command.params:
        if param.param_type_name != "option" or param.name == "help" or param.hidden:
            continue
        long = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        yield long, param


def meaning(flag: str, extra: dict[str, str] | None = None) -> str | None:
    return MEANINGS.get(flag) or (extra or {}).get(flag)


def second_meanings(command: Any, extra: dict[str, str] | None = None) -> list[str]:
    """Every way the verbs under `command` break "one meaning per flag", one line each: a shown option whose help
    does not begin with its flag's declared meaning (a second meaning, or a flag no one declared), two flags
    declared with the same meaning (one meaning, two names)."""
    extra = config_meanings() if extra is None else extra
    problems: list[str] = []
    for verb, cmd in leaves(command):
        for flag, param in options(cmd):
            declared = meaning(flag, extra)
            help_text = _normal(param.help or "")
            if declared is None:
                problems.append(f"{verb}: {flag} has no declared meaning (add it to cli/vocabulary.py MEANINGS)")
                continue
            want = _normal(declared)
            if not (help_text.startswith(want) and help_text[len(want):len(want) + 1] in ("", " ", ":", ";",
                                                                                         ",", ".", "(")):
                problems.append(f"{verb}: {flag} means {' '.join((param.help or '').split())[:80]!r}, not its "
                                f"declared meaning {declared!r} (a second meaning: give it its own flag)")
    seen: dict[str, str] = {}
    for flag, text in MEANINGS.items():
        key = _normal(text)
        other = seen.get(key)
        if other is not None:
            problems.append(f"{other} and {flag} are declared with one meaning, {text!r}: one flag per meaning")
        seen[key] = flag
    return problems



def stale_meanings(command: Any) -> list[str]:
    """The flags declared in MEANINGS (or OLD_SPELLINGS) that no verb under `command` takes: a meaning declared
    for nothing, or an old spelling that no verb reads."""
    taken = {flag for _, cmd in leaves(command) for flag, _ in options(cmd)}
    read = {old for _, cmd in leaves(command) for old in renames(cmd)}
    return sorted({*(set(MEANINGS) - taken), *(set(OLD_SPELLINGS) - read)})
