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
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from xce.errors import InternalError

__all__ = ["Holding", "Profile"]

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
Holding = tuple[int, Mapping[str, float]]
"""(host index, amounts in units per resource)."""


class _Events:
    """One resource's changes: a time-sorted table (time, host, delta) and the changes
    added since it was last merged, kept apart (in the order added) until they are many
    enough to be worth a merge, so a session that adds a change per job does not copy
    the whole table each time. Queries read both parts (:meth:`parts`).

    It also keeps *snapshots*: every host's availability, and the instant of its latest
    rise (a change above 0), at a few instants (the first is the profile's start), kept
    exact as changes come in. A query at T starts from the latest snapshot at or before
    T and adds only the changes since, so its cost follows the changes in between, not
    all the changes before T; a query that had many to add leaves a snapshot at T."""

    __slots__ = ("_chunks", "_recent", "_rise", "_rows", "_snap", "_table", "_when", "count")

    def __init__(self, now: float, base: FloatArray) -> None:
        # (instant, or one instant per row; hosts; deltas), in the order added
        self._chunks: list[tuple[float | FloatArray, IndexArray, FloatArray]] = []
        self._recent: tuple[FloatArray, IndexArray, FloatArray] = _EMPTY
        self._table: tuple[FloatArray, IndexArray, FloatArray] = _EMPTY
        self.count = 0
        self._when: list[float] = [now]  # the snapshots' instants, sorted
        self._snap: FloatArray = np.empty((_SNAPSHOTS, len(base)))
        self._rise: FloatArray = np.empty((_SNAPSHOTS, len(base)))
        self._snap[0] = base
        self._rise[0] = -np.inf
        self._rows = 1

    def add(self, time: float, hosts: IndexArray, deltas: FloatArray) -> None:
        self._chunks.append((time, hosts, deltas))
        self.count += len(hosts)
        first, rows = bisect_left(self._when, time), self._rows  # snapshots it reaches
        if first < rows:
            every: Any = (slice(None), hosts)  # each snapshot from ``first`` on
            np.add.at(self._snap[first:rows], every, deltas)
            up = deltas > 0
            if up.any():
                rising: Any = (slice(None), hosts[up])
                np.maximum.at(self._rise[first:rows], rising, time)

    def add_rows(self, times: FloatArray, hosts: IndexArray, deltas: FloatArray) -> None:
        """Changes at several instants at once, row ``k`` at ``times[k]``: the same as
        :meth:`add` of each row in turn (rows of one instant stay in this order)."""
        if not len(hosts):
            return
        self._chunks.append((times, hosts, deltas))
        self.count += len(hosts)
        for row in range(self._rows):  # a change reaches the snapshots at or after it
            due = times <= self._when[row]
            if not due.any():
                continue
            np.add.at(self._snap[row], hosts[due], deltas[due])
            up = due & (deltas > 0)
            if up.any():
                np.maximum.at(self._rise[row], hosts[up], times[up])

    def at(self, time: float) -> FloatArray:
        """Every host's availability at ``time`` (each change at or before it applied; a
        new array)."""
        row, parts = self._since_snapshot(time)
        out: FloatArray = self._snap[row].copy()
        added = 0
        for _, h, d in parts:
            out += np.bincount(h, weights=d, minlength=len(out))
            added += len(h)
        if added >= _SNAPSHOT_GAP and math.isfinite(time):
            self._keep(time, row, out, parts)
        return out

    def latest_rise(self, time: float) -> FloatArray:
        """Per host, the latest instant at or before ``time`` of a change above 0
        (-inf: none; a new array)."""
        row, parts = self._since_snapshot(time)
        out: FloatArray = self._rise[row].copy()
        _raise_rises(out, parts)
        return out

    def _since_snapshot(
        self, time: float
    ) -> tuple[int, list[tuple[FloatArray, IndexArray, FloatArray]]]:
        """The latest snapshot at or before ``time``, and the changes after it up to
        ``time`` (in parts, in no particular order)."""
        row = bisect_right(self._when, time) - 1
        since = self._when[row]
        if since == time:
            return row, []
        (times, hosts, deltas), (rt, rh, rd) = self.parts()
        lo = int(times.searchsorted(since, side="right"))
        hi = int(times.searchsorted(time, side="right"))
        parts = [(times[lo:hi], hosts[lo:hi], deltas[lo:hi])] if hi > lo else []
        if len(rt):
            due = (rt > since) & (rt <= time)
            if due.any():
                parts.append((rt[due], rh[due], rd[due]))
        return row, parts

    def _keep(
        self,
        time: float,
        row: int,
        at: FloatArray,
        parts: list[tuple[FloatArray, IndexArray, FloatArray]],
    ) -> None:
        """Leave a snapshot at ``time`` (availability ``at``; ``parts``: the changes
        since snapshot ``row``): a query there had many changes to add."""
        rise = self._rise[row].copy()
        _raise_rises(rise, parts)
        if self._rows == _SNAPSHOTS:  # drop the one closest to its neighbours in time
            when = np.asarray(self._when)
            gone = 1 + int(np.argmin(when[2:] - when[:-2])) if self._rows > 2 else 1
            self._drop(gone)
            row -= row >= gone
        at_row, rows = row + 1, self._rows
        for table, values in ((self._snap, at), (self._rise, rise)):
            table[at_row + 1 : rows + 1] = table[at_row:rows]
            table[at_row] = values
        self._when.insert(at_row, time)
        self._rows += 1

    def _drop(self, row: int) -> None:
        rows = self._rows
        for table in (self._snap, self._rise):
            table[row : rows - 1] = table[row + 1 : rows]
        del self._when[row]
        self._rows -= 1

    def arrays(self) -> tuple[FloatArray, IndexArray, FloatArray]:
        """Every change, sorted by time (changes of one instant in the order added)."""
        self._gather()
        self._merge()
        return self._table

    def parts(
        self,
    ) -> tuple[
        tuple[FloatArray, IndexArray, FloatArray], tuple[FloatArray, IndexArray, FloatArray]
    ]:
        """(the sorted table, the recent changes in the order added)."""
        self._gather()
        if len(self._recent[0]) > max(_MERGE_AT, len(self._table[0]) // 32):
            self._merge()
        return self._table, self._recent

    def _gather(self) -> None:
        chunks = self._chunks
        if not chunks:
            return
        if all(isinstance(c[0], float) for c in chunks):
            t = np.repeat(
                np.fromiter((c[0] for c in chunks), dtype=np.float64, count=len(chunks)),
                [len(c[1]) for c in chunks],
            )
        else:
            t = np.concatenate(
                [np.broadcast_to(np.asarray(c[0], dtype=np.float64), len(c[1])) for c in chunks]
            )
        h = np.concatenate([c[1] for c in chunks]).astype(np.intp, copy=False)
        d = np.concatenate([c[2] for c in chunks]).astype(np.float64, copy=False)
        chunks.clear()
        rt, rh, rd = self._recent
        if len(rt):
            t, h, d = np.concatenate((rt, t)), np.concatenate((rh, h)), np.concatenate((rd, d))
        self._recent = (t, h, d)

    def _merge(self) -> None:
        t, h, d = self._recent
        if not len(t):
            return
        order = np.argsort(t, kind="stable")
        t, h, d = t[order], h[order], d[order]
        self._recent = _EMPTY
        times, hosts, deltas = self._table
        if not len(times):
            self._table = (t, h, d)
            return
        # new changes go after the old ones of the same instant (stable, as added)
        at = np.searchsorted(times, t, side="right")
        self._table = (np.insert(times, at, t), np.insert(hosts, at, h), np.insert(deltas, at, d))


_MERGE_AT = 1024  # recent changes kept apart at most (or a 32nd of the table)
_FEW_INSTANTS = 8  # new instants merged one by one (more: one sorted union)
_SNAPSHOTS = 16  # snapshots kept per resource (the profile's start included)
_SNAPSHOT_GAP = 512  # a query that adds at least this many changes leaves a snapshot
_FEW_CHANGES = 64  # a window's changes (of the hosts it needs) reduced in a plain loop
_NO_TIMES = np.zeros(0, dtype=np.float64)
_NO_HOSTS = np.zeros(0, dtype=np.intp)
_EMPTY = (_NO_TIMES, _NO_HOSTS, _NO_TIMES)


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
        self._events = {name: _Events(now, a) for name, a in self._now.items()}
        self._instants = np.asarray([now], dtype=np.float64)  # sorted, distinct
        self._new_instants: list[float] = []

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

    def release_many(
        self, ats: Sequence[float], claims: Sequence[tuple[IndexArray, Mapping[str, FloatArray]]]
    ) -> None:
        """:meth:`release_columns` of each ``(ats[k], *claims[k])`` in turn, at once: the
        same changes, in the same order (a session's running jobs' ends)."""
        if len(ats) != len(claims):
            raise InternalError("release_many needs one instant per claim")
        if not claims:
            return
        now = self.now
        at = np.maximum(np.asarray(ats, dtype=np.float64), now)
        if np.isnan(at).any():
            raise InternalError(f"a change before the profile's start {now}")
        unknown = {n for _, amounts in claims for n in amounts} - self._events.keys()
        if unknown:
            raise InternalError(f"the profile has no resource {sorted(unknown)[0]!r}")
        live = ~np.isinf(at)  # an infinite end never happens
        changed = np.zeros(len(claims), dtype=bool)
        for name, events in self._events.items():
            hosts: list[IndexArray] = []
            units: list[FloatArray] = []
            owner: list[int] = []
            for k, (h, amounts) in enumerate(claims):
                u = amounts.get(name)
                if u is not None and len(h) and live[k]:
                    hosts.append(h)
                    units.append(u)
                    owner.append(k)
            if not owner:
                continue
            h = np.concatenate(hosts).astype(np.intp, copy=False)
            u = np.concatenate(units).astype(np.float64, copy=False)
            rows = np.repeat(np.asarray(owner, dtype=np.intp), [len(x) for x in hosts])
            some = u != 0
            if some.any():
                events.add_rows(at[rows[some]], h[some], u[some])
                changed[rows[some]] = True
        self._new_instants += at[changed].tolist()

    def release_rows(
        self, ats: FloatArray, hosts: IndexArray, amounts: Mapping[str, FloatArray]
    ) -> None:
        """Row ``k`` gives back ``amounts[name][k]`` units on ``hosts[k]`` from
        ``ats[k]`` on (an end at or before now counts from now; an infinite one never
        happens): :meth:`release_many` of claims already laid out as rows."""
        if not len(hosts):
            return
        now = self.now
        at = np.maximum(ats, now)
        if np.isnan(at).any():
            raise InternalError(f"a change before the profile's start {now}")
        live = ~np.isinf(at)
        changed = np.zeros(len(at), dtype=bool)
        for name, units in amounts.items():
            events = self._events.get(name)
            if events is None:
                raise InternalError(f"the profile has no resource {name!r}")
            some = live & (units != 0)
            if some.any():
                events.add_rows(at[some], hosts[some], units[some])
                changed |= some
        if changed.any():
            self._new_instants += np.unique(at[changed]).tolist()

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
        changed = False
        for name, units in amounts.items():
            if name not in events:
                raise InternalError(f"the profile has no resource {name!r}")
            units = np.asarray(units, dtype=np.float64)
            some = units != 0
            if some.all():
                events[name].add(at, hosts, units if sign > 0 else -units)
                changed = True
            elif some.any():
                events[name].add(at, hosts[some], sign * units[some])
                changed = True
        if changed:
            self._new_instants.append(at)

    def advance(self, now: float) -> None:
        """Start the profile at a later ``now``, when no change is recorded after its
        start and at or before ``now`` (else an :class:`InternalError`): every query from
        ``now`` on answers as before, and :meth:`times` begins at ``now``."""
        instants = self.times()
        if not now >= self.now or (len(instants) > 1 and instants[1] <= now):
            raise InternalError(f"the profile of {self.now} cannot start at {now}")
        self.now = now
        self._instants = np.concatenate(([now], instants[1:]))

    def changes(self) -> int:
        """How many (host, resource) changes are recorded."""
        return sum(ev.count for ev in self._events.values())

    def times(self) -> FloatArray:
        """``now`` and every later instant at which some availability changes, sorted:
        the candidate start times of a plan (read-only)."""
        new = self._new_instants
        if len(new) <= _FEW_INSTANTS:  # a hold's start and end: insert them one by one
            for t in new:
                instants = self._instants
                at = int(np.searchsorted(instants, t))
                if at == len(instants) or instants[at] != t:
                    self._instants = np.concatenate((instants[:at], [t], instants[at:]))
        else:
            self._instants = np.union1d(self._instants, np.asarray(new, dtype=np.float64))
        new.clear()
        return self._instants

    def events(self, name: str) -> tuple[FloatArray, IndexArray, FloatArray]:
        """Resource ``name``'s changes as (time, host, delta) columns sorted by time
        (read-only use)."""
        return self._events[name].arrays()

    def at(self, time: float) -> dict[str, FloatArray]:
        """Availability at ``time`` (every change at or before it applied)."""
        return {name: self._at(name, time) for name in self._now}

    def latest_rise(self, name: str, time: float) -> FloatArray:
        """Per host, the latest instant at or before ``time`` at which resource
        ``name`` rises (a change above 0: a running job's end, a planned job's end);
        -inf where it never does."""
        if not self.now <= time:
            raise InternalError(f"a query at {time} is before the profile's start {self.now}")
        return self._events[name].latest_rise(time)

    def window(
        self,
        start: float,
        end: float,
        hosts: npt.NDArray[np.bool_] | None = None,
        *,
        positive: str | None = None,
    ) -> dict[str, FloatArray]:
        """Per resource, every host's lowest availability over ``[start, end)``: what a
        job planned to start at ``start`` and run until ``end`` can count on.

        ``hosts``, ``positive``: only the lowest points of these hosts, and of the hosts
        where resource ``positive`` is above 0 at ``start``, are needed; the others get
        their availability at ``start`` (a caller that can use none of them, since their
        lowest point of ``positive`` is at most 0 anyway, saves the work)."""
        if not self.now <= start < end:
            raise InternalError(f"a window needs now <= start < end, got [{start}, {end})")
        bases = {name: self._at(name, start) for name in self._now}
        if positive is not None:
            some = bases[positive] > 0
            hosts = some if hosts is None else hosts & some
        out = {}
        for name, base in bases.items():
            dip = self._dip(name, start, end, hosts)
            out[name] = base + dip if dip is not None else base
        return out

    def peak(self) -> dict[str, FloatArray]:
        """Per resource, every host's highest availability from now on: no window of
        any job can offer more."""
        out = {}
        for name in self._now:
            (times, hosts, deltas), (rt, rh, rd) = self._events[name].parts()
            t, h, d = (
                (
                    np.concatenate((times, rt)),
                    np.concatenate((hosts, rh)),
                    np.concatenate((deltas, rd)),
                )
                if len(rt)
                else (times, hosts, deltas)
            )
            base = self._now[name].copy()
            if len(t):
                order = np.lexsort((t, h))
                hosts_of, first_at, highest = _per_host_extremes(
                    t[order], h[order], d[order], np.maximum
                )
                # the availability now counts too, unless a change happens at now
                highest = np.where(first_at > self.now, np.maximum(highest, 0.0), highest)
                base[hosts_of] += highest
            out[name] = base
        return out

    def _at(self, name: str, time: float) -> FloatArray:
        """Availability of ``name`` at ``time`` (a new array)."""
        return self._events[name].at(time)

    def _dip(
        self, name: str, start: float, end: float, wanted: npt.NDArray[np.bool_] | None
    ) -> FloatArray | None:
        """Per host, min(0, lowest running sum of the changes strictly inside the window,
        the changes of one instant taken together)."""
        (times, hosts, deltas), (rt, rh, rd) = self._events[name].parts()
        lo = int(times.searchsorted(start, side="right"))
        hi = int(times.searchsorted(end, side="left"))
        t, h, d = times[lo:hi], hosts[lo:hi], deltas[lo:hi]
        if wanted is not None and len(h):
            keep = wanted[h]
            t, h, d = t[keep], h[keep], d[keep]
        mixed = False  # the recent changes are not in time order
        if len(rt):
            inside = (rt > start) & (rt < end)
            if wanted is not None:
                inside &= wanted[rh]
            if inside.any():
                t = np.concatenate((t, rt[inside]))
                h = np.concatenate((h, rh[inside]))
                d = np.concatenate((d, rd[inside]))
                mixed = True
        if not len(t):
            return None
        dip = np.zeros(self._n)
        if len(t) <= _FEW_CHANGES:  # a loop beats a dozen numpy calls on a few changes
            hosts_of, lowest = _few_host_minima(t.tolist(), h.tolist(), d.tolist())
            dip[hosts_of] = lowest
            return dip
        # by host, then time (the table part is by time already)
        order = np.lexsort((t, h)) if mixed else np.argsort(h, kind="stable")
        hosts_at, _, low = _per_host_extremes(t[order], h[order], d[order], np.minimum)
        dip[hosts_at] = np.minimum(low, 0.0)
        return dip


def _raise_rises(
    latest: FloatArray, parts: list[tuple[FloatArray, IndexArray, FloatArray]]
) -> None:
    """Raise each host's latest rise in ``latest`` to the changes above 0 in ``parts``."""
    for t, h, d in parts:
        up = d > 0
        if up.any():
            np.maximum.at(latest, h[up], t[up])


def _few_host_minima(t: list[float], h: list[int], d: list[float]) -> tuple[list[int], list[float]]:
    """:func:`_per_host_extremes` (minima, at most 0) for a few changes, in a loop:
    each host's lowest running sum, the changes of one instant taken together."""
    hosts: list[int] = []
    lowest: list[float] = []
    host, when, running, low = -1, math.nan, 0.0, 0.0
    for h_, t_, d_ in sorted(zip(h, t, d, strict=True)):  # by host, then time
        if h_ != host:
            if host >= 0:
                hosts.append(host)
                lowest.append(min(low, running))
            host, when, running, low = h_, t_, d_, 0.0
        elif t_ != when:  # the sum up to the last instant is complete
            low = min(low, running)
            when = t_
            running += d_
        else:
            running += d_
    hosts.append(host)
    lowest.append(min(low, running))
    return hosts, lowest


def _per_host_extremes(
    t: FloatArray, h: IndexArray, d: FloatArray, reduce: np.ufunc
) -> tuple[IndexArray, FloatArray, FloatArray]:
    """Changes sorted by host, then time, as running sums within each host: what happens
    at one instant happens at once (the changes of one (host, instant) are summed).
    Returns each host's index and its first instant (one per host, in order), and each
    host's lowest or highest running sum (``reduce``: ``np.minimum`` or ``np.maximum``).
    One running sum serves every host: a host's sums are the overall ones less the sum
    before its first change (exact: every amount is a whole number of units)."""
    first = np.ones(len(t), dtype=np.bool_)
    first[1:] = (h[1:] != h[:-1]) | (t[1:] != t[:-1])
    starts = np.flatnonzero(first)
    d, h, t = np.add.reduceat(d, starts), h[starts], t[starts]
    running = np.cumsum(d)
    group = np.ones(len(h), dtype=np.bool_)
    group[1:] = h[1:] != h[:-1]
    heads = np.flatnonzero(group)
    before = running[heads] - d[heads]
    extremes: FloatArray = reduce.reduceat(running, heads) - before
    return h[heads], t[heads], extremes


def _columns(holdings: Iterable[Holding]) -> tuple[IndexArray, dict[str, FloatArray]]:
    """Holdings as columns: host per claim, and per resource the units per claim."""
    items = list(holdings)
    hosts = np.fromiter((h for h, _ in items), dtype=np.intp, count=len(items))
    names = sorted({n for _, amounts in items for n in amounts})
    return hosts, {
        n: np.fromiter((a.get(n, 0.0) for _, a in items), dtype=np.float64, count=len(items))
        for n in names
    }
