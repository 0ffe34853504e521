"""The files `tailor estimate` writes, as typed and versioned models: written from the model, read back by it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tailorbench.errors import DataError
from tailorbench.files import load_json

__all__ = ["AltPowerRow", "CellRecord", "EstimateReport", "IntervalRecord", "PlanReport", "PlanRow", "SampleReport"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def read(cls, path: str | Path) -> _Strict:
        """The model of a file this verb wrote (a DataError naming the file and field otherwise)."""
        data = load_json(path, dict, f"a {cls.__name__} (a JSON object)")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise DataError(Path(path), None, ".".join(str(p) for p in first["loc"]) or None,
                            f"{first['msg']}: not a {cls.__name__}") from None


class IntervalRecord(_Strict):
    estimate: float
    se: float
    ci: tuple[float, float]
    #: the power-tuning parameter (anchored estimates of one stratum or design; None where strata differ)
    lam: float | None = None


class CellRecord(_Strict):
    """One cell's three estimates: `split/tier`, `split/all` or `all`."""

    cell: str
    n_items: int
    n_labels: int
    human_only: IntervalRecord | None
    proxy_only: IntervalRecord
    anchored: IntervalRecord | None
    #: n × se²(human-only) / se²(anchored): the human labels the proxy was worth
    effective_labels: float | None
    note: str | None = None


class EstimateReport(_Strict):
    """`tailor estimate --out FILE` (and `--json`)."""

    format_version: Literal[1] = 1
    kind: str
    estimand: str
    system: str
    proxy: str | None
    versus: str | None
    labels: str
    aggregation: str
    design: Literal["uniform", "stratified", "active"]
    #: True when no plan gave inclusion probabilities and the user said the sample was uniform
    assumed_uniform: bool
    level: float
    n_items: int
    n_labels: int
    cells: list[CellRecord]
    #: max |anchored bound − ppi-python's| over the cells the library has (uniform design), when asked
    library_check: float | None = None
    notes: list[str] = []


class PlanRow(_Strict):
    """Human labels needed for a wanted half-width at one confidence level."""

    estimate: Literal["human-only", "anchored"]
    labels: int | None
    #: the half-width the pilot's moments give at `labels`
    half_width: float | None
    #: the median half-width over the plan's simulated draws from the pilot at `labels`
    simulated_half_width: float | None = None


class AltPowerRow(_Strict):
    """The alt-test's power for the proxy at one margin ε: the share of simulated pilots of m items it passes."""

    epsilon: float
    #: m (as text) -> share of draws the alt-test passed
    power: dict[str, float]
    #: the smallest m with power >= 0.8 (None: none tried)
    items_needed: int | None


class PlanReport(_Strict):
    """`tailor estimate plan --out FILE` (and `--json`): from a pilot, the human labels a wanted half-width needs."""

    format_version: Literal[1] = 1
    pilot: str
    pilot_items: int
    items: int
    half_width: float
    level: float
    rows: list[PlanRow]
    lam: float
    correlation: float | None
    draws: int
    #: beside the labels: how many items and which epsilon give the alt-test of the proxy enough power
    alt_test: list[AltPowerRow] = []
    alt_draws: int = 0
    notes: list[str] = []


class SampleReport(_Strict):
    """`tailor estimate sample --json`: what the sampling plan holds (its items are the JSONL file itself)."""

    format_version: Literal[1] = 1
    out: str
    sampling: Literal["uniform", "stratified", "active"]
    requested: str
    items: int
    sampled: int
    expected_labels: float
    strata: dict[str, int]
    seed: int
    notes: list[str] = []
