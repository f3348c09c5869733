"""Reading Standard Workload Format traces (``.swf``, ``.swf.gz``).

One job per line, 18 whitespace-separated numeric fields; ``;`` lines are comments, some
of them header fields (``; MaxProcs: 1024``). ``-1`` means unknown. Mapping (see
docs/simulation.md): tasks = requested processors (field 8), else allocated (field 5);
runtime = run time (field 4); requested time (field 9) is the walltime estimate; user
(12), group (13 → project), queue (15) and partition (16) ids become names; requested
memory (field 10, KB per processor) becomes ``rusage[mem=MB]`` when asked for.

Feedback (issue 28, :mod:`xce.sim.flow`): field 17 is the preceding job's number (-1 or
0: none) and field 18 the think time in seconds (-1, unknown: 0); the replay submits such
a job think-time seconds after its preceding job ends. Field 11, the status, says whether
a job ended successfully: 1 completed and 3 (the last part of a job run in parts)
completed are successes, 0 failed, 4 (the last part) failed and 5 cancelled are failures;
2 (a part to be continued) and -1 (unknown) count as successes (``SimJob.failed``, read
by ``afterok`` and ``afternotok`` dependencies). A preceding job that is the job itself or
comes later in the trace is an error at field 17 (``lenient``: the field is ignored, and
counted).

What cannot be simulated is skipped and counted by reason (no processor count, no run
time). A malformed line is an :class:`~xce.errors.InputError` naming the file and line,
unless ``lenient`` (then it is skipped and counted too): not 18 fields, a field that is
not a finite number or is larger in magnitude than :data:`MAX_FIELD` (the state files'
limit), or a submit time before the previous one. A job id kept from an earlier line is
an error naming both lines (with ``lenient``, skipped and counted).

The file is read through :mod:`xce.inputs`: a regular file only (never a FIFO or a
device), at most :data:`MAX_TRACE_BYTES` (decompressed). A truncated or corrupt
``.gz`` is an error naming the line it broke off in, even with ``lenient``: it is not a
malformed line, and the rest of the trace is lost.
"""

from __future__ import annotations

import functools
import math
import os
import re
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from xce.errors import InputError, clip_around
from xce.inputs import open_input
from xce.sim.model import JobRecord, SimJob

__all__ = ["MAX_FIELD", "MAX_TRACE_BYTES", "SWF_NAME", "SwfTrace", "read_swf", "write_swf"]

MAX_TRACE_BYTES = 4 * 1024**3
"""A trace holds at most 4 GiB of text (decompressed): some 40 million job lines, more
than any trace of the Parallel Workloads Archive (the largest is under 1 GiB)."""

MAX_FIELD = 10**15
"""Every field of a job line is at most this in magnitude (as every number of a state
file): a processor count of 10^18 is malformed, not a job to try."""

_FIELDS = 18
_CHUNK = 1 << 13  # bytes read at a time: a failed read loses at most this much
_IGNORED = "preceding job not before it (field 17 ignored)"
_FAILED = (0.0, 4.0, 5.0)  # status (field 11): failed, last part failed, cancelled
_HEADER_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "UnixStartTime", "TimeZoneString")


@dataclass(slots=True)
class SwfTrace:
    """A trace read for simulation: the header, the jobs, and what was skipped."""

    source: str
    header: dict[str, str] = field(default_factory=dict)
    jobs: list[SimJob] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    lines: int = 0  # job lines read (kept or skipped)
    header_lines: dict[str, int] = field(default_factory=dict)  # key -> its line number
    # each kept job's recorded wait (field 3, seconds; -1: unknown), parallel to ``jobs``
    waits: array[float] = field(default_factory=lambda: array("d"))

    def header_int(self, key: str, *, limit: int | None = None) -> int | None:
        """A numeric header field (``MaxNodes``), or None when absent, not a finite
        number or not positive. Above ``limit`` it is an :class:`InputError` naming the
        file and the header's line."""
        try:
            number = float(self.header[key].split()[0])
        except (KeyError, ValueError, IndexError):
            return None
        if not (math.isfinite(number) and number >= 1):
            return None
        if limit is not None and number > limit:
            raise InputError(
                f"header {key} is {number:g}, more than {limit:,} (the limit)",
                source=self.source,
                line=self.header_lines.get(key),
                text=f"; {key}: {self.header[key]}",
            )
        return int(number)


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """The trace's lines, numbered. A read that fails mid-way (a truncated ``.gz``, the
    size cap) is an InputError at the first line not read whole, once every whole line
    before it has been given (a failed read gives nothing, so the break itself may lie
    a few kilobytes further on)."""
    with open_input(path, max_bytes=MAX_TRACE_BYTES, what="trace") as f:
        number = 0
        rest = b""
        while True:
            broken: InputError | None = None
            try:
                chunk = f.read(_CHUNK)
            except InputError as err:
                broken, chunk = err, b""
            *whole, rest = (rest + chunk).split(b"\n")
            for raw in whole:
                number += 1
                yield number, raw.decode("utf-8", "replace")
            if broken is not None:
                read = {0: "no line was", 1: "line 1 was"}.get(number, f"lines 1 to {number} were")
                raise InputError(
                    f"{broken.message} ({read} read whole)",
                    source=path,
                    line=number + 1,
                ) from None
            if not chunk:
                break
        if rest:
            yield number + 1, rest.decode("utf-8", "replace")


@functools.lru_cache(maxsize=1 << 16)
def _name(prefix: str, value: float, unknown: str) -> str:
    """A user, queue or group name: one string per name for the whole trace (a trace of
    100,000 jobs has a few hundred users; a string per job would be some 17 MB)."""
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
    seen: dict[str, int] = {}  # job id -> its line
    # a preceding job not read yet -> (index, line, text) of each job that named it
    named: dict[str, list[tuple[int, int, str]]] = {}
    for number, raw in _lines(source):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            _header(trace, line, number)
            continue
        if limit is not None and trace.lines >= limit:
            break
        trace.lines += 1
        try:
            values = _fields(line)
            if values[1] < last_submit:
                raise _Malformed(
                    f"submit time {values[1]:g} is before the previous job's ({last_submit:g})",
                    _field_column(line, 2),
                )
        except _Malformed as err:
            if lenient:
                trace.skipped["malformed line"] += 1
                continue
            raise InputError(
                str(err), source=source, line=number, column=err.column, text=line
            ) from None
        last_submit = values[1]
        job = _job(values, memory, source, number)
        if not isinstance(job, str):
            job = _preceding(job, line, number, trace, lenient)
        if isinstance(job, str):
            trace.skipped[job] += 1
        elif job.id in seen:
            if not lenient:
                raise InputError(
                    f"job id {job.id} was used on line {seen[job.id]} already",
                    source=source,
                    line=number,
                    column=_field_column(line, 1),
                    text=line,
                )
            trace.skipped["duplicate job id"] += 1
        else:
            _note_preceding(job, line, number, seen, named, trace, lenient)
            seen[job.id] = number
            trace.jobs.append(job)
            trace.waits.append(values[2])
    return trace


def _preceding(job: SimJob, line: str, number: int, trace: SwfTrace, lenient: bool) -> SimJob:
    """``job`` with its preceding job (field 17) checked: not the job itself (an error at
    the field; ``lenient``: the field ignored, and counted)."""
    if job.preceding != job.id:
        return job
    if lenient:
        trace.skipped[_IGNORED] += 1
        return replace(job, preceding=None, think=0.0)
    raise InputError(
        f"job {job.id}: its preceding job (field 17) is the job itself",
        source=trace.source,
        line=number,
        column=_field_column(line, 17),
        text=line,
    )


def _note_preceding(
    job: SimJob,
    line: str,
    number: int,
    seen: dict[str, int],
    named: dict[str, list[tuple[int, int, str]]],
    trace: SwfTrace,
    lenient: bool,
) -> None:
    """Before ``job`` (line ``number``) is kept: a job of an earlier line that named it as
    its preceding job is an error at that line's field 17 (a job follows one before it;
    ``lenient``: those fields ignored, and counted); ``job``'s own preceding job, if not
    read yet, is noted (by the index ``job`` gets)."""
    for index, earlier, text in named.pop(job.id, ()):
        if not lenient:
            raise InputError(
                f"the preceding job (field 17) is job {job.id}, which comes later "
                f"(line {number}): a job can only follow one before it",
                source=trace.source,
                line=earlier,
                column=_field_column(text, 17),
                text=text,
            )
        trace.skipped[_IGNORED] += 1
        trace.jobs[index] = replace(trace.jobs[index], preceding=None, think=0.0)
    if job.preceding is not None and job.preceding not in seen:
        named.setdefault(job.preceding, []).append((len(trace.jobs), number, line))


def _header(trace: SwfTrace, line: str, number: int) -> None:
    body = line.lstrip(";").strip()
    key, sep, value = body.partition(":")
    if sep and key.strip() in _HEADER_KEYS:
        trace.header[key.strip()] = value.strip()
        trace.header_lines[key.strip()] = number


def _field_column(line: str, field: int) -> int:
    """The 1-based column where field ``field`` (1-based) of a well-formed line starts."""
    return [m.start() + 1 for m in re.finditer(r"\S+", line)][field - 1]


class _Malformed(ValueError):
    """A malformed job line; ``column`` (1-based) is where, when one field is to blame."""

    def __init__(self, message: str, column: int | None = None) -> None:
        super().__init__(message)
        self.column = column


def _fields(line: str) -> list[float]:
    """The 18 numbers of a job line; :class:`_Malformed` (located at the field to
    blame) unless each is a finite number at most :data:`MAX_FIELD` in magnitude."""
    parts = line.split()
    if len(parts) == _FIELDS:
        try:
            values = [float(text) for text in parts]
        except ValueError:
            pass
        else:
            total = sum(values)  # nan if any is: the largest magnitude can miss a nan
            if max(map(abs, values)) <= MAX_FIELD and total == total:
                return values
    raise _malformed(line)


def _malformed(line: str) -> _Malformed:
    """What is wrong with a job line that is not 18 good numbers (the slow path)."""
    parts = [(m.start() + 1, m.group()) for m in re.finditer(r"\S+", line)]
    if len(parts) != _FIELDS:
        return _Malformed(f"expected {_FIELDS} fields, got {len(parts)}")
    for i, (column, text) in enumerate(parts, start=1):
        shown = clip_around(text, 0)[0]
        try:
            value = float(text)
        except ValueError:
            return _Malformed(f"field {i} is not a number: {shown!r}", column)
        if not math.isfinite(value):
            return _Malformed(f"field {i} is not a finite number: {shown!r}", column)
        if abs(value) > MAX_FIELD:
            return _Malformed(
                f"field {i} is {shown}, more than {MAX_FIELD:.0e} (the limit)", column
            )
    raise AssertionError(f"a well-formed line was refused: {line!r}")


def _job(v: list[float], memory: bool, source: str, line: int) -> SimJob | str:
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
        failed=v[10] in _FAILED,
        preceding=str(int(v[16])) if v[16] > 0 else None,
        think=max(v[17], 0.0) if v[16] > 0 else 0.0,
        source=source,
        line=line,
    )


# -- writing: the replayed schedule as SWF (issue 14) -------------------------------------

SWF_NAME = "schedule.swf"


def _kept(name: str, prefix: str) -> int | None:
    """The SWF number a name this reader made keeps (``u3`` is 3), else None."""
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        return int(name[len(prefix) :])
    return None


def _number_of(name: str, prefix: str, numbers: dict[str, int], after: int = 0) -> int:
    """The SWF number of a name this reader made (``u3`` is 3), else a number of its
    own, counted from ``after + 1`` in order of first appearance (and said in the
    header); ``after``: the highest number a kept name has, so none is taken twice."""
    kept = _kept(name, prefix)
    if kept is not None:
        return kept
    if name not in numbers:
        numbers[name] = after + len(numbers) + 1
    return numbers[name]


def write_swf(records: Sequence[JobRecord], path: Path, total_slots: int, workload: str) -> None:
    """The replayed schedule in the Standard Workload Format (version 2.2): one line per
    job in workload order, with the wait (field 3) and run time (4) of the replay and
    status 1; a job that never ran has wait and run time -1 and status 0. A job fed back
    from a preceding job keeps fields 17 and 18 (its submit time is the replay's). Ids, users,
    groups, queues and partitions read from an SWF trace keep their numbers; other
    names are numbered in a header note. Times are whole seconds when they are whole."""
    numbers: dict[str, dict[str, int]] = {"u": {}, "g": {}, "q": {}, "p": {}, "id": {}}
    top = _highest_kept(records)
    lines = []
    for r in records:
        job = r.job
        ran = r.start is not None and r.end is not None
        jid = _job_number(job.id, numbers["id"], top["id"])
        fields = [
            jid,
            job.submit,
            r.wait if ran and r.wait is not None else -1,
            r.ran if ran and r.ran is not None else -1,
            r.slots if ran else -1,
            -1,
            -1,
            job.tasks or r.slots or -1,
            job.requested_time if job.requested_time is not None else -1,
            -1,
            1 if ran else 0,
            _number_of(job.user, "u", numbers["u"], top["u"]),
            _number_of(job.project, "g", numbers["g"], top["g"]),
            -1,
            _number_of(job.queue, "q", numbers["q"], top["q"]),
            _number_of(job.partition, "p", numbers["p"], top["p"]) if job.partition else -1,
            _job_number(job.preceding, numbers["id"], top["id"])
            if job.preceding is not None
            else -1,
            job.think if job.preceding is not None else -1,
        ]
        lines.append(" ".join(_swf_number(f) for f in fields))
    header = [
        "; Version: 2.2",
        f"; Computer: the xce replay of {workload}",
        f"; MaxProcs: {total_slots}",
        "; Note: fields 3 (wait) and 4 (run time) are the replay's; status 1 ran, 0 never",
    ]
    for kind, what in (
        ("id", "job"),
        ("u", "user"),
        ("g", "group"),
        ("q", "queue"),
        ("p", "partition"),
    ):
        for name, number in numbers[kind].items():
            shown = name.replace("\n", " ")
            header.append(f"; Note: {what} {number} is {shown!r}")
    path.write_text("\n".join(header + lines) + "\n", encoding="utf-8")


def _job_number(job_id: str, numbers: dict[str, int], after: int = 0) -> int:
    """A job's SWF number: its id when that is a number, else one of its own (after
    every numeric id)."""
    return int(job_id) if job_id.isdigit() else _number_of(job_id, "\0", numbers, after)


def _highest_kept(records: Sequence[JobRecord]) -> dict[str, int]:
    """Per kind, the highest number a kept name has (0: none): ids, users, groups,
    queues, partitions."""
    top = dict.fromkeys(("id", "u", "g", "q", "p"), 0)
    for r in records:
        job = r.job
        for kind, name in (
            ("u", job.user),
            ("g", job.project),
            ("q", job.queue),
            ("p", job.partition or ""),
        ):
            kept = _kept(name, kind)
            if kept is not None:
                top[kind] = max(top[kind], kept)
        if job.id.isdigit():
            top["id"] = max(top["id"], int(job.id))
    return top


def _swf_number(value: float) -> str:
    """A field: a whole number as one, else exactly (times are seconds)."""
    v = float(value)
    return str(int(v)) if v.is_integer() else repr(v)
