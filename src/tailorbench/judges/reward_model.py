"""`rm:PATH_OR_HUB_ID`: a reward model (sequence classifier, one output) scores (context, question, answer)
for each answer; the higher score wins and equal scores abstain. `rm:vllm:PATH` scores a plain classifier on
vLLM's pooling runner (models/reward_vllm.py) instead of transformers. Checkpoints written by `tailor train-rm`
load the same way (their sidecar restores the input format, truncation and any extra head terms).

Every triple of the run is scored once in `prepare` (the runner judges both orders, and the real data reuses
answers across pairs), in length-sorted batches; `judge` only looks scores up. Before that, `check_inputs`
encodes the triples (the encodings are reused by the scoring) and says how many will be truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeBase, JudgeOptions, check_options, register_judge, truncation_warning
from tailorbench.leakage import TrainingContent, read_dir, reconstruct
from tailorbench.models.reward_format import Triple, read_sidecar
from tailorbench.models.reward_hf import HFRewardModel
from tailorbench.options import as_choice, as_int
from tailorbench.schema import JudgeInput, Verdict

if TYPE_CHECKING:
    from tailorbench.models.reward_vllm import VLLMRewardModel


class RewardModelJudge(JudgeBase):
    batch_size = 1024

    def __init__(self, scorer: HFRewardModel | VLLMRewardModel, training: TrainingContent | None = None) -> None:
        super().__init__()
        self.scorer = scorer
        self._scores: dict[Triple, tuple[float, bool]] = {}
        #: what the model was fitted on (a `tailor train-rm` checkpoint's training_content.json), if known
        self.training = training
        if training is None:
            self.training, note = _checkpoint_content(scorer.path)
            if note:
                self.warnings.append(note)
        self.warnings.extend(scorer.notes)  # known once the model is loaded (pad token, untrained head)

    @staticmethod
    def triples(item: JudgeInput) -> tuple[Triple, Triple]:
        return (item.context, item.question, item.answer_a), (item.context, item.question, item.answer_b)

    def _missing(self, inputs: Sequence[JudgeInput]) -> list[Triple]:
        return list(dict.fromkeys(t for item in inputs for t in self.triples(item) if t not in self._scores))

    def _score_missing(self, inputs: Sequence[JudgeInput]) -> None:
        todo = self._missing(inputs)
        if not todo:
            return
        scores, flags = self.scorer.score(todo)
        for triple, score, flag in zip(todo, scores.tolist(), flags.tolist()):
            self._scores[triple] = (score, flag)

    def check_inputs(self, inputs: Sequence[JudgeInput]) -> list[str]:
        """How many of the unique (context, question, answer) triples still to score will be truncated at
        max_length: the scorer's own encoding, so the count is the one scoring reports."""
        todo = self._missing(inputs)
        if not todo:
            return []
        cut = int(self.scorer.check_truncation(todo).sum())
        line = truncation_warning(cut, len(todo), "scored inputs",
                                  self.scorer.fmt.max_length, every="the model sees only the start of each answer")
        return [line] if line else []

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        # what the runner's pre-work check said (it is cached), for callers that go straight to prepare
        self.warnings.extend(w for w in self.check_inputs(inputs) if w not in self.warnings)
        self._score_missing(inputs)

    def training_content(self) -> TrainingContent | None:
        """The hashes of the model's training data (the runner reports overlapping cases separately)."""
        return self.training

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        self._score_missing(inputs)
        out: list[Verdict] = []
        for item in inputs:
            ta, tb = self.triples(item)
            (sa, ca), (sb, cb) = self._scores[ta], self._scores[tb]
            scores = {"A": sa, "B": sb}
            if sa == sb:
                out.append(Verdict(status="abstain", scores=scores, truncated=ca or cb))
            else:
                out.append(Verdict(choice="A" if sa > sb else "B", scores=scores, truncated=ca or cb))
        return out

    async def aclose(self) -> None:
        close = getattr(self.scorer, "close", None)  # rm:vllm: hands its engine back
        if callable(close):
            close()

    def describe(self) -> dict[str, Any]:
        out = {"spec": self.spec, **self.scorer.describe(), "unique_inputs_scored": len(self._scores),
               "probability": "logistic"}
        if self.training is not None:
            out["training_data"] = self.training.summary()
        return out


def _checkpoint_content(path: str) -> tuple[TrainingContent | None, str | None]:
    """A checkpoint's training content; for a `tailor train-rm` checkpoint older than training_content.json,
    rebuilt from its train_config.yaml (or a note saying why it cannot be)."""
    if not Path(path).is_dir():
        return None, None
    content = read_dir(path)
    if content is not None:
        return content, None
    sidecar = read_sidecar(path)
    if sidecar.get("trained_by") != "tailor train-rm":
        return None, None
    return reconstruct(path)


@register_judge("rm")
def _rm(arg: str | None, options: JudgeOptions) -> RewardModelJudge:
    if not arg:
        raise ConfigError("rm needs a model: rm:PATH_OR_HUB_ID (a checkpoint directory or a hub id)")
    if arg.startswith("vllm:"):
        return _rm_vllm(arg.removeprefix("vllm:"), options)
    extra = check_options("rm", options.extra, ("max_length", "precision", "rm_batch_size", "device"))
    max_length = extra.get("max_length")
    scorer = HFRewardModel(
        arg,
        max_length=as_int("max_length", max_length, minimum=8) if max_length not in (None, "") else None,
        precision=as_choice("precision", extra.get("precision", "auto"), ("auto", "bf16", "fp32")),
        batch_size=as_int("rm_batch_size", extra.get("rm_batch_size", 32), minimum=1),
        device=str(extra.get("device", "cpu")),
    )
    return RewardModelJudge(scorer)


def _rm_vllm(path: str, options: JudgeOptions) -> RewardModelJudge:
    """`rm:vllm:PATH`: the same judge on vLLM's pooling runner (models/reward_vllm.py); engine options as for
    the vllm chat backend (models/vllm_engine.py)."""
    from tailorbench.models.reward_vllm import VLLMRewardModel
    from tailorbench.models.vllm_engine import VLLMEngineConfig

    if not path:
        raise ConfigError("rm:vllm: needs a model: rm:vllm:PATH_OR_HUB_ID")
    engine = VLLMEngineConfig.names()
    extra = check_options("rm", options.extra, ("max_length", "rm_batch_size", *sorted(engine)))
    max_length = extra.get("max_length")
    scorer = VLLMRewardModel(
        path,
        max_length=as_int("max_length", max_length, minimum=8) if max_length not in (None, "") else None,
        batch_size=as_int("rm_batch_size", extra.get("rm_batch_size", 1024), minimum=1),
        config=VLLMEngineConfig.from_options({k: v for k, v in extra.items() if k in engine}, owner="rm:vllm"),
    )
    return RewardModelJudge(scorer)
