"""Capacity as PBS sees it: what a node's ``resources_assigned`` says is in use beyond
what the captured running jobs hold becomes running work of its own.

A capture misses jobs (``qstat`` without ``-t`` lists no subjobs; a job of another
server; ``qstat`` and ``pbsnodes`` run at different moments), so xce would dispatch onto
CPUs PBS knows are taken. The difference is a ``running[]`` entry
``pbs:NODE:unattributed`` (user ``unknown``) holding it from the capture's time for the
longest walltime PBS would let a job on that node run, or with no end when nothing
bounds it. The reverse (the jobs hold more than the node says) is an inconsistent
capture: warned, the jobs kept."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xce.importers.pbs_jobs import JobMapper, Origin
from xce.importers.report import ImportReport


@dataclass(frozen=True, slots=True)
class Assigned:
    """A node's ``resources_assigned``: CPUs, exact MiB and GPUs PBS counts as in use."""

    origin: Origin  # the node's file and JSON path
    queue: str | None  # the queue the node is associated with
    slots: int
    mem: float | None  # None: not said (no resources_assigned)
    gpu: int | None
    exclusive: bool = False  # job-exclusive: its one job holds all of it

    @property
    def where(self) -> str:
        return f"{self.origin[0]}: {self.origin[1]}.resources_assigned"


@dataclass(frozen=True, slots=True)
class WalltimeLimits:
    """What bounds a job's walltime, per queue that runs jobs: its
    ``resources_max.walltime``, else the server's, else None (no bound)."""

    queues: Mapping[str, int | None]
    #: Queues with nodes of their own (a node's ``queue``): they run only there.
    associated: frozenset[str]

    def longest(self, node_queue: str | None) -> int | None:
        """The longest walltime a job on a node may have: of the node's queue, else of
        every queue without nodes of its own; None when one is unbounded or none known."""
        if node_queue is not None:
            names = [node_queue]
        else:
            names = [q for q in self.queues if q not in self.associated]
        limits = [self.queues.get(q) for q in names]
        if not limits or any(limit is None for limit in limits):
            return None
        return max(limit for limit in limits if limit is not None)


def add_unattributed(
    state: dict[str, Any],
    assigned: Mapping[str, Assigned],
    jobs: JobMapper,
    limits: WalltimeLimits,
    now: float | None,
    report: ImportReport,
) -> None:
    """Append one ``pbs:NODE:unattributed`` running entry per node whose assigned
    amounts exceed what its captured jobs hold; warn where they fall short."""
    for host in state["hosts"]:
        node = assigned.get(host["name"])
        if node is None:
            continue
        if node.exclusive and _held_whole(state, host, jobs, report):
            continue
        extra = _extra(host, node, jobs, report)
        if extra is None:
            continue
        entry: dict[str, Any] = {
            "id": f"pbs:{host['name']}:unattributed",
            "user": "unknown",
            "queue": node.queue or "normal",
        }
        if now is not None:
            entry["start_time"] = now
        limit = limits.longest(node.queue)
        if limit is not None:
            entry["requested_time"] = limit
        entry["alloc"] = [jobs.hold_extra(host["name"], extra)]
        state["running"].append(entry)
        jobs.origins[id(entry)] = node.origin
        shown = ", ".join(f"{v} {_UNIT[k]}" for k, v in extra.items() if v)
        report.warn(
            "node allocation no captured job holds (running as pbs:NODE:unattributed)",
            f"{node.where}: {shown}",
        )


_UNIT = {"slots": "CPUs", "mem": "MiB", "gpu": "GPUs"}


def _held_whole(
    state: Mapping[str, Any], host: Mapping[str, Any], jobs: JobMapper, report: ImportReport
) -> bool:
    """A job-exclusive node (``place=excl``) with one captured job: the job holds all of
    it (no other job may start there before it ends). False when no single job is there."""
    name = host["name"]
    owners = [r for r in state["running"] if any(a["host"] == name for a in r["alloc"])]
    if len(owners) != 1:
        return False
    capacity = {"slots": host["slots"], **host["resources"]}
    rest = {k: v - jobs.used[name].get(k, 0) for k, v in capacity.items()}
    item = next(a for a in owners[0]["alloc"] if a["host"] == name)
    more = jobs.hold_extra(name, {k: v for k, v in rest.items() if v > 0 or k == "slots"})
    item["slots"] += more["slots"]
    for key, value in more.get("resources", {}).items():
        item.setdefault("resources", {})[key] = item.get("resources", {}).get(key, 0) + value
    report.count("job-exclusive nodes held whole by their job")
    return True


def _extra(
    host: Mapping[str, Any], node: Assigned, jobs: JobMapper, report: ImportReport
) -> dict[str, int] | None:
    """What the node says is assigned beyond its captured jobs, within its free
    capacity (slots at least 1 when memory or GPUs are held); None when nothing is."""
    name = host["name"]
    used = jobs.used[name]
    held = {"slots": used.get("slots", 0), "mem": jobs.mem_exact[name], "gpu": used.get("gpu", 0)}
    said: dict[str, float] = {"slots": node.slots}
    if name not in jobs.cpus_only:  # a job known by exec_host only: its memory unknown
        said.update({k: v for k, v in (("mem", node.mem), ("gpu", node.gpu)) if v is not None})
    compared = tuple(said)
    short = [k for k in compared if said[k] < held[k] - (0.5 if k == "mem" else 0)]
    if short:
        report.warn(
            "node's resources_assigned below what its captured jobs hold (inconsistent capture)",
            f"{node.where}: " + ", ".join(
                f"{_num(said[k])} {_UNIT[k]} assigned, {_num(held[k])} held" for k in short),
        )  # fmt: skip
    capacity = {"slots": host["slots"], **host["resources"]}
    extra: dict[str, int] = {}
    for key in compared:
        want = math.floor(said[key] - held[key] + 1e-9)
        free = capacity.get(key, 0) - used.get(key, 0)
        if want > free > -1:
            report.warn("node's resources_assigned above its free capacity (clamped)",
                        f"{node.where}: {_num(said[key])} {_UNIT[key]}")  # fmt: skip
        if min(want, free) > 0:
            extra[key] = min(want, free)
    if not extra:
        return None
    if "slots" not in extra:
        if capacity["slots"] - used.get("slots", 0) < 1:
            report.warn("node's assigned memory/GPUs beyond its jobs, no CPU free (not held)",
                        node.where)  # fmt: skip
            return None
        extra = {"slots": 1, **extra}  # a running entry holds a slot at least
    return extra


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
