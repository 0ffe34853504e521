"""Benchmarks and leaderboards on the Hugging Face hub (`tailor data push`, `--data hf:OWNER/NAME`,
`tailor report --push`): a folder is written locally first (what `--dry-run DIR` keeps), then uploaded in one
`HfApi.upload_folder` call; reading back (datasets/hub_repo.py) goes through `snapshot_download`, so the hub
cache and HF_HUB_OFFLINE=1 are honoured.

A pushed benchmark is one native JSONL file, `data/benchmark.jsonl`, with its split/tier declaration
`data/benchmark.layout.json` next to it (the native layout's sidecar), `tiers.json` when the source carried one
(`tailor tiers` / `tailor annotate export`), and README.md: the dataset card (YAML header with the licence and
`configs` so `datasets.load_dataset(OWNER/NAME)` reads the data file).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.datasets.hub_repo import DATA_FILE, LAYOUT_FILE, check_repo_id
from tailorbench.errors import ConfigError, DataError, shown
from tailorbench.files import MARKER, Output, scratch

TIERS_FILE = "tiers.json"
RESULTS_FILE = "results.jsonl"
#: the licence identifiers the hub accepts in a card's `license:` (huggingface.co/docs/hub/repositories-licenses);
#: `other` for any other licence (named in the card's text)
HUB_LICENSES = frozenset((
    "apache-2.0", "mit", "openrail", "bigscience-openrail-m", "creativeml-openrail-m", "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m", "afl-3.0", "artistic-2.0", "bsl-1.0", "bsd", "bsd-2-clause", "bsd-3-clause",
    "bsd-3-clause-clear", "c-uda", "cc", "cc0-1.0", "cc-by-2.0", "cc-by-2.5", "cc-by-3.0", "cc-by-4.0",
    "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0", "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0", "cdla-permissive-1.0", "cdla-permissive-2.0", "wtfpl", "ecl-2.0", "epl-1.0", "epl-2.0",
    "etalab-2.0", "eupl-1.1", "eupl-1.2", "agpl-3.0", "gfdl", "gpl", "gpl-2.0", "gpl-3.0", "lgpl", "lgpl-2.1",
    "lgpl-3.0", "isc", "h-research", "intel-research", "lppl-1.3c", "ms-pl", "apple-ascl", "apple-amlr", "mpl-2.0",
    "odc-by", "odbl", "openrail++", "osl-3.0", "postgresql", "ofl-1.1", "ncsa", "unlicense", "zlib", "pddl",
    "lgpl-lr", "deepfloyd-if-license", "fair-noncommercial-research-license", "llama2", "llama3", "llama3.1",
    "llama3.2", "llama3.3", "llama4", "gemma", "unknown", "other",
))


def check_license(license: str | None) -> str:
    """`--license`: required, and one of the hub's identifiers (lower-cased as the hub writes them)."""
    if license is None or not license.strip():
        raise ConfigError("--license is required: name the licence the data is shared under (an SPDX id such as "
                          "cc-by-4.0, or `other`); tailorbench does not choose one for you")
    name = license.strip().lower()
    if name not in HUB_LICENSES:
        close = sorted(n for n in HUB_LICENSES if n.startswith(name.split("-")[0]))[:6]
        raise ConfigError(f"--license {license!r} is not a licence identifier the hub accepts"
                          + (f" (did you mean {', '.join(close)}?)" if close else "")
                          + "; use `other` for any other licence (docs/data.md)")
    return name


#: the benchmark file inside a directory no layout reads: `tailor annotate export`'s, a `tailor build` output's
#: export, that export itself
_EXPORTS = ("benchmark.jsonl", "export/pairs.jsonl", "pairs.jsonl")


def _source(data: str | Path) -> str | Path:
    """DATA as `load_benchmark` takes it: an export directory is its benchmark file; anything else unchanged."""
    from tailorbench.datasets.layouts import all_layouts

    path = Path(str(data)).expanduser()
    if not path.is_dir() or any(layout.detect(path) for layout in all_layouts()):
        return data
    for name in _EXPORTS:
        if (path / name).is_file():
            return path / name
    return data


def _tiers_of(files: list[Path]) -> dict[str, Any] | None:
    """tiers.json beside the files the benchmark was read from (`tailor tiers`, `tailor annotate export`)."""
    for candidate in dict.fromkeys(f.parent / TIERS_FILE for f in files):
        if candidate.is_file():
            from tailorbench.files import load_json

            tiers: dict[str, Any] = load_json(candidate, dict, "a JSON object (what `tailor tiers` writes)")
            _check_tiers(candidate, tiers)
            return tiers
    return None


def _check_tiers(path: Path, tiers: dict[str, Any]) -> None:
    """The fields of tiers.json the card shows, of the types it shows them as (a DataError naming the field)."""
    from tailorbench.files import field_of

    field_of(tiers, "rule", dict, "an object", path)
    for name, stats in field_of(tiers, "tiers", dict, "an object (tier -> counts)", path, default={}).items():
        where = f"tiers.{shown(name)}."
        if stats is None:
            continue
        if not isinstance(stats, dict):
            raise DataError(path, None, where.rstrip("."), "expected an object (n, fleiss_kappa)")
        field_of(stats, "n", int, "a count", path, None, where)
        kappa = field_of(stats, "fleiss_kappa", dict, "an object (value, ci)", path, None, where, {})
        field_of(kappa, "value", (int, float), "a number", path, None, f"{where}fleiss_kappa.")
        ci = field_of(kappa, "ci", list, "[low, high]", path, None, f"{where}fleiss_kappa.", [])
        if ci and (len(ci) != 2 or not all(c is None or (isinstance(c, int | float) and not isinstance(c, bool))
                                           for c in ci)):
            raise DataError(path, None, f"{where}fleiss_kappa.ci", "expected [low, high] numbers")


def _tier_sources(cases: list[Any]) -> dict[str, int]:
    """How many cases say where their tier came from, per reason (a build export: expected, not annotated)."""
    from collections import Counter

    return dict(Counter(str(c.meta["tier_source"]) for c in cases if "tier_source" in c.meta).most_common())


def _yaml_header(fields: dict[str, Any]) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(fields, sort_keys=False, allow_unicode=True) + "---\n"


def _tier_lines(tiers: dict[str, Any]) -> list[str]:
    rule = tiers.get("rule") or {}
    lines = ["## Tiers", "", f"Tiered by {rule.get('statistic', 'per-item agreement')}"
             + (f", at least {rule['min_ratings']} ratings per item" if "min_ratings" in rule else "") + ".", "",
             "| tier | rule | items | Fleiss' kappa | 95% CI |", "|---|---|---:|---:|---|"]
    for name, stats in (tiers.get("tiers") or {}).items():
        kappa = (stats or {}).get("fleiss_kappa") or {}
        value = kappa.get("value")
        ci = kappa.get("ci")
        lines.append(f"| {name} | {rule.get(name, '')} | {(stats or {}).get('n', 0)} | "
                     f"{'-' if value is None else f'{value:.3f}'} | "
                     f"{'-' if not ci or None in ci else f'[{ci[0]:.3f}, {ci[1]:.3f}]'} |")
    return [*lines, ""]


def _card(repo_id: str, license: str, report: dict[str, Any], tiers: dict[str, Any] | None,
          sources: dict[str, int]) -> str:
    header = _yaml_header({
        "license": license,
        "pretty_name": repo_id.split("/")[1],
        "tags": ["tailorbench", "personalization", "pairwise-preference"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": DATA_FILE}]}],
    })
    per_cell = report.get("rows_per_split_tier") or {}
    lines = [
        f"# {repo_id}", "",
        f"A personalization benchmark in tailorbench's native JSONL layout ({report['rows']} pairs), written by "
        f"`tailor data push`. Evaluate with `tailor eval --data hf:{repo_id}`.", "",
        f"Licence: **{license}** (named by whoever pushed it).", "",
        "## Fields", "",
        "One pair per line of `" + DATA_FILE + "` (the hub's single `train` split holds every row; the benchmark's "
        "own splits are the `split` column):", "",
        "| field | meaning |", "|---|---|",
        "| `id` | the case's id |", "| `split` | the benchmark split |", "| `tier` | the difficulty tier |",
        "| `user_id` | the user the answers are for |", "| `persona` | that user's profile (JSON object) |",
        "| `question` | the user's question |", "| `chosen` | the answer preferred for this user |",
        "| `rejected` | the other answer |", "| `meta` | provenance (`pair_hash`, agreement, ...) |", "",
        "## Splits and tiers", "",
        f"Splits: {', '.join(report['splits'])}; tiers: {', '.join(report['tiers'])} "
        f"(declared in `{LAYOUT_FILE}`).", "",
        "| split/tier | rows |", "|---|---:|", *(f"| {cell} | {n} |" for cell, n in per_cell.items()), "",
    ]
    if tiers is not None:
        lines += _tier_lines(tiers)
    if sources:
        lines += ["Where the tiers come from (`meta.tier_source`): "
                  + "; ".join(f"{n} rows: {why}" for why, n in sources.items()) + ".", ""]
    shown = {k: v for k, v in report.items() if k not in ("skipped", "source")}
    lines += ["## Integrity report (`tailor data check`)", "", "```json",
              json.dumps(shown, ensure_ascii=False, indent=2), "```", ""]
    return header + "\n" + "\n".join(lines)


def write_data_folder(data: str | Path, folder: str | Path, repo_id: str, license: str | None,
                      skip_invalid: bool = False) -> dict[str, Any]:
    """The folder `tailor data push` uploads: the benchmark as native JSONL, its declaration, tiers.json when the
    source carries one, and the dataset card. Refuses without a licence."""
    from tailorbench.datasets.check import integrity_report
    from tailorbench.datasets.loader import load_benchmark
    from tailorbench.datasets.native import write_native
    from tailorbench.datasets.rows import fingerprint_files

    check_repo_id(repo_id)
    license = check_license(license)
    benchmark = load_benchmark(_source(data), skip_invalid=skip_invalid)
    report = integrity_report(benchmark)
    door = Output("--dry-run", Path(folder), directory=True, made_by="tailor data push")
    out = door.ensure()
    rows = write_native(benchmark.cases, door.path(DATA_FILE))
    door.write_text(LAYOUT_FILE, json.dumps(benchmark.names(), ensure_ascii=False) + "\n")
    tiers = _tiers_of(benchmark.files)
    if tiers is not None:
        door.write_json(TIERS_FILE, tiers)
    door.write_text("README.md", _card(repo_id, license, report, tiers, _tier_sources(benchmark.cases)))
    files = _uploaded_files(out)
    return {"repo": repo_id, "folder": str(out), "rows": rows, "license": license, "files": files,
            "fingerprint": fingerprint_files([out / DATA_FILE, out / LAYOUT_FILE])}


def write_report_folder(runs: Sequence[Path], report_dir: Path, folder: Path, repo_id: str) -> dict[str, Any]:
    """The folder `tailor report --push` uploads: results.jsonl (each run's results.json, one row per run, with
    the run's directory name as `run`) and the report as the card."""
    check_repo_id(repo_id)
    door = Output("--push", folder, directory=True, made_by="tailor report --push")
    rows = []
    from tailorbench.files import load_json

    for run in runs:
        path = run / "results.json"
        if not path.is_file():
            raise DataError(path, None, None, "no results.json: the run has not finished (nothing to publish)")
        rows.append(json.dumps({"run": run.name, **load_json(path, dict, "a run's results (a JSON object)")},
                               ensure_ascii=False))
    door.write_text(RESULTS_FILE, "\n".join(rows) + "\n")
    header = _yaml_header({
        "pretty_name": repo_id.split("/")[1],
        "tags": ["tailorbench", "leaderboard"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": RESULTS_FILE}]}],
    })
    body = (report_dir / "report.md").read_text(encoding="utf-8")
    door.write_text("README.md", header + "\n" + body)
    return {"repo": repo_id, "folder": str(folder), "runs": len(rows), "files": ["README.md", RESULTS_FILE]}


def _uploaded_files(folder: Path) -> list[str]:
    """The files an upload of `folder` sends (the door's marker stays local)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MARKER)


def upload(folder: Path, repo_id: str, private: bool, message: str) -> str:
    """One `upload_folder` call; the repository is created (private when asked) only when the hub says it does
    not exist yet. Returns the commit's URL."""
    import httpx
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError

    api = HfApi()
    try:
        try:
            info = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset",
                                     commit_message=message, ignore_patterns=[MARKER])
        except RepositoryNotFoundError:
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
            info = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset",
                                     commit_message=message, ignore_patterns=[MARKER])
    except HfHubHTTPError as exc:
        raise ConfigError(f"upload to {repo_id} refused by the hub: {str(exc).splitlines()[0]}") from None
    except OfflineModeIsEnabled:
        raise ConfigError(f"cannot upload to {repo_id}: HF_HUB_OFFLINE is set (unset it to push; --dry-run writes "
                          f"the folder without the hub)") from None
    except (OSError, httpx.TransportError) as exc:
        raise ConfigError(f"cannot reach the hub to upload to {repo_id}: {exc}") from None
    return str(getattr(info, "commit_url", info))


def push_data(data: str | Path, repo_id: str, license: str | None, private: bool = False,
              dry_run: str | Path | None = None, skip_invalid: bool = False) -> dict[str, Any]:
    """`tailor data push`: write the folder (at `dry_run`, and stop there; else in a temporary directory) and
    upload it."""
    if dry_run is not None:
        from tailorbench.files import check_output

        # a new or empty directory: the folder written there must be exactly what would be uploaded
        check_output("--dry-run", dry_run, inputs=[data], directory=True)
        return {**write_data_folder(data, dry_run, repo_id, license, skip_invalid), "uploaded": None}
    with scratch("tailor-push-") as tmp:
        summary = write_data_folder(data, tmp, repo_id, license, skip_invalid)
        url = upload(Path(tmp), repo_id, private, f"tailor data push: {summary['rows']} pairs")
    return {**summary, "folder": None, "uploaded": url}


def push_report(runs: Sequence[Path], report_dir: Path, repo_id: str, private: bool = False) -> dict[str, Any]:
    """`tailor report --push`: the leaderboard folder (kept under the report's `hub/`) uploaded in one call."""
    folder = report_dir / "hub"
    Output("--out", report_dir, directory=True).remove("hub")  # the report's own earlier hub folder
    summary = write_report_folder(runs, report_dir, folder, repo_id)
    url = upload(folder, repo_id, private, f"tailor report: {summary['runs']} runs")
    return {**summary, "uploaded": url}
