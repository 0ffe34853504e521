"""What one model's batch mode counted (`models/batch_engine.py`): batches and requests sent, re-attached, sent
again, answered and failed, malformed result lines, time waited and cost; and how they are reported, as the
progress line and the `batch` block of `describe()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tailorbench.models.pricing import BATCH_DISCOUNT


@dataclass
class BatchCounts:
    """Batches of one model: sent, re-attached after a restart, found again without a recorded id, ended, failed."""

    submitted: int = 0
    attached: int = 0
    recovered: int = 0
    ended: int = 0
    failed: int = 0


@dataclass
class RequestCounts:
    """Requests of one model's batches: sent, re-attached, sent again (expired or retryable), answered, failed."""

    submitted: int = 0
    attached: int = 0
    resubmitted: int = 0
    answered: int = 0
    failed: int = 0


@dataclass
class BatchCounters:
    """What one model's batch mode did, as `describe` reports it."""

    batches: BatchCounts = field(default_factory=BatchCounts)
    requests: RequestCounts = field(default_factory=RequestCounts)
    malformed_lines: int = 0
    waited_s: float = 0.0
    cost_usd: float | None = None
    sync_cost_usd: float | None = None

    def line(self, spec: str, in_progress: int) -> str:
        """The progress line of the model `spec` with `in_progress` batches open."""
        b, r = self.batches, self.requests
        return (f"{spec}: batches {b.submitted} submitted, {b.attached} attached, "
                f"{in_progress} in progress, {b.ended} ended; {r.answered} calls answered, "
                f"{r.failed} failed; waited {self.waited_s:.0f} s")

    def report(self, in_progress: int) -> dict[str, Any]:
        """The counters as `Batcher.describe` reports them."""
        b, r = self.batches, self.requests
        return {"batches": {"submitted": b.submitted, "attached": b.attached, "recovered": b.recovered,
                            "in_progress": in_progress, "ended": b.ended, "failed": b.failed},
                "requests": {"submitted": r.submitted, "attached": r.attached, "resubmitted": r.resubmitted,
                             "answered": r.answered, "failed": r.failed},
                "malformed_lines": self.malformed_lines, "waited_s": round(self.waited_s, 3),
                "cost_usd": self.cost_usd, "sync_cost_usd": self.sync_cost_usd, "discount": BATCH_DISCOUNT}
