"""The `tailor` command: a thin Typer layer over the Python API (one module per verb)."""
