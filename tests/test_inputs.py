"""xce.inputs: user input files are regular files read within a size cap (issue 10)."""

from __future__ import annotations

import gzip
import os
import socket
from pathlib import Path

import pytest

from xce.cluster import load_state
from xce.errors import InputError, StateError
from xce.inputs import (
    MAX_STATE_BYTES,
    check_input_file,
    input_lines,
    open_input,
    read_input_text,
)


def _fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "s.yaml"
    os.mkfifo(path)
    return path


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """Issue 10 (Reading): a FIFO as state path was read without bound (it blocks
    waiting for a writer); it is refused as a FIFO before any read."""
    path = _fifo(tmp_path)
    with pytest.raises(InputError, match=r"is a FIFO \(named pipe\), not a regular file") as e:
        check_input_file(path)
    assert e.value.source == str(path)
    with pytest.raises(InputError, match="FIFO"):
        read_input_text(path)


def test_fifo_state_file_is_a_located_state_error(tmp_path: Path) -> None:
    """Issue 10 (Reading): ``xce schedule FIFO`` must be exit 2 (a StateError), not a hang."""
    path = _fifo(tmp_path)
    with pytest.raises(StateError, match="FIFO") as e:
        load_state(path)
    assert e.value.source == str(path)


@pytest.mark.parametrize(
    ("target", "kind"),
    [("/dev/zero", "a character device"), (".", "a directory")],
)
def test_special_files_are_refused(tmp_path: Path, target: str, kind: str) -> None:
    """Issue 10 (Reading): /dev/zero (endless) and a directory are not input files,
    also behind a symlink with a state-file suffix."""
    if not os.path.exists(target):
        pytest.skip(f"no {target} here")
    link = tmp_path / "s.json"
    link.symlink_to(os.path.abspath(target))
    with pytest.raises(InputError, match=f"is {kind}, not a regular file"):
        check_input_file(link)
    with pytest.raises(StateError, match=f"is {kind}, not a regular file"):
        load_state(link)


def test_socket_is_refused(tmp_path: Path) -> None:
    """Issue 10 (Reading): a socket is named as one."""
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
    except OSError:
        pytest.skip("cannot bind a unix socket here")
    try:
        with pytest.raises(InputError, match="is a socket, not a regular file"):
            read_input_text(path)
    finally:
        server.close()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the trace: No such file") as e:
        read_input_text(tmp_path / "gone.swf", what="trace")
    assert e.value.source == str(tmp_path / "gone.swf")


def test_file_larger_than_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    """Issue 10 (Reading): a large file is refused by its size, before it is read."""
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match=r"the file is 101 bytes, more than the limit of 100"):
        read_input_text(path, max_bytes=100)
    assert read_input_text(path, max_bytes=101) == "x" * 101


def test_file_that_grows_is_cut_at_the_cap(tmp_path: Path) -> None:
    """Issue 10 (Reading): the cap holds while reading too (a file may grow after its
    size was checked): the stream refuses the byte past the cap."""
    path = tmp_path / "grows.txt"
    path.write_bytes(b"abc")
    with open_input(path, max_bytes=5) as f:
        with open(path, "ab") as more:
            more.write(b"defgh")
        with pytest.raises(InputError, match="holds more than 5 bytes"):
            f.read()


def test_gzip_cap_applies_to_decompressed_bytes(tmp_path: Path) -> None:
    """Issue 10 (Huge numbers/Reading): a small .gz that inflates past the cap is refused."""
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(b"0" * 10_000))
    assert len(path.read_bytes()) < 1000
    with pytest.raises(InputError, match="holds more than 1000 bytes"):
        read_input_text(path, max_bytes=1000)
    assert read_input_text(path, max_bytes=10_000) == "0" * 10_000


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    """Issue 10 (Reading): a truncated .swf.gz gave a bare EOFError."""
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(b"1 0 0 10 4\n" * 1000)[:-20])
    with pytest.raises(InputError, match="the trace is truncated or not valid gzip") as e:
        list(input_lines(path, what="trace"))
    assert e.value.source == str(path)


def test_not_gzip_at_all(tmp_path: Path) -> None:
    path = tmp_path / "t.swf.gz"
    path.write_bytes(b"plain text\n")
    with pytest.raises(InputError, match="not valid gzip"):
        read_input_text(path)


def test_decoding_error_is_located(tmp_path: Path) -> None:
    """Issue 10 (Reading): bad UTF-8 names its line, column and byte offset."""
    path = tmp_path / "s.yaml"
    path.write_bytes(b"hosts: []\nn\xc3\xa9: \xff\n")
    with pytest.raises(InputError, match=r"not UTF-8 text: invalid start byte at byte 15") as e:
        read_input_text(path)
    assert (e.value.line, e.value.column) == (2, 5)


def test_input_lines_streams_and_locates(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_bytes(b"; header\n1 2 3\n4 \xff 6\n")
    lines = input_lines(path)
    assert next(lines) == (1, "; header\n")
    assert next(lines) == (2, "1 2 3\n")
    with pytest.raises(InputError, match="at byte 17") as e:
        next(lines)
    assert (e.value.line, e.value.column) == (3, 3)
    replaced = list(input_lines(path, errors="replace"))
    assert replaced[2] == (3, "4 \ufffd 6\n")


def test_input_lines_cap(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_bytes(b"1\n" * 10)
    assert len(list(input_lines(path, max_bytes=20))) == 10
    with pytest.raises(InputError, match="more than the limit of 19 bytes"):
        list(input_lines(path, max_bytes=19))


def test_state_file_cap_is_the_documented_one() -> None:
    """docs/state-file.md, Limits: a state file is at most 256 MiB."""
    assert MAX_STATE_BYTES == 256 * 1024**2
    doc = (Path(__file__).parents[1] / "docs" / "state-file.md").read_text()
    assert "256 MiB" in doc


def test_state_file_over_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 (Reading): a state file beyond the cap is a StateError naming the file."""
    import xce.cluster.load as load

    monkeypatch.setattr(load, "MAX_STATE_BYTES", 64)
    path = tmp_path / "s.json"
    path.write_text('{"hosts": [' + " " * 100 + "]}")
    with pytest.raises(StateError, match="more than the limit of 64 bytes") as e:
        load_state(path)
    assert e.value.source == str(path)


def test_gzip_input_closes_the_file_under_it(tmp_path: Path) -> None:
    """A .gz stream closes the file it reads (GzipFile alone leaves it open)."""
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(b"1\n"))
    f = open_input(path)
    raw = f._underlying
    assert raw is not None
    f.close()
    assert raw.closed
