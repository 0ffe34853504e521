"""The pairwise judge protocol and its registry.

A judge sees JudgeInputs (question, answers A and B, optional context) and returns one Verdict per input, in
order. Judges never read files and never see which answer is `chosen`. Add a judge by writing one module
with a factory decorated by `@register_judge("name")`; users address it as `name` or `name:ARG`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from tailorbench.errors import ConfigError
from tailorbench.redact import redact
from tailorbench.registry import Registry
from tailorbench.schema import JudgeInput, Verdict


@runtime_checkable
class PairJudge(Protocol):
    """What the runner needs from a judge."""

    #: the spec string the user typed (recorded in predictions and manifests)
    spec: str
    #: how many inputs the runner hands over per call
    batch_size: int
    #: things the user must know about this run (e.g. an English-only model on Chinese text)
    warnings: list[str]

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        """Called once with every input of the run before judging: preflight checks, warnings, warm-up."""
        ...

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        """One Verdict per input, same order. Failures become `failed` verdicts, never exceptions."""
        ...

    async def aclose(self) -> None:
        """Release connections, models, servers."""
        ...

    def describe(self) -> dict[str, Any]:
        """Configuration to record in the run manifest."""
        ...


@runtime_checkable
class StreamingJudge(Protocol):
    """Optional: a judge that hands each verdict over the moment it lands (API judges), so the runner writes it
    at once and a kill loses only the calls in flight. Judges without it are fed batch by batch (`judge`)."""

    def judge_stream(self, inputs: Sequence[JudgeInput], stop: asyncio.Event) -> AsyncIterator[tuple[int, Verdict]]:
        """Yield `(position in inputs, verdict)` as each verdict lands. Once `stop` is set, start no new call,
        let the started ones finish (yielding their verdicts), and return: later inputs get no verdict.
        Failures are `failed` verdicts; an exception (e.g. rejected credentials) ends the stream and the run."""
        ...


@dataclass
class JudgeOptions:
    """Options every factory receives; judge-specific ones travel in `extra` (e.g. template, verdict mode)."""

    seed: int = 0
    batch_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


JudgeFactory = Callable[[str | None, JudgeOptions], PairJudge]
#: judges by name; built-ins are imported on first use (some pull in torch), plugins come by entry point
JUDGES: Registry[JudgeFactory] = Registry("judge", "tailorbench.judges", lazy={
    "random": "tailorbench.judges.baselines",
    "longer": "tailorbench.judges.baselines",
    "shorter": "tailorbench.judges.baselines",
    "first": "tailorbench.judges.baselines",
    "embedding": "tailorbench.judges.embedding",
    "llm": "tailorbench.judges.llm",
    "rm": "tailorbench.judges.reward_model",
})


def register_judge(name: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Decorator: make a factory addressable as `name[:ARG]` (`JUDGES.register`)."""
    return JUDGES.register(name)


def parse_spec(spec: str) -> tuple[str, str | None]:
    name, sep, arg = spec.strip().partition(":")
    return name.strip().lower(), (arg.strip() or None) if sep else None


def split_spec_options(spec: str) -> tuple[str, dict[str, str]]:
    """`SPEC[key=value,key2=value2]` -> (SPEC, options of this judge alone), so judges of one run can differ,
    e.g. two providers with their own `api_key_env`. A spec without a trailing `[...]` has none."""
    text = spec.strip()
    if not text.endswith("]") or "[" not in text:
        return text, {}
    base, _, inner = text[:-1].rpartition("[")
    options: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in inner.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"judge {spec!r}: options in [...] are KEY=VALUE separated by commas, got {pair!r}")
        options[key.strip()] = value.strip()
    return base.strip(), options


def check_options(judge: str, extra: dict[str, Any], known: Sequence[str] | set[str]) -> dict[str, Any]:
    """The one check every judge applies to its `--judge-option`s: an unknown key is a ConfigError naming the
    known ones (a judge that takes none says so); `batch_size`, common to every judge, must be an integer >= 1.
    Returns the options (typed reading of each value is the judge's, with `tailorbench.options`)."""
    from tailorbench.options import as_int

    allowed = set(known) | {"batch_size"}
    unknown = sorted(set(extra) - allowed)
    if unknown:
        others = sorted(allowed - {"batch_size"})
        takes = f"known: {', '.join(sorted(allowed))}" if others else "it takes only batch_size"
        raise ConfigError(
            f"unknown {judge} judge option(s) {', '.join(unknown)}; {takes} (options for one judge of several: "
            "SPEC[KEY=VALUE,...])")
    if "batch_size" in extra:
        as_int("batch_size", extra["batch_size"], minimum=1)
    return extra


def known_judges() -> list[str]:
    return JUDGES.names()


#: model backends whose library comes in an optional extra: backend -> (module, extra)
BACKEND_EXTRAS = {"vllm": ("vllm", "vllm"), "hf": ("torch", "local"), "anthropic": ("anthropic", "anthropic")}


def _model_spec_hint(name: str, bare: str) -> str:
    """What `--judge vllm:M` (a model spec where a judge spec goes) means, with the extra its backend needs when
    that is not installed here."""
    from tailorbench.errors import require_extra
    from tailorbench.models.backends import BACKENDS

    if name not in BACKENDS:
        return ""
    hint = f": {name}: is a model backend; a chat model judges as --judge llm:{bare}"
    module, extra = BACKEND_EXTRAS.get(name, (None, None))
    if module is not None and extra is not None:
        try:
            require_extra(module, extra, f"a {name}: model")
        except ConfigError as missing:
            hint += f" ({missing}; install the [{extra}] extra)" if extra != "vllm" else f" ({missing})"
    return hint


def make_judge(spec: str, options: JudgeOptions | None = None) -> PairJudge:
    """Build a judge from its spec string; unknown names fail before any work starts."""
    bare, own = split_spec_options(spec)
    if own:
        options = replace(options or JudgeOptions(), extra={**(options.extra if options else {}), **own})
    name, arg = parse_spec(bare)
    if name not in JUDGES:
        from tailorbench.registry import did_you_mean

        hint = _model_spec_hint(name, bare) or did_you_mean(name, JUDGES.names())
        raise ConfigError(f"unknown judge {spec!r}{hint}; known: {', '.join(known_judges())}")
    factory = JUDGES.get(name)
    options = options or JudgeOptions()
    if options.batch_size is not None:
        from tailorbench.options import as_int

        options = replace(options, batch_size=as_int("--batch-size", options.batch_size, minimum=1))
    judge = factory(arg, options)
    judge.spec = redact(spec)  # what predictions and manifests record: no credentials
    if "batch_size" in options.extra:  # `--judge-option batch_size=N` means the same for every judge
        from tailorbench.options import as_int

        judge.batch_size = as_int("batch_size", options.extra["batch_size"], minimum=1)
    if options.batch_size:
        judge.batch_size = options.batch_size
    return judge


class JudgeBase:
    """Defaults for the optional parts of the protocol."""

    spec: str = ""
    batch_size: int = 512

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def check_inputs(self, inputs: Sequence[JudgeInput]) -> list[str]:
        """Warnings that can be known before any work (inputs cut or refused at the model's token limit, a
        model in the wrong language): cheap and synchronous, called with every input of the run before
        `prepare`. The default serves judges that render chat messages (`messages(item)`) for a model that
        counts prompt tokens (`prompt_tokens(list of messages)` and a `max_length`, as `hf:` models do); a
        judge or model without them has no known limit and gets no warning."""
        render = getattr(self, "messages", None)
        model = getattr(self, "model", None)
        count = getattr(model, "prompt_tokens", None)
        limit = getattr(model, "max_length", None)
        if not inputs or not callable(render) or not callable(count) or not isinstance(limit, int) or limit < 1:
            return []
        lengths = count([render(item) for item in inputs])
        over = sum(1 for n in lengths if n > limit)
        line = truncation_warning(over, len(lengths), "prompts", limit, effect="will fail (the model is not "
                                  "given a cut prompt)", every="every verdict will fail")
        return [line] if line else []

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec}


def pre_work_warnings(judge: PairJudge, inputs: Sequence[JudgeInput]) -> list[str]:
    """`judge.check_inputs(inputs)` where the judge has it (every JudgeBase does), else none. The runners call
    it before `prepare`, print what it says and record it with the judge's other warnings."""
    check = getattr(judge, "check_inputs", None)
    return [w for w in check(inputs) if w] if callable(check) else []


def truncation_warning(cut: int, total: int, what: str, limit: int, *, effect: str = "will be truncated",
                       every: str = "the model sees only the start of each") -> str | None:
    """The one wording of "inputs over the token limit": None when none is; counts and share when some are;
    a stronger line when every one is."""
    if cut <= 0 or total <= 0:
        return None
    remedy = "raise with --judge-option max_length=N if the model allows"
    if cut >= total:
        return (f"every one of the {total} {what} exceeds max_length {limit} tokens and {effect}: {every}; "
                f"{remedy}")
    return f"{cut} of {total} {what} ({100 * cut / total:.1f}%) exceed max_length {limit} tokens and {effect}; {remedy}"
