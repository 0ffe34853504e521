"""Entry point of `tailor`. Each verb lives in its own module with a `register(app)` function; modules import
only light dependencies at the top so `tailor --help` stays fast."""

from __future__ import annotations

import importlib
import sys

import typer
from typer.core import TyperCommand

from tailorbench.cli.common import TailorGroup, VerbCommand, exit_codes_help
from tailorbench.errors import TailorError
from tailorbench.failures import EXIT_INTERRUPTED

#: verb modules under tailorbench.cli, registered in this order
_VERBS: tuple[str, ...] = (
    "eval_cmd", "report_cmd", "data_cmd", "agree_cmd", "cache_cmd", "train_cmd", "annotate_cmd", "stages_cmd",
    "build_cmd", "gen_eval_cmd", "view_cmd", "batch_cmd", "study_cmd", "estimate_cmd", "ls_cmd",
    "arena_cmd",
)

app = typer.Typer(
    name="tailor",
    cls=TailorGroup,
    help="tailorbench: human-grounded evaluation of LLM personalization.",
    epilog=exit_codes_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: one example per verb, shown at the end of its `--help` (tests/cli/test_vocabulary.py checks every verb has one)
EXAMPLES: dict[str, str] = {
    "eval": "tailor eval --data demo --judge longer --judge random --setting persona --out runs/demo",
    "report": "tailor report runs/demo/* --out reports/demo",
    "compare": "tailor compare runs/a runs/b --n-boot 2000 --json",
    "view": "tailor view runs/demo/* --port 8765   (or: tailor view runs/demo/* --bundle site/)",
    "agree": "tailor agree ratings.jsonl --label-order A,B --n-boot 1000 -o agreement.json",
    "tiers": "tailor tiers ratings.jsonl --items items.jsonl --out benchmark.jsonl",
    "estimate runs": "tailor estimate runs demo/embedding__persona --proxy demo/longer__persona "
                     "--labels exports/study --out estimate.json",
    "estimate sample": "tailor estimate sample --data demo --sampling stratified --share 0.2 --out sample.jsonl",
    "estimate plan": "tailor estimate plan demo/embedding__persona --proxy demo/longer__persona "
                     "--labels pilot.jsonl --half-width 0.03",
    "train-rm": "tailor train-rm --data demo --out models/rm --epochs 1 --batch-size 8",
    "gen-eval": "tailor gen-eval --model openai:MODEL@http://127.0.0.1:8080/v1 --judge longer --out runs/gen",
    "data check": "tailor data check demo --json",
    "data convert": "tailor data convert personafeedback --out pf.jsonl",
    "data push": "tailor data push tiers/benchmark.jsonl me/my-bench --license cc-by-4.0 --dry-run hub/",
    "cache stats": "tailor cache stats --json",
    "cache clear": "tailor cache clear --model-name gpt-4o-mini --older-than 30d --yes",
    "batch status": "tailor batch status runs/gpt4o-mini --json",
    "batch cancel": "tailor batch cancel runs/gpt4o-mini",
    "annotate serve": "tailor annotate serve --dir annotation --port 8000",
    "annotate import": "tailor annotate import study pairs.jsonl --dir annotation",
    "annotate progress": "tailor annotate progress study --agreement --dir annotation",
    "annotate release": "tailor annotate release study --older-than 12h --dir annotation",
    "annotate export": "tailor annotate export study --out exports/study --dir annotation",
    "annotate export-items": "tailor annotate export-items items.jsonl --task-type pairwise "
                             "--output-format label-studio -o ls-project",
    "annotate import-labels": "tailor annotate import-labels project-1-export.json --out ratings.jsonl",
    "annotate project create": "tailor annotate project create study --task-type pairwise --n 3 --dir annotation",
    "annotate project list": "tailor annotate project list --dir annotation",
    "annotate annotator add": "tailor annotate annotator add alice --project study --dir annotation",
    "annotate annotator join": "tailor annotate annotator join alice --project study --dir annotation",
    "annotate annotator link": "tailor annotate annotator link alice --link-valid-for 3d --dir annotation",
    "annotate annotator deactivate": "tailor annotate annotator deactivate alice --dir annotation",
    "annotate annotator activate": "tailor annotate annotator activate alice --dir annotation",
    "annotate annotator list": "tailor annotate annotator list --dir annotation",
    "annotate crowd create": "tailor annotate crowd create study --quota 40 --max-participants 30 "
                             "--completion-code C1A2B3 --screenout-code S9 --screenout-gold-below 0.5 "
                             "--time-limit 90m --param-id PROLIFIC_PID --dir annotation",
    "annotate crowd list": "tailor annotate crowd list --dir annotation",
    "annotate crowd participants": "tailor annotate crowd participants 1 --dir annotation",
    "annotate crowd link": "tailor annotate crowd link 1 --base-url https://annotate.example.org --dir annotation",
    "annotate crowd close": "tailor annotate crowd close 1 --dir annotation",
    "annotate crowd release": "tailor annotate crowd release 1 --returned 5f0c0ffee0c0ffee0c0ffee0 --dir annotation",
    "annotate crowd reissue": "tailor annotate crowd reissue 5f0c0ffee0c0ffee0c0ffee0 --study 1 --dir annotation",
    "stages report-relevance": "tailor stages report-relevance --human h/*.jsonl --votes m/*.jsonl --out reports/",
    "stages baseline": "tailor stages baseline --items items.jsonl --human h/*.jsonl --out votes.jsonl",
    "stages export-relevance": "tailor stages export-relevance --items items.jsonl --out tasks.jsonl",
    "stages generate": "tailor stages generate --items items.jsonl --human h/*.jsonl --model openai:MODEL@URL "
                       "--out gen/",
    "stages judge-relevance": "tailor stages judge-relevance --items items.jsonl --model openai:gpt-4o-mini "
                              "--out votes.jsonl",
    "stages report-extraction": "tailor stages report-extraction --items items.jsonl --human h/*.jsonl --out reports/",
    "stages report-incorporation": "tailor stages report-incorporation --tasks ab_tasks.jsonl --ratings r/*.jsonl "
                                   "--out reports/",
    "stages extract": "tailor stages extract --conversations chats.jsonl --model openai:gpt-4o-mini --out items.jsonl",
    "stages export-tasks": "tailor stages export-tasks --items items.jsonl --out tasks.jsonl",
    "stages categorise": "tailor stages categorise --items items.jsonl --human h/*.jsonl --model openai:gpt-4o-mini "
                         "--out taxonomy.jsonl",
    "stages judge-ab": "tailor stages judge-ab --tasks ab_tasks.jsonl --model openai:gpt-4o-mini --out ratings.jsonl",
    "stages example": "tailor stages example --out reports/example --n-boot 200",
    "stages summary": "tailor stages summary reports/",
    "stages train-verifier": "tailor stages train-verifier --items items.jsonl --human h/*.jsonl --out verifier/",
    "stages verify": "tailor stages verify --items items.jsonl --verifier verifier/verifier.npz --out kept.jsonl",
    "stages train-relevance": "tailor stages train-relevance --items items.jsonl --human h/*.jsonl --out clf/",
    "stages classify-relevance": "tailor stages classify-relevance --items items.jsonl --classifier "
                                 "clf/relevance_classifier.npz --out votes.jsonl",
    "build run": "tailor build run examples/construction/config.yaml --until questions",
    "study init": "tailor study init studies/pilot",
    "study plan": "tailor study plan studies/pilot",
    "study run": "tailor study run studies/pilot --watch --interval 60",
    "study status": "tailor study status studies/pilot",
    "study report": "tailor study report studies/pilot --json",
    "study demo": "tailor study demo /tmp/study-demo",
    "ls": "tailor ls judges --json",
    "arena init": "tailor arena init arenas/pilot",
    "arena plan": "tailor arena plan arenas/pilot",
    "arena run": "tailor arena run arenas/pilot --port 8000",
    "arena status": "tailor arena status arenas/pilot",
    "arena leaderboard": "tailor arena leaderboard arenas/pilot",
    "arena export": "tailor arena export arenas/pilot --out arenas/pilot-pairs.jsonl",
    "arena delete": "tailor arena delete arenas/pilot --participant p-0123456789abcdef",
    "arena demo": "tailor arena demo /tmp/arena-demo",
}

for _name in _VERBS:
    importlib.import_module(f"tailorbench.cli.{_name}").register(app)


def _vocabulary(typer_app: typer.Typer, path: tuple[str, ...] = ()) -> None:
    """Every verb gets the shared command class (`common.VerbCommand`, unless it declares a subclass) and its
    example as the last paragraph of its help."""
    for info in typer_app.registered_commands:
        name = " ".join((*path, info.name or ""))
        if info.cls is None or info.cls is TyperCommand:
            info.cls = VerbCommand
        if name in EXAMPLES:
            info.epilog = f"Example: {EXAMPLES[name]}"
    for group in typer_app.registered_groups:
        if group.typer_instance is not None and group.name:
            _vocabulary(group.typer_instance, (*path, group.name))


_vocabulary(app)


def main() -> None:
    """`tailor`. The one place that keeps the exit codes true for what escapes a verb: Ctrl-C anywhere is 130,
    a TailorError a verb did not report is 2 with its one-line message."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except TailorError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
