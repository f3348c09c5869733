"""The whole-node time table of Slurm's sched/backfill (its ``node_space`` map), for the
``slurm`` backfill policy (docs/backfill.md, "slurm").

Slurm 22.05's backfill plans on a table of time slots, each holding the set of nodes no
planned job has reserved over it. A planned job takes its nodes out, whole, over
``[floor(start/R)*R, floor(end/R)*R)``, whatever share of each node it uses; running
jobs are not in the table (the will-run test sees them, :mod:`xce.backfill.slurm_select`).
The rules here are Slurm's, quirks included, because xce's plans must come out where
Slurm's do (sched/backfill/backfill.c at slurm-22-05-8-1):

- the candidate nodes of a try AND every slot that ends after the try's start and
  begins *at or before* its end (inclusive: a job ending as a reservation begins still
  collides with it), and on the way find ``later_start``, the end of the first slot
  whose successor adds a usable node (backfill.c:2390-2432);
- a reservation splits the table at its ends, takes its nodes out of every slot in
  between, then merges at most one pair of adjacent slots with equal node sets, searched
  from the slot before its start to the slot after its end (``_add_reservation``,
  backfill.c:3272-3381).

Node sets are Python ints used as bit sets over host indices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["NodeSpace", "Slot", "count_nodes"]


@dataclass(slots=True)
class Slot:
    """``[begin, end)`` and the nodes no planned job holds over it (a bit set)."""

    begin: float
    end: float
    free: int


def count_nodes(nodes: int) -> int:
    """How many nodes a bit set holds."""
    return nodes.bit_count()


class NodeSpace:
    """One backfill cycle's table, from ``floor(now/R)*R`` to ``floor((now+window)/R)*R``
    with every node of ``nodes`` free (Slurm's initial table, backfill.c:1810-1817)."""

    def __init__(self, now: float, resolution: float, window: float, nodes: int) -> None:
        if not resolution > 0 or not math.isfinite(resolution):
            raise ValueError(f"a backfill resolution must be positive, not {resolution}")
        self.resolution = resolution
        begin = math.floor(now / resolution) * resolution
        end = math.floor((now + window) / resolution) * resolution
        self.slots = [Slot(begin, end, nodes)]

    @property
    def end(self) -> float:
        """The end of the table (Slurm's backfill window, rounded down)."""
        return self.slots[-1].end

    def rounded(self, t: float) -> float:
        """``t`` rounded down to the resolution (how a reservation's ends are made)."""
        if not math.isfinite(t):
            return t
        return math.floor(t / self.resolution) * self.resolution

    def candidates(self, usable: int, start: float, end: float) -> tuple[int, float]:
        """The nodes of ``usable`` free over every slot that ends after ``start`` and
        begins at or before ``end``; and ``later_start`` (0: none): the end of the first
        slot ending after ``start`` whose successor has a node of ``usable`` that this
        slot, with what is left so far, has not. The successor test runs before the
        overlap test, so it also looks at the first slot past ``end``."""
        avail, later = usable, 0.0
        slots = self.slots
        for k, slot in enumerate(slots):
            successor = slots[k + 1].free if k + 1 < len(slots) else 0
            if slot.end > start and not later and usable & successor & ~(avail & slot.free):
                later = slot.end
            if slot.end <= start:
                continue
            if slot.begin <= end:
                avail &= slot.free
            else:
                break
        return avail, later

    def overlaps(self, nodes: int, start: float, end: float) -> bool:
        """Whether a slot over ``(start, end)`` lacks one of ``nodes`` (Slurm's
        ``_test_resv_overlap``: the chosen nodes collide with a planned job's)."""
        return any(s.end > start and s.begin < end and nodes & ~s.free for s in self.slots)

    def reserve(self, start: float, end: float, nodes: int) -> None:
        """Take ``nodes`` out over ``[start, end)`` (ends already rounded), at least one
        resolution long, then merge one pair of equal neighbours (see the module)."""
        slots = self.slots
        start = max(start, slots[0].begin)
        end = max(end, start + self.resolution)
        before = slots[0]  # the slot before the start (the first, if none)
        after: Slot | None = None  # the slot after the end (None: to the table's end)
        j = -1
        for k, slot in enumerate(slots):
            if slot.end > start:
                slots.insert(k + 1, Slot(start, slot.end, slot.free))
                slot.end = start  # may leave [start, start): Slurm keeps it too
                j = k
                break
            if slot.end == start:
                j = k
                break
            before = slot
        if j >= 0:
            k = j + 1
            while k < len(slots):
                slot = slots[k]
                if end < slot.end:
                    slots.insert(k + 1, Slot(end, slot.end, slot.free))
                    slot.end = end
                slot.free &= ~nodes
                if end == slot.end:
                    after = slots[k + 1] if k + 1 < len(slots) else None
                    break
                k += 1
        self._merge_one(before, after)

    def _merge_one(self, first: Slot, stop: Slot | None) -> None:
        """Merge the first pair of adjacent slots with equal node sets, from ``first``
        on, up to the pair ending at ``stop`` (Slurm merges at most one)."""
        slots = self.slots
        i = next(k for k, s in enumerate(slots) if s is first)
        while slots[i] is not stop and i + 1 < len(slots):
            here, there = slots[i], slots[i + 1]
            if here.free != there.free:
                i += 1
                continue
            here.end = there.end
            del slots[i + 1]
            return

    def table(self) -> list[tuple[float, float, int]]:
        """The slots as ``(begin, end, free)`` in time order (for tests and traces)."""
        return [(s.begin, s.end, s.free) for s in self.slots]
