"""The ``slurm`` backfill policy: plan as Slurm 22.05's sched/backfill plans, so that a
session over an imported Slurm state gives Slurm's expected starts (``squeue --start``;
issue 25; docs/backfill.md, "slurm").

Per job, in the session's pick order, :class:`SlurmPlanner` runs one record of Slurm's
``_attempt_backfill`` (sched/backfill/backfill.c at slurm-22-05-8-1):

1. ``start_res`` = now (or the retry's ``later_start``); the job's window is
   ``[start_res, start_res + TL]``, TL its estimate (min(requested, queue max_runtime)).
2. Candidates: the job's eligible hosts (its static select, e.g. ``partition_batch``)
   free in every whole-node slot over the window (:class:`NodeSpace.candidates`), which
   also gives ``later_start``. Too few: retry at ``later_start``, or give up (no plan).
3. Will-run over every running job, cluster-wide, by estimated end, in Slurm's batches
   (:func:`~xce.backfill.slurm_select.will_run`), the nodes chosen as cons_tres does
   (:mod:`xce.backfill.slurm_fit`). No fit: retry at ``later_start`` or give up.
4. ``t = max(will-run start, start_res)``. ``t <= now``: the job starts now. A
   ``later_start`` before ``t``: retry there. The chosen nodes busy in a slot over the
   rounded run: retry at ``t``. Else the job is planned at ``t`` and (within the window)
   its nodes are taken out of the table, whole, over ``[floor(t/R)*R, floor((t+TL)/R)*R)``.

Jobs at a gate (a begin time, a dependency, an array's limit) are not in Slurm's queue:
they are planned from the gate's time on, and reserve nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xce.alloc import (
    Allocator,
    Decision,
    Dispatched,
    JobAllocation,
    JobRequest,
    PendInfo,
    Pending,
    PendReason,
    PlannedStart,
)
from xce.alloc.planner import Planner
from xce.backfill.slurm_fit import Fitter, Held, bits_of, held_of, hosts_of
from xce.backfill.slurm_select import Ending, will_run
from xce.backfill.slurm_slots import NodeSpace
from xce.cluster.estimates import estimate, estimated_end
from xce.cluster.state import PendingJob
from xce.errors import InternalError

__all__ = ["BF_RESOLUTION", "BF_WINDOW", "SlurmBackfill", "SlurmPlanner"]

BF_RESOLUTION = 60.0  # s: Slurm's default bf_resolution (the state's scheduler_resolution wins)
BF_WINDOW = 86400.0  # s: Slurm's default bf_window (1440 min)
_MAX_TRIES = 100_000  # tries of one job: never reached (each retry starts later; a bug else)

IndexArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class _Found:
    """One record's outcome: start ``t`` on ``nodes`` (bit set) with ``allocation``;
    ``reserve``: the rounded window to take the nodes out over (None: not reserved)."""

    t: float
    nodes: int
    allocation: JobAllocation
    reserve: tuple[float, float] | None


class SlurmPlanner(Planner):
    """A session's plan made by Slurm's rules (see the module docstring)."""

    def __init__(self, allocator: Allocator, now: float) -> None:
        super().__init__(allocator, now)
        state = allocator.state
        books = allocator.books
        self.resolution = float(state.scheduler_resolution or BF_RESOLUTION)
        self.window = BF_WINDOW
        self._n = state.hosts.n
        self.order: IndexArray = np.arange(self._n, dtype=np.intp)  # Slurm's node index order
        self.space = NodeSpace(now, self.resolution, self.window, bits_of(books.ok, self._n))
        self._running: list[Ending[Held]] = []
        preempted = frozenset(allocator.preempted)
        for job in state.running:
            if job.id in preempted:
                continue
            end = estimated_end(
                job.start_time, estimate(job.requested_time, state.queues.get(job.queue)), now
            )
            if math.isfinite(end):  # a job without an estimate never ends
                hosts, amounts, shared = allocator.footprint_of(job).columns()
                self._add_running(end, Held(hosts, amounts, tuple(shared)))
        self._found: dict[str, _Found | None] = {}  # this session's outcomes, by job
        self._earliest: tuple[str, float] | None = None  # the earliest planned job
        self.planned = 0

    def _add_running(self, end: float, held: Held) -> None:
        self._running.append(Ending(end, bits_of(held.hosts, self._n), held))
        self._running.sort(key=lambda e: e.end)  # stable: equal ends keep their order

    # --- the session's calls ------------------------------------------------------------
    def start_now(
        self,
        job: PendingJob,
        request: JobRequest,
        duration: float,
        hint: IndexArray | None = None,
    ) -> Decision:
        """Run the job's record: dispatched (the books charged) when Slurm would start
        it now, else pending with the outcome kept for :meth:`plan`."""
        own = self.own_window(job, self.now, self.now + duration)
        if own is not None:
            return Pending(job.id, self.never_in_own(job, request) or own)
        found = self._record(job, request, duration, self.now)
        if found is not None and found.t <= self.now:
            started = self._start(request, found)
            if started is not None:
                return started
            # it fits only on what a job past its estimate still holds: as Slurm, whose
            # start then fails, planned now and reserved
            found = self._reserved_now(found, duration)
        self._found[job.id] = found
        return self._pend(job, request, duration)

    def started(self, allocation: JobAllocation, duration: float) -> None:
        """A job started now is a running job to the will-run tests that follow."""
        end = self.now + duration
        if math.isfinite(end):
            self._add_running(end, held_of(allocation, self.allocator.books.scales))

    def plan(
        self,
        job: PendingJob,
        request: JobRequest,
        duration: float,
        hint: IndexArray | None = None,
        *,
        earliest: float | None = None,
    ) -> PlannedStart | None:
        """The job's planned start: its record's outcome, or for a job at a gate
        (``earliest``) a record run from the gate's time on, which reserves nothing
        (Slurm's queue does not hold such a job)."""
        if earliest is None and job.id in self._found:
            found = self._found[job.id]
        else:
            start = self.now if earliest is None else max(self.now, earliest)
            found = self._record(job, request, duration, start)
            if earliest is not None:
                found = self._at_gate(job, request, start, found)
            self._found[job.id] = found
        if found is None:
            return None
        return PlannedStart(found.t, found.t + duration, found.allocation)

    def _at_gate(
        self, job: PendingJob, request: JobRequest, start: float, found: _Found | None
    ) -> _Found | None:
        """A gated job's plan holds nothing. When Slurm's rules give it no start, a
        job before its begin time is shown at its begin time, as ``squeue --start``
        shows it ("earliest start", not a plan), on the nodes it would get with every
        running job ended (None: not even then)."""
        if found is not None:
            return _Found(found.t, found.nodes, found.allocation, None)
        begin = job.begin_time
        if begin is None or not begin > self.now or begin != start:
            return None
        fitter = Fitter(self.allocator, request, self.order)
        usable = hosts_of(self._usable(job, request), self._n)
        placed = fitter.fit(usable, [e.item for e in self._running])
        if placed is None:
            return None
        return _Found(begin, bits_of(placed[0], self._n), placed[1], None)

    def hold(self, job: str, plan: PlannedStart) -> None:
        """Take the planned job's nodes out of the table over its rounded run (a job
        planned past the window, or at a gate, holds nothing)."""
        found = self._found.pop(job, None)
        if found is None or found.reserve is None:
            return
        self.space.reserve(*found.reserve, found.nodes)
        self.reached["slurm reservations"] += 1
        self.planned += 1
        if self._earliest is None or found.t < self._earliest[1]:
            self._earliest = (job, found.t)

    def why_reserved(self, job: PendingJob, end: float, *, preempting: bool = False) -> str:
        first = self._earliest
        if first is not None and not preempting:
            return (
                "the nodes it fits on now are reserved, whole, by Slurm's backfill plan "
                f"(first for job {first[0]}, planned to start at {self.when(first[1])})"
            )
        return super().why_reserved(job, end, preempting=preempting)

    # --- one record -----------------------------------------------------------------------
    def _record(
        self, job: PendingJob, request: JobRequest, duration: float, start: float
    ) -> _Found | None:
        """One run of Slurm's per-record loop from ``start`` (see the module)."""
        now, space = self.now, self.space
        usable = self._usable(job, request)
        fitter = Fitter(self.allocator, request, self.order)
        least = fitter.simple[1].min_nodes if fitter.simple is not None else 1
        own = self.reservations.get(job.reservation) if job.reservation is not None else None
        later = start if own is None else max(start, own.start)
        for _ in range(_MAX_TRIES):
            start_res, later = later, 0.0
            end = max(start_res, now) + duration
            if own is not None and end > own.end:
                return None  # no run inside its reservation's window
            avail, later = space.candidates(usable, start_res, end)
            avail &= ~self._blocked(job, start_res, end)
            if avail.bit_count() < least:
                later = later or self._reserved_until(job, start_res, end)
                if later:
                    continue
                return None
            found = self._will_run(fitter, avail)
            if found is None:
                later = later or self._reserved_until(job, start_res, end)
                if later:
                    continue
                return None
            t, nodes, allocation = found
            t = max(t, start_res)
            if own is not None and t + duration > own.end:
                return None
            if t <= now:
                return _Found(t, nodes, allocation, None)
            if later and t > later:
                continue
            if t > start_res and nodes & self._blocked(job, t, t + duration):
                later = t  # an advance reservation holds one of its nodes then: retry
                continue
            s0, e0 = space.rounded(t), space.rounded(t + duration)
            if space.overlaps(nodes, s0, e0):
                later = t
                continue
            reserve = (s0, e0) if t <= now + self.window else None
            return _Found(t, nodes, allocation, reserve)
        raise InternalError(f"job {job.id}: Slurm's backfill loop did not end")

    def _will_run(self, fitter: Fitter, avail: int) -> tuple[float, int, JobAllocation] | None:
        """When and where the job fits on ``avail`` (Slurm's will-run test)."""
        candidates = hosts_of(avail, self._n)
        found: list[tuple[IndexArray, JobAllocation]] = []

        def fits(back: Sequence[Held]) -> bool:
            self.reached["slurm will-run tests"] += 1
            got = fitter.fit(candidates, list(back))
            if got is not None:
                found.append(got)
            return got is not None

        result = will_run(avail, self._running, fits)
        if result is None:
            return None
        end = self.now if result[0] is None else max(result[0], self.now)
        hosts, allocation = found[-1]
        return end, bits_of(hosts, self._n), allocation

    def _usable(self, job: PendingJob, request: JobRequest) -> int:
        """The hosts the job may ever use (its partition, as its static select says)."""
        books = self.allocator.books
        static = self.static_hosts(request)
        mask = books.ok if static is None else static & books.ok
        return bits_of(mask, self._n)

    def _reserved_until(self, job: PendingJob, start: float, end: float) -> float:
        """The first end after ``start`` of an advance reservation that keeps hosts from
        the job over ``[start, end)`` (0.0: none): a later start to try once every node
        the table offers has been tried (what Slurm's reservation test moves it to)."""
        ends = [r.end for r in self._overlapping(job, start, end) if r.end > start]
        return min(ends, default=0.0)

    def _blocked(self, job: PendingJob, start: float, end: float) -> int:
        """Hosts advance reservations keep from the job over ``[start, end)``."""
        if job.reservation is None and not self.reservations:
            return 0
        mask = np.zeros(self._n, dtype=np.bool_)
        for hosts in self.masked(job, start, end):
            mask[hosts] = True
        return bits_of(mask, self._n)

    # --- outcomes --------------------------------------------------------------------------
    def _start(self, request: JobRequest, found: _Found) -> Dispatched | None:
        """Charge the job's allocation on its chosen nodes when it fits the books as
        they are (None: only with a job past its estimate counted as gone)."""
        alloc = self.allocator
        placed = Fitter(alloc, request, self.order).fit(hosts_of(found.nodes, self._n), [])
        if placed is None:
            return None
        alloc.charge(request, placed[1])
        return Dispatched(request.id, placed[1])

    def _reserved_now(self, found: _Found, duration: float) -> _Found:
        space = self.space
        window = (space.rounded(self.now), space.rounded(self.now + duration))
        return _Found(self.now, found.nodes, found.allocation, window)

    def _pend(self, job: PendingJob, request: JobRequest, duration: float) -> Pending:
        """Why a job Slurm does not start now waits: RESERVED when it fits the books
        (the plan keeps it off), else the allocator's reason, as ever."""
        end = self.now + duration
        if job.reservation is not None:  # its reservation's hosts are all it may use
            tried = self.try_in_own(job, request, end)
            if isinstance(tried, Pending):
                masked = self.preempt_mask(job, request, self.now, end)
                return self.own_pend(job, request, tried, masked, end)
            return Pending(job.id, PendInfo(PendReason.RESERVED, self.why_reserved(job, end)))
        if self.fits_books(request):
            info = PendInfo(PendReason.RESERVED, self.why_reserved(job, end))
            return Pending(job.id, info)
        decision = self.decide_masked(job, request, end)
        if isinstance(decision, Dispatched):
            raise InternalError(f"job {job.id} fits the books after all")
        return decision


class SlurmBackfill:
    """Slurm's sched/backfill: every job that cannot start is planned, in order, by
    Slurm's rules (whole-node reservations, its will-run batches, cons_tres nodes);
    plans are made afresh every session, as Slurm's every cycle."""

    name = "slurm"
    plans = True
    replaces_queue_blocking = True
    monotone_in_session = False
    keeps_placements = False  # Slurm plans afresh every cycle
    planner = SlurmPlanner

    def plans_job(self, considered: int) -> bool:
        return True
