"""docs/cli.md's flag tables, written from the CLI itself: the old spellings of renamed options, every option of
every verb with its meaning and the verbs that take it, and train-rm's `RMTrainConfig` flags. The tables sit
between two markers in docs/cli.md's "Vocabulary" section; everything else there is written by hand.

    python scripts/cli_table.py           # rewrite the tables
    python scripts/cli_table.py --check   # exit 1 when docs/cli.md's tables are not the app's

tests/cli/test_cli_table.py fails when the committed tables differ from what this writes. A meaning is the
flag's declared meaning (`tailorbench.cli.vocabulary.MEANINGS`), said at more length here (`DETAILS`) where
the help of one verb does not say enough."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BEGIN = "<!-- flag tables: written by scripts/cli_table.py from the CLI (edit the verbs, then run it) -->"
END = "<!-- end of the flag tables -->"

#: a flag's meaning as the docs say it, for every verb that takes it; a flag without a row here shows the help
#: of the first verb that takes it (which begins with the flag's declared meaning)
DETAILS: dict[str, str] = {
    '--json': "print the verb's result object as JSON on stdout",
    '--out': 'what the verb writes: a directory, or a file (see above)',
    '--n-boot': 'bootstrap resamples of the confidence intervals',
    '--seed': (
        'seed of everything random the verb does (sampling, orders, splits, bootstraps; tool exports: the'
        ' answer sides)'),
    '--repeat': (
        'judge each run N times, repeats 2..N without the call cache (`RUN/repeats/K`): the share of '
        'verdicts identical in every repeat and the accuracy spread in results.json `determinism` and '
        "the report; a judge at temperature 0 whose repeats differ is named in the report's warnings "
        '(docs/metrics.md, "Determinism"); `--executor local` only'),
    '--calibration': (
        'require the calibration figures (ECE, Brier): a judge that yields no probability '
        '(`longer`, `llm:` with text verdicts ...) is exit 2 before any verdict, nothing written; '
        "without it such a judge's `calibration` is null"),
    '--data': (
        'the benchmark: `demo`, `personafeedback` (hub), `hf:OWNER/NAME[@REVISION]` (pushed by `tailor '
        'data push`) or a path in any layout (`tailor ls layouts`)'),
    '--setting': (
        'the context the judge or model sees: `persona`, `none`, `rag`, or a registered setting '
        '(`tailor ls settings`)'),
    '--judge-option': '`KEY=VALUE` for the judge (repeat)',
    '--model-option': '`KEY=VALUE` for the model backend (repeat)',
    '--batch': (
        'provider batch APIs (`openai:`, `anthropic:` models): half the price, answers within 24 h, the '
        'batches recorded in `RUN/batches/` so `--resume` re-attaches (docs/models.md, "Batch mode"); '
        '`eval`: the same as `--judge-option batch=true`; `gen-eval`: for the judge and each generating '
        'model whose backend has a batch API (exit 2 when none has)'),
    '--max-failed': 'the share of failed calls above which the verb exits 3 (next section)',
    '--resume': 'continue an interrupted run directory',
    '--progress': 'progress bar on stderr',
    '--skip-invalid': 'skip and count invalid rows of the benchmark instead of stopping',
    '--persona-sections': 'keep only these persona sections',
    '--batch-size': (
        'items per batch: judge inputs (`eval`), generations and verdicts (`gen-eval`), pairs '
        '(`train-rm`)'),
    '--orders': (
        '`both` (each case with chosen as A and as B), `random` (one order) or `authors` (the one order'
        " the benchmark's authors draw: Personalized RewardBench's seed 42, `meta.authors_order`)"),
    '--turns': (
        'PrefEval: the filler turns before each question, comma-separated (`0,10,300`); the same as '
        '`--data-option turns=...` (docs/benchmarks.md)'),
    '--data-option': (
        "`KEY=VALUE` for the benchmark's layout (repeat): PrefEval `turns`, `forms`, `topics`, "
        '`seed`, `reminder`; PersonaMem `contexts`, `size`; PRISM `strata`; kept in the manifest, '
        'so `--resume` reads the same items'),
    '--protocol': (
        "`default` (tailorbench's) or `authors` (PrefEval, PersonaMem and Personalized RewardBench "
        'asked and scored as their authors\' scripts do: docs/benchmarks.md, "Protocols"); recorded in'
        ' the run and named in every report; with `authors`, a `--judge-option` that contradicts the '
        "authors' settings, or a benchmark without an authors' protocol, is exit 2"),
    '--skip-missing': (
        '`--suite`: leave out a benchmark whose data is not under `--data-root` (the leaderboard '
        'says which and why) instead of stopping before any work'),
    '--scorer-version': "PersonaMem's upstream scorer followed: `041d82a` (the default) or `214bc36`",
    '--limit': 'a seeded sample of this many cases',
    '--ci-unit': 'the bootstrap unit: `case` or `user`',
    '--reference': "what the model's answers are compared with: `chosen` or a model spec",
    '--judge-setting': 'the context the judge sees',
    '--config': 'a YAML file of `RMTrainConfig` fields (flags override it)',
    '--label-order': 'category order of the ratings (weighted kappas, ordinal alpha)',
    '--positive': 'the positive label for precision / recall / F1',
    '--level': 'the confidence level of the intervals',
    '--proxy': (
        "the proxy standing in for people in a human-anchored estimate: a second judge's pairwise run on"
        ' the same cases (docs/estimate.md)'),
    '--labels': (
        "people's labels for an estimate: an annotation export folder, a long-format ratings file, or "
        "`benchmark` (the benchmark's own labels on the cases of `--sample`)"),
    '--sample': (
        "the sampling plan (`tailor estimate sample`'s file) the labelled cases came from: their "
        'inclusion probabilities'),
    '--assume-uniform': (
        'no sampling plan: the labelled cases were a uniform random sample (the estimate says '
        'so)'),
    '--versus': "a second system's pairwise run: estimate the difference RUN - VERSUS on the same cases",
    '--check-library': (
        'recompute the uniform cells with ppi-python (the `[estimate]` extra) and report the '
        'largest difference'),
    '--annotators': (
        "who the humans are, setting ε as the alt-test's authors advise: `expert` 0.2, `skilled` "
        '0.15, `crowd` 0.1 (with `--epsilon` only when the two agree)'),
    '--min-humans': (
        'the alternative-annotator test: an item counts only when this many humans rated it (the '
        "authors' `min_humans_per_instance`, 2)"),
    '--alignment': (
        "the alternative-annotator test's alignment score: `accuracy` (share of the other humans "
        'with the same label), `neg-rmse` (ordered labels), `auto` (neg-rmse with `--label-order`, '
        'accuracy for string labels; refused, exit 2, on integer labels of more than two values, '
        'which must declare their scale), or a function registered in the entry-point group '
        '`tailorbench.alignments`'),
    '--tier-file': (
        'a JSONL file with `id` and `tier` per line (the benchmark `tailor tiers` wrote): admissibility '
        'per tier too'),
    '--items': 'item file the verb reads (stage items; `tiers`: the rated pairs)',
    '--min-ratings': 'tiering: items with fewer ratings are skipped',
    '--path': 'the call-cache file',
    '--live': (
        'also ask the provider for the status of the batches that have not ended (default), or show only '
        'what the run recorded'),
    '--yes': 'do not ask for confirmation',
    '--until': 'stop after this build stage',
    '--license': (
        'the licence a pushed benchmark is shared under (required; an SPDX id such as `cc-by-4.0`, or '
        '`other`)'),
    '--private': 'create the hub repository private (when the push creates it)',
    '--dry-run': 'write the folder that would be uploaded to this directory; upload nothing',
    '--push': 'also publish the leaderboard to this hub dataset, `OWNER/NAME`',
    '--map': (
        'a project tailorbench did not make: where its export keeps the item, rater, question and answers '
        '(`item=data.KEY,a=data.KEY,b=data.KEY,left=...,right=...,rater=...,question=...,value.SHOWN=MEANT'
        '`, or a YAML file); without it the common shapes are detected (docs/interop.md)'),
    '--min-submitted': 'Argilla: annotators per record (`TaskDistribution(min_submitted=N)`)',
    '--predictions': (
        'judge verdicts (long format or run directory) attached to a tool export (Label Studio '
        'predictions, Argilla suggestions)'),
    '--agreement': 'add the agreement report so far',
    '--include-gold': 'also export the labels of gold items',
    '--project': (
        'annotation project(s) an annotator works on (`estimate sample`: the project created with the '
        'plan imported)'),
    '--admin': 'create an admin instead of an annotator',
    '--link-valid-for': 'how long a new login link stays valid (a duration; it logs in once; default 7d)',
    '--base-url': 'the address annotators reach the service at (login links, study URLs)',
    '--consent': (
        "the researcher's consent and information text (or `@FILE`), shown first on a study's consent "
        'page'),
    '--returned': 'participant ids the platform reports as returned (their items and places are released)',
    '--study': 'the study id, for a participant id that is in several studies',
    '--human': 'human annotations of the stage (Re-Centering JSONL, one file per annotator)',
    '--export': 'annotation-service exports (ratings.jsonl / .csv)',
    '--votes': 'model vote files (Re-Centering model shape)',
    '--predicted': 'predicted attributes: stage-2 vote files',
    '--taxonomy': 'error-category files',
    '--tasks': 'an A/B-rating task file',
    '--conversations': 'conversations to extract attributes from',
    '--name': 'name written into the output: the rater, generator, extractor or judge (default: the spec)',
    '--min-shared': 'agreement pairs need this many shared items',
    '--encoder': "the encoder path (default: the shipped MiniLM, or the trained model's)",
    '--interventions': 'also train and judge the verifier and the relevance classifier',
    '--force': 'write over an existing config file (study.yaml, arena.yaml)',
    '--watch': (
        'keep going: check again every `--interval` seconds while people are needed, until the study is '
        'finished'),
    '--interval': 'time between checks with `--watch` (a duration)',
    '--max-wait': 'with `--watch`: stop waiting after this long (a duration; exit 0, still waiting)',
    '--classifier': 'a trained relevance classifier',
    '--model': 'model spec (`openai:MODEL@URL`, `hf:PATH`, `vllm:PATH`, ...; `tailor ls backends`)',
    '--judge': 'judge spec (`NAME` or `NAME:ARG`; `tailor ls judges`); `eval`: repeat for several',
    '--rater': (
        'a rater to test as a judge against the humans (repeat); raters outside the human group, such as'
        ' a run directory\'s `judge@setting`, are judges without it (docs/metrics.md, "Human '
        'admissibility")'),
    '--task': (
        "the task the benchmark is asked as: `auto` (its own task: PrefEval's classification task and "
        "PersonaMem are answered as multiple choice by each `llm:` judge's model and scored by the "
        "benchmark's rule; any other judge exits 2), `pairwise` (the items' pair view, any judge), "
        '`multiple-choice`'),
    '--task-type': (
        'a task type of the annotation service: `pairwise`, `attributes`, `relevance`, `ab_rating`, '
        "or a plugin's (`tailor ls task-types`)"),
    '--input-format': (
        "format of the files read: an annotation tool's export, `label-studio`, `argilla` or "
        '`potato`, `auto` (detected from the content; `agree`, `tiers`: `long` too; `annotate '
        'import`: a benchmark layout, `tailor ls layouts`) (docs/interop.md)'),
    '--output-format': (
        "format written: an annotation tool's project, `label-studio`, `argilla` or `potato` "
        '(`annotate export`: `native`, the long format, by default) (docs/interop.md)'),
    '--older-than': 'age: only what is older than this (a duration): cache entries, unfinished assignments',
    '--model-name': 'only the entries of this model, by name as `tailor cache stats` lists it',
    '--eval-fraction': (
        'share of users held out for evaluation (split by user: the same users for the baseline,'
        ' the verifier and the relevance classifier with one `--seed`)'),
    '--time-limit': 'how long a participant may take (a duration): then their unfinished items are released',
    '--n': 'annotators per item',
    '--dir': 'annotation project directory',
    '--db': ('annotation database URL (default: SQLite under `--dir`; arena verbs: the arena\'s tables beside the '
              'annotation service\'s, default arena.yaml\'s `database`, else SQLite `ARENA_DIR/arena.sqlite`)'),
    '--executor': (
        'where the work runs: `local` (this process) or `ray` (a Ray cluster at `--ray-address`; '
        "docs/scale.md): a judge's batches on workers, a `vllm:` model's engines as Ray Data LLM "
        "replicas (`gen-eval`'s generation with any other model stays local; `build run` takes only a"
        ' `vllm:` model under `ray`)'),
    '--temperature': 'sampling temperature of the generations',
    '--max-tokens': 'token budget per answer generated',
    '--threshold': 'decision threshold of the trained head',
    '--host': 'address to listen on (`view`: loopback unless `--allow-remote`)',
    '--port': 'port to listen on',
}


def _cell(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _verbs_cell(verbs: list[str], every: list[str]) -> str:
    return "every verb" if verbs == every else _cell(verbs)


def _help(param: Any) -> str:
    return _text(param.help or "")


def _text(text: str) -> str:
    """A table cell: one line, a `|` escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def tables(command: Any = None) -> str:
    """The Markdown between the markers, from the `tailor` command (the app's, when None)."""
    import typer.main

    from tailorbench.cli.app import app
    from tailorbench.cli.vocabulary import MEANINGS, config_meanings, leaves, options, renames

    command = typer.main.get_command(app) if command is None else command
    config = config_meanings()
    every = [verb for verb, _ in leaves(command)]
    spellings: dict[str, list[str]] = {}
    takers: dict[str, list[str]] = {}
    helps: dict[str, str] = {}
    old: dict[tuple[str, str], list[str]] = {}
    for verb, cmd in leaves(command):
        for flag, param in options(cmd):
            names = spellings.setdefault(flag, [])
            names.extend(n for n in (*param.opts, *param.secondary_opts) if n not in names)
            takers.setdefault(flag, []).append(verb)
            helps.setdefault(flag, _help(param))
        for param in cmd.params:
            if getattr(param, "hidden", False) and param.param_type_name == "option":
                flag, _, rest = _help(param).removeprefix("old spelling of ").partition(" ")
                old.setdefault((_cell(param.opts), f"`{flag}` {rest}".strip()), []).append(verb)
        for spelling, (new, unit) in renames(cmd).items():
            now = f"`{new}`" + (f" (`N{unit}`: a duration)" if unit else "")
            old.setdefault((f"`{spelling}`", now), []).append(verb)
    rows = ["Old spellings of options, accepted and hidden from `--help`:", "",
            "| old option | now | verbs |", "|---|---|---|"]
    rows += [f"| {was} | {now} | {_cell(verbs)} |" for (was, now), verbs in old.items()]
    rows += ["", "The options (`tests/cli/test_vocabulary.py` checks every option of every verb against these "
             "tables; `cli/vocabulary.py` declares each flag's one meaning):", "",
             "| option | meaning | verbs |", "|---|---|---|"]
    own = ["", "`tailor train-rm`'s other flags, one per `RMTrainConfig` field (the meaning is the field's "
           "`metadata[\"help\"]`; its default is in `--help`):", "", "| option | meaning | verbs |", "|---|---|---|"]
    for flag, verbs in takers.items():
        if flag in config and flag not in MEANINGS and verbs == ["train-rm"]:
            field = flag[2:].replace("-", "_") if flag != "--base-model" else "model"
            own.append(f"| {_cell(spellings[flag])} | {_text(config[flag])} (`{field}`) | `train-rm` |")
            continue
        meaning = _text(DETAILS[flag]) if flag in DETAILS else helps[flag]
        rows.append(f"| {_cell(spellings[flag])} | {meaning} | {_verbs_cell(verbs, every)} |")
    return "\n".join([BEGIN, *rows, *own, END])


def write(check: bool = False) -> bool:
    """Rewrite docs/cli.md's tables (or, with `check`, only compare); True when they were already the app's."""
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    fresh = tables()
    if text[start:end] == fresh:
        return True
    if not check:
        DOCS.write_text(text[:start] + fresh + text[end:], encoding="utf-8")
    return False


if __name__ == "__main__":
    same = write(check="--check" in sys.argv[1:])
    if "--check" in sys.argv[1:] and not same:
        sys.exit("docs/cli.md's flag tables differ from the CLI: run python scripts/cli_table.py")
