"""Job gates (issue 25 contract; xce.core.gates): a hold, a begin time, a dependency,
decided before any resource is looked at.

Hand tables first (each docstring shows the arithmetic), in sessions that do not plan
and then under ``backfill: conservative``; then properties: a job waiting at a gate
changes no other job's decision, and threaded sessions decide as synchronous ones.
Hosts are ``h0``, ``h1``, ... so a host's number is its index in allocations.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from flow_states import acyclic, by_id, flow_state, pending, planned, ran
from strategies import scenarios
from xce.alloc import Decision, Dispatched, Pending, PendReason
from xce.cluster import ClusterState, PendingJob, state_from_dict
from xce.cluster.jobflow import parse_dependency
from xce.core import JobSubmitted, SchedulerCore, Session

RUN = "run"


def decide(state: ClusterState, **kwargs: Any) -> dict[str, Decision]:
    return by_id(Session(state, **kwargs).run().decisions)


def outcome(d: Decision) -> str:
    return RUN if isinstance(d, Dispatched) else d.info.reason.value


# ------------------------------------------------------------- sessions that do not plan
#
# now = 100. r1 (alice, name "x") holds h0 since 0, estimate 1000; h1 is free. p is a
# held pending job (never runs this session). "gone" is in no section: it has ended.


def waiting_example() -> ClusterBuilder:
    b = ClusterBuilder().hosts(2, slots=1).at(100)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=1000, user="alice")
    b.job("p", user="alice")
    b.job("j", user="alice")
    return b


# jobs[j] keys -> outcome of j (run: dispatched on h1)
NOT_PLANNED: dict[str, tuple[dict[str, Any], str]] = {
    "no gate": ({}, RUN),
    "held": ({"hold": True}, "HELD"),
    "held with a begin time": ({"hold": True, "begin_time": 500}, "HELD"),
    "begin time to come": ({"begin_time": 500}, "BEGIN_TIME"),
    "begin time past": ({"begin_time": 50}, RUN),
    "begin time now": ({"begin_time": 100}, RUN),
    "afterok on a running job": ({"dependency": "afterok:r1"}, "DEPENDENCY"),
    "afterany on a running job": ({"dependency": "afterany:r1"}, "DEPENDENCY"),
    "afternotok on a running job": ({"dependency": "afternotok:r1"}, "DEPENDENCY"),
    "aftercorr on a running job": ({"dependency": "aftercorr:r1"}, "DEPENDENCY"),
    "after a started job": ({"dependency": "after:r1"}, RUN),
    "after a started job + 1 min (60 <= 100)": ({"dependency": "after:r1+1"}, RUN),
    "after a started job + 10 min (600 > 100)": ({"dependency": "after:r1+10"}, "DEPENDENCY"),
    "on a pending job": ({"dependency": "afterany:p"}, "DEPENDENCY"),
    "after a pending job": ({"dependency": "after:p"}, "DEPENDENCY"),
    "on a job not in the state": ({"dependency": "afterok:gone"}, RUN),
    "all of: running and ended": ({"dependency": "afterok:r1,afterok:gone"}, "DEPENDENCY"),
    "all of, one kind: running and ended": ({"dependency": "afterok:gone:r1"}, "DEPENDENCY"),
    "any of: running or ended": ({"dependency": "afterok:r1?afterok:gone"}, RUN),
    "any of: running or pending": ({"dependency": "afterok:r1?afterany:p"}, "DEPENDENCY"),
    "singleton, same user and name running": (
        {"dependency": "singleton", "name": "x"},
        "DEPENDENCY",
    ),
    "singleton, another name": ({"dependency": "singleton", "name": "y"}, RUN),
    "singleton, another user": ({"dependency": "singleton", "name": "x", "user": "bob"}, RUN),
    "dependency met, begin time to come": (
        {"dependency": "afterok:gone", "begin_time": 500},
        "BEGIN_TIME",
    ),
}


@pytest.mark.parametrize(("keys", "want"), list(NOT_PLANNED.values()), ids=list(NOT_PLANNED))
@pytest.mark.parametrize("threads", [False, True])
def test_gates_without_planning(keys: dict[str, Any], want: str, threads: bool) -> None:
    """A gate pends its reason before resources are looked at (h1 is free throughout):
    held; a begin time after now; a dependency item not yet met — after*: its job has
    not ended (a running or pending job), ``after``: not started (plus its delay); an
    id in no section has ended (met); ``,`` needs every item, ``?`` one; singleton: a
    running job of the same user and name. A job whose gates are all open runs."""
    state = flow_state(waiting_example(), {"p": {"hold": True}, "j": keys}, {"r1": {"name": "x"}})
    got = Session(state).run(threads=threads).decisions
    decisions = by_id(got)
    assert outcome(decisions["j"]) == want
    if want == RUN:
        assert ran(decisions["j"]) == [1]
    assert outcome(decisions["p"]) == "HELD"


OVERDUE = {
    "afterok": {"dependency": "afterok:r1"},
    "afterany": {"dependency": "afterany:r1"},
    "all of, with an ended job": {"dependency": "afterany:gone,afterany:r1"},
    "singleton": {"dependency": "singleton", "name": "x"},
}


@pytest.mark.parametrize("keys", list(OVERDUE.values()), ids=list(OVERDUE))
@pytest.mark.parametrize("backfill", ["none", "conservative"])
def test_a_running_job_past_its_estimate_has_not_ended(keys: dict[str, Any], backfill: str) -> None:
    """r1 started at 0 with an estimate of 50 and at now = 100 it still runs (it is in
    running[]): a job waiting for it to end still waits (DEPENDENCY) — its estimated end
    being "now" (docs/state-file.md) says when to plan, not that it has ended."""
    b = ClusterBuilder().hosts(2, slots=1).at(100).backfill(backfill)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=50, user="alice")
    b.job("j", user="alice", requested_time=10)
    state = flow_state(b, {"j": keys}, {"r1": {"name": "x"}})
    pending(decide(state)["j"], PendReason.DEPENDENCY)


@pytest.mark.parametrize(
    ("dependency", "named"),
    [("afterok:r1", ["r1"]), ("afterany:p?afterok:r1", ["p", "r1"]), ("after:r1+10", ["r1"])],
)
def test_dependency_message_names_the_jobs(dependency: str, named: list[str]) -> None:
    """A DEPENDENCY pend says which job(s) it waits for."""
    state = flow_state(waiting_example(), {"p": {"hold": True}, "j": {"dependency": dependency}})
    message = pending(decide(state)["j"], PendReason.DEPENDENCY).info.message
    for job in named:
        assert job in message, message


def test_singleton_waits_for_a_job_started_in_the_same_session() -> None:
    """Two pending singleton jobs of one user and name: the first starts, so the second
    waits for it (one of them runs at a time); another user's job of that name runs."""
    b = ClusterBuilder().hosts(3, slots=1).at(0)
    b.job("s1", user="alice").job("s2", user="alice").job("s3", user="bob")
    single = {"dependency": "singleton", "name": "x"}
    got = decide(flow_state(b, {"s1": single, "s2": single, "s3": single}))
    assert ran(got["s1"]) == [0]
    assert "s2" in got
    pending(got["s2"], PendReason.DEPENDENCY)
    assert ran(got["s3"]) == [1]


def test_dependency_on_a_job_started_in_the_same_session_waits() -> None:
    """a is dispatched this session (its estimate is 30 s): afterok:a has not ended, and
    after:a waits too — a job dispatched in this very session has not begun yet (as a
    Slurm pass reads dependencies as they stood; the next session starts it)."""
    b = ClusterBuilder().hosts(3, slots=1).at(0)
    b.job("a", requested_time=30).job("ok").job("started")
    got = decide(
        flow_state(b, {"ok": {"dependency": "afterok:a"}, "started": {"dependency": "after:a"}})
    )
    assert ran(got["a"]) == [0]
    pending(got["ok"], PendReason.DEPENDENCY)
    pending(got["started"], PendReason.DEPENDENCY)


GATED = {
    "held": {"hold": True},
    "begin time": {"begin_time": 500},
    "dependency": {"dependency": "afterok:r1"},
}


@pytest.mark.parametrize("keys", list(GATED.values()), ids=list(GATED))
@pytest.mark.parametrize("picker", ["strict", "fcfs", "fairshare", "priority"])
def test_a_gated_head_holds_no_strict_queue(keys: dict[str, Any], picker: str) -> None:
    """A job waiting at a gate waits for no resource: under strict the jobs behind it are
    not QUEUE_BLOCKED, under every picker they run as if it were not there."""
    b = ClusterBuilder().hosts(2, slots=1).at(100).picker(picker)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=1000)
    b.job("head", submit_time=0).job("next", submit_time=1)
    got = decide(flow_state(b, {"head": keys}))
    assert outcome(got["head"]) in {"HELD", "BEGIN_TIME", "DEPENDENCY"}
    assert ran(got["next"]) == [1]


# -------------------------------------------------------------- planned (conservative)
#
# now = 0, 3 hosts of 1 slot. r1 (alice, name "x") holds h0 until 100, r2 holds h1
# until 50 (estimates); h2 is free. Every pending job's estimate is 10 s.


def planned_example(*jobs: tuple[str, int]) -> ClusterBuilder:
    b = ClusterBuilder().hosts(3, slots=1).at(0).backfill("conservative")
    b.running("r1", {"h0": 1}, start_time=0, requested_time=100, user="alice")
    b.running("r2", {"h1": 1}, start_time=0, requested_time=50)
    for job_id, tasks in jobs:
        b.job(job_id, tasks, requested_time=10, user="alice")
    return b


# keys of job j (1 task unless "tasks") -> (reason, planned start; None: no plan)
PLANNED: dict[str, tuple[dict[str, Any], PendReason, float | None]] = {
    "held: never planned": ({"hold": True}, PendReason.HELD, None),
    "held with a begin time: never planned": (
        {"hold": True, "begin_time": 20},
        PendReason.HELD,
        None,
    ),
    "begin time 20, h2 free: at 20": ({"begin_time": 20}, PendReason.BEGIN_TIME, 20),
    "begin time 20, 3 tasks: when h0 frees": (
        {"begin_time": 20, "tasks": 3},
        PendReason.BEGIN_TIME,
        100,
    ),
    "begin time 20.5: at 20.5": ({"begin_time": 20.5}, PendReason.BEGIN_TIME, 20.5),
    "begin time 200: at 200": ({"begin_time": 200}, PendReason.BEGIN_TIME, 200),
    "afterok:r1: r1's estimated end": ({"dependency": "afterok:r1"}, PendReason.DEPENDENCY, 100),
    "afternotok:r2: r2's end": ({"dependency": "afternotok:r2"}, PendReason.DEPENDENCY, 50),
    "after:r1+1: r1's start + 60": ({"dependency": "after:r1+1"}, PendReason.DEPENDENCY, 60),
    "all of r1, r2: the later end": (
        {"dependency": "afterany:r1,afterany:r2"},
        PendReason.DEPENDENCY,
        100,
    ),
    "any of r1, r2: the earlier end": (
        {"dependency": "afterany:r1?afterany:r2"},
        PendReason.DEPENDENCY,
        50,
    ),
    "dependency then begin time: the later": (
        {"dependency": "afterany:r2", "begin_time": 70},
        PendReason.DEPENDENCY,
        70,
    ),
    "begin time then dependency: the later": (
        {"dependency": "afterany:r1", "begin_time": 70},
        PendReason.DEPENDENCY,
        100,
    ),
    "singleton with r1 (alice, x): r1's end": (
        {"dependency": "singleton", "name": "x"},
        PendReason.DEPENDENCY,
        100,
    ),
}


@pytest.mark.parametrize(("keys", "reason", "start"), list(PLANNED.values()), ids=list(PLANNED))
def test_planned_no_earlier_than_the_gate_opens(
    keys: dict[str, Any], reason: PendReason, start: float | None
) -> None:
    """Under conservative backfill a gated job is planned from the instant its gate opens
    (the instant itself is a candidate), where resources allow then; a held job never."""
    keys = dict(keys)
    tasks = keys.pop("tasks", 1)
    state = flow_state(planned_example(("j", tasks)), {"j": keys}, {"r1": {"name": "x"}})
    got = pending(decide(state)["j"], reason)
    if start is None:
        assert got.plan is None
    else:
        assert planned(got) == start
        assert got.plan is not None
        assert got.plan.end == start + 10


def test_dependency_on_a_pending_job_planned_earlier() -> None:
    """3 hosts, r1 and r2 hold h0 and h1 until 100. big (2 tasks, estimate 10) cannot
    start now (h2 alone is free): planned at 100 on two hosts until 110. afterany:big
    is planned at big's planned end, 110; after:big at big's planned start, 100, on the
    third host."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).backfill("conservative")
    b.running("r1", {"h0": 1}, start_time=0, requested_time=100)
    b.running("r2", {"h1": 1}, start_time=0, requested_time=100)
    b.job("big", 2, requested_time=10)
    b.job("end", requested_time=10).job("start", requested_time=10)
    state = flow_state(
        b, {"end": {"dependency": "afterany:big"}, "start": {"dependency": "after:big"}}
    )
    got = decide(state)
    assert planned(pending(got["big"], PendReason.NOT_ENOUGH_SLOTS)) == 100
    assert planned(pending(got["end"], PendReason.DEPENDENCY)) == 110
    assert planned(pending(got["start"], PendReason.DEPENDENCY)) == 100


def test_dependency_on_a_job_started_this_session_is_planned_after_its_estimate() -> None:
    """s starts now on h2 (estimate 10): afterok:s is planned at now + 10."""
    state = flow_state(planned_example(("s", 1), ("j", 1)), {"j": {"dependency": "afterok:s"}})
    got = decide(state)
    assert ran(got["s"]) == [2]
    assert planned(pending(got["j"], PendReason.DEPENDENCY)) == 10


@pytest.mark.parametrize(
    ("dependency", "later"),
    [
        ("afterany:later", {}),  # later has no plan yet when j is decided
        ("afterany:later", {"hold": True}),  # a held job is never planned
        ("afterany:r1,afterany:later", {}),  # all of: one unknown is unknown
    ],
)
def test_dependency_on_a_pending_job_without_a_plan_has_no_plan(
    dependency: str, later: dict[str, Any]
) -> None:
    """A dependency on a pending job that has no plan (decided later, or held) pends
    DEPENDENCY with no plan: when it may start is not known this session."""
    state = flow_state(
        planned_example(("j", 1), ("later", 1)), {"j": {"dependency": dependency}, "later": later}
    )
    assert pending(decide(state)["j"], PendReason.DEPENDENCY).plan is None


def test_any_of_with_one_item_unknown_takes_the_known_one() -> None:
    """``?``: the job may start when any item holds; one item without a plan does not
    hide the other's end (r2's, 50)."""
    state = flow_state(
        planned_example(("j", 1), ("later", 1)), {"j": {"dependency": "afterany:later?afterany:r2"}}
    )
    start = planned(pending(decide(state)["j"], PendReason.DEPENDENCY))
    assert start == 50


def test_dependency_on_an_ended_job_runs_in_a_planned_session() -> None:
    """An id in no section has ended: the job runs now (on h2)."""
    state = flow_state(planned_example(("j", 1)), {"j": {"dependency": "afterok:gone"}})
    assert ran(decide(state)["j"]) == [2]


def test_begin_time_in_the_past_is_no_gate_when_planning() -> None:
    """A begin time before now opens at once: the job runs (h2 is free)."""
    state = flow_state(planned_example(("j", 1)).at(30), {"j": {"begin_time": 10}})
    assert ran(decide(state)["j"]) == [2]


# j (2 tasks, estimate 50) waits at a gate that opens at 100 (r1 holds h0 until 100; h1
# is free): planned at 100 on [h0, h1] until 150. e (1 task, estimate 1000) could start
# now on h1, running over j's plan. Only a begin time's plan is held.
HOLDS = {
    "begin time: held": ({"begin_time": 100}, PendReason.BEGIN_TIME, False),
    "dependency: holds nothing": ({"dependency": "afterok:r1"}, PendReason.DEPENDENCY, True),
    "held: holds nothing": ({"hold": True}, PendReason.HELD, True),
}


@pytest.mark.parametrize(("keys", "reason", "e_runs"), list(HOLDS.values()), ids=list(HOLDS))
def test_only_a_begin_time_plan_is_held(
    keys: dict[str, Any], reason: PendReason, e_runs: bool
) -> None:
    """A BEGIN_TIME plan is a reservation (a later job that would run over it does not
    start: RESERVED); a DEPENDENCY plan is shown and holds nothing (as Slurm's backfill
    reserves nothing for a job whose dependency is unmet), so e starts on h1 now."""
    b = ClusterBuilder().hosts(2, slots=1).at(0).backfill("conservative")
    b.running("r1", {"h0": 1}, start_time=0, requested_time=100)
    b.job("j", 2, requested_time=50).job("e", 1, requested_time=1000)
    got = decide(flow_state(b, {"j": keys}))
    j = pending(got["j"], reason)
    if reason is not PendReason.HELD:
        assert planned(j) == 100
    if e_runs:
        assert ran(got["e"]) == [1]
    else:
        pending(got["e"], PendReason.RESERVED)


def test_begin_time_plan_keeps_a_later_job_off_but_lets_a_short_one_run() -> None:
    """One host, now 0: a (begin time 100, estimate 50) is planned [100, 150) and held;
    b (estimate 200) would run over it: RESERVED; c (estimate 50) ends by 100: runs now,
    backfilled ahead of a."""
    b = ClusterBuilder().host("h0", slots=1).at(0).backfill("conservative")
    b.job("a", requested_time=50).job("b", requested_time=200).job("c", requested_time=50)
    got = decide(flow_state(b, {"a": {"begin_time": 100}}))
    assert planned(pending(got["a"], PendReason.BEGIN_TIME)) == 100
    pending(got["b"], PendReason.RESERVED)
    c = got["c"]
    assert isinstance(c, Dispatched)
    assert c.backfilled


def test_begin_time_without_an_estimate_is_planned_at_its_begin_time() -> None:
    """No estimate (no requested_time, no queue default): the plan runs for ever from the
    begin time, so nothing runs after it on its hosts — but a job ending before it may."""
    b = ClusterBuilder().host("h0", slots=1).at(0).backfill("conservative")
    b.job("a").job("c", requested_time=50)
    got = decide(flow_state(b, {"a": {"begin_time": 100}}))
    a = pending(got["a"], PendReason.BEGIN_TIME)
    assert planned(a) == 100
    assert a.plan is not None
    assert math.isinf(a.plan.end)
    assert isinstance(got["c"], Dispatched)


# --------------------------------------------------------------------------- properties


_ASKS = ("tasks", "min_tasks", "max_tasks", "resreq", "project")  # what a job asks for


@st.composite
def gated_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random state document, and the same with one more job that waits at a gate (a
    hold, a begin time to come, or an after* dependency on a running job or on a pending
    job of the state) inserted anywhere in jobs[]."""
    scenario = draw(scenarios(max_jobs=12))
    doc = scenario.builder().to_dict()
    doc["now"] = 0
    doc["picker"] = draw(st.sampled_from(["fcfs", "strict", "fairshare", "priority"]))
    jobs = doc.setdefault("jobs", [])
    for job in jobs:
        job["priority"] = draw(st.sampled_from([None, 0, 1, 5]))
        if job["priority"] is None:
            del job["priority"]
    gates: list[dict[str, Any]] = [{"hold": True}, {"begin_time": 1e6}]
    for kind in ("afterok", "afterany", "afternotok"):
        gates += [{"dependency": f"{kind}:{r['id']}"} for r in doc.get("running", [])]
        gates += [{"dependency": f"{kind}:{j['id']}"} for j in jobs]
    gate = draw(st.sampled_from(gates))
    asks = [{"tasks": n} for n in range(1, 5)]
    asks += [{k: v for k, v in j.items() if k in _ASKS} for j in jobs]
    extra = {
        **draw(st.sampled_from(asks)),
        "id": "gated",
        "user": draw(st.sampled_from(["u0", "u1", "alice"])),
        "queue": draw(st.sampled_from(["normal", "high"])),
        "priority": draw(st.sampled_from([0, 10])),
        **gate,
    }
    with_gated = {**doc, "jobs": list(jobs)}
    with_gated["jobs"].insert(draw(st.integers(0, len(jobs))), extra)
    return doc, with_gated


@given(gated_cases(), st.booleans())
def test_a_gated_job_changes_no_other_decision(
    case: tuple[dict[str, Any], dict[str, Any]], threads: bool
) -> None:
    """A job stopped at a gate charges nothing and holds no queue: every other job's
    decision (outcome, hosts, reason and message), and their order, is the same with and
    without it, under every picker (sessions that do not plan)."""
    without, with_gated = case
    before = Session(state_from_dict(without, "<without>")).run(threads=threads).decisions
    after = Session(state_from_dict(with_gated, "<with>")).run(threads=threads).decisions
    gated = [d for d in after if d.job == "gated"]
    assert len(gated) == 1
    assert isinstance(gated[0], Pending)
    assert gated[0].info.reason in {PendReason.HELD, PendReason.BEGIN_TIME, PendReason.DEPENDENCY}
    assert [d for d in after if d.job != "gated"] == list(before)


DEP_KINDS = ["after", "afterok", "afterany"]


@st.composite
def gated_states(draw: st.DrawFn) -> ClusterState:
    """A random state whose jobs may be held, begin later, depend on running or pending
    jobs (any kind, ``,`` or ``?``), be singletons, or be array records (with a limit),
    under a random picker and backfill policy; estimates on every job."""
    scenario = draw(scenarios(max_jobs=8))
    doc = scenario.builder().to_dict()
    doc["now"] = 0
    doc["picker"] = draw(st.sampled_from(["fcfs", "strict", "fairshare", "priority"]))
    doc["backfill"] = draw(st.sampled_from(["none", "easy", "conservative"]))
    ids = [str(e["id"]) for e in (*doc.get("running", []), *doc.get("jobs", []))]
    for run in doc.get("running", []):
        run["requested_time"] = draw(st.sampled_from([10, 40, 100]))
        run["name"] = draw(st.sampled_from(["x", "y"]))
        run["user"] = draw(st.sampled_from(["u0", "u1"]))
    for job in doc.get("jobs", []):
        job["requested_time"] = draw(st.sampled_from([5, 30, 60]))
        job["user"] = draw(st.sampled_from(["u0", "u1"]))
        job["name"] = draw(st.sampled_from(["x", "y"]))
        job["priority"] = draw(st.integers(0, 3))
        what = draw(st.sampled_from(["none", "hold", "begin", "dep", "single", "array"]))
        if what == "hold":
            job["hold"] = True
        elif what == "begin":
            job["begin_time"] = draw(st.sampled_from([-5, 20, 50]))
        elif what == "dep" and ids:
            kinds = draw(st.lists(st.sampled_from(DEP_KINDS), min_size=1, max_size=2))
            items = [f"{k}:{draw(st.sampled_from(ids))}" for k in kinds]
            job["dependency"] = draw(st.sampled_from([",", "?"])).join(items)
        elif what == "single":
            job["dependency"] = "singleton"
        elif what == "array":
            job["array"] = draw(st.sampled_from(["1-3", "1-4%2", "0-6:3", "5"]))
    return state_from_dict(acyclic(doc), "<gated>")


@given(gated_states())
def test_threaded_sessions_decide_as_synchronous_ones(state: ClusterState) -> None:
    """The picker/allocator thread pair gives the same decisions, in the same order, as
    the synchronous session, with gates and arrays (planned sessions included)."""
    sync = Session(state).run().decisions
    threaded = Session(state).run(threads=True).decisions
    assert threaded == sync


SUBMITTED = {
    "held": ({"hold": True}, PendReason.HELD),
    "begin time": ({"begin_time": 500.0}, PendReason.BEGIN_TIME),
    "dependency": ({"dependency": parse_dependency("afterok:r1")}, PendReason.DEPENDENCY),
}


@pytest.mark.parametrize(("keys", "reason"), list(SUBMITTED.values()), ids=list(SUBMITTED))
def test_a_submitted_job_keeps_its_gate(keys: dict[str, Any], reason: PendReason) -> None:
    """JobSubmitted of a held job, one with a begin time or a dependency: the core keeps
    those fields, so the next session pends the job at its gate (h1 is free)."""
    b = ClusterBuilder().hosts(2, slots=1).at(100)
    b.running("r1", {"h0": 1}, start_time=0, requested_time=1000)
    core = SchedulerCore(b.build())
    job = PendingJob("j", "alice", "normal", "default", 1, 1, "", 0.0, None, 0)
    core.apply(JobSubmitted(replace(job, **keys)))
    kept = core.pending("j")
    assert kept is not None
    for key, value in keys.items():
        assert getattr(kept, key) == value, key
    pending(by_id(core.run_session().decisions)["j"], reason)


def _outcome_of(d: Decision) -> tuple[str, object]:
    return (d.job, d.allocation if isinstance(d, Dispatched) else d.info.reason)


@given(gated_states())
def test_planning_only_what_is_read_changes_no_decision(state: ClusterState) -> None:
    """``plans_for=()`` (nobody reads a plan) leaves out plans that cannot keep a later
    job out; with gates (a begin time's plan is held, a dependency's is not) every job
    is still dispatched where, or pends for the reason, it is with every plan made."""
    full = Session(state).run().decisions
    few = Session(state).run(plans_for=()).decisions
    assert [_outcome_of(d) for d in few] == [_outcome_of(d) for d in full]


def test_a_dependency_on_an_entry_lenient_left_out_never_holds(tmp_path: Any) -> None:
    """docs/state-file.md: an entry --lenient leaves out still claims its id. A job
    waiting afterok on it waits for ever, saying why (it was dispatched: the id counted as
    a job that had ended), in the library's session and in xce schedule's core."""
    from xce.core import SchedulerCore, Session

    state, invalid = lenient_state(
        tmp_path,
        "now: 1000\nhosts: [{name: a, slots: 4}]\njobs:\n"
        "  - {id: j1, tasks: two, submit_time: 900}\n"
        "  - {id: j3, tasks: 2, dependency: 'afterok:j1', submit_time: 900}\n"
        "  - {id: j5, tasks: 1, dependency: 'afterok:gone', submit_time: 900}\n",
    )
    assert [i.id for i in invalid] == ["j1"]
    for result in (Session(state).run(), SchedulerCore(state).run_session()):
        got = {d.job: d for d in result.decisions}
        j3 = got["j3"]
        assert isinstance(j3, Pending)
        assert j3.info.reason is PendReason.DEPENDENCY
        assert "j1 is an INVALID entry, left out: it never runs" in j3.info.message
        assert isinstance(got["j5"], Dispatched)  # an id no entry has: ended, as before


def test_a_snapshot_keeps_the_entries_left_out(tmp_path: Any) -> None:
    """A lenient load's INVALID ids are written as left_out by a snapshot (of the state,
    and of xce schedule's core), so a reload still keeps a job depending on one waiting
    (before, the id was gone, and counted as a job that had ended: j3 was dispatched)."""
    from xce.core.snapshot import state_to_dict

    state, _ = lenient_state(
        tmp_path,
        "hosts: [{name: a, slots: 4}]\njobs:\n"
        "  - {id: j1, tasks: two}\n"
        "  - {id: j3, tasks: 2, dependency: 'afterok:j1'}\n",
    )
    for saved in (state_to_dict(state), state_to_dict(SchedulerCore(state).state)):
        assert saved["left_out"] == ["j1"]
        again = state_from_dict(saved, "<snapshot>")
        (j3,) = Session(again).run().decisions
        assert isinstance(j3, Pending)
        assert j3.info.reason is PendReason.DEPENDENCY
        assert "j1 is an INVALID entry" in j3.info.message


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"left_out": ["j1"], "jobs": [{"id": "j1"}]}, "jobs[0].id"),
        ({"left_out": ["j1", "j1"]}, "left_out[1]"),
        ({"left_out": [""]}, "left_out[0]"),
    ],
)
def test_left_out_ids_are_no_jobs_of_the_state(doc: dict[str, Any], where: str) -> None:
    from xce.errors import StateError

    with pytest.raises(StateError, match=re.escape(where)):
        state_from_dict({"hosts": [{"name": "a", "slots": 1}], **doc}, "<s>")


def test_an_entry_left_out_as_a_duplicate_leaves_its_id_to_the_job_that_has_it(
    tmp_path: Any,
) -> None:
    """Found by the state fuzzer: a job entry with a running job's id is INVALID (a
    duplicate), but the id is the running job's: not left out, so a snapshot loads back
    and a job waiting for it waits for the running job, not for ever."""
    from xce.core.snapshot import state_to_dict

    state, invalid = lenient_state(
        tmp_path,
        "hosts: [{name: a, slots: 4}]\n"
        "running: [{id: r1, alloc: [{host: a, slots: 1}], requested_time: 50}]\n"
        "jobs:\n"
        "  - {id: r1, tasks: 1}\n"
        "  - {id: j3, tasks: 1, dependency: 'afterok:r1'}\n",
    )
    assert [i.id for i in invalid] == ["r1"]
    assert state.left_out == frozenset()
    again = state_from_dict(state_to_dict(state), "<snapshot>")
    (j3,) = Session(again).run().decisions
    assert isinstance(j3, Pending)
    assert "INVALID" not in j3.info.message


def lenient_state(tmp_path: Any, text: str) -> Any:
    """``text`` written as a state file and loaded leniently: (state, invalid entries)."""
    from xce.cluster import load_state

    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return load_state(path, lenient=True)
