"""Pairwise judges: one protocol (base.PairJudge), a registry addressed by spec strings, one module per kind."""

from tailorbench.judges.base import JudgeOptions, PairJudge, known_judges, make_judge, register_judge

__all__ = ["JudgeOptions", "PairJudge", "known_judges", "make_judge", "register_judge"]
