"""Slurm's site policy objects: advance reservations (``/reservations``,
``scontrol show reservations --json``) and QOS (``/qos``) -> the state file.

A Slurm reservation is used only by the jobs that ask for it (``sbatch --reservation``;
its users, accounts and groups say who may ask, which Slurm checked at submission). So
it is written with its name, hosts and window and no consumer list: in xce only the
jobs naming it run there, and no other job uses its hosts inside the window
(docs/backfill.md, "Advance reservations"). A QOS has no counterpart in the state file
(xce's limits apply by user, queue or project, not by QOS): each is counted, and one
that sets a limit or a preemption list is reported with its path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xce.importers import hostlist, units
from xce.importers.report import ImportReport

__all__ = ["map_qos", "map_reservation"]

# Flags that change who may use the hosts, or which hosts, in ways xce does not model.
_UNMODELLED_FLAGS = frozenset(
    {"ANY_NODES", "FLEX", "IGNORE_JOBS", "MAGNETIC", "NO_HOLD_JOBS_AFTER_END", "OVERLAP",
     "PART_NODES", "REPLACE", "REPLACE_DOWN", "STATIC_ALLOC", "WEEKDAY", "WEEKEND", "DAILY",
     "WEEKLY", "HOURLY", "TIME_FLOAT", "PURGE_COMP", "NO_HOLD_JOBS"}
)  # fmt: skip


def map_reservation(
    where: str,
    resv: Any,
    hosts: Mapping[str, Any],
    report: ImportReport,
) -> dict[str, Any] | None:
    """The state-file reservation of Slurm reservation ``resv`` (``where``: its file and
    JSON path, for the report), or None when it cannot be mapped (reported)."""
    if not isinstance(resv, Mapping):
        report.warn("reservation not an object (skipped)", where)
        return None
    name = resv.get("name")
    if not isinstance(name, str) or not name:
        report.warn("reservation without a name (skipped)", where)
        return None
    start, end = units.number(resv.get("start_time")), units.number(resv.get("end_time"))
    if start is None or end is None or not end > start:
        report.warn("reservation without a finite window (skipped)", f"{where} ({name})")
        return None
    listed = hostlist.expand(str(resv.get("node_list") or ""))
    known = [h for h in listed if h in hosts]
    if len(known) < len(listed):
        missing = ", ".join(h for h in listed if h not in hosts)
        report.warn("reservation node not in the input (left out)", f"{where}: {missing}")
    if not known:
        report.warn("reservation without an imported node (skipped)", f"{where} ({name})")
        return None
    _report_flags(where, name, resv, report)
    report.count("reservations")
    return {"name": name, "start": start, "end": end, "hosts": known}


def _report_flags(where: str, name: str, resv: Mapping[str, Any], report: ImportReport) -> None:
    flags = resv.get("flags")
    listed = flags if isinstance(flags, list) else str(flags or "").split(",")
    odd = sorted({str(f).upper() for f in listed if str(f).upper() in _UNMODELLED_FLAGS})
    if odd:
        report.warn(
            "reservation flags not modelled (whole hosts, this window only)",
            f"{where} ({name}): {', '.join(odd)}",
        )
    cores = units.number(resv.get("core_count"))
    if cores:
        report.warn(
            "reservation of cores mapped as whole hosts", f"{where} ({name}): {cores} cores"
        )


def map_qos(where: str, qos: Any, report: ImportReport) -> None:
    """Count QOS ``qos``; report it (``where``: file and JSON path) when it sets a limit
    or preempts others, which the state file cannot say."""
    if not isinstance(qos, Mapping):
        report.warn("QOS not an object (skipped)", where)
        return
    report.count("QOS read (no state-file counterpart)")
    name = qos.get("name", "?")
    limits = sorted(_set_limits(qos.get("limits"), ""))
    if limits:
        shown = ", ".join(limits[:4]) + (", ..." if len(limits) > 4 else "")
        report.warn("QOS limits not mapped (xce limits are per user, queue or project)",
                    f"{where} ({name}): {shown}")  # fmt: skip
    preempt = qos.get("preempt")
    victims = preempt.get("list") if isinstance(preempt, Mapping) else None
    if victims:
        report.warn("QOS preemption not mapped", f"{where} ({name}): preempts {victims}")


def _set_limits(node: Any, path: str) -> list[str]:
    """The paths under a QOS's ``limits`` whose number is set, or whose TRES list is
    not empty (a flagged number unset or infinite is no limit)."""
    if isinstance(node, Mapping):
        if "set" in node and "number" in node:
            return [path] if units.number(node) is not None else []
        out = []
        for key, value in node.items():
            out += _set_limits(value, f"{path}.{key}" if path else str(key))
        return out
    if isinstance(node, list) and node:
        return [path]
    return []
