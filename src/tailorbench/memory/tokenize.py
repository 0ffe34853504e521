"""A tokenizer for lexical retrieval over Chinese and English alike.

Whitespace splitting (bm25s' default) makes a whole Chinese sentence one token, so nothing matches. Here a run
of CJK characters becomes its characters plus its overlapping bigrams (unigrams catch one-character words such as
猫 or 茶, bigrams carry most of the precision), and Latin text becomes lower-cased word tokens (plural -s
stripped) with a few English function words dropped; digits stay tokens. Character bigrams are the standard
segmenter-free choice for Chinese retrieval and need no dictionary.
"""

from __future__ import annotations

import re

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]+")
#: English function words that carry no topic (kept short on purpose: content words must never be lost)
STOPWORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "as",
        "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "i", "me", "my", "we", "our",
        "you", "your", "he", "she", "it", "its", "they", "them", "their", "this", "that", "these", "those", "what",
        "which", "who", "how", "can", "could", "would", "should", "will", "shall", "may", "might", "have", "has",
        "had", "not", "no", "so", "if", "then", "than", "there", "here",
    }
)


def _singular(word: str) -> str:
    """Plural -s only (peanuts -> peanut): the one English inflection that is both frequent and safe to strip."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and not word.isdigit():
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Tokens of one text: CJK unigrams and bigrams + Latin words (lower-cased, singular, stopwords removed)."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if _CJK_RUN.fullmatch(piece):
            out.extend(piece)
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            # a Latin run glued to CJK ("用Python写") is split by the regex already
            word = piece.lower()
            if word not in STOPWORDS:
                out.append(_singular(word))
    return out
