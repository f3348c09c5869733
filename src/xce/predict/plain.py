"""The forward replay of a plain snapshot on the simulator's plain replay (issue 27).

A snapshot whose pending jobs ask for slots alone and whose running work holds slots
alone is, forward from ``now``, a simulation: every pending job submitted at ``now`` in
the order the core picks them (submit time, then arrival), running what the predictor
gives it; the running work ending at its start plus its prediction. The simulator
replays such a workload on free-slot arrays (:mod:`xce.sim.plain`, and
:mod:`xce.sim.planned` for the sessions that plan), exactly as the core's sessions
decide it. :func:`plain_forward` runs the replay that way when it provably is the one
:class:`xce.predict.forward` would run session by session, and says None otherwise:

- no preemption (no preemptor, no queue that preempts), no advance reservation, every
  queue's picker ``monotone_in_session`` (its order is then submit time and arrival,
  which the simulation keeps; the jobs' submit times are not read otherwise);
- every pending job plain and ungated (no hold, begin time, dependency, array, further
  queue or reservation: the simulation's job, turned back into the core's, is the
  snapshot's job but for the fields only an order of its own reads: priority, QOS,
  nice, node count, accrue time, and what the scheduler said);
- every running piece of work ends after ``now`` (a prediction it has outlived ends it
  *at* ``now``, after the first session: the simulation would end it before);
- the simulation then takes its plain replay (:func:`xce.sim.plain.plain_replay`);
- every pending job starts: the simulation reports a job no state of its ok hosts
  could run at its submission and never queues it, but the core may hold a queue
  behind it (under strict, a job wider than the ok hosts but not than the hosts
  configured is a head) or offer it its queue's one plan (EASY's next job then gets
  none).

Every pending job's runtime is asked of the predictor before the replay, in the
snapshot's order, after the running work's (the session-by-session replay asks in that
order too, so a sampled run draws alike on both). ``sessions`` and ``ends`` count what
that replay counts (it stops after the session of the last start); ``first`` is None:
no session of the core ran.

tests/test_predict_plain.py replays random plain snapshots both ways.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from xce.cluster import SLOTS, ClusterState, HostStatus, PendingJob
from xce.core.pickers import picker_traits
from xce.errors import InternalError

if TYPE_CHECKING:
    from xce.predict.forward import ForwardRun, Policy
    from xce.sim.model import SimJob

__all__ = ["PlainSnapshot", "plain_forward", "plain_snapshot"]


@dataclass(frozen=True, slots=True)
class PlainSnapshot:
    """What every forward replay of one plain snapshot shares, whatever its runtimes
    (made once per forecast by :func:`plain_snapshot`): the pending jobs in the order
    the simulation submits them, each checked to come back from the simulation as the
    core's job."""

    state: ClusterState
    now: float
    order: tuple[PendingJob, ...]


def plain_snapshot(state: ClusterState, policy: Policy, now: float) -> PlainSnapshot | None:
    """The snapshot's replay on the plain replay as far as runtimes do not decide it
    (None: it is not plain; see the module docstring)."""
    if not _eligible(state, policy, now):
        return None
    ok = state.hosts.status == HostStatus.OK
    if max(j.max_tasks for j in state.jobs) > np.nansum(state.hosts.capacity[SLOTS][ok]):
        return None  # a job that never starts (below)
    order = tuple(sorted(state.jobs, key=lambda j: (j.submit_time, j.order)))
    if not all(_plain(j, now) for j in order):
        return None
    return PlainSnapshot(state, now, order)


def plain_forward(
    state: ClusterState,
    lengths: Mapping[str, float],
    totals: Mapping[str, float],
    policy: Policy,
    now: float,
    snapshot: PlainSnapshot | None = None,
) -> ForwardRun | None:
    """The forward replay of ``state`` from ``now`` on the plain replay, each pending job
    running ``lengths[id]`` and each running job ``totals[id]`` in all (see the module
    docstring); None when that is not provably the session-by-session replay.
    ``snapshot``: :func:`plain_snapshot` of the same state, policy and ``now``, made
    once for many replays (None: made here)."""
    from xce.predict.forward import ForwardRun
    from xce.sim.engine import SimOptions, Simulation

    if snapshot is None:
        snapshot = plain_snapshot(state, policy, now)
    elif snapshot.state is not state or snapshot.now != now:
        raise InternalError("a plain snapshot replayed with another state or time")
    if snapshot is None:
        return None
    if any(not r.start_time + totals[r.id] > now for r in state.running):
        return None  # ended at now by an outlived prediction: after the first session
    order = snapshot.order
    if not all(0 <= lengths[j.id] < math.inf for j in order):
        return None
    running = tuple(replace(r, runtime=totals[r.id]) for r in state.running)
    jobs = [_sim_job(j, now, lengths[j.id]) for j in order]
    options = SimOptions(picker=policy.picker, backfill=policy.backfill)
    sim = Simulation(
        replace(state, running=running, jobs=()), jobs, options, pickers=policy.pickers()
    )
    for queue in {j.queue for j in state.jobs}:
        picker = sim.picker_registry.get(sim.core.picker_name(queue))
        if not picker_traits(picker).monotone_in_session:
            return None
    done = sim.run_plain()
    if done is None:
        return None
    replay, result = done
    table = result.records
    starts: dict[str, float | None] = dict.fromkeys(j.id for j in state.jobs)
    for k, job in enumerate(order):
        start = float(table.start[k])  # type: ignore[attr-defined]
        starts[job.id] = None if math.isnan(start) else start
    if any(start is None for start in starts.values()):
        return None  # reported at its submission by the simulation: see the docstring
    # the other replay stops after the session that starts the last job
    out = ForwardRun(now, starts)
    out.sessions, out.ends = result.stats.sessions, replay.ends_by_last_session
    return out


def _eligible(state: ClusterState, policy: Policy, now: float) -> bool:
    if not (policy.plain and state.jobs) or policy.preemptor is not None:
        return False
    if state.reservations or any(q.preempts for q in state.queues.values()):
        return False
    return all(
        not j.gated and j.entry_of is None and j.array_job is None and j.submit_time <= now
        for j in state.jobs
    )


def _plain(job: PendingJob, now: float) -> bool:
    """Whether ``job``, as the simulation's job submitted at ``now``, comes back as the
    core's ``job`` (but for what no picker of the replay reads)."""
    from xce.sim.model import pending_job

    if not (job.tasks_given and job.min_tasks == job.max_tasks):
        return False
    sim = _sim_job(job, now, 0.0)
    back = replace(pending_job(sim, job.order), submit_time=job.submit_time, runtime=job.runtime)
    return _read(back) == _read(job)


def _sim_job(job: PendingJob, now: float, runtime: float) -> SimJob:
    """``job`` as the simulation's, submitted at ``now``, running ``runtime``."""
    from xce.sim.model import SimJob

    return SimJob(
        job.id,
        now,
        runtime,
        job.max_tasks,
        user=job.user,
        queue=job.queue,
        project=job.project,
        resreq=job.resreq,
        requested_time=job.requested_time,
        name=job.name,
    )


def _read(job: PendingJob) -> PendingJob:
    """``job`` without what only a picker with an order of its own reads (or no one)."""
    return replace(
        job,
        reason=None,
        priority=None,
        qos=None,
        nice=0,
        nodes=None,
        accrue_time=None,
        scheduler_start=None,
    )
