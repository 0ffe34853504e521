"""Stage 1, extraction: a model turns a user's conversations into attributes (`extract.py`), humans accept,
find uncertain or reject each (read through `recentering_formats.py` or the annotation service, `annotation.py`),
rejected ones get an error category (`categorise.py`); `analysis.py` computes the stage-1 report and
`verifier.py` the intervention (a trained verifier and the verify-and-refine loop)."""
