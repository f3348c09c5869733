"""An independent oracle for backfill (issue 12): a plain discrete-event simulator.

It imports nothing from xce. Processors are *fungible*: the cluster is one pool of
``processors`` identical slots and a job asks for a count of them. A cluster of N hosts
of 8 slots is modelled as ``N * 8`` slots; for jobs without host constraints (a job
may span hosts) slot counts are exactly what the engine sees. Jobs asking whole hosts
are modelled by asking a multiple of 8 (``synthetic_trace(..., host_size=8)``); issue
12 states that EASY on hosts equals its processor-count formulation for such jobs, so
EASY start times must agree exactly. Conservative on hosts may differ (a job keeps the
same hosts for its whole run, which counts cannot see).

Semantics (match these in the engine)
-------------------------------------
* **Estimates.** A job's planning duration is its ``requested_time``. A job without
  one (``None``) has an infinite estimate: for planning it holds its processors for
  ever. A running job past its estimate (``start + requested_time <= now`` while it
  still runs) is assumed to end *now*: its processors count as free at ``now`` in the
  profile, though they are not actually free, so nothing may *start* on them.
  ``runtime`` (the real duration) is never seen by planning; it only fixes the end.
  ``runtime`` and ``requested_time`` must be > 0 (a zero-length job would end in the
  session that starts it; the oracle refuses it rather than define that).
* **Sessions.** One session at every distinct event time (a submission or an end).
  At one time, all ends are processed first, then all submissions, then scheduling.
* **Queue order.** Submission time, ties broken by input order (one queue).
* **Availability profile.** A step function of free processors over ``[now, inf)``:
  ``processors`` minus the running jobs until their estimated ends (``max(start +
  requested_time, now)``, never for jobs without estimate), minus planned placements
  (conservative only). A job of ``p`` processors and duration ``d`` *fits at T* if the
  profile is ``>= p`` over all of ``[T, T + d)``. Its *earliest start* is the first
  candidate time that fits; the candidates are ``now`` and the later instants at which
  the profile changes. When no time fits (only possible because jobs without an
  estimate hold processors for ever), the earliest start is ``None`` (unknown).
* **fcfs_strict** (Slurm ``sched/builtin``, LSF FCFS, the literature's FCFS): jobs start
  in queue order while they fit in the actually free processors; the first job that
  does not fit blocks every later one. No reservations, no plan.
* **easy** (EASY, Lifka 1995; Mu'alem & Feitelson 2001): jobs start in queue order
  while they fit now. The first job that does not fit (the *head*) gets a reservation
  at its earliest start in the profile of running jobs only: the *shadow time* S.
  ``extra = free(S) - head.procs`` (processors spare at S). Each later job, in order,
  starts now if it fits in the actually free processors and either
  (a) ``now + requested_time <= S`` (it ends, by estimate, by the shadow time; it does
  not touch ``extra``), or (b) ``procs <= extra`` (then ``extra -= procs``).
  (a) is tried first. A job without estimate never satisfies (a). If S is ``None``
  (the head can never be planned) there is nothing to protect: every later job that
  fits now starts.
* **conservative**: the plan is made afresh in every pass. Each waiting job in queue
  order is placed at its earliest start in the profile of running jobs and the
  placements already made in this pass (a placement holds ``procs`` over
  ``[T, T + requested_time)``, for ever without estimate). A job whose placement is
  ``now`` and that fits in the actually free processors starts. A job whose earliest
  start is ``None`` gets no placement and holds nothing in the plan.
* **Passes.** For easy and conservative a session repeats its pass until a pass starts
  nothing (for fcfs_strict one pass is already a fixpoint).
* **Planned start at submission** (for prediction accuracy): the job's reservation in
  the *first pass of the session at its submission time*: conservative: its placement
  (``now`` if it started, ``None`` if unplaceable); easy: the shadow time if it was the
  head in that pass, ``now`` if it started in that pass, else ``None``; fcfs_strict:
  ``now`` if it started in that pass, else ``None``.
* **backfilled** (issue 12: "started ahead of a job holding a reservation"): easy, a job
  started after the head while the head holds a reservation (its shadow time is not
  None); conservative, a job started while a job ahead of it holds a placement it has
  not started on (a job that cannot be placed at all holds nothing); fcfs_strict never.

Guarantees (checked by tests/test_backfill_oracle.py)
----------------------------------------------------
* easy, runtime <= estimate: a job starts no later than any shadow time it was given.
* conservative, runtime == estimate: every job starts exactly at its planned start at
  submission. With runtime < estimate this can break: the fresh plan lets an earlier
  job move up into a later job's promised slot (see the table test).
* fcfs_strict: start times are non-decreasing in queue order.

Times may be ``int`` or ``fractions.Fraction`` (exact); ``float`` works but is not exact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = [
    "POLICIES",
    "Job",
    "Outcome",
    "earliest_start",
    "simulate",
    "synthetic_trace",
]

Time = int | Fraction | float
INF = math.inf
POLICIES = ("fcfs_strict", "easy", "conservative")


@dataclass(frozen=True)
class Job:
    """One job of a trace. ``requested_time`` None means no estimate."""

    id: int | str
    submit: Time
    runtime: Time
    requested_time: Time | None
    procs: int

    @property
    def estimate(self) -> Time:
        return INF if self.requested_time is None else self.requested_time


@dataclass
class Outcome:
    """What happened to one job."""

    id: int | str
    submit: Time
    start: Time
    end: Time
    planned_at_submit: Time | None
    backfilled: bool
    # every (session time, reservation) the job was given: easy while it was the head,
    # conservative in every pass it waited through (None = unplaceable).
    reservations: list[tuple[Time, Time | None]] = field(default_factory=list)


@dataclass
class _Running:
    job: Job
    start: Time
    end: Time  # actual end

    def estimated_end(self, now: Time) -> Time:
        return max(self.start + self.job.estimate, now)


def _profile(
    now: Time, total: int, holds: Sequence[tuple[Time, Time, int]]
) -> list[tuple[Time, int]]:
    """Free processors from ``now`` on, as breakpoints ``[(t, free), ...]``.

    ``holds`` are ``(from, until, procs)``; ``until`` may be ``inf``. Each value
    holds from its ``t`` to the next breakpoint (the last one for ever).
    """
    deltas: dict[Time, int] = {now: 0}
    free = total
    for begin, until, procs in holds:
        if until <= now:
            continue
        if begin <= now:
            free -= procs
        else:
            deltas[begin] = deltas.get(begin, 0) - procs
        if until != INF:
            deltas[until] = deltas.get(until, 0) + procs
    points = []
    for t in sorted(deltas):
        free += deltas[t]
        if points and points[-1][1] == free:
            continue
        points.append((t, free))
    return points


def _free_at(profile: list[tuple[Time, int]], t: Time) -> int:
    value = profile[0][1]
    for when, free in profile:
        if when > t:
            break
        value = free
    return value


def earliest_start(profile: list[tuple[Time, int]], procs: int, duration: Time) -> Time | None:
    """First breakpoint T with free >= procs over all of [T, T + duration), or None."""
    for i, (t, _) in enumerate(profile):
        lowest = min(free for when, free in profile[i:] if when == t or when < t + duration)
        if lowest >= procs:
            return t
    return None


def _validate(jobs: Sequence[Job], processors: int, policy: str) -> None:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    if processors < 1:
        raise ValueError("processors must be >= 1")
    seen = set()
    for job in jobs:
        if job.id in seen:
            raise ValueError(f"duplicate job id {job.id!r}")
        seen.add(job.id)
        if not 1 <= job.procs <= processors:
            raise ValueError(f"job {job.id!r}: procs must be in 1..{processors}")
        if job.runtime <= 0:
            raise ValueError(f"job {job.id!r}: runtime must be > 0")
        if job.requested_time is not None and job.requested_time <= 0:
            raise ValueError(f"job {job.id!r}: requested_time must be > 0 or None")
        if job.submit < 0:
            raise ValueError(f"job {job.id!r}: submit must be >= 0")


def simulate(jobs: Sequence[Job], processors: int, policy: str) -> dict[int | str, Outcome]:
    """Replay ``jobs`` on ``processors`` fungible processors; one Outcome per job id."""
    _validate(jobs, processors, policy)
    arrivals = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
    arrivals_left = [jobs[i] for i in arrivals]
    arrivals_left.reverse()  # pop() from the end = earliest
    queue: list[Job] = []
    running: list[_Running] = []
    out: dict[int | str, Outcome] = {}
    reservations: dict[int | str, list[tuple[Time, Time | None]]] = {j.id: [] for j in jobs}
    planned: dict[int | str, Time | None] = {}

    while arrivals_left or queue or running:
        candidates = [r.end for r in running]
        if arrivals_left:
            candidates.append(arrivals_left[-1].submit)
        now = min(candidates)
        running = [r for r in running if r.end > now]  # ends first
        new_ids = set()
        while arrivals_left and arrivals_left[-1].submit <= now:
            job = arrivals_left.pop()
            queue.append(job)
            new_ids.add(job.id)
        first = True
        while queue:
            started = _pass(policy, now, processors, queue, running, reservations, out)
            if first:
                for job_id in new_ids:
                    planned[job_id] = _planned_in_first_pass(job_id, policy, now, reservations, out)
                first = False
            if not started or policy == "fcfs_strict":
                break
        if not queue and not running and arrivals_left == [] and len(out) < len(jobs):
            raise AssertionError("oracle lost a job")  # pragma: no cover
    for outcome in out.values():
        outcome.planned_at_submit = planned[outcome.id]
        outcome.reservations = reservations[outcome.id]
    return out


def _planned_in_first_pass(job_id, policy, now, reservations, out):  # type: ignore[no-untyped-def]
    if job_id in out and out[job_id].start == now:
        return now
    if policy == "fcfs_strict":
        return None
    given = [res for when, res in reservations[job_id] if when == now]
    # reservations of the first pass were appended first at this time
    return given[0] if given else None


def _start(now, job, running, out, backfilled):  # type: ignore[no-untyped-def]
    running.append(_Running(job, now, now + job.runtime))
    out[job.id] = Outcome(job.id, job.submit, now, now + job.runtime, None, backfilled)


def _pass(
    policy: str,
    now: Time,
    total: int,
    queue: list[Job],
    running: list[_Running],
    reservations: dict[int | str, list[tuple[Time, Time | None]]],
    out: dict[int | str, Outcome],
) -> bool:
    """One scheduling pass; removes started jobs from ``queue``; True if any started."""
    free_now = total - sum(r.job.procs for r in running)
    started: list[Job] = []
    waiting_ahead = False

    if policy == "fcfs_strict":
        for job in queue:
            if job.procs > free_now:
                break
            _start(now, job, running, out, False)
            free_now -= job.procs
            started.append(job)

    elif policy == "easy":
        shadow: Time | None = None
        extra = 0
        for job in queue:
            if not waiting_ahead:
                if job.procs <= free_now:
                    _start(now, job, running, out, False)
                    free_now -= job.procs
                    started.append(job)
                    continue
                waiting_ahead = True
                holds = [(r.start, r.estimated_end(now), r.job.procs) for r in running]
                profile = _profile(now, total, holds)
                shadow = earliest_start(profile, job.procs, job.estimate)
                reservations[job.id].append((now, shadow))
                if shadow is not None:
                    extra = _free_at(profile, shadow) - job.procs
                continue
            if job.procs > free_now:
                continue
            if shadow is None or now + job.estimate <= shadow:
                pass
            elif job.procs <= extra:
                extra -= job.procs
            else:
                continue
            _start(now, job, running, out, shadow is not None)
            free_now -= job.procs
            started.append(job)

    else:  # conservative
        plan: list[tuple[Time, Time, int]] = [
            (r.start, r.estimated_end(now), r.job.procs) for r in running
        ]
        for job in queue:
            at = earliest_start(_profile(now, total, plan), job.procs, job.estimate)
            reservations[job.id].append((now, at))
            if at is None:
                continue  # unplaceable: it holds nothing, so nobody passes it
            plan.append((at, at + job.estimate, job.procs))
            if at == now and job.procs <= free_now:
                _start(now, job, running, out, waiting_ahead)
                free_now -= job.procs
                started.append(job)
            else:
                waiting_ahead = True  # it holds a placement that later jobs pass

    for job in started:
        queue.remove(job)
    return bool(started)


def synthetic_trace(
    seed: int,
    n_jobs: int,
    processors: int,
    *,
    host_size: int = 1,
    exact: bool = False,
    no_estimate_fraction: float = 0.0,
    mean_gap: int = 20,
) -> list[Job]:
    """A seeded random trace with integer times and ``runtime <= requested_time``.

    ``processors`` is the cluster's total (N hosts x ``host_size``); every job asks a
    multiple of ``host_size`` (whole hosts), between one host and all of them, biased
    to narrow jobs. ``exact`` makes runtime == requested_time. A fraction of jobs may be
    given no estimate (then their runtime is still finite). Ids are 1..n_jobs in submit
    order; submits are non-decreasing and some coincide.
    """
    if processors % host_size:
        raise ValueError("processors must be a multiple of host_size")
    rng = random.Random(seed)
    hosts = processors // host_size
    jobs = []
    t = 0
    for i in range(1, n_jobs + 1):
        if rng.random() >= 0.2:  # 20% arrive with the previous job
            t += rng.randint(0, 2 * mean_gap)
        width = min(hosts, max(1, int(hosts * rng.random() ** 2) + rng.randint(0, 1)))
        requested = rng.choice([rng.randint(1, 20), rng.randint(20, 200)])
        runtime = requested if exact else rng.randint(1, requested)
        estimate: int | None = requested
        if rng.random() < no_estimate_fraction:
            estimate = None
        jobs.append(Job(i, t, runtime, estimate, width * host_size))
    return jobs
