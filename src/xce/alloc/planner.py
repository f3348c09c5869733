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

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
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
    Preemption,
)
from xce.alloc.preemption import Accept, may_preempt
from xce.alloc.profile import Profile
from xce.cluster.catalog import SLOTS
from xce.cluster.estimates import estimate, estimated_end
from xce.cluster.state import AdvanceReservation, PendingJob, RunningJob
from xce.cluster.units import to_units
from xce.timefmt import duration, when

if TYPE_CHECKING:
    from xce.alloc.engine import Allocator, JobRequest

__all__ = ["Planner", "Steps", "monotone"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
_ONE = np.zeros(1, dtype=np.intp)  # the shared profile's one "host"
_FIRST_CANDIDATES = 16  # candidate starts screened first (then all the others at once)
_TRIES_BEFORE_PEAK = 2  # failed tries after which a plan asks whether any instant fits


@dataclass(frozen=True, slots=True)
class _Held:
    """A job planned this session: for pend messages."""

    job: str
    start: float


class Planner:
    """One session's plan (see the module docstring). ``allocator`` must have begun the
    session: the profile starts from its books as they are now.

    A backfill policy with rules of its own subclasses it (``BackfillPolicy.planner``,
    e.g. ``xce.backfill.slurm``), overriding ``start_now``, ``plan``, ``hold`` and
    ``started``; what such a planner may use besides: ``allocator``, ``now``,
    ``reservations`` (by name), ``estimate_of``, ``static_hosts`` (the hosts a request
    can ever use), ``masked`` (hosts advance reservations keep from a job over a
    window), ``own_window`` (why a job naming a reservation cannot run over one),
    ``fits_books`` (whether a request fits the books now), ``when`` (a time as
    messages show it), and for jobs that may preempt or name a reservation
    ``preempt_mask``, ``plan_check`` and ``decide_masked`` (a decision whose preemption
    keeps off reserved hosts and planned holds), ``try_in_own``, ``own_pend`` and
    ``never_in_own`` (a job naming a reservation, on its hosts); the session calls
    ``preempted`` after a preemption (victims freed from now, the promise held)."""

    def __init__(self, allocator: Allocator, now: float) -> None:
        if not math.isfinite(now):
            raise ValueError(f"a session time must be finite, not {now}")
        self.allocator = allocator
        self.now = now
        books = allocator.books
        state = allocator.state
        self._names = tuple(state.hosts.units)
        self._profile = Profile(now, {n: books.units(n) for n in self._names})
        shared = {n: np.array([books.shared_units(n)]) for n in state.shared_total}
        self._shared = Profile(now, shared)
        self._ok = books.ok
        self._ok_weight = books.ok.astype(np.float64)
        self._all_ok = bool(books.ok.all())
        # the planner's exact screens follow the allocator's switch (AllocOptions.
        # shortcuts): off, every candidate instant is tried and every job starting now
        # is placed on its view (a property checks no decision changes)
        self._shortcuts = allocator.options.shortcuts
        self.reached: Counter[str] = Counter()  # what each shortcut spared (tests read it)
        # all ok hosts' slots together over time: instants (sorted) and the total from each
        self._slot_times = np.array([now])
        self._slot_values = np.array([float(np.nansum(books.units(SLOTS)[books.ok]))])
        self._steps: Steps | None = None
        self._peak: tuple[dict[str, FloatArray], dict[str, float]] | None = None
        self._hint_key_of: tuple[IndexArray, FloatArray] | None = None  # the last made
        # The running jobs' ends, and the holds of jobs started before anything reads the
        # profile, are put in when something first does (see _ready): a session whose
        # jobs all start on the books as they are never pays for them.
        self._deferred: list[tuple[float, float, JobAllocation]] | None = []
        self._preempted_at_start = frozenset(allocator.preempted)
        self.reservations = {r.name: r for r in state.reservations if r.end > now}
        self._planned_from = math.inf  # earliest start of a planned (not started) hold
        self._first: _Held | None = None  # the planned job of that start
        self.planned = 0
        # whether jobs of a requirement fit the books, by (requirement, user, queue,
        # project): (the requirement, the books' version, the answer)
        self._fits: dict[tuple[int, str, str, str], tuple[object, int, bool]] = {}
        # preemptions that failed under a mask this session, by _masked_key: the
        # requirement (kept alive with its id); and could_preempt's answers, by
        # (requirement, user, queue, project): (the requirement, (books' version,
        # preemptions so far), the answer)
        self._masked_failed: dict[tuple[object, ...], object] = {}
        self._could: dict[tuple[int, str, str, str], tuple[object, tuple[int, int], bool]] = {}
        if not self._shortcuts:
            self._ready()  # the switch off: made at once, as before the deferral

    @property
    def profile(self) -> Profile:
        """The hosts' availability over time (the running jobs' ends, the holds so far)."""
        self._ready()
        return self._profile

    @property
    def shared(self) -> Profile:
        """The shared resources' availability over time (one "host")."""
        self._ready()
        return self._shared

    def _ready(self) -> None:
        """Put in what was deferred, in the order the planner met it: the running jobs'
        ends (as the session began), then the holds of the jobs started since. The
        profile is then exactly the one made at once (the same changes, in the same
        order, from the same books), whenever it is first read."""
        deferred = self._deferred
        if deferred is None:
            return
        self._deferred = None
        self._running_ends(self.allocator)
        for start, end, allocation in deferred:
            self._hold(start, end, allocation)

    def _running_ends(self, allocator: Allocator) -> None:
        """Every running job gives its holdings back at its estimated end (all put in
        at once: the same changes, in the same order, as one job at a time)."""
        state, now = allocator.state, self.now
        ends: list[float] = []
        claims: list[tuple[IndexArray, Mapping[str, FloatArray]]] = []
        for job in state.running:
            if job.id in self._preempted_at_start:
                continue  # preempted this session: its promise holds it already
            end = estimated_end(
                job.start_time, estimate(job.requested_time, state.queues.get(job.queue)), now
            )
            if not math.isfinite(end):
                continue  # no estimate: it holds its resources for planning purposes
            hosts, amounts, shared = allocator.footprint_of(job).columns()
            ends.append(max(end, now))
            claims.append((hosts, amounts))
            for name, units in shared:
                self._shared.release_columns(end, _ONE, {name: np.array([units])})
        self._profile.release_many(ends, claims)
        self._tally_many(ends, [(hosts, amounts[SLOTS]) for hosts, amounts in claims])

    # --- what a job may do now -------------------------------------------------------
    def estimate_of(self, job: PendingJob) -> float:
        """Seconds planning assumes ``job`` runs (``math.inf``: no estimate)."""
        return estimate(job.requested_time, self.allocator.state.queues.get(job.queue))

    def start_now(
        self,
        job: PendingJob,
        request: JobRequest,
        duration: float,
        hint: IndexArray | None = None,
    ) -> Decision:
        """The job's decision now: dispatched (the session's books charged) only where
        it takes nothing a planned job or an advance reservation needs before it ends.
        ``hint``: the hosts of the job's last planned placement, tried first (so a job
        keeps the hosts its planned start was promised on)."""
        alloc, now = self.allocator, self.now
        end = now + duration
        own = self.own_window(job, now, end)
        if own is not None:  # outside its window: waiting helps only if it can ever fit
            return Pending(job.id, self.never_in_own(job, request) or own)
        named = job.reservation is not None  # it may use its reservation's hosts only
        plain = not named and hint is None and self._planned_from >= end
        if plain and not self._blocking(job, now, end):
            return alloc.decide(request)  # the view is the books: decided as ever
        masked = self.preempt_mask(job, request, now, end)
        if named:  # its reservation's hosts are all it may use, preempting too
            return self._in_own(job, request, end, masked, hint)
        accept = self.plan_check(request, end)
        if self._shortcuts and request.requirement.fewest_tasks > alloc.books.total_slots:
            self.reached["too wide for what is free"] += 1
            # more tasks than free slots: the reason, as ever
            return self.decide_masked(job, request, end, masked, accept)
        fits_now: bool | None = None
        if self._shortcuts and monotone(request):
            # A job that does not fit the books fits no view of them (a view has less),
            # unless a select can turn true as availability falls: then it is tried.
            fits_now = self.fits_books(request)
            if not fits_now:
                self.reached["no view tried"] += 1
                return self.decide_masked(job, request, end, masked, accept)  # the reason
        if self._shortcuts and not self._slot_totals().holds_at(
            now, duration, request.requirement.fewest_tasks
        ):
            self.reached["reserved by totals"] += 1
            decision: Decision = Pending(job.id, PendInfo(PendReason.RESERVED, ""))
        else:
            view = self._view(job, now, end, starting=True, prefer=False, hint=hint)
            assert view is not None
            decision = alloc.on_view(view, alloc.limits).try_place(request)
        if isinstance(decision, Dispatched):
            alloc.charge(request, decision.allocation)
            return decision
        if fits_now is None:
            fits_now = self.fits_books(request)
        if fits_now:  # it fits the books, not beside the plan: preempting, elsewhere?
            preempting = alloc.preempt(request, masked, accept) if self._preempts(request) else None
            if preempting is not None:
                return preempting
            return Pending(job.id, PendInfo(PendReason.RESERVED, self.why_reserved(job, end)))
        # it does not fit now: the reason, as ever
        return self.decide_masked(job, request, end, masked, accept)

    def _in_own(
        self,
        job: PendingJob,
        request: JobRequest,
        end: float,
        masked: list[IndexArray | slice],
        hint: IndexArray | None,
    ) -> Decision:
        """The decision now of a job naming a reservation whose window it fits: placed
        on a view of its reservation's hosts (no shortcut: it is decided the same way
        whatever the books); else NEVER_RUNNABLE when no state of the cluster, or of
        its reservation's hosts, could run it; else a preemption inside its
        reservation; else the view's reason."""
        alloc = self.allocator
        decision = self.try_in_own(job, request, end, hint)
        if isinstance(decision, Dispatched):
            alloc.charge(request, decision.allocation)
            return decision
        return self.own_pend(job, request, decision, masked, end)

    def try_in_own(
        self, job: PendingJob, request: JobRequest, end: float, hint: IndexArray | None = None
    ) -> Decision:
        """A job naming a reservation, tried now on a view of its reservation's hosts
        until ``end`` (nothing charged)."""
        alloc = self.allocator
        view = self._view(job, self.now, end, starting=True, prefer=False, hint=hint)
        assert view is not None
        return alloc.on_view(view, alloc.limits).try_place(request)

    def own_pend(
        self,
        job: PendingJob,
        request: JobRequest,
        decision: Pending,
        masked: list[IndexArray | slice],
        end: float,
    ) -> Pending:
        """Why a job naming a reservation does not start now, ``decision`` its failure
        on a view of its reservation until ``end``: NEVER_RUNNABLE when no state of the
        cluster, or of its reservation's hosts, could run it; else PREEMPTING, if
        victims inside its reservation free enough without taking what a planned job
        holds (:meth:`plan_check`); else ``decision``."""
        alloc = self.allocator
        never = self.never_in_own(job, request)
        if never is not None:
            return Pending(job.id, never)
        return alloc.preempt(request, masked, self.plan_check(request, end)) or decision

    def never_in_own(self, job: PendingJob, request: JobRequest) -> PendInfo | None:
        """NEVER_RUNNABLE when no state of the cluster, or of the hosts of the
        reservation the job names, could run it (None: some could, or it names none
        that lasts)."""
        own = self.reservations.get(job.reservation) if job.reservation is not None else None
        if own is None:
            return None
        alloc = self.allocator
        return alloc.empty.never_runnable(request) or alloc.empty.never_within(
            request, own.name, own.hosts
        )

    def decide_masked(
        self,
        job: PendingJob,
        request: JobRequest,
        end: float,
        masked: list[IndexArray | slice] | None = None,
        accept: Accept | None = None,
    ) -> Decision:
        """The allocator's decision for a job that does not start on a view now (its
        reason, as ever), any preemption kept off the hosts of ``masked`` (default:
        the reservations the job may not use until ``end``, :meth:`preempt_mask`) and
        refused where its promise would take what a planned job holds (``accept``,
        :meth:`plan_check`). When only those stop a preemption, the job pends RESERVED,
        naming the reservations or the planned job (the preemption is looked for once
        more without them, and not made)."""
        alloc = self.allocator
        if masked is None:
            masked = self.preempt_mask(job, request, self.now, end)
        kept = bool(masked) or accept is not None
        key = self._masked_key(job, request, end, accept) if kept else None
        failed = key is not None and self._masked_failed.get(key) is request.requirement
        if failed:
            self.reached["preemption under a mask failed before"] += 1
        decision = alloc.decide(request, masked=masked, accept=accept, preempt=not failed)
        if not isinstance(decision, Pending) or decision.preemption is not None:
            return decision
        if key is not None:
            self._masked_failed[key] = request.requirement
        if (
            kept
            and job.reservation is None  # else: it runs in its own or not at all
            and decision.info.reason is not PendReason.NEVER_RUNNABLE
            and not decision.cached
            and self._could_preempt(request)
        ):
            why = self.why_reserved(job, end, preempting=True)
            return Pending(job.id, PendInfo(PendReason.RESERVED, why))
        return decision

    def _masked_key(
        self, job: PendingJob, request: JobRequest, end: float, accept: Accept | None
    ) -> tuple[object, ...] | None:
        """What a preemption under a mask depends on besides the books, the candidates
        and the plans, all of which only take away within a session (so a failure
        stays one): the requirement, the job's identity, the reservations in its way
        (or its own), and its run's end when plans are checked. None: not kept (the
        shortcuts off, or a plugin that sees the job)."""
        if not self._shortcuts or not self.allocator.job_blind:
            return None
        now = self.now
        blocking = tuple(r.name for r in self._overlapping(job, now, end))
        return (
            id(request.requirement),
            request.user,
            request.queue,
            request.project,
            job.reservation,
            blocking,
            end if accept is not None else None,
        )

    def _could_preempt(self, request: JobRequest) -> bool:
        """Whether a preemption without masks would succeed (Allocator.could_preempt),
        kept for jobs alike while the books are unchanged and nobody was preempted
        since (an exact shortcut: the answer depends on nothing else)."""
        alloc = self.allocator
        key = (id(request.requirement), request.user, request.queue, request.project)
        seen = (alloc.books.version, alloc.stats.preemptions)
        known = self._could.get(key) if self._shortcuts and alloc.job_blind else None
        if known is not None and known[0] is request.requirement and known[1] == seen:
            self.reached["could preempt known"] += 1
            return known[2]
        answer = alloc.could_preempt(request)
        self._could[key] = (request.requirement, seen, answer)
        return answer

    def _preempts(self, request: JobRequest) -> bool:
        return may_preempt(self.allocator, request.queue)

    def plan_check(self, request: JobRequest, end: float) -> Accept | None:
        """What a preemption's promise must pass not to take what a job planned this
        session holds over ``[now, end)`` (None: the job does not preempt, or no plan
        starts before ``end``, so the books alone decide)."""
        if self._planned_from >= end or not self._preempts(request):
            return None
        return lambda promise, victims: self._keeps_plans(promise, victims, end)

    def _keeps_plans(
        self, promise: JobAllocation, victims: Sequence[RunningJob], end: float
    ) -> bool:
        """Whether ``promise`` fits, on every host and resource and at every instant of
        ``[now, end)``, the profile with ``victims`` gone from now on (exact: the
        profile's lowest point between each victim's estimated end and the next)."""
        now, state = self.now, self.allocator.state
        n = state.hosts.n
        hosts, amounts = _units(promise, self.allocator.books.scales)
        want = {name: np.bincount(hosts, weights=a, minlength=n) for name, a in amounts.items()}
        gone = []
        for v in victims:
            e = estimated_end(
                v.start_time, estimate(v.requested_time, state.queues.get(v.queue)), now
            )
            if e > now:
                vh, va, _ = self.allocator.footprint_of(v).columns()
                gone.append(
                    (e, {k: np.bincount(vh, weights=a, minlength=n) for k, a in va.items()})
                )
        points = sorted({now, end, *(e for e, _ in gone if e < end)})
        for a, b in itertools.pairwise(points):
            window = self.profile.window(a, b)
            for name, wanted in want.items():
                room = window[name].copy()
                for e, back in gone:
                    if e >= b and name in back:
                        room += back[name]
                if bool((wanted > room).any()):
                    return False
        return True

    def preempted(self, found: Preemption, duration: float) -> None:
        """A preemption made now: its victims' holdings come back to the profile from
        now on (not at their estimated ends) and its promise holds from now for
        ``duration``, so the jobs planned after it plan around it."""
        self._ready()
        state, now = self.allocator.state, self.now
        by_id = {r.id: r for r in state.running if r.id in found.victims}
        for vid in found.victims:
            v = by_id.get(vid)
            if v is None:
                continue
            e = estimated_end(
                v.start_time, estimate(v.requested_time, state.queues.get(v.queue)), now
            )
            if not e > now:
                continue  # past its estimate: the profile gives its holdings back now
            hosts, amounts, shared = self.allocator.footprint_of(v).columns()
            if math.isfinite(e):
                self._profile.hold_columns(now, e, hosts, {k: -a for k, a in amounts.items()})
                self._tally(e, hosts, -amounts[SLOTS])
            else:
                self._profile.release_columns(now, hosts, amounts)
            self._tally(now, hosts, amounts[SLOTS])
            for name, units in shared:
                if math.isfinite(e):
                    self._shared.hold_columns(now, e, _ONE, {name: np.array([-units])})
                else:
                    self._shared.release_columns(now, _ONE, {name: np.array([units])})
        self._hold(now, now + duration, found.promise)

    def preempt_mask(
        self, job: PendingJob, request: JobRequest, start: float, end: float
    ) -> list[IndexArray | slice]:
        """The hosts a preemption may not promise the job over ``[start, end)``: those
        of the reservations it may not use (:meth:`masked`); none when its queue does
        not preempt."""
        if not self.reservations or not may_preempt(self.allocator, request.queue):
            return []
        return self.masked(job, start, end)

    def fits_books(self, request: JobRequest) -> bool:
        """Whether the job could be placed on the books now (tried on a view of them:
        no charge, no cache entry). Jobs of one requirement, user, queue and project
        fit or not alike while the books are unchanged (when no plugin but the builtin
        ones sees the job): the answer is kept for them (an exact shortcut)."""
        alloc = self.allocator
        requirement = request.requirement
        key = (id(requirement), request.user, request.queue, request.project)
        known = self._fits.get(key) if self._shortcuts and alloc.job_blind else None
        if known is not None and known[0] is requirement and known[1] == alloc.books.version:
            self.reached["fit now known"] += 1
            return known[2]
        probe = alloc.on_view(alloc.books, alloc.limits, explain=False, reasons=False)
        fits = isinstance(probe.try_place(request), Dispatched)
        self._fits[key] = (requirement, alloc.books.version, fits)
        return fits

    def started(self, allocation: JobAllocation, duration: float) -> None:
        """A job started now holds its allocation until its estimated end."""
        if self._deferred is not None and self._shortcuts:
            self._deferred.append((self.now, self.now + duration, allocation))
            self.reached["hold deferred"] += 1
            return
        self._hold(self.now, self.now + duration, allocation)

    # --- planning --------------------------------------------------------------------
    def plan(
        self,
        job: PendingJob,
        request: JobRequest,
        duration: float,
        hint: IndexArray | None = None,
        *,
        earliest: float | None = None,
    ) -> PlannedStart | None:
        """The job's earliest start and placement in the profile (None: no instant has
        room for it, or it runs only in a reservation that cannot take it). ``hint``:
        the hosts of the job's last planned placement, preferred before any other (a
        fresh plan then keeps an earlier session's promise where it still fits).
        ``earliest``: no start before it (a begin time, a dependency: xce.core.gates);
        it is a candidate instant itself, as are the changes of availability after it.

        Candidates whose run would see, at some instant, fewer slots on all ok hosts
        together than the job has tasks are passed over without a try (exact: no
        placement can use more slots than there are)."""
        alloc = self.allocator
        failed = 0
        fewest = request.requirement.fewest_tasks
        times = self._candidates(job, duration)
        if earliest is not None and earliest > self.now:
            times = np.union1d(times[times > earliest], [earliest])
            own = self.reservations.get(job.reservation) if job.reservation else None
            if own is not None:
                times = times[(times >= own.start) & (times + duration <= own.end)]
        eligible = self.static_hosts(request)
        screens = [(self._slot_totals(eligible), float(fewest))] if self._shortcuts else []
        screens += self._amount_screens(request, eligible) if self._shortcuts else []
        lo, chunk = 0, _FIRST_CANDIDATES
        while lo < len(times):  # many jobs place on an early candidate; else screen all
            some = times[lo : lo + chunk]
            lo, chunk = lo + chunk, len(times)
            enough = np.ones(len(some), dtype=np.bool_)
            for steps, need in screens:
                enough &= steps.holds(some, duration, need)
            self.reached["candidates screened out"] += int(len(some) - np.count_nonzero(enough))
            for start in some[enough].tolist():
                end = start + duration
                if self.own_window(job, start, end) is not None:
                    continue
                view = self._view(
                    job,
                    start,
                    end,
                    starting=False,
                    prefer=True,
                    fewest=fewest if self._shortcuts else 0,
                    hint=hint,
                )
                if view is None:
                    self.reached["views short of slots"] += 1
                    continue
                placer = alloc.on_view(view, alloc.limits, explain=False, reasons=False)
                decision = placer.try_place(request)
                if isinstance(decision, Dispatched):
                    return PlannedStart(start, end, decision.allocation)
                failed += 1
                if (
                    self._shortcuts
                    and failed == _TRIES_BEFORE_PEAK
                    and not self._may_ever_fit(job, request)
                ):
                    self.reached["never fits"] += 1
                    return None  # no instant can offer enough: the rest would fail too
        return None

    def hold(self, job: str, plan: PlannedStart) -> None:
        """Keep ``plan``'s placement out of every later job's reach over its run."""
        self._hold(plan.start, plan.end, plan.allocation)
        if plan.start < self._planned_from:
            self._planned_from = plan.start
            self._first = _Held(job, plan.start)
        self.planned += 1

    def _hold(self, start: float, end: float, allocation: JobAllocation) -> None:
        self._ready()
        if not end > start:
            return  # a job of no duration holds nothing over time
        hosts, amounts = _units(allocation, self.allocator.books.scales)
        self.profile.hold_columns(start, end, hosts, amounts)
        self._tally(max(start, self.now), hosts, -amounts[SLOTS])
        if math.isfinite(end):
            self._tally(end, hosts, amounts[SLOTS])
        scales = self.allocator.books.scales
        for name, amount in allocation.shared:
            units = np.array([to_units(amount, scales[name])])
            self.shared.hold_columns(start, end, _ONE, {name: units})

    def _candidates(self, job: PendingJob, duration: float) -> FloatArray:
        """Instants a plan may start at: now and every change of availability (and
        reservation bounds), within the job's own reservation if it names one."""
        times = self.profile.times()
        bounds = [t for r in self.reservations.values() for t in (r.start, r.end) if t > self.now]
        extra = self.shared.times()
        if bounds or len(extra) > 1:
            times = np.union1d(times, np.union1d(extra, np.asarray(bounds, dtype=np.float64)))
        own = self.reservations.get(job.reservation) if job.reservation is not None else None
        if own is not None:
            times = times[(times >= own.start) & (times + duration <= own.end)]
        return times

    def _tally(self, at: float, hosts: IndexArray, slots: FloatArray) -> None:
        """Record a change, from ``at`` on, of the slots of all ok hosts together (see
        _slot_totals). Called only with the profile made (by _running_ends and _hold)."""
        change = float(np.sum(slots if self._all_ok else slots[self._ok[hosts]]))
        if change:
            times = self._slot_times
            i = int(np.searchsorted(times, at, side="left"))
            if i == len(times) or times[i] != at:
                values = self._slot_values
                self._slot_times = np.concatenate((times[:i], [at], times[i:]))
                self._slot_values = np.concatenate((values[:i], values[i - 1 : i], values[i:]))
            self._slot_values[i:] += change
            self._steps = None

    def _tally_many(self, ats: list[float], changes: list[tuple[IndexArray, FloatArray]]) -> None:
        """:meth:`_tally` of each ``(ats[k], *changes[k])`` in turn, at once. Slots are
        whole numbers (exact sums in any order), so the step function is the same."""
        if not changes:
            return
        hosts = np.concatenate([h for h, _ in changes])
        slots = np.concatenate([v for _, v in changes]).astype(np.float64, copy=False)
        owner = np.repeat(np.arange(len(changes)), [len(h) for h, _ in changes])
        if not self._all_ok:
            slots = np.where(self._ok[hosts], slots, 0.0)
        amounts = np.bincount(owner, weights=slots, minlength=len(changes))
        some = amounts != 0
        if not some.any():
            return
        at = np.asarray(ats, dtype=np.float64)[some]
        amounts = amounts[some]
        order = np.argsort(at, kind="stable")
        at, added = at[order], np.cumsum(amounts[order])
        times = self._slot_times
        merged = np.union1d(times, at)
        before = self._slot_values[np.searchsorted(times, merged, side="right") - 1]
        upto = np.searchsorted(at, merged, side="right")  # changes at or before each instant
        self._slot_times = merged
        self._slot_values = before + np.where(upto > 0, added[np.maximum(upto - 1, 0)], 0.0)
        self._steps = None

    def _slot_totals(self, hosts: npt.NDArray[np.bool_] | None = None) -> Steps:
        """The profile's slots over every ok host together (kept until the next
        change), or over the ok ``hosts`` only (made now), as a step function."""
        self._ready()
        if hosts is not None:
            return _steps_of(self.profile, SLOTS, hosts & self._ok, self.now)
        if self._steps is None:
            self._steps = Steps(self._slot_times, self._slot_values)
        return self._steps

    def _may_ever_fit(self, job: PendingJob, request: JobRequest) -> bool:
        """Whether the job fits each host's highest availability from now on (and the
        shared resources' highest): an exact screen (no window offers more), which spares
        trying every candidate for a job that no future frees enough for — one held by a
        per-host limit's usage now, or by hosts no plan releases. A job naming a
        reservation or whose selects can turn true as availability falls is let through."""
        if job.reservation is not None or not monotone(request):
            return True
        books = self.allocator.books
        if self._peak is None:
            # made once: later holds only lower availability, so it stays an upper bound
            shared = {n: float(v[0]) for n, v in self.shared.peak().items()}
            self._peak = (self.profile.peak(), shared)
        avail, shared = self._peak
        best = books.view({n: a.copy() for n, a in avail.items()}, dict(shared))
        placer = self.allocator.on_view(best, self.allocator.limits, explain=False, reasons=False)
        return isinstance(placer.try_place(request), Dispatched)

    def _amount_screens(
        self, request: JobRequest, eligible: npt.NDArray[np.bool_] | None
    ) -> list[tuple[Steps, float]]:
        """For a job of one alternative: each shared resource it takes (the shared
        profile must hold that much over its run) and each consumable its terms take per
        task (the eligible hosts together must hold the tasks' total): exact screens,
        since a placement needs at least so much."""
        alternatives = request.requirement.alternatives
        if len(alternatives) != 1:
            return []
        shared: dict[str, float] = {}
        per_task: dict[str, float] = {}
        for pp in alternatives[0]:
            for name, units in pp.wants.shared_units:
                shared[name] = shared.get(name, 0.0) + float(units)
            for name, units in pp.wants.per_task_units:
                per_task[name] = per_task.get(name, 0.0) + float(units) * pp.tasks
        hosts = self._ok if eligible is None else eligible & self._ok
        out = [
            (_steps_of(self.shared, name, None, self.now), need)
            for name, need in shared.items()
            if need > 0
        ]
        out += [
            (_steps_of(self.profile, name, hosts, self.now), need)
            for name, need in per_task.items()
            if need > 0
        ]
        return out

    def static_hosts(self, request: JobRequest) -> npt.NDArray[np.bool_] | None:
        """The hosts a one-primary job's select admits whatever availability is (None:
        no select, several primaries, or a select that reads availability)."""
        alternatives = request.requirement.alternatives
        if len(alternatives) != 1 or len(alternatives[0]) != 1:
            return None
        select = alternatives[0][0].select
        if select is None or select.dynamic:
            return None
        return self.allocator.books.eligible(select)

    # --- views -----------------------------------------------------------------------
    def _view(
        self,
        job: PendingJob,
        start: float,
        end: float,
        *,
        starting: bool,
        prefer: bool,
        fewest: int = 0,
        hint: IndexArray | None = None,
    ) -> SessionBooks | None:
        """The books the job is placed on over ``[start, end)`` (None: fewer slots than
        ``fewest`` on all ok hosts together, so no placement can fit)."""
        books = self.allocator.books
        # a host without a free slot (really free, when starting now; in the profile at
        # the start) can take no task whatever else the plan says: its lowest point
        # over the run is not needed
        wanted = books.units(SLOTS) > 0 if starting else None
        avail = (
            self.profile.window(start, end, wanted, positive=SLOTS)
            if end > start
            else self.profile.at(start)
        )
        shared_now = self.shared.window(start, end) if end > start else self.shared.at(start)
        shared = {n: float(v[0]) for n, v in shared_now.items()}
        if starting:  # what is really free now (a job past its estimate still holds)
            avail = {n: np.minimum(a, books.units(n)) for n, a in avail.items()}
            shared = {n: min(v, books.shared_units(n)) for n, v in shared.items()}
        masked = self.masked(job, start, end)
        for hosts in masked:
            for a in avail.values():
                a[hosts] = np.minimum(a[hosts], 0.0)
        slots = avail[SLOTS]
        total = float(np.dot(slots, self._ok_weight))  # the ok hosts' slots together
        if math.isnan(total):
            total = float(np.nansum(slots[self._ok]))
        if fewest and total < fewest and float(np.sum(slots[self._ok & (slots > 0)])) < fewest:
            return None
        keys = [self._preference(start)] if prefer else []
        if hint is not None and len(hint):
            keys.insert(0, self._hint_key(hint))
        return books.view(
            avail, shared, tuple(keys) if keys else None, total, books.outside_of(masked)
        )

    def masked(self, job: PendingJob, start: float, end: float) -> list[IndexArray | slice]:
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

    def own_window(self, job: PendingJob, start: float, end: float) -> PendInfo | None:
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
                PendReason.RESERVATION,
                f"waits for its reservation {name} to begin at {self.when(r.start)}",
            )
        if end > r.end:
            return PendInfo(
                PendReason.RESERVATION,
                f"its estimated run ({duration(end - start)}) would pass the end of its "
                f"reservation {name} at {self.when(r.end)}",
            )
        return None

    def when(self, t: float) -> str:
        """A time in a message: as a person reads it, in the state's zone, from now."""
        return when(t, self.now, self.allocator.state.timezone)

    def _hint_key(self, hint: IndexArray) -> FloatArray:
        """A sort key putting ``hint``'s hosts first, in its order (a planned placement's
        claim order, so the same placement is found again where it still fits)."""
        kept = self._hint_key_of
        if kept is not None and kept[0] is hint:  # the same job's next candidate
            return kept[1]
        n = len(self._ok)
        key = np.full(n, float(n))
        hosts, at = np.unique(hint, return_index=True)  # each host's first position
        key[hosts] = at
        self._hint_key_of = (hint, key)  # (one kept: a key per job would cost n floats each)
        return key

    def _preference(self, start: float) -> FloatArray:
        """Per host: minus the latest instant up to ``start`` at which its slots rise
        (hosts freed latest first; hosts free all along last)."""
        return -self.profile.latest_rise(SLOTS, start)

    def next_change(self) -> float:
        """The first instant after now at which availability changes, of the hosts or
        of the shared resources, or an advance reservation's window opens or closes
        (inf: none)."""
        now = self.now
        out = min(
            (t for r in self.reservations.values() for t in (r.start, r.end) if t > now),
            default=math.inf,
        )
        for times in (self.profile.times(), self.shared.times()):
            i = int(np.searchsorted(times, now, side="right"))
            if i < len(times):
                out = min(out, float(times[i]))
        return out

    def why_reserved(self, job: PendingJob, end: float, *, preempting: bool = False) -> str:
        """The message of a job that fits now, but not beside the plan, run until ``end``
        (``preempting``: it would fit with victims preempted, but only on hosts of
        advance reservations that do not admit it)."""
        blocking = self._overlapping(job, self.now, end) if self.reservations else []
        if blocking and not preempting:  # only those keeping hosts with room from it now
            free = self.allocator.books.units(SLOTS) > 0
            blocking = [r for r in blocking if bool(free[list(r.hosts)].any())]
        first = self._first
        if preempting and not blocking and first is not None:
            return (
                f"what a preemption would give it is reserved for job {first.job}, planned "
                f"to start at {self.when(first.start)}, before this job would end (backfill)"
            )
        if blocking or preempting:
            named = [f"{r.name} from {self.when(r.start)} to {self.when(r.end)}" for r in blocking]
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            which = ", ".join(named[:3]) + more
            what = "advance reservation" + ("s " if len(named) > 1 else " ")
            head = (
                "the hosts a preemption would give it are in "
                if preempting
                else "the hosts it fits on now are in "
            )
            return head + what + which + ", which its estimated run would overlap"
        if first is not None and first.start < end:
            return (
                f"what it fits on now is reserved for job {first.job}, planned to start at "
                f"{self.when(first.start)}, before this job would end (backfill)"
            )
        return "what it fits on now is reserved for jobs planned to start before it would end"


class Steps:
    """A step function: ``values[i]`` from ``times[i]`` until ``times[i + 1]`` (the last
    for ever)."""

    def __init__(self, times: FloatArray, values: FloatArray) -> None:
        self.times = times
        self.values = values
        self._below: dict[float, tuple[npt.NDArray[np.bool_], FloatArray]] = {}

    def holds(self, starts: FloatArray, duration: float, need: float) -> npt.NDArray[np.bool_]:
        """Per start, whether the function is at least ``need`` all over ``[start,
        start + duration)`` (to the end, if the duration is not finite; at the start
        alone, if it is not above 0: a run of no duration is placed on what the start
        has, as a plan's view of it is): the step in force at the start is, and no step below
        ``need`` begins before the end. O((steps + starts) log steps), whatever the
        duration."""
        times = self.times
        below = self._below.get(need)
        if below is None:  # which steps are short, and when each begins (then for ever)
            short = self.values < need
            below = self._below[need] = (short, np.append(times[short], np.inf))
        short, low = below
        at = np.maximum(np.searchsorted(times, starts, side="right") - 1, 0)
        ok: npt.NDArray[np.bool_] = ~short[at]
        if len(low) == 1 or duration <= 0:
            return ok
        after = low[np.searchsorted(low[:-1], starts, side="right")]  # the first after
        if math.isfinite(duration):
            return ok & (after >= starts + duration)
        return ok & np.isinf(after)

    def holds_at(self, start: float, duration: float, need: float) -> bool:
        """:meth:`holds` for one start, without arrays made for it."""
        times, values = self.times, self.values
        at = int(times.searchsorted(start, side="right"))
        if values[max(at - 1, 0)] < need:
            return False
        if duration <= 0:
            return True  # the start alone (holds)
        if math.isfinite(duration):
            stop = int(times.searchsorted(start + duration, side="left"))
        else:
            stop = len(times)
        return not bool((values[at:stop] < need).any())


def _steps_of(
    profile: Profile, name: str, hosts: npt.NDArray[np.bool_] | None, now: float
) -> Steps:
    """``name`` over ``hosts`` (None: every host) of ``profile`` together, from ``now``
    on, as a step function (NaN, a host lacking the resource, counts as none)."""
    base = profile.at(now)[name]
    base = base if hosts is None else base[hosts]
    total = float(np.nansum(np.maximum(base, 0.0)))
    times, where, deltas = profile.events(name)
    keep = times > now if hosts is None else hosts[where] & (times > now)
    t, d = times[keep], deltas[keep]
    if not len(t):
        return Steps(np.array([now]), np.array([total]))
    at, first = np.unique(t, return_index=True)
    values = total + np.concatenate(([0.0], np.cumsum(np.add.reduceat(d, first))))
    return Steps(np.concatenate(([now], at)), values)


def monotone(request: JobRequest) -> bool:
    """Whether the job's placement can only stop succeeding as availability falls (no
    select of it reads availability in a way that can turn true as it falls)."""
    return all(p.cacheable for alt in request.requirement.alternatives for p in alt)


def _units(
    allocation: JobAllocation, scales: Mapping[str, float]
) -> tuple[IndexArray, dict[str, FloatArray]]:
    """An allocation's claims as columns in units: host, slots and amounts per claim."""
    cols = allocation.columns()
    amounts = {SLOTS: cols.slots.astype(np.float64)}
    for name, column in cols.amounts.items():
        amounts[name] = np.round(column * scales[name])
    return cols.hosts, amounts
