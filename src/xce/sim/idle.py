"""Idle sessions of an ``--interval`` replay, skipped (issue 26): an exact shortcut.

With an interval, the engine holds a session at every multiple of it at which jobs
pend (:func:`~xce.sim.engine.next_session_time` from one session to the next: the
*chain*). Most of them have nothing new to decide: no job was submitted, none ended or
was preempted, and the last session started nothing. Such a session is *idle*; it
decides exactly as the last one did, and changes nothing, so the replay neither runs it
nor visits its instant: the next session is the first multiple of the chain at or after
the next thing that can change a decision (the next event, or :func:`quiet_until`).
``--interval 1 --backfill easy`` over the example workload then costs about what the
replay at every event time does, however small the interval.

Why an idle session decides as the last one, at ``t0``, did (each point is checked):

- The state is the one the last session saw: nothing was submitted, ended or preempted
  since, and it started nothing. A gate that opens with time alone (a jobs file's begin
  time, an ``after:X+M`` dependency) opens at an event of its own, which makes the next
  session not idle; so does an advance reservation's window opening or closing. Between
  two bounds a reservation only keeps more from a job as time passes (a run from ``t1``
  overlaps every window one from ``t0`` did; a replay's job names no reservation), so it
  changes none of the points below.
- The session picks the jobs in the order the last one did. A queue's picker may order
  by the session's time (a :class:`~xce.core.pickers.ClockedPicker`: ``multifactor``'s
  age, which starts at a job's accrue or begin time and stops at ``PriorityMaxAge``, its
  truncation to a whole number, and its decayed usage; ``lsf-fairshare``'s): under one,
  two sessions with nothing between can order the queue differently, and a different
  order gives the reservation to another job, or reaches a job a blocked pick left
  untried. So under one the engine asks, at each multiple after the last session, the
  order a whole session would pick in there
  (:meth:`~xce.core.core.SchedulerCore.pick_order`, every pending job, none starting),
  and the first multiple whose order differs from the last session's ends the quiet
  (where the order is unknown without deciding, a cursor that ``needs_feedback``: no
  skip). With the same order the session tries the same jobs in the same turn on the
  same state, and the points below apply as to any picker. Where the last session
  planned nothing and every picker declares ``never_blocks``, the order does not matter:
  every job is tried, in whatever order, on the same books, and each pends again.
- A session that does not plan reads no time: pickers see the state, the allocator the
  books. It decides the same at any later time (:func:`quiet_until` is ``inf``).
- A session that plans (backfill) reads the time through its planner. At ``t1 > t0``
  the plan's profile from ``t1`` on is the last one's, as long as no instant at which
  that profile changes falls in ``(t0, t1]`` (a running job's estimated end, a planned
  start or end: :func:`quiet_until`): a running job past its estimate "ends now" at
  both times, which from ``t1`` on is the same. No job plans to start at ``t0`` itself
  (one did only on slots a job past its estimate still holds; the plan would move to
  ``t1``, and every plan behind it could move: no skip). No pending job has a select that
  can turn true as availability falls: a job's lowest availability over ``[t1, t1 + d)``
  is at most that over ``[t0, t0 + d)`` (nothing changes in between), so a job that could
  not start, or be planned, at ``t0`` cannot at ``t1``, and its later candidate instants
  and their views are the same: the same plans, holds and backfills, job by job. A
  policy that keeps placements tries each job's last planned hosts first: the skip
  waits until two sessions in a row with nothing between planned every job alike (its
  hint is then its plan), and no queue preempts then (a job started on a preemption's
  promise keeps its old hint, which a session may prune). A policy that brings its own
  planner (``BackfillPolicy.planner``) plans by rules this argument does not cover: its
  sessions are never idle.
- What a skipped session would not record: pend messages name times relative to the
  session (``in 30 min``), but a replay records only starts, and a job's planned start
  from the first session that decided it; the exact caches of the core and allocator
  (PlanMemory, the unsatisfiable cache, reused failures) change no decision either way.

Visiting only some of the chain's instants is exact while ``k * interval`` for
consecutive whole ``k`` is the chain (below ``2**49`` intervals, where each product is
more than two float steps above the one before): the first session at or after ``x`` is
:func:`chain_at`. Beyond that the engine steps the chain as ever.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from xce.alloc import Decision, Pending
from xce.cluster import ClusterState
from xce.cluster.estimates import estimate

__all__ = ["SAFE_RATIO", "PlanSignature", "chain_at", "plan_signature", "quiet_until"]

SAFE_RATIO = float(2**49)
"""Multiples of the interval below which the chain is every whole multiple in turn."""

PlanSignature = tuple[tuple[str, float, float, bytes], ...]
"""A planned session's plans: (job, start, end, hosts in claim order) per planned job."""


def quiet_until(t0: float, decisions: Sequence[Decision], state: ClusterState) -> float:
    """The first instant after ``t0`` at which time alone could change what a planned
    session at ``t0`` decided (the module docstring): the running jobs' estimated ends
    and the plans' starts and ends after ``t0``; ``-inf`` (never idle) when a plan
    starts at ``t0`` or before."""
    first = math.inf
    for d in decisions:
        plan = d.plan if isinstance(d, Pending) else None
        if plan is None:
            continue
        if plan.start <= t0:
            return -math.inf
        first = min(first, plan.start, plan.end)
    for run in state.running:
        span = estimate(run.requested_time, state.queues.get(run.queue))
        end = run.start_time + span
        if t0 < end < first:
            first = end
    return first


def plan_signature(decisions: Iterable[Decision]) -> PlanSignature:
    """Every planned job's plan, to tell whether two sessions planned alike."""
    out: list[tuple[str, float, float, bytes]] = []
    for d in decisions:
        plan = d.plan if isinstance(d, Pending) else None
        if plan is not None:
            hosts = np.ascontiguousarray(plan.allocation.columns().hosts, dtype=np.int64)
            out.append((d.job, plan.start, plan.end, hosts.tobytes()))
    return tuple(out)


def chain_at(after: float, x: float, interval: float, *, strictly: bool) -> float | None:
    """The chain's first session time at or after ``x`` (after it, if ``strictly``),
    the chain having reached ``after`` (itself a session time ``k * interval``); None
    where the chain is not every whole multiple (at or past :data:`SAFE_RATIO`)."""
    if not (x / interval < SAFE_RATIO and after / interval < SAFE_RATIO):
        return None
    lowest = round(after / interval) + 1
    k = max(lowest, math.floor(x / interval) - 1)

    def reached(m: int) -> bool:
        t = m * interval
        return t > x if strictly else t >= x

    while not reached(k):
        k += 1
    while k > lowest and reached(k - 1):
        k -= 1
    return float(k * interval)
