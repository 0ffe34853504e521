"""When finished work counts as failed: the one rule behind exit code 3 (docs/cli.md).

A *failed* item is a call that never returned a usable answer (a `failed` verdict, a failed generation, a build
item given up after all retries). `invalid` and `abstain` verdicts are properties of the judge: they are reported,
never counted here. Work fails when its failed share exceeds `max_failed` (a fraction, default 0.0: any failure),
and always when every item failed, whatever `max_failed` says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tailorbench.errors import ConfigError

#: exit codes of every `tailor` verb (the table in docs/cli.md and `tailor --help`)
EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_FAILED = 3
EXIT_INTERRUPTED = 130
#: first error messages shown in a failure message
N_CAUSES = 3
#: characters of one error message kept in a cause
MAX_CAUSE = 300


def check_max_failed(value: float | None) -> float:
    """`--max-failed` as a fraction in [0, 1]; a bad value is a ConfigError before any work starts."""
    if value is None:
        return 0.0
    share = float(value)
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"--max-failed is a fraction between 0 and 1 (0.05 = 5%), got {value}")
    return share


def first_causes(errors: Iterable[str | None], n: int = N_CAUSES) -> list[str]:
    """The first `n` distinct error messages in order of appearance, each with its count (`msg (x12)`)."""
    counts: dict[str, int] = {}
    for error in errors:
        if error:
            line = " ".join(error.split())  # one line, whatever the server sent
            line = line if len(line) <= MAX_CAUSE else line[: MAX_CAUSE - 1] + "…"
            counts[line] = counts.get(line, 0) + 1
    return [f"{msg} (x{k})" if k > 1 else msg for msg, k in list(counts.items())[:n]]


@dataclass(frozen=True)
class FailureCheck:
    """Failed items of one piece of work (a run directory, a build stage, a stage verb) against `max_failed`."""

    what: str
    failed: int
    total: int
    max_failed: float = 0.0
    causes: list[str] = field(default_factory=list)
    unit: str = "verdicts"
    #: what happened to a failed item, for the message
    outcome: str = "failed"

    @property
    def share(self) -> float | None:
        return self.failed / self.total if self.total else None

    @property
    def exceeded(self) -> bool:
        """True when the failures are more than allowed, or when every item failed."""
        if not self.total or not self.failed:
            return False
        return self.failed == self.total or self.failed / self.total > self.max_failed

    def message(self) -> str:
        """One line: how many failed out of how many, the threshold, and the first causes."""
        share = self.share or 0.0
        text = (f"{self.what}: {self.failed} of {self.total} {self.unit} {self.outcome} ({100 * share:.1f}%, "
                f"more than --max-failed {100 * self.max_failed:g}%)")
        if self.failed == self.total:
            text = f"{self.what}: all {self.total} {self.unit} {self.outcome}"
        if self.causes:
            text += "; first errors: " + " | ".join(self.causes)
        return text
