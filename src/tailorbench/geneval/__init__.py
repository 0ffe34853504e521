"""Generation evaluation (`tailor gen-eval`): a model answers benchmark questions in a setting, a judge compares
each answer with a reference in both orders, and the report gives win rates, a length-controlled win rate,
explicit persona mentions and the judge's own validation (see docs/generation.md)."""

from tailorbench.geneval.config import GenEvalConfig

__all__ = ["GenEvalConfig"]
