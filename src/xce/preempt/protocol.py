"""The preemption extension point: a victim-set iterator (the spec's
``xce_preempt_victim_iter_t``), and what the engine lets it ask.

A preemptor never sees hosts, resources or plans. The engine hands it the candidates
(running jobs the pending job may preempt) and a :class:`VictimProbe` that answers, for
any set of them, whether releasing the set lets the job be placed by the normal
allocator. The preemptor decides only which sets to offer, and in which order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from xce.preempt.victims import Victim

__all__ = ["Preemptor", "VictimProbe"]


class VictimProbe(Protocol):
    """Questions about the one pending job being preempted for (engine-provided)."""

    def sufficient(self, victims: Sequence[Victim]) -> bool:
        """Exact: with the whole footprint of ``victims`` released (slots, host
        resources, shared amounts, limit usage), the normal allocator places the job.

        Monotone: a superset of a sufficient set is sufficient. Costs one allocation
        attempt; call it as few times as the policy allows.
        """
        ...

    def may_suffice(self, victims: Sequence[Victim]) -> bool:
        """Cheap and necessary: False only when :meth:`sufficient` would be False (a
        bound on the tasks the released hosts can hold). True proves nothing."""
        ...


@runtime_checkable
class Preemptor(Protocol):
    """A victim-set iterator. Registered by ``name`` (entry-point group
    ``xce.preemptors``: an entry point loads a class or factory called with no
    arguments); a queue's preemption uses the session's preemptor.

    Contract of :meth:`victim_sets` (the engine calls it only for a job its queue lets
    preempt and that the normal allocator could not place, so the empty set is never
    sufficient):

    - every set yielded is a non-empty tuple of distinct members of ``candidates``
      (never a job twice; the engine already left out jobs of equal or higher priority
      and of queues the job may not preempt);
    - every set yielded is sufficient (``probe.sufficient``) and minimal: no victim can
      be dropped from it and leave it sufficient;
    - sets come best first, by the policy's own preference; the engine takes the first
      one whose allocation it can commit and closes the iterator (so work after a
      ``yield`` is done only if the engine asks for more);
    - it yields nothing when no set of the candidates is sufficient;
    - it is deterministic: the same candidates and probe answers give the same sets.

    The engine re-checks the first two points and skips a set that breaks them.
    """

    name: str

    def victim_sets(
        self, candidates: Sequence[Victim], probe: VictimProbe
    ) -> Iterator[tuple[Victim, ...]]:
        """Victim sets for one pending job, lazily, best first (see the class contract)."""
        ...
