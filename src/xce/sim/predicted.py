"""A replay's runtime predictor (issue 27): what it predicts of each job, and what the
sessions would have planned with its predictions.

With a predictor (``SimOptions.predictor``), every job is predicted when it is
submitted (:meth:`Predictions.submitted`; the predictor has learned from every job that
ended before) and the predictor learns each job's runtime when it ends. Then either:

- ``backfill_with="predicted"``: the core plans with the predictions (a job's planning
  estimate is its prediction, when that is below its requested time: Tsafrir, Etsion
  and Feitelson's EASY with system-generated predictions), so decisions and planned
  starts both change; or
- ``backfill_with="requested"`` (default): decisions are made with the requested times,
  as the scheduler does, and each job's *planned start* (``JobRecord.planned_start``,
  the ``prediction_error_s`` metric) is taken from a shadow core that sees the same
  events but plans with the predictions (:class:`ShadowPlans`): what a start-time
  predictor beside the scheduler would have said at that session.

``--predictor limit`` predicts every job at its limit, so either way it decides and
plans exactly as no predictor (a property says so).

A job that outlives its prediction has it raised, as Tsafrir et al. do
(:func:`xce.predict.raised`: by 1 min, 5 min, 15 min, ... up to its limit), with a
``TimeLimitChanged`` event to the core that plans with predictions, at the instant it
outlives it (a session follows, as after any event). Without the raise the planner's
rule for an estimate outlived (the job ends "now", :mod:`xce.cluster.estimates`) would
hold every reservation at "now" and stop backfilling altogether.
"""

from __future__ import annotations

import math
from dataclasses import replace

from xce.alloc import Dispatched, JobAllocation, Pending
from xce.cluster import ClusterState, PendingJob, Queue, estimate
from xce.core import (
    JobFinished,
    JobPreempted,
    JobStarted,
    JobSubmitted,
    SchedulerCore,
    TimeLimitChanged,
)
from xce.errors import InputError, InternalError
from xce.predict import Asked, FinishedJob, RuntimePredictor, default_predictors, raised
from xce.sim.model import SimJob

__all__ = ["BACKFILL_WITH", "Predictions", "ShadowPlans", "check_backfill_with", "shadow_state"]

BACKFILL_WITH = ("requested", "predicted")
"""What backfill plans with: the requested times (the scheduler's way) or predictions."""


class Predictions:
    """What the replay's predictor said of each job, and what it learned."""

    def __init__(self, predictor: str | RuntimePredictor, queues: dict[str, Queue]) -> None:
        self.predictor = (
            default_predictors().make(predictor) if isinstance(predictor, str) else predictor
        )
        self.queues = queues
        self.said: dict[str, float] = {}  # job -> its prediction at its (last) submission
        # running job -> (start, its prediction at start, the raised one now in force):
        # each raise steps from the first prediction (1 min, 5 min, 15 min, ... past it),
        # not from the last raise (which would always be 1 min past the time run)
        self.runs: dict[str, tuple[float, float, float]] = {}

    def submitted(self, job: PendingJob) -> PendingJob:
        """``job`` as the core plans it with its prediction: its requested time lowered
        to the prediction when that is finite and below its limit."""
        limit = estimate(job.requested_time, self.queues.get(job.queue))
        asked = Asked(job.id, job.user, limit, job.name, job.queue, job.max_tasks)
        said = self.said[job.id] = self.predictor.predict(asked)
        if math.isfinite(said) and said < limit:
            return replace(job, requested_time=said)
        return job

    def started(self, job: SimJob, start: float) -> float | None:
        """``job`` started at ``start``: when it outlives its prediction (None: never,
        the prediction is its limit)."""
        said = self.said.get(job.id)
        if said is None or not math.isfinite(said) or said >= self._limit(job):
            return None
        self.runs[job.id] = (start, said, said)
        return start + said

    def outlived(self, job: SimJob, now: float) -> tuple[float | None, float | None] | None:
        """``job`` (running since its last start) has run as long as predicted at
        ``now``: its raised prediction as a requested time (the job's own when raised to
        its limit) and when it outlives that one (None: never); None when ``now`` is not
        that run's moment (it ended, or was preempted and started again)."""
        run = self.runs.get(job.id)
        if run is None or not math.isclose(run[0] + run[2], now, rel_tol=0.0, abs_tol=1e-9):
            return None
        start, said, current = run
        limit = self._limit(job)
        # it is still running at its predicted end, so it has outlived it even when that
        # end is its start (a prediction of 0 s): never ask with elapsed 0, which
        # ``raised`` reads as a job that has not run (and would leave 0: for ever); and
        # it has run the prediction in force, though ``now - start`` may round below it
        # (1.0 + 0.4 - 1.0 is 0.3999...), which ``raised`` would read as not outlived
        ran = max(now - start, current, math.ulp(max(now - start, 1.0)))
        asked = Asked(job.id, job.user, limit, None, job.queue, job.tasks or 1, ran)
        new = raised(said, asked)
        if new >= limit:
            del self.runs[job.id]
            return job.requested_time, None
        if start + new <= now:  # a raise must move the prediction past the time run
            raise InternalError(f"job {job.id!r}: its prediction was raised to {new} s only")
        self.runs[job.id] = (start, said, new)
        return new, start + new

    def _limit(self, job: SimJob) -> float:
        return estimate(job.requested_time, self.queues.get(job.queue))

    def ended(self, job: SimJob, start: float, end: float) -> None:
        """``job`` ran from ``start`` to ``end``: the predictor learns it."""
        self.runs.pop(job.id, None)
        self.predictor.observe(
            FinishedJob(
                job.id,
                job.user,
                start,
                end,
                limit=job.requested_time,
                queue=job.queue,
                tasks=job.tasks,
                submit=job.submit,
            )
        )


def check_backfill_with(value: str, predictor: object | None) -> None:
    if value not in BACKFILL_WITH:
        raise InputError(f"backfill with: unknown {value!r} (known: {', '.join(BACKFILL_WITH)})")
    if value == "predicted" and predictor is None:
        raise InputError(
            "--backfill-with predicted needs a runtime predictor: give --predictor NAME"
        )


class ShadowPlans:
    """A second core fed the replay's events, whose pending jobs plan with their
    predictions: the planned starts a predictor beside the scheduler gives."""

    def __init__(self, core: SchedulerCore) -> None:
        self.core = core

    def submitted(self, job: PendingJob) -> None:
        self.core.apply(JobSubmitted(job))

    def started(self, job_id: str, allocation: JobAllocation, now: float) -> None:
        self.core.apply(JobStarted(job_id, allocation, now))

    def finished(self, job_id: str, now: float) -> None:
        self.core.apply(JobFinished(job_id, now))

    def preempted(self, job_id: str, now: float) -> None:
        self.core.apply(JobPreempted(job_id, now))

    def time_limit(self, job_id: str, requested: float | None, now: float) -> None:
        self.core.apply(TimeLimitChanged(job_id, requested, now))

    def starts(self, now: float, jobs: set[str]) -> dict[str, float | None]:
        """When a session now, planning with predictions, would start each of ``jobs``
        (None: it plans no start)."""
        out: dict[str, float | None] = {}
        for d in self.core.run_session(now=now).decisions:
            if d.job not in jobs:
                continue
            if isinstance(d, Dispatched):
                out[d.job] = now
            elif isinstance(d, Pending):
                out[d.job] = d.plan.start if d.plan is not None else None
        return out


def shadow_state(cluster: ClusterState) -> ClusterState:
    """The shadow core's starting state: the replay's cluster, no pending job."""
    return replace(cluster, jobs=())
