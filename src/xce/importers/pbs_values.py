"""PBS's value encodings: sizes, durations, ctime strings, booleans, select statements,
``exec_vnode``/``exec_host``, ``depend`` lists and array index ranges.

Every function here is pure and raises :class:`ValueError` on a value it cannot read or
that is out of range; the caller locates the error (file, JSON path)."""

from __future__ import annotations

import calendar
import itertools
import math
import re
import time
from typing import Any

from xce.inputs import MAX_HOST_SLOTS

#: The largest amount a state file holds (xce.cluster.schema.MAX_NUMBER): a value above
#: it is refused here, at the input, so the error names the file PBS printed.
MAX_AMOUNT = 10**15

#: The largest array index a state file takes (xce.cluster.jobflow's bound; PBS's own
#: max_array_size is 10,000 by default).
MAX_INDEX = 4_000_000_000

_SIZE = re.compile(r"^(\d+)\s*([kmgtp]?)(b|w)?$", re.IGNORECASE)
_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION = re.compile(r"^\d+(?::\d+){0,2}(?:\.\d+)?$")
_CTIME = "%a %b %d %H:%M:%S %Y"
_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")


def mebibytes(value: Any) -> float:
    """A PBS size (``384000000kb``, ``514260mb``, ``8gb``, ``1024``: bytes) in MiB.

    Units are powers of 1024; ``w`` counts 8-byte words."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    match = _SIZE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"not a PBS size: {value!r}")
    number, power, unit = match.groups()
    word = 8 if (unit or "b").lower() == "w" else 1
    mib = float(int(number) * word * 1024 ** _POWER[power.lower()] / 1024**2)
    if mib > MAX_AMOUNT:
        raise ValueError(f"size {value!r} is beyond {MAX_AMOUNT:.0e} MiB")
    return mib


def seconds(value: Any) -> int:
    """A PBS duration (``01:30:00``, ``05:00``, ``3600``, ``00:00:10.5``) in seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_AMOUNT:
            raise ValueError(f"not a PBS duration: {value!r} (0 to {MAX_AMOUNT:.0e} seconds)")
        return value
    if not isinstance(value, str) or not _DURATION.match(value.strip()):
        raise ValueError(f"not a PBS duration: {value!r}")
    total = 0.0
    for part in value.strip().split(":"):
        total = total * 60 + float(part)
    if total > MAX_AMOUNT:
        raise ValueError(f"duration {value!r} is beyond {MAX_AMOUNT:.0e} seconds")
    return int(total)


def timestamp(value: Any) -> int:
    """A PBS time: a ctime string (``Thu Jun 19 21:27:51 2025``, read as UTC: the JSON
    says no zone) or Unix seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_AMOUNT:
            raise ValueError(f"not a PBS time: {value!r} (Unix seconds from 0)")
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a PBS time: {value!r}")
    try:
        return calendar.timegm(time.strptime(" ".join(value.split()), _CTIME))
    except ValueError:
        raise ValueError(f"not a PBS time: {value!r}") from None


def boolean(value: Any) -> bool | None:
    """PBS's booleans (JSON ``true`` or the strings ``True``/``False``), else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def count(value: Any, what: str, limit: int = MAX_AMOUNT) -> int:
    """A whole number from 0 to ``limit`` (a JSON integer or its digits as a string, as
    PBS prints both): CPUs, GPUs, priorities' magnitudes, limits. A negative, fractional,
    non-finite or boolean value is refused (it would become 0 slots, or fail the state
    file's loader far from the input)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: expected a count, got {value!r}")
    if not 0 <= value <= limit:
        raise ValueError(f"{what}: expected a count from 0 to {limit}, got {value}")
    return value


def integer(value: Any, what: str) -> int:
    """A whole number that may be negative (a job's ``Priority``, -1024 to 1023 in PBS)."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: expected a whole number, got {value!r}")
    if abs(value) > MAX_AMOUNT:
        raise ValueError(f"{what}: expected a number within ±{MAX_AMOUNT:.0e}, got {value}")
    return value


def chunks(select: Any) -> list[tuple[int, dict[str, str]]]:
    """A select statement as ``(count, {resource: value})`` chunks:
    ``2:ncpus=4:mem=8gb+1:ncpus=1`` -> ``[(2, {ncpus: 4, mem: 8gb}), (1, {ncpus: 1})]``;
    a bare count (``40``, as qstat prints a select of default chunks) is that many
    empty chunks."""
    if isinstance(select, int) and not isinstance(select, bool):
        select = str(select)
    if not isinstance(select, str) or not select.strip():
        raise ValueError(f"not a select statement: {select!r}")
    out = []
    for part in select.split("+"):
        items = [i.strip() for i in part.split(":")]
        number = int(items.pop(0)) if items[0].isdigit() else 1
        if number < 1:
            raise ValueError(f"chunk {part!r} of select {select!r}: a count of at least 1")
        spec: dict[str, str] = {}
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise ValueError(f"cannot read chunk {part!r} of select {select!r}")
            spec[name] = value
        out.append((number, spec))
    return out


def vnodes(exec_vnode: str) -> list[tuple[str, dict[str, str]]]:
    """``(vnode, {resource: value})`` of each piece of an ``exec_vnode``:
    ``(n1:ncpus=4:mem=8gb)+(n2:ncpus=2+n3:ncpus=2)``; a chunk may span vnodes."""
    out = []
    for piece in exec_vnode.replace("(", "").replace(")", "").split("+"):
        name, *items = piece.strip().split(":")
        if not name:
            raise ValueError(f"cannot read exec_vnode {exec_vnode!r}")
        spec = dict(i.partition("=")[::2] for i in items)
        out.append((name, spec))
    return out


def exec_hosts(exec_host: str) -> list[tuple[str, int]]:
    """``(host, cpus)`` of an ``exec_host``: ``n1/0*4+n2/0*4`` (``*N`` CPUs, default 1)."""
    out = []
    for piece in exec_host.split("+"):
        name, sep, rest = piece.strip().partition("/")
        _, star, cpus = rest.partition("*")
        if not name or not sep or (star and not cpus.isdigit()):
            raise ValueError(f"cannot read exec_host {exec_host!r}")
        out.append((name, count(int(cpus), "exec_host CPUs", MAX_HOST_SLOTS) if star else 1))
    return out


#: PBS dependency kinds written in the state file's (Slurm's) syntax as they are.
AFTER_KINDS = frozenset({"after", "afterok", "afternotok", "afterany"})
#: ``beforeX:B`` on job A is ``afterX:A`` on job B.
BEFORE_KINDS = {"before": "after", "beforeok": "afterok", "beforenotok": "afternotok",
                "beforeany": "afterany"}  # fmt: skip


def depend(text: Any) -> list[tuple[str, list[str]]]:
    """A ``depend`` attribute as ``(kind, [job id, ...])`` items, in order:
    ``afterok:12.srv:13.srv,on:2`` -> ``[(afterok, [12.srv, 13.srv]), (on, [2])]``. Ids
    keep their server (``12.srv@srv`` loses only the ``@srv`` routing part)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"not a PBS depend list: {text!r}")
    out = []
    for item in text.split(","):
        kind, *ids = (part.strip() for part in item.strip().split(":"))
        ids = [i.partition("@")[0] for i in ids]
        if not kind or not ids or not all(ids):
            raise ValueError(f"cannot read depend item {item.strip()!r} of {text!r}")
        out.append((kind, ids))
    return out


def index_ranges(text: Any) -> list[tuple[int, int, int]]:
    """An array's indices (``0-99``, ``2-1000``, ``1,3,5-9:2``) as ``(first, last,
    step)`` ranges, never expanded. ``-`` (none left) is no range. A ``%N`` suffix is
    the caller's (see :func:`concurrency`)."""
    if not isinstance(text, str):
        raise ValueError(f"not PBS array indices: {text!r}")
    body = text.strip().partition("%")[0]
    if body in ("", "-"):
        return []
    out = []
    for item in body.split(","):
        match = _RANGE.match(item.strip())
        if not match:
            raise ValueError(f"cannot read array indices {text!r} at {item.strip()!r}")
        first, last, step = int(match[1]), int(match[2] or match[1]), int(match[3] or 1)
        if last < first or step < 1:
            raise ValueError(f"array indices {text!r}: {item.strip()!r} is an empty range")
        if last > MAX_INDEX:
            raise ValueError(f"array indices {text!r}: beyond {MAX_INDEX}")
        out.append((first, last, step))
    out.sort()
    for (_, last, _), (first, _, _) in itertools.pairwise(out):
        if first <= last:
            raise ValueError(f"array indices {text!r}: ranges overlap")
    return out


def concurrency(text: Any) -> int | None:
    """The ``%N`` limit of ``array_indices_submitted`` (``0-99%5`` -> 5), else None."""
    if not isinstance(text, str) or "%" not in text:
        return None
    return count(text.partition("%")[2].strip(), "array %N limit") or None


def slurm_indices(ranges: list[tuple[int, int, int]]) -> str:
    """Ranges in the state file's (Slurm's) array syntax: ``1,3,5-9:2``."""

    def one(first: int, last: int, step: int) -> str:
        if first == last:
            return str(first)
        return f"{first}-{last}" + (f":{step}" if step > 1 else "")

    return ",".join(one(*r) for r in ranges)


def finite(value: Any) -> bool:
    """A number a state file can hold: finite, within ±MAX_AMOUNT."""
    return isinstance(value, (int, float)) and math.isfinite(value) and abs(value) <= MAX_AMOUNT
