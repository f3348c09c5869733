"""A snapshot replayed forward: when each pending job starts if jobs end at their
predicted runtimes.

The replay is the scheduler's own loop in simulated time: a session now (the same
session ``xce schedule`` runs: same core, pickers, backfill policy, preemptor), its
dispatches started, then the next instant something can change (a job's predicted end,
a begin time, an advance reservation's edge), its ends applied and a session run, until
no job pends or nothing is left to happen. Sessions plan with the jobs' *requested*
times, as the scheduler does (backfill reservations, ``squeue --start``); only the ends
come from the predictor. A running job ends at its start plus its predicted runtime
(never before now: a predictor raises a prediction the job has outlived); a job started
in the replay ends that long after its start.

Holds never lift, so a held job never starts; a dependency is satisfied once its job
ends (planning assumes every job succeeds); a job preempted in the replay goes back to
its queue (as the simulator requeues), work running at the snapshot just ends.

:func:`predict_starts` runs the replay once with the point predictions and ``runs``
more times with runtimes drawn from the predictor's spread, each run with its own
random stream (``seed``, run number), and gives every pending job its predicted start
and the 10th–90th percentile of its sampled starts.
"""

from __future__ import annotations

import bisect
import heapq
import math
import multiprocessing
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from xce.alloc import Dispatched, PendInfo, Pending
from xce.cluster import SLOTS, ClusterState, PendingJob, RunningJob, estimate
from xce.cluster.jobflow import DepKind
from xce.cluster.schema import check_replay_time
from xce.core import (
    JobFinished,
    JobPreempted,
    JobStarted,
    JobSubmitted,
    JobUpdated,
    SchedulerCore,
)
from xce.core.pickers import PickerRegistry, default_pickers, picker_traits
from xce.core.session import SessionResult, array_task, job_request
from xce.errors import EventError, InternalError
from xce.predict.protocol import Asked, RuntimePredictor
from xce.preempt import Preemptor

if TYPE_CHECKING:
    from xce.predict.plain import PlainSnapshot

__all__ = ["Forecast", "ForwardRun", "JobForecast", "Policy", "forward_replay", "predict_starts"]

LOW_Q, HIGH_Q = 0.1, 0.9
"""The interval of a prediction: these quantiles of the sampled runs' starts."""

MAX_SESSIONS = 1_000_000
"""A replay that has run this many sessions is a bug (each session follows an event)."""

Runtime = Callable[[Asked], float]
"""Seconds a job runs in all (the predictor's point prediction, or a draw)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """How the scheduler decides: what ``xce schedule`` is given. ``shortcuts``: the
    exact session shortcut (:class:`_Candidates`); off, every session tries every
    pending job, and decides alike. ``plain``: a plain snapshot replayed on the
    simulator's plain replay (:mod:`xce.predict.plain`); off, session by session, and
    alike."""

    picker: str | None = None
    backfill: str | None = None
    preemptor: Preemptor | None = None
    shortcuts: bool = True
    plain: bool = True
    registry: PickerRegistry | None = field(default=None, compare=False)
    batch: int = 32  # jobs per batch of a session the shortcut feeds in batches

    def core(self, state: ClusterState) -> SchedulerCore:
        return SchedulerCore(
            state,
            picker=self.picker,
            backfill=self.backfill,
            preemptor=self.preemptor,
            pickers=self.pickers(),
        )

    def pickers(self) -> PickerRegistry:
        return self.registry if self.registry is not None else default_pickers()


@dataclass(slots=True)
class ForwardRun:
    """One forward replay: per pending job of the snapshot, when it starts (None: never,
    in this run), and for an array record when its last task starts; why the jobs that
    never start wait (their last decision); the first session's result (None when the
    replay ran on the plain replay: no session of the core ran); the sessions it ran
    and the jobs it ended until it stopped (after the last start, or once nothing was
    left to happen)."""

    now: float
    starts: dict[str, float | None]
    last_starts: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, PendInfo] = field(default_factory=dict)
    first: SessionResult | None = None
    sessions: int = 0
    ends: int = 0  # jobs the replay ended (snapshot's running ones included)


def asked_pending(job: PendingJob, state: ClusterState) -> Asked:
    """What a predictor is asked of a pending job."""
    return Asked(
        job.id,
        job.user,
        estimate(job.requested_time, state.queues.get(job.queue)),
        name=job.name,
        queue=job.queue,
        tasks=job.max_tasks,
    )


def asked_running(job: RunningJob, state: ClusterState, now: float) -> Asked:
    """What a predictor is asked of a job running at ``now``."""
    return Asked(
        job.id,
        job.user,
        estimate(job.requested_time, state.queues.get(job.queue)),
        name=job.name,
        queue=job.queue,
        tasks=job.slots,
        elapsed=max(now - job.start_time, 0.0),
    )


def forward_replay(
    state: ClusterState,
    runtime: Runtime,
    *,
    policy: Policy | None = None,
    now: float | None = None,
    until: frozenset[str] | None = None,
    snapshot: PlainSnapshot | None = None,
) -> ForwardRun:
    """Replay ``state`` forward from ``now`` (default: its session time), each job
    running ``runtime`` of what it is asked (see the module docstring); with ``until``,
    at least until those of its pending jobs have started (``xce predict --job``).

    The running work's runtimes are asked first, then every pending job's (but an array
    record's tasks, asked as they start), in the snapshot's order. A plain snapshot is
    replayed on the simulator's plain replay (:mod:`xce.predict.plain`,
    ``Policy.plain``) to its end, ``until`` or not (what happens before a job's start
    does not depend on what follows it, and the whole plain replay costs less than a
    few sessions of the core on a deep queue); any other session by session, stopping
    once the jobs of ``until`` have started. ``snapshot``: what replays of a plain
    snapshot share (:func:`xce.predict.plain.plain_snapshot` of the same state, policy
    and time, made once per forecast; None: found out here)."""
    from xce.predict.plain import plain_forward

    policy = policy or Policy()
    at = state.session_time() if now is None else now
    totals = {r.id: runtime(asked_running(r, state, at)) for r in state.running}
    lengths = {j.id: runtime(asked_pending(j, state)) for j in state.jobs if j.array is None}
    fast = plain_forward(state, lengths, totals, policy, at, snapshot)
    if fast is not None:
        return fast
    return _Replay(state, runtime, policy, at, until, totals, lengths).run()


class _Replay:
    def __init__(
        self,
        state: ClusterState,
        runtime: Runtime,
        policy: Policy,
        now: float,
        until: frozenset[str] | None,
        totals: dict[str, float],
        lengths: dict[str, float],
    ) -> None:
        self.state = state
        self.runtime = runtime
        self.totals = totals  # the running work's runtimes in all
        self.now = now
        self.core = policy.core(state)
        self.heap: list[tuple[float, int, str]] = []
        self.seq = 0
        self.ends: dict[str, float] = {}  # running job -> its end (cancelled if not equal)
        self.records = {j.id: j for j in state.jobs}
        self.pending_ids = set(self.records)
        self.watched = self.pending_ids if until is None else self.pending_ids & until
        self.left = set(self.watched)  # the watched jobs still pending (kept as they start)
        self.run_of = ForwardRun(self.now, dict.fromkeys(self.records))
        self.own: dict[str, PendingJob] = {}  # jobs started in the replay (requeue)
        self.lengths = dict(lengths)  # job -> its runtime (an array task's once started)
        self.moments = sorted(self._moments())
        # job -> the delays of the ``after`` items waiting on its start; its start
        self.after: dict[str, list[float]] = {}
        self.began: dict[str, float] = {}
        for j in state.jobs:
            for item in j.dependency.items if j.dependency is not None else ():
                if item.kind is DepKind.AFTER and item.job is not None:
                    job_id = item.job.removesuffix("_*")  # every task of an array
                    self.after.setdefault(job_id, []).append(item.delay)
        self.candidates = _Candidates.of(self.core, policy)
        self.batch = max(1, policy.batch)

    def _moments(self) -> set[float]:
        """Instants a session may decide differently with no job ending: begin times
        and reservation edges after now."""
        out = {j.begin_time for j in self.state.jobs if j.begin_time is not None}
        for r in self.state.reservations:
            out.update((r.start, r.end))
        return {t for t in out if math.isfinite(t) and t > self.now}

    def run(self) -> ForwardRun:
        for r in self.state.running:
            self._end_at(r.id, max(r.start_time + self.totals[r.id], self.now))
        last: dict[str, float] = {}  # an array every task of which has started
        for r in self.state.running:
            self._note_start(r.id, r.start_time)
            if r.array_job is not None and r.array_job not in self.records:
                last[r.array_job] = max(r.start_time, last.get(r.array_job, r.start_time))
        for record, start in last.items():
            self._note_start(record, start)  # it began with its last task
        t = self.now
        out = self.run_of
        while True:
            # the first session is whole: it is xce schedule's, reasons and all
            shortcut = self.candidates is not None and out.first is not None
            out.sessions += 1
            if out.sessions > MAX_SESSIONS:
                raise InternalError(f"the forward replay ran {MAX_SESSIONS:,} sessions")
            if shortcut and self.candidates is not None and self.candidates.in_batches:
                again = self._in_batches(self.candidates, t)
            else:
                jobs = self.candidates.now() if shortcut and self.candidates is not None else None
                result = self.core.run_session(jobs=jobs, now=t)
                if out.first is None:
                    out.first = result
                again = self._apply(result, t)
            if not self.core.pending_count or not self.left:
                break
            if again:
                continue  # something changed at this instant: decide again
            nxt = self._next(t)
            if nxt is None:
                break
            t = nxt
            self._finish_until(t)
        if shortcut and self.left:
            self._reasons(self.core.run_session(now=t))  # a whole session says why
        return self.run_of

    def _in_batches(self, candidates: _Candidates, t: float) -> bool:
        """One session fed in arrival-order batches, each batch's dispatches started
        before the next is chosen (so a job wanting more slots than are left is not
        tried): exact when every picker is ``monotone_in_session`` and every queue has
        one priority (the session's order is then arrival order, and a job's decision
        depends only on the jobs before it), and no queue preempts (a preemption frees
        slots only after its session)."""
        again = False
        tried = np.zeros(len(candidates.ids), dtype=bool)
        while True:
            batch = candidates.batch(tried, self.batch)
            if batch is None:
                return again
            if batch:
                again = self._apply(self.core.run_session(jobs=batch, now=t), t) or again

    def _reasons(self, result: SessionResult) -> None:
        """Why the jobs still waiting at the end wait (from a whole session)."""
        for d in result.decisions:
            if isinstance(d, Pending) and d.job in self.pending_ids:
                self.run_of.reasons[d.job] = d.info

    def _hold_after(self, job_id: str, start: float, end: float) -> None:
        """Job ``job_id`` (started at ``start``) ended at ``end``: the core now reads
        its ``after`` items as held, so a job still waiting for one's delay gets it as
        its begin time (all-of dependencies: ``?`` may hold through another item)."""
        for job in list(self.core.pending_jobs()):
            dep = job.dependency
            if dep is None or dep.any_of:
                continue
            opens = [
                start + i.delay
                for i in dep.items
                if i.kind is DepKind.AFTER
                and i.job is not None
                and i.job.removesuffix("_*") == job_id
                and start + i.delay > end
            ]
            if opens:
                begin = max([*opens, *([job.begin_time] if job.begin_time is not None else [])])
                self.core.apply(JobUpdated(replace(job, begin_time=begin)))

    def _ended(self, run: RunningJob, at: float) -> None:
        """``run`` stopped at ``at``: hold the ``after`` items on it, and on its array once
        every task has started (begun at its last task's start)."""
        if run.id in self.after:
            self._hold_after(run.id, run.start_time, at)
        record = run.array_job
        if record is not None and record in self.after and record in self.began:
            self._hold_after(record, self.began[record], at)

    def _note_start(self, job_id: str, start: float) -> None:
        """Job ``job_id`` started at ``start``: a job waiting ``after`` it (plus a
        delay) may start at ``start + delay``."""
        self.began[job_id] = start
        for delay in self.after.get(job_id, ()):
            at = start + delay
            if at > self.now:
                bisect.insort(self.moments, at)

    def _apply(self, result: SessionResult, t: float) -> bool:
        """Start the dispatches; preempt what a decision preempts (True: decide again)."""
        again = False
        for d in result.decisions:
            if isinstance(d, Dispatched):
                again = self._start(d, t) or again
            elif isinstance(d, Pending) and d.preemption is not None:
                self._preempt(d.preemption.victims, t)
                self._start(Dispatched(d.job, d.preemption.promise), t)
                again = True
            elif d.job in self.pending_ids:
                self.run_of.reasons[d.job] = d.info
        return again

    def _start(self, d: Dispatched, t: float) -> bool:
        """Start ``d``; True when a job waits ``after`` what began (decide again)."""
        core = self.core
        job = core.pending(d.job)
        key = d.job
        if job is None:  # a task of an array record: asked about as itself
            key, _, index = d.job.rpartition("_")
            record = core.pending(key)
            if record is None or record.array is None or not index.isdigit():
                raise InternalError(f"the session started {d.job}, which does not pend")
            job = array_task(record, int(index))
        try:
            core.apply(JobStarted(d.job, d.allocation, t))
        except EventError as err:  # a session's decision that does not fit is a bug
            raise InternalError(f"the forward replay could not start {d.job}: {err}") from err
        length = self.lengths.get(d.job)
        if length is None:
            length = self.lengths[d.job] = self.runtime(asked_pending(job, self.state))
        self.own[d.job] = job
        self._end_at(d.job, t + length)
        self._note_start(d.job, t)
        began = d.job in self.after
        if key != d.job and core.pending(key) is None:  # the record's last task:
            self._note_start(key, t)  # the array has started (docs/state-file.md)
            began = began or key in self.after
        if self.candidates is not None:
            self.candidates.started(key, job, d.allocation.slots)
        if key in self.left and core.pending(key) is None:
            self.left.discard(key)  # started (an array record: its last task)
        if key in self.pending_ids:
            out = self.run_of
            if out.starts.get(key) is None:
                out.starts[key] = t
            if job.array_job is not None:
                out.last_starts[key] = t
            out.reasons.pop(key, None)
        return began

    def _preempt(self, victims: tuple[str, ...] | list[str], t: float) -> None:
        for victim in victims:
            self.ends.pop(victim, None)
            run = self.core.running(victim)
            self.core.apply(JobPreempted(victim, t))
            if run is not None:
                self._ended(run, t)
            if self.candidates is not None and run is not None:
                self.candidates.freed(run.slots)
            again = self.own.pop(victim, None)
            if again is not None and again.array_job is None:
                self.core.apply(JobSubmitted(again))
                if again.id in self.watched:
                    self.left.add(again.id)  # back in its queue: it waits again
                if self.candidates is not None:
                    self.candidates.add(again)

    def _end_at(self, job_id: str, at: float) -> None:
        self.ends[job_id] = at
        if math.isfinite(at):
            check_replay_time(at, f"the end of job {job_id}")
            heapq.heappush(self.heap, (at, self.seq, job_id))
            self.seq += 1

    def _next(self, t: float) -> float | None:
        """The next instant after ``t`` something changes, if any."""
        heap = self.heap
        while heap and self.ends.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # a preempted run's end
        moments = self.moments
        while moments and moments[0] <= t:
            moments.pop(0)
        candidates = [heap[0][0]] if heap else []
        if moments:
            candidates.append(moments[0])
        return min(candidates) if candidates else None

    def _finish_until(self, t: float) -> None:
        heap = self.heap
        while heap and heap[0][0] <= t:
            at, _, job_id = heapq.heappop(heap)
            if self.ends.get(job_id) != at:
                continue
            del self.ends[job_id]
            self.own.pop(job_id, None)
            run = self.core.running(job_id)
            self.core.apply(JobFinished(job_id, at))
            if run is not None:
                self._ended(run, at)
            if self.candidates is not None and run is not None:
                self.candidates.freed(run.slots)
            self.run_of.ends += 1


class _Candidates:
    """The jobs a session can start, when every queue's picker and backfill policy
    promise ``monotone_in_session``, no picker holds its queue at its head and no
    advance reservation is in force: a job whose every alternative wants more slots than
    are free in all pends whatever the others do, and, pending, charges nothing and
    changes no other decision (the simulator's shortcut, :mod:`xce.sim.engine`). Gated
    jobs (arrays, further queues, holds, begin times, dependencies) and those of a queue
    that preempts are always tried."""

    __slots__ = ("alive", "core", "fewest", "free", "ids", "in_batches", "index")

    def __init__(self, core: SchedulerCore, free: int) -> None:
        self.core = core
        self.free = free
        self.ids: list[str] = []  # in arrival order (submit time, then order)
        self.index: dict[str, int] = {}
        self.fewest = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.in_batches = False  # sessions may be fed in batches (Replay._in_batches)

    @staticmethod
    def of(core: SchedulerCore, policy: Policy) -> _Candidates | None:
        state = core.state
        if not policy.shortcuts or state.reservations:
            return None
        registry = policy.pickers()
        queues = {j.queue for j in state.jobs} | {
            e.queue for j in state.jobs for e in j.also_queues
        }
        for q in queues:
            traits = picker_traits(registry.get(core.picker_name(q)))
            if not traits.monotone_in_session or traits.blocks_queue_at_head:
                return None
            if not core.backfill_for(q).monotone_in_session:
                return None
        total = int(np.nansum(state.hosts.capacity[SLOTS]))
        free = total - sum(r.slots for r in state.running)
        out = _Candidates(core, free)
        preempting = {n for n, q in state.queues.items() if q.preempts}
        jobs = sorted(state.jobs, key=lambda j: (j.submit_time, j.order))
        fewest = [out._fewest(j, preempting) for j in jobs]
        out.ids = [j.id for j in jobs]
        levels = {state.queues[q].priority if q in state.queues else 0 for q in queues}
        out.in_batches = not preempting and len(levels) <= 1
        out.index = {job_id: i for i, job_id in enumerate(out.ids)}
        out.fewest = np.asarray(fewest, dtype=np.int64)
        out.alive = np.ones(len(out.ids), dtype=bool)
        return out

    def _fewest(self, job: PendingJob, preempting: set[str]) -> int:
        if job.gated or job.queue in preempting:
            return 0
        return job_request(job, self.core.catalog).requirement.fewest_tasks

    def now(self) -> list[PendingJob]:
        """The pending jobs a session tries now, in arrival order."""
        pending = self.core.pending
        chosen = np.flatnonzero(self.alive & (self.fewest <= self.free))
        jobs = [pending(self.ids[i]) for i in chosen.tolist()]
        return [j for j in jobs if j is not None]

    def batch(self, tried: npt.NDArray[np.bool_], size: int) -> list[PendingJob] | None:
        """The next jobs of a session fed in batches: in arrival order, not tried yet
        this session, wanting no more slots than are free now; at most ``size``, and
        only as many as could all start together (the fewest tasks of those before a
        job and its own within the free slots; at least one), since a job after one
        that starts may find too little left (None: none)."""
        pending = self.core.pending
        chosen = np.flatnonzero(self.alive & ~tried & (self.fewest <= self.free))
        if not len(chosen):
            return None
        together = int(np.searchsorted(np.cumsum(self.fewest[chosen]), self.free, side="right"))
        chosen = chosen[: max(1, min(together, size))]
        tried[chosen] = True
        jobs = [pending(self.ids[i]) for i in chosen.tolist()]
        return [j for j in jobs if j is not None]

    def started(self, key: str, job: PendingJob, slots: int) -> None:
        """Job (or array record) ``key`` started ``job`` on ``slots`` slots."""
        self.free -= slots
        i = self.index.get(key)
        if i is not None and self.core.pending(key) is None:
            self.alive[i] = False

    def freed(self, slots: int) -> None:
        self.free += slots

    def add(self, job: PendingJob) -> None:
        """A preempted job back in its queue."""
        i = self.index.get(job.id)
        if i is None:
            self.index[job.id] = i = len(self.ids)
            self.ids.append(job.id)
            self.fewest = np.append(self.fewest, 0)
            self.alive = np.append(self.alive, True)
        self.alive[i] = True
        self.fewest[i] = 0


# -- predictions with an interval ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobForecast:
    """One pending job's predicted start (None: it never starts in the point replay),
    the interval of its sampled starts (None when it did not start in enough of them),
    the scheduler's own estimate when the state has one, and why it waits for ever."""

    job: str
    start: float | None
    low: float | None
    high: float | None
    scheduler_start: float | None
    last_start: float | None = None  # an array record: its last task's start
    reason: PendInfo | None = None


@dataclass(frozen=True, slots=True)
class Forecast:
    """What :func:`predict_starts` found."""

    now: float
    jobs: tuple[JobForecast, ...]
    runs: int
    point: ForwardRun
    seconds: float  # wall time of all the replays


def predict_starts(
    state: ClusterState,
    predictor: RuntimePredictor,
    *,
    runs: int = 0,
    seed: int = 0,
    policy: Policy | None = None,
    now: float | None = None,
    until: frozenset[str] | None = None,
    workers: int = 1,
) -> Forecast:
    """Every pending job's predicted start (point replay) and interval (``runs``
    sampled replays, on ``workers`` processes where the platform forks: each run draws
    from its own stream, so the result does not depend on ``workers``); see the module
    docstring."""
    from xce.predict.plain import plain_snapshot

    began = time.perf_counter()
    policy = policy or Policy()
    at = state.session_time() if now is None else now
    shared = plain_snapshot(state, policy, at)  # made once for every run
    point = forward_replay(
        state, predictor.predict, policy=policy, now=at, until=until, snapshot=shared
    )
    job = _Sampling(state, predictor, seed, policy, at, until, shared)
    samples: list[Mapping[str, float | None]]
    if workers > 1 and runs > 1 and "fork" in multiprocessing.get_all_start_methods():
        global _SAMPLING
        _SAMPLING = job
        try:
            context = multiprocessing.get_context("fork")
            with context.Pool(min(workers, runs)) as pool:
                samples = pool.map(_sampled_run, range(runs))
        finally:
            _SAMPLING = None
    else:
        samples = [job.run(run) for run in range(runs)]
    jobs = tuple(_forecast(j, point, samples) for j in state.jobs)
    return Forecast(point.now, jobs, runs, point, time.perf_counter() - began)


@dataclass(frozen=True, slots=True)
class _Sampling:
    """What every sampled replay of one forecast shares."""

    state: ClusterState
    predictor: RuntimePredictor
    seed: int
    policy: Policy
    now: float
    until: frozenset[str] | None
    snapshot: PlainSnapshot | None

    def run(self, run: int) -> dict[str, float | None]:
        """Sampled replay number ``run``: its own random stream ``(seed, run)``, one draw
        per job and elapsed time."""
        rng = np.random.default_rng([self.seed, run])
        memo: dict[str, float] = {}
        sample = self.predictor.sample

        def draw(job: Asked) -> float:
            key = f"{job.id}\0{job.elapsed}"
            if key not in memo:
                memo[key] = sample(job, rng)
            return memo[key]

        replay = forward_replay(
            self.state,
            draw,
            policy=self.policy,
            now=self.now,
            until=self.until,
            snapshot=self.snapshot,
        )
        return replay.starts


_SAMPLING: _Sampling | None = None  # the forecast a forked worker's runs belong to


def _sampled_run(run: int) -> dict[str, float | None]:
    """A forked worker's sampled replay (the job is inherited, not pickled)."""
    if _SAMPLING is None:
        raise InternalError("a sampled replay ran outside predict_starts")
    return _SAMPLING.run(run)


def _forecast(
    job: PendingJob, point: ForwardRun, samples: list[Mapping[str, float | None]]
) -> JobForecast:
    low = high = None
    if samples:
        starts = np.array(
            [s.get(job.id) if s.get(job.id) is not None else math.inf for s in samples],
            dtype=float,
        )
        lo, hi = np.quantile(starts, [LOW_Q, HIGH_Q], method="inverted_cdf")
        low = float(lo) if math.isfinite(lo) else None
        high = float(hi) if math.isfinite(hi) else None
    return JobForecast(
        job.id,
        point.starts.get(job.id),
        low,
        high,
        job.scheduler_start,
        point.last_starts.get(job.id),
        point.reasons.get(job.id),
    )
