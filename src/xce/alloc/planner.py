"""Planning over future time: the ``PLANNED(T, d)`` availability view (design §3a) that
backfill and advance reservations use (issue 12; docs/backfill.md).

A :class:`Planner` lives for one session. At session start it builds a
:class:`~xce.alloc.profile.Profile` from the session's books: every running job gives its
holdings back at its estimated end (:mod:`xce.cluster.estimates`; a job without an
estimate never does, a job past its estimate does so *now*). As the session goes on,
each job started is held over ``[now, now + estimate)`` and each job planned over
``[T, T + estimate)``.

- :meth:`Planner.start_now`: may the job start now? It is placed, by the ordinary
  allocator, on a view whose availability is, per host, the lower of the books (what is
  really free) and the profile's minimum over the job's estimated run: so it never takes
  what a planned job will need before it ends. When no planned hold begins before the job
  would end and no advance reservation is in the way, that view *is* the books, and the
  job is decided exactly as without planning (the same call, the same shortcuts).
- :meth:`Planner.plan`: the job's earliest start: the first instant T (now, or one at
  which the profile changes) at which it can be placed on the profile's minimum over
  ``[T, T + estimate)``, preferring the hosts freed latest by T.

Advance reservations are masks on those views: a job a reservation does not admit sees
its hosts empty whenever its run would overlap the window; a job naming one sees only
its hosts, and only runs inside the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xce.alloc.books import SessionBooks
from xce.alloc.outcome import (
    Decision,
    Dispatched,
    JobAllocation,
    PendInfo,
    Pending,
    PendReason,
    PlannedStart,
)
from xce.alloc.profile import Profile
from xce.cluster.catalog import SLOTS
from xce.cluster.estimates import estimate, estimated_end
from xce.cluster.state import AdvanceReservation, PendingJob
from xce.cluster.units import to_units

if TYPE_CHECKING:
    from xce.alloc.engine import Allocator, JobRequest

__all__ = ["Planner"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
_ONE = np.zeros(1, dtype=np.intp)  # the shared profile's one "host"


@dataclass(frozen=True, slots=True)
class _Held:
    """A job planned this session: for pend messages."""

    job: str
    start: float


class Planner:
    """One session's plan (see the module docstring). ``allocator`` must have begun the
    session: the profile starts from its books as they are now."""

    def __init__(self, allocator: Allocator, now: float) -> None:
        if not math.isfinite(now):
            raise ValueError(f"a session time must be finite, not {now}")
        self.allocator = allocator
        self.now = now
        books = allocator.books
        state = allocator.state
        self._names = tuple(state.hosts.units)
        self.profile = Profile(now, {n: books.units(n) for n in self._names})
        shared = {n: np.array([books.shared_units(n)]) for n in state.shared_total}
        self.shared = Profile(now, shared)
        self._running_ends(allocator)
        self.reservations = {r.name: r for r in state.reservations if r.end > now}
        self._planned_from = math.inf  # earliest start of a planned (not started) hold
        self.planned: list[_Held] = []

    def _running_ends(self, allocator: Allocator) -> None:
        """Every running job gives its holdings back at its estimated end."""
        state, now = allocator.state, self.now
        for job in state.running:
            if job.id in allocator.preempted:
                continue  # preempted this session: its promise holds it already
            end = estimated_end(
                job.start_time, estimate(job.requested_time, state.queues.get(job.queue)), now
            )
            if not math.isfinite(end):
                continue  # no estimate: it holds its resources for planning purposes
            hosts, amounts, shared = allocator.footprint_of(job).columns()
            self.profile.release_columns(end, hosts, amounts)
            for name, units in shared:
                self.shared.release_columns(end, _ONE, {name: np.array([units])})

    # --- what a job may do now -------------------------------------------------------
    def estimate_of(self, job: PendingJob) -> float:
        """Seconds planning assumes ``job`` runs (``math.inf``: no estimate)."""
        return estimate(job.requested_time, self.allocator.state.queues.get(job.queue))

    def start_now(self, job: PendingJob, request: JobRequest, duration: float) -> Decision:
        """The job's decision now: dispatched (the session's books charged) only where
        it takes nothing a planned job or an advance reservation needs before it ends."""
        alloc, now = self.allocator, self.now
        end = now + duration
        own = self._own_window(job, now, end)
        if isinstance(own, PendInfo):
            return Pending(job.id, own)
        if own is None and not self._blocking(job, now, end) and self._planned_from >= end:
            return alloc.decide(request)  # the view is the books: decided as ever
        view = self._view(job, now, end, starting=True, prefer=False)
        decision = alloc.on_view(view, alloc.limits).try_place(request)
        if isinstance(decision, Dispatched):
            alloc.charge(request, decision.allocation)
            return decision
        if own is not None:
            return decision  # its reservation's hosts are all it may use
        if isinstance(alloc.try_place(request), Dispatched):
            return Pending(job.id, PendInfo(PendReason.RESERVED, self._why_reserved(job, end)))
        return alloc.decide(request)  # it does not fit now: the reason, as ever

    def started(self, allocation: JobAllocation, duration: float) -> None:
        """A job started now holds its allocation until its estimated end."""
        self._hold(self.now, self.now + duration, allocation)

    # --- planning --------------------------------------------------------------------
    def plan(self, job: PendingJob, request: JobRequest, duration: float) -> PlannedStart | None:
        """The job's earliest start and placement in the profile (None: no instant has
        room for it, or it runs only in a reservation that cannot take it)."""
        alloc = self.allocator
        fewest = min(sum(p.tasks for p in alt) for alt in request.requirement.alternatives)
        times, totals = self._slot_totals()
        for start in self._candidates(job, duration).tolist():
            end = start + duration
            if self._own_window(job, start, end) is not None:
                continue
            if _lowest(times, totals, start, end) < fewest:
                continue  # fewer slots in all than it has tasks, at some point of its run
            view = self._view(job, start, end, starting=False, prefer=True)
            decision = alloc.on_view(view, alloc.limits).try_place(request)
            if isinstance(decision, Dispatched):
                return PlannedStart(start, end, decision.allocation)
        return None

    def hold(self, job: str, plan: PlannedStart) -> None:
        """Keep ``plan``'s placement out of every later job's reach over its run."""
        self._hold(plan.start, plan.end, plan.allocation)
        self._planned_from = min(self._planned_from, plan.start)
        self.planned.append(_Held(job, plan.start))

    def _hold(self, start: float, end: float, allocation: JobAllocation) -> None:
        if not end > start:
            return  # a job of no duration holds nothing over time
        hosts, amounts = _units(allocation, self.allocator.books.scales)
        self.profile.hold_columns(start, end, hosts, amounts)
        scales = self.allocator.books.scales
        for name, amount in allocation.shared:
            units = np.array([to_units(amount, scales[name])])
            self.shared.hold_columns(start, end, _ONE, {name: units})

    def _candidates(self, job: PendingJob, duration: float) -> FloatArray:
        """Instants a plan may start at: now and every change of availability (and
        reservation bounds), within the job's own reservation if it names one."""
        found = [self.profile.times(), self.shared.times()]
        bounds = [t for r in self.reservations.values() for t in (r.start, r.end) if t > self.now]
        found.append(np.asarray(bounds, dtype=np.float64))
        times = np.unique(np.concatenate(found))
        own = self.reservations.get(job.reservation) if job.reservation is not None else None
        if own is not None:
            times = times[(times >= own.start) & (times + duration <= own.end)]
        return times

    def _slot_totals(self) -> tuple[FloatArray, FloatArray]:
        """The profile's slots over every ok host, as a step function: the total from
        ``times[i]`` until the next instant."""
        ok = self.allocator.books.ok
        now_total = float(np.nansum(self.profile.at(self.now)[SLOTS][ok]))
        times, hosts, deltas = self.profile.events(SLOTS)
        keep = ok[hosts] & (times > self.now)
        t, d = times[keep], deltas[keep]
        if not len(t):
            return np.array([self.now]), np.array([now_total])
        at, first = np.unique(t, return_index=True)
        steps = np.add.reduceat(d, first)
        return np.concatenate(([self.now], at)), now_total + np.concatenate(
            ([0.0], np.cumsum(steps))
        )

    # --- views -----------------------------------------------------------------------
    def _view(
        self, job: PendingJob, start: float, end: float, *, starting: bool, prefer: bool
    ) -> SessionBooks:
        books = self.allocator.books
        avail = self.profile.window(start, end) if end > start else self.profile.at(start)
        shared_now = self.shared.window(start, end) if end > start else self.shared.at(start)
        shared = {n: float(v[0]) for n, v in shared_now.items()}
        if starting:  # what is really free now (a job past its estimate still holds)
            avail = {n: np.minimum(a, books.units(n)) for n, a in avail.items()}
            shared = {n: min(v, books.shared_units(n)) for n, v in shared.items()}
        for hosts in self._masked(job, start, end):
            for a in avail.values():
                a[hosts] = np.minimum(a[hosts], 0.0)
        preference = self._preference(start) if prefer else None
        return books.view(avail, shared, preference)

    def _masked(self, job: PendingJob, start: float, end: float) -> list[IndexArray | slice]:
        """Hosts the job may not use over ``[start, end)`` because of reservations."""
        out: list[IndexArray | slice] = []
        own = self.reservations.get(job.reservation) if job.reservation is not None else None
        if own is not None:
            others = np.ones(self.allocator.state.hosts.n, dtype=np.bool_)
            others[list(own.hosts)] = False
            out.append(np.flatnonzero(others))
        for r in self._overlapping(job, start, end):
            out.append(np.asarray(r.hosts, dtype=np.intp))
        return out

    def _overlapping(self, job: PendingJob, start: float, end: float) -> list[AdvanceReservation]:
        """Reservations that do not admit ``job`` and whose window overlaps its run."""
        return [
            r
            for r in self.reservations.values()
            if r.start < end
            and start < r.end
            and not r.admits(job.reservation, job.user, job.queue, job.project)
        ]

    def _blocking(self, job: PendingJob, start: float, end: float) -> bool:
        return bool(self.reservations) and bool(self._overlapping(job, start, end))

    def _own_window(self, job: PendingJob, start: float, end: float) -> PendInfo | None:
        """Why a job naming a reservation cannot run over ``[start, end)`` (None: it may,
        or it names none)."""
        if job.reservation is None:
            return None
        r = self.reservations.get(job.reservation)
        name = job.reservation
        if r is None:
            return PendInfo(PendReason.RESERVATION, f"its reservation {name} has ended")
        if start < r.start:
            return PendInfo(
                PendReason.RESERVATION, f"waits for its reservation {name} to begin at {r.start:g}"
            )
        if end > r.end:
            return PendInfo(
                PendReason.RESERVATION,
                f"its estimated run ({_span(end - start)}) would pass the end of its "
                f"reservation {name} at {r.end:g}",
            )
        return None

    def _preference(self, start: float) -> FloatArray:
        """Per host: minus the latest instant up to ``start`` at which its slots rise
        (hosts freed latest first; hosts free all along last)."""
        times, hosts, deltas = self.profile.events(SLOTS)
        k = int(np.searchsorted(times, start, side="right"))
        rise = deltas[:k] > 0
        latest = np.full(self.allocator.state.hosts.n, -np.inf)
        np.maximum.at(latest, hosts[:k][rise], times[:k][rise])
        return -latest

    def _why_reserved(self, job: PendingJob, end: float) -> str:
        blocking = self._overlapping(job, self.now, end) if self.reservations else []
        if blocking:
            r = blocking[0]
            return (
                f"the hosts it fits on now are in advance reservation {r.name} "
                f"from {r.start:g} to {r.end:g}, which its estimated run would overlap"
            )
        ahead = [h for h in self.planned if h.start < end]
        if ahead:
            first = min(ahead, key=lambda h: h.start)
            return (
                f"what it fits on now is reserved for job {first.job}, planned to start at "
                f"{first.start:g}, before this job would end (backfill)"
            )
        return "what it fits on now is reserved for jobs planned to start before it would end"


def _lowest(times: FloatArray, totals: FloatArray, start: float, end: float) -> float:
    """The step function's lowest value over ``[start, end)``."""
    i = max(int(np.searchsorted(times, start, side="right")) - 1, 0)
    j = int(np.searchsorted(times, end, side="left")) if math.isfinite(end) else len(times)
    return float(totals[i : max(j, i + 1)].min())


def _units(
    allocation: JobAllocation, scales: Mapping[str, float]
) -> tuple[IndexArray, dict[str, FloatArray]]:
    """An allocation's claims as columns in units: host, slots and amounts per claim."""
    cols = allocation.columns()
    amounts = {SLOTS: cols.slots.astype(np.float64)}
    for name, column in cols.amounts.items():
        amounts[name] = np.round(column * scales[name])
    return cols.hosts, amounts


def _span(seconds: float) -> str:
    return "no end" if math.isinf(seconds) else f"{seconds:g} s"
