"""The scheduling core's events (issue 4, "Core / driver split"): each event kind changes
the state as documented, a refused event raises EventError and changes nothing, a
session changes nothing, and a driver loop (session -> JobStarted -> JobFinished ->
session) never over-allocates."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from strategies import Scenario, scenarios
from xce.alloc import Claim, ClaimRun, Dispatched, JobAllocation, Pending, PendReason
from xce.cluster import ClusterState, HostStatus, Limit, PendingJob, Queue, QueueEntry
from xce.cluster.jobflow import parse_array, parse_dependency
from xce.core import (
    Event,
    HostAdded,
    HostChanged,
    JobFinished,
    JobKilled,
    JobStarted,
    JobSubmitted,
    LimitsChanged,
    QueuesChanged,
    SchedulerCore,
    SessionResult,
    SharedChanged,
    state_to_dict,
)
from xce.core.core import _numbered
from xce.errors import EventError

_EPS = 1e-6


def _cluster() -> ClusterState:
    """h1 (4 slots, 1000 mem) holds r1 (2 slots, 200 mem, 1 lic); h2 (2 slots) is idle."""
    return (
        ClusterBuilder()
        .host("h1", 4, mem=1000, type="A", fast=True)
        .host("h2", 2, mem=500, type="B", fast=False)
        .shared("lic", 3)
        .queue("normal", 30)
        .queue("high", 50)
        .running("r1", on={"h1": 2}, rusage={"mem": 100}, shared={"lic": 1}, user="bob")
        .job("j1", 2, resreq="rusage[mem=100:lic=1]", user="alice")
        .job("j2", 1, user="carol", queue="high")
        .build()
    )


def _job(
    job_id: str,
    tasks: int = 1,
    resreq: str = "",
    *,
    user: str = "alice",
    queue: str = "normal",
    submit_time: float = 0.0,
) -> PendingJob:
    """A job to submit; its ``order`` is a dummy the core must replace."""
    return PendingJob(job_id, user, queue, "default", tasks, tasks, resreq, submit_time, None, 999)


def _column(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values]


def _books(state: ClusterState) -> dict[str, Any]:
    """Everything a snapshot leaves out: what running work holds, status, order."""
    return {
        "used": {k: _column(v) for k, v in state.used.items()},
        "capacity": {k: _column(v) for k, v in state.hosts.capacity.items()},
        "status": state.hosts.status.tolist(),
        "shared_used": dict(state.shared_used),
        "order": [(j.id, j.order) for j in state.jobs],
    }


def _fingerprint(core: SchedulerCore) -> tuple[dict[str, Any], dict[str, Any]]:
    return state_to_dict(core.state), _books(core.state)


def _host(state: ClusterState, name: str) -> int:
    return state.hosts.index[name]


def _dispatched(result: SessionResult, job_id: str) -> Dispatched:
    for d in result.decisions:
        if d.job == job_id:
            assert isinstance(d, Dispatched), d
            return d
    raise AssertionError(f"no decision for {job_id}")


def _pending(result: SessionResult, job_id: str) -> Pending:
    for d in result.decisions:
        if d.job == job_id:
            assert isinstance(d, Pending), d
            return d
    raise AssertionError(f"no decision for {job_id}")


# -- each event kind ---------------------------------------------------------------------


def test_job_submitted_assigns_arrival_order() -> None:
    """Issue 4 AC (events): JobSubmitted appends the job with the next arrival order (the
    order it carried is ignored), order is never reused after a kill, and fcfs breaks a
    submit-time tie by arrival."""
    state = ClusterBuilder().host("h", 1).job("old", 1, submit_time=5).build()
    core = SchedulerCore(state)
    core.apply(JobSubmitted(_job("a", submit_time=5)), JobSubmitted(_job("b", submit_time=5)))
    orders = {j.id: j.order for j in core.state.jobs}
    assert orders["old"] < orders["a"] < orders["b"]
    assert [j["id"] for j in state_to_dict(core.state)["jobs"]] == ["old", "a", "b"]

    core.apply(JobKilled("old"), JobSubmitted(_job("c", submit_time=5)))
    c = core.pending("c")
    assert c is not None
    assert c.order > orders["b"]
    result = core.run_session()  # one slot: the earliest arrival among equal submit times
    assert [d.job for d in result.dispatched] == ["a"]
    assert {d.job for d in result.pending} == {"b", "c"}


def test_arrival_numbering_keeps_every_other_field() -> None:
    """The core's fast copy of a submitted job equals dataclasses.replace (guards the
    field list against PendingJob growing a field)."""
    job = PendingJob("x", "u", "q", "p", 2, 3, "rusage[mem=1]", 7.0, 9.0, 0, False, 11.0)
    assert _numbered(job, 5) == replace(job, order=5)


def test_arrival_numbering_keeps_each_field_a_job_may_set() -> None:
    """Each field of a pending job set alone (a QOS, a nice value, nodes, an accrue time
    were once dropped for a job with no gate, reason or priority: a multifactor replay
    lost them) survives the core's numbering; a field added later without a value here
    fails this test, so it is not forgotten in ``_numbered`` either."""
    base = PendingJob("x", "u", "q", "p", 2, 2, "", 7.0, 9.0, 0)
    values: dict[str, object] = {
        "tasks_given": False,
        "requested_time": 11.0,
        "reservation": "r",
        "reason": "Priority",
        "priority": 3.0,
        "hold": True,
        "begin_time": 50.0,
        "dependency": parse_dependency("afterany:y"),
        "name": "n",
        "array": parse_array("1-3"),
        "array_job": "rec",
        "scheduler_start": 60.0,
        "also_queues": (QueueEntry("other", None, ""),),
        "entry_of": "x",
        "qos": "urgent",
        "nice": 5,
        "nodes": 2,
        "accrue_time": 3.0,
    }
    positional = {"id", "user", "queue", "project", "min_tasks", "max_tasks", "resreq"}
    positional |= {"submit_time", "runtime", "order"}
    for f in fields(PendingJob):
        if f.name in positional:
            continue
        assert f.name in values, f"no value for PendingJob.{f.name}: add one here"
        job = replace(base, **{f.name: values[f.name]})
        assert _numbered(job, 5) == replace(job, order=5), f.name


def test_a_claim_run_is_charged_like_its_claims() -> None:
    """A JobStarted with a ClaimRun holds exactly what the same claims one by one hold,
    in any host order, and frees it all when the job ends."""
    runs = {
        "ascending": JobAllocation((ClaimRun(np.array([0, 1]), 1, (("mem", 50.0),)),)),
        "descending": JobAllocation((ClaimRun(np.array([1, 0]), 1, (("mem", 50.0),)),)),
    }
    claims = JobAllocation((Claim(0, 1, (("mem", 50.0),)), Claim(1, 1, (("mem", 50.0),))))
    reference = SchedulerCore(_cluster())
    reference.apply(JobStarted("j1", claims))
    for allocation in runs.values():
        core = SchedulerCore(_cluster())
        core.apply(JobStarted("j1", allocation))
        assert _books(core.state)["used"] == _books(reference.state)["used"]
        run = core.running("j1")
        assert run is not None
        assert (run.slots, len(run.alloc)) == (2, 2)
        expected = reference.running("j1")
        assert expected is not None
        assert sorted(run.alloc, key=str) == sorted(expected.alloc, key=str)  # claim order aside
        core.apply(JobFinished("j1"))
        assert _books(core.state)["used"] == _books(_cluster())["used"]


def test_job_started_moves_the_job_to_running_and_charges_what_it_holds() -> None:
    """Issue 4 AC (events): JobStarted of a session's decision moves the job from pending
    to running and charges its slots and amounts to ``used``, its shared amounts to
    ``shared_used``."""
    core = SchedulerCore(_cluster())
    used = {k: core.state.held(k).copy() for k in core.state.used}
    decision = _dispatched(core.run_session(), "j1")
    core.apply(JobStarted("j1", decision.allocation, time=7.0))

    assert core.pending("j1") is None
    run = core.running("j1")
    assert run is not None
    assert (run.user, run.queue, run.start_time, run.slots) == ("alice", "normal", 7.0, 2)
    assert run.resreq == "rusage[mem=100:lic=1]"
    assert "j1" not in {j.id for j in core.state.jobs}
    assert "j1" in {r.id for r in core.state.running}
    expected_slots, expected_mem = used["slots"].copy(), used["mem"].copy()
    for claim in decision.allocation.claims:
        expected_slots[claim.host] += claim.slots
        expected_mem[claim.host] += dict(claim.amounts)["mem"]
    assert np.array_equal(core.state.held("slots"), expected_slots)
    assert np.array_equal(core.state.held("mem"), expected_mem)
    assert core.state.shared_held("lic") == 2.0
    assert sum(a.resources["mem"] for a in run.alloc) == 200.0
    assert run.shared == {"lic": 1.0}


@pytest.mark.parametrize("end", [JobFinished, JobKilled])
def test_a_running_job_that_ends_frees_what_it_held(end: type[JobFinished | JobKilled]) -> None:
    """Issue 4 AC (events): JobFinished / JobKilled of a running job frees exactly what it
    held (started here, or running in the state file) and removes it."""
    core = SchedulerCore(_cluster())
    before = _books(core.state)
    core.apply(JobStarted("j1", _dispatched(core.run_session(), "j1").allocation))
    core.apply(end("j1"))
    after = _books(core.state)
    assert after["used"] == before["used"]
    assert after["shared_used"] == before["shared_used"]
    assert core.running("j1") is None
    assert core.pending("j1") is None

    core.apply(end("r1"))
    h1 = _host(core.state, "h1")
    assert core.state.held("slots")[h1] == 0.0
    assert core.state.held("mem")[h1] == 0.0
    assert core.state.shared_held("lic") == 0.0
    assert core.state.running == ()


def test_job_killed_removes_a_pending_job() -> None:
    """Issue 4 AC (events): JobKilled of a pending job removes it; nothing held changes."""
    core = SchedulerCore(_cluster())
    before = _books(core.state)
    core.apply(JobKilled("j2"))
    assert core.pending("j2") is None
    assert [j.id for j in core.state.jobs] == ["j1"]
    assert [d.job for d in core.run_session().decisions] == ["j1"]
    after = _books(core.state)
    assert after["used"] == before["used"]
    assert after["shared_used"] == before["shared_used"]


def test_host_added_is_appended_and_used_by_the_next_session() -> None:
    """Issue 4 AC (events): HostAdded appends a host at the end of host order; the next
    session places work on it; a snapshot describes it."""
    state = (
        ClusterBuilder().host("h1", 1, mem=100, type="A").job("big", 3, resreq="select[type==B]")
    )
    core = SchedulerCore(state.build())
    info = _pending(core.run_session(), "big").info  # issue 9: as configured, never
    assert (info.reason, info.cause) == (PendReason.NEVER_RUNNABLE, PendReason.SELECT)

    core.apply(HostAdded("h2", 4, {"mem": 800}, {"type": "B"}))
    assert core.state.hosts.names == ["h1", "h2"]
    assert core.state.held("slots").tolist() == [0.0, 0.0]
    decision = _dispatched(core.run_session(), "big")
    assert {core.state.hosts.names[c.host] for c in decision.allocation.claims} == {"h2"}
    assert state_to_dict(core.state)["hosts"][1] == {
        "name": "h2",
        "slots": 4,
        "resources": {"mem": 800},
        "attributes": {"type": "B"},
    }


def test_host_changed_status_closes_and_reopens_a_host() -> None:
    """Issue 4 AC (events): HostChanged(status) closes a host to new work (running work
    stays) and reopens it."""
    core = SchedulerCore(_cluster())
    core.apply(HostChanged("h2", HostStatus.CLOSED), HostChanged("h1", HostStatus.UNAVAIL))
    assert core.state.hosts.status.tolist() == [HostStatus.UNAVAIL, HostStatus.CLOSED]
    assert core.running("r1") is not None
    result = core.run_session()
    assert result.dispatched == []
    assert {d.info.reason for d in result.pending} == {PendReason.HOST_STATUS}

    core.apply(HostChanged("h2", HostStatus.OK))
    decision = _dispatched(core.run_session(), "j2")
    assert decision.allocation.claims[0].host == _host(core.state, "h2")


def test_host_changed_capacity_grows_and_shrinks_to_what_is_held() -> None:
    """Issue 4 AC (events): HostChanged(capacity) changes a host's consumables; a host may
    shrink down to exactly what its running work holds."""
    core = SchedulerCore(_cluster())
    h1 = _host(core.state, "h1")
    core.apply(HostChanged("h1", capacity={"slots": 2, "mem": 200}))
    assert core.state.hosts.capacity["slots"][h1] == 2.0
    assert core.state.hosts.capacity["mem"][h1] == 200.0
    core.apply(JobKilled("j2"), HostChanged("h2", capacity={"slots": 1}))
    assert _pending(core.run_session(), "j1").info.reason is PendReason.NOT_ENOUGH_SLOTS

    core.apply(HostChanged("h2", capacity={"slots": 8, "mem": 5000}))
    decision = _dispatched(core.run_session(), "j1")
    assert {c.host for c in decision.allocation.claims} == {_host(core.state, "h2")}


def test_shared_changed_sets_the_total() -> None:
    """Issue 4 AC (events): SharedChanged changes a shared total; it may fall to exactly
    what is held, and then no job needing it starts."""
    core = SchedulerCore(_cluster())
    core.apply(SharedChanged("lic", 1))
    assert core.state.shared_total["lic"] == 1.0
    assert _pending(core.run_session(), "j1").info.reason is PendReason.SHARED_RESOURCE
    core.apply(SharedChanged("lic", 10))
    _dispatched(core.run_session(), "j1")


def test_limits_changed_replaces_the_limits() -> None:
    """Issue 4 AC (events): LimitsChanged replaces every limit; the next session obeys the
    new set."""
    core = SchedulerCore(_cluster())
    core.apply(LimitsChanged((Limit("alice_one", users=("alice",), slots=1),)))
    assert [lim.name for lim in core.state.limits] == ["alice_one"]
    info = _pending(core.run_session(), "j1").info  # issue 9: never under this limit
    assert (info.reason, info.cause, info.limits) == (
        PendReason.NEVER_RUNNABLE,
        PendReason.LIMIT,
        ("alice_one",),
    )
    core.apply(LimitsChanged(()))
    assert core.state.limits == ()
    _dispatched(core.run_session(), "j1")


def test_queues_changed_sets_queue_pickers_and_the_default_picker() -> None:
    """Issue 4 AC (events): QueuesChanged replaces the queues and the default picker; a
    queue's own picker wins over the default (strict blocks behind a head that cannot
    start, fcfs does not)."""
    state = (
        ClusterBuilder()
        .host("h", 2)
        .queue("normal", 10)
        .running("r", on={"h": 1})
        .job("head", 2)
        .job("small", 1)
        .build()
    )
    core = SchedulerCore(state)
    assert _dispatched(core.run_session(), "small")

    core.apply(QueuesChanged({"normal": Queue("normal", 10)}, default_picker="strict"))
    assert core.state.default_picker == "strict"
    assert state_to_dict(core.state)["picker"] == "strict"
    assert _pending(core.run_session(), "small").info.reason is PendReason.QUEUE_BLOCKED

    core.apply(QueuesChanged({"normal": Queue("normal", 10, picker="fcfs")}, "strict"))
    assert core.state.queues["normal"].picker == "fcfs"
    assert _dispatched(core.run_session(), "small")

    core.apply(QueuesChanged({"normal": Queue("normal", 10)}))
    assert core.state.default_picker is None
    assert "picker" not in state_to_dict(core.state)
    assert _dispatched(core.run_session(), "small")


# -- refused events ------------------------------------------------------------------------


def _alloc(
    *claims: tuple[str, int, dict[str, float]], shared: dict[str, float] | None = None
) -> JobAllocation:
    """An allocation on _cluster()'s hosts by name."""
    index = {"h1": 0, "h2": 1, "h9": 9, "hneg": -1}
    return JobAllocation(
        tuple(Claim(index[h], n, tuple(amounts.items())) for h, n, amounts in claims),
        tuple((shared or {}).items()),
    )


def _run(*hosts: int, slots: int = 1, **amounts: float) -> JobAllocation:
    """An allocation of one claim run (the bulk allocator's form) on host indices."""
    return JobAllocation((ClaimRun(np.array(hosts, dtype=np.intp), slots, tuple(amounts.items())),))


REFUSED: list[Any] = [
    pytest.param(JobStarted("zz", _alloc(("h2", 1, {}))), "not a pending job", id="start-unknown"),
    pytest.param(JobStarted("r1", _alloc(("h2", 1, {}))), "not a pending job", id="start-running"),
    pytest.param(JobFinished("zz"), "unknown job 'zz'", id="finish-unknown"),
    pytest.param(JobFinished("j1"), "unknown job 'j1'", id="finish-pending"),
    pytest.param(JobKilled("zz"), "unknown job 'zz'", id="kill-unknown"),
    pytest.param(HostChanged("hx", HostStatus.CLOSED), "unknown host 'hx'", id="host-unknown"),
    pytest.param(
        HostChanged("h1", capacity={"slots": 1}), "slots=1 is below the 2", id="shrink-slots"
    ),
    pytest.param(
        HostChanged("h1", capacity={"mem": 199}), "mem=199 is below the 200", id="shrink-mem"
    ),
    pytest.param(  # the valid part of a refused event is not applied either
        HostChanged("h1", HostStatus.CLOSED, {"mem": 5000, "slots": 0}),
        "slots=0 is below",
        id="shrink-partly",
    ),
    pytest.param(
        HostChanged("h1", capacity={"gpu": 1}), "'gpu' is not a consumable", id="host-gpu"
    ),
    pytest.param(SharedChanged("lic", 0.5), "lic total 0.5 is below the 1", id="shared-below"),
    pytest.param(SharedChanged("zz", 1), "unknown shared resource 'zz'", id="shared-unknown"),
    pytest.param(JobSubmitted(_job("j1")), "job 'j1' already exists", id="submit-dup-pending"),
    pytest.param(JobSubmitted(_job("r1")), "job 'r1' already exists", id="submit-dup-running"),
    pytest.param(JobSubmitted(_job("x", resreq="select[")), "job 'x'", id="submit-syntax"),
    pytest.param(
        JobSubmitted(_job("x", resreq="rusage[gpu=1]")), "unknown resource 'gpu'", id="submit-gpu"
    ),
    pytest.param(JobSubmitted(_job("x", tasks=0)), "task counts", id="submit-0-tasks"),
    pytest.param(
        JobStarted("j1", _alloc(("h1", 3, {}))), "wants 3 slots on h1; 2 free", id="start-slots"
    ),
    pytest.param(
        JobStarted("j1", _alloc(("h1", 1, {"mem": 500}), ("h1", 1, {"mem": 400}))),
        "wants 900 mem on h1; 800 free",
        id="start-mem-summed",
    ),
    pytest.param(
        JobStarted("j1", _alloc(("h2", 1, {}), shared={"lic": 3})),
        "not enough shared lic",
        id="start-lic",
    ),
    pytest.param(JobStarted("j1", _alloc(("h9", 1, {}))), "no host #9", id="start-no-host"),
    pytest.param(JobStarted("j1", _alloc(("hneg", 1, {}))), "no host #-1", id="start-neg-host"),
    pytest.param(
        JobStarted("j1", _alloc(("h2", 1, {"gpu": 1}))),
        "'gpu' is not a host consumable",
        id="start-unknown-resource",
    ),
    pytest.param(
        JobStarted("j1", _alloc(("h2", 1, {}), shared={"zz": 1})),
        "unknown shared resource 'zz'",
        id="start-unknown-shared",
    ),
    pytest.param(JobStarted("j1", _alloc()), "at least one host", id="start-no-claims"),
    pytest.param(JobStarted("j1", _run()), "at least one host", id="start-empty-run"),
    pytest.param(JobStarted("j1", _run(0, 1, slots=3)), "wants 3 slots on h1", id="run-slots"),
    pytest.param(JobStarted("j1", _run(1, 1, slots=2)), "wants 4 slots on h2", id="run-twice"),
    pytest.param(JobStarted("j1", _run(1, 0, slots=3)), "wants 3 slots on h2", id="run-order"),
    pytest.param(JobStarted("j1", _run(0, 9)), "no host #9", id="run-no-host"),
    pytest.param(JobStarted("j1", _run(-1, 0)), "no host #-1", id="run-neg-host"),
    pytest.param(JobStarted("j1", _run(0, 1, mem=801)), "wants 801 mem on h1", id="run-mem"),
    pytest.param(JobStarted("j1", _run(0, 1, gpu=1)), "'gpu' is not a host", id="run-gpu"),
    pytest.param(JobStarted("j1", _run(0, 1, slots=-1)), "a claim of -1 slots", id="run-neg"),
    pytest.param(JobStarted("j1", _alloc(("h2", 0, {}))), "a claim of 0 slots", id="zero-slots"),
    pytest.param(JobStarted("j1", _run(0, 1, mem=-5)), "a claim of -5", id="run-neg-mem"),
    pytest.param(
        JobStarted("j1", _alloc(("h2", 1, {"slots": 1}))), "a claim of 1 slots", id="slots-twice"
    ),
    pytest.param(HostAdded("h1", 1, {}, {}), "host 'h1' already exists", id="add-dup"),
    pytest.param(HostAdded("h3", 1, {"gpu": 1}, {}), "'gpu' is not a consumable", id="add-gpu"),
    pytest.param(HostAdded("h3", -1, {}, {}), "slots must be >= 0", id="add-neg-slots"),
    pytest.param(HostAdded("h3", 1, {"mem": -5}, {}), "'mem' is not a consumable", id="add-neg"),
    pytest.param(
        HostAdded("h3", 1, {}, {"type": True}), "attribute 'type' does not fit", id="add-attr"
    ),
    pytest.param(HostAdded("h3", 1, {}, {"os": "x"}), "attribute 'os'", id="add-unknown-attr"),
    pytest.param(
        LimitsChanged((Limit("l", resources={"type": 1}),)),
        "'type' is not a consumable",
        id="limit-attr",
    ),
    pytest.param(
        QueuesChanged({"normal": Queue("normal", picker="nope")}),
        "unknown picker 'nope'",
        id="queue-unknown-picker",
    ),
    pytest.param(
        QueuesChanged({}, default_picker="nope"),
        "unknown picker 'nope'",
        id="unknown-default-picker",
    ),
    pytest.param(
        LimitsChanged((Limit("l", slots=1), Limit("l", slots=2))),
        "same name",
        id="duplicate-limit-names",
    ),
    pytest.param(SharedChanged("lic", math.nan), "must be a number", id="shared-nan"),
    pytest.param("not an event", "not an event", id="not-an-event"),
    # issue 10: HostChanged with a bad status raised a bare ValueError after applying its
    # capacity change; the whole event is checked first, as documented
    pytest.param(
        HostChanged("h1", "broken", {"mem": 5000}),  # type: ignore[arg-type]
        "unknown status 'broken'",
        id="host-bad-status-with-capacity",
    ),
    pytest.param(
        HostChanged("h2", 7, {"slots": 8}),  # type: ignore[arg-type]
        "unknown status 7",
        id="host-bad-status-number",
    ),
    pytest.param(
        HostChanged("h2", None, {"slots": 8, "mem": math.inf}),
        "mem must be a finite number",
        id="host-inf-capacity",
    ),
    pytest.param(
        HostChanged("h2", None, {"mem": math.nan}), "must be a finite number", id="host-nan"
    ),
    pytest.param(
        HostChanged("h2", None, {"slots": 10**6 + 1}), "more than 1000000", id="host-slots-max"
    ),
    pytest.param(HostAdded("h3", 10**30, {}, {}), "more than 1000000", id="add-huge-slots"),
    pytest.param(HostAdded("h3", 1.5, {}, {}), "whole number", id="add-half-slot"),  # type: ignore[arg-type]
    pytest.param(HostAdded("h3", 1, {"mem": math.inf}, {}), "finite", id="add-inf-mem"),
    pytest.param(HostAdded("h3", 1, {}, {"cpuf": math.nan}), "finite", id="add-nan-attr"),
    pytest.param(
        HostAdded("h3", 1, {}, {}, "gone"),  # type: ignore[arg-type]
        "unknown status 'gone'",
        id="add-bad-status",
    ),
    pytest.param(
        LimitsChanged((Limit("l", resources={"mem": math.inf}),)),
        "limit 'l': mem must be a finite number",
        id="limit-inf",
    ),
    pytest.param(
        LimitsChanged((Limit("l", slots=math.nan),)),  # type: ignore[arg-type]
        "limit 'l': slots must be a finite number",
        id="limit-nan-slots",
    ),
    pytest.param(JobFinished("r1", math.nan), "time must be a finite number", id="finish-nan"),
    pytest.param(JobKilled("r1", math.inf), "time must be a finite number", id="kill-inf"),
    pytest.param(JobKilled("j1", -math.inf), "time must be a finite number", id="kill-p-inf"),
    pytest.param(
        JobStarted("j1", _alloc(("h2", 1, {})), math.inf), "time must be", id="start-inf-time"
    ),
    pytest.param(
        JobSubmitted(_job("x", submit_time=math.nan)), "submit_time must be", id="submit-nan"
    ),
    pytest.param(
        JobSubmitted(replace(_job("x"), runtime=math.inf)), "runtime must be", id="submit-inf"
    ),
    pytest.param(
        JobSubmitted(replace(_job("x"), requested_time=-math.inf)),
        "requested_time must be",
        id="submit-requested-inf",
    ),
]


@pytest.mark.parametrize("status", ["broken", 7, None, 1.5])
def test_host_changed_with_a_bad_status_changes_nothing(status: object) -> None:
    """Issue 10 (HostChanged): a bad status raised a bare ValueError and still applied
    the capacity change; the docs promise EventError and no change. The whole event is
    checked before anything is applied (None here stands for a status the caller set
    to None explicitly alongside a bad capacity)."""
    core = SchedulerCore(_cluster())
    before = _fingerprint(core)
    capacity = {"mem": 5000.0, "slots": 16.0 if status is not None else math.inf}
    with pytest.raises(EventError, match="HostChanged: host 'h1'"):
        core.apply(HostChanged("h1", status, capacity))  # type: ignore[arg-type]
    assert _fingerprint(core) == before
    h1 = _host(core.state, "h1")
    assert core.state.hosts.capacity["mem"][h1] == 1000


@pytest.mark.parametrize(("event", "message"), REFUSED)
def test_a_refused_event_raises_event_error_and_changes_nothing(event: Event, message: str) -> None:
    """Issue 4 AC: events with unknown jobs/hosts, a host shrunk below what runs on it
    (and every other inconsistent change) are refused with a clear EventError; the state
    (snapshot, books, arrival order) is unchanged and the next session is unaffected."""
    core = SchedulerCore(_cluster())
    reference = core.run_session().decisions
    before = _fingerprint(core)
    with pytest.raises(EventError, match=message.replace("(", r"\(").replace("[", r"\[")):
        core.apply(event)
    assert _fingerprint(core) == before
    assert core.run_session().decisions == reference


def test_events_before_a_refused_one_stay_applied() -> None:
    """Issue 4 (events are applied in order, each checked before it changes anything):
    apply(ok, bad) keeps ok and refuses bad."""
    core = SchedulerCore(_cluster())
    with pytest.raises(EventError, match="unknown host"):
        core.apply(JobKilled("j2"), HostChanged("nope", HostStatus.CLOSED), JobKilled("j1"))
    assert [j.id for j in core.state.jobs] == ["j1"]


def test_the_core_does_not_change_the_state_it_was_built_from() -> None:
    """Issue 4 (the core owns its state): events change the core's state, never the
    ClusterState object the core was built from (``used`` is copied; so must hosts be)."""
    state = _cluster()
    before = (state_to_dict(state), _books(state))
    core = SchedulerCore(state)
    core.apply(JobStarted("j1", _dispatched(core.run_session(), "j1").allocation))
    core.apply(HostChanged("h2", HostStatus.CLOSED, {"mem": 4000}), SharedChanged("lic", 9))
    assert (state_to_dict(state), _books(state)) == before


# -- sessions and the driver loop ----------------------------------------------------------


def _recomputed_use(state: ClusterState) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """What the running work holds, summed from the running jobs (not the core's books)."""
    used = {k: np.zeros(state.hosts.n) for k in state.hosts.capacity}
    shared = dict.fromkeys(state.shared_total, 0.0)
    for run in state.running:
        for a in run.alloc:
            h = state.hosts.index[a.host]
            used["slots"][h] += a.slots
            for name, amount in a.resources.items():
                used[name][h] += amount
        for name, amount in run.shared.items():
            shared[name] += amount
    return used, shared


def _assert_consistent(state: ClusterState) -> None:
    """The core's books equal the sum of its running work, which fits every host (none
    of a resource a host lacks) and every shared total."""
    used, shared = _recomputed_use(state)
    for name, column in used.items():
        assert np.allclose(state.held(name), column, atol=_EPS), name
        capacity = state.hosts.capacity[name]
        lacks = np.isnan(capacity)
        assert not np.any(column[lacks] > _EPS), f"{name} charged on a host lacking it"
        assert np.all(column[~lacks] <= capacity[~lacks] + _EPS), f"{name} over-allocated"
    for name, amount in shared.items():
        assert state.shared_held(name) == pytest.approx(amount, abs=_EPS)
        assert amount <= state.shared_total[name] + _EPS, f"{name} over-allocated"


@given(scenarios(), st.sampled_from(["fcfs", "strict", "fairshare"]))
def test_a_session_never_changes_the_state(scenario: Scenario, picker: str) -> None:
    """Issue 4 AC (core/driver split): run_session returns decisions and changes nothing
    (single-threaded or threaded); running it again gives the same decisions."""
    core = SchedulerCore(scenario.state, picker=picker)
    before = _fingerprint(core)
    first = core.run_session()
    assert _fingerprint(core) == before
    second = core.run_session(threads=True)
    assert _fingerprint(core) == before
    assert second.decisions == first.decisions
    assert {d.job for d in first.decisions} == {j.id for j in scenario.state.jobs}


@given(scenarios(), st.sampled_from(["fcfs", "strict", "fairshare"]), st.data())
def test_driving_the_core_never_over_allocates(
    scenario: Scenario, picker: str, data: st.DataObject
) -> None:
    """Issue 4 (drivers feed events, apply decisions): session -> JobStarted for every
    dispatched job -> JobFinished for some running jobs -> next session, a few rounds.
    Every decision applies, each pending job gets one decision per session, and the
    core's books always equal what its running work holds and fit every host and
    shared total."""
    core = SchedulerCore(scenario.state, picker=picker)
    _assert_consistent(core.state)
    for now in range(1, 5):
        pending = {j.id for j in core.state.jobs}
        result = core.run_session(threads=data.draw(st.booleans(), label="threads"))
        assert sorted(d.job for d in result.decisions) == sorted(pending)
        for d in result.dispatched:
            core.apply(JobStarted(d.job, d.allocation, time=float(now)))
            run = core.running(d.job)
            assert run is not None
            assert run.slots == d.allocation.slots
        assert {j.id for j in core.state.jobs} == pending - {d.job for d in result.dispatched}
        _assert_consistent(core.state)
        running = sorted(r.id for r in core.state.running)
        if running:
            done = data.draw(st.lists(st.sampled_from(running), unique=True), label="finish")
            core.apply(*(JobFinished(job_id, time=float(now)) for job_id in done))
            _assert_consistent(core.state)


def test_finishing_work_lets_the_next_session_start_more() -> None:
    """Issue 4 (driver loop, hand-made): a full cluster pends the job; once the running
    job finishes, the next session dispatches it on the freed host."""
    state = (
        ClusterBuilder()
        .host("h1", 2, mem=100)
        .running("r1", on={"h1": 2}, rusage={"mem": 50})
        .job("j1", 2, resreq="rusage[mem=50]")
        .build()
    )
    core = SchedulerCore(state)
    assert _pending(core.run_session(), "j1").info.reason is PendReason.NOT_ENOUGH_SLOTS
    core.apply(JobFinished("r1", time=10))
    decision = _dispatched(core.run_session(), "j1")
    core.apply(JobStarted("j1", decision.allocation, time=10))
    assert core.state.held("slots").tolist() == [2.0]
    assert core.state.held("mem").tolist() == [100.0]
    assert core.run_session().decisions == ()
