"""Finished jobs of a scheduler's JSON job history, for runtime prediction.

:func:`read_json_history` tells the format by the document's shape and returns the jobs
that ran and ended, in the order the document lists them, as
:class:`~xce.predict.protocol.FinishedJob`. A job that never started, or has not ended,
is left out silently; anything malformed (not JSON, a value of the wrong type, a negative,
non-finite or too large number, a start after the end, an unknown shape) is an
:class:`~xce.errors.InputError` at the file and JSON path.

Slurm ``sacct --json`` (``{"jobs": [...]}``: 22.05's ``openapi/dbv0.0.38`` and
data_parser v0.0.39 to v0.0.4x; numbers bare, ``null`` for unset, or
``{"set", "infinite", "number"}`` objects). A job is kept when ``state.current`` (a name,
or from v0.0.40 a list of flags) says it ended and ``time.start`` and ``time.end`` are set
(a ``CANCELLED`` job whose start is its end and that has no ``steps`` was cancelled
while pending: ``sacct -T`` gives it its end as start):

- ``id``: ``job_id``; ``ARRAYJOB_TASK`` from ``array.job_id`` and ``array.task_id`` of
  an array task; ``LEADER+OFFSET`` from ``het.job_id`` and ``het.job_offset`` of a
  heterogeneous job's component (as sacct prints them).
- ``user``: ``user`` (else ``association.user``); ``name``: ``name``; ``queue``:
  ``partition``; ``tasks``: ``required.CPUs`` (else the ``cpu`` count of
  ``tres.allocated``).
- ``start``, ``end``, ``submit``: ``time.start``, ``time.end``, ``time.submission`` (Unix
  seconds). Slurm 22.05.0 to 22.05.7 printed the eligible time as ``time.start`` (fixed in
  22.05.8): when ``time.start`` is ``time.eligible`` and lies more than ``time.elapsed``
  + ``time.suspended`` before ``time.end``, the start is ``time.end`` less those.
- ``limit``: ``time.limit`` (minutes) * 60; None when unset, infinite or 0.

PBS ``qstat -x -f -F json`` (OpenPBS, PBS Pro: ``{"pbs_version", "pbs_server",
"Jobs": {id: job}}``). A job is kept when ``job_state`` is ``F`` (finished) or ``X`` (a
finished subjob) and it has an ``stime``; array records (``12[]``, ``array: True``) are
left out (their subjobs are the jobs that ran):

- ``id``: the job's key without the server (``1004.pbs`` -> ``1004``; a subjob
  ``12[3]``), as ``xce import pbs`` names it.
- ``user``: ``euser``, else ``Job_Owner`` before the ``@``; ``name``: ``Job_Name``;
  ``queue``: ``queue``; ``tasks``: ``Resource_List.ncpus``; ``limit``:
  ``Resource_List.walltime``.
- ``start``: ``stime``; ``end``: ``start`` + ``resources_used.walltime``, else
  ``obittime`` (else ``mtime``); ``submit``: ``qtime`` (else ``ctime``). Times are ctime
  strings (``Thu Jun 19 10:36:47 2025``) in the server's local time, read in ``timezone``,
  or Unix seconds.

LSF ``bjobs -a -json -o "..."`` (LSF 10.1: ``{"COMMAND": "bjobs", "JOBS": n,
"RECORDS": [{FIELD: "text"}]}``, field names case-blind, every value a string). A job is
kept when ``STAT`` is ``DONE``, ``EXIT``, ``POST_DONE`` or ``POST_ERR`` and it has a
``START_TIME`` and a ``FINISH_TIME`` or ``RUN_TIME`` (bjobs must be asked for ``jobid``,
``stat``, ``user``, ``start_time``, and ``finish_time`` or ``run_time``):

- ``id``: ``JOBID``; ``JOBID_INDEX`` of an array element (``JOBID`` ``12[3]``, or
  ``JOBINDEX`` above 0).
- ``user``: ``USER``; ``name``: ``JOB_NAME``; ``queue``: ``QUEUE``; ``tasks``:
  ``NREQ_SLOT``, else ``SLOTS``, else ``NALLOC_SLOT``; ``limit``: ``RUNTIMELIMIT``.
- ``start``: ``START_TIME``; ``end``: ``start`` + ``RUN_TIME`` (``"123 second(s)"``),
  else ``FINISH_TIME``; ``submit``: ``SUBMIT_TIME``. Dates (``Nov 12 10:02``,
  ``Jan  7 09:59 L``, ``2024/11/12-10:02:33``) are read in ``timezone``. A date without a
  year takes the latest year that puts it no later than a day after its reference:
  ``now`` for the finish time, the finish for the start, the start for the submit time.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any, TypeVar

from xce.errors import InputError, clip
from xce.importers import lsf_values, units
from xce.importers.documents import json_path, located, parse_json
from xce.importers.jobs import FINISHED as SLURM_FINISHED
from xce.importers.lsf_jobs import FINISHED as LSF_FINISHED
from xce.importers.pbs_jobs import job_ref
from xce.importers.pbs_values import boolean, count, seconds, timestamp
from xce.predict.protocol import FinishedJob
from xce.timefmt import zone as named_zone

__all__ = ["read_json_history"]

Path = tuple[str | int, ...]
T = TypeVar("T")

#: The largest number a time, limit or count may be (a state file's bound).
MAX_NUMBER = units.MAX_NUMBER

#: Slurm states of a job that ran and ended: the base states of an ended job, and the
#: flags 22.05/23.02 print instead of the base state of a run that ended (a requeued or
#: resized job's earlier record).
SLURM_ENDED = frozenset(
    SLURM_FINISHED | {"REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "RESIZING"}
)
#: PBS job states of a finished job (F) and a finished subjob (X).
PBS_ENDED = frozenset({"F", "X"})

_LSF_ID = re.compile(r"^(\d+)(?:\[(\d+)\])?$")
_RUN_TIME = re.compile(r"^(\d+(?:\.\d+)?)\s*(?:second\(s\)|seconds?|secs?|s)?$", re.IGNORECASE)

_EXPECTED = (
    'expected a job history: sacct --json (a "jobs" list), qstat -x -f -F json '
    '("Jobs") or bjobs -a -json ("RECORDS")'
)


def read_json_history(
    source: str, text: str, *, timezone: str | None = None, now: float | None = None
) -> list[FinishedJob]:
    """The finished jobs of a JSON history document from ``source`` (a file name, for
    errors): detects the format by its shape (see the module docstring).

    ``timezone`` (an IANA name, default UTC) is the zone PBS's and LSF's local times are
    read in; ``now`` (Unix seconds, default the clock) is when LSF printed the document:
    the reference for its dates without a year. InputError, located at the file and JSON
    path, for anything malformed; no finished job is an empty list."""
    zone = _zone(timezone)
    if now is not None and not (math.isfinite(now) and 0 <= now <= MAX_NUMBER):
        raise InputError(f"now: {now} is not a time in Unix seconds (0 to 1e15)")
    data = parse_json(source, text, strict=True)
    if not isinstance(data, dict):
        raise _fail(source, (), f"{_EXPECTED}; got {_kind(data)}")
    if "jobs" in data:
        return _slurm(source, data)
    if "Jobs" in data or "pbs_version" in data or "pbs_server" in data:
        return _pbs(source, data, zone)
    if "RECORDS" in data or "COMMAND" in data:
        return _lsf(source, data, zone, time.time() if now is None else now)
    raise _fail(source, (), f"{_EXPECTED}; got an object with keys {_keys(data)}")


# --- shared -----------------------------------------------------------------------------------


def _zone(name: str | None) -> tzinfo:
    try:
        return named_zone(name)
    except ValueError as err:
        raise InputError(f"timezone: {err}") from None


def _fail(source: str, path: Path, message: str) -> InputError:
    return InputError(message, source=source, path=json_path(path))


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: ``a list``, ``the string 'x'``, ``3``."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {clip(value)!r}"
    return "null" if value is None else clip(repr(value))


def _keys(data: Mapping[str, Any]) -> str:
    """The first keys of an object, for a message."""
    if not data:
        return "(none)"
    names = ", ".join(clip(k, 20) for k in list(data)[:5])
    return names + (", ..." if len(data) > 5 else "")


def _read(source: str, path: Path, read: Callable[[Any], T], value: Any) -> T:
    """``read(value)``, its ValueError an InputError at ``path``."""
    with located(source, json_path(path)):
        return read(value)


def _object(source: str, path: Path, value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(source, path, f"expected {what} (an object), got {_kind(value)}")
    return value


def _optional_object(source: str, path: Path, value: Any, what: str) -> dict[str, Any]:
    """An object, or an empty one for an absent (null) value."""
    return {} if value is None else _object(source, path, value, what)


def _text(source: str, path: Path, value: Any) -> str | None:
    """A name: a string, stripped; None when absent or empty."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(source, path, f"expected a string, got {_kind(value)}")
    return value.strip() or None


def _whole(source: str, path: Path, value: float | None, what: str) -> int | None:
    if value is None:
        return None
    if not float(value).is_integer():
        raise _fail(source, path, f"expected {what} (a whole number), got {value}")
    return int(value)


def _finished(
    source: str,
    path: Path,
    *,
    id: str,
    user: str,
    start: float,
    end: float,
    limit: float | None = None,
    name: str | None = None,
    queue: str | None = None,
    tasks: int | None = None,
    submit: float | None = None,
) -> FinishedJob:
    """The job, its times, limit and task count checked: finite, from 0 to MAX_NUMBER."""
    for what, value in (("start", start), ("end", end), ("limit", limit), ("submit", submit)):
        if value is not None and not (math.isfinite(value) and 0 <= value <= MAX_NUMBER):
            raise _fail(
                source, path, f"{what}: {value} is out of range (expected 0 to {MAX_NUMBER:.0e} s)"
            )
    if tasks is not None and not 0 <= tasks <= MAX_NUMBER:
        raise _fail(source, path, f"tasks: {tasks} is out of range (expected 0 to 1e15)")
    return FinishedJob(
        id=id,
        user=user,
        start=float(start),
        end=float(end),
        limit=None if limit is None else float(limit),
        name=name,
        queue=queue,
        tasks=tasks,
        submit=None if submit is None else float(submit),
    )


def _ends_before(source: str, path: Path, end: float, start: float, what: str) -> InputError:
    return _fail(
        source,
        path,
        f"{what} {end:.0f} is before the job's start {start:.0f}: expected the end at or "
        "after the start",
    )


# --- Slurm ------------------------------------------------------------------------------------


def _slurm(source: str, data: Mapping[str, Any]) -> list[FinishedJob]:
    jobs = data["jobs"]
    if not isinstance(jobs, list):
        raise _fail(source, ("jobs",), f"expected a list of jobs (sacct --json), got {_kind(jobs)}")
    out = []
    for i, job in enumerate(jobs):
        finished = _slurm_job(source, ("jobs", i), job)
        if finished is not None:
            out.append(finished)
    return out


def _slurm_job(source: str, path: Path, value: Any) -> FinishedJob | None:
    job = _object(source, path, value, "a job")
    if "time" not in job and ("job_state" in job or "start_time" in job):
        raise _fail(
            source,
            path,
            "a job of slurmctld (squeue or scontrol --json): a job history is sacct --json "
            "(the jobs of slurmdbd, with a time object)",
        )
    times = _object(source, (*path, "time"), job.get("time"), "sacct's time of the job")
    states = _slurm_states(source, path, job)
    if not states & SLURM_ENDED:
        return None
    start = _slurm_number(source, (*path, "time", "start"), times.get("start"))
    end = _slurm_number(source, (*path, "time", "end"), times.get("end"))
    if not start or not end:
        return None  # never started, or not ended
    if end < start:
        raise _ends_before(source, (*path, "time", "end"), end, start, "time.end")
    start = _slurm_start(source, path, times, start, end)
    if start == end and "CANCELLED" in states and not job.get("steps"):
        return None  # cancelled while pending (sacct -T gives it its end as start)
    return _finished(
        source,
        path,
        id=_slurm_id(source, path, job),
        user=_slurm_user(source, path, job),
        start=start,
        end=end,
        limit=_slurm_limit(source, (*path, "time", "limit"), times.get("limit")),
        name=_text(source, (*path, "name"), job.get("name")),
        queue=_text(source, (*path, "partition"), job.get("partition")),
        tasks=_slurm_cpus(source, path, job),
        submit=_slurm_number(source, (*path, "time", "submission"), times.get("submission")),
    )


def _slurm_number(source: str, path: Path, value: Any) -> float | None:
    """A Slurm number (bare, ``null``, or ``{"set", "infinite", "number"}``), None when
    unset, infinite or a sentinel."""
    return _read(source, path, units.number, value)


def _slurm_limit(source: str, path: Path, value: Any) -> float | None:
    """``time.limit``, minutes, in seconds; None when unset, infinite or 0."""
    minutes = _slurm_number(source, path, value)
    if not minutes:
        return None
    if minutes * 60 > MAX_NUMBER:
        raise _fail(source, path, f"a limit of {minutes:g} minutes is beyond {MAX_NUMBER:.0e} s")
    return minutes * 60


def _slurm_states(source: str, path: Path, job: Mapping[str, Any]) -> set[str]:
    """``state.current``: a state name (22.05, 23.02) or a list of flags (v0.0.40 on)."""
    at = (*path, "state", "current")
    state = _object(source, (*path, "state"), job.get("state"), "the job's state")
    current = state.get("current")
    if isinstance(current, str):
        return {current.strip().upper()}
    if isinstance(current, list) and all(isinstance(flag, str) for flag in current):
        return {flag.strip().upper() for flag in current}
    raise _fail(
        source, at, f"expected a state (COMPLETED) or a list of state flags, got {_kind(current)}"
    )


def _slurm_start(
    source: str, path: Path, times: Mapping[str, Any], start: float, end: float
) -> float:
    """``start``, or when it is the eligible time of 22.05.0-22.05.7's ``time.start``
    (later than the end less elapsed and suspended time), the end less those."""
    eligible = _slurm_number(source, (*path, "time", "eligible"), times.get("eligible"))
    elapsed = _slurm_number(source, (*path, "time", "elapsed"), times.get("elapsed"))
    suspended = _slurm_number(source, (*path, "time", "suspended"), times.get("suspended"))
    if eligible != start or elapsed is None:
        return start
    ran = elapsed + (suspended or 0)
    return end - ran if start < end - ran else start


def _slurm_id(source: str, path: Path, job: Mapping[str, Any]) -> str:
    number = _slurm_part(source, (*path, "job_id"), job.get("job_id"))
    if number is None:
        raise _fail(source, (*path, "job_id"), f"expected a job id, got {_kind(job.get('job_id'))}")
    array = _optional_object(source, (*path, "array"), job.get("array"), "the job's array")
    parent = _slurm_part(source, (*path, "array", "job_id"), array.get("job_id"))
    task = _slurm_part(source, (*path, "array", "task_id"), array.get("task_id"))
    if parent and task is not None:
        return f"{parent}_{task}"
    het = _optional_object(source, (*path, "het"), job.get("het"), "the job's het")
    leader = _slurm_part(source, (*path, "het", "job_id"), het.get("job_id"))
    offset = _slurm_part(source, (*path, "het", "job_offset"), het.get("job_offset"))
    if leader and offset is not None:
        return f"{leader}+{offset}"
    return str(number)


def _slurm_part(source: str, path: Path, value: Any) -> int | None:
    return _whole(source, path, _slurm_number(source, path, value), "an id")


def _slurm_user(source: str, path: Path, job: Mapping[str, Any]) -> str:
    user = _text(source, (*path, "user"), job.get("user"))
    if user is None:
        association = _optional_object(
            source, (*path, "association"), job.get("association"), "the job's association"
        )
        user = _text(source, (*path, "association", "user"), association.get("user"))
    if user is None:
        raise _fail(source, (*path, "user"), "expected the job's user name, got none")
    return user


def _slurm_cpus(source: str, path: Path, job: Mapping[str, Any]) -> int | None:
    """``required.CPUs``, else the ``cpu`` count of ``tres.allocated``."""
    required = _optional_object(
        source, (*path, "required"), job.get("required"), "the job's requirements"
    )
    at = (*path, "required", "CPUs")
    cpus = _whole(source, at, _slurm_number(source, at, required.get("CPUs")), "a CPU count")
    if cpus:
        return cpus
    tres = _optional_object(source, (*path, "tres"), job.get("tres"), "the job's TRES")
    allocated = tres.get("allocated")
    if not isinstance(allocated, list):
        return None
    for i, item in enumerate(allocated):
        if isinstance(item, dict) and item.get("type") == "cpu":
            at = (*path, "tres", "allocated", i, "count")
            return _whole(source, at, _slurm_number(source, at, item.get("count")), "a CPU count")
    return None


# --- PBS --------------------------------------------------------------------------------------


def _pbs(source: str, data: Mapping[str, Any], zone: tzinfo) -> list[FinishedJob]:
    jobs = data.get("Jobs")
    if jobs is None:
        return []  # qstat prints no "Jobs" when there are none
    if not isinstance(jobs, dict):
        raise _fail(source, ("Jobs",), f"expected the jobs keyed by id, got {_kind(jobs)}")
    server = data.get("pbs_server")
    out = []
    for name, job in jobs.items():
        finished = _pbs_job(source, ("Jobs", name), name, server, job, zone)
        if finished is not None:
            out.append(finished)
    return out


def _pbs_job(
    source: str, path: Path, name: str, server: Any, value: Any, zone: tzinfo
) -> FinishedJob | None:
    job = _object(source, path, value, "a job")
    state = job.get("job_state")
    if not isinstance(state, str):
        raise _fail(
            source,
            (*path, "job_state"),
            f"expected a state letter (F: finished), got {_kind(state)}",
        )
    if state.strip() not in PBS_ENDED or job.get("stime") is None:
        return None  # not finished, or deleted before it ran
    job_id = job_ref(name, server)
    if not job_id.strip():
        raise _fail(source, path, "an empty job id")
    if name.partition("@")[0].partition(".")[0].endswith("[]") or boolean(job.get("array")):
        return None  # an array record: its subjobs are the jobs that ran
    start = _pbs_time(source, (*path, "stime"), job["stime"], zone)
    field = "obittime" if job.get("obittime") is not None else "mtime"
    if job.get(field) is None:
        raise _fail(source, path, "a finished job without obittime or mtime: expected its end")
    ended = _pbs_time(source, (*path, field), job[field], zone)
    if ended < start:
        raise _ends_before(source, (*path, field), ended, start, field)
    used = _optional_object(
        source, (*path, "resources_used"), job.get("resources_used"), "the resources it used"
    )
    walltime = used.get("walltime")
    if walltime is not None:
        ended = start + _read(source, (*path, "resources_used", "walltime"), seconds, walltime)
    asked = _optional_object(
        source, (*path, "Resource_List"), job.get("Resource_List"), "the resources it asked for"
    )
    return _finished(
        source,
        path,
        id=job_id,
        user=_pbs_user(source, path, job),
        start=start,
        end=ended,
        limit=_pbs_limit(source, path, asked),
        name=_text(source, (*path, "Job_Name"), job.get("Job_Name")),
        queue=_text(source, (*path, "queue"), job.get("queue")),
        tasks=_pbs_cpus(source, path, asked),
        submit=_pbs_submit(source, path, job, zone),
    )


def _pbs_time(source: str, path: Path, value: Any, zone: tzinfo) -> float:
    """A PBS time: Unix seconds, or a ctime string of the server's wall clock in
    ``zone``."""
    moment = _read(source, path, timestamp, value)  # a ctime string is read as UTC
    if not isinstance(value, str) or zone is UTC:
        return float(moment)
    wall = datetime.fromtimestamp(moment, UTC).replace(tzinfo=zone)
    return wall.timestamp()


def _pbs_user(source: str, path: Path, job: Mapping[str, Any]) -> str:
    user = _text(source, (*path, "euser"), job.get("euser"))
    if user is None:
        owner = _text(source, (*path, "Job_Owner"), job.get("Job_Owner"))
        user = (owner or "").partition("@")[0].strip() or None
    if user is None:
        raise _fail(source, (*path, "Job_Owner"), "expected the job's owner (user@host), got none")
    return user


def _pbs_limit(source: str, path: Path, asked: Mapping[str, Any]) -> float | None:
    walltime = asked.get("walltime")
    if walltime is None:
        return None
    return _read(source, (*path, "Resource_List", "walltime"), seconds, walltime) or None


def _pbs_cpus(source: str, path: Path, asked: Mapping[str, Any]) -> int | None:
    ncpus = asked.get("ncpus")
    if ncpus is None:
        return None
    return _read(source, (*path, "Resource_List", "ncpus"), lambda v: count(v, "ncpus"), ncpus)


def _pbs_submit(source: str, path: Path, job: Mapping[str, Any], zone: tzinfo) -> float | None:
    for field in ("qtime", "ctime"):
        if job.get(field) is not None:
            return _pbs_time(source, (*path, field), job[field], zone)
    return None


# --- LSF --------------------------------------------------------------------------------------

_Record = dict[str, tuple[str, str]]
"""An LSF record: upper-cased field -> (the field as written, its text)."""


def _lsf(source: str, data: Mapping[str, Any], zone: tzinfo, now: float) -> list[FinishedJob]:
    command = data.get("COMMAND")
    if command != "bjobs":
        raise _fail(
            source,
            ("COMMAND",),
            f"expected the output of bjobs -a -json (COMMAND bjobs), got {_kind(command)}",
        )
    records = data.get("RECORDS", [])
    if not isinstance(records, list):
        raise _fail(source, ("RECORDS",), f"expected a list of records, got {_kind(records)}")
    out = []
    for i, value in enumerate(records):
        path: Path = ("RECORDS", i)
        finished = _lsf_job(source, path, _lsf_record(source, path, value), zone, now)
        if finished is not None:
            out.append(finished)
    return out


def _lsf_record(source: str, path: Path, value: Any) -> _Record:
    record = _object(source, path, value, "a bjobs record")
    out: _Record = {}
    for key, text in record.items():
        field = key.strip().upper()
        if field in out:
            raise _fail(source, (*path, key), f"field {clip(key)!r} given twice (case-blind)")
        if text is None:
            text = ""
        elif isinstance(text, int | float) and not isinstance(text, bool):
            text = str(text)  # LSF prints strings; a number is read as its text
        elif not isinstance(text, str):
            raise _fail(source, (*path, key), f"expected a string, got {_kind(text)}")
        out[field] = (key, text)
    return out


def _lsf_job(
    source: str, path: Path, record: _Record, zone: tzinfo, now: float
) -> FinishedJob | None:
    if "ERROR" in record:
        return None  # bjobs' "Job <n> is not found" record
    stat = _lsf_needed(source, path, record, "STAT").strip().upper()
    if stat not in LSF_FINISHED:
        return None
    times = _lsf_times(source, path, record, zone, now)
    if times is None:
        return None  # ended before it started (killed while pending)
    start, end = times
    user = _lsf_needed(source, path, record, "USER").strip()
    if lsf_values.blank(user):
        raise _fail(source, _lsf_at(path, record, "USER"), "expected the job's user, got none")
    limit = _lsf_read(source, path, record, "RUNTIMELIMIT", lsf_values.duration)
    return _finished(
        source,
        path,
        id=_lsf_id(source, path, record),
        user=user,
        start=start,
        end=end,
        limit=limit or None,
        name=_lsf_name(record, "JOB_NAME"),
        queue=_lsf_name(record, "QUEUE"),
        tasks=_lsf_slots(source, path, record),
        submit=_lsf_date(source, path, record, "SUBMIT_TIME", start, zone),
    )


def _lsf_times(
    source: str, path: Path, record: _Record, zone: tzinfo, now: float
) -> tuple[float, float] | None:
    """(start, end): ``START_TIME`` and ``START_TIME`` + ``RUN_TIME``, else
    ``FINISH_TIME``; None for a job that never started."""
    if lsf_values.blank(_lsf_needed(source, path, record, "START_TIME")):
        return None
    ran = _lsf_read(source, path, record, "RUN_TIME", _run_time)
    if ran is None and "FINISH_TIME" not in record:
        raise _fail(
            source,
            path,
            "no FINISH_TIME or RUN_TIME in the record: expected bjobs -o with finish_time "
            "or run_time",
        )
    end = _lsf_date(source, path, record, "FINISH_TIME", now, zone)
    start = _lsf_date(source, path, record, "START_TIME", now if end is None else end, zone)
    if start is None:
        return None  # (not reached: START_TIME is not blank)
    if end is not None and start > end:
        raise _ends_before(source, _lsf_at(path, record, "FINISH_TIME"), end, start, "FINISH_TIME")
    if ran is not None:
        return start, start + ran
    return None if end is None else (start, end)


def _lsf_at(path: Path, record: _Record, field: str) -> Path:
    return (*path, record[field][0]) if field in record else path


def _lsf_needed(source: str, path: Path, record: _Record, field: str) -> str:
    if field not in record:
        raise _fail(
            source, path, f"no {field} in the record: expected bjobs -o with {field.lower()}"
        )
    return record[field][1]


def _lsf_read(
    source: str, path: Path, record: _Record, field: str, read: Callable[[str], T]
) -> T | None:
    """``read`` of the field's text, None when the record lacks it."""
    if field not in record:
        return None
    return _read(source, _lsf_at(path, record, field), read, record[field][1])


def _lsf_date(
    source: str, path: Path, record: _Record, field: str, reference: float, zone: tzinfo
) -> float | None:
    """A date LSF printed; without a year, the latest year no later than a day after
    ``reference``."""
    return _lsf_read(
        source,
        path,
        record,
        field,
        lambda t: lsf_values.timestamp(t, reference, zone, past=True),
    )


def _lsf_name(record: _Record, field: str) -> str | None:
    text = record.get(field, ("", ""))[1].strip()
    return None if lsf_values.blank(text) else text


def _run_time(text: str) -> float | None:
    """``RUN_TIME``: ``"123 second(s)"`` (or a bare number of seconds); None when blank."""
    text = text.strip()
    if lsf_values.blank(text):
        return None
    match = _RUN_TIME.match(text)
    if not match:
        raise ValueError(f"not a run time: {clip(text)!r} (expected '123 second(s)')")
    value = float(match.group(1))
    if value > MAX_NUMBER:
        raise ValueError(f"run time {clip(text)!r} is beyond {MAX_NUMBER:.0e} seconds")
    return value


def _lsf_id(source: str, path: Path, record: _Record) -> str:
    text = _lsf_needed(source, path, record, "JOBID").strip()
    match = _LSF_ID.match(text)
    if not match:
        raise _fail(
            source,
            _lsf_at(path, record, "JOBID"),
            f"expected a job id (digits, or 12[3] for an array element), got {clip(text)!r}",
        )
    index = match.group(2) or _lsf_read(source, path, record, "JOBINDEX", _index)
    return f"{match.group(1)}_{index}" if index else match.group(1)


def _index(text: str) -> str | None:
    """``JOBINDEX``: an array element's index; 0 or blank for a job that is not one."""
    text = text.strip()
    if lsf_values.blank(text):
        return None
    if not text.isdigit():
        raise ValueError(f"expected an array index (digits), got {clip(text)!r}")
    return str(int(text)) if int(text) > 0 else None


def _lsf_slots(source: str, path: Path, record: _Record) -> int | None:
    for field in ("NREQ_SLOT", "SLOTS", "NALLOC_SLOT"):
        slots = _lsf_read(source, path, record, field, lsf_values.number)
        if slots is not None and not 0 <= slots <= MAX_NUMBER:
            raise _fail(
                source, _lsf_at(path, record, field), f"expected a slot count, got {slots:g}"
            )
        if slots:
            return _whole(source, _lsf_at(path, record, field), slots, "a slot count")
    return None
