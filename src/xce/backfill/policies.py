"""The builtin backfill policies: ``none``, ``easy`` and ``conservative``.

How they map to other schedulers (docs/backfill.md):

- ``none`` with the ``fcfs`` picker: any job that fits starts (LSF's FCFS queue policy
  without slot reservation); with ``strict``: the literature's FCFS and Slurm's
  ``sched/builtin`` (the queue stops at the first job that cannot start).
- ``easy``: EASY backfill (Lifka 1995; Mu'alem & Feitelson 2001), LSF's slot
  reservation with backfill: only the first job that cannot start gets a reservation.
- ``conservative``: every waiting job gets a reservation, made afresh every session, as
  Slurm's ``sched/backfill`` plans every job it tests.
"""

from __future__ import annotations

__all__ = ["ConservativeBackfill", "EasyBackfill", "NoBackfill"]


class NoBackfill:
    """Today's behaviour: no job is planned; the picker alone decides."""

    name = "none"
    plans = False
    replaces_queue_blocking = False
    monotone_in_session = True
    keeps_placements = False
    plans_at_most = 0

    def plans_job(self, considered: int) -> bool:
        return False


class EasyBackfill:
    """The first job of the queue that cannot start gets a reservation at its earliest
    start (the shadow time); a later job starts now if it leaves it that placement."""

    name = "easy"
    plans = True
    replaces_queue_blocking = True
    monotone_in_session = False
    keeps_placements = False  # its one promise is a start time, kept without
    plans_at_most = 1

    def plans_job(self, considered: int) -> bool:
        return considered == 0


class ConservativeBackfill:
    """Every job of the queue that cannot start is planned at its earliest start, in
    the picker's order; a later job never delays an earlier one's planned start."""

    name = "conservative"
    plans = True
    replaces_queue_blocking = True
    monotone_in_session = False
    keeps_placements = True  # every job's planned start is a promise

    def plans_job(self, considered: int) -> bool:
        return True
