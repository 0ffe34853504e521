"""The human-admissibility tables of a report (`agreement/report.py`, the stage reports): one row per judge (and
tier) and one per left-out human, laid out from the object `admissibility.admissibility` computes."""

from __future__ import annotations

from typing import Any


def render_rows(adm: dict[str, Any]) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """(per-judge rows, per-human alt-test rows, sentences) for the text and Markdown tables."""

    def fmt(e: dict[str, Any] | None) -> str:
        if not e or e.get("value") is None:
            return "undefined"
        lo, hi = e.get("ci") or [None, None]
        return f"{e['value']:.3f}" if lo is None else f"{e['value']:.3f} [{lo:.3f}, {hi:.3f}]"

    def f3(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    judge_rows: list[list[str]] = []
    human_rows: list[list[str]] = []
    sentences: list[str] = []
    scopes: list[tuple[str, str, dict[str, Any]]] = []
    for name, e in adm["judges"].items():
        scopes.append((name, "all", e))
        scopes += [(name, t, te) for t, te in e.get("by_tier", {}).items()]
    for name, tier, e in scopes:
        a, kap = e["alt_test"], e["kappa"]
        ref = adm["human_reference"] if tier == "all" else adm["human_reference_by_tier"][tier]
        rng = "-" if ref["range"] is None else f"{ref['range'][0]:.3f}..{ref['range'][1]:.3f}"
        judge_rows.append([name, tier, f"{a['n_tested']}/{len(a['humans'])}", f3(a["winning_rate"]),
                           f3(a["advantage_probability"]), fmt(kap["vs_majority"]), fmt(kap["mean_vs_humans"]),
                           rng, fmt(ref["mean"]), e["sentence"]])
        where = "" if tier == "all" else f" on tier {tier}"
        sentences.append(f"{name}{where}: {e['sentence']}.")
        for h in a["humans"]:
            if "excluded" in h:
                human_rows.append([name, tier, h["human"], str(h["n"]), "-", "-", "-", "-", h["excluded"]])
            else:
                human_rows.append([name, tier, h["human"], str(h["n"]), f3(h["rho_f"]), f3(h["rho_h"]),
                                   f"{h['p']:.3g}", f"{h['p_adjusted']:.3g}", "yes" if h["rejected"] else "no"])
    if not _tiered(adm):  # the tier column only where there are tiers
        judge_rows = [r[:1] + r[2:] for r in judge_rows]
        human_rows = [r[:1] + r[2:] for r in human_rows]
    return judge_rows, human_rows, sentences


def _tiered(adm: dict[str, Any]) -> bool:
    return any("by_tier" in e for e in adm["judges"].values())


def headers(adm: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The column names of `render_rows`' two tables for this block."""
    if _tiered(adm):
        return JUDGE_HEADER, HUMAN_HEADER
    return JUDGE_HEADER[:1] + JUDGE_HEADER[2:], HUMAN_HEADER[:1] + HUMAN_HEADER[2:]


JUDGE_HEADER = ["judge", "tier", "humans tested", "winning rate ω", "advantage prob. ρ", "κ vs majority",
                "mean κ vs humans", "human κ LOO range", "human κ LOO mean", "verdict"]


HUMAN_HEADER = ["judge", "tier", "left-out human", "shared items", "ρ_f", "ρ_h", "p", "p (BY)", "judge wins"]
