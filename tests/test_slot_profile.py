"""The planned sessions' slot profiles (xce.sim.slotprofile, issue 29): the dense grid
of host classes and the planner's event table, each checked against a brute-force
model of every host's slots instant by instant, over random books, running claims and
holds; and the one-slot shortcut of the view placement against the general rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xce.errors import InternalError
from xce.sim.placement import at_least, balanced, fill, place
from xce.sim.planned import _hint_key, _ordered_place, _room_order
from xce.sim.slotprofile import GRID_CELLS, GridSlots, ProfileSlots, slot_profile

NOW = 10.0
TIMES = [0.0, 5.0, 10.0, 12.0, 15.0, 20.0, 30.0, math.inf]  # ends: before now, at, after


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, Any]:
    """Books, claims and holds on hosts that come in few kinds, so that the grid's
    classes hold several hosts and holds take them whole, in part and unalike."""
    count = draw(st.integers(1, 9))
    kinds = draw(st.lists(st.sampled_from([0, 1, 2, 4]), min_size=1, max_size=3))
    base = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(count)]
    claims = draw(
        st.lists(
            st.tuples(
                st.sampled_from(TIMES),
                st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True),
                st.integers(0, 3),
            ),
            max_size=6,
        )
    )
    holds = draw(
        st.lists(
            st.tuples(
                st.sampled_from([NOW, 12.0, 14.0, 15.0, 20.0, 25.0]),
                st.sampled_from([1.0, 2.0, 5.0, 10.0, math.inf]),
                st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True),
                st.booleans(),  # the same slots on every host, or unalike
            ),
            max_size=6,
        )
    )
    return {"base": base, "claims": claims, "holds": holds}


def _build(case: dict[str, Any]) -> tuple[Any, list[list[tuple[float, int]]]]:
    """The rows of the claims, and per host its changes (instant, slots) of the model."""
    ends: list[float] = []
    hosts: list[int] = []
    slots: list[float] = []
    changes: list[list[tuple[float, int]]] = [[] for _ in case["base"]]
    for end, on, units in case["claims"]:
        for h in on:
            ends.append(end)
            hosts.append(h)
            slots.append(float(units))
            if math.isfinite(end) and units:
                changes[h].append((max(end, NOW), units))
    rows = (np.array(ends), np.array(hosts, dtype=np.intp), np.array(slots))
    return rows, changes


def _holds(case: dict[str, Any]) -> list[tuple[float, float, Any, Any]]:
    out = []
    for k, (start, length, on, alike) in enumerate(case["holds"]):
        units = [1 if alike else 1 + (k + h) % 3 for h in on]
        out.append((start, start + length, np.array(on, dtype=np.intp), np.array(units, float)))
    return out


class _Model:
    """Every host's slots as its books plus every change at or before an instant."""

    def __init__(self, base: list[int], changes: list[list[tuple[float, int]]]) -> None:
        self.base = base
        self.changes = changes

    def hold(self, start: float, end: float, hosts: Any, slots: Any) -> None:
        for h, s in zip(hosts.tolist(), slots.tolist(), strict=True):
            self.changes[h].append((max(start, NOW), -int(s)))
            if math.isfinite(end):
                self.changes[h].append((end, int(s)))

    def at(self, host: int, t: float) -> int:
        return self.base[host] + sum(d for when, d in self.changes[host] if when <= t)

    def times(self) -> list[float]:
        return sorted({NOW} | {when for c in self.changes for when, _ in c})

    def window(self, host: int, start: float, end: float) -> int:
        inside = [t for t in self.times() if start < t < end]
        return min(self.at(host, t) for t in [start, *inside])

    def latest_rise(self, host: int, t: float) -> float:
        rises = [when for when, d in self.changes[host] if d > 0 and when <= t]
        return max(rises, default=-math.inf)


def _check(profile: Any, model: _Model, now: float = NOW) -> None:
    """Every query of the contract from ``now`` on (its start, NOW unless it was
    started later) answers as the model; its instants begin at ``now``."""
    hosts = range(len(model.base))
    assert profile.times().tolist() == [now] + [t for t in model.times() if t > now]
    steps = profile.steps()
    assert steps.times[0] == now
    for t in [now, *(t for t in [*model.times(), 11.0, 13.0, 17.0, 40.0] if t > now)]:
        assert profile.at(t).tolist() == [model.at(h, t) for h in hosts]
        assert profile.latest_rise(t).tolist() == [model.latest_rise(h, t) for h in hosts]
        at = int(np.searchsorted(steps.times, t, side="right")) - 1
        assert steps.values[at] == sum(model.at(h, t) for h in hosts)
        for length in (1.0, 3.0, 8.0, math.inf):
            got = profile.window(t, t + length).tolist()
            for h in hosts:
                want = model.window(h, t, t + length)
                if model.at(h, t) > 0:
                    assert got[h] == want, (h, t, length)
                else:  # no slot at the start: any value at most 0 (the contract)
                    assert got[h] <= 0


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(case=sessions())
def test_grid_and_event_table_answer_as_the_model(case: dict[str, Any]) -> None:
    """issue 29 (kept profile): the grid of host classes and the planner's event
    table, built from the same books and claims and given the same holds (whole
    classes, parts of them, unalike slots, open ends), answer every query of the
    SlotProfile contract (instants, slots at, windows, latest rises, all hosts' slots)
    as the brute-force model after every hold."""
    rows, changes = _build(case)
    base = np.array(case["base"], dtype=float)
    grid = GridSlots(NOW, base, rows)
    table = ProfileSlots(NOW, base, rows)
    model = _Model(case["base"], changes)
    _check(grid, model)
    _check(table, model)
    for start, end, hosts, slots in _holds(case):
        grid.hold(start, end, hosts, slots)
        table.hold(start, end, hosts, slots)
        model.hold(start, end, hosts, slots)
        _check(grid, model)
        _check(table, model)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(case=sessions(), share=st.sampled_from([0.0, 0.5, 0.99]))
def test_a_profile_started_later_answers_as_before(case: dict[str, Any], share: float) -> None:
    """issue 29 (kept profile): the grid and the event table, given their holds and
    then started at a later ``now`` before their next instant (``advance``), answer
    every query from it on as the model, and go on doing so after a hold from it (a job
    started then); started at or past their next instant, or with a rise at their start
    (a claim that ended before it), each refuses (an internal error) and is left as it
    was."""
    rows, changes = _build(case)
    base = np.array(case["base"], dtype=float)
    model = _Model(case["base"], changes)
    profiles = [GridSlots(NOW, base, rows), ProfileSlots(NOW, base, rows)]
    for start, end, hosts, slots in _holds(case):
        model.hold(start, end, hosts, slots)
        for profile in profiles:
            profile.hold(start, end, hosts, slots)
    instants = model.times()
    following = instants[1] if len(instants) > 1 else NOW + 10.0
    later = NOW + share * (following - NOW)
    risen = any(model.latest_rise(h, NOW) == NOW for h in range(len(model.base)))
    for profile in profiles:
        if len(instants) > 1:
            with pytest.raises(InternalError):
                profile.advance(following)
            _check(profile, model)  # as it was
        if risen:  # a rise at the start (a claim ended before it) would move: refused
            with pytest.raises(InternalError):
                profile.advance(later)
            _check(profile, model)
            return
        profile.advance(later)
        _check(profile, model, later)
        on = np.array([0], dtype=np.intp)
        profile.hold(later, later + 2.0, on, np.array([1.0]))
    model.hold(later, later + 2.0, np.array([0], dtype=np.intp), np.array([1.0]))
    for profile in profiles:
        _check(profile, model, later)


def test_the_grid_groups_hosts_alike_and_splits_them_on_a_hold() -> None:
    """Hosts with the same books and claims share a column; a hold on part of them
    gives that part one of its own, and the others keep theirs."""
    base = np.array([2.0, 2.0, 2.0, 2.0, 1.0])
    rows = (np.array([15.0, 15.0]), np.array([0, 1], dtype=np.intp), np.array([1.0, 1.0]))
    grid = GridSlots(NOW, base, rows)
    assert grid._columns == 3  # {0, 1}, {2, 3}, {4}
    grid.hold(NOW, 20.0, np.array([2], dtype=np.intp), np.array([2.0]))
    assert grid._columns == 4
    assert grid.at(NOW).tolist() == [2, 2, 0, 2, 1]
    assert grid.at(15.0).tolist() == [3, 3, 0, 2, 1]


def test_a_session_takes_the_grid_only_when_small() -> None:
    """``slot_profile``: the grid while instants x claims are at most GRID_CELLS (and
    ``dense``), else the event table."""
    base = np.ones(4)
    rows = (np.array([12.0]), np.array([0], dtype=np.intp), np.array([1.0]))
    assert isinstance(slot_profile(NOW, base, rows, dense=True), GridSlots)
    assert isinstance(slot_profile(NOW, base, rows, dense=False), ProfileSlots)
    wide = math.isqrt(GRID_CELLS) + 2
    ends = np.arange(wide, dtype=float) + 11.0
    many = (ends, np.arange(wide, dtype=np.intp), np.ones(wide))
    assert isinstance(slot_profile(NOW, np.ones(wide), many, dense=True), ProfileSlots)


def test_a_hold_of_no_length_is_an_internal_error() -> None:
    grid = GridSlots(NOW, np.ones(2), (np.zeros(0), np.zeros(0, dtype=np.intp), np.zeros(0)))
    with pytest.raises(InternalError):
        grid.hold(12.0, 12.0, np.array([0], dtype=np.intp), np.array([1.0]))


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    hosts=st.lists(
        st.tuples(st.integers(-2, 4), st.sampled_from([0.0, 1.0, 2.5, 7.0])),
        min_size=1,
        max_size=12,
    ),
    picks=st.lists(st.integers(0, 11), max_size=6),
    n=st.integers(1, 20),
)
def test_a_plan_taking_only_hosts_with_room_places_as_over_all_hosts(
    hosts: list[tuple[int, float]], picks: list[int], n: int
) -> None:
    """A fresh plan orders only the hosts with room (hint first, then freed latest,
    then host order) and places on that; it is the placement over all hosts ordered
    by the same keys, since a placement never takes a host without room."""
    avail = np.array([a for a, _ in hosts], dtype=np.int64)
    rise = np.array([r for _, r in hosts])
    hint = np.array(list(dict.fromkeys(p for p in picks if p < len(hosts))), dtype=np.intp)
    keys: list[Any] = [-rise]
    if len(hint):
        keys.append(_hint_key(hint, len(hosts)))
    want = _ordered_place(avail, n, np.lexsort(keys))
    room = np.maximum(avail, 0)
    got = _ordered_place(room, n, _room_order(room, rise, hint if len(hint) else None))
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got[0].tolist() == want[0].tolist()
    assert (
        np.broadcast_to(got[1], len(got[0])).tolist()
        == np.broadcast_to(want[1], len(want[0])).tolist()
    )


@given(
    room=st.lists(st.integers(-1, 1), min_size=1, max_size=12),
    n=st.integers(1, 12),
)
def test_one_slot_hosts_place_as_the_general_rule(room: list[int], n: int) -> None:
    """The view placement's shortcut for hosts of one slot at most (the first ``n``
    with a slot, one task each) is the plan the general rule makes: one host if ``n``
    fits on one, else the first balanced plan, else the fill."""
    avail = np.array(room, dtype=np.int64)
    got = place(avail, n)
    free = np.maximum(avail, 0)
    if int(free.sum()) < n:
        assert got is None
        return
    one = np.flatnonzero(free >= n)
    if len(one):
        want = (one[:1], np.array([n]))
    else:
        found = balanced(free, n, at_least(free, int(free.max())))
        want = found if found is not None else fill(free, n)
    assert got is not None
    assert got[0].tolist() == want[0].tolist()
    assert (
        np.broadcast_to(got[1], len(got[0])).tolist()
        == np.broadcast_to(want[1], len(want[0])).tolist()
    )


def test_the_grid_grows_past_its_buffers_and_still_answers_as_the_model() -> None:
    """A session with more new instants and more split classes than the grid's first
    buffers hold (rows and columns grown, more than once) answers as the event table
    and the model: 120 hosts alike, 300 holds on random subsets with distinct ends."""
    rng = np.random.default_rng(29)
    count = 120
    base = np.full(count, 4.0)
    rows = (np.zeros(0), np.zeros(0, dtype=np.intp), np.zeros(0))
    grid = GridSlots(NOW, base, rows)
    table = ProfileSlots(NOW, base, rows)
    model = _Model([4] * count, [[] for _ in range(count)])
    first_shape = grid._grid.shape
    for k in range(300):
        hosts = np.sort(rng.choice(count, size=int(rng.integers(1, 6)), replace=False))
        slots = rng.integers(1, 3, size=len(hosts)).astype(float)
        start = NOW + float(rng.integers(0, 50))
        end = start + 1.0 + k + float(rng.random())
        for profile in (grid, table, model):
            profile.hold(start, end, hosts, slots)
        if k % 60 == 59:
            for t in (NOW, NOW + 7.0, NOW + 120.5):
                want = [model.at(h, t) for h in range(count)]
                assert grid.at(t).tolist() == want
                assert table.at(t).tolist() == want
                span = [model.window(h, t, t + 30.0) for h in range(count)]
                got = grid.window(t, t + 30.0).tolist()
                assert [g for g, w in zip(got, span, strict=True) if w >= 0] == [
                    w for w in span if w >= 0
                ]
                assert grid.latest_rise(t).tolist() == table.latest_rise(t).tolist()
    assert grid._grid.shape[0] > 2 * first_shape[0]  # rows grown twice at least
    assert grid._grid.shape[1] > first_shape[1]  # columns grown
