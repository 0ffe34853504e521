"""Explicit-mention detector: which persona values an answer names outright.

Why: Re-Centering Humans found that LLM judges reward answers that merely mention the user's attributes.
Counting mentions, and the win rate with and without them, makes a judge that rewards name-dropping visible.

Values are the persona's leaves (`personas.persona_facts` paths), cut into phrases at list separators
(`;` `,` `/` `、` `，` `；` ...). A phrase is matched by its script (see docs/generation.md):

- CJK phrase (mostly CJK characters): 2-4 characters -> a substring of the answer; longer -> any run of
  4 consecutive characters of the phrase occurs in the answer (character 4-grams). Single characters are
  skipped (too ambiguous).
- Latin phrase: words are lower-cased, NFKC-normalised, a plural `s` stripped, stop words dropped. A phrase
  of 1-2 content words matches when that word sequence occurs in the answer's content words; a longer phrase
  matches when any two consecutive content words of it occur so (content-word bigrams). Words shorter than 3
  letters, pure numbers and MBTI letters are never values on their own.
- Name section: each name token (Latin, 3+ letters) and the whole CJK name are phrases: "Hi Maya" counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tailorbench.personas import cjk_share

_SPLIT = re.compile(r"[;,/|、，；。：:（）()\[\]【】\n]+|\s+(?:and|or|&)\s+")
_LATIN_WORD = re.compile(r"[a-z0-9]+(?:['’-][a-z0-9]+)*")
_CJK_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP_WORDS = (
    """a an the and or of to in on at for with by from as is are be been was were it its this that these those
    i me my we our you your he she they them his her their not no nor but if then than so very more most less
    also just only into over under about up down out off per via etc prefers prefer likes like enjoys enjoy
    avoids avoid wants want needs need usually often sometimes always never some any all each every one two
    has have had do does did can could will would should may might must who whom which what when where why how
    yes none other others time times day days"""
)
_STOP = frozenset(_STOP_WORDS.split())
#: leading verbs of CJK preference values ("喜欢川菜" -> "川菜"): the object is what an answer would name
_CJK_LEAD = re.compile(r"^(?:不太喜欢|喜欢|喜爱|偏好|爱好|热爱|热衷于?|经常|习惯)")
#: minimum CJK phrase length, and the n-gram size used for longer phrases
_CJK_MIN, _CJK_GRAM = 2, 4


@dataclass(frozen=True)
class ValuePhrase:
    """One matchable phrase of a persona value and where it came from (`Section > Key`)."""

    key: str
    text: str
    script: str  # cjk | latin
    #: latin: content-word tuples any of which must occur; cjk: substrings any of which must occur
    needles: tuple[Any, ...]


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """Normalised, stemmed words of a text, stop words and very short words dropped."""
    return [_stem(w) for w in _LATIN_WORD.findall(_norm(text).replace("’", "'"))
            if w not in _STOP and len(w) >= 3 and not w.isdigit()]


def _leaves(node: Any, path: tuple[str, ...]) -> Iterable[tuple[tuple[str, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, str(key)))
    elif isinstance(node, list):
        for item in node:
            yield from _leaves(item, path)
    elif node is not None and str(node).strip():
        yield path, str(node)


def _phrase(key: str, text: str, name: bool = False) -> list[ValuePhrase]:
    text = text.strip()
    if not text:
        return []
    if cjk_share(text) > 0.5:
        chars = "".join(_CJK_CHARS.findall(_norm(text)))
        if name:
            # a Chinese name is usually family name + given name; people are addressed by either form
            given = (chars[1:],) if 3 <= len(chars) <= 4 else ()
            return [ValuePhrase(key, text, "cjk", (chars, *given))] if len(chars) >= _CJK_MIN else []
        stripped = _CJK_LEAD.sub("", chars)
        chars = stripped if len(stripped) >= _CJK_MIN else chars
        if len(chars) < _CJK_MIN:
            return []
        if len(chars) <= _CJK_GRAM:
            return [ValuePhrase(key, text, "cjk", (chars,))]
        grams = tuple(dict.fromkeys(chars[i : i + _CJK_GRAM] for i in range(len(chars) - _CJK_GRAM + 1)))
        return [ValuePhrase(key, text, "cjk", grams)]
    words = content_words(text)
    if not words:
        return []
    if name:
        return [ValuePhrase(key, text, "latin", tuple((w,) for w in words))]
    if len(words) <= 2:
        return [ValuePhrase(key, text, "latin", (tuple(words),))]
    bigrams = tuple(dict.fromkeys(tuple(words[i : i + 2]) for i in range(len(words) - 1)))
    return [ValuePhrase(key, text, "latin", bigrams)]


def value_phrases(profile: dict[str, Any]) -> list[ValuePhrase]:
    """Every matchable phrase of a persona profile, in profile order."""
    out: list[ValuePhrase] = []
    for path, value in _leaves(profile, ()):
        key = " > ".join(path)
        is_name = bool(path) and path[-1].lower() in ("name", "姓名", "名字")
        parts = [value] if is_name else [p for p in _SPLIT.split(value) if p and p.strip()]
        for part in parts:
            out.extend(_phrase(key, part, name=is_name))
    return out


def _contains(seq: list[str], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return any(tuple(seq[i : i + n]) == needle for i in range(len(seq) - n + 1))


def find_mentions(answer: str, phrases: list[ValuePhrase]) -> list[dict[str, str]]:
    """The persona phrases an answer mentions explicitly: `[{"key", "value", "match"}]`, one per phrase."""
    text = _norm(answer)
    cjk_text = "".join(_CJK_CHARS.findall(text))
    words = content_words(answer)
    found: list[dict[str, str]] = []
    for phrase in phrases:
        hit: str | None = None
        if phrase.script == "cjk":
            hit = next((g for g in phrase.needles if g in cjk_text), None)
        else:
            match = next((g for g in phrase.needles if _contains(words, g)), None)
            hit = " ".join(match) if match else None
        if hit is not None:
            found.append({"key": phrase.key, "value": phrase.text, "match": hit})
    return found
