"""The cluster state a scheduling session starts from: hosts, what running work holds,
queues, limits and the pending jobs, built from a checked :class:`StateSpec`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, overload

import numpy as np

from xce.cluster.catalog import SLOTS, ResourceCatalog, ResourceKind
from xce.cluster.hosts import FloatArray, HostTable, build_catalog, describe
from xce.cluster.jobflow import ArrayIndices, Dependency, parse_array, parse_dependency
from xce.cluster.schema import (
    DocPath,
    HostAllocSpec,
    JobSpec,
    LimitSpec,
    PrioritySpec,
    QueueSpec,
    ReservationSpec,
    RunningSpec,
    SpecError,
    StateSpec,
    out_of_range,
    quote,
    show,
)
from xce.cluster.units import grid_error, to_units

if TYPE_CHECKING:
    from xce.priority.setup import PrioritySetup

__all__ = [
    "AdvanceReservation",
    "ClusterState",
    "HostAlloc",
    "HostAllocs",
    "Limit",
    "PendingJob",
    "Queue",
    "QueueEntry",
    "RunningJob",
    "build_state",
]


def _empty() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Queue:
    """A queue; jobs may name undeclared queues, which have priority 0."""

    name: str
    priority: int = 0
    preempts: tuple[str, ...] = ()
    picker: str | None = None
    shares: Mapping[str, float] = field(default_factory=_empty, hash=False)
    default_runtime: float | None = None  # seconds assumed for a job giving no estimate
    max_runtime: float | None = None  # seconds: a job's estimate is capped at it
    backfill: str | None = None  # its backfill policy (None: the session's default)
    priority_job_factor: int = 1  # Slurm's PriorityJobFactor (the multifactor picker)


@dataclass(frozen=True, slots=True)
class AdvanceReservation:
    """Hosts set aside over ``[start, end)`` (``scontrol create reservation``, ``brsvadd``).

    ``hosts`` are host indices, resolved at load (from names, or from ``select`` on
    attributes that cannot change in a session); ``select`` keeps the expression as
    written, if hosts were given so. A job naming the reservation may use it; other jobs
    may when at least one consumer list is given and they match every list given.
    """

    name: str
    hosts: tuple[int, ...]
    start: float
    end: float
    users: tuple[str, ...] | None = None
    queues: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    select: str | None = None

    def admits(self, reservation: str | None, user: str, queue: str, project: str) -> bool:
        """True when a job (naming ``reservation``, or none) may run on these hosts
        inside the window."""
        if reservation == self.name:
            return True
        lists = (self.users, self.queues, self.projects)
        if all(allowed is None for allowed in lists):
            return False
        return all(
            allowed is None or value in allowed
            for allowed, value in zip(lists, (user, queue, project), strict=True)
        )


@dataclass(frozen=True, slots=True)
class Limit:
    """An LSF-style limit; a consumer list of None means everyone."""

    name: str
    users: tuple[str, ...] | None = None
    queues: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    per_host: bool = False
    slots: int | None = None
    jobs: int | None = None
    resources: Mapping[str, float] = field(default_factory=_empty, hash=False)

    def applies_to(self, user: str, queue: str, project: str) -> bool:
        """True when the job's consumer matches every list given (an intersection)."""
        return all(
            allowed is None or value in allowed
            for allowed, value in (
                (self.users, user),
                (self.queues, queue),
                (self.projects, project),
            )
        )


@dataclass(frozen=True, slots=True)
class HostAlloc:
    """What one job holds on one host."""

    host: str
    slots: int
    resources: Mapping[str, float] = field(default_factory=_empty, hash=False)


class HostAllocs(Sequence[HostAlloc]):
    """A running job's holdings, one :class:`HostAlloc` per claim, made only when read.

    A wide job holds thousands of hosts; the scheduling core keeps what it needs as
    arrays and gives running jobs this view, so starting a job makes no per-host object.
    Equal to any sequence of the same holdings.
    """

    __slots__ = ("_build", "_items", "_len", "slots")

    def __init__(self, build: Callable[[], tuple[HostAlloc, ...]], count: int, slots: int) -> None:
        self._build = build
        self._items: tuple[HostAlloc, ...] | None = None
        self._len = count
        self.slots = slots  # over all claims

    def _all(self) -> tuple[HostAlloc, ...]:
        if self._items is None:
            self._items = self._build()
        return self._items

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> HostAlloc: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[HostAlloc, ...]: ...
    def __getitem__(self, index: int | slice) -> HostAlloc | tuple[HostAlloc, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[HostAlloc]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostAllocs):
            return self._all() == other._all()
        if isinstance(other, tuple):
            return self._all() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


@dataclass(frozen=True, slots=True)
class RunningJob:
    """Work already holding resources when the session starts."""

    id: str
    user: str
    queue: str
    project: str
    start_time: float
    alloc: Sequence[HostAlloc]  # a tuple, or the core's HostAllocs view
    shared: Mapping[str, float] = field(default_factory=_empty, hash=False)
    resreq: str = ""
    runtime: float | None = None
    requested_time: float | None = None  # the walltime estimate, if given
    name: str | None = None  # the job name (singleton dependencies)
    array_job: str | None = None  # the array record it is a task of

    @property
    def slots(self) -> int:
        """Tasks the job runs, over all its hosts."""
        if isinstance(self.alloc, HostAllocs):
            return self.alloc.slots
        return sum(a.slots for a in self.alloc)


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """Another queue a pending job may run in, with its priority and requirement there."""

    queue: str
    priority: float | None
    resreq: str


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A job waiting to be scheduled; ``order`` is its position in the file."""

    id: str
    user: str
    queue: str
    project: str
    min_tasks: int
    max_tasks: int
    resreq: str
    submit_time: float
    runtime: float | None
    order: int
    tasks_given: bool = True  # False: the file gave no task count (a compound fixes its own)
    requested_time: float | None = None  # the walltime estimate, if given
    reservation: str | None = None  # the advance reservation it must run in, if any
    reason: str | None = None  # the real scheduler's own pend reason (imported; not used)
    priority: float | None = None  # the scheduler's job priority (the priority picker)
    hold: bool = False  # held: pends HELD, never planned
    begin_time: float | None = None  # no start before it
    dependency: Dependency | None = None  # what it waits for (xce.cluster.jobflow)
    name: str | None = None  # the job name (singleton dependencies)
    array: ArrayIndices | None = None  # an array record: the task indices it still holds
    array_job: str | None = None  # an array task: its record's id
    scheduler_start: float | None = None  # the scheduler's own expected start (not used)
    also_queues: tuple[QueueEntry, ...] = ()  # further queues it may run in (sbatch -p a,b)
    entry_of: str | None = None  # a session's entry of job ENTRY_OF in another queue
    qos: str | None = None  # its QOS (the multifactor picker)
    nice: int = 0  # taken off its multifactor priority
    nodes: int | None = None  # the fewest nodes it asked for (multifactor job size)
    accrue_time: float | None = None  # when its multifactor age starts (Slurm's AccrueTime)

    @property
    def gated(self) -> bool:
        """Whether something besides resources can keep the job waiting (a hold, a begin
        time, a dependency), it is an array record, or it has entries in further queues
        (xce.core.gates and the session's entries)."""
        return (
            self.hold
            or self.begin_time is not None
            or self.dependency is not None
            or self.array is not None
            or bool(self.also_queues)
        )


@dataclass(frozen=True, slots=True, eq=False)
class ClusterState:
    """A cluster snapshot. ``used`` and ``shared_used`` are the amounts running work
    holds (the core updates them as work starts and ends), counted exactly in units of
    each resource's resolution (:mod:`xce.cluster.units`); ``shared_total`` is in the
    resources' own unit. Everything else is static.
    """

    catalog: ResourceCatalog
    hosts: HostTable
    used: dict[str, FloatArray]
    shared_total: dict[str, float]
    shared_used: dict[str, float]
    queues: dict[str, Queue]
    limits: tuple[Limit, ...]
    running: tuple[RunningJob, ...]
    jobs: tuple[PendingJob, ...]
    source: str | None = None
    default_picker: str | None = None  # for queues that name no picker of their own
    reservations: tuple[AdvanceReservation, ...] = ()
    default_backfill: str | None = None  # for queues that name no backfill policy
    now: float | None = None  # the snapshot's time, if the file gives it
    scheduler: str | None = None  # the scheduler it was imported from (its jobs' reasons)
    timezone: str | None = None  # IANA zone of times shown to a person (None: UTC)
    scheduler_resolution: float | None = None  # seconds: a start within it is the scheduler's
    gated: bool = False  # some pending job may wait at a gate (PendingJob.gated)
    # the multifactor picker's settings, associations and usage book (docs/priority.md)
    priority: PrioritySetup | None = None
    # the ids of job entries a lenient load left out (INVALID): they never run, so a
    # dependency on one never holds (xce.core.gates)
    left_out: frozenset[str] = frozenset()

    def session_time(self) -> float:
        """When a session on this state runs: ``now`` if given, else the latest start or
        submit time in it (0 for a state without jobs)."""
        if self.now is not None:
            return self.now
        times = [r.start_time for r in self.running] + [j.submit_time for j in self.jobs]
        return max(times, default=0.0)

    def later_than(self, t: float) -> str | None:
        """The first job this state holds from after ``t`` (a pending job submitted, or
        running work started, after it), said for a message; None when there is none.
        A loaded state's own ``now`` has none."""
        for j in self.jobs:
            if j.submit_time > t:
                return f"job {j.id!r} is submitted at {j.submit_time:.17g}"
        for r in self.running:
            if r.start_time > t:
                return f"running job {r.id!r} starts at {r.start_time:.17g}"
        return None

    def started_after(self, t: float) -> list[RunningJob]:
        """Running work started after ``t`` (a session at ``t`` still counts it as
        holding what it holds: the state says what it holds, not what it did before)."""
        return [r for r in self.running if r.start_time > t]

    def seen_at(self, t: float) -> ClusterState:
        """This state for a session at ``t`` before some of its pending jobs were
        submitted (``--now`` earlier than the capture, as for ``sprio`` at the last
        priority recalculation): such a job may not start before its submission, so it
        waits as for a begin time (``begin_time`` at least its ``submit_time``; Slurm's
        eligible time is never before it). Its priority inputs are unchanged."""
        if not any(j.submit_time > t for j in self.jobs):
            return self
        jobs = tuple(
            replace(j, begin_time=max(j.submit_time, j.begin_time or j.submit_time))
            if j.submit_time > t
            else j
            for j in self.jobs
        )
        return replace(self, jobs=jobs, gated=True)

    def queue_priority(self, name: str) -> int:
        """The queue's priority; 0 for a queue the file does not declare."""
        queue = self.queues.get(name)
        return queue.priority if queue is not None else 0

    def free(self, name: str) -> FloatArray:
        """Per host: capacity of consumable ``name`` minus what running work holds, in
        the resource's own unit (computed exactly in units, then converted).

        NaN where the host lacks the resource, so every comparison on it is false.
        """
        return (self.hosts.units[name] - self.used[name]) / self.hosts.scales[name]

    def held(self, name: str) -> FloatArray:
        """Per host: what running work holds of consumable ``name``, in its own unit."""
        return self.used[name] / self.hosts.scales[name]

    def shared_held(self, name: str) -> float:
        """What running work holds of shared ``name``, in its own unit."""
        return self.shared_used[name] / self.catalog.scales[name]

    def shared_free(self, name: str) -> float:
        """What is left of a cluster-wide shared resource, in its own unit."""
        return self.shared_free_units(name) / self.catalog.scales[name]

    def shared_free_units(self, name: str) -> float:
        """What is left of a cluster-wide shared resource, in units of its resolution."""
        total = to_units(self.shared_total[name], self.catalog.scales[name])
        return total - self.shared_used[name]


def build_state(spec: StateSpec, source: str | None = None) -> ClusterState:
    """The state a checked spec describes; raises :class:`SpecError` when running work
    or limits do not fit the cluster."""
    catalog = build_catalog(spec)
    hosts = HostTable.from_specs(spec.hosts, catalog)
    used = {name: np.zeros(hosts.n) for name in hosts.capacity}
    shared_total = dict.fromkeys(catalog.names(ResourceKind.SHARED), 0.0)
    for name, s in spec.shared.items():
        _check_grid(("shared", name, "total"), s.total, catalog, name)
        shared_total[name] = s.total
    shared_used = dict.fromkeys(shared_total, 0.0)
    books = (shared_total, shared_used)
    running = tuple(
        _running(spec, i, hosts, catalog, used, books) for i in range(len(spec.running))
    )
    for i, lim in enumerate(spec.limits):
        _check_limit_resources(lim, i, catalog)
        for name, amount in lim.resources.items():
            _check_grid(("limits", i, "resources", name), amount, catalog, name)
    state = ClusterState(
        catalog=catalog,
        hosts=hosts,
        used=used,
        shared_total=shared_total,
        shared_used=shared_used,
        queues={name: _queue(name, q) for name, q in spec.queues.items()},
        limits=tuple(_limit(lim) for lim in spec.limits),
        running=running,
        jobs=tuple(_pending(job, i) for i, job in enumerate(spec.jobs)),
        source=source,
        default_picker=spec.picker,
        default_backfill=spec.backfill,
        now=spec.now,
        scheduler=spec.scheduler,
        timezone=spec.timezone,
        scheduler_resolution=spec.scheduler_resolution,
        gated=any(
            j.hold or j.begin_time is not None or j.dependency or j.array or j.also_queues
            for j in spec.jobs
        ),
        reservations=tuple(
            _reservation(r, ("reservations", i), hosts, catalog)
            for i, r in enumerate(spec.reservations)
        ),
        left_out=frozenset(spec.left_out),
    )
    if spec.priority is None:
        return state
    return replace(state, priority=_priority(spec.priority, state.session_time()))


def _priority(spec: PrioritySpec, now: float) -> PrioritySetup:
    """The priority section as a setup (checked by check_spec already)."""
    from xce.priority.assoc import Association, AssocTree, UsageBook
    from xce.priority.config import config_from_mapping, slurm_conf_settings
    from xce.priority.setup import PrioritySetup

    settings: dict[str, object] = {}
    if spec.slurm_conf is not None:
        settings.update(slurm_conf_settings(spec.slurm_conf.splitlines(), "slurm_conf line"))
    settings.update(spec.settings())
    config = config_from_mapping(settings)
    tree = AssocTree(
        Association(a.account, a.user, a.parent, a.shares, a.usage, a.priority)
        for a in spec.associations
    )
    since = spec.usage_time if spec.usage_time is not None else now
    usage = UsageBook(tree, since, config.decay)
    qos = {name: q.priority for name, q in spec.qos.items()}
    setup = PrioritySetup(config, tree, usage, qos, spec.default_qos, settings)
    if spec.lsf is not None:
        from xce.priority.lsf import LsfUsage, lsf_config

        given = {k: v for k, v in spec.lsf.items() if k != "usage"}
        setup.lsf = lsf_config(given)
        setup.lsf_settings = given
        book = LsfUsage(setup.lsf.decay, since)
        for queue, users in (spec.lsf.get("usage") or {}).items():
            for user, hours in users.items():
                book.set(str(queue), str(user), float(hours))
        setup.lsf_usage = book
    return setup


# -- running work ----------------------------------------------------------------------


def _running(
    spec: StateSpec,
    i: int,
    hosts: HostTable,
    catalog: ResourceCatalog,
    used: dict[str, FloatArray],
    shared: tuple[dict[str, float], dict[str, float]],
) -> RunningJob:
    """Charge running job ``i`` to ``used`` and the shared books, checking it fits."""
    run = spec.running[i]
    allocs = tuple(
        _charge_host(a, ("running", i, "alloc", j), hosts, catalog, used)
        for j, a in enumerate(run.alloc)
    )
    total, in_use = shared
    for name, amount in run.shared.items():
        path: DocPath = ("running", i, "shared", name)
        if catalog.kind(name) is not ResourceKind.SHARED:
            raise SpecError(path, _not_a(name, catalog, ResourceKind.SHARED), at_key=True)
        scale = _check_grid(path, amount, catalog, name)
        in_use[name] += to_units(amount, scale)
        _check_fits(
            path, in_use[name], to_units(total[name], scale), scale, f"of shared {quote(name)}"
        )
    return _running_job(run, allocs)


def _charge_host(
    alloc: HostAllocSpec,
    at: DocPath,
    hosts: HostTable,
    catalog: ResourceCatalog,
    used: dict[str, FloatArray],
) -> HostAlloc:
    h = hosts.index.get(alloc.host)
    if h is None:
        raise SpecError((*at, "host"), f"unknown host {quote(alloc.host)}")
    _check_number((*at, "slots"), alloc.slots)
    _charge(h, SLOTS, alloc.slots, (*at, "slots"), hosts, used)
    for name, amount in alloc.resources.items():
        path: DocPath = (*at, "resources", name)
        if name == SLOTS or name not in hosts.capacity:
            raise SpecError(path, _not_a(name, catalog, ResourceKind.CONSUMABLE), at_key=True)
        _check_grid(path, amount, catalog, name)
        _charge(h, name, amount, path, hosts, used)
    return HostAlloc(alloc.host, alloc.slots, MappingProxyType(dict(alloc.resources)))


def _charge(
    h: int, name: str, amount: float, path: DocPath, hosts: HostTable, used: dict[str, FloatArray]
) -> None:
    capacity = float(hosts.units[name][h])
    if math.isnan(capacity):
        raise SpecError(path, f"host {quote(hosts.names[h])} has no {quote(name)}", at_key=True)
    scale = hosts.scales[name]
    used[name][h] += to_units(amount, scale)
    what = f"{name} on host {quote(hosts.names[h])}"
    _check_fits(path, float(used[name][h]), capacity, scale, what)


def _not_a(name: str, catalog: ResourceCatalog, wanted: ResourceKind) -> str:
    kind = catalog.kind(name)
    if kind is None:
        return f"unknown resource {quote(name)}"
    if name == SLOTS:
        return "slots are given by the `slots` key"
    return f"{quote(name)} is {describe(kind)}, not {describe(wanted)}"


def _check_grid(path: DocPath, amount: float, catalog: ResourceCatalog, name: str) -> float:
    """The scale of ``name``, once ``amount`` of it is known to count exactly."""
    _check_number(path, amount)
    scale = catalog.scales.get(name, 1.0)
    why = grid_error(amount, scale, name)
    if why is not None:
        raise SpecError(path, why)
    return scale


def _check_number(path: DocPath, value: float) -> None:
    """Decoding refuses numbers out of range; a spec built in Python is checked here."""
    why = out_of_range(value)
    if why is not None:
        raise SpecError(path, why, shown=show(value))


def _check_fits(path: DocPath, total: float, capacity: float, scale: float, what: str) -> None:
    """``total`` and ``capacity`` in units: exact, no tolerance."""
    if total > capacity:
        held, cap = _num(total / scale), _num(capacity / scale)
        raise SpecError(path, f"running work holds {held} {what} but there are only {cap}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(x)


def _check_limit_resources(lim: LimitSpec, i: int, catalog: ResourceCatalog) -> None:
    for name in lim.resources:
        kind = catalog.kind(name)
        if name == SLOTS or kind is None or not kind.consumable:
            path: DocPath = ("limits", i, "resources", name)
            raise SpecError(path, _not_a(name, catalog, ResourceKind.CONSUMABLE), at_key=True)


# -- spec -> runtime objects -------------------------------------------------------------


def _queue(name: str, q: QueueSpec) -> Queue:
    return Queue(
        name,
        q.priority,
        tuple(q.preempts),
        q.picker,
        MappingProxyType(dict(q.shares)),
        q.default_runtime,
        q.max_runtime,
        q.backfill,
        q.priority_job_factor,
    )


def _reservation(
    rsv: ReservationSpec, at: DocPath, hosts: HostTable, catalog: ResourceCatalog
) -> AdvanceReservation:
    from xce.cluster.reserved import select_hosts  # late: resreq imports cluster modules

    if rsv.select is not None:
        chosen = select_hosts(rsv.select, (*at, "select"), hosts, catalog)
    else:
        chosen = _named_hosts(rsv.hosts or [], (*at, "hosts"), hosts)

    def names(xs: list[str] | None) -> tuple[str, ...] | None:
        return tuple(xs) if xs is not None else None

    return AdvanceReservation(
        name=rsv.name,
        hosts=chosen,
        start=rsv.start,
        end=rsv.end,
        users=names(rsv.users),
        queues=names(rsv.queues),
        projects=names(rsv.projects),
        select=rsv.select,
    )


def _named_hosts(names: list[str], at: DocPath, hosts: HostTable) -> tuple[int, ...]:
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name not in hosts.index:
            raise SpecError((*at, k), f"unknown host {quote(name)}")
        if name in seen:
            raise SpecError((*at, k), f"host {quote(name)} is listed twice (also [{seen[name]}])")
        seen[name] = k
    return tuple(hosts.index[name] for name in names)


def _limit(lim: LimitSpec) -> Limit:
    def names(xs: list[str] | None) -> tuple[str, ...] | None:
        return tuple(xs) if xs is not None else None

    return Limit(
        name=lim.name,
        users=names(lim.users),
        queues=names(lim.queues),
        projects=names(lim.projects),
        per_host=lim.per_host,
        slots=lim.slots,
        jobs=lim.jobs,
        resources=MappingProxyType(dict(lim.resources)),
    )


def _running_job(run: RunningSpec, allocs: tuple[HostAlloc, ...]) -> RunningJob:
    return RunningJob(
        id=str(run.id),
        user=run.user,
        queue=run.queue,
        project=run.project,
        start_time=run.start_time,
        alloc=allocs,
        shared=MappingProxyType(dict(run.shared)),
        resreq=run.resreq,
        runtime=run.runtime,
        requested_time=run.requested_time,
        name=run.name,
        array_job=run.array_job,
    )


def _pending(job: JobSpec, order: int) -> PendingJob:
    low, high = job.task_range()
    return PendingJob(
        id=str(job.id),
        user=job.user,
        queue=job.queue,
        project=job.project,
        min_tasks=low,
        max_tasks=high,
        resreq=job.resreq,
        submit_time=job.submit_time,
        runtime=job.runtime,
        order=order,
        tasks_given=not (job.tasks is None and job.min_tasks is None and job.max_tasks is None),
        requested_time=job.requested_time,
        reservation=job.reservation,
        reason=job.reason,
        priority=job.priority,
        hold=job.hold,
        begin_time=job.begin_time,
        dependency=parse_dependency(job.dependency) if job.dependency is not None else None,
        name=job.name,
        array=parse_array(job.array) if job.array is not None else None,
        scheduler_start=job.scheduler_start,
        also_queues=tuple(
            QueueEntry(e.queue, e.priority, e.resreq if e.resreq is not None else job.resreq)
            for e in job.also_queues
        ),
        qos=job.qos,
        nice=job.nice,
        nodes=job.nodes,
        accrue_time=job.accrue_time,
    )
