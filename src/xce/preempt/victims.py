"""What a preemptor chooses from and what it yields: victims and victim sets.

A victim is a running job another job may preempt. Its *priority* is its queue's
priority (the same number the pickers order queues by). Victim sets are compared by the
documented preference (docs/preemption.md): fewest victims; then the lowest highest
victim priority; then the lowest sum of priorities; then the youngest (the set whose
oldest victim started latest: the least work lost); then the victims' ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Victim", "preference", "rank"]


@dataclass(frozen=True, slots=True)
class Victim:
    """A running job that may be preempted, as a preemptor sees it.

    ``hosts`` are the indices (host-table order) of the hosts it holds; ``slots`` the
    tasks it runs over all of them.
    """

    id: str
    queue: str
    priority: int
    start_time: float
    slots: int
    hosts: tuple[int, ...]


def rank(victim: Victim) -> tuple[int, float, str]:
    """A victim's place in "lowest priority first": lowest priority, then the youngest
    (latest start), then id."""
    return (victim.priority, -victim.start_time, victim.id)


def preference(victims: Iterable[Victim]) -> tuple[int, int, int, float, tuple[str, ...]]:
    """The sort key of a victim set: smaller is preferred (see the module docstring)."""
    vs = list(victims)
    if not vs:
        return (0, 0, 0, 0.0, ())
    priorities = [v.priority for v in vs]
    return (
        len(vs),
        max(priorities),
        sum(priorities),
        -min(v.start_time for v in vs),
        tuple(sorted(v.id for v in vs)),
    )
