"""Build (once) and cache the real parts the test suite runs against.

The model-layer tests talk to a real OpenAI-compatible server (llama-cpp-python's) serving a tiny model
that this script trains and converts itself, offline and deterministically.  llama-cpp-python ships only a
source distribution that compiles for ~4 minutes, and work trees are laid anew between sessions, so the
wheel, the sdist (which holds the HF -> GGUF converter) and the model live under a cache directory:
``$TAILORBENCH_CACHE`` or ``~/.cache/tailorbench``.

Run with the project venv: ``.venv/bin/python scripts/ensure_test_assets.py``.  Idempotent: a second run
only checks stamps.  ``tests/conftest.py`` imports this file for the asset paths (keep heavy imports inside
functions).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LLAMA_CPP_VERSION = "0.3.36"
REPO_ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO_ROOT / "constraints.txt"
MODEL_ALIAS = "tiny-llama"

# Bump when the model recipe changes in a way the source hash would not catch (e.g. a library behaviour).
RECIPE_VERSION = 2


class AssetError(RuntimeError):
    """A test asset could not be built; the message says what to do."""


@dataclass(frozen=True)
class AssetPaths:
    """Where the cached test assets live (one place, shared with tests/conftest.py)."""

    cache: Path

    @property
    def wheels(self) -> Path:
        return self.cache / "wheels"

    @property
    def sdist_dir(self) -> Path:
        return self.cache / "sdist"

    @property
    def sdist(self) -> Path:
        return self.sdist_dir / f"llama_cpp_python-{LLAMA_CPP_VERSION}.tar.gz"

    @property
    def converter_dir(self) -> Path:
        return self.cache / "converter" / f"llama.cpp-{LLAMA_CPP_VERSION}"

    @property
    def models(self) -> Path:
        return self.cache / "models"

    @property
    def hf_dir(self) -> Path:
        return self.models / "tiny-llama-hf"

    @property
    def gguf(self) -> Path:
        return self.models / "tiny-llama-f32.gguf"

    @property
    def stamp(self) -> Path:
        return self.models / "tiny-llama.stamp.json"

    def wheel(self) -> Path | None:
        found = sorted(self.wheels.glob(f"llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl"))
        return found[-1] if found else None


def asset_paths() -> AssetPaths:
    """The cache root: ``$TAILORBENCH_TEST_ASSETS``, else ``$TAILORBENCH_CACHE``, else ``~/.cache/tailorbench``
    (the test suite sets the first to the asset cache and points the second at a scratch folder per worker)."""
    env = os.environ.get("TAILORBENCH_TEST_ASSETS") or os.environ.get("TAILORBENCH_CACHE")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "tailorbench"
    return AssetPaths(root.resolve())


def log(msg: str) -> None:
    print(f"[test-assets] {msg}", flush=True)


@contextlib.contextmanager
def cache_lock(paths: AssetPaths) -> Iterator[None]:
    """Serialise concurrent builders (two `make test` at once) on one cache."""
    paths.cache.mkdir(parents=True, exist_ok=True)
    with open(paths.cache / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run(cmd: list[str], *, env: dict[str, str] | None = None, what: str) -> None:
    """Run a command, streaming its output; fail with a clear message."""
    log(f"{what}: {' '.join(cmd)}")
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0:
        raise AssetError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}")


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


# --------------------------------------------------------------------------------------------------------
# a. llama-cpp-python: wheel, sdist, install


def ensure_wheel(paths: AssetPaths) -> Path:
    """Compile the llama-cpp-python wheel once (~4 min); portable across CPUs (no -march=native)."""
    wheel = paths.wheel()
    if wheel is not None:
        log(f"wheel cached: {wheel}")
        return wheel
    paths.wheels.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CMAKE_ARGS="-DGGML_NATIVE=OFF")
    t0 = time.monotonic()
    run(
        pip("wheel", f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}", "--no-deps", "-w", str(paths.wheels)),
        env=env,
        what="building the llama-cpp-python wheel (about 4 minutes)",
    )
    wheel = paths.wheel()
    if wheel is None:
        raise AssetError(f"pip wheel succeeded but no llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl in {paths.wheels}")
    log(f"wheel built in {time.monotonic() - t0:.0f} s: {wheel}")
    return wheel


def ensure_sdist(paths: AssetPaths) -> Path:
    """Keep the sdist: the HF -> GGUF converter ships only inside it."""
    if paths.sdist.is_file():
        return paths.sdist
    paths.sdist_dir.mkdir(parents=True, exist_ok=True)
    run(
        pip(
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"llama-cpp-python=={LLAMA_CPP_VERSION}",
            "-d",
            str(paths.sdist_dir),
        ),
        what="downloading the llama-cpp-python sdist",
    )
    if not paths.sdist.is_file():
        raise AssetError(f"sdist not found at {paths.sdist} after pip download")
    return paths.sdist


def server_importable() -> bool:
    """True when this interpreter can run ``python -m llama_cpp.server`` at the pinned version."""
    code = (
        "import llama_cpp, llama_cpp.server.app, sys; "
        f"sys.exit(0 if llama_cpp.__version__ == {LLAMA_CPP_VERSION!r} else 3)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode == 0


def ensure_dependency_wheels(paths: AssetPaths) -> None:
    """Keep the server's dependency wheels next to ours, so a fresh venv can install them offline."""
    marker = paths.wheels / f".deps-{LLAMA_CPP_VERSION}"
    if marker.is_file():
        return
    args = pip(
        "download", "-c", str(CONSTRAINTS), "--only-binary", ":all:", "--find-links", str(paths.wheels),
        "-d", str(paths.wheels), f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}",
    )  # fmt: skip
    log("caching the server's dependency wheels")
    if subprocess.run(args, capture_output=True, check=False).returncode == 0:
        marker.write_text("ok\n")
    else:  # not fatal: installing from the index still works while online
        log("could not cache the dependency wheels (offline?); continuing")


def ensure_installed(paths: AssetPaths, wheel: Path) -> None:
    """Install the cached wheel and the server extras into this venv when missing (offline first)."""
    if server_importable():
        log("llama_cpp.server importable")
        return
    spec = f"llama-cpp-python[server]=={LLAMA_CPP_VERSION}"
    base = ["install", "-c", str(CONSTRAINTS), str(wheel), spec, "--find-links", str(paths.wheels)]
    log("installing llama-cpp-python[server] from the cached wheels (offline)")
    if subprocess.run(pip(*base, "--no-index"), check=False).returncode != 0:
        run(pip(*base), what="installing llama-cpp-python[server] from the cached wheel and the index")
    if not server_importable():
        raise AssetError("llama_cpp.server still does not import after installing the wheel")


def ensure_converter(paths: AssetPaths, sdist: Path) -> Path:
    """Unpack convert_hf_to_gguf.py with its conversion/ and gguf-py/ folders into a private copy."""
    script = paths.converter_dir / "convert_hf_to_gguf.py"
    if script.is_file() and (paths.converter_dir / "conversion").is_dir():
        return script
    prefix = f"llama_cpp_python-{LLAMA_CPP_VERSION}/vendor/llama.cpp/"
    wanted = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")
    tmp = Path(tempfile.mkdtemp(dir=paths.cache, prefix=".converter-"))
    try:
        with tarfile.open(sdist) as tar:
            members = []
            for m in tar.getmembers():
                if not m.name.startswith(prefix):
                    continue
                rel = m.name[len(prefix) :]
                if rel.startswith(wanted) and (m.isfile() or m.isdir()):
                    m.name = rel
                    members.append(m)
            if not members:
                raise AssetError(f"no converter found under {prefix} in {sdist}")
            tar.extractall(tmp, members=members, filter="data")
        if paths.converter_dir.exists():
            shutil.rmtree(paths.converter_dir)
        paths.converter_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(paths.converter_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return script


# --------------------------------------------------------------------------------------------------------
# b. the tiny model  (recipe_hash() covers the text from here to the "end of the model recipe" marker)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
CHAT_REPLY = "Hello from tiny llama."
VERDICT = "A"
SEED = 1234
TRAIN_STEPS = 150
BATCH = 16

_WORDS_TEXT = (
    "the user likes hiking coffee music travel books code cats dogs tea rain city river garden "
    "morning evening budget health sport cooking movies games family friends work school student "
    "teacher doctor engineer artist quiet loud simple detailed short long answer question persona "
    "prefers enjoys avoids wants needs plans learns writes reads lives near far old young new best "
    "which how what why when where help me please recommend explain compare choose good better "
    "personalized general specific helpful response profile memory"
)
WORDS = _WORDS_TEXT.split()
CJK = "我想在工作学习喜欢咖啡旅行音乐运动健康家庭朋友老师学生问题回答个性化"
JUDGE_ENDINGS = (
    "Answer A or B.",
    "Which answer is more personalized? Answer A or B.",
    "Reply with a single letter: A or B.",
    "Output only A or B.",
    "Which response is better for this user, A or B?",
    "Verdict (A or B):",
    "Respond with 'A' or 'B' only.",
    "请回答A或B。",
    "哪个回答更个性化？请只回答A或B。",
)
# (persona, question, option A, option B) labels of judge prompts, English and Chinese.
JUDGE_LABELS = (
    ("Persona", "Question", "Answer A", "Answer B"),
    ("User profile", "Question", "Response A", "Response B"),
    ("Persona", "Prompt", "[A]", "[B]"),
    ("User", "Q", "A", "B"),
    ("用户画像", "问题", "回答A", "回答B"),
)
FIXED_LINES = (
    "Hello from tiny llama.",
    "Persona: the user likes hiking and coffee.",
    "Question: which answer is more personalized? Answer A or B.",
    "Answer A: a detailed answer. Answer B: a short answer.",
    "我想在apple工作, 喜欢咖啡和旅行。",
    "0123456789 ,.;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
)


def recipe_hash(paths: AssetPaths) -> str:
    """What decides the model bytes: the recipe section of this file, the library versions."""
    from importlib.metadata import version

    text = Path(__file__).read_text(encoding="utf-8")
    start = text.index("\n# b. the tiny model")  # line-anchored: these strings recur in this function
    end = text.index("\n# end of the model recipe\n")
    h = hashlib.sha256()
    h.update(text[start:end].encode())
    h.update(str(RECIPE_VERSION).encode())
    for pkg in ("torch", "transformers", "tokenizers", "safetensors"):
        h.update(f"{pkg}={version(pkg)}".encode())
    h.update(LLAMA_CPP_VERSION.encode())
    return h.hexdigest()[:16]


def _random_text(rng: object, n_min: int, n_max: int) -> str:
    import random

    assert isinstance(rng, random.Random)
    parts = []
    for _ in range(rng.randint(n_min, n_max)):
        if rng.random() < 0.08:
            parts.append("".join(rng.choice(CJK) for _ in range(rng.randint(1, 4))))
        else:
            parts.append(rng.choice(WORDS))
    return " ".join(parts)


def training_conversations(n: int, seed: int) -> list[tuple[list[dict[str, str]], str]]:
    """Random judge prompts (-> "A") and plain chat prompts (-> a fixed sentence)."""
    import random

    rng = random.Random(seed)
    out: list[tuple[list[dict[str, str]], str]] = []
    for _ in range(n):
        messages: list[dict[str, str]] = []
        if rng.random() < 0.4:
            messages.append({"role": "system", "content": _random_text(rng, 3, 15)})
        if rng.random() < 0.6:
            persona, question, opt_a, opt_b = rng.choice(JUDGE_LABELS)
            body = (
                f"{persona}: {_random_text(rng, 3, 40)}\n{question}: {_random_text(rng, 3, 15)}?\n"
                f"{opt_a}: {_random_text(rng, 3, 40)}\n{opt_b}: {_random_text(rng, 3, 40)}\n"
                f"{rng.choice(JUDGE_ENDINGS)}"
            )
            reply = VERDICT
        else:
            body = _random_text(rng, 1, 30)
            reply = CHAT_REPLY
        messages.append({"role": "user", "content": body})
        out.append((messages, reply))
    return out


def build_tokenizer(out_dir: Path) -> object:
    """Byte-level BPE trained on fixed lines; ChatML specials; no BOS added (llama.cpp must agree)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [*FIXED_LINES, " ".join(WORDS), CJK]
    corpus += [m["content"] for conv, _ in training_conversations(200, SEED + 1) for m in conv]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
        add_bos_token=False,
        add_eos_token=False,
        clean_up_tokenization_spaces=False,
        model_max_length=2048,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)
    return fast


def fit_chat_model(model: Any, tok: Any, out_dir: Path) -> float:
    """Teach a causal LM the test replies (judge prompts -> "A", chat -> a fixed line) by plain AdamW on the
    reply tokens, then save it greedy; the final loss. The tiny Llama of the vLLM venv shares it."""
    import torch

    model.train()

    def encode(conv: list[dict[str, str]], reply: str) -> tuple[list[int], list[int]]:
        prompt = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        r_ids = tok(reply + "<|im_end|>", add_special_tokens=False)["input_ids"]
        return p_ids + r_ids, [-100] * len(p_ids) + r_ids

    data = [encode(c, r) for c, r in training_conversations(TRAIN_STEPS * BATCH, SEED)]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    loss_val = float("nan")
    for step in range(TRAIN_STEPS):
        batch = data[step * BATCH : (step + 1) * BATCH]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), width), tok.pad_token_id, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (x, y) in enumerate(batch):
            ids[i, : len(x)] = torch.tensor(x)
            labels[i, : len(y)] = torch.tensor(y)
            mask[i, : len(x)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_val = float(loss.detach())
    model.eval()
    model.generation_config.do_sample = False
    model.save_pretrained(out_dir, safe_serialization=True)
    return loss_val


def train_model(out_dir: Path) -> dict[str, float]:
    """A 2-layer, hidden-64 Llama taught to answer judge prompts with "A" and chat with a fixed line."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # reproducible float reductions
    torch.use_deterministic_algorithms(True)
    tok = build_tokenizer(out_dir)
    from transformers import PreTrainedTokenizerFast

    assert isinstance(tok, PreTrainedTokenizerFast)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    final_loss = fit_chat_model(model, tok, out_dir)

    # How well it learned, on prompts it never saw.
    held_out = training_conversations(100, SEED + 99)
    hits = 0
    with torch.no_grad():
        for conv, reply in held_out:
            prompt = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
            x = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]])
            y = model.generate(
                x, max_new_tokens=24, do_sample=False, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
            )
            text = tok.decode(y[0, x.shape[1] :], skip_special_tokens=True)
            hits += text.strip() == reply
    return {"final_loss": round(final_loss, 4), "held_out_exact": hits / len(held_out)}


CONVERT_WRAPPER = r'''
"""Run llama.cpp's convert_hf_to_gguf.py, naming our locally trained byte-level BPE pre-tokenizer gpt-2."""
import runpy, sys
from pathlib import Path
script = Path(sys.argv[1])
sys.path.insert(0, str(script.parent))
sys.path.insert(1, str(script.parent / "gguf-py"))
import conversion.base as base
_orig = base.TextModel.get_vocab_base_pre
def _pre(self, tokenizer):
    try:
        return _orig(self, tokenizer)
    except NotImplementedError:
        return "gpt-2"
base.TextModel.get_vocab_base_pre = _pre
sys.argv = [str(script), *sys.argv[2:]]
runpy.run_path(str(script), run_name="__main__")
'''


def convert_to_gguf(converter: Path, hf_dir: Path, out: Path) -> None:
    """f32 GGUF: q8_0 flips near-ties, and the tests compare logits with the HF model."""
    wrapper = converter.parent / "_tailorbench_convert.py"
    wrapper.write_text(CONVERT_WRAPPER)
    run(
        [sys.executable, str(wrapper), str(converter), str(hf_dir), "--outtype", "f32", "--outfile", str(out)],
        what="converting the tiny model to GGUF",
    )
    if not out.is_file():
        raise AssetError(f"converter exited 0 but wrote no {out}")


# end of the model recipe


def ensure_model(paths: AssetPaths, converter: Path) -> dict[str, object]:
    """Train + convert unless the stamp says the cached model matches this recipe."""
    want = recipe_hash(paths)
    if paths.stamp.is_file() and paths.hf_dir.is_dir() and paths.gguf.is_file():
        stamp = json.loads(paths.stamp.read_text())
        if stamp.get("recipe") == want:
            log(f"tiny model cached (recipe {want})")
            return dict(stamp)
        log(f"recipe changed ({stamp.get('recipe')} -> {want}): rebuilding the tiny model")
    paths.models.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(dir=paths.models, prefix=".build-"))
    try:
        hf_tmp = tmp / "tiny-llama-hf"
        stats = train_model(hf_tmp)
        t_train = time.monotonic() - t0
        log(f"trained in {t_train:.1f} s: {stats}")
        gguf_tmp = tmp / "tiny-llama-f32.gguf"
        convert_to_gguf(converter, hf_tmp, gguf_tmp)
        for old in (paths.hf_dir, paths.gguf, paths.stamp):
            if old.is_dir():
                shutil.rmtree(old)
            elif old.exists():
                old.unlink()
        hf_tmp.rename(paths.hf_dir)
        gguf_tmp.rename(paths.gguf)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stamp = {
        "recipe": want,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "build_seconds": round(time.monotonic() - t0, 1),
        "gguf_sha256": hashlib.sha256(paths.gguf.read_bytes()).hexdigest(),
        "chat_reply": CHAT_REPLY,
        "verdict": VERDICT,
        **stats,
    }
    paths.stamp.write_text(json.dumps(stamp, indent=2) + "\n")
    return stamp


def model_current(paths: AssetPaths) -> bool:
    """True when the cached model exists and was built by this recipe (used by tests/conftest.py)."""
    if not (paths.stamp.is_file() and paths.hf_dir.is_dir() and paths.gguf.is_file()):
        return False
    try:
        return json.loads(paths.stamp.read_text()).get("recipe") == recipe_hash(paths)
    except (OSError, ValueError):
        return False


def main() -> int:
    paths = asset_paths()
    t0 = time.monotonic()
    try:
        with cache_lock(paths):
            wheel = ensure_wheel(paths)
            sdist = ensure_sdist(paths)
            ensure_dependency_wheels(paths)
            ensure_installed(paths, wheel)
            converter = ensure_converter(paths, sdist)
            stamp = ensure_model(paths, converter)
    except AssetError as exc:
        print(f"[test-assets] ERROR: {exc}", file=sys.stderr)
        print(f"[test-assets] cache: {paths.cache} (set TAILORBENCH_CACHE to move it)", file=sys.stderr)
        return 1
    log(f"cache      {paths.cache}")
    log(f"wheel      {wheel}")
    log(f"sdist      {sdist}")
    log(f"converter  {converter}")
    log(f"hf model   {paths.hf_dir}")
    log(f"gguf       {paths.gguf}")
    log(f"stamp      {paths.stamp}: {json.dumps(stamp)}")
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
