"""Shared CLI plumbing: one error path (`user_errors`: clear message, exit code 2), the exit-code-3 rule for
failed work, JSON output on stdout only, the one `KEY=VALUE` reader, the options every verb names the same way
(docs/cli.md, "Vocabulary"), the command class of every verb (`VerbCommand`) and the rag setting's options
(shared by `eval` and `gen-eval`). The exit codes are the table below (`tailor --help`, docs/cli.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from tailorbench.errors import TailorError
from tailorbench.failures import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, FailureCheck
from tailorbench.redact import redact

T = TypeVar("T")

#: (code, meaning) of every verb, in the order `tailor --help` shows them
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "the work was done"),
    (EXIT_BAD_INPUT, "bad input or configuration (found before any work where it can be)"),
    (EXIT_FAILED, "finished, but failed: calls that never returned a usable answer exceed --max-failed (default "
                  "0), or all failed (invalid verdicts do not count); build run: a stage produced nothing or gave up"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); finished work is kept: tailor eval --resume DIR"),
    (1, "an unexpected error: a bug (see the traceback)"),
)
MAX_FAILED_HELP = ("exit with code 3 when more than this share of calls failed (0.05 = 5%); default 0: any failed "
                   "call; a run where every call failed always exits 3")


def exit_codes_help() -> str:
    """The exit-code table as help text (one paragraph per code, so help formatters keep the lines)."""
    return "Exit codes of every verb:\n\n" + "\n\n".join(f"{code:>3}  {text}" for code, text in EXIT_CODES)


def exit_if_failed(checks: Iterable[FailureCheck]) -> None:
    """Print every check that exceeds its `--max-failed` as `error: ...` and exit 3 if any does (the worst of
    several run directories decides)."""
    failed = [c for c in checks if c.exceeded]
    for check in failed:
        typer.echo(f"error: {check.message()}", err=True)
    if failed:
        raise typer.Exit(EXIT_FAILED)


#: the base class of click's errors as typer raises them (typer >= 0.20 carries its own copy of click)
_CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


@contextmanager
def usage_errors() -> Iterator[None]:
    """A usage error (an unknown option or verb, an option value of the wrong type, a missing argument) as what
    a TailorError gets: one `error: ...` line on stderr, naming the verb's --help, and exit code 2, so a script
    or a user reads every refusal the same way (typer's own display is a box without `error:`). A missing verb
    (`tailor annotate`) still prints the group's help."""
    try:
        yield
    except _CLICK_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            raise
        format_message = getattr(exc, "format_message", None)  # the text click shows, e.g. "Invalid value for ..."
        message = " ".join(str(format_message() if callable(format_message) else exc).split())
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            message += f" (see {ctx.command_path} --help)"
        typer.echo(f"error: {redact(message)}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn TailorError (bad data, bad options) into `error: ...` on stderr and exit code 2."""
    try:
        yield
    except TailorError as exc:
        typer.echo(f"error: {redact(str(exc))}", err=True)
        raise typer.Exit(exc.exit_code) from None


def run_or_exit(fn: Callable[[], T]) -> T:
    with user_errors():
        return fn()
    raise AssertionError("unreachable")


def plain(payload: Any) -> Any:
    """A verb's result as JSON data: an API result model (`api.results.Output`) as its object, a list of them as
    a list of objects."""
    if isinstance(payload, list):
        return [plain(p) for p in payload]
    to_dict = getattr(payload, "to_dict", None)
    return to_dict() if callable(to_dict) else payload


def print_json(payload: Any) -> None:
    """The JSON object alone on stdout (progress and warnings go to stderr)."""
    sys.stdout.write(json.dumps(plain(payload), ensure_ascii=False, indent=2) + "\n")


def emit(payload: Any, as_json: bool) -> None:
    """A verb's result: with `--json` the JSON object alone; otherwise the same fields as `key: value` lines (a
    list of objects one line per object), for a person to read."""
    if as_json:
        print_json(payload)
        return
    payload = plain(payload)
    rows = payload if isinstance(payload, list) else [payload]
    for row in rows:
        if isinstance(row, dict) and isinstance(payload, list):
            typer.echo("  ".join(f"{k}={_scalar(v)}" for k, v in row.items()))
        elif isinstance(row, dict):
            for key, value in _flat(row):
                typer.echo(f"{key}: {value}")
        else:
            typer.echo(_scalar(row))
    if isinstance(payload, list) and not payload:
        typer.echo("(none)")


def _flat(row: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(dotted key, text) of an object's fields; blocks nested deeper than two levels are shown as JSON."""
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and depth < 2:
            yield from _flat(value, f"{name}.", depth + 1)
        else:
            yield name, _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(_scalar(v) for v in value) if value else "(none)"
    return json.dumps(value, ensure_ascii=False)


def split_csv(values: list[str] | None) -> list[str] | None:
    """`--tier easy,hard --tier medium` -> ['easy', 'hard', 'medium']."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


#: `--ray-address` and `--executor-option` of the verbs that take `--executor` (eval, gen-eval, build run)
RAY_ADDRESS_OPTION = typer.Option(
    None, "--ray-address", help="--executor ray: the cluster (HOST:PORT, ray://HOST:PORT, auto); default "
    "$RAY_ADDRESS, else a local one")
EXECUTOR_OPTIONS = typer.Option(
    None, "--executor-option", help="KEY=VALUE for the executor (ray: workers, num_cpus, num_gpus, depth, ...)")


#: `--batch` of `eval` and `gen-eval`
BATCH_HELP = ("provider batch APIs (openai:, anthropic:): half the price, answers within 24 h, state in RUN/batches "
              "(--resume re-attaches; docs/models.md)")


def batch_option(judge_options: dict[str, str], batch: bool) -> dict[str, str]:
    """`--batch` is `--judge-option batch=true` (an explicit `batch=...` option wins)."""
    return {"batch": "true", **judge_options} if batch else judge_options


def rag_options(retriever: str | None, top_k: int | None, memory: Path | None) -> dict[str, object]:
    """Options of the rag setting (recorded in the manifest through EvalConfig.setting_options)."""
    out: dict[str, object] = {}
    if retriever is not None:
        out["retriever"] = retriever
    if top_k is not None:
        out["top_k"] = top_k
    if memory is not None:
        out["memory"] = str(memory.resolve())
    return out


def parse_pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    """The one `KEY=VALUE` reader of the command line (`--judge-option`, `--model-option`): repeated flags ->
    {KEY: VALUE} (the value as typed; `tailorbench.options` types it where it is used). A value without `=` or
    with an empty key is one ConfigError naming the flag."""
    from tailorbench.errors import ConfigError

    out: dict[str, str] = {}
    for pair in values or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


def text_or_file(value: str, flag: str) -> str:
    """The one reader of the options that take `TEXT, or @FILE to read it` (`--instructions`, `--consent`): the
    text as given, or the named file's UTF-8 text; a file that is missing, unreadable, too large or not text is a
    DataError naming it and the flag (exit 2), before anything is opened or created."""
    if not value.startswith("@"):
        return value
    from tailorbench.errors import DataError
    from tailorbench.files import load_bytes

    path = Path(value[1:]).expanduser()
    data = load_bytes(path, f"the text of {flag}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(path, data[: exc.start].count(b"\n") + 1, None,
                        f"not UTF-8 text (byte {data[exc.start]:#04x}); {flag} @FILE reads a text file") from None


def write_json(path: Path, payload: Any, flag: str = "--out") -> None:
    """A verb's result object written as JSON to `path` (atomic; parents created); a path that cannot be written
    is a ConfigError naming the flag (exit 2 through `user_errors`)."""
    from tailorbench.errors import ConfigError
    from tailorbench.files import write_text_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"{flag} {path} cannot be written: {exc.strerror or exc}") from None


# -- the shared vocabulary: options every verb names the same way (docs/cli.md, "Vocabulary") ----------------

N_BOOT_HELP = "bootstrap resamples of the confidence intervals"
#: `--n-boot N` (one name everywhere); `--resamples` is its old spelling on some verbs, kept hidden
RESAMPLES_ALIAS = typer.Option(None, "--resamples", hidden=True, help="old spelling of --n-boot")
JSON_HELP = "print the verb's result object as JSON on stdout (progress and warnings go to stderr)"
JSON_OPTION = typer.Option(False, "--json", help=JSON_HELP)
#: the metavar of options that take several files after one flag (`--human h/*.jsonl`, as a shell expands a glob)
FILES = "FILE..."


def n_boot_value(n_boot: int, resamples: int | None) -> int:
    """The bootstrap resamples a verb was given (`--n-boot`, or its old spelling `--resamples`), at least 1; the
    error names the flag the user typed."""
    from tailorbench.options import as_int

    if resamples is not None:
        return as_int("--resamples", resamples, minimum=1)
    return as_int("--n-boot", n_boot, minimum=1)


def expand_file_lists(command: Any, args: list[str]) -> list[str]:
    """`--human a b --model c` -> `--human a --human b --model c` for the options of `command` that take several
    files (metavar FILES): each flag takes one value in the parser, so the files a shell glob expands to after
    one flag are given the flag each. Everything else (and all after `--`) passes unchanged."""
    names = {opt for p in command.params if getattr(p, "multiple", False) and getattr(p, "metavar", None) == FILES
             for opt in p.opts}
    if not names:
        return args
    out: list[str] = []
    current: str | None = None
    for i, token in enumerate(args):
        if token == "--":
            out.extend(args[i:])
            break
        if token.startswith("-"):
            flag = token.partition("=")[0]
            current = flag if flag in names else None
        elif current is not None and out[-1] != current:
            out.append(current)  # a second, third ... file after the flag
        out.append(token)
    return out


class VerbCommand(TyperCommand):
    """The command class of every verb (`cli/app.py` sets it): the old spellings of renamed flags still work
    (`vocabulary.rewrite_old_spellings`), options that take several files read them as a shell expands a glob
    (`expand_file_lists`), and `help_extra` (a class attribute: a function returning text)
    adds paragraphs computed only when the help is shown, so the registries they list are imported then, never
    by `tailor --help`."""

    help_extra: Callable[[], str] | None = None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from tailorbench.cli.vocabulary import rewrite_old_spellings

        return super().parse_args(ctx, expand_file_lists(self, rewrite_old_spellings(self, args)))

    def invoke(self, ctx: Any) -> Any:
        from tailorbench.logs import showing_notes

        with showing_notes():  # a verb's notes (resume, interrupt, where a report went) reach its user
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        extra = type(self).help_extra
        if extra is not None and not getattr(self, "_extra_added", False):
            self.help = f"{self.help or ''}\n\n{extra()}"
            self._extra_added = True
        super().format_help(ctx, formatter)


class ExtraVerb(VerbCommand):
    """A verb that needs an optional extra (`needs_extra` makes its class): once its options are read, so that
    `--help` and usage errors come first, and before its body runs (nothing read, nothing created), a missing
    module is one `error:` line naming the extra and the verb, exit 2 (`errors.require_extra`)."""

    extra: str = ""
    modules: tuple[str, ...] = ()
    why: str = ""

    def invoke(self, ctx: Any) -> Any:
        from tailorbench.errors import require_extra

        with user_errors():
            for module in self.modules:
                require_extra(module, self.extra, f"{ctx.command_path} ({self.why})")
        return super().invoke(ctx)


def needs_extra(extra: str, modules: tuple[str, ...], why: str) -> type[VerbCommand]:
    """The command class of verbs that need the modules of `extra` (`cls=` of a verb): `why` says what for, as
    the error shows it: `tailor annotate serve (the annotation server) needs the [web] extra: ...`."""
    return type(f"Needs{extra.title()}Verb", (ExtraVerb,), {"extra": extra, "modules": modules, "why": why})


class TailorGroup(TyperGroup):
    """The command class of `tailor` itself (`cli/app.py`): every verb is parsed and run inside it, so its
    usage errors are shown by `usage_errors` whichever verb or group they come from."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with usage_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with usage_errors():
            return super().invoke(ctx)
