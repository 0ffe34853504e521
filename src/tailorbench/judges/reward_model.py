"""`rm:PATH_OR_HUB_ID`: a reward model (sequence classifier, one output) scores (context, question, answer)
for each answer; the higher score wins and equal scores abstain. Checkpoints written by `tailor train-rm`
load the same way (their sidecar restores the input format, truncation and any extra head terms).

Every triple of the run is scored once in `prepare` (the runner judges both orders, and the real data reuses
answers across pairs), in length-sorted batches; `judge` only looks scores up.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeBase, JudgeOptions, check_options, register_judge
from tailorbench.models.reward_hf import HFRewardModel, Triple, read_sidecar
from tailorbench.options import as_choice, as_int
from tailorbench.schema import JudgeInput, Verdict
from tailorbench.train.content import TrainingContent, read_dir, reconstruct


class RewardModelJudge(JudgeBase):
    batch_size = 1024

    def __init__(self, scorer: HFRewardModel, training: TrainingContent | None = None) -> None:
        super().__init__()
        self.scorer = scorer
        self._scores: dict[Triple, tuple[float, bool]] = {}
        #: what the model was fitted on (a `tailor train-rm` checkpoint's training_content.json), if known
        self.training = training
        if training is None:
            self.training, note = _checkpoint_content(scorer.path)
            if note:
                self.warnings.append(note)

    @staticmethod
    def triples(item: JudgeInput) -> tuple[Triple, Triple]:
        return (item.context, item.question, item.answer_a), (item.context, item.question, item.answer_b)

    def _score_missing(self, inputs: Sequence[JudgeInput]) -> None:
        todo = list(dict.fromkeys(t for item in inputs for t in self.triples(item) if t not in self._scores))
        if not todo:
            return
        scores, flags = self.scorer.score(todo)
        for triple, score, flag in zip(todo, scores.tolist(), flags.tolist()):
            self._scores[triple] = (score, flag)

    async def prepare(self, inputs: Sequence[JudgeInput]) -> None:
        self._score_missing(inputs)
        self.warnings.extend(self.scorer.notes)
        scored = len(self._scores)
        cut = sum(flag for _, flag in self._scores.values())
        if scored and cut == scored:
            self.warnings.append(
                f"every one of the {scored} scored inputs was truncated to max_length "
                f"{self.scorer.fmt.max_length} tokens: the model sees only the start of each answer; raise "
                "max_length (--judge-option max_length=N) if the model allows")

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

    def describe(self) -> dict[str, Any]:
        out = {"spec": self.spec, **self.scorer.describe(), "unique_inputs_scored": len(self._scores)}
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
