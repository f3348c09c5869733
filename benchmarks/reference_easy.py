"""An independent reference for xce's EASY backfill replay, with and without runtime
predictions (``--backfill-with predicted``; Tsafrir, Etsion and Feitelson, "Backfilling
using system-generated predictions rather than user runtime estimates", IEEE TPDS 2007).

The reference is the textbook processor-count formulation of EASY, written from scratch
(it imports neither ``xce.sim`` nor ``xce.core``/``xce.alloc``: only the SWF reader, to
read the same jobs, and ``xce.predict``, for the same prediction source). It replays a
trace and compares every job's start with xce's own replay of it::

    cd /work/main && PYTHONPATH=. .venv/bin/python -m benchmarks.reference_easy --jobs 1500

Rules (xce's, read from ``xce.sim.engine``, ``xce.sim.predicted``, ``xce.alloc.planner``
and ``xce.cluster.estimates``, and matched here):

- The machine is the trace header's (KTH-SP2: 100 hosts of 1 slot); a job needs
  ``tasks`` slots. A job wider than the machine never runs.
- A job runs its runtime; with ``--enforce-walltime``, at most its requested time
  (``SimOptions.enforce_walltime``, off by default: then a job may overrun its
  requested time, and 17 of KTH's first 1,500 jobs do).
- Events at one instant, in this order: job ends (in the order the jobs started),
  submissions (trace order), predictions outlived; then one scheduling pass (a
  "session") if a job is queued. Every instant with an event gets a session, even an
  instant whose only event is stale (a raise for a job that has ended).
- Queue order: submit time, then trace order (xce's ``fcfs`` picker).
- A job's *estimate* is its requested time (``requested``), or with a predictor
  (``predicted``) its prediction at submission when that is below its requested time.
  A running job's estimated end is ``max(start + estimate, now)``: a job past its
  estimate is assumed to end now (``xce.cluster.estimates.estimated_end``).
- EASY pass: queued jobs start in order while each fits in the free slots. The first
  that does not is the head; its *shadow time* is the first estimated end (running
  jobs, including those just started, by estimated end) at which the free slots plus
  those freed by then reach its size, and *extra* is that many slots less its size
  (every end at the shadow time counts). Each later job starts if it fits in the free
  slots now and either ends by its estimate no later than the shadow time
  (``now + estimate <= shadow``: xce's planner holds the head over ``[T, T + e)`` and a
  job over ``[now, now + e)``, so one ending at ``T`` leaves the head its slots) or
  takes at most ``extra`` slots, which it then uses up (``extra -= tasks``). A job that
  does not fit waits; only the head gets a reservation (``EasyBackfill.plans_job``).
- Predictions (``xce.sim.predicted.Predictions``): at submission ``P.predict(Asked(id,
  user, limit, None, queue, tasks))`` with ``limit`` the requested time. A job started
  with a prediction below its limit outlives it at ``start + prediction`` (an event only
  if it is still running then); at that instant its prediction is raised to
  ``xce.predict.raised(prediction, Asked(..., elapsed=now - start))``, or to its
  requested time when the raise reaches the limit (no further raise); otherwise a
  further event at ``start + raised`` is queued whether or not the job will still run.
  At its end the predictor learns ``FinishedJob(id, user, start, end, limit=requested
  time, queue, tasks, submit)``.

A raise steps from the job's first prediction (Tsafrir et al.'s ladder: +1 min, +5 min,
+15 min, ... past the time run), not from the last raise.

What this shows (KTH-SP2, first 1,500 jobs): every job starts at the same time in both
replays, in every config. It found that xce raised from the last raise (always +1 min:
an underpredicted job looked as if it would end within a minute for the rest of its
run, which pinned the head's reservation and stopped most backfilling: fraction's mean
wait 6,128 s against 4,034 s with the ladder; fixed in ``xce.sim.predicted``).
"""

from __future__ import annotations

import argparse
import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xce.predict import Asked, FinishedJob, RuntimePredictor, default_predictors, raised
from xce.sim.model import SimJob
from xce.sim.swf import read_swf

TRACE = Path("/work/shared/data/traces/KTH-SP2-1996-2.1-cln.swf.gz")
CONFIGS = ("requested", "limit", "oracle", "fraction", "history")

_FINISH, _SUBMIT, _OUTLIVED = 0, 1, 3  # xce.sim.engine's event priorities at one instant


class OraclePredictor:
    """Predicts each job's own runtime (capped at its limit, at least what it has run)."""

    name = "oracle"

    def __init__(self, runtimes: dict[str, float]) -> None:
        self.runtimes = runtimes

    def fresh(self, option: str | None = None) -> OraclePredictor:
        del option
        return OraclePredictor(self.runtimes)

    def observe(self, job: FinishedJob) -> None:
        del job

    def predict(self, job: Asked) -> float:
        return min(max(self.runtimes.get(job.id, job.limit), job.elapsed), job.limit)

    def sample(self, job: Asked, rng: np.random.Generator) -> float:
        del rng
        return self.predict(job)


def make_predictor(config: str, jobs: Sequence[SimJob]) -> RuntimePredictor | None:
    """A fresh predictor for ``config`` (None: plan with the requested times)."""
    if config == "requested":
        return None
    if config == "oracle":
        return OraclePredictor({j.id: j.runtime for j in jobs})
    return default_predictors().make(config)


# --- the reference -----------------------------------------------------------------------


@dataclass(slots=True)
class Running:
    """A running job: when it started, when it really ends, what planning assumes."""

    index: int
    start: float
    end: float
    estimate: float
    raises: bool  # its prediction is below its limit: it may be raised
    said: float  # its prediction at submission (the limit when it had none below it)


@dataclass(slots=True)
class Pass:
    """What one scheduling pass decided (kept only when asked, for explaining)."""

    now: float
    free: int
    running: list[tuple[str, int, float]]  # (job, tasks, estimated end), by end
    started: list[str]
    head: str | None = None
    shadow: float = math.nan
    extra: int = 0
    backfilled: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Replay:
    """A reference replay's outcome: each job's start (None: it never ran)."""

    starts: list[float | None]
    sessions: int
    passes: list[Pass]
    raises: int  # predictions raised (a running job outlived its prediction)
    raised_by: float  # seconds those raises added in all


class ReferenceEasy:
    """The processor-count EASY replay described in the module docstring."""

    def __init__(
        self,
        jobs: Sequence[SimJob],
        slots: int,
        predictor: RuntimePredictor | None = None,
        *,
        enforce_walltime: bool = False,
        keep: tuple[float, float] | None = None,
    ) -> None:
        self.jobs = list(jobs)
        self.total = slots
        self.predictor = predictor
        self.enforce = enforce_walltime
        self.raises = 0
        self.raised_by = 0.0
        self.keep = keep  # passes kept for explaining: those in [keep[0], keep[1]]
        self.free = slots
        self.queue: list[int] = []  # queued jobs (indices), in queue order
        self.estimate: dict[int, float] = {}  # queued job -> its planning estimate
        self.said: dict[int, float] = {}  # job -> its prediction at submission
        self.running: dict[int, Running] = {}
        self.starts: list[float | None] = [None] * len(self.jobs)
        self.heap: list[tuple[float, int, int, int]] = []  # (time, kind, seq, job index)
        self.seq = 0
        self.sessions = 0
        self.passes: list[Pass] = []

    def limit(self, job: SimJob) -> float:
        return job.requested_time if job.requested_time is not None else math.inf

    def push(self, at: float, kind: int, index: int) -> None:
        heapq.heappush(self.heap, (at, kind, self.seq, index))
        self.seq += 1

    def run(self) -> Replay:
        for i, job in enumerate(self.jobs):
            self.push(job.submit, _SUBMIT, i)
        while self.heap:
            now = self.heap[0][0]
            while self.heap and self.heap[0][0] == now:
                _, kind, _, i = heapq.heappop(self.heap)
                if kind == _FINISH:
                    self.finish(i, now)
                elif kind == _SUBMIT:
                    self.submit(i)
                else:
                    self.outlived(i, now)
            if self.queue:
                self.session(now)
        return Replay(self.starts, self.sessions, self.passes, self.raises, self.raised_by)

    # --- events ----------------------------------------------------------------------
    def submit(self, i: int) -> None:
        job = self.jobs[i]
        tasks = job.tasks or 1
        if tasks > self.total:
            return  # never runs
        limit = self.limit(job)
        estimate = limit
        if self.predictor is not None:
            asked = Asked(job.id, job.user, limit, None, job.queue, tasks)
            said = self.said[i] = self.predictor.predict(asked)
            if math.isfinite(said) and said < limit:
                estimate = said
        self.estimate[i] = estimate
        self.queue.append(i)  # the trace is in submit order: queue order is trace order

    def finish(self, i: int, now: float) -> None:
        run = self.running.pop(i)
        job = self.jobs[i]
        self.free += job.tasks or 1
        if self.predictor is not None:
            self.predictor.observe(
                FinishedJob(
                    job.id,
                    job.user,
                    run.start,
                    now,
                    limit=job.requested_time,
                    queue=job.queue,
                    tasks=job.tasks,
                    submit=job.submit,
                )
            )

    def outlived(self, i: int, now: float) -> None:
        run = self.running.get(i)
        if run is None or not run.raises or run.start + run.estimate != now:
            return  # it ended (a stale raise): the instant still gets its session
        job = self.jobs[i]
        limit = self.limit(job)
        asked = Asked(job.id, job.user, limit, None, job.queue, job.tasks or 1, now - run.start)
        new = raised(run.said, asked)  # the ladder steps from the first prediction
        self.raises += 1
        self.raised_by += min(new, limit) - run.estimate
        if new >= limit:
            run.estimate, run.raises = limit, False
            return
        run.estimate = new
        self.push(run.start + new, _OUTLIVED, i)

    def start(self, i: int, now: float) -> None:
        job = self.jobs[i]
        tasks = job.tasks or 1
        self.free -= tasks
        assert self.free >= 0
        runs = job.runtime
        if self.enforce and job.requested_time is not None:
            runs = min(runs, job.requested_time)
        estimate = self.estimate.pop(i)
        said = self.said.get(i)
        raises = said is not None and math.isfinite(said) and said < self.limit(job)
        self.running[i] = Running(i, now, now + runs, estimate, raises, estimate)
        self.starts[i] = now
        self.push(now + runs, _FINISH, i)
        if raises and now + estimate < now + runs:
            self.push(now + estimate, _OUTLIVED, i)

    # --- the EASY pass -----------------------------------------------------------------
    def session(self, now: float) -> None:
        self.sessions += 1
        keep = self.keep is not None and self.keep[0] <= now <= self.keep[1]
        note = Pass(now, self.free, [], []) if keep else None
        jobs = self.jobs
        waiting: list[int] = []
        shadow = math.inf
        extra = 0
        head: int | None = None
        for i in self.queue:
            tasks = jobs[i].tasks or 1
            if head is None:
                if tasks <= self.free:
                    self.start(i, now)
                    if note is not None:
                        note.started.append(jobs[i].id)
                    continue
                head = i
                shadow, extra = self.reservation(tasks, now, note)
                if note is not None:
                    note.head, note.shadow, note.extra = jobs[i].id, shadow, extra
                waiting.append(i)
                continue
            if tasks > self.free:
                waiting.append(i)
                continue
            if now + self.estimate[i] <= shadow:
                self.start(i, now)
            elif tasks <= extra:
                extra -= tasks
                self.start(i, now)
            else:
                waiting.append(i)
                continue
            if note is not None:
                note.backfilled.append(jobs[i].id)
        self.queue = waiting
        if note is not None:
            self.passes.append(note)

    def reservation(self, tasks: int, now: float, note: Pass | None) -> tuple[float, int]:
        """The head's shadow time and the extra slots then: running jobs give their
        slots back at their estimated ends, ``max(start + estimate, now)``."""
        ends = sorted(
            (max(r.start + r.estimate, now), self.jobs[r.index].tasks or 1)
            for r in self.running.values()
        )
        if note is not None:
            by_end = sorted(self.running.values(), key=lambda r: max(r.start + r.estimate, now))
            note.running = [
                (self.jobs[r.index].id, self.jobs[r.index].tasks or 1, r.start + r.estimate)
                for r in by_end
            ]
        free = self.free
        shadow = math.inf
        for end, held in ends:
            if free >= tasks and end > shadow:
                break
            free += held
            if free >= tasks and shadow == math.inf:
                shadow = end
        return shadow, free - tasks


# --- xce's replay ------------------------------------------------------------------------


def xce_starts(
    jobs: Sequence[SimJob], hosts: int, slots: int, config: str, enforce: bool
) -> tuple[list[float | None], int]:
    """Each job's start in xce's own EASY replay of ``config``, and its session count."""
    from xce.sim.clusters import uniform_cluster
    from xce.sim.engine import SimOptions, Simulation

    predictor = make_predictor(config, jobs)
    options = SimOptions(
        backfill="easy",
        plain_replay=False,
        predictor=predictor,
        backfill_with="requested" if predictor is None else "predicted",
        enforce_walltime=enforce,
    )
    result = Simulation(uniform_cluster(hosts, slots, None), jobs, options).run()
    return [r.start for r in result.records], result.stats.sessions


def mean_wait(jobs: Sequence[SimJob], starts: Sequence[float | None]) -> float:
    waits = [s - j.submit for j, s in zip(jobs, starts, strict=True) if s is not None]
    return sum(waits) / len(waits) if waits else math.nan


def first_divergence(
    jobs: Sequence[SimJob], a: Sequence[float | None], b: Sequence[float | None]
) -> int | None:
    """The job whose start differs earliest (by the earlier of its two starts)."""
    differ = [i for i in range(len(jobs)) if a[i] != b[i]]
    if not differ:
        return None
    return min(differ, key=lambda i: min(x for x in (a[i], b[i], math.inf) if x is not None))


def explain(jobs: Sequence[SimJob], slots: int, config: str, at: float, enforce: bool) -> None:
    """The reference's passes around ``at``, as the divergence report shows them."""
    ref = ReferenceEasy(
        jobs, slots, make_predictor(config, jobs), enforce_walltime=enforce, keep=(at, at)
    ).run()
    for p in ref.passes:
        print(f"  reference pass at {p.now:.0f}: free {p.free}, started {p.started}")
        if p.head is not None:
            print(
                f"    head {p.head}: shadow {p.shadow:.0f} (+{p.shadow - p.now:.0f} s), "
                f"extra {p.extra}; backfilled {p.backfilled}"
            )
            print("    running (job, tasks, start + estimate):")
            for job, tasks, end in p.running:
                print(f"      {job:>6} {tasks:>4} {end:>12.0f} (+{end - p.now:.0f} s)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1500, help="first N jobs of the trace")
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated")
    parser.add_argument("--enforce-walltime", action="store_true", help="kill at requested")
    parser.add_argument("--explain", action="store_true", help="show the first divergence")
    args = parser.parse_args(argv)

    from xce.sim.clusters import header_cluster

    trace = read_swf(args.trace, limit=args.jobs)
    jobs = trace.jobs
    hosts, slots = header_cluster(trace)
    total = hosts * slots
    wide = sum(1 for j in jobs if (j.tasks or 1) > total)
    print(
        f"{trace.source}: {len(jobs)} jobs, {hosts} hosts x {slots} slots, "
        f"{wide} wider than the machine, enforce walltime: {args.enforce_walltime}"
    )
    if slots != 1:
        print("note: the reference counts slots; xce places on hosts (equal for 1 slot/host)")
    header = (
        f"{'config':<10} {'xce wait':>10} {'ref wait':>10} {'same':>5} {'differ':>6} "
        f"{'xce sess':>8} {'ref sess':>8} {'raises':>7} {'mean +s':>7} {'xce s':>6} {'ref s':>6}"
    )
    print(header)
    print("-" * len(header))
    configs = args.configs.split(",")
    divergences: list[tuple[str, int, float | None, float | None]] = []
    for config in configs:
        t0 = time.perf_counter()
        ours, sessions = xce_starts(jobs, hosts, slots, config, args.enforce_walltime)
        t1 = time.perf_counter()
        predictor = make_predictor(config, jobs)
        ref = ReferenceEasy(jobs, total, predictor, enforce_walltime=args.enforce_walltime).run()
        t2 = time.perf_counter()
        differ = sum(1 for a, b in zip(ours, ref.starts, strict=True) if a != b)
        step = ref.raised_by / ref.raises if ref.raises else 0.0
        print(
            f"{config:<10} {mean_wait(jobs, ours):>10.1f} {mean_wait(jobs, ref.starts):>10.1f} "
            f"{'yes' if differ == 0 else 'no':>5} {differ:>6} {sessions:>8} {ref.sessions:>8} "
            f"{ref.raises:>7} {step:>7.0f} {t1 - t0:>6.1f} {t2 - t1:>6.1f}",
            flush=True,
        )
        first = first_divergence(jobs, ours, ref.starts)
        if first is not None:
            divergences.append((config, first, ours[first], ref.starts[first]))
    if not divergences:
        print("every job starts at the same time in both replays, in every config")
    for config, i, x, r in divergences:
        print(f"{config}: first divergence job {jobs[i].id} (xce start {x}, reference {r})")
        if args.explain:
            at = min(t for t in (x, r) if t is not None)
            explain(jobs, total, config, at, args.enforce_walltime)


if __name__ == "__main__":
    main()
