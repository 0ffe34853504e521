"""The evaluation runner (cases x settings x orders -> predictions), its metrics and reports."""
