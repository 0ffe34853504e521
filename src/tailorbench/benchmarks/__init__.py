"""Benchmarks scored as their authors score them: the scoring rules (`scoring.py`, the `SCORERS` registry) of
PrefEval, PersonaMem and the generation checks of PrefEval. The layouts that read these benchmarks live in
`datasets/` (readers never call models); this package reads model answers, so it sits above `datasets/`."""
