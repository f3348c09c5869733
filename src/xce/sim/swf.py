"""Reading Standard Workload Format traces (``.swf``, ``.swf.gz``).

One job per line, 18 whitespace-separated numeric fields; ``;`` lines are comments, some
of them header fields (``; MaxProcs: 1024``). ``-1`` means unknown. Mapping (see
docs/simulation.md): tasks = requested processors (field 8), else allocated (field 5);
runtime = run time (field 4); requested time (field 9) is the walltime estimate; user
(12), group (13 → project), queue (15) and partition (16) ids become names; requested
memory (field 10, KB per processor) becomes ``rusage[mem=MB]`` when asked for.

What cannot be simulated is skipped and counted by reason (no processor count, no run
time). A malformed line is an :class:`~xce.errors.InputError` naming the file and line,
unless ``lenient`` (then it is skipped and counted too).
"""

from __future__ import annotations

import gzip
import io
import math
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from xce.errors import InputError
from xce.sim.model import SimJob

__all__ = ["SwfTrace", "read_swf"]

_FIELDS = 18
_HEADER_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "UnixStartTime", "TimeZoneString")


@dataclass(slots=True)
class SwfTrace:
    """A trace read for simulation: the header, the jobs, and what was skipped."""

    source: str
    header: dict[str, str] = field(default_factory=dict)
    jobs: list[SimJob] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    lines: int = 0  # job lines read (kept or skipped)

    def header_int(self, key: str) -> int | None:
        """A numeric header field (``MaxNodes``), or None when absent or not positive."""
        try:
            value = int(float(self.header[key].split()[0]))
        except (KeyError, ValueError, IndexError):
            return None
        return value if value > 0 else None


def _open(path: str) -> io.TextIOBase:
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _lines(path: str) -> Iterator[tuple[int, str]]:
    try:
        with _open(path) as f:
            yield from enumerate(f, start=1)
    except OSError as err:
        raise InputError(f"cannot read the trace: {err.strerror or err}", source=path) from err


def _name(prefix: str, value: float, unknown: str) -> str:
    return f"{prefix}{int(value)}" if value >= 0 else unknown


def read_swf(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    lenient: bool = False,
    memory: bool = False,
) -> SwfTrace:
    """Read a trace (the first ``limit`` job lines, if given).

    ``memory``: turn requested memory per processor into ``rusage[mem=MB]``.
    """
    source = os.fspath(path)
    trace = SwfTrace(source)
    last_submit = float("-inf")
    for number, raw in _lines(source):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            _header(trace, line)
            continue
        if limit is not None and trace.lines >= limit:
            break
        trace.lines += 1
        try:
            values = _fields(line)
            if values[1] < last_submit:
                raise ValueError(
                    f"submit time {values[1]:g} is before the previous job's ({last_submit:g})"
                )
        except ValueError as err:
            if lenient:
                trace.skipped["malformed line"] += 1
                continue
            raise InputError(str(err), source=source, line=number, text=line) from None
        last_submit = values[1]
        job = _job(values, memory)
        if isinstance(job, str):
            trace.skipped[job] += 1
        else:
            trace.jobs.append(job)
    return trace


def _header(trace: SwfTrace, line: str) -> None:
    body = line.lstrip(";").strip()
    key, sep, value = body.partition(":")
    if sep and key.strip() in _HEADER_KEYS:
        trace.header[key.strip()] = value.strip()


def _fields(line: str) -> list[float]:
    parts = line.split()
    if len(parts) != _FIELDS:
        raise ValueError(f"expected {_FIELDS} fields, got {len(parts)}")
    values = []
    for i, text in enumerate(parts, start=1):
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"field {i} is not a number: {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"field {i} is not a finite number: {text!r}")
        values.append(value)
    return values


def _job(v: list[float], memory: bool) -> SimJob | str:
    """The job of one line, or why it is skipped."""
    tasks = int(v[7]) if v[7] > 0 else int(v[4]) if v[4] > 0 else 0
    if tasks <= 0:
        return "no processor count"
    if v[3] < 0:
        return "no run time"
    resreq = ""
    if memory and v[9] > 0:
        resreq = f"rusage[mem={max(v[9] / 1024.0, 0.001):.6g}]"
    return SimJob(
        id=str(int(v[0])),
        submit=v[1],
        runtime=v[3],
        tasks=tasks,
        user=_name("u", v[11], "nobody"),
        queue=_name("q", v[14], "normal"),
        project=_name("g", v[12], "default"),
        resreq=resreq,
        requested_time=v[8] if v[8] > 0 else None,
        partition=_name("p", v[15], "") or None,
    )
