"""Stage 3, incorporation: a generic and a personalized answer per prompt (`generation.py`), rated per
attribute by humans (the annotation service's A/B task) and by LLM judges (`judge.py`); `analysis.py` computes the
stage-3 report (mean rating, share no better than generic, judge inflation, explicit mentions, correlations)."""
