"""The ground rules for the files tailorbench touches: the one door for every write and delete, and the one
reader of user files. Every name is importable from `tailorbench.files`; each module holds one concern.

Writing (the one door of every verb): every write, replacement and removal of a user-visible path goes through
this package, and a standing test (tests/test_one_door.py, an AST walk over the package) fails on any other.
An output is claimed before any work and without creating anything (`claim.py`: `claim_output`, `check_output`):
it is not one of the command's inputs, nor a folder holding one, nor the command's own state (a study folder, an
annotation database); it lies inside the folder the user named when a config names it (`within`); a non-empty
directory the command did not create (`MARKER`) is refused unless `--force` was given on the command line.
The `Output` it returns (`output.py`) is the only way to write under it: names are checked to stay inside it,
every file goes to a unique temporary sibling first and is renamed into place (`atomic.py`: `write_text_atomic`),
so an interrupted or failed run never leaves half a file where a good one was, with the permissions the user's
umask gives; every text written has the process's registered secrets masked (`redact.py`), a last guard behind
redaction at the sources.

Reading (`reading.py`, the one reader of user files: `load_json`, `load_yaml`, `parse_json`, `read_csv`, and
datasets/rows.py's `read_jsonl` for JSONL; tests/test_one_reader.py fails on any other YAML, JSON or CSV parse
of a file): a file read whole is bounded in size (`MAX_FILE_BYTES`, checked before reading), nesting is bounded
(`MAX_NESTING`) so a file 100,000 levels deep is an error message, never a RecursionError; YAML has no anchors,
aliases or repeated keys; CSV fields are bounded (`MAX_CSV_FIELD`) and text is UTF-8; the top level's type is
checked; every error is a DataError naming the file, the line and the field (docs/data.md, "Reading files").
"""

from __future__ import annotations

from tailorbench.files.atomic import (
    MARKER,
    appending,
    cut_torn_line,
    is_ours,
    make_scratch,
    remove_if_unused,
    remove_path,
    remove_tree,
    scratch,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from tailorbench.files.claim import (
    check_output,
    ensure_dir,
    only_names,
)
from tailorbench.files.output import (
    Output,
    as_output,
    claim_output,
)
from tailorbench.files.reading import (
    DUPLICATE_JSON_KEY,
    MAX_CSV_FIELD,
    MAX_FILE_BYTES,
    MAX_NESTING,
    check_nesting,
    duplicate_key,
    field_of,
    load_bytes,
    load_json,
    load_or_compute,
    load_yaml,
    parse_count,
    parse_csv,
    parse_json,
    read_csv,
    type_name,
    validation_message,
    whole_lines,
)

__all__ = [
    "DUPLICATE_JSON_KEY",
    "MARKER",
    "MAX_CSV_FIELD",
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "Output",
    "appending",
    "as_output",
    "check_nesting",
    "check_output",
    "claim_output",
    "cut_torn_line",
    "duplicate_key",
    "ensure_dir",
    "field_of",
    "is_ours",
    "load_bytes",
    "load_json",
    "load_or_compute",
    "load_yaml",
    "make_scratch",
    "only_names",
    "parse_count",
    "parse_csv",
    "parse_json",
    "read_csv",
    "remove_if_unused",
    "remove_path",
    "remove_tree",
    "scratch",
    "type_name",
    "validation_message",
    "whole_lines",
    "write_json_atomic",
    "write_jsonl_atomic",
    "write_text_atomic",
]
