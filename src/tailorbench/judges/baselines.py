"""Baselines every report needs: `longer` is right 72-77% of the time on PersonaFeedback General, so a judge
must beat it to mean anything. Lengths are Python `len()` of the raw strings; equal lengths abstain."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from tailorbench.errors import ConfigError
from tailorbench.judges.base import JudgeBase, JudgeOptions, check_options, register_judge
from tailorbench.options import as_int
from tailorbench.schema import Choice, JudgeInput, Verdict

# shared, never mutated: the baselines allocate nothing per verdict
_ABSTAIN = Verdict(status="abstain")
_PICK = {"A": Verdict(choice="A"), "B": Verdict(choice="B")}


class LengthJudge(JudgeBase):
    """Picks the longer (or shorter) answer."""

    def __init__(self, prefer_longer: bool) -> None:
        super().__init__()
        self.prefer_longer = prefer_longer

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        out: list[Verdict] = []
        for item in inputs:
            la, lb = len(item.answer_a), len(item.answer_b)
            if la == lb:
                out.append(_ABSTAIN)
            else:
                out.append(_PICK["A" if (la > lb) == self.prefer_longer else "B"])
        return out


class FirstJudge(JudgeBase):
    """Always A: measures nothing but position, which is why the runner judges both orders."""

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        return [_PICK["A"]] * len(inputs)


class RandomJudge(JudgeBase):
    """A coin per (seed, case, order, answers): reproducible whatever the batching, sharding or resume."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        out: list[Verdict] = []
        for item in inputs:
            key = f"{self.seed}\x1f{item.case_id}\x1f{item.setting}\x1f{item.answer_a}".encode()
            choice: Choice = "A" if hashlib.blake2b(key, digest_size=1).digest()[0] & 1 else "B"
            out.append(_PICK[choice])
        return out

    def describe(self) -> dict[str, object]:
        return {"spec": self.spec, "seed": self.seed}


@register_judge("longer")
def _longer(arg: str | None, options: JudgeOptions) -> LengthJudge:
    _no_arg("longer", arg, options)
    return LengthJudge(prefer_longer=True)


@register_judge("shorter")
def _shorter(arg: str | None, options: JudgeOptions) -> LengthJudge:
    _no_arg("shorter", arg, options)
    return LengthJudge(prefer_longer=False)


@register_judge("first")
def _first(arg: str | None, options: JudgeOptions) -> FirstJudge:
    _no_arg("first", arg, options)
    return FirstJudge()


@register_judge("random")
def _random(arg: str | None, options: JudgeOptions) -> RandomJudge:
    check_options("random", options.extra, ())
    return RandomJudge(seed=as_int("random:SEED", arg) if arg else options.seed)


def _no_arg(name: str, arg: str | None, options: JudgeOptions) -> None:
    """Baselines take no argument and no option but batch_size: anything else is an error, not ignored."""
    if arg:
        raise ConfigError(f"judge {name} takes no argument, got {name}:{arg}")
    check_options(name, options.extra, ())
