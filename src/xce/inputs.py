"""Reading the files a user names, with bounds: never a FIFO, a device or a directory,
never more than a size cap, and every problem an :class:`~xce.errors.InputError` naming
the file (decoding errors also the line, column and byte offset).

Why: ``/dev/zero`` or a FIFO given as a state file used to be read forever, and a 50 MB
file with one line was read whole; a truncated ``.gz`` raised a bare EOFError. Every
reader of user input (state files, traces, jobs files) goes through here.

- :func:`check_input_file` — the path names an existing regular file (symlinks followed).
- :func:`read_input_text` — the whole file as UTF-8 text, at most ``max_bytes``.
- :func:`open_input` — a binary stream that refuses to go beyond ``max_bytes``
  (decompressed, for ``.gz``), for readers that stream.
- :func:`input_lines` — ``(line number, text)`` pairs from :func:`open_input`.

The cap is checked twice: against the file's size before anything is read, and while
reading (a file can grow, and a ``.gz`` file's size says little about its content).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from collections.abc import Iterator
from typing import Literal

from xce.errors import InputError

__all__ = [
    "MAX_DEPTH",
    "MAX_HOST_SLOTS",
    "MAX_INPUT_BYTES",
    "MAX_STATE_BYTES",
    "MAX_TASKS",
    "BoundedInput",
    "check_input_file",
    "input_lines",
    "open_input",
    "read_input_text",
]

MAX_DEPTH = 100
"""Input nests at most this deep: mappings and lists in a state file (the root mapping is
level 1; a valid state needs 5), and a requirement's select expression (each operator,
``!``/``-`` and parenthesis is a level). Deeper is refused, located, before anything
recursive (parsers, checks, evaluation) sees it."""

MAX_TASKS = 2**53 - 1
"""A job asks for at most this many tasks (``tasks``, ``min_tasks``, ``max_tasks``, a
compound requirement's total, its ``n*{...}`` multipliers, ``span[ptile=n]``). A job asking
more than its cluster holds simply pends, at once and in constant memory (a job of 10**10
tasks is a repro of issue 9); the limit is the largest integer a float64 holds exactly, so
task counts stay exact wherever the engine compares them with amounts."""

MAX_HOST_SLOTS = 10**6
"""A host has at most this many slots (a running job at most as many on one host)."""

MAX_STATE_BYTES = 256 * 1024**2
"""A state file is at most 256 MiB (a YAML state of 20,000 hosts and 50,000 jobs is about
15 MiB). A YAML state is read entry by entry (xce.cluster.yaml_stream), in about 16 times
its size at the peak: a 50 MiB one, valid or bad on its last line, within 1 GB."""

MAX_INPUT_BYTES = MAX_STATE_BYTES
"""The default cap of every reader here; a caller reading larger inputs (traces) passes
its own ``max_bytes``."""

_CHUNK = 1 << 20


def check_input_file(path: str | os.PathLike[str], *, what: str = "file") -> None:
    """Raise InputError unless ``path`` names an existing regular file (after symlinks).

    A directory, FIFO, socket or device (``/dev/zero``) is refused by what it is, without
    opening it (opening a FIFO would wait for a writer); an empty name is said to be one
    (``--workload ''``: no error message could show the file otherwise)."""
    source = os.fspath(path)
    if not source:
        raise InputError(f"the {what} is named '' (an empty name)")
    try:
        mode = os.stat(source).st_mode
    except OSError as err:
        raise _os_error(err, source, what) from err
    _check_mode(mode, source, what)


def open_input(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_INPUT_BYTES,
    compressed: bool | None = None,
    what: str = "file",
) -> BoundedInput:
    """Open a regular file for reading bytes, at most ``max_bytes`` of them.

    ``compressed``: read it through gzip (None: when the name ends in ``.gz``); the cap
    then applies to the decompressed bytes, and a truncated or corrupt file is an
    InputError. Reading beyond the cap raises InputError. Close it (it is a context
    manager)."""
    source = os.fspath(path)
    raw = _open_regular(source, max_bytes, what)
    if compressed is None:
        compressed = source.endswith(".gz")
    if not compressed:
        return BoundedInput(raw, source, max_bytes, what)
    return BoundedInput(gzip.GzipFile(fileobj=raw, mode="rb"), source, max_bytes, what, raw)


def read_input_text(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_INPUT_BYTES,
    compressed: bool | None = None,
    what: str = "file",
) -> str:
    """The whole file as UTF-8 text (at most ``max_bytes``); InputError for anything
    else, a decoding error located at its line, column and byte offset."""
    with open_input(path, max_bytes=max_bytes, compressed=compressed, what=what) as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _decode_error(err, data, os.fspath(path), what) from None


def input_lines(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_INPUT_BYTES,
    compressed: bool | None = None,
    errors: Literal["strict", "replace"] = "strict",
    what: str = "file",
) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each line (1-based, the newline kept), read lazily.

    ``errors="replace"`` decodes bad UTF-8 as U+FFFD; ``"strict"`` raises a located
    InputError. The file is closed when the iteration ends or is abandoned."""
    source = os.fspath(path)
    offset = 0
    with open_input(source, max_bytes=max_bytes, compressed=compressed, what=what) as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8", errors)
            except UnicodeDecodeError as err:
                raise _decode_error(err, raw, source, what, number, offset) from None
            offset += len(raw)


class BoundedInput(io.RawIOBase):
    """A readable binary stream that raises InputError instead of reading past a cap,
    and turns every read failure (I/O, truncated or corrupt gzip) into InputError."""

    def __init__(
        self,
        stream: io.BufferedIOBase,
        source: str,
        max_bytes: int,
        what: str,
        underlying: io.BufferedIOBase | None = None,
    ) -> None:
        super().__init__()
        self._stream = stream
        self._underlying = underlying  # the file under a GzipFile (which leaves it open)
        self._source = source
        self._max = max_bytes
        self._what = what
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        room = self._max + 1 - self.bytes_read  # one byte more tells "beyond the cap"
        want = min(len(view), room, _CHUNK)
        if want <= 0:
            raise self._too_large()
        try:
            n = self._stream.readinto(view[:want])
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:
            raise InputError(
                f"the {self._what} is truncated or not valid gzip: {err}", source=self._source
            ) from None
        except OSError as err:
            raise _os_error(err, self._source, self._what) from err
        self.bytes_read += n
        if self.bytes_read > self._max:
            raise self._too_large()
        return n

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            return super().read(size) or b""
        chunks = []
        while chunk := super().read(_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)

    def readall(self) -> bytes:
        return self.read()

    def __iter__(self) -> Iterator[bytes]:
        buffered = io.BufferedReader(self, _CHUNK)
        return iter(buffered.readline, b"")

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
                if self._underlying is not None:
                    self._underlying.close()
            finally:
                super().close()

    def _too_large(self) -> InputError:
        return InputError(
            f"the {self._what} holds more than {_size(self._max)} (the limit)",
            source=self._source,
        )


# -- helpers ---------------------------------------------------------------------------------


def _open_regular(source: str, max_bytes: int, what: str) -> io.BufferedReader:
    """Check what ``source`` is, open it without blocking (a FIFO would), and check again
    what was opened (the path may have changed in between)."""
    check_input_file(source, what=what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(source, flags)
    except OSError as err:
        raise _os_error(err, source, what) from err
    try:
        info = os.fstat(fd)
        _check_mode(info.st_mode, source, what)
        if info.st_size > max_bytes:
            raise InputError(
                f"the {what} is {_size(info.st_size)}, more than the limit of {_size(max_bytes)}",
                source=source,
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _check_mode(mode: int, source: str, what: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise InputError(f"the {what} is {kind}, not a regular file", source=source)


def _os_error(err: OSError, source: str, what: str) -> InputError:
    return InputError(f"cannot read the {what}: {err.strerror or err}", source=source)


def _decode_error(
    err: UnicodeDecodeError, data: bytes, source: str, what: str, first: int = 1, offset: int = 0
) -> InputError:
    """Where a UTF-8 error is: line, column (in characters) and byte offset; ``data`` is
    the file's text from line ``first``, byte ``offset`` on."""
    start = data.rfind(b"\n", 0, err.start) + 1
    end = data.find(b"\n", err.start)
    line_bytes = data[start : end if end >= 0 else len(data)]
    column = len(data[start : err.start].decode("utf-8", "replace")) + 1
    return InputError(
        f"the {what} is not UTF-8 text: {err.reason} at byte {offset + err.start}",
        source=source,
        line=first + data.count(b"\n", 0, err.start),
        column=column,
        text=line_bytes.decode("utf-8", "replace").rstrip("\r"),
    )


def _size(n: int) -> str:
    """``256 MiB``, ``1.5 KiB``, ``12 bytes``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"
