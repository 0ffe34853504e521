"""The answer n-gram head (models/ngram_head.py): its TF-IDF equals scikit-learn's `TfidfVectorizer` with the
same settings, its weights survive a save/load, and the joint Bradley-Terry fit learns a marker n-gram."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tailorbench.models.ngram_head import NgramHead, NgramVocabulary, char_ngrams, pair_difference_matrix
from tailorbench.train.features import fit_feature_weights

CORPUS = ["我喜欢园艺和  徒步", "Gardening\n\nand HIKING", "园艺很好，徒步也好", "hiking is fun", "我喜欢猫",
          "猫和狗", "Fun fun FUN", "徒步 hiking 园艺"]


def test_char_ngrams_lowercase_and_collapse_whitespace() -> None:
    assert char_ngrams("Ab  c", 1, 2) == char_ngrams("ab c", 1, 2)
    assert char_ngrams("园艺", 1, 2) == {"园": 1, "艺": 1, "园艺": 1}


@pytest.mark.parametrize("ngram_range,max_features", [((1, 2), 10_000), ((1, 3), 10_000), ((2, 2), 10_000)])
def test_tfidf_equals_scikit_learn(ngram_range: tuple[int, int], max_features: int) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    ref = TfidfVectorizer(analyzer="char", ngram_range=ngram_range, sublinear_tf=True, min_df=2,
                          max_features=max_features)
    expected = ref.fit_transform(CORPUS).toarray()
    vocab = NgramVocabulary.fit(CORPUS, ngram_range, min_df=2, max_features=max_features)
    assert vocab.terms == list(ref.get_feature_names_out())
    assert vocab.idf == pytest.approx(ref.idf_, abs=1e-12)
    got = np.zeros_like(expected)
    for k, (cols, values) in enumerate(vocab.rows(CORPUS)):
        got[k, cols] = values
    assert got == pytest.approx(expected, abs=1e-12)


def test_max_features_keeps_the_most_frequent() -> None:
    vocab = NgramVocabulary.fit(CORPUS, (1, 1), min_df=2, max_features=3)
    counts = sum((char_ngrams(t, 1, 1) for t in CORPUS), start=Counter[str]())
    eligible = [t for t in counts if sum(t in char_ngrams(c, 1, 1) for c in CORPUS) >= 2]
    dropped = [t for t in eligible if t not in vocab.terms]
    assert len(vocab.terms) == 3 and min(counts[t] for t in vocab.terms) >= max(counts[t] for t in dropped)


def test_joint_fit_learns_a_marker_and_reloads(tmp_path: Path) -> None:
    import torch

    rng = np.random.default_rng(0)
    filler = ["今天天气", "我们讨论", "一些建议", "如下所示", "可以参考"]
    texts, pairs = [], []
    for k in range(30):
        base = "".join(rng.choice(filler, 3))
        texts += [base + "园艺", base + "猫咪"]  # the chosen answer always mentions gardening
        pairs.append((2 * k, 2 * k + 1))
    vocab = NgramVocabulary.fit(texts, (1, 2), min_df=2, max_features=1000)
    diff = pair_difference_matrix(vocab, texts, pairs)
    dense = torch.zeros((len(texts), 1))
    weights, info = fit_feature_weights(dense, pairs, l2=0.0, ngram_diff=diff, ngram_l2=1e-3)
    head = NgramHead(vocab, weights[1:])
    assert info["train_accuracy"] == 1.0 and "ngram_weight_norm" in info
    assert head.weights[vocab.index["园艺"]] > 0 > head.weights[vocab.index["猫咪"]]
    scores = head.score(texts)
    assert (scores[0::2] > scores[1::2]).all()
    head.save(tmp_path)
    again = NgramHead.load(tmp_path)
    assert again.score(texts) == pytest.approx(scores, abs=1e-12)
    assert head.top_terms(1)["up"][0][0] in ("园艺", "园", "艺")
