"""The output rule of the one door (the `files` package): an output is claimed before any work and without
creating anything (`check_output`): not one of the command's inputs, nor a folder holding one, nor the command's
own state; inside the folder a config's owner names (`within`); a non-empty directory the command did not create
(`MARKER`) refused unless `--force` was given."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from tailorbench.errors import ConfigError
from tailorbench.files.atomic import CLAIMED, MARKER, is_ours, is_under, mark_claimed, resolve_path


def check_output(flag: str, path: str | Path, *, inputs: Iterable[str | Path | None] = (), directory: bool = False,
                 ours: Callable[[Path], bool] | None = None, force: bool = False, hint: str = "",
                 state: Iterable[str | Path | None] = (), within: str | Path | None = None) -> Path:
    """The output rule, checked before any work and without creating anything. `path` (named by `flag`) must
    not be one of the command's `inputs`, a file inside an input folder or a folder holding an input (a
    ConfigError naming both); never the command's own `state` (a study folder, an annotation database), a folder
    holding it or a path inside it (`force` changes nothing here); inside `within` when given (an output a config
    file names lies inside the folder of that config's owner). An existing file must be writable (and not a
    directory, unless `directory`); else the nearest existing ancestor must be a writable directory. An existing
    non-empty `directory` is refused unless the command made it (`MARKER`, or `ours(path)`: the verb's own
    earlier output) or `force` is given: its files are not the verb's to replace (`hint`: what else the user can
    do, e.g. "or --force to write into it anyway"; an output named in a config file passes no force). Returns
    the path."""
    target = Path(path).expanduser()
    resolved = resolve_path(target)
    if within is not None:
        _check_within(flag, target, resolved, within)
    _check_state(flag, target, resolved, state)
    _check_inputs(flag, target, resolved, inputs, directory)
    if target.exists() and _check_existing(flag, target, directory, ours, force, hint):
        return target
    _check_creatable(flag, target)
    if directory:
        CLAIMED.add(resolved)
    return target


def _check_within(flag: str, target: Path, resolved: Path, within: str | Path) -> None:
    """An output a config file names lies inside the folder of that config's owner."""
    folder = resolve_path(Path(within).expanduser())
    if not is_under(resolved, folder) or resolved == folder:
        raise ConfigError(f"{flag} {target} lies outside {within}: an output named here must be a folder "
                          f"or file inside it (a relative path)")


def _check_state(flag: str, target: Path, resolved: Path, state: Iterable[str | Path | None]) -> None:
    """Never the command's own state, a folder holding it or a path inside it."""
    for owned in state:
        if owned is None:
            continue
        kept = resolve_path(Path(owned).expanduser())
        if is_under(kept, resolved):
            raise ConfigError(f"{flag} {target} {'is' if kept == resolved else 'holds'} this command's own state "
                              f"{owned}: writing there would replace it; name a path inside it or elsewhere")
        if resolved != kept and is_under(resolved, kept) and not kept.is_dir():
            raise ConfigError(f"{flag} {target} is inside this command's own state {owned}")


def _check_inputs(flag: str, target: Path, resolved: Path, inputs: Iterable[str | Path | None],
                  directory: bool) -> None:
    """Not one of the inputs, a file inside an input folder or a folder holding an input."""
    for source in inputs:
        if source is None:
            continue
        given = resolve_path(Path(source).expanduser())
        if given == resolved or (given.is_dir() and target.is_file() and given in resolved.parents):
            raise ConfigError(f"{flag} {target} is {'also' if given == resolved else 'a file inside'} this "
                              f"command's input {source}: the output would overwrite it; write to another path")
        if directory and resolved in given.parents and not is_ours(target):
            raise ConfigError(f"{flag} {target} holds this command's input {source}: the output would replace "
                              f"files beside it; write to another path")


def _check_existing(flag: str, target: Path, directory: bool, ours: Callable[[Path], bool] | None, force: bool,
                    hint: str) -> bool:
    """An existing output: a file must be writable (True: nothing more to check); a non-empty directory must be
    the command's own, or `force` given."""
    if target.is_dir() != directory:
        raise ConfigError(f"{flag} {target} is {'a file' if directory else 'a directory'}, "
                          f"expected {'a directory' if directory else 'a file'}")
    if not directory:
        try:
            with target.open("ab"):
                pass
        except OSError as exc:
            raise ConfigError(f"{flag} {target} cannot be written: {exc.strerror or exc}") from None
        return True
    try:
        holds = any(target.iterdir())
    except OSError as exc:
        raise ConfigError(f"{flag} {target} cannot be read: {exc.strerror or exc}") from None
    if not force and holds and not is_ours(target) and not (ours is not None and ours(target)):
        raise ConfigError(f"{flag} {target} is a directory that already holds files this command did not "
                          f"write: give a new or empty directory{hint}")
    return False


def _check_creatable(flag: str, target: Path) -> None:
    """The nearest existing ancestor (or the folder itself) is a directory the process can write in."""
    probe = target if target.exists() else target.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag} {target} cannot be created: {probe} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {target} cannot be written: {probe}: {exc.strerror or exc}") from None
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {target} cannot be written: {probe} is not writable")


def ensure_dir(path: str | Path) -> Path:
    """Create a folder the command writes into (an output it claimed, or a folder inside one), marking a
    claimed output as the command's own."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    mark_claimed(folder)
    return folder


def only_names(patterns: Sequence[str], required: str) -> Callable[[Path], bool]:
    """An `ours` test of `check_output`: a directory holding `required` and nothing but files matching
    `patterns` (glob patterns of the names the verb writes; the marker aside) is the verb's earlier output."""

    def test(folder: Path) -> bool:
        entries = [e for e in folder.iterdir() if e.name != MARKER]
        return (folder / required).is_file() and all(
            entry.is_file() and any(entry.match(p) for p in patterns) for entry in entries)

    return test
