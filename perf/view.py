"""Speed of `tailor view` on a large run (issue 24): a synthetic pairwise run of 50,000 predictions (25,000 cases x
both orders, 1,000 users with personas), written by the real runner with a judge that answers like an LLM judge
(a sentence of raw output, scores, latency, tokens, cost; some invalid, failed, abstained verdicts), then opened in
headless chromium (Playwright, Debian's /usr/bin/chromium), served and as a bundle from disk. Measured:
  - the index: built cold (reads predictions.jsonl and the data) and loaded warm (the stored .view-index.json);
  - first paint: first-contentful-paint of the case browser (`#/cases`), and the time the page is ready (its
    data parsed and the first 100 rows drawn: body[data-ready]), each from the navigation's start;
  - a filter: from the select's change to the next frame after the rows are redrawn, for several filters
    (median and max over five repeats each), and full-text search once the texts are loaded;
  - the bundle's size on disk.
Goals: first paint < 2 s, a filter < 200 ms, the bundle < 50 MB.
Run: .venv/bin/python perf/view.py [--cases 25000] [--users 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.judges.base import JudgeBase, JudgeOptions, register_judge
from tailorbench.schema import JudgeInput, Usage, Verdict

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
WORDS = ("weekend", "plan", "budget", "travel", "quiet", "museum", "coffee", "running", "dinner", "friends", "family",
         "book", "garden", "music", "project", "deadline", "morning", "evening", "sleep", "recipe", "vegetarian",
         "spicy", "mountain", "beach", "train", "city", "walk")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


class BenchJudge(JudgeBase):
    """Answers like an LLM judge: a short reasoning sentence, scores, latency and usage; 2% invalid, 1% failed,
    1% abstained."""

    batch_size = 256

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        out = []
        for item in inputs:
            rng = random.Random(f"{item.case_id}{item.answer_a[:20]}")
            roll = rng.random()
            usage = Usage(prompt_tokens=rng.randint(600, 1400), completion_tokens=rng.randint(20, 60),
                          cost_usd=round(rng.random() * 1e-3, 6))
            if roll < 0.02:
                out.append(Verdict(status="invalid", raw=_text(rng, 20), error="no verdict found", usage=usage))
            elif roll < 0.03:
                out.append(Verdict(status="failed", error="server: HTTP 500: overloaded (gave up after 7 attempts)"))
            elif roll < 0.04:
                out.append(Verdict(status="abstain", scores={"A": 0.5, "B": 0.5}, usage=usage))
            else:
                choice = "A" if rng.random() < 0.55 else "B"
                p = 0.5 + rng.random() / 2
                out.append(Verdict(choice=choice, raw=f"{_text(rng, 18)} Answer {choice}.",
                                   scores={"A": p if choice == "A" else 1 - p, "B": 1 - p if choice == "A" else p},
                                   latency_s=round(rng.uniform(0.3, 3.0), 3), usage=usage,
                                   cached=rng.random() < 0.1))
        return out


@register_judge("benchview")
def _bench_judge(arg: str | None, options: JudgeOptions) -> BenchJudge:
    return BenchJudge()


def write_data(path: Path, cases: int, users: int) -> None:
    rng = random.Random(0)
    personas = {f"user{u:04d}": {"demographics": {"age": rng.randint(18, 80), "city": _text(rng, 2)},
                                 "personality": _text(rng, 30), "preferences": {"food": _text(rng, 12),
                                                                                 "travel": _text(rng, 20)},
                                 "history": [_text(rng, 15) for _ in range(3)]} for u in range(users)}
    splits, tiers = ("specific", "general"), ("easy", "medium", "hard")
    with path.open("w", encoding="utf-8") as handle:
        for k in range(cases):
            user = f"user{k % users:04d}"
            row = {"id": f"case{k:06d}", "split": splits[k % 2], "tier": tiers[(k // 2) % 3], "user_id": user,
                   "persona": personas[user], "question": _text(rng, rng.randint(12, 30)) + "?",
                   "chosen": _text(rng, rng.randint(50, 110)), "rejected": _text(rng, rng.randint(40, 100))}
            handle.write(json.dumps(row) + "\n")


def measure(page: Any, url: str, label: str) -> dict[str, Any]:
    page.goto("about:blank")
    page.goto(url + "#/cases")
    page.wait_for_selector("body[data-ready='1']", state="attached", timeout=60_000)
    fcp = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
    ready = page.evaluate("Number(document.body.dataset.readyMs)")
    page.wait_for_selector("body[data-text='1']", state="attached", timeout=120_000)
    texts = page.evaluate("Number(document.body.dataset.textMs)")
    users = page.evaluate("TB_DATA[0].names.user")
    filters = [("outcome", "wrong"), ("split", "general"), ("tier", "hard"), ("user", users[len(users) // 2]),
               ("consistency", "inconsistent"), ("order", "BA")]
    times: dict[str, list[float]] = {}
    script = """async ([name, value]) => {
        const select = document.querySelector(`[data-filter=${name}]`);
        const t0 = performance.now();
        select.value = value;
        select.dispatchEvent(new Event('change', {bubbles: true}));
        await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        const t1 = performance.now();
        const n = Number(document.querySelector('#count').dataset.count);
        select.value = '';
        select.dispatchEvent(new Event('change', {bubbles: true}));
        await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        return [t1 - t0, n];
    }"""
    counts = {}
    for name, value in filters:
        for _ in range(5):
            ms, n = page.evaluate(script, [name, value])
            times.setdefault(f"{name}={value}", []).append(ms)
            counts[f"{name}={value}"] = n
    search = """async (q) => {
        const box = document.querySelector('[data-filter=q]');
        const t0 = performance.now();
        box.value = q;
        box.form.dispatchEvent(new Event('submit', {cancelable: true}));
        await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
        return [performance.now() - t0, Number(document.querySelector('#count').dataset.count)];
    }"""
    for q in ("museum coffee", "overloaded", "zzz-no-match"):
        for _ in range(3):
            ms, n = page.evaluate(search, q)
            times.setdefault(f"search {q!r}", []).append(ms)
            counts[f"search {q!r}"] = n
    result = {"where": label, "first_contentful_paint_ms": fcp, "ready_ms": ready, "texts_loaded_ms": texts,
              "filters": {k: {"median_ms": round(statistics.median(v), 1), "max_ms": round(max(v), 1),
                              "verdicts": counts[k]} for k, v in times.items()}}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=25_000, help="cases (two predictions each)")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="build the run here and keep it (default: a temporary dir)")
    args = parser.parse_args()

    import tailorbench as tb
    from tailorbench.evaluate.runner import EvalConfig, run_eval
    from tailorbench.viewer.index import INDEX, load_index

    root = args.keep or Path(tempfile.mkdtemp(prefix="view-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    data, run = root / "data.jsonl", root / "run"
    t0 = time.perf_counter()
    if not (run / "predictions.jsonl").exists():
        write_data(data, args.cases, args.users)
        run_eval(EvalConfig(data=str(data), judge="benchview", n_boot=200), run, progress=False)
    built = time.perf_counter() - t0
    lines = sum(1 for _ in (run / "predictions.jsonl").open("rb"))
    (run / INDEX).unlink(missing_ok=True)
    t0 = time.perf_counter()
    load_index(run)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_index(run)
    warm = time.perf_counter() - t0
    out: dict[str, Any] = {"predictions": lines, "run_built_s": round(built, 1), "index_cold_s": round(cold, 2),
                           "index_warm_s": round(warm, 2),
                           "index_mib": round((run / INDEX).stat().st_size / 2**20, 1)}
    bundle = root / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    t0 = time.perf_counter()
    viewer = tb.view([run], bundle=bundle)
    out["bundle_written_s"] = round(time.perf_counter() - t0, 2)
    out["bundle_mib"] = round(sum(p.stat().st_size for p in bundle.iterdir()) / 2**20, 1)
    out["bundle_first_load_mib"] = round(sum(p.stat().st_size for p in bundle.iterdir()
                                             if not p.name.startswith(("text-", "personas-"))) / 2**20, 2)
    served = tb.view([run])
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        out["served"] = measure(page, str(served.url), "served")
        out["bundle"] = measure(page, Path(viewer.index).resolve().as_uri(), "bundle (file://)")
        browser.close()
    served.stop()
    print(json.dumps(out, indent=2))
    worst = max(f["max_ms"] for m in (out["served"], out["bundle"]) for k, f in m["filters"].items()
                if not k.startswith("search"))
    paint = max(out["served"]["ready_ms"], out["bundle"]["ready_ms"])
    print(f"goals: first paint (ready) {paint:.0f} ms < 2000: {paint < 2000}; worst filter {worst:.0f} ms < 200: "
          f"{worst < 200}; bundle {out['bundle_mib']} MiB < 50: {out['bundle_mib'] < 50}", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
