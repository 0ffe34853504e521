"""The base of the Python API's typed results: `Output` (a verb's JSON object as typed attributes), `RunOutput`
(the results of a run directory, knowing where it lies) and `returning` (a verb's function returning its model).

A model of a printed object keeps its fields exactly (`extra="allow"`: fields a model does not declare are kept,
so `model_dump(mode="json")` equals the object) and declares the ones a caller reads most, typed. The files one
verb writes and another reads are the run log's models (`tailorbench.runlog`): strict, no undeclared key.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Output(BaseModel):
    """Base of every result: the JSON object as typed attributes; `to_dict()` is the object itself."""

    model_config = ConfigDict(extra="allow")

    def to_dict(self) -> dict[str, Any]:
        """The object's fields as read or made (defaults of fields it lacked are not added)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """The JSON text as the CLI's `--json` prints it."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


R = TypeVar("R", bound="RunOutput")
OutputT = TypeVar("OutputT", bound=Output)
P = ParamSpec("P")


def returning(model: type[OutputT]) -> Callable[[Callable[P, Any]], Callable[P, OutputT]]:
    """A verb's function whose JSON object (a dict) is returned as `model`: the typed twin of a function the CLI
    prints from (same arguments, same docstring)."""

    def wrap(fn: Callable[P, Any]) -> Callable[P, OutputT]:
        @functools.wraps(fn)
        def typed(*args: P.args, **kwargs: P.kwargs) -> OutputT:
            return model.model_validate(fn(*args, **kwargs))

        return typed

    return wrap


class RunOutput(Output):
    """results.json of a run directory; `run_dir` is where it lies (not a field of the file)."""

    _run_dir: Path | None = PrivateAttr(default=None)

    @property
    def run_dir(self) -> Path | None:
        return self._run_dir

    def located(self: R, run_dir: str | Path | None) -> R:
        """The same result, knowing its run directory."""
        self._run_dir = None if run_dir is None else Path(run_dir)
        return self
