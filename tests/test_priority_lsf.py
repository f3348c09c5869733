"""LSF's hierarchical fairshare (``xce.priority.lsf``, the ``lsf-fairshare`` picker,
issue 28): the documented dynamic user priority on hand-computed cases, share trees
of users and groups, ``default`` shares, decay over HIST_HOURS, the core charging
finished work, errors, and the picker's contract."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xce.alloc import Dispatched
from xce.cluster import ClusterState, state_from_dict
from xce.core import JobFinished, JobStarted, SchedulerCore, state_to_dict
from xce.errors import InputError
from xce.priority.lsf import LsfConfig, LsfUsage, _Load, dynamic_priority, lsf_config

NOW = 100_000.0
HOUR = 3600.0


def state_of(
    jobs: list[dict[str, Any]],
    shares: dict[str, float],
    lsf: dict[str, Any] | None = None,
    running: list[dict[str, Any]] | None = None,
    slots: int = 0,
) -> ClusterState:
    data: dict[str, Any] = {
        "now": NOW,
        "picker": "lsf-fairshare",
        "hosts": [{"name": "n1", "slots": slots}],
        "queues": {"normal": {"shares": shares}},
        "jobs": jobs,
    }
    if lsf is not None:
        data["priority"] = {"lsf": lsf}
    if running:
        data["running"] = running
    return state_from_dict(data, "<test>")


def order(state: ClusterState) -> list[str]:
    return [d.job for d in SchedulerCore(state).run_session().decisions]


def test_the_dynamic_priority_formula() -> None:
    """shares / (cpu*CPU_TIME_FACTOR + (hist + run)*RUN_TIME_FACTOR + (committed -
    run)*COMMITTED_RUN_TIME_FACTOR + (1 + slots)*RUN_JOB_FACTOR), hours and slots."""
    cfg = LsfConfig(0.7, 0.7, 3.0, 0.5, 5.0, historical_run_time=True)
    load = _Load(cpu=10.0, history=4.0, run=2.0, committed=6.0, slots=3.0)
    want = 12 / (10 * 0.7 + (4 + 2) * 0.7 + (6 - 2) * 0.5 + (1 + 3) * 3)
    assert dynamic_priority(12, load, cfg) == pytest.approx(want)
    plain = LsfConfig()  # LSF's defaults: no historical run time, no committed factor
    assert dynamic_priority(12, load, plain) == pytest.approx(12 / (7 + 1.4 + 12))
    static = LsfConfig(0, 0, 0, 0)
    assert dynamic_priority(12, load, static) == 12  # static fairshare: the shares


def test_an_hour_decays_to_a_tenth_in_hist_hours() -> None:
    """IBM: "1 hour of recently-used time is equivalent to 0.1 hours after" HIST_HOURS."""
    book = LsfUsage(LsfConfig(hist_hours=5).decay, 0.0)
    book.set("q", "u", 1.0)
    assert book.at("q", "u", 5 * HOUR) == pytest.approx(0.1)
    assert book.at("q", "u", 10 * HOUR) == pytest.approx(0.01)
    flat = LsfUsage(LsfConfig(hist_hours=0).decay, 0.0)
    flat.set("q", "u", 1.0)
    assert flat.at("q", "u", 100 * HOUR) == 1.0


def test_groups_descend_by_priority_then_fcfs() -> None:
    """chem (40 shares, 5 h used) beats physics (60, 100 h of alice's plus bob's
    running hour on 4 slots) and eve (default 1): chem's members FCFS (c1, d1); then
    physics' bob (fewer hours for his share) before alice (x1, a1 FCFS); eve last."""
    jobs = [
        {"id": "a1", "user": "alice", "submit_time": 1},
        {"id": "b1", "user": "bob", "submit_time": 2},
        {"id": "c1", "user": "carol", "submit_time": 3},
        {"id": "d1", "user": "dave", "submit_time": 4},
        {"id": "e1", "user": "eve", "submit_time": 5},
        {"id": "x1", "user": "alice", "submit_time": 0},
    ]
    lsf = {
        "groups": {
            "physics": {"members": ["alice", "bob"], "shares": {"alice": 2, "bob": 1}},
            "chem": {"members": ["carol", "dave"]},
        },
        "usage": {"normal": {"alice": 100, "carol": 5}},
    }
    running = [
        {
            "id": "r",
            "user": "bob",
            "start_time": NOW - HOUR,
            "requested_time": 7200,
            "alloc": [{"host": "n1", "slots": 4}],
        }
    ]
    state = state_of(jobs, {"physics": 60, "chem": 40, "default": 1}, lsf, running, slots=4)
    assert order(state) == ["c1", "d1", "b1", "x1", "a1", "e1"]


def test_a_dispatch_lowers_the_users_priority_within_the_session() -> None:
    """Equal shares, no usage: alice's first job starts and takes 2 slots, so bob's job
    (priority 1/3 against alice's 1/9) comes next, then alice's second."""
    jobs = [
        {"id": "a1", "user": "alice", "tasks": 2, "submit_time": 0},
        {"id": "a2", "user": "alice", "submit_time": 1},
        {"id": "b1", "user": "bob", "submit_time": 2},
    ]
    state = state_of(jobs, {"alice": 1, "bob": 1}, slots=8)
    assert order(state) == ["a1", "b1", "a2"]


def test_users_without_shares_come_last() -> None:
    jobs = [{"id": "n", "user": "nobody2", "submit_time": 0}, {"id": "a", "user": "alice"}]
    state = state_of(jobs, {"alice": 1})
    assert order(state) == ["a", "n"]


def test_the_core_charges_finished_work_per_queue_and_user() -> None:
    """A 2-slot job run for an hour adds about 2 slot-hours (decayed over the hour)."""
    state = state_of([{"id": "a", "user": "alice", "tasks": 2}], {"alice": 1}, {}, slots=2)
    core = SchedulerCore(state)
    d = core.run_session().decisions[0]
    assert isinstance(d, Dispatched)
    core.apply(JobStarted("a", d.allocation, NOW))
    core.apply(JobFinished("a", NOW + HOUR))
    setup = core.state.priority
    assert setup is not None
    assert setup.lsf_usage is not None
    got = setup.lsf_usage.at("normal", "alice", NOW + HOUR)
    decay = setup.lsf_usage.decay
    import math

    rate = -math.log(decay)
    assert got == pytest.approx(2 * (1 - math.exp(-rate * HOUR)) / rate / HOUR)
    assert 1.5 < got < 2.0  # an hour decays to 0.63 of itself (0.1 in 5 h)


def test_a_snapshot_keeps_the_usage() -> None:
    """The written state carries the usage at its time, running work included; it
    orders its jobs alike."""
    jobs = [{"id": "a", "user": "alice"}, {"id": "b", "user": "bob"}]
    running = [
        {
            "id": "r",
            "user": "alice",
            "start_time": NOW - HOUR,
            "alloc": [{"host": "n1", "slots": 1}],
        }
    ]
    state = state_of(
        jobs, {"alice": 1, "bob": 1}, {"usage": {"normal": {"bob": 3}}}, running, slots=1
    )
    data = json.loads(json.dumps(state_to_dict(state)))
    again = state_from_dict(data, "<again>")
    assert order(again) == order(state)
    assert data["priority"]["lsf"]["usage"]["normal"]["bob"] == 3


@pytest.mark.parametrize(
    ("lsf", "message"),
    [
        ({"CPU_TIME_FACTOR": -1}, "at least 0"),
        ({"COMMITTED_RUN_TIME_FACTOR": 2}, "from 0 to 1"),
        ({"ENABLE_HIST_RUN_TIME": "maybe"}, "Y or N"),
        ({"RUN_JOB": 3}, "unknown setting"),
        ({"groups": {"g": {"shares": {}}}}, "members"),
        ({"groups": {"g": {"members": ["a"], "shares": {"b": 1}}}}, "not a member"),
        ({"groups": {"g": {"members": ["h"]}, "h": {"members": ["g"]}}}, "cycle"),
    ],
)
def test_bad_settings(lsf: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        lsf_config(lsf)


def test_bad_usage_is_located() -> None:
    with pytest.raises(InputError, match=r"priority\.lsf\.usage\.normal\.alice"):
        state_of([], {"alice": 1}, {"usage": {"normal": {"alice": -2}}})


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["u1", "u2", "u3", "u4"]), st.integers(0, 100)),
        min_size=1,
        max_size=15,
    ),
    st.dictionaries(st.sampled_from(["u1", "u2", "g"]), st.integers(1, 9), min_size=1),
)
def test_every_job_is_offered_exactly_once(
    jobs: list[tuple[str, int]], shares: dict[str, int]
) -> None:
    """Whatever the tree (users, a group of u3 and u4, default or not), the session
    decides every job once."""
    lsf = {"groups": {"g": {"members": ["u3", "u4"]}}}
    listed = [{"id": f"j{i}", "user": u, "submit_time": t} for i, (u, t) in enumerate(jobs)]
    state = state_of(listed, {k: float(v) for k, v in shares.items()}, lsf, slots=2)
    got = order(state)
    assert sorted(got) == sorted(j["id"] for j in listed)
