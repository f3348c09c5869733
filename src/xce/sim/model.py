"""What a simulation consumes and produces: workload jobs in, job records out."""

from __future__ import annotations

import math
from collections.abc import Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from xce.cluster.estimates import estimate
from xce.cluster.jobflow import Dependency
from xce.cluster.state import PendingJob, Queue

__all__ = [
    "BSLD_TAU",
    "KEPT_FOR_THE_CORE",
    "HostColumn",
    "JobRecord",
    "RecordTable",
    "SimJob",
    "SlotColumn",
    "Timeline",
    "bounded_slowdown",
    "pending_job",
    "run_length",
]

BSLD_TAU = 10.0
"""Seconds: runtimes shorter than this count as this long in the bounded slowdown."""


@dataclass(frozen=True, slots=True)
class SimJob:
    """One job of a workload: when it arrives, what it asks for, how long it runs. In a
    replay's records, a job submitted by feedback (``preceding``) has the replay's
    submit time."""

    id: str
    submit: float
    runtime: float
    tasks: int | None  # None: a compound requirement fixes its own task count
    user: str = "nobody"
    queue: str = "normal"
    project: str = "default"
    resreq: str = ""
    requested_time: float | None = None  # the user's walltime estimate, if known
    partition: str | None = None  # kept from SWF traces; not used for placement
    # issue 28 (xce.sim.flow): what it waits for, in Slurm's --dependency syntax, naming
    # other jobs of the workload; its name (for singleton); whether it ends unsuccessfully
    # (afterok/afternotok); and SWF feedback: submitted ``think`` seconds after job
    # ``preceding`` ends (fields 17 and 18) instead of at ``submit``
    dependency: Dependency | None = None
    name: str | None = None
    failed: bool = False
    preceding: str | None = None
    think: float = 0.0
    # a jobs file's gates and priority inputs, as a state file's job has them (the core
    # reads them: xce.core.gates, the priority and multifactor pickers): held (nothing in
    # a replay releases it: it never starts), no start before ``begin_time``, the
    # scheduler's priority, and the multifactor factors' QOS, nice, nodes and accrue time
    hold: bool = False
    begin_time: float | None = None
    priority: float | None = None
    qos: str | None = None
    nice: int = 0
    nodes: int | None = None
    accrue_time: float | None = None
    # where the job was written (a jobs file, its line), for errors found later
    source: str | None = field(default=None, compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class JobRecord:
    """How one job went: ``start``/``end`` are None for a job that never ran."""

    job: SimJob
    start: float | None
    end: float | None
    hosts: Sequence[str] = ()  # one entry per claim (a host may appear twice)
    host_slots: Sequence[int] = ()  # slots of each claim, parallel to ``hosts``
    slots: int = 0
    alternative: int | None = None
    killed: bool = False  # ended at its time limit (--enforce-walltime, sim.model.run_length)
    unrunnable: str | None = None  # why it can never run on this cluster
    # (start, end) positions in the run's order of starts and ends: several sessions can
    # happen at one time (a 0-second job ends at the time it starts), so the end-of-run
    # check orders starts and ends of one time by these
    sequence: tuple[int, int] | None = None
    preempted: int = 0  # times it was preempted (each time requeued, restarted)
    lost_slot_seconds: float = 0.0  # the work of its preempted runs
    backfilled: bool = False  # started ahead of a job holding a planned start
    # its planned start in the first session that decided it, if that session planned
    # (backfill or reservations): that session's
    # time if it started there, its plan's start if it was planned, else None
    planned_start: float | None = None
    planned_ahead: bool = False  # that session planned it (it did not start there)

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.job.submit

    @property
    def ran(self) -> float | None:
        """Seconds it held its hosts."""
        return None if self.start is None or self.end is None else self.end - self.start

    @property
    def bsld(self) -> float | None:
        if self.wait is None or self.ran is None:
            return None
        return bounded_slowdown(self.wait, self.ran)


class _Column:
    """A read-only numpy column seen as a sequence, equal to any equal sequence."""

    __slots__ = ("array",)

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def _items(self) -> tuple[Any, ...]:
        return tuple(self.array.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Column):
            return self._items() == other._items()
        if isinstance(other, tuple):
            return self._items() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


class SlotColumn(_Column, Sequence[int]):
    """The slots of a job's claims, kept as the allocation's array."""

    __slots__ = ()

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...
    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        if isinstance(index, slice):
            return tuple(self.array[index].tolist())
        return int(self.array[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self.array.tolist())


class HostColumn(_Column, Sequence[str]):
    """The hosts of a job's claims: indices (``array``) into the cluster's ``names``."""

    __slots__ = ("names",)

    def __init__(self, array: npt.NDArray[np.integer[Any]], names: Sequence[str]) -> None:
        super().__init__(array)
        self.names = names

    def _items(self) -> tuple[Any, ...]:
        names = self.names
        return tuple(names[i] for i in self.array.tolist())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return self._items()[index]
        return self.names[int(self.array[index])]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())


def bounded_slowdown(wait: float, runtime: float, tau: float = BSLD_TAU) -> float:
    """max(1, (wait + runtime) / max(runtime, tau))."""
    return max(1.0, (wait + runtime) / max(runtime, tau))


@dataclass(slots=True)
class Timeline:
    """The cluster over simulated time, one sample per event time: busy slots and the
    number of pending jobs just after that time's session (step functions)."""

    total_slots: int
    times: MutableSequence[float]  # lists, or (from a replay) compact arrays
    busy: MutableSequence[int]
    pending: MutableSequence[int]

    def repeats(self, busy: int, pending: int) -> bool:
        """Whether a sample of these values would repeat the last one (it would change
        nothing the step function says)."""
        return bool(self.times) and self.busy[-1] == busy and self.pending[-1] == pending

    def add(self, time: float, busy: int, pending: int) -> None:
        if self.times and self.times[-1] == time:
            self.busy[-1], self.pending[-1] = busy, pending
        else:
            self.times.append(time)
            self.busy.append(busy)
            self.pending.append(pending)


HostIndices = npt.NDArray[np.unsignedinteger[Any]]
"""A job's hosts as indices into the run's host names, in the smallest type that holds
them (read-only; one-host arrays may be shared between jobs)."""


class RecordTable(Sequence[JobRecord]):
    """A run's job records in workload order, kept as columns: a :class:`JobRecord` is
    made when one is read (a replay of 100,000 jobs keeps a few numbers per job, not a
    few hundred bytes of objects; issue 15).

    Written once per job by the replay: :meth:`ended` (it ran) or :meth:`never` (it was
    reported unrunnable or never started). Equal to any sequence of equal records.
    """

    __slots__ = (
        "_alternative",
        "_backfilled",
        "_first_host",
        "_host_count",
        "_planned",
        "_preempted",
        "_why",
        "end",
        "host_slots",
        "hosts",
        "jobs",
        "killed",
        "names",
        "seq_end",
        "seq_start",
        "slots",
        "start",
    )

    def __init__(self, jobs: Sequence[SimJob], names: Sequence[str]) -> None:
        n = len(jobs)
        self.jobs = jobs
        self.names = names  # what ``hosts`` index
        self.start = np.full(n, np.nan)  # NaN: it never ran (nor was written)
        self.end = np.full(n, np.nan)
        self.slots = np.zeros(n, dtype=np.int64)
        self.killed = np.zeros(n, dtype=np.bool_)
        self.seq_start = np.full(n, -1, dtype=np.int64)  # -1: no JobRecord.sequence
        self.seq_end = np.full(n, -1, dtype=np.int64)
        # a job's hosts: an array, or (most first-fit claims) a run of consecutive hosts
        # kept as its first host and count, no array (see hosts_of)
        self.hosts: list[HostIndices | None] = [None] * n
        self._first_host = np.zeros(n, dtype=np.int32)
        self._host_count = np.zeros(n, dtype=np.int32)  # 0: not a run
        self.host_slots: list[npt.NDArray[np.int64] | None] = [None] * n
        # rarely set, so kept by job index: a non-default value each
        self._alternative: dict[int, int] = {}
        self._why: dict[int, str] = {}  # unrunnable
        self._preempted: dict[int, tuple[int, float]] = {}  # times, lost slot-seconds
        self._backfilled: set[int] = set()
        self._planned: dict[int, tuple[float | None, bool]] = {}  # planned start, ahead

    @classmethod
    def of(cls, records: Sequence[JobRecord], names: Sequence[str]) -> RecordTable:
        """``records`` as a table (itself if it is one over ``names``); a record's hosts
        not among ``names`` raise KeyError."""
        if isinstance(records, RecordTable) and records.names is names:
            return records
        table = cls([r.job for r in records], names)
        index = {name: i for i, name in enumerate(names)}
        for i, r in enumerate(records):
            if r.start is None or r.end is None:
                table.never(i, r.unrunnable)
                if r.start is not None or r.end is not None:  # kept as given, for verify
                    table.start[i] = math.nan if r.start is None else r.start
                    table.end[i] = math.nan if r.end is None else r.end
                continue
            if isinstance(r.hosts, HostColumn) and r.hosts.names is names:
                hosts = r.hosts.array
            else:
                hosts = np.array([index[h] for h in r.hosts], dtype=np.int64)
            slots = r.host_slots.array if isinstance(r.host_slots, SlotColumn) else None
            if slots is None:
                slots = np.array(list(r.host_slots), dtype=np.int64)
            table.ended(
                i, r.start, r.end, hosts, slots, r.slots, r.alternative, r.killed, r.sequence
            )
            table.extras(
                i, r.preempted, r.lost_slot_seconds, r.backfilled, r.planned_start, r.planned_ahead
            )
            if r.unrunnable is not None:
                table._why[i] = r.unrunnable
        return table

    # --- writing -----------------------------------------------------------------------
    def ended(
        self,
        i: int,
        start: float,
        end: float,
        hosts: npt.NDArray[Any],
        host_slots: npt.NDArray[np.int64],
        slots: int,
        alternative: int | None,
        killed: bool,
        sequence: tuple[int, int] | None,
    ) -> None:
        """Job ``i`` ran from ``start`` to ``end`` on ``hosts`` (claim order)."""
        self.start[i] = start
        self.end[i] = end
        self.hosts[i] = hosts
        self.host_slots[i] = host_slots
        self.slots[i] = slots
        if alternative is not None:
            self._alternative[i] = alternative
        if killed:
            self.killed[i] = True
        if sequence is not None:
            self.seq_start[i], self.seq_end[i] = sequence

    def extras(
        self,
        i: int,
        preempted: int,
        lost: float,
        backfilled: bool,
        planned_start: float | None,
        planned_ahead: bool,
    ) -> None:
        """What preemption and backfill add to job ``i``'s record."""
        if preempted or lost:
            self._preempted[i] = (preempted, lost)
        if backfilled:
            self._backfilled.add(i)
        if planned_start is not None or planned_ahead:
            self._planned[i] = (planned_start, planned_ahead)

    def not_backfilled(self, i: int) -> None:
        """Job ``i``'s last start was not a backfilled one (a job restarted after a
        preemption keeps the mark of its last start only)."""
        self._backfilled.discard(i)

    def never(self, i: int, why: str | None) -> None:
        """Job ``i`` never ran, for this reason."""
        if why is not None:
            self._why[i] = why

    def run_of_hosts(self, i: int, first: int, count: int) -> None:
        """Job ``i``'s hosts are ``first``, ``first + 1``, ... (``count`` of them), in
        that order (instead of an array given to :meth:`ended`)."""
        self.hosts[i] = None
        self._first_host[i] = first
        self._host_count[i] = count

    def run_of(self, i: int) -> tuple[int, int] | None:
        """Job ``i``'s hosts as (first, count) when they are a run of consecutive hosts
        kept so (:meth:`run_of_hosts`); None otherwise."""
        count = int(self._host_count[i])
        return (int(self._first_host[i]), count) if count and self.hosts[i] is None else None

    def hosts_of(self, i: int) -> HostIndices | None:
        """Job ``i``'s hosts in claim order (None: it did not run)."""
        hosts = self.hosts[i]
        if hosts is None and self._host_count[i]:
            first = int(self._first_host[i])
            small = np.uint16 if len(self.names) <= 1 << 16 else np.uint32
            return np.arange(first, first + int(self._host_count[i]), dtype=small)
        return hosts

    def written(self, i: int) -> bool:
        return i in self._why or not math.isnan(self.start[i])

    def unrunnable(self) -> dict[int, str]:
        """Why each job that never ran did not, by job index (a copy)."""
        return dict(self._why)

    def preemptions(self) -> dict[int, tuple[int, float]]:
        """(times preempted, lost slot-seconds) of each job preempted, by job index."""
        return dict(self._preempted)

    def plans(self) -> dict[int, tuple[float | None, bool]]:
        """(planned start, planned ahead) of each job a planning session decided."""
        return dict(self._planned)

    # --- reading -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.jobs)

    @overload
    def __getitem__(self, index: int) -> JobRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[JobRecord]: ...
    def __getitem__(self, index: int | slice) -> JobRecord | list[JobRecord]:
        if isinstance(index, slice):
            return [self._record(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError("record index out of range")
        return self._record(index % n)

    def __iter__(self) -> Iterator[JobRecord]:
        return (self._record(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable while the replay writes it

    def __repr__(self) -> str:
        return f"RecordTable({len(self)} jobs)"

    def _record(self, i: int) -> JobRecord:
        job = self.jobs[i]
        start = float(self.start[i])
        why = self._why.get(i)
        if math.isnan(start):
            return JobRecord(job, None, None, unrunnable=why)
        hosts, host_slots = self.hosts_of(i), self.host_slots[i]
        if hosts is None or host_slots is None:  # a start without its claims (of())
            hosts, host_slots = np.zeros(0, dtype=np.uint16), np.zeros(0, dtype=np.int64)
        s0 = int(self.seq_start[i])
        times, lost = self._preempted.get(i, (0, 0.0))
        planned, ahead = self._planned.get(i, (None, False))
        end = float(self.end[i])
        return JobRecord(
            job,
            start,
            None if math.isnan(end) else end,
            HostColumn(hosts, self.names),
            SlotColumn(host_slots),
            int(self.slots[i]),
            self._alternative.get(i),
            bool(self.killed[i]),
            why,
            None if s0 < 0 else (s0, int(self.seq_end[i])),
            times,
            lost,
            i in self._backfilled,
            planned,
            ahead,
        )


def run_length(job: SimJob, queue: Queue | None, enforce_walltime: bool) -> tuple[float, bool]:
    """How long ``job`` runs once started, and whether it is killed at its time limit.
    With ``enforce_walltime`` the limit is the one planning assumes
    (:func:`xce.cluster.estimate`): the requested time capped by the queue's
    ``max_runtime``, else the queue's ``default_runtime``, else its ``max_runtime``
    (Slurm's job time limit, from ``--time``, ``DefaultTime`` and ``MaxTime``); a job
    with none runs its runtime."""
    if enforce_walltime:
        limit = estimate(job.requested_time, queue)
        if job.runtime > limit:
            return limit, True
    return job.runtime, False


def pending_job(job: SimJob, order: int = 0) -> PendingJob:
    """``job`` as the core's pending job; ``order`` is its place in arrival order (the
    core numbers arrivals itself; the plain replay gives its own)."""
    tasks = job.tasks or 1
    pending = PendingJob(
        job.id,
        job.user,
        job.queue,
        job.project,
        tasks,
        tasks,
        job.resreq,
        job.submit,
        job.runtime,
        order,
        job.tasks is not None,
        requested_time=job.requested_time,
    )
    # its dependency is the replay's to tell (xce.sim.flow); its name, for singleton
    given = {f: getattr(job, f) for f, default in KEPT_FOR_THE_CORE if getattr(job, f) != default}
    if job.name is None and not given:
        return pending
    return replace(pending, name=job.name, **given)


KEPT_FOR_THE_CORE: tuple[tuple[str, object], ...] = (
    ("hold", False),
    ("begin_time", None),
    ("priority", None),
    ("qos", None),
    ("nice", 0),
    ("nodes", None),
    ("accrue_time", None),
)
"""A jobs file's gates and priority inputs, with their defaults: fields of the same name
in :class:`SimJob` and :class:`~xce.cluster.PendingJob`, handed on as they are."""
