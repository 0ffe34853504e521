"""Human admissibility on real annotations: the alternative-annotator test and the kappas beside it.

Three sources, each optional:
- `--recentering GITDIR`: the Re-Centering authors' pilot (github orange0629/personalize-annotation, a bare git
  directory as `fetch` leaves it): the stage-2 human relevance votes (`data/annotations_v0/*_task3.jsonl`,
  `data/relevance_debug/*_task3.jsonl`) and the model votes (`data/relevance_task3/*.jsonl`), read by tailorbench's
  own Re-Centering reader, analysed by `tailor stages report-relevance`'s code; the table and the sentence per model;
- `--alttest GITDIR`: the alt-test paper's own datasets (github nitaytech/AltTest, `data/*/human_annotations.json`,
  `llm_annotations.json`), with the paper's epsilon and alignment per dataset; the winning rate and advantage
  probability of every LLM compared with the figures the authors' notebook prints (`alt_test_example.ipynb`);
- `--label-studio FILE [--map MAP]`: a Label Studio export with several annotators per item; each annotator held
  out in turn as the "judge" (the default 30 shared items, then `--ls-min-items`).

Every alt-test figure is also recomputed by an independent per-instance loop over dicts with scipy's
`ttest_1samp` and `false_discovery_control` (the paper's definitions), and the script says whether they agree.
Run: .venv/bin/python perf/admissibility_pilot.py --recentering /work/.mirror/orange0629+personalize-annotation/repo
     --alttest /work/.mirror/nitaytech+AltTest/repo --label-studio tests/interop/data/label_studio_foreign_pairwise.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tailorbench.agreement.admissibility import (
    AdmissibilityOptions,
    admissibility,
    split_raters,
)
from tailorbench.agreement.admissibility_table import headers, render_rows
from tailorbench.agreement.matrix import build_matrix
from tailorbench.agreement.records import Rating, RatingSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the independent alt-test the tests use
from tests.agreement.alt_test_reference import accuracy, neg_rmse, reference_alt_test

#: the authors' notebook output (alt_test_example.ipynb, "Example (paper's data)"): winning rate, advantage prob.
PAPER: dict[str, dict[str, tuple[float, float]]] = {
    "wax": {"gemini_flash": (0.38, 0.69), "gemini_pro": (0.50, 0.74), "gpt-4o": (0.50, 0.73),
            "llama-31": (0.00, 0.57), "gpt-4o-mini": (0.00, 0.59), "mistral-v03": (0.00, 0.50)},
    "lgbteen": {"gemini_flash": (0.25, 0.71), "gemini_pro": (0.00, 0.67), "gpt-4o": (0.75, 0.77),
                "llama-31": (0.00, 0.72), "gpt-4o-mini": (0.75, 0.76), "mistral-v03": (0.25, 0.75)},
    "mtbench": {"gemini_flash": (0.00, 0.72), "gemini_pro": (0.00, 0.76), "gpt-4o": (0.00, 0.77),
                "llama-31": (0.00, 0.69), "gpt-4o-mini": (0.00, 0.74), "mistral-v03": (0.00, 0.68)},
    "framing": {"gemini_flash": (1.00, 0.83), "gemini_pro": (1.00, 0.91), "gpt-4o": (1.00, 0.92),
                "llama-31": (0.50, 0.80), "gpt-4o-mini": (1.00, 0.87), "mistral-v03": (0.25, 0.80)},
    "cebab_aspects": {"gemini_flash": (0.70, 0.91), "gemini_pro": (0.90, 0.94), "gpt-4o": (0.90, 0.93),
                      "llama-31": (0.60, 0.89), "gpt-4o-mini": (0.50, 0.90), "mistral-v03": (0.10, 0.81)},
    "summeval": {"gemini_flash": (0.00, 0.46), "gemini_pro": (0.00, 0.44), "gpt-4o": (0.00, 0.48),
                 "llama-31": (0.00, 0.58), "gpt-4o-mini": (0.00, 0.54), "mistral-v03": (0.00, 0.62)},
    "10k_prompts": {"gemini_flash": (0.31, 0.67), "gemini_pro": (0.08, 0.63), "gpt-4o": (0.69, 0.76),
                    "llama-31": (0.15, 0.67), "gpt-4o-mini": (0.92, 0.80), "mistral-v03": (0.15, 0.67)},
    "cebab_stars": {"gemini_flash": (0.60, 0.82), "gemini_pro": (0.80, 0.87), "gpt-4o": (0.90, 0.90),
                    "llama-31": (0.60, 0.85), "gpt-4o-mini": (0.90, 0.89), "mistral-v03": (0.50, 0.83)},
    "lesion": {"gemini_flash": (0.17, 0.71), "gemini_pro": (1.00, 0.81), "gpt-4o": (0.00, 0.62),
               "gpt-4o-mini": (0.67, 0.73)},
}
#: the notebook's epsilon and alignment per dataset
SETUP = {"wax": (0.1, "accuracy"), "lgbteen": (0.2, "accuracy"), "mtbench": (0.2, "accuracy"),
         "framing": (0.15, "accuracy"), "cebab_aspects": (0.1, "accuracy"), "summeval": (0.2, "neg-rmse"),
         "10k_prompts": (0.15, "neg-rmse"), "cebab_stars": (0.1, "neg-rmse"), "lesion": (0.15, "neg-rmse")}


def git_show(gitdir: Path, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(gitdir), "show", f"HEAD:{path}"], check=True, capture_output=True).stdout


def git_ls(gitdir: Path, under: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(gitdir), "ls-tree", "-r", "--name-only", "HEAD", under], check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p]


# --- the independent recomputation ---------------------------------------------------------------------------


def as_dicts(ratings: RatingSet, judge: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    llm: dict[str, Any] = {}
    humans: dict[str, dict[str, Any]] = {}
    for r in ratings.ratings:
        if r.rater == judge:
            llm[r.item] = r.label
        elif r.group == "human":
            humans.setdefault(r.rater, {})[r.item] = r.label
    return llm, humans


def show(adm: dict[str, Any], ratings: RatingSet, title: str) -> int:
    """Print the judge table, the per-human rows and the sentences; return how many judges the independent
    recomputation disagrees with."""
    judge_rows, human_rows, sentences = render_rows(adm)
    judge_header, human_header = headers(adm)
    o = adm["options"]
    print(f"\n## {title}\nepsilon={o['epsilon']}, q={o['q']}, min_items={o['min_items']}, {o['alignment']}; "
          f"human kappa vs the others' majority: range {adm['human_reference']['range']}")
    print(" | ".join(judge_header))
    for row in judge_rows:
        print(" | ".join(row))
    print(" | ".join(human_header))
    for row in human_rows:
        print(" | ".join(row))
    for s in sentences:
        print(s)
    bad = 0
    score = neg_rmse if o["alignment"] == "neg-rmse" else accuracy
    for name, e in adm["judges"].items():
        llm, humans = as_dicts(ratings, name)
        ref = reference_alt_test(llm, humans, o["epsilon"], o["q"], o["min_items"], score)
        omega, rho = ref["omega"], ref["rho"]
        a = e["alt_test"]
        same = omega == a["winning_rate"] and (rho is None or abs(rho - a["advantage_probability"]) < 1e-12)
        bad += not same
        if not same:
            print(f"MISMATCH {name}: ours {a['winning_rate']}, {a['advantage_probability']}; reference {omega}, {rho}")
    print(f"independent recomputation (dict loop + scipy): {'equal' if not bad else f'{bad} judge(s) differ'}")
    return bad


# --- the sources ------------------------------------------------------------------------------------------------


def recentering(gitdir: Path, n_boot: int) -> int:
    from tailorbench.threestage.relevance.analysis import relevance_report
    from tailorbench.threestage.verbs import stage2_ratings

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src_h = [p for p in git_ls(gitdir, "data/annotations_v0") + git_ls(gitdir, "data/relevance_debug")
                 if p.endswith("_task3.jsonl")]
        src_m = git_ls(gitdir, "data/relevance_task3")
        humans = [root / "h" / Path(p).name for p in src_h]
        models = [root / "m" / Path(p).name for p in src_m]
        for src, dst in zip([*src_h, *src_m], [*humans, *models]):
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                dst.write_bytes(git_show(gitdir, src))
            except subprocess.CalledProcessError:
                dst.write_bytes(b"")  # a file the snapshot lists but does not hold
        empty = [p.name for p in [*humans, *models] if p.stat().st_size == 0]
        print(f"Re-Centering pilot: {len(humans)} human task-3 files, {len(models)} model vote files "
              f"(empty or absent in the snapshot: {', '.join(empty) or 'none'})")
        humans = [p for p in humans if p.stat().st_size]
        models = [p for p in models if p.stat().st_size]
        ratings, alignment = stage2_ratings(humans, models, (), None)
        bad = 0
        for eps in (0.2, 0.1):
            t0 = time.perf_counter()
            rep = relevance_report(ratings, alignment, n_resamples=n_boot, epsilon=eps)
            took = time.perf_counter() - t0
            bad += show(rep["admissibility"], ratings, f"Re-Centering stage 2, epsilon {eps} ({took:.2f} s for the "
                        "whole stage-2 report)")
        return bad


def alttest(gitdir: Path, n_boot: int) -> int:
    bad = matches = total = 0
    for name, (eps, alignment) in SETUP.items():
        humans = json.loads(git_show(gitdir, f"data/{name}/human_annotations.json"))
        llms = json.loads(git_show(gitdir, f"data/{name}/llm_annotations.json"))
        rs = RatingSet(sources=[name])
        for h, anns in humans.items():
            rs.ratings += [Rating(str(i), f"human:{h}", v, "human") for i, v in anns.items() if v is not None]
        for m, anns in llms.items():
            rs.ratings += [Rating(str(i), m, v, "model") for i, v in anns.items() if v is not None]
        mat = build_matrix(rs)
        judges, cols = split_raters(mat)
        t0 = time.perf_counter()
        adm = admissibility(mat, judges, cols, AdmissibilityOptions(epsilon=eps, alignment=alignment,
                                                                    n_resamples=n_boot))
        took = time.perf_counter() - t0
        print(f"\n## alt-test paper data: {name} (epsilon {eps}, {alignment}; {len(humans)} humans, "
              f"{len(mat.items)} items, {took:.2f} s)")
        score = neg_rmse if alignment == "neg-rmse" else accuracy
        for m, e in adm["judges"].items():
            a = e["alt_test"]
            want = PAPER[name].get(m)
            ours = (a["winning_rate"], a["advantage_probability"])
            ok = want is not None and ours[0] is not None and round(ours[0], 2) == want[0] and \
                round(ours[1], 2) == want[1]
            llm, hs = as_dicts(rs, m)
            ref = reference_alt_test(llm, hs, eps, 0.05, 30, score)
            same = ref["omega"] == ours[0] and ref["rho"] is not None and abs(ref["rho"] - ours[1]) < 1e-12
            bad += not same
            matches += ok
            total += want is not None
            print(f"{m}: winning rate {ours[0]:.2f}, advantage probability {ours[1]:.2f} | paper's notebook "
                  f"{want} {'same' if ok else 'DIFFERENT'} | independent recomputation "
                  f"{'equal' if same else 'DIFFERS'} | {e['sentence']}")
    print(f"\nalt-test paper data: {matches}/{total} (winning rate, advantage probability) pairs equal the "
          "notebook's to 2 decimals")
    return bad + (total - matches)


def label_studio(path: Path, fmap: str | None, n_boot: int, min_items: int) -> int:
    from tailorbench.interop import read_ratings_any

    ratings = read_ratings_any([path], "auto", fmap, [])
    mat = build_matrix(ratings)
    bad = 0
    print(f"\nLabel Studio export {path}: {len(mat.items)} items, raters {', '.join(mat.raters)}")
    for held in mat.raters:
        for k in (30, min_items):
            judges, humans = split_raters(mat, [held])
            adm = admissibility(mat, judges, humans, AdmissibilityOptions(min_items=k, n_resamples=n_boot))
            bad += show(adm, ratings, f"Label Studio export, {held} held out as the judge, min_items {k}")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recentering", type=Path)
    ap.add_argument("--alttest", type=Path)
    ap.add_argument("--label-studio", type=Path)
    ap.add_argument("--map", default="item=data.pair_id,a=data.personalized,b=data.generic,"
                    "left=data.response_left,right=data.response_right")
    ap.add_argument("--ls-min-items", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    bad = 0
    if args.recentering:
        bad += recentering(args.recentering, args.n_boot)
    if args.alttest:
        bad += alttest(args.alttest, args.n_boot)
    if args.label_studio:
        bad += label_studio(args.label_studio, args.map or None, args.n_boot, args.ls_min_items)
    print(f"\n{'all checks agree' if not bad else f'{bad} check(s) disagree'}")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
