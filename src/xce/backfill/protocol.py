"""The extension point of backfill: :class:`BackfillPolicy` (docs/backfill.md)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["BackfillPolicy"]


@runtime_checkable
class BackfillPolicy(Protocol):
    """Which pending jobs of a queue hold a planned start, and so what may jump ahead.

    Backfill is orthogonal to the picker: the picker orders a queue's jobs; the policy
    says which of those that cannot start now are *planned* — placed at their earliest
    start in the session's profile (:class:`~xce.alloc.planner.Planner`), where they hold
    their resources so that no later job of the session may delay them. Every job that
    starts now must leave every planned job its placement (it may use what a planned job
    needs only if it ends, by its estimate, before that job starts).

    Contract:

    - ``name``: unique; what ``--backfill`` and a queue's ``backfill:`` name.
    - ``plans``: False when the policy never plans a job. Sessions then run exactly as
      without backfill (byte-identical), and ``plans_job`` is never called.
    - ``plans_job(considered)``: called, in the session's pick order, for each job of a
      queue under this policy that cannot start now for lack of resources (not one
      pending on a limit, never runnable, invalid or waiting for its own reservation);
      ``considered`` counts the jobs of that queue it was called for before, in this
      session. True: plan this job. Must depend on nothing else (sessions are
      deterministic).
    - ``replaces_queue_blocking``: True when the plan, not the picker, decides what may
      pass a job that waits: a strict picker's blocking (``QUEUE_BLOCKED``) is then not
      applied to the queue's jobs.
    - ``monotone_in_session``: True only if a job that pended pends again in a later
      session with nothing freed in between (what lets the simulator skip it). A policy
      that plans cannot promise it: plans move as time passes (a job past its estimate
      is assumed to end "now").
    - ``keeps_placements``: True when a job planned again in a later session, or
      starting at its planned time, tries the hosts of its last planned placement
      first: fresh plans then keep every earlier promise when estimates are exact (a
      placement chosen afresh can move a job onto hosts a later job was promised).
      False: every plan places afresh, preferring the hosts freed latest (what lets
      EASY equal its processor-count formulation).
    - ``planner`` (optional attribute): a factory ``planner(allocator, now)`` of the
      session's :class:`~xce.alloc.planner.Planner` (a subclass), for a policy that
      plans by rules of its own (``slurm``: Slurm's sched/backfill). Without it, the
      builtin planner. The queues of one session that plan must agree on it (else bad
      input); a session with such a planner does not repeat the last one's decisions.
    - ``plans_at_most`` (optional attribute): an int ``k`` promising that ``plans_job``
      is False for every ``considered >= k`` (EASY: 1), what lets a driver skip, once a
      queue has had its ``k``, a job that can neither start nor be planned; absent or
      None: no such bound (:func:`plans_at_most`).
    """

    name: str
    plans: bool
    replaces_queue_blocking: bool
    monotone_in_session: bool
    keeps_placements: bool

    def plans_job(self, considered: int) -> bool: ...


def plans_at_most(policy: BackfillPolicy) -> int | None:
    """The policy's ``plans_at_most`` when it promises one (a whole number, at least 0),
    else None (see :class:`BackfillPolicy`)."""
    bound = getattr(policy, "plans_at_most", None)
    if isinstance(bound, int) and not isinstance(bound, bool) and bound >= 0:
        return bound
    return None
