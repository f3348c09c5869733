"""The default preemptor, ``lowest_priority_first``.

Victims are ranked lowest queue priority first, then youngest first (latest start),
then by id (:func:`xce.preempt.victims.rank`). Sets are offered in two phases:

1. **One victim.** Candidates are tried alone in rank order, each only if the cheap
   bound allows it. For single victims rank order is the preference order, so the
   first sufficient one is the best set there is (fewest victims first).
2. **Several victims**, as Slurm does it: the shortest prefix of the candidates that
   is sufficient (found by bisection: sufficiency is monotone), then every victim the
   rest can do without is dropped, most valuable first (highest priority, oldest), so
   the set is minimal. This is done for two orders, rank order and largest footprint
   first (fewer, bigger victims), and the sets are offered by the documented
   preference (:func:`xce.preempt.victims.preference`).
3. **Fewer victims**, when the greedy sets hold three or more: an exact search over the
   smaller sets, within a budget (:mod:`xce.preempt.fewest`). A set it finds is the
   fewest possible and is offered first, before the greedy sets.

Phase 1 is exact. Phase 2 gives minimal sets, not always the fewest victims (finding
the fewest is a set-cover problem, and a site with thousands of running jobs cannot
wait for it); phase 3 finds the fewest wherever its budget allows, so a greedy set of
two is always the fewest, and one of three or more is whenever the search ran to the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from xce.preempt.fewest import fewer_victims
from xce.preempt.protocol import VictimProbe
from xce.preempt.victims import Victim, preference, rank

__all__ = ["LowestPriorityFirst"]


class LowestPriorityFirst:
    """The ``lowest_priority_first`` preemptor (see the module docstring).

    ``fewest=False`` leaves phase 3 out (the greedy sets only, as before issue 26: for
    measuring what the search costs)."""

    name = "lowest_priority_first"

    def __init__(self, *, fewest: bool = True) -> None:
        self.fewest = fewest

    def victim_sets(
        self, candidates: Sequence[Victim], probe: VictimProbe
    ) -> Iterator[tuple[Victim, ...]]:
        ordered = tuple(sorted(candidates, key=rank))
        if not ordered or not probe.may_suffice(ordered) or not probe.sufficient(ordered):
            return  # not even every candidate together frees enough
        offered: set[tuple[str, ...]] = set()
        for victim in ordered:
            alone = (victim,)
            if probe.may_suffice(alone) and probe.sufficient(alone):
                offered.add((victim.id,))
                yield alone
        if offered:
            return  # a set of one is preferred to every larger set: offer no larger one
        by_size = tuple(sorted(ordered, key=lambda v: (-v.slots, rank(v))))
        found: dict[tuple[str, ...], tuple[Victim, ...]] = {}
        for order in (ordered, by_size):
            chosen = _minimal(_shortest_prefix(order, probe), probe)
            found.setdefault(tuple(sorted(v.id for v in chosen)), chosen)
        greedy = sorted(found.values(), key=preference)
        if self.fewest and len(greedy[0]) > 2:
            fewest = fewer_victims(ordered, probe, len(greedy[0]))
            if fewest is not None:
                yield fewest
        yield from greedy


def _shortest_prefix(order: tuple[Victim, ...], probe: VictimProbe) -> tuple[Victim, ...]:
    """The shortest sufficient prefix of ``order`` (the whole of it is sufficient)."""
    lo, hi = 1, len(order)  # invariant: order[:hi] is sufficient
    while lo < hi:
        mid = (lo + hi) // 2
        head = order[:mid]
        if probe.may_suffice(head) and probe.sufficient(head):
            hi = mid
        else:
            lo = mid + 1
    return order[:hi]


def _minimal(chosen: tuple[Victim, ...], probe: VictimProbe) -> tuple[Victim, ...]:
    """Drop every victim the others can do without, most valuable first; the result is
    minimal because sufficiency is monotone (a victim needed by a larger set is needed
    by every subset of it). Returned in rank order."""
    kept = list(chosen)
    for victim in sorted(chosen, key=rank, reverse=True):
        if len(kept) == 1:
            break
        rest = [v for v in kept if v is not victim]
        if probe.may_suffice(rest) and probe.sufficient(rest):
            kept = rest
    return tuple(sorted(kept, key=rank))
