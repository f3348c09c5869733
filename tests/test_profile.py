"""The availability profile backfill plans against (issue 12): every query checked
against a brute-force timeline computed here, instant by instant."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
