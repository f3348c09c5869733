"""The scheduling core: owns the cluster state, changes it only through events, runs
sessions that return decisions. It does no I/O; drivers feed it events and apply the
decisions they choose to (as ``JobStarted`` events)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from xce.alloc import (
    AllocatorRegistry,
    AllocOptions,
    CancelToken,
    Claim,
    ClaimRun,
    JobAllocation,
)
from xce.backfill import BackfillPolicy, BackfillRegistry
from xce.cluster import (
    SLOTS,
    AdvanceReservation,
    ClusterState,
    HostAlloc,
    HostAllocs,
    HostStatus,
    HostTable,
    PendingJob,
    Queue,
    ResourceCatalog,
    ResourceKind,
    RunningJob,
)
from xce.cluster.schema import MAX_NUMBER
from xce.cluster.units import grid_error, grid_errors, to_units
from xce.core.events import (
    Event,
    HostAdded,
    HostChanged,
    JobFinished,
    JobKilled,
    JobPreempted,
    JobStarted,
    JobSubmitted,
    JobUpdated,
    LimitsChanged,
    QueuesChanged,
    SharedChanged,
    TimeLimitChanged,
)
from xce.core.pickers import PickerRegistry, default_pickers
from xce.core.repeat import Started
from xce.core.session import (
    PickOrder,
    Session,
    SessionResult,
    array_task,
    job_request,
    pick_order,
)
from xce.errors import EventError, InputError
from xce.inputs import MAX_HOST_SLOTS
from xce.preempt import Preemptor

__all__ = ["SchedulerCore"]

# per resource: distinct hosts, and the amount on each (an array, or one for all)
_Holdings = list[tuple[str, "np.ndarray[Any, Any]", "np.ndarray[Any, Any] | float"]]

_NO_AMOUNTS: Mapping[str, float] = MappingProxyType({})


class SchedulerCore:
    """The cluster state of a scheduler and the one place it changes."""

    def __init__(
        self,
        state: ClusterState,
        *,
        registry: AllocatorRegistry | None = None,
        options: AllocOptions | None = None,
        pickers: PickerRegistry | None = None,
        picker: str | None = None,
        preemptor: Preemptor | None = None,
        backfills: BackfillRegistry | None = None,
        backfill: str | None = None,
    ) -> None:
        """``preemptor``: the victim-set iterator of queues that list ``preempts``
        (default ``lowest_priority_first``, docs/preemption.md). ``backfill``: the
        policy of queues that name none (docs/backfill.md)."""
        self._catalog = state.catalog
        t = state.hosts  # a copy: host events must not change the caller's state
        self._hosts = HostTable(
            t.names, t.status, t.capacity, t.numeric, t.strings, t.tags, t.scales
        )
        self._used = {k: v.copy() for k, v in state.used.items()}
        self._shared_total = dict(state.shared_total)
        self._shared_used = dict(state.shared_used)
        self._queues = dict(state.queues)
        self._limits = state.limits
        self._reservations = state.reservations
        self._running = {r.id: r for r in state.running}
        self._pending = {j.id: j for j in sorted(state.jobs, key=lambda j: j.order)}
        self._next_order = 1 + max((j.order for j in state.jobs), default=-1)
        self._source = state.source
        self._default_picker = picker or state.default_picker
        self._default_backfill = backfill or state.default_backfill
        self._now = state.now
        self._about = (state.scheduler, state.timezone, state.scheduler_resolution)
        self._gated = state.gated  # some job may wait at a gate: once, for good
        # the multifactor picker's usage book: a copy, charged as work ends
        self._priority = state.priority.copy() if state.priority is not None else None
        self._left_out = state.left_out  # INVALID entries' ids (a lenient load's)
        self._view: ClusterState | None = None
        self._held: dict[str, _Holdings] = {}  # what each started job holds, for release
        self._scratch = np.zeros(0, dtype=np.intp)  # see _distinct
        # the starts applied since the last session, while nothing else but submissions
        # changed the state (None: something did, or no session yet): Session.run(since=)
        self._since: list[Started] | None = None
        self._session = Session(
            self.state,
            registry=registry,
            options=options,
            pickers=pickers or default_pickers(),
            picker=self._default_picker,
            preemptor=preemptor,
            backfills=backfills,
            backfill=self._default_backfill,
        )

    # --- reading ---------------------------------------------------------------------
    @property
    def state(self) -> ClusterState:
        """The current state (a view; rebuilt after events)."""
        if self._view is None:
            self._view = ClusterState(
                catalog=self._catalog,
                hosts=self._hosts,
                used=self._used,
                shared_total=self._shared_total,
                shared_used=self._shared_used,
                queues=self._queues,
                limits=self._limits,
                running=tuple(self._running.values()),
                jobs=tuple(self._pending.values()),
                source=self._source,
                default_picker=self._default_picker,
                reservations=self._reservations,
                default_backfill=self._default_backfill,
                now=self._now,
                scheduler=self._about[0],
                timezone=self._about[1],
                scheduler_resolution=self._about[2],
                gated=self._gated,
                priority=self._priority,
                left_out=self._left_out,
            )
        return self._view

    @property
    def pending_count(self) -> int:
        """How many jobs are pending (without building a state view)."""
        return len(self._pending)

    @property
    def hosts(self) -> HostTable:
        """The hosts now (without building a state view)."""
        return self._hosts

    @property
    def reservations(self) -> tuple[AdvanceReservation, ...]:
        """The advance reservations (without building a state view)."""
        return self._reservations

    @property
    def catalog(self) -> ResourceCatalog:
        return self._catalog

    def pending_jobs(self) -> Iterator[PendingJob]:
        """The pending jobs in arrival order (do not apply events while iterating)."""
        return iter(self._pending.values())

    def pending(self, job_id: str) -> PendingJob | None:
        return self._pending.get(job_id)

    def running(self, job_id: str) -> RunningJob | None:
        return self._running.get(job_id)

    # --- sessions --------------------------------------------------------------------
    def run_session(
        self,
        *,
        threads: bool = False,
        token: CancelToken | None = None,
        jobs: Iterable[PendingJob] | None = None,
        skip_blocked: bool = False,
        now: float | None = None,
    ) -> SessionResult:
        """One session over the pending jobs (or ``jobs``, a subset of them); the state is
        not changed (apply decisions with ``JobStarted`` events). Raises
        :class:`~xce.errors.Cancelled` if cancelled. See :meth:`Session.run`."""
        session = self._session
        if session.state is not self.state:
            session.state = self.state
            session.allocator.rebind(self.state)
        since, self._since = self._since, None
        result = session.run(
            jobs, threads=threads, token=token, skip_blocked=skip_blocked, now=now, since=since
        )
        self._since = []
        return result

    def pick_order(self, now: float) -> PickOrder | None:
        """The order a session at ``now`` over every pending job picks them in while
        none starts (:func:`~xce.core.session.pick_order`); the state is not changed."""
        return pick_order(self.state, self.state.jobs, self._session.picker_for, now)

    def backfill_for(self, queue: str) -> BackfillPolicy:
        """The backfill policy ``queue`` uses."""
        return self._session.backfill_for(queue)

    def picker_name(self, queue: str) -> str:
        """The name of the picker ``queue`` uses."""
        q = self._queues.get(queue)
        own = q.picker if q is not None else None
        return own or self._session.default_picker

    # --- events ----------------------------------------------------------------------
    def apply(self, *events: Event) -> None:
        """Apply events in order; each is checked before it changes anything."""
        for event in events:
            self._apply(event)
            self._view = None
            since = self._since
            if since is None or isinstance(event, JobSubmitted):
                continue  # nothing to note
            if isinstance(event, JobStarted):
                since.append((event.job_id, event.time, event.allocation))
            else:
                self._since = None

    def _apply(self, event: Event) -> None:
        match event:
            case JobSubmitted(job):
                self._submit(job)
            case JobStarted(job_id, allocation, time):
                _check_number("JobStarted", f"job {job_id!r}: time", time)
                self._start(job_id, allocation, time)
            case (
                JobFinished(job_id, time) | JobKilled(job_id, time) | JobPreempted(job_id, time)
            ) if not _is_number(time):
                _check_number(type(event).__name__, f"job {job_id!r}: time", time)
            case (
                JobFinished(job_id, time) | JobKilled(job_id, time) | JobPreempted(job_id, time)
            ) if job_id in self._running:
                run = self._running.pop(job_id)
                self._release(run)
                self._charge_usage(run, time)
            case JobKilled(job_id) if job_id in self._pending:
                del self._pending[job_id]
            case JobPreempted(job_id) if job_id in self._pending:
                raise EventError(f"JobPreempted: job {job_id!r} is pending, not running")
            case JobFinished(job_id) | JobKilled(job_id) | JobPreempted(job_id):
                raise EventError(f"{type(event).__name__}: unknown job {job_id!r}")
            case JobUpdated(job):
                self._update(job)
            case TimeLimitChanged(job_id, requested, time):
                self._change_time_limit(job_id, requested, time)
            case HostAdded():
                self._add_host(event)
            case HostChanged():
                self._change_host(event)
            case SharedChanged(name, total):
                self._change_shared(name, total)
            case LimitsChanged(limits):
                names = [lim.name for lim in limits]
                if len(set(names)) != len(names):
                    raise EventError("LimitsChanged: two limits have the same name")
                for lim in limits:
                    if lim.slots is None and lim.jobs is None and not lim.resources:
                        raise EventError(f"limit {lim.name!r} sets none of slots, jobs, resources")
                    numbers = {"slots": lim.slots, "jobs": lim.jobs, **lim.resources}
                    for key, value in numbers.items():
                        if value is not None:
                            _check_number("LimitsChanged", f"limit {lim.name!r}: {key}", value)
                    for key in lim.resources:
                        kind = self._catalog.kind(key)
                        if key == SLOTS or kind is None or not kind.consumable:
                            raise EventError(
                                f"limit {lim.name!r}: {key!r} is not a consumable resource"
                            )
                self._limits = tuple(limits)
            case QueuesChanged(queues, default_picker):
                _check_queues(queues)
                for name in {
                    default_picker or "fcfs",
                    *(q.picker for q in queues.values() if q.picker),
                }:
                    try:
                        self._session.pickers.get(name)
                    except InputError:
                        raise EventError(f"QueuesChanged: unknown picker {name!r}") from None
                self._queues = dict(queues)
                self._default_picker = default_picker
                self._session.default_picker = default_picker or "fcfs"
            case _:
                raise EventError(f"not an event: {event!r}")

    def _submit(self, job: PendingJob) -> None:
        if job.id in self._pending or job.id in self._running:
            raise EventError(f"JobSubmitted: job {job.id!r} already exists")
        self._check_job("JobSubmitted", job)
        self._pending[job.id] = _numbered(job, self._next_order)
        self._next_order += 1
        self._gated = self._gated or job.gated

    def _update(self, job: PendingJob) -> None:
        old = self._pending.get(job.id)
        if old is None:
            raise EventError(f"JobUpdated: job {job.id!r} is not pending")
        self._check_job("JobUpdated", job)
        self._pending[job.id] = replace(job, order=old.order)
        self._gated = self._gated or job.gated

    def _check_job(self, what: str, job: PendingJob) -> None:
        for name in ("submit_time", "runtime", "requested_time", "begin_time"):
            value = getattr(job, name)
            if value is not None:
                _check_number(what, f"job {job.id!r}: {name}", value)
        try:
            job_request(job, self._catalog)
        except InputError as err:
            raise EventError(f"{what}: job {job.id!r}: {err}") from None

    def _start(self, job_id: str, allocation: JobAllocation, time: float) -> None:
        job = self._pending.get(job_id) or self._array_task(job_id)
        if job is None:
            raise EventError(f"JobStarted: {job_id!r} is not a pending job")
        if allocation.count == 0:
            raise EventError(f"JobStarted: job {job_id!r}: an allocation needs at least one host")
        _check_claims(job_id, allocation)
        held = self._in_units(job_id, self._holdings(job_id, allocation))
        scales = self._hosts.scales
        for name, hosts, amounts in held:
            free = self._hosts.units[name][hosts] - self._used[name][hosts]
            fits = free >= amounts  # exact (units); False where free is NaN, too
            if np.count_nonzero(fits) < len(fits):
                k = int(np.flatnonzero(~fits)[0])
                host = self._hosts.names[int(hosts[k])]
                want = np.broadcast_to(amounts, hosts.shape)[k] / scales[name]
                left = free[k] / scales[name]
                raise EventError(
                    f"JobStarted: job {job_id!r} wants {want:g} {name} on {host}; {left:g} free"
                )
        shared: dict[str, float] = {}
        for name, amount in allocation.shared:
            shared[name] = shared.get(name, 0.0) + amount
        shared_units: dict[str, float] = {}
        for name, amount in shared.items():
            if name not in self._shared_total:
                raise EventError(f"JobStarted: job {job_id!r}: unknown shared resource {name!r}")
            scale = self._catalog.scales[name]
            why = grid_error(amount, scale, name)
            if why is not None:
                raise EventError(f"JobStarted: job {job_id!r}: {why}")
            shared_units[name] = to_units(amount, scale)
            if self._shared_free(name) < shared_units[name]:
                raise EventError(f"JobStarted: job {job_id!r}: not enough shared {name}")
        for name, hosts, amounts in held:
            self._used[name][hosts] += amounts
        for name, amount in shared_units.items():
            self._shared_used[name] += amount
        if job.array_job is not None and job_id not in self._pending:
            self._take_task(job.array_job, job_id)
        else:
            del self._pending[job_id]
        self._running[job_id] = _running_job(job, allocation, shared, self._hosts.names, time)
        self._held[job_id] = held

    def _change_time_limit(self, job_id: str, requested: float | None, time: float) -> None:
        what = "TimeLimitChanged"
        _check_number(what, f"job {job_id!r}: time", time)
        if requested is not None:
            _check_number(what, f"job {job_id!r}: requested_time", requested)
            if requested < 0:
                raise EventError(f"{what}: job {job_id!r}: requested_time {requested} < 0")
        if job_id in self._running:
            run = self._running[job_id]
            self._running[job_id] = replace(run, requested_time=requested)
        elif job_id in self._pending:
            job = self._pending[job_id]
            self._pending[job_id] = replace(job, requested_time=requested)
        else:
            raise EventError(f"{what}: unknown job {job_id!r}")

    def _array_task(self, job_id: str) -> PendingJob | None:
        """Task ``412_7`` of a pending array record ``412`` that still holds index 7."""
        record_id, sep, index = job_id.rpartition("_")
        record = self._pending.get(record_id) if sep and index.isdigit() else None
        if record is None or record.array is None or int(index) not in record.array:
            return None
        return array_task(record, int(index))

    def _take_task(self, record_id: str, job_id: str) -> None:
        """The record no longer holds the task that started (gone with its last task)."""
        record = self._pending[record_id]
        assert record.array is not None
        left = record.array.without(int(job_id.rpartition("_")[2]))
        if len(left):
            self._pending[record_id] = replace(record, array=left)
        else:
            del self._pending[record_id]

    def _shared_free(self, name: str) -> float:
        """Units of shared ``name`` not held (exact)."""
        return (
            to_units(self._shared_total[name], self._catalog.scales[name]) - self._shared_used[name]
        )

    def _in_units(self, job_id: str, held: _Holdings) -> _Holdings:
        """Holdings in resolution units; an amount off its resource's grid is refused."""
        out: _Holdings = []
        scales = self._hosts.scales
        for name, hosts, amounts in held:
            scale = scales[name]
            if scale == 1.0 and name == SLOTS:
                out.append((name, hosts, amounts))
                continue
            units, bad = grid_errors(np.asarray(amounts, dtype=np.float64), scale)
            if bad.any():
                k = int(np.flatnonzero(bad.reshape(-1))[0])
                why = grid_error(float(np.asarray(amounts).reshape(-1)[k]), scale, name)
                raise EventError(f"JobStarted: job {job_id!r}: {why}")
            out.append((name, hosts, units if units.ndim else float(units)))
        return out

    def _holdings(self, job_id: str, allocation: JobAllocation) -> _Holdings:
        """Per resource: the distinct hosts of an allocation and the amount on each."""
        parts = allocation.parts
        if len(parts) == 1 and isinstance(parts[0], Claim):  # without numpy's fixed costs
            c = parts[0]
            if not 0 <= c.host < self._hosts.n:
                raise EventError(f"JobStarted: job {job_id!r}: no host #{c.host} in this cluster")
            one = np.array([c.host], dtype=np.intp)
            held: _Holdings = [(SLOTS, one, np.array([float(c.slots)]))]
            for name, amount in c.amounts:
                if name not in self._used:
                    raise EventError(
                        f"JobStarted: job {job_id!r}: {name!r} is not a host consumable"
                    )
                if amount:
                    held.append((name, one, np.array([amount])))
            return held
        if len(parts) == 1 and isinstance(parts[0], ClaimRun):
            run = _run_holdings(job_id, parts[0], self._hosts.n, self._used)
            if run is not None:
                return run
        cols = allocation.columns()
        hosts = cols.hosts
        bad = hosts[(hosts < 0) | (hosts >= self._hosts.n)]
        if len(bad):
            raise EventError(f"JobStarted: job {job_id!r}: no host #{int(bad[0])} in this cluster")
        for name in cols.amounts:
            if name not in self._used:
                raise EventError(f"JobStarted: job {job_id!r}: {name!r} is not a host consumable")
        if self._distinct(hosts):  # the usual case: one claim per host, no sort needed
            held = [(SLOTS, hosts, cols.slots.astype(np.float64))]
            for name, per_claim in cols.amounts.items():
                some = per_claim != 0  # a host lacking the resource is charged what it has
                held.append((name, hosts[some], per_claim[some]))
            return held
        uniq, where = np.unique(hosts, return_inverse=True)
        held = [(SLOTS, uniq, np.bincount(where, weights=cols.slots, minlength=len(uniq)))]
        for name, per_claim in cols.amounts.items():
            sums = np.bincount(where, weights=per_claim, minlength=len(uniq))
            some = sums != 0
            held.append((name, uniq[some], sums[some]))
        return held

    def _distinct(self, hosts: np.ndarray[Any, Any]) -> bool:
        """True if no host appears twice (a scatter into a per-host scratch, no sort)."""
        if len(self._scratch) != self._hosts.n:
            self._scratch = np.zeros(self._hosts.n, dtype=np.intp)
        k = np.arange(len(hosts), dtype=np.intp)
        self._scratch[hosts] = k
        return bool((self._scratch[hosts] == k).all())

    def _charge_usage(self, run: RunningJob, end: float) -> None:
        """What ``run`` used, charged to its association (the multifactor picker's
        fair share), when the state keeps usage."""
        if self._priority is not None:
            self._priority.charge(
                run.user, run.project, run.queue, float(run.slots), run.start_time, end
            )

    def _release(self, run: RunningJob) -> None:
        held = self._held.pop(run.id, None)
        if held is None:  # running work the core was built with
            index, scales = self._hosts.index, self._hosts.scales
            for a in run.alloc:
                h = index[a.host]
                self._used[SLOTS][h] -= a.slots
                for name, amount in a.resources.items():
                    self._used[name][h] -= to_units(amount, scales[name])
        else:
            for name, hosts, amounts in held:
                self._used[name][hosts] -= amounts
        for name, amount in run.shared.items():
            self._shared_used[name] -= to_units(amount, self._catalog.scales[name])

    def _add_host(self, e: HostAdded) -> None:
        if e.name in self._hosts.index:
            raise EventError(f"HostAdded: host {e.name!r} already exists")
        _check_number("HostAdded", f"host {e.name!r}: slots", e.slots, MAX_HOST_SLOTS)
        if e.slots < 0:
            raise EventError(f"HostAdded: host {e.name!r}: slots must be >= 0")
        if not float(e.slots).is_integer():
            raise EventError(f"HostAdded: host {e.name!r}: slots must be a whole number")
        _parse_status("HostAdded", e.name, e.status)
        for key, value in e.resources.items():
            _check_number("HostAdded", f"host {e.name!r}: {key}", value)
            if self._catalog.kind(key) is not ResourceKind.CONSUMABLE or key == SLOTS or value < 0:
                raise EventError(
                    f"HostAdded: host {e.name!r}: {key!r} is not a consumable amount >= 0"
                )
            why = grid_error(value, self._catalog.scales[key], key)
            if why is not None:
                raise EventError(f"HostAdded: host {e.name!r}: {why}")
        for key, attr in e.attributes.items():
            if isinstance(attr, float | int) and not isinstance(attr, bool):
                _check_number("HostAdded", f"host {e.name!r}: attribute {key!r}", attr)
            if self._catalog.kind(key) is not _attribute_kind(attr) or key == "hname":
                raise EventError(
                    f"HostAdded: host {e.name!r}: attribute {key!r} does not fit the catalog"
                )
        self._hosts = self._hosts.appended(e.name, e.slots, e.resources, e.attributes, e.status)
        self._used = {k: np.append(v, 0.0) for k, v in self._used.items()}

    def _change_host(self, e: HostChanged) -> None:
        h = self._hosts.index.get(e.name)
        if h is None:
            raise EventError(f"HostChanged: unknown host {e.name!r}")
        status = _parse_status("HostChanged", e.name, e.status) if e.status is not None else None
        capacity = dict(e.capacity or {})
        for key, value in capacity.items():  # every part checked before anything changes
            limit = MAX_HOST_SLOTS if key == SLOTS else MAX_NUMBER
            _check_number("HostChanged", f"host {e.name!r}: {key}", value, limit)
            if key == SLOTS and not float(value).is_integer():
                raise EventError(f"HostChanged: host {e.name!r}: slots must be a whole number")
            if key not in self._hosts.capacity:
                raise EventError(f"HostChanged: {key!r} is not a consumable host resource")
            scale = self._hosts.scales[key]
            why = grid_error(value, scale, key) if not math.isnan(value) else None
            if why is not None:
                raise EventError(f"HostChanged: host {e.name!r}: {why}")
            used = self._used[key][h]
            if not value >= 0 or (not math.isnan(used) and to_units(value, scale) < used):
                raise EventError(
                    f"HostChanged: host {e.name!r}: {key}={value:g} is below "
                    f"the {used / scale:g} running work holds"
                )
        for key, value in capacity.items():
            self._hosts.set_capacity(h, key, value)
        if status is not None:
            self._hosts.set_status(h, status)

    def _change_shared(self, name: str, total: float) -> None:
        if name not in self._shared_total:
            raise EventError(f"SharedChanged: unknown shared resource {name!r}")
        if not math.isfinite(total):
            raise EventError(f"SharedChanged: {name} total must be a number, got {total}")
        scale = self._catalog.scales[name]
        why = grid_error(total, scale, name)
        if why is not None:
            raise EventError(f"SharedChanged: {why}")
        if to_units(total, scale) < self._shared_used[name]:
            raise EventError(
                f"SharedChanged: {name} total {total:g} is below "
                f"the {self._shared_used[name] / scale:g} held"
            )
        self._shared_total[name] = total


def _finite(value: object) -> bool:
    """A finite real number (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_number(value: object) -> bool:
    """A finite real number within MAX_NUMBER in magnitude."""
    return _finite(value) and abs(value) <= MAX_NUMBER  # type: ignore[arg-type]


def _check_number(event: str, what: str, value: object, limit: float = MAX_NUMBER) -> None:
    """Refuse a number an event carries unless it is finite and at most ``limit`` in
    magnitude (the state file's limits: a state written from the core must load)."""
    if not _finite(value):
        raise EventError(f"{event}: {what} must be a finite number, got {value!r}")
    assert isinstance(value, int | float)
    if abs(value) > limit:
        raise EventError(f"{event}: {what} is {value!r}, more than {limit}")


def _parse_status(event: str, host: str, status: object) -> HostStatus:
    """``status`` as a HostStatus (a member, its value, or ok/closed/unavail), else EventError."""
    try:
        if isinstance(status, str):
            return HostStatus.parse(status)
        if isinstance(status, int) and not isinstance(status, bool):
            return HostStatus(status)
    except (KeyError, ValueError):
        pass
    raise EventError(
        f"{event}: host {host!r}: unknown status {status!r} (expected ok, closed or unavail)"
    )


def _check_claims(job_id: str, allocation: JobAllocation) -> None:
    """Every claim takes at least one slot and amounts >= 0 of resources other than slots."""
    for part in allocation.parts:
        if not part.slots >= 1:
            raise EventError(f"JobStarted: job {job_id!r}: a claim of {part.slots} slots")
        for name, amount in part.amounts:
            if name == SLOTS or not 0 <= amount < math.inf:
                raise EventError(f"JobStarted: job {job_id!r}: a claim of {amount} {name}")


def _run_holdings(
    job_id: str, run: ClaimRun, n: int, used: Mapping[str, np.ndarray[Any, Any]]
) -> _Holdings | None:
    """A single run on ascending hosts (the bulk allocator's output): distinct hosts, one
    amount for all, checked without a sort. None if the hosts are not ascending."""
    hosts = run.hosts
    if not len(hosts) or np.count_nonzero(hosts[1:] > hosts[:-1]) < len(hosts) - 1:
        return None
    if hosts[0] < 0 or hosts[-1] >= n:
        bad = int(hosts[0]) if hosts[0] < 0 else int(hosts[-1])
        raise EventError(f"JobStarted: job {job_id!r}: no host #{bad} in this cluster")
    amounts: dict[str, float] = {}
    for name, amount in run.amounts:
        if name not in used:
            raise EventError(f"JobStarted: job {job_id!r}: {name!r} is not a host consumable")
        amounts[name] = amounts.get(name, 0.0) + amount
    held: _Holdings = [(SLOTS, hosts, float(run.slots))]
    held += [(name, hosts, amount) for name, amount in amounts.items() if amount]
    return held


def _check_queues(queues: Mapping[str, Queue]) -> None:
    for name, q in queues.items():
        for other in q.preempts:
            if other == name or other not in queues:
                raise EventError(f"QueuesChanged: queue {name!r} cannot preempt {other!r}")
        for user, share in q.shares.items():
            if not share >= 0:
                raise EventError(f"QueuesChanged: queue {name!r}: share of {user!r} must be >= 0")


def _attribute_kind(value: object) -> ResourceKind:
    if isinstance(value, bool):
        return ResourceKind.BOOLEAN
    if isinstance(value, str):
        return ResourceKind.STRING
    return ResourceKind.NUMERIC


def _numbered(job: PendingJob, order: int) -> PendingJob:
    """``job`` with its arrival number (``dataclasses.replace`` without its per-call cost
    for the common job; one with a reservation, a gate, an imported reason or priority,
    a multifactor input or a session's entry keeps them all: tests/test_core_events.py
    sets each field of a pending job in turn)."""
    if (
        job.gated
        or job.reservation is not None
        or job.reason is not None
        or job.priority is not None
        or job.name is not None
        or job.array_job is not None
        or job.scheduler_start is not None
        or job.entry_of is not None
        or job.qos is not None
        or job.nice != 0
        or job.nodes is not None
        or job.accrue_time is not None
    ):
        return replace(job, order=order)
    return PendingJob(
        job.id,
        job.user,
        job.queue,
        job.project,
        job.min_tasks,
        job.max_tasks,
        job.resreq,
        job.submit_time,
        job.runtime,
        order,
        job.tasks_given,
        job.requested_time,
    )


@lru_cache(maxsize=1 << 16)
def _plain(name: str, slots: int) -> HostAlloc:
    """Slots alone on a host: immutable, so one object serves every job (wide jobs)."""
    return HostAlloc(name, slots, _NO_AMOUNTS)


def _host_allocs(allocation: JobAllocation, names: list[str]) -> HostAllocs:
    """What the job holds, per claim, made only when someone reads it."""

    def build() -> tuple[HostAlloc, ...]:
        return tuple(
            _plain(names[c.host], c.slots)
            if not c.amounts
            else HostAlloc(names[c.host], c.slots, dict(c.amounts))
            for c in allocation.claims
        )

    return HostAllocs(build, allocation.count, allocation.slots)


def _running_job(
    job: PendingJob,
    allocation: JobAllocation,
    shared: Mapping[str, float],
    names: list[str],
    time: float,
) -> RunningJob:
    return RunningJob(
        id=job.id,
        user=job.user,
        queue=job.queue,
        project=job.project,
        start_time=time,
        alloc=_host_allocs(allocation, names),
        shared=dict(shared),
        resreq=job.resreq,
        runtime=job.runtime,
        requested_time=job.requested_time,
        name=job.name,
        array_job=job.array_job,
    )
