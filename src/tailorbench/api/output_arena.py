"""Typed results of `tb.arena.*` (`tailor arena ...`): the objects each verb prints with `--json`."""

from __future__ import annotations

from typing import Any

from tailorbench.api.output_base import Output


class ArenaInit(Output):
    """`tailor arena init DIR`: the arena folder and its arena.yaml."""

    dir: str
    config: str
    files: list[str] = []


class ArenaPlan(Output):
    """`tailor arena plan DIR`: contestants (with the cost of one call), pairs, the personalized/generic pairs,
    caps and the estimated cost (None when a price or the number of places is unknown)."""

    arena: str
    contestants: list[dict[str, Any]] = []
    pairs: list[list[str]] = []
    pairs_personalized_generic: list[list[str]] = []
    battles_per_participant: int = 0
    places: int | None = None
    spend_caps_usd: dict[str, Any] = {}
    cost_per_battle_usd: float | None = None
    estimated_cost_usd: float | None = None


class ArenaStatus(Output):
    """`tailor arena status DIR`: participants, battles by status, votes, flags, spend, exports made."""

    arena: str
    database: str
    participants: int = 0
    battles: dict[str, int] = {}
    votes: int = 0
    flags: int = 0
    spend_usd: float = 0.0
    exports: list[dict[str, Any]] = []


class ArenaRun(Output):
    """`tailor arena run DIR`: where it served, and the status when it stopped."""

    arena: str
    url: str
    status: dict[str, Any] = {}


class ArenaLeaderboard(Output):
    """`tailor arena leaderboard DIR`: where the files went, the headline and the ratings."""

    out: str
    headline: str
    votes: int = 0
    votes_counted: int = 0
    contestants: list[dict[str, Any]] = []
    excluded_voters: list[str] = []


class ArenaExport(Output):
    """`tailor arena export DIR --out PATH`: the native benchmark written from the decisive votes, how many
    went in and how many were left out by reason (gold, excluded_voter, tie, both_bad)."""

    out: str
    format: str = "benchmark"
    reveal_ids: bool = False
    exported: int = 0
    left_out: dict[str, int] = {}
    #: --format annotate: the voters' own labels (long rating format) beside the items
    first_person: str | None = None


class ArenaDeletion(Output):
    """`tailor arena delete DIR --participant ID`: what was removed and the receipt (with the exports to redo)."""

    receipt: str
    battles: int = 0
    votes: int = 0
    cache_entries: int = 0
    log_lines: int = 0
    exports_to_redo: list[dict[str, Any]] = []


class ArenaDemo(Output):
    """`tailor arena demo DIR`: the illustrative arena's leaderboard, status and simulated participants."""

    dir: str
    illustrative: bool = True
    leaderboard: str
    headline: str
    status: dict[str, Any] = {}
    seconds: float = 0.0
    participants: list[dict[str, Any]] = []
