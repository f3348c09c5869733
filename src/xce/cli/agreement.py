"""Where xce and the scheduler a state was imported from disagree, and the likely cause.

Every pending job of an imported state is pending in the scheduler; its ``reason`` says
why and its ``scheduler_start`` (if given) when the scheduler expects to start it. Per
job decided by the session, one of (docs/cli.md, "Agreement with the scheduler"):

* ``dispatched_pending``: xce starts it now (dispatched, or PREEMPTING), the scheduler
  does not: its reason is one that keeps a job waiting (:data:`REASONS`), or its
  expected start is later than now + the resolution. A reason that says nothing (Slurm
  ``None``, which the importer leaves out; a job submitted after the scheduler's last
  cycle has it) is a start the scheduler would make too, not a disagreement.
* ``pending_starting``: xce keeps it waiting, the scheduler expects to start it now
  (``scheduler_start`` <= now + resolution). An expected start already past by more
  than the resolution is stale (the scheduler did not act on it; a capture's files
  taken at different times): kept in the JSON, marked, and not compared.
* ``start_differs``: both wait, and ``|planned_start - scheduler_start|`` exceeds the
  resolution (compared only where both give a start: under ``--backfill easy`` xce
  plans only the first waiting job).

The resolution is the state's ``scheduler_resolution``, else 60 s for Slurm (its
``bf_resolution`` default) and 1 s for any other scheduler. The cause is read from what
the job and the state say: the reason's category, unattributed running entries on the
hosts involved, the job's GRES, the scheduler's priorities, xce's own reason.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from xce.timefmt import duration, iso, when

if TYPE_CHECKING:
    from xce.cluster import ClusterState, PendingJob

__all__ = [
    "REASONS",
    "Category",
    "Judge",
    "add_agreement",
    "category",
    "entry_of",
    "label",
    "resolution",
    "says",
    "summary",
    "verdict",
]

Category = Literal[
    "none",
    "resources",
    "priority",
    "dependency",
    "begin_time",
    "hold",
    "limit",
    "licenses",
    "array_limit",
    "partition",
    "nodes",
    "reservation",
    "other",
]

REASONS: Mapping[str, Category] = {
    "None": "none",
    "Resources": "resources",
    "Priority": "priority",
    "Dependency": "dependency",
    "DependencyNeverSatisfied": "dependency",
    "BeginTime": "begin_time",
    "JobHeldUser": "hold",
    "JobHeldAdmin": "hold",
    "Licenses": "licenses",
    "JobArrayTaskLimit": "array_limit",
    "PartitionNodeLimit": "partition",
    "PartitionTimeLimit": "partition",
    "PartitionConfig": "partition",
    "ReqNodeNotAvail": "nodes",
    "NodeDown": "nodes",
    "PartitionDown": "nodes",
    "PartitionInactive": "nodes",
    "BadConstraints": "nodes",
    "Reservation": "reservation",
    "ReservationDeleted": "reservation",
}
"""Slurm's pend reasons (``squeue``'s REASON, the first word before a comma) by what
they say; any ``QOS…``/``Assoc…`` reason is a ``limit``."""

_WORDS: tuple[tuple[str, Category], ...] = (
    ("reserv", "reservation"),  # "ReqNodeNotAvail, Reserved for maintenance"; PBS
    ("held", "hold"),
    ("hold", "hold"),
    ("depend", "dependency"),
    ("begin", "begin_time"),
    ("licen", "licenses"),
    ("limit", "limit"),
    ("priority", "priority"),
    ("starving", "priority"),  # PBS "Draining system to allow starving job to run"
    ("insufficient", "resources"),  # PBS "Insufficient amount of resource: ncpus"
    ("resource", "resources"),
    ("node", "nodes"),
)
"""Words of free-text reasons (PBS comments, LSF pending reasons), tried in order where
no Slurm reason matches."""

_LIMIT = re.compile(r"^(QOS|Assoc)[A-Za-z]*")
_NAMES = {"slurm": "Slurm", "pbs": "PBS", "lsf": "LSF"}
_STARTS_NOW = ("PREEMPTING",)  # xce pend reasons of jobs that start this session
_GATES = {"HELD": "hold", "DEPENDENCY": "dependency", "BEGIN_TIME": "begin time"}


def label(scheduler: str | None) -> str:
    """The scheduler's name as people write it (``Slurm``, ``PBS``, ``LSF``)."""
    if not scheduler:
        return "scheduler"
    return _NAMES.get(scheduler.lower(), scheduler)


def resolution(state: ClusterState) -> float:
    """Seconds within which a planned start is the scheduler's."""
    if state.scheduler_resolution is not None:
        return state.scheduler_resolution
    return 60.0 if (state.scheduler or "").lower() == "slurm" else 1.0


def category(reason: str | None) -> Category:
    """What a scheduler's reason says (:data:`REASONS`, then :data:`_WORDS`); ``none``
    for no reason at all."""
    if reason is None or not reason.strip():
        return "none"
    first = reason.split(",", 1)[0].strip()
    if "reserved for maintenance" in reason.lower():
        return "reservation"
    if first in REASONS:
        return REASONS[first]
    if _LIMIT.match(first):
        return "limit"
    low = reason.lower()
    return next((cat for word, cat in _WORDS if word in low), "other")


def entry_of(jobs: Mapping[str, PendingJob], job_id: str) -> PendingJob | None:
    """The state's entry of a decided job: itself, or for an array task (``412_7``) its
    record (``412``), whose reason and expected start it shares."""
    job = jobs.get(job_id)
    if job is not None:
        return job
    record, sep, index = job_id.rpartition("_")
    job = jobs.get(record) if sep and index.isdigit() else None
    return job if job is not None and job.array is not None else None


def waiting(pending: Iterable[dict[str, Any]]) -> set[str]:
    """The jobs of a session's pending entries that do not start this session."""
    return {p["job"] for p in pending if p["reason"] not in _STARTS_NOW}


class Judge:
    """The agreement of each decided job of one session (at ``now``, with the jobs
    ``waiting`` that do not start) with the scheduler the state names."""

    def __init__(self, state: ClusterState, now: float, waiting: set[str]) -> None:
        self.state = state
        self.now = now
        self.tz = state.timezone
        self.name = label(state.scheduler)
        self.resolution = resolution(state)
        self.jobs: dict[str, PendingJob] = {j.id: j for j in state.jobs}
        self.waiting = waiting
        self.unattributed: dict[str, list[str]] = {}  # host -> unattributed entries
        for r in state.running:
            if r.id.endswith(":unattributed"):
                for a in r.alloc:
                    self.unattributed.setdefault(a.host, []).append(r.id)

    def __call__(self, entry: dict[str, Any], dispatched: bool) -> dict[str, Any]:
        """The ``agreement`` object of one decisions-JSON entry (dispatched or not)."""
        job = entry_of(self.jobs, entry["job"])
        reason = job.reason if job is not None else None
        theirs = job.scheduler_start if job is not None else None
        # an expected start already past (beyond the resolution) is one the scheduler did
        # not act on: stale, and not read as "now"
        stale = theirs is not None and theirs < self.now - self.resolution
        out: dict[str, Any] = {
            "agrees": True,
            "kind": None,
            "cause": None,
            "scheduler_start": theirs,
            "scheduler_start_iso": iso(theirs, self.tz),
            "scheduler_start_stale": stale,
            "scheduler_reason": reason,
        }
        theirs = None if stale else theirs
        starts_now = dispatched or entry.get("reason") in _STARTS_NOW
        soon = self.now + self.resolution
        if starts_now:
            kind, cause = self._starts_now(entry, job, reason, theirs, soon)
        elif theirs is not None and theirs <= soon:
            kind, cause = "pending_starting", self._xce_waits(entry, job)
        else:
            kind, cause = self._both_wait(entry, job, reason, theirs)
        if kind is not None:
            out.update(agrees=False, kind=kind, cause=cause)
        return out

    def _starts_now(
        self,
        entry: dict[str, Any],
        job: PendingJob | None,
        reason: str | None,
        theirs: float | None,
        soon: float,
    ) -> tuple[str | None, str | None]:
        if theirs is not None and theirs <= soon:
            return None, None  # the scheduler starts it now too, whatever its reason
        cat = category(reason)
        if cat != "none":
            return "dispatched_pending", self._why_theirs(cat, reason or "", entry, job)
        if theirs is not None:  # no reason, but a start to come
            at = when(theirs, self.now, self.tz)
            return "dispatched_pending", f"{self.name} expects to start it at {at}"
        return None, None

    def _both_wait(
        self,
        entry: dict[str, Any],
        job: PendingJob | None,
        reason: str | None,
        theirs: float | None,
    ) -> tuple[str | None, str | None]:
        ours = entry.get("planned_start")
        if theirs is None or ours is None or not math.isfinite(theirs):
            return None, None  # nothing to compare: both keep it waiting
        delta = ours - theirs
        if abs(delta) <= self.resolution:
            return None, None
        ahead = "earlier" if delta < 0 else "later"
        head = f"xce plans it {duration(abs(delta))} {ahead} than {self.name}"
        if delta < 0:  # the scheduler sees something more keep it waiting
            cat = category(reason)
            why = (
                self._why_theirs(cat, reason or "", entry, job)
                if cat not in ("none", "resources")
                else self._earlier(entry)
            )
        else:
            why = self._later(entry)
        return "start_differs", f"{head}: {why}"

    # -- causes --------------------------------------------------------------------------

    def _why_theirs(
        self, cat: Category, reason: str, entry: dict[str, Any], job: PendingJob | None
    ) -> str:
        """Why the scheduler keeps waiting a job xce would start (or start sooner)."""
        said = f"{self.name} says {reason}"
        if cat == "resources":
            return self._resources(entry, said)
        if cat == "priority":
            return self._priority(entry, job, said)
        if cat == "limit":
            return (
                f"a limit the state does not model ({said}: QOS and association limits "
                "are not imported)"
            )
        if cat == "dependency":
            if job is None or job.dependency is None:
                return f"a dependency the state does not give ({said})"
            return (
                f"its dependency {job.dependency.text}, which xce holds satisfied (the jobs "
                f"it names have ended or will have by then; {said})"
            )
        if cat == "begin_time":
            if job is None or job.begin_time is None:
                return f"a begin time the state does not give ({said})"
            return f"its begin time {when(job.begin_time, self.now, self.tz)} ({said})"
        if cat == "hold":
            return f"a hold the state does not record ({said})"
        if cat == "licenses":
            return f"licences, which the state does not give ({said})"
        if cat == "array_limit":
            return f"the array's %N limit, which the state does not give ({said})"
        if cat == "partition":
            return f"a partition limit (node count, time limit) the state does not model ({said})"
        if cat == "nodes":
            return f"node availability: nodes {self.name} cannot use are open in the state ({said})"
        if cat == "reservation":
            return f"a reservation the state does not give, or gives otherwise ({said})"
        return f"a reason xce does not model ({said})"

    @staticmethod
    def _claims(entry: dict[str, Any]) -> list[dict[str, Any]]:
        """Where xce puts the job: its allocation, PREEMPTING promise or planned one."""
        plan = entry.get("planned") or entry.get("promise") or entry
        claims: list[dict[str, Any]] = plan.get("allocation", [])
        return claims

    def _hosts(self, entry: dict[str, Any]) -> list[str]:
        return [a["host"] for a in self._claims(entry)]

    def _unattributed(self, entry: dict[str, Any]) -> list[str]:
        """The unattributed running entries on the hosts xce puts the job on."""
        return sorted({u for h in self._hosts(entry) for u in self.unattributed.get(h, [])})

    def _resources(self, entry: dict[str, Any], said: str) -> str:
        hosts = self._hosts(entry)
        seen = self._unattributed(entry)
        if seen:
            return (
                f"allocations xce sees only as a whole ({_few(seen)}): {self.name} may "
                f"count more held there, or free it later ({said})"
            )
        gres = sorted({k for a in self._claims(entry) for k in a["resources"] if k != "mem"})
        if gres:
            return (
                f"GRES: xce gave it {', '.join(gres)} on {_few(hosts)}, which "
                f"{self.name} sees held or typed otherwise ({said})"
            )
        return (
            f"allocations xce cannot see: the capture shows {_few(hosts) or 'the hosts'} "
            f"free enough (a job left out of the capture, or memory or GRES it does not "
            f"report) ({said})"
        )

    def _priority(self, entry: dict[str, Any], job: PendingJob | None, said: str) -> str:
        mine = job.priority if job is not None else None
        if mine is not None:
            above = [
                j
                for j in self.state.jobs
                if j.id in self.waiting and j.priority is not None and j.priority > mine
            ]
            if above:
                top = max(above, key=lambda j: j.priority or 0.0)
                return (
                    f"priority order: {self.name} puts job {top.id} (priority "
                    f"{top.priority:g} against {mine:g}) first, which xce keeps waiting ({said})"
                )
        return (
            f"priority order: {self.name} keeps the resources for jobs of higher priority "
            f"that xce's order puts after this one or plans elsewhere ({said})"
        )

    def _xce_waits(self, entry: dict[str, Any], job: PendingJob | None) -> str:
        """Why xce keeps waiting a job the scheduler starts now."""
        reason, message = entry["reason"], entry["message"]
        ours = f"xce: {reason}, {message}"
        if reason in _GATES:
            return (
                f"its {_GATES[reason]}, which {self.name} finds satisfied (a job state or "
                f"time xce reads otherwise; {ours})"
            )
        if reason == "ARRAY_LIMIT":
            return f"the array's %N limit, counted otherwise by {self.name} ({ours})"
        if reason == "LIMIT":
            names = ", ".join(entry.get("limits", [])) or "a limit"
            return f"{names} of the state, which {self.name} does not enforce so ({ours})"
        if reason in ("HOST_STATUS", "SELECT", "NEVER_RUNNABLE"):
            return (
                f"node state or constraints: {self.name} has nodes for it that the state "
                f"closes or does not match (a node flag read as closed; {ours})"
            )
        if reason in ("RESERVED", "RESERVATION", "QUEUE_BLOCKED"):
            return f"xce's order or a reservation keeps it out ({ours})"
        if reason == "INVALID":
            return f"the job's entry is invalid in the state ({ours})"
        held = sorted({u for ids in self.unattributed.values() for u in ids})
        if held:
            return (
                f"resources xce counts held, such as unattributed allocations "
                f"({_few(held)}), that {self.name} frees now ({ours})"
            )
        return (
            f"resources xce counts held now that {self.name} finds free (running work "
            f"it expects to end at once, or a node count it does not ask; {ours})"
        )

    def _earlier(self, entry: dict[str, Any]) -> str:
        seen = self._unattributed(entry)
        if seen:
            return (
                f"allocations xce sees only as a whole ({_few(seen)}), held otherwise "
                f"by {self.name}"
            )
        return (
            f"{self.name} plans the jobs ahead of it (priority order), or allocations "
            "xce cannot see, first"
        )

    def _later(self, entry: dict[str, Any]) -> str:
        seen = self._unattributed(entry)
        if seen:
            return (
                f"xce holds unattributed allocations ({_few(seen)}) to their partition's "
                f"time limit; {self.name} may know they end sooner"
            )
        return (
            "xce puts more work ahead of it: its order (priority), the running jobs' "
            "estimated ends, or a node count the job did not ask"
        )


def _few(names: Iterable[str], n: int = 3) -> str:
    shown = list(names)
    return ", ".join(shown[:n]) + (", …" if len(shown) > n else "")


def add_agreement(info: dict[str, Any], state: ClusterState, now: float) -> None:
    """On a state naming its scheduler: ``agreement`` on every decided job of the
    decisions JSON ``info`` and the counts in ``stats.agreement`` (else unchanged)."""
    if state.scheduler is None:
        return
    judge = Judge(state, now, waiting(info["pending"]))
    kinds: Counter[str] = Counter()
    compared = stale = 0
    for entries, dispatched in ((info["dispatched"], True), (info["pending"], False)):
        for entry in entries:
            entry["agreement"] = found = judge(entry, dispatched)
            if found["kind"] is not None:
                kinds[found["kind"]] += 1
            compared += found["scheduler_start"] is not None
            stale += found["scheduler_start_stale"]
    total = len(info["dispatched"]) + len(info["pending"])
    info["stats"]["agreement"] = {
        "scheduler": judge.name,
        "jobs": total,
        "agree": total - sum(kinds.values()),
        "by_kind": dict(sorted(kinds.items())),
        "with_scheduler_start": compared,
        "scheduler_start_stale": stale,
        "resolution_s": judge.resolution,
        "now": now,
        "now_iso": iso(now, state.timezone),
    }


# -- shown to a person --------------------------------------------------------------------

_KINDS = {
    "dispatched_pending": "xce starts it, {name} waits",
    "pending_starting": "{name} starts it now, xce waits",
    "start_differs": "another start",
}


def verdict(found: dict[str, Any], name: str) -> str:
    """A table cell: ``yes``, or ``NO: what differs: the likely cause``."""
    if found["agrees"]:
        return "yes"
    return f"NO: {_KINDS[found['kind']].format(name=name)}: {found['cause']}"


def says(entry: dict[str, Any], now: float | None, tz: str | None) -> str:
    """The scheduler's reason (``-``: none) and, where it gives one, its expected start."""
    found = entry.get("agreement") or {}
    text = entry.get("scheduler_reason") or found.get("scheduler_reason") or "-"
    start = found.get("scheduler_start")
    if start is None:
        return text
    stale = " (stale: past, not started)" if found.get("scheduler_start_stale") else ""
    return f"{text}; expects {when(start, now, tz)}{stale}"


def summary(stats: dict[str, Any], planning: bool) -> str:
    """``agrees with Slurm on N of M jobs`` and what the others are."""
    a = stats["agreement"]
    name = a["scheduler"]
    text = f"agrees with {name} on {a['agree']} of {a['jobs']} jobs"
    kinds = [f"{n} {_KINDS[k].format(name=name)}" for k, n in a["by_kind"].items()]
    if kinds:
        text += f" ({'; '.join(kinds)})"
    if a["with_scheduler_start"] and not planning:
        text += (
            f"; {a['with_scheduler_start']} expected start(s) from {name} compared with "
            "xce's only where xce plans (--backfill conservative plans every job)"
        )
    return text
