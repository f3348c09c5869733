"""What a pending Slurm job waits on besides resources, in the state file's terms:
priority, holds, begin times, dependencies, job arrays, and Slurm's expected start.

Each function reads one Slurm job object (any data_parser version: the fields are read
by shape) and returns what goes into the job's entry, reporting what it could not map;
a ValueError for a value no field means (the caller locates it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from xce.importers import units
from xce.importers.report import ImportReport

__all__ = [
    "HELD_REASONS",
    "array_record",
    "dependency",
    "held",
    "job_times",
    "running_array_job",
]

#: Pend reasons Slurm gives a held job (src/common/job_state_reason.c).
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin", "JobHoldMaxRequeue"})
#: Dependency kinds Slurm prints (``_depend_type2str``); ``expand`` has no counterpart.
_KINDS = frozenset(
    {"after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer", "singleton"}
)
_DEP_ITEM = re.compile(
    r"^(?P<kind>[a-z]+)(?::(?P<job>[0-9]+(?:_(?:[0-9]+|\*))?(?::[0-9]+(?:_(?:[0-9]+|\*))?)*))?"
    r"(?:\+(?P<minutes>[0-9]+))?(?:\((?P<state>[a-z]+)\))?$"
)
_ARRAY_ITEM = re.compile(r"^[0-9]+(?:-[0-9]+(?::[0-9]+)?)?$")


def held(job: Mapping[str, Any], reason: str | None) -> bool:
    """Whether Slurm holds the job: a held reason, ``hold: true`` (data_parser: priority
    0), or a priority of 0 (Slurm's own mark of a held job: it never starts one)."""
    if reason in HELD_REASONS or job.get("hold") is True:
        return True
    return units.number(job.get("priority")) == 0


def job_times(job: Mapping[str, Any], now: float | None, reason: str | None) -> dict[str, float]:
    """``begin_time`` and ``scheduler_start`` of a pending job.

    ``begin_time``: Slurm's ``eligible_time`` (``--begin``) when it is after ``now``, or
    the job pends on ``BeginTime`` (then ``eligible_time`` is the begin time; without
    ``now`` that reason alone says it is in the future). ``scheduler_start``: the
    pending job's ``start_time`` when Slurm set it (non-zero and not the submit time):
    backfill's expected start, as ``squeue --start`` shows it."""
    out: dict[str, float] = {}
    eligible = units.number(job.get("eligible_time"))
    if eligible and (reason == "BeginTime" or (now is not None and eligible > now)):
        out["begin_time"] = eligible
    start = units.number(job.get("start_time"))
    submit = units.number(job.get("submit_time"))
    if start and start != submit:
        out["scheduler_start"] = start
    return out


def dependency(
    text: Any, reason: str | None, where: str, report: ImportReport
) -> tuple[str | None, bool]:
    """(the contract's dependency string, held) of Slurm's ``dependency`` field.

    Slurm prints ``afterok:12(unfulfilled),afterany:14_*(unfulfilled)`` (``?`` between
    items for "any one"), fulfilled items left out. The states are stripped; an item
    Slurm reports ``(failed)`` can never be satisfied, so the job is held when every
    item must hold (``,``) or every one failed (``?``), as when its reason is
    ``DependencyNeverSatisfied``. A delay (``+minutes``) is kept on ``after`` only;
    ``expand`` (a job growing another) is left out, reported."""
    if not isinstance(text, str) or not text.strip() or text.strip() == "(null)":
        return None, reason == "DependencyNeverSatisfied"
    text = text.strip()
    any_of = "?" in text
    kept: list[str] = []
    failed = 0
    parts = [p.strip() for p in text.split("?" if any_of else ",") if p.strip()]
    for part in parts:
        match = _DEP_ITEM.match(part)
        if match is None or match["kind"] not in _KINDS | {"expand"}:
            raise ValueError(f"cannot read dependency {text!r} at {part!r}")
        kind, job, minutes, state = match["kind"], match["job"], match["minutes"], match["state"]
        if state == "failed":
            failed += 1
            continue  # can never hold: left out (all of them failed, or one of ',': held)
        if kind == "expand":
            report.warn("dependency expand: not modelled (left out)", f"{where}: {part}")
            continue
        if (kind == "singleton") != (job is None):
            raise ValueError(f"cannot read dependency {text!r} at {part!r}")
        item = kind if job is None else f"{kind}:{job}"
        if minutes and kind == "after":
            item += f"+{int(minutes)}"
        elif minutes:
            report.warn("dependency delay on other than after: (left out)", f"{where}: {part}")
        kept.append(item)
    never = reason == "DependencyNeverSatisfied" or (failed == len(parts) if any_of else failed > 0)
    return ("?" if any_of else ",").join(kept) or None, never


def array_record(job: Mapping[str, Any], where: str, report: ImportReport) -> str | None:
    """The remaining task indices of a pending array record (``10-9999%50``), or None
    for a job that is not one.

    A record is a pending job whose ``array_task_string`` is set (Slurm prints the
    indices still pending, with ``%N`` from ``array_max_tasks``; bit_fmt's ranges, a
    hexadecimal mask, or the step form ``1-9:2``). A list Slurm cut at
    SLURM_BITSTR_LEN (ending ``...``) keeps the indices shown, reported."""
    text = job.get("array_task_string")
    if not isinstance(text, str) or not text.strip():
        return None
    indices, _, limit = text.strip().partition("%")
    if indices.lower().startswith("0x"):
        indices = _hex_mask(indices)
    if indices.endswith("..."):
        cut = indices.rstrip(".").rstrip(",")  # the last item shown may be partial: dropped
        indices = cut.rsplit(",", 1)[0] if "," in cut else ""
        report.warn(
            "array task list cut by Slurm (SLURM_BITSTR_LEN; the indices shown are kept)",
            f"{where}: {text[:60]}",
        )
    items = [i for i in indices.split(",") if i]
    if not items or not all(_ARRAY_ITEM.match(i) for i in items):
        raise ValueError(f"cannot read array_task_string {text!r}")
    if not limit:
        most = units.number(job.get("array_max_tasks"))
        limit = str(int(most)) if most else ""
    elif not limit.isdigit():
        raise ValueError(f"cannot read array_task_string {text!r}")
    return ",".join(items) + (f"%{int(limit)}" if limit and int(limit) > 0 else "")


def running_array_job(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the element's id ``412_7``, its array job id ``412``) of a running array
    element, else None."""
    array_job = units.number(job.get("array_job_id"))
    task = units.number(job.get("array_task_id"))
    if not array_job or task is None:
        return None
    return f"{int(array_job)}_{int(task)}", str(int(array_job))


def _hex_mask(text: str) -> str:
    """A hexadecimal task mask (bit i: task i) as ranges, without listing each index."""
    try:
        mask = int(text, 16)
    except ValueError:
        raise ValueError(f"cannot read array task mask {text!r}") from None
    ranges: list[str] = []
    i = 0
    while mask >> i:
        if not (mask >> i) & 1:
            low = ((mask >> i) & -(mask >> i)).bit_length() - 1  # the next set bit
            i += low
            continue
        run = (~(mask >> i) & ((mask >> i) + 1)).bit_length() - 1  # ones from bit i
        ranges.append(f"{i}" if run == 1 else f"{i}-{i + run - 1}")
        i += run
    return ",".join(ranges)
