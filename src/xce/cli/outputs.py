"""What the ``xce`` commands write and print: output paths and names shown to a terminal.

Every file a command writes goes through here, so that three promises hold in one place:

* an output never lands on an input: paths are compared as files (``./S``, symlinks and
  hard links name the same file), and no ``--force`` changes that;
* a file that already exists is replaced only with ``--force``;
* a file is written to a temporary file beside it and renamed over the target
  (``os.replace``), so nobody ever sees half of it, and a failed write (a full disk)
  leaves neither a half file nor the temporary one behind.

The ``check_*`` functions run before a command's long work, so a bad output path is a
usage error (exit 2, naming the option and the path) before anything is computed.
Messages quote paths as given; ``guarded`` (conventions.py) makes control characters in
any message visible.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from xce.errors import InputError, InternalError

__all__ = [
    "Inputs",
    "check_dir",
    "check_file",
    "output_path",
    "plain",
    "same_file",
    "shown",
    "write_dir",
    "write_file",
]

Inputs = Sequence[tuple[str, Path]]
"""The command's input files, each with the option (or argument) that named it."""

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: str) -> str:
    """``text`` with every control character made visible (``\\x1b``, ``\\u202e``), so a
    name or message cannot move the cursor, recolour or retitle the terminal. Newlines
    and tabs stay: messages use them for their caret lines."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def shown(text: object) -> str:
    """A user-supplied name made safe to print through Rich: control characters made
    visible, then ``[`` escaped so that the name is never read as markup."""
    from rich.markup import escape

    return escape(plain(str(text)))


def output_path(text: str, option: str) -> Path:
    """The path an output option names; an empty one is refused (``Path('')`` would be
    the current directory)."""
    if not text.strip():
        raise InputError(f"{option}: an empty path")
    return Path(text)


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (also through links); a path that does not
    exist is compared by its resolved name."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling symlink is a user's file too


def _refuse_inputs(path: Path, option: str, inputs: Inputs) -> None:
    for name, given in inputs:
        if same_file(path, given):
            raise InputError(
                f"{option} {path} is the input {name} ({given}): xce never writes over an input"
            )


def _check_writable(directory: Path, option: str, path: Path) -> None:
    """Create and remove a file in ``directory``: the one test that also sees read-only
    mounts and (for root) what permission bits do not say."""
    if not directory.is_dir():
        what = "does not exist" if not _exists(directory) else "is not a directory"
        raise InputError(f"{option} {path}: the directory {directory} {what}")
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".xce-probe-")
    except OSError as err:
        raise InputError(
            f"{option} {path}: cannot write in {directory}: {err.strerror or err}"
        ) from None
    os.close(fd)
    os.unlink(probe)


def check_file(path: Path, option: str, inputs: Inputs, *, force: bool) -> None:
    """Before the work: ``path`` may receive a file. Refused: an input, a directory, an
    existing file without ``force``, a missing or unwritable directory."""
    _refuse_inputs(path, option, inputs)
    if path.is_dir():
        raise InputError(f"{option} {path} is a directory: expected a file name")
    if _exists(path) and not force:
        raise InputError(f"{option} {path} already exists: pass --force to replace it")
    _check_writable(path.parent, option, path)


def check_dir(
    path: Path, option: str, names: Collection[str], inputs: Inputs, *, force: bool
) -> None:
    """Before the work: ``path`` may receive the files ``names`` (created if missing,
    in an existing directory). Nothing else in it is ever touched; a file of these names
    already there is replaced only with ``force``, never when it is an input."""
    if _exists(path) and not path.is_dir():
        raise InputError(f"{option} {path} is a file: expected a directory")
    targets = [path / name for name in names]
    for target in targets:
        _refuse_inputs(target, option, inputs)
    if not path.is_dir():
        _check_writable(path.parent, option, path)
        return
    for target in targets:
        if target.is_dir():
            raise InputError(f"{option} {target} is a directory: xce writes a file there")
    there = [t.name for t in targets if _exists(t)]
    if there and not force:
        raise InputError(
            f"{option} {path} already holds {', '.join(there)}: pass --force to "
            f"replace them (xce writes only {', '.join(names)})"
        )
    _check_writable(path, option, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(temp: Path, target: Path, option: str, force: bool) -> None:
    """Rename a written, synced ``temp`` over ``target``; re-checks, as the file system
    may have changed during the work."""
    if _exists(target) and not force:
        raise InputError(f"{option} {target} appeared during the run: pass --force to replace it")
    os.chmod(temp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the output from others
    with open(temp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(temp, target)


def _failed(option: str, path: Path, err: OSError) -> InputError:
    return InputError(f"{option}: cannot write {path}: {err.strerror or err}")


def write_file(path: Path, option: str, write: Callable[[Path], None], *, force: bool) -> None:
    """Write ``path`` whole or not at all: ``write`` fills a temporary file beside it
    (with the same suffix, so writers that choose a format by suffix still do), which
    then replaces ``path``. An OSError is an InputError naming ``option``; the temporary
    file is removed whatever happens."""
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    except OSError as err:
        raise _failed(option, path, err) from None
    os.close(fd)
    temp = Path(name)
    try:
        write(temp)
        _publish(temp, path, option, force)
    except OSError as err:
        raise _failed(option, path, err) from None
    finally:
        temp.unlink(missing_ok=True)


def write_dir(
    path: Path,
    option: str,
    names: Collection[str],
    write: Callable[[Path], None],
    *,
    force: bool,
) -> list[Path]:
    """Write files into the directory ``path`` (created if missing): ``write`` fills a
    fresh staging directory inside it, whose files then replace their namesakes one by
    one, each whole. ``write`` must make only files named in ``names`` (anything else is
    a bug: InternalError). Returns the paths written."""
    try:
        path.mkdir(exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=path, prefix=".xce-out-"))
    except OSError as err:
        raise _failed(option, path, err) from None
    try:
        write(staging)
        order = {name: i for i, name in enumerate(names)}
        made = sorted(staging.iterdir(), key=lambda p: (order.get(p.name, len(order)), p.name))
        unknown = [p.name for p in made if p.name not in names]
        if unknown:
            raise InternalError(f"{option}: xce wrote undeclared output files {unknown}")
        written = []
        for temp in made:
            _publish(temp, path / temp.name, option, force)
            written.append(path / temp.name)
        return written
    except OSError as err:
        raise _failed(option, path, err) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
