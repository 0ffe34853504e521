"""Agreement: kappas and alpha with bootstrap intervals, judge-vs-human agreement, and agreement tiers.

The one place these numbers come from; see docs/agreement.md for every formula and policy.
"""

from tailorbench.agreement.ratings import Rating, RatingSet, read_annotation_export, read_ratings
from tailorbench.agreement.report import AgreeOptions, agreement_report
from tailorbench.agreement.runs import read_run_dir

__all__ = [
    "AgreeOptions",
    "Rating",
    "RatingSet",
    "agreement_report",
    "read_annotation_export",
    "read_ratings",
    "read_run_dir",
]
