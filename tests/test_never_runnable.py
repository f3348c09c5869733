"""Jobs that can never run (issue 9): NEVER_RUNNABLE ranks first, names its cause, and
is given only when no state of the cluster as configured could run the job; plans are
bounded by the hosts, so a huge job pends at once."""

from __future__ import annotations

import pytest

from builders import ClusterBuilder
from xce.alloc import (
    AllocOptions,
    CancelToken,
    CombinatorialPlanIterator,
    Dispatched,
    Pending,
    PendReason,
    prepare_requirement,
)
from xce.cluster import ClusterState, HostStatus
from xce.core import HostChanged, SchedulerCore, Session

R = PendReason


def _one(state: ClusterState, job: str = "j", **options: bool) -> Dispatched | Pending:
    decisions = {d.job: d for d in Session(state, options=AllocOptions(**options)).run().decisions}
    return decisions[job]


def _pending(state: ClusterState, job: str = "j") -> Pending:
    got = _one(state, job)
    assert isinstance(got, Pending), got
    return got


@pytest.mark.parametrize(
    ("builder", "cause"),
    [
        pytest.param(
            ClusterBuilder().hosts(4, slots=32).job("j", 64, resreq="span[hosts=1]"),
            R.SPAN,
            id="64 tasks span[hosts=1] on 32-slot hosts",
        ),
        pytest.param(
            ClusterBuilder().hosts(2, slots=4, type="A").job("j", 1, resreq="select[type==B]"),
            R.SELECT,
            id="a select no host meets",
        ),
        pytest.param(
            ClusterBuilder().hosts(2, slots=4, mem=100).job("j", 1, resreq="select[mem>=200]"),
            R.SELECT,
            id="a select no host meets at full capacity",
        ),
        pytest.param(
            ClusterBuilder().shared("lic", 2).hosts(1, slots=4).job("j", 1, resreq="rusage[lic=3]"),
            R.SHARED_RESOURCE,
            id="a shared total below the request",
        ),
        pytest.param(
            ClusterBuilder()
            .hosts(2, slots=4)
            .limit("L", users=["u"], slots=3)
            .job("j", 4, user="u"),
            R.LIMIT,
            id="an aggregate limit below the request",
        ),
        pytest.param(
            ClusterBuilder().hosts(3, slots=1).job("j", 10**10),
            R.NOT_ENOUGH_SLOTS,
            id="10**10 tasks",
        ),
    ],
)
def test_never_runnable_ranks_first_with_its_cause(builder: ClusterBuilder, cause: R) -> None:
    """Issue 9 (never runnable): a job that could not run even on the empty cluster pends
    NEVER_RUNNABLE, first of all reasons, with what is missing as ``cause`` and in the
    message — even while running work makes the cluster busy."""
    state = builder.build()
    got = _pending(state)
    assert (got.info.reason, got.info.cause) == (R.NEVER_RUNNABLE, cause)
    assert got.info.message.startswith("can never run on this cluster as configured: ")
    if cause not in (R.SHARED_RESOURCE, R.LIMIT):  # job-level causes consider no host
        assert sum(got.info.hosts.values()) == state.hosts.n  # every host has its reason


def test_a_busy_cluster_is_not_never() -> None:
    """Issue 9: a job blocked only by running work waits with the current reason."""
    state = ClusterBuilder().hosts(2, slots=4).running("r", on={"h0": 4, "h1": 2}).job("j", 4)
    got = _pending(state.build())
    assert got.info.reason is R.NOT_ENOUGH_SLOTS
    assert got.info.cause is None


def test_closed_hosts_may_open_so_a_select_on_them_is_host_status() -> None:
    """Issue 9: host status is not configuration that makes a job never runnable."""
    state = (
        ClusterBuilder()
        .host("a", 4, type="A")
        .host("b", 4, type="B", status="closed")
        .job("j", 2, resreq="select[type==B]")
    )
    assert _pending(state.build()).info.reason is R.HOST_STATUS


def test_a_volatile_select_is_not_judged_on_the_empty_cluster() -> None:
    """Issue 9 (triage): select[mem<500] is false on the empty cluster but true once mem is
    used: the job is not never runnable."""
    state = ClusterBuilder().hosts(1, slots=4, mem=1000).job("j", 1, resreq="select[mem<500]")
    got = _pending(state.build())
    assert got.info.reason is R.SELECT


def test_alter_is_never_runnable_only_if_every_alternative_is() -> None:
    """Issue 9: an ALTER job with one alternative that could run is not never runnable."""
    both = ClusterBuilder().hosts(2, slots=2).running("r", on={"h0": 2, "h1": 2})
    state = both.job("j", 2, resreq="{span[hosts=1] select[slots>=3]} || {span[hosts=1]}")
    got = _pending(state.build())
    assert got.info.reason is not R.NEVER_RUNNABLE
    never = (
        ClusterBuilder().hosts(2, slots=2).job("j", 3, resreq="{span[hosts=1]} || {same[hname]}")
    )
    assert _pending(never.build()).info.reason is R.NEVER_RUNNABLE


def test_a_configuration_change_is_seen() -> None:
    """Issue 9: NEVER_RUNNABLE is about the cluster as configured now: growing a host's
    capacity lets the job run (the memoised answer is dropped)."""
    core = SchedulerCore(ClusterBuilder().hosts(1, slots=2).job("j", 4).build())
    first = core.run_session().decisions[0]
    assert isinstance(first, Pending)
    assert first.info.reason is R.NEVER_RUNNABLE
    core.apply(HostChanged("h0", capacity={"slots": 4}))
    assert isinstance(core.run_session().decisions[0], Dispatched)


@pytest.mark.parametrize("shortcuts", [True, False])
def test_a_huge_job_pends_at_once_and_others_still_run(shortcuts: bool) -> None:
    """Issue 9 (huge_tasks): a job of 10**10 tasks neither materialises plans in
    proportion to its task count nor stops the others: it pends at once."""
    state = ClusterBuilder().hosts(1, slots=16).job("ok", 1).job("j", 10**10).build()
    assert isinstance(_one(state, "ok", shortcuts=shortcuts), Dispatched)
    got = _one(state, "j", shortcuts=shortcuts)
    assert isinstance(got, Pending)
    assert got.info.reason is R.NEVER_RUNNABLE


@pytest.mark.parametrize(
    ("resreq", "hosts", "plans"),
    [
        ("", 3, [(4,), (2, 2), (2, 1, 1), "fill"]),
        ("", 10, [(4,), (2, 2), (2, 1, 1), (1, 1, 1, 1), "fill"]),
        ("span[ptile=1]", 3, []),
        ("span[ptile=2]", 2, [(2, 2)]),
        ("span[hosts=1]", 0, []),
    ],
)
def test_plans_never_have_more_buckets_than_ok_hosts(
    resreq: str, hosts: int, plans: list[object]
) -> None:
    """Issue 9 / design §3: the plan iterator leaves out plans with more buckets than there
    are ok hosts (they need distinct hosts, so they cannot succeed)."""
    (pp,) = prepare_requirement(resreq, ClusterBuilder().build().catalog, 4, 4).alternatives[0]
    it = CombinatorialPlanIterator(pp, CancelToken(), max_buckets=hosts)
    assert ["fill" if p.fill else p.buckets for p in it] == plans


def test_same_groups_follow_order_by_their_first_eligible_host() -> None:
    """Issue 9 (A1/A2): same[] groups are tried in the job's host order (order[]) by their
    first eligible member; a closed or non-matching host does not place its group first."""
    state = (
        ClusterBuilder()
        .host("a", 1, type="X", status="closed")
        .host("b", 2, type="Y")
        .host("c", 4, type="X")
        .host("d", 1, type="Y")
        .job("first", 1, resreq="same[type]")
        .job("spread", 1, resreq="same[type] order[slots]")
        .job("pair", 2, resreq="same[type] order[-slots]")
        .build()
    )
    names = state.hosts.names
    got = {d.job: d for d in Session(state).run().decisions}
    placed = {
        j: [names[c.host] for c in d.allocation.claims]
        for j, d in got.items()
        if isinstance(d, Dispatched)
    }
    assert placed["first"] == ["b"]  # the first ok host, as the seqjob rule says
    assert placed["spread"] == ["c"]  # most free slots: c (group X) before b
    assert placed["pair"] == ["c"]  # plan [2] on every group before [1, 1]: only c has 2
    assert state.hosts.status[0] == HostStatus.CLOSED


def test_the_never_check_uses_the_allocators_current_token() -> None:
    """Issue 9: after a cancelled session, the next one (a fresh token) still decides a
    never-runnable job (the empty-cluster check must not keep the cancelled token)."""
    from xce.alloc import Allocator
    from xce.core import job_request
    from xce.errors import Cancelled

    state = ClusterBuilder().hosts(1, slots=2).job("j", 4).job("k", 8).build()
    alloc = Allocator(state)
    alloc.begin_session()
    first = alloc.decide(job_request(state.jobs[0], state.catalog))
    assert isinstance(first, Pending)
    alloc.token.cancel()
    with pytest.raises(Cancelled):
        alloc.decide(job_request(state.jobs[1], state.catalog))
    alloc.token = CancelToken()
    alloc.begin_session()
    got = alloc.decide(job_request(state.jobs[1], state.catalog))
    assert isinstance(got, Pending)
    assert got.info.reason is R.NEVER_RUNNABLE
