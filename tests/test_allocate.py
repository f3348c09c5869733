"""The primary allocation path (spec Req 4, Composition Algorithm, design §3): plans →
buckets → a fresh host iterator per bucket → the per-host try; rollback; fill plan."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
import pytest

import xce.alloc.engine as engine_mod
from builders import ClusterBuilder, reason_under_test
from xce.alloc import (
    Allocator,
    AllocatorRegistry,
    AllocContext,
    AllocOptions,
    CancelToken,
    Claim,
    ClaimRun,
    Decision,
    Dispatched,
    HostFinder,
    HostIterator,
    JobAllocation,
    ParJobAllocator,
    PendInfo,
    Pending,
    PendReason,
    Plan,
    PlanIterator,
    PreparedPrimary,
    SeqJobAllocator,
    balanced,
)
from xce.alloc.diagnose import shared_shortfall
from xce.alloc.request import Amounts
from xce.cluster import ClusterState
from xce.core import Session
from xce.core.session import job_request


# --- helpers ---------------------------------------------------------------------------
def allocator(
    state: ClusterState, registry: AllocatorRegistry | None = None, **options: bool
) -> Allocator:
    alloc = Allocator(state, registry, AllocOptions(**options))
    alloc.begin_session()
    return alloc


def decide(alloc: Allocator, job_id: str) -> Decision:
    job = next(j for j in alloc.state.jobs if j.id == job_id)
    return alloc.decide(job_request(job, alloc.state.catalog))


def run(state: ClusterState, **options: bool) -> dict[str, Decision]:
    result = Session(state, options=AllocOptions(**options)).run()
    return {d.job: d for d in result.decisions}


def placed(state: ClusterState, decision: Decision) -> list[tuple[str, int]]:
    """The allocation in claim order as (host name, slots)."""
    assert isinstance(decision, Dispatched), decision
    return [(state.hosts.names[c.host], c.slots) for c in decision.allocation.claims]


class FixedPlans:
    """A plan iterator over a given list (the PlanIterator contract, nothing more)."""

    def __init__(self, plans: Sequence[Plan], token: CancelToken) -> None:
        self._plans = iter(plans)
        self._token = token

    def __iter__(self) -> FixedPlans:
        return self

    def __next__(self) -> Plan:
        self._token.checkpoint()
        return next(self._plans)

    def close(self) -> None:
        self._plans = iter(())


class PlanChoosingParJob(ParJobAllocator):
    """The builtin parjob, except for which plans it proposes."""

    name = "parjob-test-plans"

    def __init__(self, make: Callable[[PreparedPrimary], list[Plan]]) -> None:
        self._make = make

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        return FixedPlans(self._make(primary), ctx.token)


def registry_with(plugin: ParJobAllocator) -> AllocatorRegistry:
    return AllocatorRegistry((SeqJobAllocator(), plugin))


class RecordingHostIterator(HostIterator):
    """Records, per constructed host iterator, its bucket size and what it yielded."""

    log: ClassVar[list[tuple[int, list[int]]]] = []

    def __init__(
        self,
        finder: HostFinder,
        nslots: int,
        want: Amounts,
        token: CancelToken,
        after: int | None = None,
    ) -> None:
        super().__init__(finder, nslots, want, token, after=after)
        self.yielded: list[int] = []
        RecordingHostIterator.log.append((nslots, self.yielded))

    def __next__(self) -> int:
        h = super().__next__()
        self.yielded.append(h)
        return h


@pytest.fixture
def host_iterators(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[int]]]:
    log: list[tuple[int, list[int]]] = []
    monkeypatch.setattr(RecordingHostIterator, "log", log)
    monkeypatch.setattr(engine_mod, "HostIterator", RecordingHostIterator)
    return log


# --- the spec's example and the fresh iterator per bucket ------------------------------
@pytest.mark.parametrize("shortcuts", [True, False])
def test_spec_example_plan_2_1(shortcuts: bool) -> None:
    """Spec Composition Algorithm (fresh host_iter per bucket) / Req 4 AC 2-3 / design §5
    (claim order): plan [2,1], host A (1 free slot) listed before B (2 free) → B:2, A:1,
    bucket 0 first, as one merged allocation."""
    state = ClusterBuilder().host("A", slots=1).host("B", slots=2).job("j", tasks=3).build()
    alloc = allocator(state, shortcuts=shortcuts)
    d = decide(alloc, "j")
    assert placed(state, d) == [("B", 2), ("A", 1)]
    if not shortcuts:
        assert alloc.stats.plans_tried == 2  # [3] failed, [2,1] won, nothing after it


def test_one_fresh_host_iterator_per_bucket(
    host_iterators: list[tuple[int, list[int]]],
) -> None:
    """Spec Req 4 AC 2 / Req 3 AC 3-4: a new host iterator is constructed for each bucket
    of each plan, so A, which bucket 0's scan passes over, is offered again to bucket 1."""
    state = ClusterBuilder().host("A", slots=1).host("B", slots=2).job("j", tasks=3).build()
    d = decide(allocator(state, shortcuts=False), "j")
    assert placed(state, d) == [("B", 2), ("A", 1)]
    assert host_iterators == [(3, []), (2, [1]), (1, [0])]


def test_host_rejected_by_a_larger_bucket_is_offered_to_a_smaller_one(
    host_iterators: list[tuple[int, list[int]]],
) -> None:
    """Spec Req 4 AC 2 ("offered-and-rejected stays eligible"): A passes bucket 0's
    filter but its per-host limit rejects 2 more slots; B takes bucket 0; a fresh
    iterator offers A again to bucket 1, which it can hold."""
    state = (
        ClusterBuilder()
        .host("A", slots=3)
        .host("B", slots=2)
        .limit("alice_per_host", users=["alice"], per_host=True, slots=2)
        .running("r", on={"A": 1}, user="alice")
        .job("j", tasks=3, user="alice")
        .build()
    )
    d = decide(allocator(state, shortcuts=False), "j")
    assert placed(state, d) == [("B", 2), ("A", 1)]
    assert host_iterators == [(3, []), (2, [0, 1]), (1, [0])]


# --- bucket order ----------------------------------------------------------------------
def ascending(pp: PreparedPrimary) -> list[Plan]:
    return [Plan(tuple(reversed(balanced(pp.tasks, k)))) for k in range(1, pp.tasks + 1)]


def test_descending_buckets_succeed_where_ascending_fails() -> None:
    """Spec Composition Algorithm ("bucket order is not merely a heuristic"): B (2 free)
    listed before A (1 free); ascending [1,2] lets "need 1" take B and then fails "need 2";
    the real engine's descending [2,1] succeeds with the same hosts (and not through the
    fill plan: it is the second plan tried)."""
    state = ClusterBuilder().host("B", slots=2).host("A", slots=1).job("j", tasks=3).build()
    asc = decide(allocator(state, registry_with(PlanChoosingParJob(ascending))), "j")
    assert isinstance(asc, Pending)
    real = allocator(state, shortcuts=False)
    assert placed(state, decide(real, "j")) == [("B", 2), ("A", 1)]
    assert real.stats.plans_tried == 2


# --- rollback --------------------------------------------------------------------------
ROLLBACK_STATE = (
    ClusterBuilder().host("A", slots=2).host("B", slots=1).host("C", slots=1).job("j", tasks=4)
)


def test_abandoned_plan_leaves_a_phantom_debit_without_rollback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spec 'Rollback scope' / Req 4 AC 2: plan [2,2] claims A then fails; without the
    rollback its debit on A stays and every later plan (and the fill) sees A as full."""
    monkeypatch.setattr(AllocContext, "credit", lambda self, claims: None)
    state = ROLLBACK_STATE.build()
    d = decide(allocator(state, shortcuts=False), "j")
    assert isinstance(d, Pending)


def test_failed_plan_is_rolled_back_before_the_next() -> None:
    """Spec 'Rollback scope' / Req 4 AC 2: with the rollback the same job is allocated
    by plan [2,1,1], A included."""
    state = ROLLBACK_STATE.build()
    alloc = allocator(state, shortcuts=False)
    assert placed(state, decide(alloc, "j")) == [("A", 2), ("B", 1), ("C", 1)]
    assert alloc.stats.plans_tried == 3


# --- distinct hosts --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("hosts", "expected"),
    [
        ({"A": 2}, None),
        ({"A": 2, "B": 1}, [("A", 1), ("B", 1)]),
    ],
)
def test_buckets_of_a_plan_go_to_distinct_hosts(
    hosts: dict[str, int], expected: list[tuple[str, int]] | None
) -> None:
    """Spec Req 4 AC 2 / 'Host exclusivity within a plan': every bucket of a plan needs a
    distinct host; plan [1,1] cannot use A twice even though A has 2 free slots."""
    b = ClusterBuilder()
    for name, slots in hosts.items():
        b.host(name, slots=slots)
    state = b.job("j", tasks=2).build()
    plugin = PlanChoosingParJob(lambda pp: [Plan((1, 1))])
    d = decide(allocator(state, registry_with(plugin)), "j")
    if expected is None:
        assert isinstance(d, Pending)
    else:
        assert placed(state, d) == expected


# --- seqjob placement ------------------------------------------------------------------
def seq_cluster() -> ClusterBuilder:
    return (
        ClusterBuilder()
        .host("h0", slots=1, type="Y")
        .host("h1", slots=1, type="X")
        .host("h2", slots=2, mem=100, type="X")
        .host("h3", slots=4, mem=800, type="X")
        .host("h4", slots=8, mem=9000, type="X", status="closed")
        .running("r1", on={"h1": 1})
    )


@pytest.mark.parametrize(
    ("resreq", "host"),
    [
        ("", "h0"),
        ('select[type=="X"]', "h2"),
        ("rusage[mem=200]", "h3"),
        ('select[type=="X"] order[slots]', "h3"),
        ("order[-slots]", "h0"),
        ("order[mem]", "h3"),
        ("order[-mem]", "h2"),
    ],
)
def test_seqjob_lands_on_first_matching_host(resreq: str, host: str) -> None:
    """Spec Req 9 AC 1 / design §3: a one-task job lands on the first ok host, in host
    order, that matches its select and has room; by order[] when it is given."""
    state = seq_cluster().job("j", resreq=resreq).build()
    assert placed(state, run(state)["j"]) == [(host, 1)]


# --- shared resources ------------------------------------------------------------------
def test_shared_license_checked_and_charged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec Req 4 AC 7: the shared-resource check runs once per primary, however many
    plans are tried, and the session's shared availability drops by exactly the amount."""
    calls: list[str] = []

    def counting(pp: PreparedPrimary, ctx: AllocContext) -> PendInfo | None:
        calls.append("check")
        return shared_shortfall(pp, ctx)

    monkeypatch.setattr(engine_mod, "shared_shortfall", counting)
    state = (
        ClusterBuilder()
        .hosts(4, slots=1)
        .shared("lic", 3)
        .job("j", tasks=4, resreq="rusage[lic=1]")
        .build()
    )
    alloc = allocator(state, shortcuts=False)
    before = alloc.books.shared_available("lic")
    d = decide(alloc, "j")
    assert isinstance(d, Dispatched)
    assert alloc.stats.plans_tried == 4  # [4], [2,2], [2,1,1] failed; [1,1,1,1] won
    assert calls == ["check"]
    assert d.allocation.shared == (("lic", 1.0),)
    assert all(c.amounts == () for c in d.allocation.claims)
    assert alloc.books.shared_available("lic") == before - 1


def test_shared_shortfall_pends_before_any_plan() -> None:
    """Spec Req 4 AC 7 / design §5: a job-level shared shortfall pends the job with
    SHARED_RESOURCE, and no plan is tried for it."""
    state = (
        ClusterBuilder()
        .hosts(2, slots=4)
        .shared("lic", 2)
        .running("r", on={"h0": 1}, shared={"lic": 2})
        .job("j", tasks=2, resreq="rusage[lic=1]")
        .build()
    )
    alloc = allocator(state)
    d = decide(alloc, "j")
    assert isinstance(d, Pending)
    assert reason_under_test(d.info) is PendReason.SHARED_RESOURCE
    assert alloc.stats.plans_tried == 0


def test_plans_wider_than_the_hosts_that_take_a_task_are_skipped() -> None:
    """Exact shortcut: once a plan has failed, balanced plans of more buckets than there
    are hosts able to take a task are left out (each bucket needs its own host); the
    fill plan still follows and places the job as without the shortcut."""
    b = ClusterBuilder().host("h0", 10).host("h1", 1).host("h2", 1).host("h3", 1).host("h4", 1)
    state = b.running("r", on={"h3": 1, "h4": 1}).job("j", 12).build()
    fast, plain = allocator(state), allocator(state, shortcuts=False)
    got, expected = decide(fast, "j"), decide(plain, "j")
    assert isinstance(got, Dispatched)
    assert got.allocation == expected.allocation
    assert plain.stats.plans_tried == 6  # [12], [6,6], [4,4,4], [3]*4, [3,3,2,2,2], fill
    assert fast.stats.plans_tried == 4  # [12], [6,6], [4,4,4] (3 hosts take a task), fill


# --- the fill plan ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("resreq", "expected"),
    [
        ("", [("A", 3), ("B", 1)]),
        ("span[hosts=-1]", [("A", 3), ("B", 1)]),
        ("span[ptile=2]", None),
        ("span[hosts=1]", None),
        ("order[-slots]", [("B", 1), ("A", 3)]),
    ],
)
@pytest.mark.parametrize("shortcuts", [True, False])
def test_fill_plan(resreq: str, expected: list[tuple[str, int]] | None, shortcuts: bool) -> None:
    """Design §3 (fill plan): 4 tasks on hosts with 3 and 1 free slots run as 3+1, which no
    balanced plan gives, but only without span (or span[hosts=-1]); with span[ptile=2] or
    span[hosts=1] they do not. The fill walks hosts in host order or by order[]."""
    state = ClusterBuilder().host("A", slots=3).host("B", slots=1).job("j", 4, resreq=resreq)
    decision = run(state.build(), shortcuts=shortcuts)["j"]
    if expected is None:
        assert isinstance(decision, Pending)
        assert reason_under_test(decision.info) is PendReason.SPAN
    else:
        assert placed(state.build(), decision) == expected


def test_fill_plan_respects_per_task_resources() -> None:
    """Design §3 (fill plan): each host takes as many of the remaining tasks as it can
    hold, per-task resources included, and the claims carry those amounts."""
    state = (
        ClusterBuilder()
        .host("A", slots=4, mem=250)
        .host("B", slots=4, mem=100)
        .host("C", slots=1, mem=1000)
        .job("j", tasks=4, resreq="rusage[mem=100]")
        .build()
    )
    d = run(state)["j"]
    assert placed(state, d) == [("A", 2), ("B", 1), ("C", 1)]
    assert isinstance(d, Dispatched)
    assert [c.amounts for c in d.allocation.claims] == [
        (("mem", 200.0),),
        (("mem", 100.0),),
        (("mem", 100.0),),
    ]


# --- a satisfied plan wins at once -----------------------------------------------------
def test_first_satisfied_plan_commits_one_merged_allocation() -> None:
    """Spec Req 4 AC 3/5: the first satisfied plan ([2,2,2] here) becomes one allocation
    with one claim per bucket on distinct hosts, and no later plan is evaluated."""
    state = ClusterBuilder().hosts(5, slots=2).job("j", tasks=6).build()
    alloc = allocator(state, shortcuts=False)
    d = decide(alloc, "j")
    assert placed(state, d) == [("h0", 2), ("h1", 2), ("h2", 2)]
    assert alloc.stats.plans_tried == 3


def test_unsatisfiable_parallel_job_pends_as_a_value() -> None:
    """Spec Req 4 AC 4 / STYLE 4: when no plan can be satisfied the job pends with a
    reason; nothing is raised."""
    state = ClusterBuilder().hosts(2, slots=2).job("j", tasks=5).build()
    d = run(state, shortcuts=False)["j"]
    assert isinstance(d, Pending)
    assert reason_under_test(d.info) is PendReason.NOT_ENOUGH_SLOTS


# --- the session's books ---------------------------------------------------------------
def test_select_sees_what_the_session_handed_out() -> None:
    """Design §3 (charged at once): after a job with rusage[mem=800] lands on the
    1000-MB host, select[mem>500] no longer matches it in the same session."""
    b = ClusterBuilder().host("A", slots=4, mem=1000)
    alone = run(b.job("j2", resreq="select[mem>500]").build())
    assert isinstance(alone["j2"], Dispatched)
    both = ClusterBuilder().host("A", slots=4, mem=1000)
    both.job("j1", resreq="rusage[mem=800]").job("j2", resreq="select[mem>500]")
    decisions = run(both.build())
    assert isinstance(decisions["j1"], Dispatched)
    assert isinstance(decisions["j2"], Pending)
    assert reason_under_test(decisions["j2"].info) is PendReason.SELECT


def test_select_that_turns_true_as_hosts_fill_is_retried_and_never_cached() -> None:
    """Design §3 (cache exclusions): select[slots<2] pends on an empty host, yet an
    identical later job runs once another job has filled the host; it is never cached."""
    state = (
        ClusterBuilder()
        .host("A", slots=4)
        .job("j1", resreq="select[slots<2]")
        .job("j2", tasks=3)
        .job("j3", resreq="select[slots<2]")
        .build()
    )
    result = Session(state).run()
    d = {x.job: x for x in result.decisions}
    assert isinstance(d["j1"], Pending)
    assert not d["j1"].cached
    assert placed(state, d["j2"]) == [("A", 3)]
    assert placed(state, d["j3"]) == [("A", 1)]
    assert result.stats.cache_inserts == 0
    assert result.stats.cache_hits == 0


def test_no_resource_is_handed_out_twice_in_a_session() -> None:
    """Design §3: a dispatched job's resources are charged to the session's books at once;
    no later job of the session can be given them."""
    state = (
        ClusterBuilder()
        .host("A", slots=2, mem=300)
        .job("j1", tasks=2, resreq="rusage[mem=100]")
        .job("j2", resreq="rusage[mem=50]")
        .job("j3", resreq="rusage[mem=150]")
        .build()
    )
    d = run(state)
    assert placed(state, d["j1"]) == [("A", 2)]
    assert isinstance(d["j2"], Pending)
    assert isinstance(d["j3"], Pending)


# --- bulk runs of equal buckets: the same decision as bucket by bucket -----------------
class ReversedWantParJob(ParJobAllocator):
    """The builtin parjob with a fan-out that appends a bucket's amounts in reverse."""

    name = "parjob-reversed"

    def prepare(self, ctx: AllocContext) -> None:
        if ctx.primary is not None and ctx.primary.tasks > 1:
            ctx.request.append(("slots", float(ctx.nslots)))
            ctx.request.extend(reversed(ctx.primary.wants.for_bucket(ctx.nslots, ctx.first)))


def test_a_bulk_run_keeps_the_fan_outs_order_of_amounts() -> None:
    """A claim's amounts come in the order the prepare fan-out built them, whether the
    buckets are placed one by one or as a bulk run (review finding)."""
    state = (
        ClusterBuilder()
        .hosts(4, slots=1, mem=100, tmp=100)
        .job("j", 3, resreq="rusage[mem=10:tmp=5]")
        .build()
    )
    registry = registry_with(ReversedWantParJob())
    fast, exact = (decide(allocator(state, registry, shortcuts=on), "j") for on in (True, False))
    assert fast == exact
    assert isinstance(fast, Dispatched)
    assert fast.allocation.claims[0].amounts == (("tmp", 5.0), ("mem", 10.0))


@pytest.mark.parametrize("shortcuts", [True, False])
def test_a_host_lacking_a_resource_is_refused_even_for_none_of_it(shortcuts: bool) -> None:
    """rusage[mem=0] on a host without mem fails the exact try (NaN never fits), so a
    bulk run must pass it over too (review finding)."""
    state = (
        ClusterBuilder()
        .host("h0", 1)
        .host("h1", 1, mem=100)
        .host("h2", 1, mem=100)
        .host("h3", 1, mem=100)
        .job("j", 3, resreq="rusage[mem=0]")
        .build()
    )
    decision = decide(allocator(state, shortcuts=shortcuts), "j")
    assert placed(state, decision) == [("h1", 1), ("h2", 1), ("h3", 1)]


# --- allocations are values --------------------------------------------------------------
def test_a_claim_run_owns_a_read_only_copy_of_its_hosts() -> None:
    """A ClaimRun neither freezes nor follows the caller's array; it equals its claims."""
    base = np.array([0, 1, 2, 3])
    run = ClaimRun(base[:2], 1, (("mem", 5.0),))
    base[0] = 3
    assert base.flags.writeable
    assert run.hosts.tolist() == [0, 1]
    assert not run.hosts.flags.writeable
    assert list(run.claims()) == [Claim(0, 1, (("mem", 5.0),)), Claim(1, 1, (("mem", 5.0),))]
    assert JobAllocation((run,)) == JobAllocation(tuple(run.claims()))


@pytest.mark.parametrize(
    "hosts",
    [np.array([True, False]), np.array([0.0, 1.0]), np.array([[0, 1]]), [0, 1]],
    ids=["bool", "float", "2-d", "list"],
)
def test_a_claim_run_wants_a_1d_integer_array(hosts: object) -> None:
    with pytest.raises(ValueError, match="1-D array of host indices"):
        ClaimRun(hosts, 1)  # type: ignore[arg-type]


def test_a_job_allocation_cannot_be_changed() -> None:
    allocation = JobAllocation((Claim(0, 1, ()),))
    with pytest.raises(AttributeError, match="immutable"):
        allocation.parts = ()  # type: ignore[misc]
    assert allocation.count == 1
    columns = allocation.columns()
    with pytest.raises(TypeError):
        columns.amounts["mem"] = np.zeros(1)  # type: ignore[index]


def test_a_job_allocation_pickles_whole() -> None:
    """A job allocation survives pickling (a simulation saved between steps, a sweep's
    results between processes), its read caches included or not: equal, same columns."""
    import pickle

    hosts = np.array([2, 3, 5], dtype=np.intp)
    allocation = JobAllocation((Claim(0, 2, ()), ClaimRun(hosts, 1)), (("lic", 1.0),), 1)
    fresh = pickle.loads(pickle.dumps(allocation))
    assert fresh == allocation
    allocation.columns()
    _ = allocation.claims  # the caches made
    again = pickle.loads(pickle.dumps(allocation))
    assert again == allocation
    assert (again.count, again.slots) == (4, 5)
    assert again.columns().hosts.tolist() == [0, 2, 3, 5]
    assert (again.shared, again.alternative) == ((("lic", 1.0),), 1)


def test_a_job_allocation_pickled_by_slots_loads() -> None:
    """A pickle made before JobAllocation reduced itself to its parts holds its slots'
    state, which loading applies with __setstate__ (a saved simulation of then loads)."""
    allocation = JobAllocation((Claim(1, 2, ()),), (), None)
    names = ("_claims", "_columns", "alternative", "count", "parts", "shared", "slots")
    state = (None, {n: getattr(allocation, n) for n in names})
    old = JobAllocation.__new__(JobAllocation)
    old.__setstate__(state)
    assert old == allocation
    assert (old.count, old.slots) == (1, 2)
