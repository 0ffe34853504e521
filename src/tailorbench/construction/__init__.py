"""The benchmark construction pipeline: memory -> profile -> questions -> answers (A1 full persona, A2 masked,
A3 none) -> pairs -> export (PairCase JSONL + annotation project). See docs/build.md."""

STAGES: tuple[str, ...] = ("profile", "questions", "answers", "pairs", "export")
