"""Job arrays (issue 25 contract): a pending record ``jobs[].array`` holds its remaining
task indices; each task ``REC_INDEX`` asks what the record asks and starts as a job of
its own; the first task that cannot start ends the record's turn with one pending
decision for the record; ``%N`` counts the tasks that run (``running[].array_job``); the
core takes a started task out of its record and drops the record with its last task.
Hosts are ``h0``, ``h1``, ... so a host's number is its index in allocations.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from flow_states import acyclic, by_id, flow_state, pending, planned, ran
from strategies import scenarios
from xce.alloc import AllocOptions, Decision, Dispatched, PendReason
from xce.cluster import ClusterState, PendingJob, state_from_dict
from xce.cluster.jobflow import parse_array
from xce.core import JobFinished, JobStarted, JobSubmitted, SchedulerCore, Session, state_to_dict
from xce.errors import EventError


def decisions(state: ClusterState, **kwargs: Any) -> tuple[Decision, ...]:
    return Session(state, **kwargs).run().decisions


def outcomes(got: tuple[Decision, ...]) -> list[tuple[str, str]]:
    """(job, "run" or its reason) in decision order."""
    return [(d.job, "run" if isinstance(d, Dispatched) else d.info.reason.value) for d in got]


# --------------------------------------------------------------- one session, by hand
# hosts of 1 slot, now 0; record A asks 1 task; after is a 1-task job behind it
CASES: dict[str, tuple[int, dict[str, Any], list[tuple[str, str]]]] = {
    "tasks until the hosts are full": (
        2,
        {"array": "1-3"},
        [("A_1", "run"), ("A_2", "run"), ("A", "NOT_ENOUGH_SLOTS"), ("after", "NOT_ENOUGH_SLOTS")],
    ),
    "every task runs": (
        5,
        {"array": "1-3"},
        [("A_1", "run"), ("A_2", "run"), ("A_3", "run"), ("after", "run")],
    ),
    "steps and single indices, in index order": (
        5,
        {"array": "7,0-6:3"},
        [("A_0", "run"), ("A_3", "run"), ("A_6", "run"), ("A_7", "run"), ("after", "run")],
    ),
    "%2 lets two run": (
        5,
        {"array": "1-5%2"},
        [("A_1", "run"), ("A_2", "run"), ("A", "ARRAY_LIMIT"), ("after", "run")],
    ),
    "held record": (3, {"array": "1-3", "hold": True}, [("A", "HELD"), ("after", "run")]),
    "record with a begin time to come": (
        3,
        {"array": "1-3", "begin_time": 50},
        [("A", "BEGIN_TIME"), ("after", "run")],
    ),
    "record waiting for a running job": (
        3,
        {"array": "1-3", "dependency": "afterok:r"},
        [("A", "DEPENDENCY"), ("after", "run")],
    ),
    "record depending on an ended job": (
        3,
        {"array": "1-2", "dependency": "afterok:gone"},
        [("A_1", "run"), ("A_2", "run"), ("after", "run")],
    ),
}


@pytest.mark.parametrize(("free", "keys", "want"), list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("threads", [False, True])
def test_array_record_in_a_session(
    free: int, keys: dict[str, Any], want: list[tuple[str, str]], threads: bool
) -> None:
    """Tasks start one by one in index order as jobs REC_INDEX; the first that cannot (or
    the %N limit, or a gate of the record) gives ONE pending decision, for the record;
    a record at a gate starts no task. The same with threads."""
    b = ClusterBuilder().hosts(free + 1, slots=1).at(0)
    b.running("r", {f"h{free}": 1}, start_time=0, requested_time=100)  # the last host
    b.job("A", 1).job("after", 1)
    got = Session(flow_state(b, {"A": keys})).run(threads=threads).decisions
    assert outcomes(got) == want


def test_pending_record_decision_names_what_is_left() -> None:
    """The record's pending decision has the record's id (no task id is pending) and its
    message says how many tasks wait and which (A_[3-5])."""
    b = ClusterBuilder().hosts(2, slots=1).at(0).job("A", 1)
    got = by_id(decisions(flow_state(b, {"A": {"array": "1-5"}})))
    assert set(got) == {"A_1", "A_2", "A"}
    message = pending(got["A"], PendReason.NOT_ENOUGH_SLOTS).info.message
    assert "3 task" in message
    assert "A_[3-5]" in message


def test_limit_counts_running_tasks() -> None:
    """``%3`` with two tasks of A running (running[].array_job) lets one more start; a
    task of another array (B) does not count; then A pends ARRAY_LIMIT saying %3."""
    b = ClusterBuilder().hosts(6, slots=1).at(0)
    b.running("A_1", {"h0": 1}, requested_time=100)
    b.running("A_2", {"h1": 1}, requested_time=100)
    b.running("B_1", {"h2": 1}, requested_time=100)
    b.job("A", 1)
    state = flow_state(
        b,
        {"A": {"array": "3-10%3"}},
        {"A_1": {"array_job": "A"}, "A_2": {"array_job": "A"}, "B_1": {"array_job": "B"}},
    )
    got = decisions(state)
    assert outcomes(got) == [("A_3", "run"), ("A", "ARRAY_LIMIT")]
    assert ran(got[0]) == [3]
    assert "%3" in pending(got[1]).info.message


def test_limit_reached_by_running_tasks_starts_none() -> None:
    """Two running tasks and ``%2``: no task starts; the record pends ARRAY_LIMIT."""
    b = ClusterBuilder().hosts(4, slots=1).at(0)
    b.running("A_1", {"h0": 1}).running("A_2", {"h1": 1})
    b.job("A", 1)
    running = {"A_1": {"array_job": "A"}, "A_2": {"array_job": "A"}}
    state = flow_state(b, {"A": {"array": "3-4%2"}}, running)
    assert outcomes(decisions(state)) == [("A", "ARRAY_LIMIT")]


def test_a_huge_record_is_not_expanded() -> None:
    """``1-100000`` on 3 free hosts: three tasks start, then one pending decision for the
    record (the session tries 4 tasks, not 100,000)."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).job("A", 1)
    got = decisions(flow_state(b, {"A": {"array": "1-100000"}}))
    assert outcomes(got) == [
        ("A_1", "run"),
        ("A_2", "run"),
        ("A_3", "run"),
        ("A", "NOT_ENOUGH_SLOTS"),
    ]
    assert "99997 task" in pending(got[-1]).info.message


@pytest.mark.parametrize(
    ("keys", "blocked"),
    [
        ({"array": "1-3"}, True),
        ({"array": "1-3%1"}, False),
        ({"array": "1-3", "hold": True}, False),
    ],
    ids=["waits for resources: holds", "at its limit: holds nobody", "held: holds nobody"],
)
def test_record_in_a_strict_queue(keys: dict[str, Any], blocked: bool) -> None:
    """Under strict, a record whose next task waits for resources holds the queue (later
    jobs QUEUE_BLOCKED) as any job would; one at its %N limit or held holds nobody."""
    b = ClusterBuilder().host("h0", slots=3).at(0).picker("strict")
    b.running("A_0", {"h0": 1}, requested_time=100)
    b.job("A", 2).job("small", 1)
    got = by_id(decisions(flow_state(b, {"A": keys}, {"A_0": {"array_job": "A"}})))
    if blocked:
        assert ran(got["A_1"]) == [0]
        pending(got["A"], PendReason.NOT_ENOUGH_SLOTS)
        pending(got["small"], PendReason.QUEUE_BLOCKED)
    else:
        assert "A_1" not in got
        assert ran(got["small"]) == [0]


# ------------------------------------------------------------- planned (conservative)


def test_limit_plan_is_the_earliest_task_end_and_holds_nothing() -> None:
    """A_1 runs until 50 and A_2 until 100 (estimates), ``%2``: A pends ARRAY_LIMIT,
    planned when a task ends (50); that plan holds nothing, so e (estimate 1000) starts
    now on the one free host although it runs over it."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).backfill("conservative")
    b.running("A_1", {"h0": 1}, start_time=0, requested_time=50)
    b.running("A_2", {"h1": 1}, start_time=0, requested_time=100)
    b.job("A", 1, requested_time=10).job("e", 1, requested_time=1000)
    running = {"A_1": {"array_job": "A"}, "A_2": {"array_job": "A"}}
    got = by_id(decisions(flow_state(b, {"A": {"array": "3-9%2"}}, running)))
    assert planned(pending(got["A"], PendReason.ARRAY_LIMIT)) >= 50
    assert ran(got["e"]) == [2]


def test_record_plan_from_its_begin_time() -> None:
    """A record with a begin time (50) is planned from it, as a job would be."""
    b = ClusterBuilder().hosts(2, slots=1).at(0).backfill("conservative")
    b.job("A", 1, requested_time=10)
    got = by_id(decisions(flow_state(b, {"A": {"array": "1-3", "begin_time": 50}})))
    assert planned(pending(got["A"], PendReason.BEGIN_TIME)) == 50


# ----------------------------------------------------------------- dependencies on arrays


@pytest.mark.parametrize("kind", ["afterok", "afterany", "after"])
def test_dependency_on_a_task_the_record_still_holds_waits(kind: str) -> None:
    """Task A_2 has not started (record A, 4 tasks each, cannot start on 2 hosts, still
    holds index 2): it is a job of the state, not an ended one, so a job depending on it
    waits (DEPENDENCY) instead of running."""
    b = ClusterBuilder().hosts(2, slots=1).at(0).job("A", 2).job("j", 1)
    b.running("r", {"h0": 1}, requested_time=100)
    state = flow_state(b, {"A": {"array": "1-3"}, "j": {"dependency": f"{kind}:A_2"}})
    got = by_id(decisions(state))
    pending(got["A"], PendReason.NOT_ENOUGH_SLOTS)
    pending(got["j"], PendReason.DEPENDENCY)


def test_dependency_on_a_running_task_waits_for_it() -> None:
    """afterok:A_1 where A_1 runs (running[]): waits; afterok:A_9 where A no longer holds
    9 and nothing runs as A_9: that task has ended."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).job("A", 5).job("j1").job("j9")
    b.running("A_1", {"h0": 1}, requested_time=100)
    state = flow_state(
        b,
        {
            "A": {"array": "2-3"},
            "j1": {"dependency": "afterok:A_1"},
            "j9": {"dependency": "afterok:A_9"},
        },
        {"A_1": {"array_job": "A"}},
    )
    got = by_id(decisions(state))
    pending(got["j1"], PendReason.DEPENDENCY)
    assert isinstance(got["j9"], Dispatched)


def test_dependency_on_an_array_whose_tasks_all_run() -> None:
    """Record A is gone (its last tasks run, running[].array_job A): afterok:A waits for
    them; under conservative it is planned at their last end (100)."""
    b = ClusterBuilder().hosts(3, slots=1).at(0).backfill("conservative")
    b.running("A_1", {"h0": 1}, start_time=0, requested_time=50)
    b.running("A_2", {"h1": 1}, start_time=0, requested_time=100)
    b.job("j", 1, requested_time=10)
    running = {"A_1": {"array_job": "A"}, "A_2": {"array_job": "A"}}
    got = by_id(decisions(flow_state(b, {"j": {"dependency": "afterok:A"}}, running)))
    assert planned(pending(got["j"], PendReason.DEPENDENCY)) == 100


# ------------------------------------------------------------------- SchedulerCore


def _core_example(array: str = "1-5") -> SchedulerCore:
    b = ClusterBuilder().hosts(3, slots=1).at(0).job("A", 1, user="alice", requested_time=60)
    return SchedulerCore(flow_state(b, {"A": {"array": array, "name": "sweep"}}))


def test_core_takes_started_tasks_out_of_their_record() -> None:
    """Apply the session's dispatched tasks: the snapshot holds the record with the
    indices left (its limit kept) and the tasks as running jobs of their own, each with
    array_job, the record's user and name; it loads again."""
    core = _core_example("1-5%4")
    result = core.run_session()
    assert [d.job for d in result.dispatched] == ["A_1", "A_2", "A_3"]
    core.apply(*(JobStarted(d.job, d.allocation, time=0) for d in result.dispatched))
    doc = state_to_dict(core.state)
    assert [(str(j["id"]), j["array"]) for j in doc["jobs"]] == [("A", "4-5%4")]
    running = {r["id"]: r for r in doc["running"]}
    assert set(running) == {"A_1", "A_2", "A_3"}
    for r in running.values():
        assert (r["array_job"], r["user"], r["name"]) == ("A", "alice", "sweep")
    again = state_from_dict(doc, "<snapshot>")
    assert [len(j.array or ()) for j in again.jobs] == [2]
    assert core.pending("A") is not None
    assert core.running("A_2") is not None


def test_core_drops_the_record_with_its_last_task() -> None:
    """Tasks 1-3 start in a first session, 4-5 in a second once hosts are free: then the
    record is gone from the pending jobs and from the snapshot."""
    core = _core_example("1-5")
    first = core.run_session()
    core.apply(*(JobStarted(d.job, d.allocation) for d in first.dispatched))
    free_first = ["A_1", "A_2"]
    core.apply(*(JobFinished(j) for j in free_first))
    second = core.run_session()
    assert [d.job for d in second.dispatched] == ["A_4", "A_5"]
    core.apply(*(JobStarted(d.job, d.allocation) for d in second.dispatched))
    assert core.pending("A") is None
    assert core.pending_count == 0
    doc = state_to_dict(core.state)
    assert not doc.get("jobs")
    assert {r["id"] for r in doc["running"]} == {"A_3", "A_4", "A_5"}


def test_core_starts_a_task_out_of_index_order() -> None:
    """JobStarted may start any task the record holds (a driver's choice): A_4 first
    leaves 1-3,5."""
    core = _core_example("1-5")
    alloc = core.run_session().dispatched[0].allocation
    core.apply(JobStarted("A_4", alloc))
    assert state_to_dict(core.state)["jobs"][0]["array"] == "1-3,5"


@pytest.mark.parametrize(
    "job_id",
    ["A_6", "A_0", "A_x", "A_", "B_1"],
    ids=["past the end", "before", "not a number", "no index", "no record"],
)
def test_core_refuses_a_task_the_record_does_not_hold(job_id: str) -> None:
    """Starting a task that is not one of the record's is refused and changes nothing."""
    core = _core_example("1-5")
    alloc = core.run_session().dispatched[0].allocation
    before = state_to_dict(core.state)
    with pytest.raises(EventError):
        core.apply(JobStarted(job_id, alloc))
    assert state_to_dict(core.state) == before


def test_core_refuses_starting_a_task_twice() -> None:
    """A_1 started is no longer in the record: starting it again is refused."""
    core = _core_example("1-5")
    result = core.run_session()
    core.apply(JobStarted("A_1", result.dispatched[0].allocation))
    before = state_to_dict(core.state)
    with pytest.raises(EventError):
        core.apply(JobStarted("A_1", result.dispatched[1].allocation))
    assert state_to_dict(core.state) == before


def test_core_session_counts_started_tasks_against_the_limit() -> None:
    """After the first session's tasks start (``%2``), the next session starts none: the
    running tasks are counted by their array_job."""
    core = _core_example("1-5%2")
    first = core.run_session()
    assert [d.job for d in first.dispatched] == ["A_1", "A_2"]
    core.apply(*(JobStarted(d.job, d.allocation) for d in first.dispatched))
    second = core.run_session()
    assert outcomes(second.decisions) == [("A", "ARRAY_LIMIT")]


# --------------------------------------------------------------------------- properties


@st.composite
def array_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """A random state document with an array record of n tasks (no limit) inserted among
    its jobs, and the same with n separate jobs in its place asking what it asks (ids
    the task ids), under fcfs or strict."""
    scenario = draw(scenarios(max_jobs=10))
    doc = scenario.builder().to_dict()
    doc["picker"] = draw(st.sampled_from(["fcfs", "strict"]))
    jobs = doc.setdefault("jobs", [])
    asks = [{"tasks": t} for t in (1, 2, 3)]
    asks += [{k: v for k, v in j.items() if k in _ASKS} for j in jobs]
    ask = draw(st.sampled_from(asks))
    who = {
        "user": draw(st.sampled_from(["u0", "u1", "alice"])),
        "queue": draw(st.sampled_from(["normal", "high"])),
    }
    first = draw(st.integers(0, 3))
    step = draw(st.integers(1, 3))
    n = draw(st.integers(1, 6))
    text = f"{first}-{first + step * (n - 1)}:{step}" if n > 1 else str(first)
    ids = [f"arr_{first + step * i}" for i in range(n)]
    at = draw(st.integers(0, len(jobs)))
    record = {**ask, **who, "id": "arr", "array": text}
    separate = [{**ask, **who, "id": i} for i in ids]
    as_array = {**doc, "jobs": [*jobs[:at], record, *jobs[at:]]}
    as_jobs = {**doc, "jobs": [*jobs[:at], *separate, *jobs[at:]]}
    return as_array, as_jobs, ids


_ASKS = ("tasks", "min_tasks", "max_tasks", "resreq", "project")


def _as_record(d: Decision) -> Decision:
    """A decision whose message names a separate task job (waiting behind job arr_3) as
    it names the record that stands for it (waiting behind job arr)."""
    if isinstance(d, Dispatched):
        return d
    return replace(d, info=replace(d.info, message=re.sub(r"\barr_\d+\b", "arr", d.info.message)))


@given(array_cases())
def test_a_record_dispatches_as_its_tasks_as_separate_jobs_would(
    case: tuple[dict[str, Any], dict[str, Any], list[str]],
) -> None:
    """n tasks with no limit start exactly where n separate jobs asking the same, in the
    record's place, would (same allocations, same order), every other job's decision is
    the same, and the record pends (once) for the reason the first separate job that
    could not start pends."""
    as_array, as_jobs, ids = case
    got = Session(state_from_dict(as_array, "<array>")).run().decisions
    want = Session(state_from_dict(as_jobs, "<jobs>")).run().decisions
    tasks = set(ids)
    others = [_as_record(d) for d in want if d.job not in tasks]
    assert [d for d in got if d.job not in tasks and d.job != "arr"] == others
    started = [d for d in want if d.job in tasks and isinstance(d, Dispatched)]
    assert [d for d in got if d.job in tasks] == started
    record = [d for d in got if d.job == "arr"]
    if len(started) == len(ids):
        assert record == []
    else:
        first_left = next(d for d in want if d.job in tasks and not isinstance(d, Dispatched))
        assert len(record) == 1
        assert pending(record[0]).info.reason is pending(first_left).info.reason


@st.composite
def flow_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A random state document at now 0 whose jobs (estimates on all) may be array
    records (maybe with a limit and running tasks), held, begin later or depend on other
    jobs, under a random picker and backfill policy."""
    scenario = draw(scenarios(max_jobs=8))
    doc = scenario.builder().to_dict()
    doc["now"] = 0
    doc["picker"] = draw(st.sampled_from(["fcfs", "strict", "priority"]))
    doc["backfill"] = draw(st.sampled_from(["none", "easy", "conservative"]))
    jobs = doc.get("jobs", [])
    running = doc.get("running", [])
    ids = [str(e["id"]) for e in (*running, *jobs)]
    for run in running:
        run["requested_time"] = draw(st.sampled_from([10, 40, 100]))
    for job in jobs:
        job["requested_time"] = draw(st.sampled_from([5, 30, 60]))
        what = draw(st.sampled_from(["none", "array", "limited", "hold", "begin", "dep"]))
        if what == "array":
            job["array"] = draw(st.sampled_from(["1-4", "0-8:4", "3"]))
        elif what == "limited":
            job["array"] = "1-6%2"
            if running:  # one running job is a task of this record
                run = draw(st.sampled_from(running))
                if "array_job" not in run:
                    run["array_job"] = str(job["id"])
        elif what == "hold":
            job["hold"] = True
        elif what == "begin":
            job["begin_time"] = draw(st.sampled_from([20, 50]))
        elif what == "dep":
            job["dependency"] = f"afterany:{draw(st.sampled_from(ids))}"
    return acyclic(doc)


@given(flow_docs(), st.integers(1, 3))
def test_core_sessions_after_starts_decide_as_fresh_sessions(
    doc: dict[str, Any], rounds: int
) -> None:
    """Run a core session, start its dispatched jobs (array tasks included), repeat: each
    session decides as a fresh session over the core's snapshot does (what the core
    keeps between sessions — records shrunk, tasks running with array_job, a repeated
    plan — is what the state says), and the snapshot always loads."""
    core = SchedulerCore(state_from_dict(doc, "<doc>"))
    for _ in range(rounds):
        snapshot = state_from_dict(state_to_dict(core.state), "<snapshot>")
        result = core.run_session()
        assert result.decisions == Session(snapshot).run().decisions
        core.apply(*(JobStarted(d.job, d.allocation) for d in result.dispatched))
        if not result.dispatched:
            break


@pytest.mark.parametrize(
    ("tasks_running", "record", "want"),
    [
        (False, "2-3", "DEPENDENCY"),  # the record still holds tasks
        (True, None, "DEPENDENCY"),  # the record is gone, a task runs
        (True, "2-3", "DEPENDENCY"),
        (False, None, "run"),  # nothing of array A is left: it has ended
    ],
)
def test_dependency_on_every_task_of_an_array(
    tasks_running: bool, record: str | None, want: str
) -> None:
    """``afterok:A_*`` (Slurm's every task of array A) waits while the record holds a task
    or a task of A runs; with nothing of A left in the state it is met."""
    b = ClusterBuilder().hosts(3, slots=1).at(0)
    running: dict[str, dict[str, Any]] = {}
    if tasks_running:
        b.running("A_1", {"h0": 1}, requested_time=100)
        running["A_1"] = {"array_job": "A"}
    jobs: dict[str, dict[str, Any]] = {"j": {"dependency": "afterok:A_*"}}
    if record is not None:
        b.job("A", 9)  # never fits: its tasks stay in the record
        jobs["A"] = {"array": record}
    b.job("j", 1)
    got = by_id(decisions(flow_state(b, jobs, running)))
    assert ("run" if isinstance(got["j"], Dispatched) else got["j"].info.reason.value) == want


def test_fairshare_interleaves_a_record_with_other_users() -> None:
    """Under fairshare each task is a job of the record's user: once u1's first task runs
    u1's dynamic priority (1 / (1 + 1 slot)) is below u2's (1), so u2's job goes next —
    as with three separate jobs of u1. A record must not take every slot for its user in
    one turn."""
    b = ClusterBuilder().hosts(3, slots=1).at(1).picker("fairshare")
    b.job("A", 1, user="u1", submit_time=0).job("j", 1, user="u2", submit_time=1)
    as_array = outcomes(decisions(flow_state(b, {"A": {"array": "1-3"}})))
    b = ClusterBuilder().hosts(3, slots=1).at(1).picker("fairshare")
    for task in ("A_1", "A_2", "A_3"):
        b.job(task, 1, user="u1", submit_time=0)
    b.job("j", 1, user="u2", submit_time=1)
    separate = outcomes(decisions(b.build()))
    assert separate == [("A_1", "run"), ("j", "run"), ("A_2", "run"), ("A_3", "NOT_ENOUGH_SLOTS")]
    assert as_array == [("A_1", "run"), ("j", "run"), ("A_2", "run"), ("A", "NOT_ENOUGH_SLOTS")]


def test_core_submission_keeps_a_record() -> None:
    """JobSubmitted of an array record (PendingJob.array): the core keeps the record, so
    the next session starts its tasks as A_1, A_2 (not one job A)."""
    core = SchedulerCore(ClusterBuilder().hosts(2, slots=1).at(0).build())
    job = PendingJob("A", "alice", "normal", "default", 1, 1, "", 0.0, None, 0)
    core.apply(JobSubmitted(replace(job, array=parse_array("1-5%2"), name="sweep")))
    kept = core.pending("A")
    assert kept is not None
    assert kept.array == parse_array("1-5%2")
    assert kept.name == "sweep"
    assert [d.job for d in core.run_session().dispatched] == ["A_1", "A_2"]


@given(flow_docs())
def test_the_task_bound_changes_no_decision(doc: dict[str, Any]) -> None:
    """The session makes only as many of a record's tasks jobs as could start (free
    slots over the fewest a task wants) plus one: an exact bound behind the allocator's
    shortcuts switch. With it off every task is a job, and every decision — records,
    gates, plans under every policy — is the same; the random cases reach the bound
    (records longer than the cluster's free slots allow)."""
    state = state_from_dict(doc, "<doc>")
    on = Session(state).run().decisions
    off = Session(state, options=AllocOptions(shortcuts=False)).run().decisions
    assert on == off


def test_the_task_bound_is_reached() -> None:
    """A record of 50 one-slot tasks on 4 free slots: 5 tasks become jobs, not 50 (the
    cases of the property above include such records)."""
    doc = {"hosts": [{"name": "h", "slots": 4}], "jobs": [{"id": "A", "array": "1-50"}]}
    state = state_from_dict(doc, "<doc>")
    session = Session(state)
    decisions = session.run().decisions
    assert [d.job for d in decisions] == ["A_1", "A_2", "A_3", "A_4", "A"]
    assert pending(decisions[-1]).info.message.startswith("46 task(s) A_[5-50] wait")
