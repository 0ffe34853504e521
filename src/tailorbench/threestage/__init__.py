"""Three-stage human-centered evaluation, after "Re-Centering Humans in LLM Personalization" (docs/stages.md).

One subpackage per stage of the paper — `extraction/` (stage 1: attributes from conversations), `relevance/`
(stage 2: which attributes matter for a new prompt), `incorporation/` (stage 3: answers that use them) — each with
its analysis, its model steps, its round trip through the annotation service, its intervention and its prompts
(`templates/*.jinja`). Shared below them: `recentering_formats.py` (the study's files), `statistics.py`,
`llm.py` (every model call); above them: `report.py` (every stage report) and `api.py` (the Python twins of the
`tailor stages` verbs).
"""
