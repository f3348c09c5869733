"""The availability profile backfill plans against (issue 12): every query checked
against a brute-force timeline computed here, instant by instant."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xce.alloc.profile as profile_module
from xce.alloc.planner import Planner, Steps
from xce.alloc.profile import Profile
from xce.errors import InternalError


def _brute(
    now: float, avail: dict[str, list[float]], changes: list[tuple[float, int, str, float]]
) -> Any:
    """A function (name, host, t) -> availability, by summing every change at or
    before t."""

    def at(name: str, host: int, t: float) -> float:
        value = avail[name][host]
        for when, h, n, delta in changes:
            if n == name and h == host and max(when, now) <= t:
                value += delta
        return value

    return at


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, ...]:
    n = draw(st.integers(1, 4))
    now = float(draw(st.integers(0, 5)))
    names = ["slots", "mem"]
    avail = {name: [float(draw(st.integers(0, 8))) for _ in range(n)] for name in names}
    profile = Profile(now, {k: np.asarray(v) for k, v in avail.items()})
    changes: list[tuple[float, int, str, float]] = []
    for _ in range(draw(st.integers(0, 8))):
        host = draw(st.integers(0, n - 1))
        amounts = {name: float(draw(st.integers(0, 4))) for name in names}
        if draw(st.booleans()):
            at = float(draw(st.integers(0, 20)))
            profile.release(at, [(host, amounts)])
            changes += [(at, host, k, v) for k, v in amounts.items()]
        else:
            start = float(draw(st.integers(int(now), 20)))
            end = draw(st.sampled_from([start + draw(st.integers(1, 10)), math.inf]))
            profile.hold(start, end, [(host, amounts)])
            changes += [(start, host, k, -v) for k, v in amounts.items()]
            if math.isfinite(end):
                changes += [(end, host, k, v) for k, v in amounts.items()]
    return now, avail, changes, profile


@given(cases(), st.integers(0, 25), st.integers(1, 15))
def test_window_is_the_lowest_availability_over_the_window(
    case: tuple[Any, ...], offset: int, length: int
) -> None:
    """issue 12: ``window(T, T+d)`` is, per host and resource, the minimum of the
    availability at every instant of [T, T+d) (checked at T and at every change inside)."""
    now, avail, changes, profile = case
    start = now + offset
    end = start + length
    at = _brute(now, avail, changes)
    got = profile.window(start, end)
    instants = [start] + [t for t, *_ in changes if start < t < end]
    for name in avail:
        for host in range(len(avail[name])):
            want = min(at(name, host, t) for t in instants)
            assert got[name][host] == want, (name, host, start, end)


@given(cases(), st.integers(0, 25))
def test_at_and_times(case: tuple[Any, ...], offset: int) -> None:
    """issue 12: ``at(t)`` applies every change at or before t; ``times()`` is now and
    every later change instant, sorted and distinct."""
    now, avail, changes, profile = case
    t = now + offset
    at = _brute(now, avail, changes)
    got = profile.at(t)
    for name in avail:
        assert got[name].tolist() == [at(name, h, t) for h in range(len(avail[name]))]
    expected = sorted({now} | {max(c[0], now) for c in changes if c[3] != 0 and c[0] < math.inf})
    assert profile.times().tolist() == expected


def test_a_release_and_a_hold_at_one_instant_do_not_dip() -> None:
    """issue 12: what happens at one instant happens at once: a job ending at 10 and a
    planned job starting at 10 on the same slots leave the window's minimum unchanged."""
    profile = Profile(0.0, {"slots": np.array([0.0])})
    profile.release(10.0, [(0, {"slots": 4.0})])
    profile.hold(10.0, 20.0, [(0, {"slots": 4.0})])
    assert profile.window(5.0, 30.0)["slots"].tolist() == [0.0]
    assert profile.window(20.0, 30.0)["slots"].tolist() == [4.0]


def test_a_job_past_its_estimate_ends_now() -> None:
    """issue 12: a release at or before now counts from now on."""
    profile = Profile(100.0, {"slots": np.array([1.0])})
    profile.release(50.0, [(0, {"slots": 2.0})])
    assert profile.at(100.0)["slots"].tolist() == [3.0]


def test_bad_windows_and_changes_are_internal_errors() -> None:
    """issue 12: a window before now, an empty hold or a NaN time is a bug of the
    caller (InternalError); a hold begun before now counts from now."""
    profile = Profile(10.0, {"slots": np.array([1.0])})
    with pytest.raises(InternalError):
        profile.window(5.0, 20.0)
    with pytest.raises(InternalError):
        profile.hold(12.0, 12.0, [])
    with pytest.raises(InternalError):
        profile.release(math.nan, [(0, {"slots": 1.0})])
    profile.hold(5.0, 12.0, [(0, {"slots": 1.0})])  # begun before now: held from now
    assert profile.at(10.0)["slots"].tolist() == [0.0]
    assert profile.at(12.0)["slots"].tolist() == [1.0]


@pytest.mark.parametrize(("merge_at", "gap", "rows"), [(0, 0, 3), (3, 1, 4), (4096, 512, 16)])
@given(data=st.data())
def test_queries_between_changes_match_a_fresh_profile(
    data: st.DataObject, merge_at: int, gap: int, rows: int
) -> None:
    """issue 12: a profile queried as changes come in (recent changes kept apart from
    the sorted table and merged now and then: after every change, every 3, or never
    here; snapshots left by queries, kept exact as changes come in, and dropped when
    more than ``rows`` are kept) answers every ``at`` and ``window`` exactly as a
    profile given all the changes at once; its ``peak`` is each host's highest
    availability at any instant from now on, and ``latest_rise`` each host's latest
    change above 0 at or before the instant asked."""
    import xce.alloc.profile as module

    saved = module._MERGE_AT, module._SNAPSHOT_GAP, module._SNAPSHOTS
    module._MERGE_AT, module._SNAPSHOT_GAP, module._SNAPSHOTS = merge_at, gap, rows
    try:
        _check_between_changes(data)
    finally:
        module._MERGE_AT, module._SNAPSHOT_GAP, module._SNAPSHOTS = saved


def _check_between_changes(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    base = {"slots": np.array([float(data.draw(st.integers(0, 8))) for _ in range(n)])}
    profile = Profile(0.0, base)
    applied: list[tuple[Any, ...]] = []
    for _ in range(data.draw(st.integers(1, 12))):
        hosts = np.array(
            data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)),
            dtype=np.intp,
        )
        amounts = {"slots": np.array([float(data.draw(st.integers(1, 3))) for _ in hosts])}
        start = float(data.draw(st.integers(0, 20)))
        if data.draw(st.booleans()):
            profile.release_columns(start, hosts, amounts)
            applied.append(("release", start, hosts, amounts))
        else:
            end = start + data.draw(st.sampled_from([1.0, 5.0, math.inf]))
            profile.hold_columns(start, end, hosts, amounts)
            applied.append(("hold", start, end, hosts, amounts))
        t = float(data.draw(st.integers(0, 25)))
        end = t + data.draw(st.sampled_from([1.0, 3.0, 10.0, math.inf]))
        fresh = Profile(0.0, base)
        for change in applied:
            if change[0] == "release":
                fresh.release_columns(*change[1:])
            else:
                fresh.hold_columns(*change[1:])
        assert profile.at(t)["slots"].tolist() == fresh.at(t)["slots"].tolist()
        assert profile.window(t, end)["slots"].tolist() == fresh.window(t, end)["slots"].tolist()
        assert profile.times().tolist() == fresh.times().tolist()
        highest = np.max([fresh.at(i)["slots"] for i in fresh.times().tolist()], axis=0)
        assert profile.peak()["slots"].tolist() == highest.tolist()
        assert profile.latest_rise("slots", t).tolist() == _latest_rises(applied, n, t)


def _latest_rises(applied: list[tuple[Any, ...]], n: int, t: float) -> list[float]:
    """Brute force: per host, the latest change above 0 at or before ``t``."""
    latest = [-math.inf] * n
    for change in applied:
        if change[0] == "release":
            rises = [(change[1], change[2])]
        else:
            rises = [(change[2], change[3])] if math.isfinite(change[2]) else []
        for when, hosts in rises:
            if when <= t:
                for h in hosts.tolist():
                    latest[h] = max(latest[h], when)
    return latest


# --- many releases at once (a session's running jobs' ends) -----------------------------
@st.composite
def release_batches(draw: st.DrawFn) -> tuple[Any, ...]:
    """A profile (some queries made first, so snapshots exist), and running jobs' ends:
    (instant, hosts, slots and mem per host), some before ``now`` (past their estimate),
    some at one instant, some with zero amounts."""
    n = draw(st.integers(1, 5))
    now = float(draw(st.integers(0, 5)))
    avail = {
        name: np.asarray([float(draw(st.integers(0, 8))) for _ in range(n)])
        for name in ("slots", "mem")
    }
    queried = draw(st.lists(st.integers(0, 20), max_size=3))
    claims = []
    for _ in range(draw(st.integers(0, 8))):
        at = float(draw(st.integers(-2, 12)))
        hosts = np.asarray(
            draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)),
            dtype=np.intp,
        )
        amounts = {
            name: np.asarray([float(draw(st.integers(0, 3))) for _ in hosts])
            for name in ("slots", "mem")
        }
        claims.append((at, hosts, amounts))
    return now, avail, queried, claims


def _made(now: float, avail: dict[str, Any], queried: list[int]) -> Profile:
    profile = Profile(now, avail)
    profile.hold_columns(
        now + 1, now + 30, np.arange(len(avail["slots"])), {"slots": avail["slots"] * 0 + 1}
    )
    for t in queried:
        profile.at(now + t)  # leaves snapshots once enough changes are added
        profile.window(now + t, now + t + 3.0)
    return profile


@given(case=release_batches())
def test_release_many_is_each_release_in_turn(case: tuple[Any, ...]) -> None:
    """``Profile.release_many`` (the planner's running jobs' ends, put in at once) makes
    the same profile as ``release_columns`` of each in turn: the same changes in the same
    order, instants, availability and latest rises at every instant, and windows."""
    now, avail, queried, claims = case
    # every query leaves a snapshot, so releases reach snapshots after ``now`` too
    with mock.patch.object(profile_module, "_SNAPSHOT_GAP", 1):
        one, many = _made(now, avail, queried), _made(now, avail, queried)
        assert many._events["slots"]._rows == one._events["slots"]._rows
    for at, hosts, amounts in claims:
        one.release_columns(at, hosts, amounts)
    many.release_many([c[0] for c in claims], [(c[1], c[2]) for c in claims])
    assert np.array_equal(one.times(), many.times())
    for name in ("slots", "mem"):
        for a, b in zip(one.events(name), many.events(name), strict=True):
            assert np.array_equal(a, b)
    for t in [*one.times().tolist(), now + 100.0]:
        for name in ("slots", "mem"):
            assert np.array_equal(one.at(t)[name], many.at(t)[name])
            assert np.array_equal(one.latest_rise(name, t), many.latest_rise(name, t))
        assert np.array_equal(one.window(t, t + 2.5)["slots"], many.window(t, t + 2.5)["slots"])


@given(
    ok=st.lists(st.booleans(), min_size=1, max_size=5),
    ends=st.lists(
        st.tuples(st.integers(0, 12), st.lists(st.integers(0, 4), min_size=1, max_size=5)),
        max_size=8,
    ),
    held=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 4)), max_size=3),
)
def test_tally_many_is_each_tally_in_turn(
    ok: list[bool], ends: list[tuple[int, list[int]]], held: list[tuple[int, int]]
) -> None:
    """The planner's total of ok hosts' slots over time (``Planner._slot_totals``):
    the running jobs' ends tallied at once (``_tally_many``) give the step function that
    tallying each in turn gives, after earlier holds and with hosts not ok."""
    n = len(ok)
    mask = np.asarray(ok)

    def planner() -> Any:
        p = SimpleNamespace(
            _slot_times=np.array([0.0]),
            _slot_values=np.array([float(4 * n)]),
            _ok=mask,
            _all_ok=bool(mask.all()),
            _steps=None,
        )
        for at, slots in held:  # an earlier hold from ``at``
            Planner._tally(p, float(at), np.arange(n), -np.full(n, float(slots)))
        return p

    claims = [(np.arange(len(slots)) % n, np.asarray(slots, dtype=np.float64)) for _, slots in ends]
    one, many = planner(), planner()
    for (at, _), (hosts, slots) in zip(ends, claims, strict=True):
        Planner._tally(one, float(at), hosts, slots)
    Planner._tally_many(many, [float(at) for at, _ in ends], claims)
    assert np.array_equal(one._slot_times, many._slot_times)
    assert np.array_equal(one._slot_values, many._slot_values)


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(1, 30), st.integers(-4, 8)), max_size=8),
    start=st.integers(0, 35),
    duration=st.sampled_from([0.0, 1.0, 2.5, 5.0, 12.0, math.inf, -1.0]),
    need=st.integers(0, 8),
)
def test_holds_at_is_holds_of_one_start(
    steps: list[tuple[int, int]], start: int, duration: float, need: int
) -> None:
    """``Steps.holds_at`` (one start, the planner's start-now screen) answers as
    ``Steps.holds`` of that start: a step function of slots over time, any duration
    (none, negative, infinite), any need."""
    at = sorted({t for t, _ in steps})
    values = [4.0] + [float(v) for _, v in sorted(dict(steps).items())]
    function = Steps(np.array([0.0, *map(float, at)]), np.array(values))
    many = function.holds(np.array([float(start)]), duration, float(need))[0]
    assert function.holds_at(float(start), duration, float(need)) == bool(many)
    # and as the step function read by brute force: over [start, start + duration), to
    # the end when the duration is infinite, at the start alone when it is not above 0
    # (a run of no duration: the planner's view of it is the start's; the screen once
    # read it as for ever, and passed over starts that fit)
    times = [0.0, *map(float, at)]
    in_force = max(i for i, t in enumerate(times) if t <= start)
    end = start + duration if duration > 0 else start
    seen = [values[in_force]] + [
        v
        for t, v in zip(times, values, strict=True)
        if start < t and (t < end or duration == math.inf)
    ]
    assert bool(many) == (min(seen) >= need)
