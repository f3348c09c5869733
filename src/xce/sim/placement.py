"""The allocator's placement of a plain job (slots alone) on an array of free slots, in
array order (spec Req 2-4): what the plain replay (:mod:`xce.sim.plain`) does on its free
slots and its planned sessions (:mod:`xce.sim.planned`) on a view of them.

- a job of ``n`` tasks takes the first plan of ``k = 1, 2, ...`` balanced buckets that
  fits: ``r = n mod k`` buckets of ``ceil(n/k)`` and ``k - r`` of ``floor(n/k)``, largest
  first, each on a fresh host iterator, so the large buckets take the first ``r`` hosts
  with ``ceil(n/k)`` free and the small ones the first ``k - r`` others with
  ``floor(n/k)`` free. Plan ``k`` fits iff ``r`` hosts have ``ceil(n/k)`` free and ``k``
  have ``floor(n/k)``: one count of hosts by free slots answers it for every ``k``;
- failing every balanced plan, the fill plan: each host in order takes what it can of
  the rest (it fits iff the hosts have ``n`` slots free in all).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from xce.alloc.outcome import same_slots

__all__ = ["at_least", "balanced", "fill", "place"]

IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
Placement = tuple[IndexArray, IntArray]  # hosts (array positions) in claim order, slots


def place(avail: IntArray, n: int) -> Placement | None:
    """Where ``n`` tasks go on hosts with ``avail`` free slots, taken in array order
    (None: fewer than ``n`` in all; a host below 0 counts as none)."""
    room = np.maximum(avail, 0)
    if int(room.sum()) < n:
        return None
    top = int(room.max())
    if top <= 1 and n > 0:  # one slot a host at most: every plan is n buckets of 1
        return np.flatnonzero(room)[:n], same_slots(1, n)
    one = np.flatnonzero(room >= n)
    if len(one):
        return one[:1], same_slots(n, 1)
    found = balanced(room, n, at_least(room, top))
    return found if found is not None else fill(room, n)


def at_least(free: IntArray, top: int) -> Callable[[IntArray], IntArray]:
    """How many hosts have at least s slots free, for each s of an array (``top``: at
    least the most any host has): from a count of hosts by free slots when ``top`` is
    small beside the host count, else by searching the sorted free counts (no array as
    long as ``top``)."""
    if top <= 4 * len(free) + 64:
        ge = np.bincount(free, minlength=top + 2)[::-1].cumsum()[::-1]  # ge[s]: >= s

        def counted(s: IntArray) -> IntArray:
            out: IntArray = ge[np.minimum(s, top + 1)]
            return out

        return counted
    ordered = np.sort(free)

    def searched(s: IntArray) -> IntArray:
        out: IntArray = len(ordered) - np.searchsorted(ordered, s, side="left")
        return out

    return searched


def balanced(free: IntArray, n: int, counts: Callable[[IntArray], IntArray]) -> Placement | None:
    """The first balanced plan of ``k >= 2`` buckets that fits on ``free`` (``counts``:
    its :func:`at_least`), placed; None when none does."""
    last = min(n, int(counts(np.ones(1, dtype=np.int64))[0]))
    if last < 2:
        return None
    ks = np.arange(2, last + 1, dtype=np.int64)
    q = n // ks
    r = n - q * ks
    fits = (counts(q + 1) >= r) & (counts(q) >= ks)
    i = int(fits.argmax())
    if not fits[i]:
        return None
    k, q1, r1 = int(ks[i]), int(q[i]), int(r[i])
    if r1 == 0:
        return np.flatnonzero(free >= q1)[:k], same_slots(q1, k)
    big = np.flatnonzero(free > q1)[:r1]
    rest = free >= q1
    rest[big] = False
    small = np.flatnonzero(rest)[: k - r1]
    slots = np.concatenate(
        (np.full(r1, q1 + 1, dtype=np.int64), np.full(k - r1, q1, dtype=np.int64))
    )
    return np.concatenate((big, small)), slots


def fill(free: IntArray, n: int) -> Placement:
    """The fill plan on ``free`` (at least ``n`` slots in all): hosts in order, each
    taking what it can of the rest."""
    hosts = np.flatnonzero(free > 0)
    taken = free[hosts]
    upto = np.cumsum(taken)
    last = int(np.searchsorted(upto, n))  # the first host reaching n
    slots = taken[: last + 1].astype(np.int64)  # a copy
    slots[-1] -= int(upto[last]) - n
    return hosts[: last + 1], slots
