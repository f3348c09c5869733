"""``scontrol show partition`` as text: where a Slurm's JSON has no partitions.

Slurm 22.05's ``sinfo --json`` lists nodes only, and its ``scontrol`` has no ``--json``:
the partitions' tiers, time limits and preemption modes are only in the text
``scontrol show partition`` prints (``-o``, one line a partition, too)::

    PartitionName=batch
       AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
       DefaultTime=NONE ... MaxTime=01:00:00 ...
       Nodes=n[1-4]
       PriorityJobFactor=1 PriorityTier=1 ... PreemptMode=OFF

Each partition becomes the dict the JSON importer reads (the v0.0.38 names:
``priority_tier``, ``max_time_limit`` and ``default_time_limit`` in minutes,
``preemption_mode``, ``nodes``), so both forms go through one mapping.
"""

from __future__ import annotations

import re
from typing import Any

from xce.errors import InputError

__all__ = [
    "is_partition_text",
    "is_priority_text",
    "is_slurm_text",
    "read_partitions",
    "read_priorities",
]

_PAIR = re.compile(r"(\w+)=(\S*)")
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def is_partition_text(text: str) -> bool:
    """Whether ``text`` is what ``scontrol show partition`` printed."""
    return text.lstrip().startswith("PartitionName=")


def is_priority_text(text: str) -> bool:
    """Whether ``text`` is what ``sprio`` (or ``sprio -l``) printed: a header of JOBID,
    PARTITION and PRIORITY columns."""
    head = text.lstrip().split("\n", 1)[0].split()
    return head[:2] == ["JOBID", "PARTITION"] and "PRIORITY" in head


def is_slurm_text(text: str) -> bool:
    """Whether ``text`` is Slurm text xce reads (scontrol's partitions, sprio's table,
    and the multifactor inputs of :mod:`.slurm_priority_text`)."""
    from xce.importers.slurm_priority_text import is_priority_input_text

    return is_partition_text(text) or is_priority_text(text) or is_priority_input_text(text)


def read_priorities(source: str, text: str) -> list[dict[str, Any]]:
    """``sprio``'s rows as ``{job_id, partition, priority}``: the priority Slurm gives
    a pending job in each of its partitions (a job of ``-p a,b`` has a row for each, and
    ``squeue --json`` prints only one of them). InputError at the line of a bad row."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip())
    head = lines[start].split()
    at = {name: head.index(name) for name in ("JOBID", "PARTITION", "PRIORITY")}
    out: list[dict[str, Any]] = []
    for number, line in enumerate(lines[start + 1 :], start + 2):
        cells = line.split()
        if not cells:
            continue
        try:
            priority = float(cells[at["PRIORITY"]])
            row = {"job_id": cells[at["JOBID"]], "partition": cells[at["PARTITION"]]}
        except (IndexError, ValueError):
            raise InputError(
                "not a row of sprio (JOBID PARTITION ... PRIORITY ...)",
                source=source,
                line=number,
                text=line,
            ) from None
        if not 0 <= priority <= 1e15:
            raise InputError(f"priority {priority:g} out of range", source=source, line=number)
        out.append({**row, "priority": int(priority) if priority.is_integer() else priority})
    return out


def read_partitions(source: str, text: str) -> list[dict[str, Any]]:
    """The partitions of ``scontrol show partition`` text; InputError at ``source``'s
    line for a value it cannot read."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        for key, value in _PAIR.findall(line):
            if key == "PartitionName":
                current = {"name": value}
                out.append(current)
            elif current is None:
                raise InputError(
                    f"{key}= before any PartitionName=", source=source, line=number, text=line
                )
            else:
                _field(current, key, value, source, number, line)
    if not out:
        raise InputError("no PartitionName= in this text", source=source)
    return out


def _field(part: dict[str, Any], key: str, value: str, source: str, n: int, line: str) -> None:
    try:
        if key == "PriorityTier":
            part["priority_tier"] = int(value)
        elif key == "MaxTime":
            part["max_time_limit"] = minutes(value)
        elif key == "DefaultTime":
            part["default_time_limit"] = minutes(value)
        elif key == "PreemptMode":
            part["preemption_mode"] = value.upper().split(",")
        elif key == "Nodes":
            part["nodes"] = "" if value == "(null)" else value
    except ValueError as err:
        column = line.find(f"{key}=") + 1 or None
        raise InputError(f"{key}: {err}", source=source, line=n, column=column, text=line) from None


def minutes(value: str) -> int:
    """A Slurm time limit (``[days-]hours:minutes:seconds``, ``minutes``,
    ``minutes:seconds``, ``UNLIMITED``, ``NONE``) in whole minutes, as the JSON gives
    them (-1: unlimited or none, which the importer reads as unset)."""
    if value.upper() in ("UNLIMITED", "NONE", "INFINITE", "N/A"):
        return -1
    m = _TIME.match(value)
    if m is None:
        raise ValueError(f"not a time limit: {value!r}")
    days_text, first_text, second, third = m.groups()
    days, first = int(days_text or 0), int(first_text)
    if third is not None:  # [d-]h:m:s
        total = first * 3600 + int(second) * 60 + int(third)
    elif second is not None:  # d-h:m, else m:s
        total = first * 3600 + int(second) * 60 if days_text else first * 60 + int(second)
    else:  # d-h, else minutes
        total = first * 3600 if days_text else first * 60
    total += days * 86400
    return -(-total // 60)  # whole minutes, rounded up
