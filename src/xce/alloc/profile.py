"""Availability over future time: the profile backfill plans against (issue 12; design
§3a, the ``PLANNED(T, d)`` view).

A :class:`Profile` starts from what every host has available *now* (the session's
books, in resolution units) and records changes at future instants: a running job's
estimated end gives its holdings back (:meth:`Profile.release`), a planned job takes
its allocation over ``[start, end)`` (:meth:`Profile.hold`). To plan a job at time T for
a duration d, the allocator runs against the minimum of the profile over ``[T, T + d)``
(:meth:`Profile.window`), so the plan and host iterators stay unaware of time.

The changes are kept as an event table (time, host, amount) per resource and compiled,
when a query needs it, into arrays sorted by time. A query adds the events up to T to
the availability now (one ``bincount``), then takes, per host, the lowest running sum of
the events strictly inside the window (a segmented cumulative sum), so it costs
``O(events + hosts)`` in numpy, whatever the number of instants. Every amount is a whole
number of units: sums are exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from xce.errors import InternalError

__all__ = ["Holding", "Profile"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
Holding = tuple[int, Mapping[str, float]]
"""(host index, amounts in units per resource)."""


class _Events:
    """One resource's changes: chunks of (time, hosts, deltas), compiled to one
    time-sorted table on demand."""

    __slots__ = ("_compiled", "chunks", "count")

    def __init__(self) -> None:
        self.chunks: list[tuple[float, IndexArray, FloatArray]] = []
        self.count = 0
        self._compiled: tuple[FloatArray, IndexArray, FloatArray] | None = None

    def add(self, time: float, hosts: IndexArray, deltas: FloatArray) -> None:
        self.chunks.append((time, hosts, deltas))
        self.count += len(hosts)
        self._compiled = None

    def arrays(self) -> tuple[FloatArray, IndexArray, FloatArray]:
        if self._compiled is None:
            chunks = self.chunks
            if chunks:
                times = np.repeat(
                    np.fromiter((c[0] for c in chunks), dtype=np.float64, count=len(chunks)),
                    [len(c[1]) for c in chunks],
                )
                hosts = np.concatenate([c[1] for c in chunks]).astype(np.intp, copy=False)
                deltas = np.concatenate([c[2] for c in chunks]).astype(np.float64, copy=False)
            else:
                times, hosts, deltas = _NO_TIMES, _NO_HOSTS, _NO_TIMES
            order = np.argsort(times, kind="stable")
            self._compiled = (times[order], hosts[order], deltas[order])
        return self._compiled


_NO_TIMES = np.zeros(0, dtype=np.float64)
_NO_HOSTS = np.zeros(0, dtype=np.intp)


class Profile:
    """Per host and resource, availability from ``now`` on (see the module docstring).

    ``available`` maps each resource to its per-host availability now, in units; the
    arrays are copied. Changes before ``now`` are refused; a change at ``now`` counts
    from ``now`` on.
    """

    def __init__(self, now: float, available: Mapping[str, FloatArray]) -> None:
        if not math.isfinite(now):
            raise InternalError(f"a profile starts at a finite time, not {now}")
        self.now = now
        self._now = {name: np.array(a, dtype=np.float64) for name, a in available.items()}
        self._n = len(next(iter(self._now.values()))) if self._now else 0
        self._events = {name: _Events() for name in self._now}

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(self._now)

    def release(self, at: float, holdings: Iterable[Holding]) -> None:
        """From ``at`` on, ``holdings`` are available again (a running job's end).
        An end at or before ``now`` (a job past its estimate) counts from ``now``."""
        self.release_columns(max(at, self.now), *_columns(holdings))

    def hold(self, start: float, end: float, holdings: Iterable[Holding]) -> None:
        """Over ``[start, end)``, ``holdings`` are taken (a planned job). An infinite end
        holds for ever."""
        self.hold_columns(start, end, *_columns(holdings))

    def release_columns(
        self, at: float, hosts: IndexArray, amounts: Mapping[str, FloatArray]
    ) -> None:
        """:meth:`release` of claims given as columns: ``hosts[k]`` gives back
        ``amounts[name][k]`` units of each resource."""
        self._change(max(at, self.now), hosts, amounts, 1.0)

    def hold_columns(
        self, start: float, end: float, hosts: IndexArray, amounts: Mapping[str, FloatArray]
    ) -> None:
        """:meth:`hold` of claims given as columns (see :meth:`release_columns`)."""
        if not start < end:
            raise InternalError(f"a hold needs start < end, got [{start}, {end})")
        self._change(max(start, self.now), hosts, amounts, -1.0)
        if math.isfinite(end):
            self._change(end, hosts, amounts, 1.0)

    def _change(
        self, at: float, hosts: IndexArray, amounts: Mapping[str, FloatArray], sign: float
    ) -> None:
        if not at >= self.now:  # also NaN
            raise InternalError(f"a change at {at} is before the profile's start {self.now}")
        if math.isinf(at) or not len(hosts):
            return  # never happens
        events = self._events
        for name, units in amounts.items():
            if name not in events:
                raise InternalError(f"the profile has no resource {name!r}")
            units = np.asarray(units, dtype=np.float64)
            some = units != 0
            if some.all():
                events[name].add(at, hosts, units if sign > 0 else -units)
            elif some.any():
                events[name].add(at, hosts[some], sign * units[some])

    def changes(self) -> int:
        """How many (host, resource) changes are recorded."""
        return sum(ev.count for ev in self._events.values())

    def times(self) -> FloatArray:
        """``now`` and every later instant at which some availability changes, sorted:
        the candidate start times of a plan."""
        found = [np.asarray([self.now])]
        found += [ev.arrays()[0] for ev in self._events.values() if ev.count]
        return np.unique(np.concatenate(found))

    def events(self, name: str) -> tuple[FloatArray, IndexArray, FloatArray]:
        """Resource ``name``'s changes as (time, host, delta) columns sorted by time
        (read-only use)."""
        return self._events[name].arrays()

    def at(self, time: float) -> dict[str, FloatArray]:
        """Availability at ``time`` (every change at or before it applied)."""
        return {name: self._at(name, time) for name in self._now}

    def window(self, start: float, end: float) -> dict[str, FloatArray]:
        """Per resource, every host's lowest availability over ``[start, end)``: what a
        job planned to start at ``start`` and run until ``end`` can count on."""
        if not self.now <= start < end:
            raise InternalError(f"a window needs now <= start < end, got [{start}, {end})")
        out = {}
        for name in self._now:
            base = self._at(name, start)
            dip = self._dip(name, start, end)
            out[name] = base + dip if dip is not None else base
        return out

    def _at(self, name: str, time: float) -> FloatArray:
        times, hosts, deltas = self._events[name].arrays()
        k = int(np.searchsorted(times, time, side="right"))
        base = self._now[name].copy()
        if k:
            base += np.bincount(hosts[:k], weights=deltas[:k], minlength=self._n)
        return base

    def _dip(self, name: str, start: float, end: float) -> FloatArray | None:
        """Per host, min(0, lowest running sum of the changes strictly inside the window,
        the changes of one instant taken together)."""
        times, hosts, deltas = self._events[name].arrays()
        lo = int(np.searchsorted(times, start, side="right"))
        hi = int(np.searchsorted(times, end, side="left"))
        if lo >= hi:
            return None
        t, h, d = times[lo:hi], hosts[lo:hi], deltas[lo:hi]
        order = np.lexsort((t, h))  # by host, then time
        t, h, d = t[order], h[order], d[order]
        # one change per (host, instant): what happens at one instant happens at once
        first = np.ones(len(t), dtype=np.bool_)
        first[1:] = (h[1:] != h[:-1]) | (t[1:] != t[:-1])
        starts = np.flatnonzero(first)
        d, h = np.add.reduceat(d, starts), h[starts]
        # running sum within each host, and its lowest point
        running = np.cumsum(d)
        group = np.ones(len(h), dtype=np.bool_)
        group[1:] = h[1:] != h[:-1]
        heads = np.flatnonzero(group)
        before = np.concatenate(([0.0], running))[heads]  # the sum before each host's first
        running -= np.repeat(before, np.diff(np.append(heads, len(h))))
        lowest = np.minimum.reduceat(running, heads)
        dip = np.zeros(self._n)
        dip[h[heads]] = np.minimum(lowest, 0.0)
        return dip


def _columns(holdings: Iterable[Holding]) -> tuple[IndexArray, dict[str, FloatArray]]:
    """Holdings as columns: host per claim, and per resource the units per claim."""
    items = list(holdings)
    hosts = np.fromiter((h for h, _ in items), dtype=np.intp, count=len(items))
    names = sorted({n for _, amounts in items for n in amounts})
    return hosts, {
        n: np.fromiter((a.get(n, 0.0) for _, a in items), dtype=np.float64, count=len(items))
        for n in names
    }
