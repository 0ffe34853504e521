"""tailorbench's extension points, one each, as a third-party package would write them."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tailorbench.annotation.tasks import ItemError, TaskType, one_of, text_field
from tailorbench.datasets import Layout
from tailorbench.datasets.rows import InvalidRows, read_jsonl, require_text
from tailorbench.errors import DataError
from tailorbench.evaluate.settings import SettingOptions
from tailorbench.judges.base import JudgeBase, JudgeOptions, check_options
from tailorbench.models.base import ChatResult, GenParams, Message
from tailorbench.schema import JudgeInput, PairCase, Verdict

LETTERS = "ABC"


class VowelsJudge(JudgeBase):
    """`vowels`: prefers the answer with more vowels (a judge with no model at all)."""

    async def judge(self, inputs: Sequence[JudgeInput]) -> list[Verdict]:
        def count(text: str) -> int:
            return sum(text.lower().count(v) for v in "aeiou")

        out = []
        for item in inputs:
            a, b = count(item.answer_a), count(item.answer_b)
            out.append(Verdict(status="abstain") if a == b else Verdict(choice="A" if a > b else "B"))
        return out


def make_vowels_judge(arg: str | None, options: JudgeOptions) -> VowelsJudge:
    check_options("vowels", options.extra, ())
    return VowelsJudge()


class EchoAPI:
    """`echo:MODEL`: a model backend that answers "A" when the prompt's first answer is the longer one, else
    "B" (the judge's template marks the answers; it only looks at the text). One attempt per call: the
    wrapper adds the cache, retries and accounting."""

    backend = "echo"
    supports_logprobs = False
    remote = True
    public_base_url = None

    def __init__(self, model: str, *, spec: str = "", verdict: str = "A") -> None:
        self.model = model
        self.spec = spec or f"echo:{model}"
        self.verdict = verdict
        self.calls = 0

    async def generate(self, messages: Sequence[Message], params: GenParams) -> ChatResult:
        self.calls += 1
        return ChatResult(text=self.verdict, raw=self.verdict, finish_reason="stop", prompt_tokens=10,
                          completion_tokens=1)

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "verdict": self.verdict}


class ToneLayout(Layout):
    """A benchmark of register: `tone.json` marks the directory, `<split>-<tier>.jsonl` hold the rows."""

    name = "tone"
    expects = "a directory with tone.json and <split>-<tier>.jsonl files"
    splits = ("formal", "casual")
    tiers = ("low", "high")
    difficulty = ("high", "low")

    def detect(self, path: Path) -> bool:
        return path.is_dir() and (path / "tone.json").is_file()

    def read(self, path: Path, invalid: InvalidRows, options: Mapping[str, Any]) -> Iterator[PairCase]:
        for file in sorted(path.glob("*-*.jsonl")):
            split, tier = file.stem.split("-", 1)
            for line, row in read_jsonl(file, invalid):
                try:
                    yield PairCase(id=f"{file.stem}:{line}", split=split, tier=tier, user_id=str(row["user"]),
                                   question=require_text(row, "question", file, line),
                                   chosen=require_text(row, "chosen", file, line),
                                   rejected=require_text(row, "rejected", file, line))
                except DataError as error:
                    invalid.handle(error)


def shout(case: PairCase, options: SettingOptions) -> str | None:
    """`shout`: the judge sees the user's id, upper-cased, as its context."""
    return f"USER {case.user_id.upper()}"


class ThreeWay(TaskType):
    """Which of three options answers the question best; options shown in a random order per assignment."""

    name = "three_way"
    title = "Three-way choice"
    template_dir = Path(__file__).parent / "templates"

    def payload(self, row: Mapping[str, Any]) -> dict[str, Any]:
        options = row.get("options")
        if not isinstance(options, list) or len(options) != 3 or not all(isinstance(o, str) and o for o in options):
            raise ItemError("options", "must be a list of three non-empty strings")
        return {"question": text_field(row, "question"), "options": options}

    def check_gold(self, gold: Any, payload: dict[str, Any]) -> Any:
        if gold not in tuple(LETTERS):
            raise ItemError("gold", "must be 'A', 'B' or 'C'")
        return gold

    def new_layout(self) -> dict[str, Any]:
        order = [0, 1, 2]
        for i in (2, 1):
            j = secrets.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        return {"order": order}

    def shown_order(self, layout: dict[str, Any]) -> str | None:
        return "".join(LETTERS[i] for i in layout["order"])

    def view(self, payload: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        return {"question": payload["question"], "options": [payload["options"][i] for i in layout["order"]]}

    def parse_form(self, payload: dict[str, Any], layout: dict[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
        shown = one_of(form, "choice", ("1", "2", "3"), "option")
        return {"choice": LETTERS[layout["order"][int(shown) - 1]]}

    def to_ratings(self, ext_id: str, value: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(ext_id, value["choice"])]
