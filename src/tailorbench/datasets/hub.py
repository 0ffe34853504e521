"""`--data personafeedback`: the PersonalAILab/PersonaFeedback dataset from the Hugging Face hub, through
the standard hub cache (so offline use with a populated cache works, and HF_HUB_OFFLINE=1 is honoured)."""

from __future__ import annotations

from pathlib import Path

from tailorbench.errors import ConfigError

PERSONAFEEDBACK_REPO = "PersonalAILab/PersonaFeedback"


def fetch_personafeedback(revision: str | None = None, cache_dir: str | None = None) -> Path:
    """Local snapshot path of the dataset repository (downloaded once, then served from the cache)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        path = snapshot_download(
            repo_id=PERSONAFEEDBACK_REPO,
            repo_type="dataset",
            revision=revision,
            cache_dir=cache_dir,
            allow_patterns=["data/**", "persona/**", "*.md"],
        )
    except LocalEntryNotFoundError as exc:
        raise ConfigError(
            f"{PERSONAFEEDBACK_REPO} is not in the Hugging Face cache and the hub cannot be reached "
            f"(offline?): {exc}"
        ) from exc
    return Path(path)
