"""Every host's slots over future time, for the plain replay's planned sessions
(:mod:`xce.sim.planned`; issue 29).

A planned session asks five things of its profile: the instants at which some change is
recorded (the candidate starts of a plan), every host's slots at one of them, every
host's lowest slots over a run (its *window*), every host's latest rise up to an
instant (which hosts a plan takes first), and all hosts' slots together over time (the
planner's screen, :class:`~xce.alloc.planner.Steps`); and it records holds. Two
implementations answer alike (:class:`SlotProfile`):

- :class:`ProfileSlots`, the planner's own :class:`~xce.alloc.profile.Profile` (an
  event table per resource, any number of hosts and instants);
- :class:`GridSlots`, a dense grid of instants by classes of hosts alike: one row per
  recorded instant holding every class's slots from it until the next, so a window is
  the lowest of a run of rows (one numpy reduction) and a hold is a block of rows less
  its slots. Its cost follows classes x instants, so a session takes it when its
  instants times its claims (a bound on its classes) are few (:func:`slot_profile`;
  ``SimOptions.dense_profile``): there the event table's fixed costs per query
  dominate.

Both record an instant for every change of some slots (a claim's end, a hold's start and
end, however they net out), a rise for every change above 0 (a claim's end, a hold's
end) and count a claim ending at or before now from now; every amount is a whole number
of slots, so the grid's sums are exact. A window's hosts with no slot at its start may
come back lower than the profile's (its windows give those hosts their slots at the
start); callers count a host below 0 as none, as the placement does.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Protocol

import numpy as np
import numpy.typing as npt

from xce.alloc.planner import Steps
from xce.alloc.profile import Profile
from xce.cluster import SLOTS
from xce.errors import InternalError

__all__ = ["GRID_CELLS", "GridSlots", "ProfileSlots", "SlotProfile", "slot_profile"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

GRID_CELLS = 1 << 17
"""The most cells a session puts on a grid, counted at its start as its instants times
its claims (a bound on its classes of hosts). Measured (docs/benchmarks.md): sessions of
about 30k such cells (128x8 hosts, crowded) run 1.4x faster on the grid, of about 250k
(1,024x1 hosts with one-host jobs) 1.3x slower; a grid that grows by its holds past a
few hundred thousand cells moves megabytes at every inserted instant."""


class SlotProfile(Protocol):
    """Slots per host from a session's start on.

    Contract: ``times()`` is ``now`` and every later instant at which some change is
    recorded, sorted and distinct (read-only; valid until the next hold); ``at(t)`` and
    ``window(start, end)`` are new arrays, per host, of the slots at ``t`` (every change
    at or before it applied) and of the lowest slots over ``[start, end)`` (``now <=
    start < end``; a host with no slot at ``start`` may come back with any value at most
    0); ``latest_rise(t)`` is per host the latest instant at or before ``t`` of a change
    above 0 (-inf: none); ``steps()`` is all hosts' slots together (the sum of ``at``)
    as a step function from now on; ``hold(start, end, hosts, slots)`` takes ``slots``
    on ``hosts`` (each once) over ``[start, end)`` (``now <= start < end``; an infinite
    end holds for ever); ``advance(now)`` starts it at a later ``now`` when no change is
    recorded after its start and at or before ``now`` and no rise at its start (else an
    :class:`~xce.errors.InternalError`): every query from ``now`` on answers as before
    and ``times()`` begins at ``now``."""

    def times(self) -> FloatArray: ...

    def at(self, time: float) -> FloatArray | IntArray: ...

    def window(self, start: float, end: float) -> FloatArray | IntArray: ...

    def latest_rise(self, time: float) -> FloatArray: ...

    def steps(self) -> Steps: ...

    def hold(self, start: float, end: float, hosts: IndexArray, slots: FloatArray) -> None: ...

    def advance(self, now: float) -> None: ...


def slot_profile(
    now: float,
    base: FloatArray,
    rows: tuple[FloatArray, IndexArray, FloatArray],
    *,
    dense: bool,
) -> SlotProfile:
    """The profile of a session at ``now``: the books ``base`` (slots free per host)
    and the running claims as ``rows`` (estimated end, host, slots; an end at or before
    now counts from now, an infinite one never comes). On a grid when ``dense`` and its
    cells are at most :data:`GRID_CELLS`."""
    ends = rows[0]
    if dense:
        instants = len(np.unique(ends)) + 1 if len(ends) else 1
        if instants * min(len(base), len(ends) + 1) <= GRID_CELLS:
            return GridSlots(now, base, rows)
    return ProfileSlots(now, base, rows)


class ProfileSlots:
    """:class:`SlotProfile` on the planner's :class:`~xce.alloc.profile.Profile`, with
    all hosts' slots together kept beside it as instants and values."""

    __slots__ = ("_profile", "_steps", "_totals", "now")

    def __init__(
        self, now: float, base: FloatArray, rows: tuple[FloatArray, IndexArray, FloatArray]
    ) -> None:
        self.now = now
        ends, hosts, slots = rows
        self._profile = Profile(now, {SLOTS: base})
        self._profile.release_rows(ends, hosts, {SLOTS: slots})
        self._totals = _totals(now, float(base.sum()), ends, slots)
        self._steps: Steps | None = None

    def times(self) -> FloatArray:
        return self._profile.times()

    def at(self, time: float) -> FloatArray:
        return self._profile.at(time)[SLOTS]

    def window(self, start: float, end: float) -> FloatArray:
        return self._profile.window(start, end, positive=SLOTS)[SLOTS]

    def latest_rise(self, time: float) -> FloatArray:
        return self._profile.latest_rise(SLOTS, time)

    def steps(self) -> Steps:
        if self._steps is None:
            self._steps = Steps(*self._totals)
        return self._steps

    def hold(self, start: float, end: float, hosts: IndexArray, slots: FloatArray) -> None:
        self._profile.hold_columns(start, end, hosts, {SLOTS: slots})
        total = float(slots.sum())
        self._tally(max(start, self.now), -total)
        if math.isfinite(end):
            self._tally(end, total)

    def advance(self, now: float) -> None:
        if bool((self._profile.latest_rise(SLOTS, self.now) >= self.now).any()):
            raise InternalError(f"the profile of {self.now} cannot start at {now}")
        self._profile.advance(now)
        times, values = self._totals
        self._totals = (np.concatenate(([now], times[1:])), values)
        self.now = now
        self._steps = None

    def _tally(self, at: float, change: float) -> None:
        """All hosts' slots together change by ``change`` from ``at`` on."""
        times, values = self._totals
        i = int(np.searchsorted(times, at, side="left"))
        if i == len(times) or times[i] != at:
            times = np.concatenate((times[:i], [at], times[i:]))
            values = np.concatenate((values[:i], values[i - 1 : i], values[i:]))
        values[i:] += change
        self._totals = (times, values)
        self._steps = None


class GridSlots:
    """:class:`SlotProfile` on a dense grid (module docstring): row ``r`` holds the
    slots over ``[times[r], times[r + 1])`` and, in the same cell, a mark where a
    change above 0 happens at ``times[r]`` (a cell is ``2 * slots + mark``: the lowest
    cell of a run is twice the lowest slots, plus a mark, so one reduction gives the
    window), and all hosts' slots together.

    Its columns are *classes* of hosts, not hosts: hosts whose slots and rises are the
    same at every instant share one column (``_class``: each host's), so a session of
    1,024 hosts whose jobs take them in blocks of 32 keeps a few dozen columns. The
    classes start as the hosts with the same free slots and the same claims' ends and
    slots; a hold that takes part of a class, or different slots of its hosts, gives
    each part it takes a column of its own (a copy of the class's). Queries are per
    class, then read per host. Rows and columns are kept in buffers with room to spare;
    an instant is inserted by moving the rows after it."""

    __slots__ = ("_class", "_columns", "_grid", "_line", "_rows", "_size", "_steps", "_when", "now")

    def __init__(
        self, now: float, base: FloatArray, rows: tuple[FloatArray, IndexArray, FloatArray]
    ) -> None:
        self.now = now
        ends, hosts, slots = rows
        at = np.maximum(ends, now)
        live = np.isfinite(at) & (slots != 0)
        at, hosts, units = at[live], hosts[live], slots[live].astype(np.int64)
        instants, row = np.unique(np.concatenate(([now], at)), return_inverse=True)
        row = row.reshape(-1)[1:]
        count = len(instants)
        of, first = _classes(base, row, hosts, units, count)
        columns = len(first)
        mine = of[hosts] if len(hosts) else hosts  # each change's column ...
        one = first[mine] == hosts  # ... counted once, from its class's first host
        grid = np.zeros((2 * count + 64, columns + 64), dtype=np.int32)
        grid[0, :columns] = base[first]
        np.add.at(grid, (row[one], mine[one]), units[one])
        np.cumsum(grid[:count], axis=0, out=grid[:count])
        self._size = np.bincount(of, minlength=grid.shape[1])
        line = np.empty((grid.shape[0], 2))  # per row: its instant, all hosts' slots
        line[:count, 0] = instants
        line[:count, 1] = grid[:count, :columns] @ self._size[:columns]
        grid[:count] *= 2
        grid[row, mine] |= 1  # the claims' ends: rises
        self._class = of
        self._columns = columns
        self._grid = grid
        self._line = line
        self._when: list[float] = instants.tolist()
        self._rows = count
        self._steps: Steps | None = None

    def times(self) -> FloatArray:
        return self._line[: self._rows, 0]

    def at(self, time: float) -> IntArray:
        row = self._grid[bisect_right(self._when, time) - 1, : self._columns] >> 1
        out: IntArray = row.astype(np.int64)[self._class]
        return out

    def window(self, start: float, end: float) -> IntArray:
        first = bisect_right(self._when, start) - 1
        last = bisect_left(self._when, end)
        lowest = self._grid[first:last, : self._columns].min(axis=0) >> 1
        out: IntArray = lowest.astype(np.int64)[self._class]
        return out

    def latest_rise(self, time: float) -> FloatArray:
        row = bisect_right(self._when, time) - 1
        back = self._grid[row::-1, : self._columns] & 1  # rows ``row`` down to 0
        latest = back.argmax(axis=0)  # the first mark going back (0 where none)
        marked = back[latest, np.arange(back.shape[1])] > 0
        out: FloatArray = np.where(marked, self._line[row - latest, 0], -np.inf)[self._class]
        return out

    def steps(self) -> Steps:
        if self._steps is None:
            line = self._line[: self._rows]
            self._steps = Steps(line[:, 0].copy(), line[:, 1].copy())
        return self._steps

    def hold(self, start: float, end: float, hosts: IndexArray, slots: FloatArray) -> None:
        if not start < end:
            raise InternalError(f"a hold needs start < end, got [{start}, {end})")
        first = self._row(start if start > self.now else self.now)
        last = self._row(end) if end < math.inf else self._rows
        units = slots.astype(np.int64)
        whole = self._alike(hosts, units) if len(hosts) > 1 else self._own(int(hosts[0]))
        if whole is not None:  # one column, the same slots on each of its hosts
            grid = self._grid  # (after a column split off: it may have grown)
            grid[first:last, whole] -= 2 * int(units[0])
            if last < self._rows:
                grid[last, whole] |= 1
        else:
            columns, amounts = self._split(hosts, units)
            grid = self._grid  # (likewise)
            grid[first:last, columns] -= (2 * amounts).astype(np.int32)
            if last < self._rows:
                grid[last, columns] |= 1
        self._line[first:last, 1] -= float(units.sum())
        self._steps = None

    def advance(self, now: float) -> None:
        if (
            not now >= self.now
            or (self._rows > 1 and self._when[1] <= now)
            or bool((self._grid[0, : self._columns] & 1).any())
        ):
            raise InternalError(f"the profile of {self.now} cannot start at {now}")
        self.now = now
        self._when[0] = now
        self._line[0, 0] = now
        self._steps = None

    def _alike(self, hosts: IndexArray, units: IntArray) -> int | None:
        """The one column a hold of ``units`` on ``hosts`` takes from when they are all
        of one class and take the same slots (most holds: a job on hosts alike), split
        off if the class has others; None otherwise (:meth:`_split` decides)."""
        mine = self._class[hosts]
        column = int(mine[0])
        if not ((mine == column).all() and (units == units[0]).all()):
            return None
        count = len(hosts)
        if self._size[column] == count:
            return column
        return self._apart(column, hosts, count)

    def _apart(self, column: int, hosts: int | IndexArray, count: int) -> int:
        """A new column for ``count`` hosts of class ``column`` (a copy of it)."""
        new = self._columns
        if new >= self._grid.shape[1]:
            self._grow(columns=2 * self._grid.shape[1])
        grid = self._grid
        grid[: self._rows, new] = grid[: self._rows, column]
        self._columns = new + 1
        self._class[hosts] = new
        self._size[column] -= count
        self._size[new] = count
        return new

    def _own(self, host: int) -> int:
        """Host ``host``'s column, made its own if its class has others."""
        column = int(self._class[host])
        if self._size[column] == 1:
            return column
        return self._apart(column, host, 1)

    def _split(self, hosts: IndexArray, units: IntArray) -> tuple[IndexArray, IntArray]:
        """The columns a hold of ``units`` on ``hosts`` takes from, and how many slots
        from each: a class it takes whole, and alike, keeps its column; each part of
        one it takes in part, or unalike, gets a column of its own (class docstring).
        For a hold on several classes, or unalike (one class alike is :meth:`_alike`'s)."""
        of = self._class
        mine = of[hosts]
        if (self._size[mine] == 1).all():  # every host a class of its own
            return mine, units
        if (units == units[0]).all():  # several classes
            low = int(mine.min())
            tally = np.bincount(mine - low)
            parts = np.flatnonzero(tally)
            counts = tally[parts]
            rank = np.zeros(len(tally), dtype=np.intp)
            rank[parts] = np.arange(len(parts))
            back = rank[mine - low]
            parts += low
            amounts = np.full(len(parts), units[0], dtype=np.int64)
            whole = counts == self._size[parts]
        else:
            top = int(units.max()) + 1
            keys, back, counts = np.unique(
                mine * top + units, return_inverse=True, return_counts=True
            )
            parts, amounts = keys // top, keys % top
            whole = counts == self._size[parts]
            if len(parts) > 1:  # a class taken in several amounts is split however whole
                once = np.ones(len(parts), dtype=np.bool_)
                once[1:] = parts[1:] != parts[:-1]
                once[:-1] &= parts[:-1] != parts[1:]
                whole &= once
        if whole.all():
            return parts, amounts
        split = np.flatnonzero(~whole)
        old = parts[split]
        new = np.arange(self._columns, self._columns + len(split))
        if new[-1] >= self._grid.shape[1]:
            self._grow(columns=max(2 * self._grid.shape[1], int(new[-1]) + 65))
        count = self._rows
        self._grid[:count, new] = self._grid[:count, old]
        self._columns += len(split)
        columns = parts.copy()
        columns[split] = new
        of[hosts] = columns[back]
        np.subtract.at(self._size, old, counts[split])
        self._size[new] = counts[split]
        return columns, amounts

    def _row(self, time: float) -> int:
        """The row of instant ``time`` (after now), inserted if new: a copy of the row
        before it, no rise marked."""
        when = self._when
        at = bisect_left(when, time)
        if at < len(when) and when[at] == time:
            return at
        if at == 0:
            raise InternalError(f"an instant {time} before the profile's start {self.now}")
        count = self._rows
        if count == len(self._line):
            self._grow(rows=2 * count + 64)
        grid, line = self._grid, self._line
        grid[at + 1 : count + 1] = grid[at:count]
        line[at + 1 : count + 1] = line[at:count]
        np.bitwise_and(grid[at - 1], -2, out=grid[at])
        line[at, 0] = time
        line[at, 1] = line[at - 1, 1]
        when.insert(at, time)
        self._rows = count + 1
        return at

    def _grow(self, *, rows: int | None = None, columns: int | None = None) -> None:
        count, used = self._rows, self._columns
        shape = (rows or self._grid.shape[0], columns or self._grid.shape[1])
        grid = np.zeros(shape, dtype=np.int32)
        grid[:count, :used] = self._grid[:count, :used]
        self._grid = grid
        if shape[0] != len(self._line):
            line = np.empty((shape[0], 2))
            line[:count] = self._line[:count]
            self._line = line
        if shape[1] != len(self._size):
            size = np.zeros(shape[1], dtype=np.int64)
            size[:used] = self._size[:used]
            self._size = size


def _classes(
    base: FloatArray, row: IndexArray, hosts: IndexArray, units: IntArray, rows: int
) -> tuple[IndexArray, IndexArray]:
    """Hosts with the same slots at every instant: each host's class (numbered from 0)
    and each class's first host. A host is its free slots and, per instant, the slots
    its claims give back then; hosts alike in all of them are one class."""
    count = len(base)
    if len(hosts):
        keys, back = np.unique(hosts * rows + row, return_inverse=True)  # (host, instant)
        amounts = np.bincount(back.reshape(-1), weights=units).astype(np.int64)
        owner, instant = keys // rows, keys % rows
        starts = np.searchsorted(owner, np.arange(count))
        place = np.arange(len(keys)) - starts[owner]  # its rank among its host's
        width = int(place.max()) + 1
    else:
        owner = instant = amounts = place = np.zeros(0, dtype=np.int64)
        width = 0
    table = np.full((count, 1 + 2 * width), -1, dtype=np.int64)
    table[:, 0] = base.astype(np.int64)
    table[owner, 1 + 2 * place] = instant
    table[owner, 2 + 2 * place] = amounts
    order = np.lexsort(table.T[::-1])
    ordered = table[order]
    fresh = np.ones(count, dtype=np.bool_)
    fresh[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    label = np.cumsum(fresh) - 1
    of = np.empty(count, dtype=np.intp)
    of[order] = label
    first = np.full(int(label[-1]) + 1 if count else 0, count, dtype=np.intp)
    np.minimum.at(first, of, np.arange(count, dtype=np.intp))
    return of, first


def _totals(
    now: float, total: float, ends: FloatArray, slots: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """All hosts' slots together over time, as instants and the value from each: the
    books' ``total`` now, and the claims' ``slots`` back at their ``ends`` (from now at
    the earliest; never, if infinite)."""
    live = np.isfinite(ends)
    at, amounts = np.maximum(ends[live], now), slots[live]
    if not len(at):
        return np.array([now]), np.array([total])
    order = np.argsort(at, kind="stable")
    at, amounts = at[order], amounts[order]
    instants, first = np.unique(at, return_index=True)
    values = total + np.cumsum(np.add.reduceat(amounts, first))
    if instants[0] > now:
        instants = np.concatenate(([now], instants))
        values = np.concatenate(([total], values))
    return instants, values
