"""Stage 2, relevance: humans and judges mark which of a user's attributes matter for a new prompt.
`analysis.py` computes the stage-2 report (kappas, F1 against the strict human majority); the raters to compare:
LLM votes (`judge.py`), BM25 and embedding baselines (`retrieval_baselines.py`), the annotation service
(`annotation.py`); `classifier.py` is the intervention (a relevance classifier trained on human labels)."""
