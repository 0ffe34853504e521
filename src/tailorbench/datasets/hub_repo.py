"""`--data hf:OWNER/NAME[@REVISION]`: a benchmark pushed by `tailor data push` (datasets/hub_push.py), read
back through `snapshot_download` (the hub cache first; HF_HUB_OFFLINE=1 honoured) as the native file it holds,
or a dataset as its authors published it (`hf:HannahKirk/prism-alignment`), read by the layout that recognises
its snapshot."""

from __future__ import annotations

from pathlib import Path

from tailorbench.errors import ConfigError, DataError

HF_PREFIX = "hf:"
DATA_FILE = "data/benchmark.jsonl"
LAYOUT_FILE = "data/benchmark.layout.json"


def check_repo_id(repo_id: str) -> str:
    """OWNER/NAME, nothing else (a revision belongs to `hf:OWNER/NAME@REV`, not to a push target)."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(p.strip() for p in parts) or "@" in repo_id:
        raise ConfigError(f"a hub dataset is named OWNER/NAME, got {repo_id!r}")
    return repo_id


def parse_hf_spec(spec: str) -> tuple[str, str | None]:
    """`hf:OWNER/NAME[@REVISION]` -> (OWNER/NAME, REVISION or None)."""
    body = spec[len(HF_PREFIX):]
    repo_id, _, revision = body.partition("@")
    return check_repo_id(repo_id), (revision or None)


def fetch_pushed(spec: str) -> Path:
    """The local data file of a benchmark pushed with `tailor data push`, or the snapshot folder of a dataset a
    layout reads, from the hub cache (downloaded once)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

    repo_id, revision = parse_hf_spec(spec)
    try:
        folder = Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision))
    except LocalEntryNotFoundError:
        raise ConfigError(f"{spec}: the dataset {repo_id} is not in the Hugging Face cache and the hub cannot be "
                          f"reached (offline?)") from None
    except RepositoryNotFoundError:
        raise ConfigError(f"{spec}: no dataset repository {repo_id} on the hub (or no access to it)") from None
    except HfHubHTTPError as exc:
        raise ConfigError(f"{spec}: the hub refused the download: {str(exc).splitlines()[0]}") from None
    data = folder / DATA_FILE
    if data.is_file():
        return data
    from tailorbench.datasets.layouts import all_layouts

    if any(layout.detect(folder) for layout in all_layouts() if layout.name != "native"):
        return folder  # a benchmark as its authors published it (PRISM, PersonaMem ...): its layout reads it
    raise DataError(Path(spec), None, None, f"no {DATA_FILE} in the dataset: not a benchmark pushed by "
                                            f"`tailor data push`, nor one a layout reads")
