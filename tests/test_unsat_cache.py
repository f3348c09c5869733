"""The session-level unsatisfiable-requirement cache (spec Req 7, design §3)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import xce.alloc.engine as engine_mod
from builders import ClusterBuilder
from xce.alloc import (
    Allocator,
    AllocContext,
    AllocOptions,
    CancelToken,
    Decision,
    Dispatched,
    HostFinder,
    HostIterator,
    ParJobAllocator,
    Pending,
    PendReason,
    PlanIterator,
    PreparedPrimary,
    SeqJobAllocator,
)
from xce.alloc.request import Amounts
from xce.cluster import ClusterState
from xce.core import Session
from xce.core.session import job_request

PlansMethod = Callable[[Any, PreparedPrimary, AllocContext], PlanIterator]


def _counting(real: PlansMethod, counts: Counter[str]) -> PlansMethod:
    def plans(self: Any, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        counts["plans"] += 1
        return real(self, primary, ctx)

    return plans


@pytest.fixture
def constructed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts plan iterators (both builtin plugins) and host iterators constructed."""
    counts: Counter[str] = Counter()
    for cls in (SeqJobAllocator, ParJobAllocator):
        monkeypatch.setattr(cls, "plans", _counting(cls.plans, counts))

    class CountingHostIterator(HostIterator):
        def __init__(
            self,
            finder: HostFinder,
            nslots: int,
            want: Amounts,
            token: CancelToken,
            after: int | None = None,
        ) -> None:
            counts["hosts"] += 1
            super().__init__(finder, nslots, want, token, after=after)

    monkeypatch.setattr(engine_mod, "HostIterator", CountingHostIterator)
    return counts


def cluster() -> ClusterBuilder:
    """Free now: A 2 slots / 1000 mem, B 2 / 500, C nothing (running work holds its 4
    slots and 1000 of its 3000 mem). C is what makes the unsatisfiable jobs below wait
    for resources rather than never run (NEVER_RUNNABLE, issue 9): on the empty cluster
    each of them fits C."""
    return (
        ClusterBuilder()
        .queue("normal")
        .queue("other")
        .host("A", slots=2, mem=1000, type="X")
        .host("B", slots=2, mem=500, type="X")
        .host("C", slots=4, mem=3000, type="X")
        .running("r", on={"C": 4}, rusage={"mem": 250})
    )


def allocator(state: ClusterState, **options: bool) -> Allocator:
    alloc = Allocator(state, options=AllocOptions(**options))
    alloc.begin_session()
    return alloc


def decide(alloc: Allocator, job_id: str) -> Decision:
    job = next(j for j in alloc.state.jobs if j.id == job_id)
    return alloc.decide(job_request(job, alloc.state.catalog))


def key(alloc: Allocator, job_id: str) -> tuple[object, str, str, str]:
    job = next(j for j in alloc.state.jobs if j.id == job_id)
    pp = job_request(job, alloc.state.catalog).requirement.alternatives[0][0]
    return (pp.primary.fingerprint, job.user, job.queue, job.project)


UNSATISFIABLE = [
    pytest.param("span[hosts=1]", 3, PendReason.SPAN, id="span"),
    pytest.param("select[mem>2500]", 1, PendReason.SELECT, id="select-seqjob"),
    pytest.param("select[mem>600]", 3, PendReason.NOT_ENOUGH_SLOTS, id="slots"),
    pytest.param("rusage[mem=600]", 2, PendReason.NOT_ENOUGH_RESOURCE, id="resource"),
]


@pytest.mark.parametrize(("resreq", "tasks", "reason"), UNSATISFIABLE)
def test_identical_unsatisfiable_job_is_a_hit(
    constructed: Counter[str], resreq: str, tasks: int, reason: PendReason
) -> None:
    """Spec Req 7 AC 3-5: once a primary was found unsatisfiable, the next job of the
    same fingerprint, user, queue and project pends at once with the same reason and
    cached=True, constructing no plan or host iterator."""
    state = (
        cluster()
        .job("j1", tasks, resreq=resreq, user="alice")
        .job("j2", tasks, resreq=resreq, user="alice")
        .build()
    )
    alloc = allocator(state, shortcuts=False)
    first = decide(alloc, "j1")
    assert isinstance(first, Pending)
    assert (first.info.reason, first.cached) == (reason, False)
    assert constructed["plans"] >= 1
    assert constructed["hosts"] >= 1
    before = Counter(constructed)
    second = decide(alloc, "j2")
    assert isinstance(second, Pending)
    assert second.cached
    assert second.info == first.info  # reason and message
    assert constructed == before
    assert (alloc.stats.cache_inserts, alloc.stats.cache_hits) == (1, 1)


@pytest.mark.parametrize(
    "differs",
    [{"user": "bob"}, {"queue": "other"}, {"project": "p2"}, {"tasks": 4}],
    ids=lambda d: next(iter(d)),
)
def test_another_identity_or_shape_is_a_miss(
    constructed: Counter[str], differs: dict[str, object]
) -> None:
    """Spec Req 7 AC 1 / design §3: the key is fingerprint + user + queue + project, so
    another user, queue or project (or another task count) is a miss and allocates in
    full (with ``reuse_failures`` off: that shortcut answers such a job without plans
    while the books are unchanged, see below)."""
    base: dict[str, object] = {"tasks": 3, "user": "alice", "queue": "normal", "project": "p1"}
    state = (
        cluster()
        .job("j1", resreq="span[hosts=1]", **base)  # type: ignore[arg-type]
        .job("j2", resreq="span[hosts=1]", **{**base, **differs})  # type: ignore[arg-type]
        .build()
    )
    alloc = allocator(state, reuse_failures=False)
    decide(alloc, "j1")
    before, misses = constructed["plans"], alloc.stats.cache_misses
    second = decide(alloc, "j2")
    assert isinstance(second, Pending)
    assert not second.cached
    assert constructed["plans"] > before  # allocated in full (plans constructed)
    assert alloc.stats.cache_misses == misses + 1
    assert alloc.stats.cache_hits == 0
    assert len(alloc.cache) == 2


def test_cache_key_is_fingerprint_user_queue_project() -> None:
    """Spec Req 7 AC 1: entries are keyed by (fingerprint, user, queue, project); the
    same requirement spelled differently has the same fingerprint, so it hits."""
    state = (
        cluster()
        .job("j1", 3, resreq="span[hosts=1]", user="alice", project="p1")
        .job("j2", 3, resreq="span[ hosts = 1 ]", user="alice", project="p1")
        .build()
    )
    alloc = allocator(state)
    decide(alloc, "j1")
    assert key(alloc, "j1") in alloc.cache
    assert key(alloc, "j1")[1:] == ("alice", "normal", "p1")
    assert len(alloc.cache) == 1
    assert key(alloc, "j2") == key(alloc, "j1")
    second = decide(alloc, "j2")
    assert isinstance(second, Pending)
    assert second.cached


def test_every_session_starts_with_an_empty_cache() -> None:
    """Spec Req 7 AC 2: begin_session clears the cache; a second Session.run decides the
    first unsatisfiable job in full again."""
    state = (
        cluster().job("j1", 3, resreq="span[hosts=1]").job("j2", 3, resreq="span[hosts=1]").build()
    )
    session = Session(state)
    for _ in range(2):
        result = session.run()
        assert [d.cached for d in result.pending] == [False, True]
        assert (result.stats.cache_inserts, result.stats.cache_hits) == (1, 1)
    assert len(session.allocator.cache) == 1
    session.allocator.begin_session()
    assert len(session.allocator.cache) == 0


def test_shortcut_rejection_counts_as_every_plan_failed(constructed: Counter[str]) -> None:
    """Design §3: a job turned away by an exact shortcut (more tasks than free slots
    anywhere) is cached like one whose plans all failed."""
    state = cluster().job("j1", 5).job("j2", 5).build()
    alloc = allocator(state)
    first, second = decide(alloc, "j1"), decide(alloc, "j2")
    assert isinstance(first, Pending)
    assert isinstance(second, Pending)
    assert first.info.reason is PendReason.NOT_ENOUGH_SLOTS
    assert (first.cached, second.cached) == (False, True)
    assert alloc.stats.cache_inserts == 1


def test_dispatched_jobs_are_never_cached() -> None:
    """Spec Req 7 AC 3 (diagram): a successful allocation makes no cache entry."""
    state = cluster().job("j1", 2).job("j2", 2).build()
    result = Session(state).run()
    assert len(result.dispatched) == 2
    assert result.stats.cache_inserts == 0


def test_select_that_can_turn_true_is_never_looked_up_nor_cached(
    constructed: Counter[str],
) -> None:
    """Design §3 (exclusions): a primary whose select compares a consumable with `<` may
    turn true as resources fall, so it is neither looked up nor cached (``reuse_failures``
    off: on unchanged books that shortcut answers j2 exactly, volatile select or not)."""
    state = (
        cluster().job("j1", resreq="select[mem<100]").job("j2", resreq="select[mem<100]").build()
    )
    alloc = allocator(state, reuse_failures=False)
    decisions = []
    for job in ("j1", "j2"):
        before = constructed["plans"]
        decisions.append(decide(alloc, job))
        assert constructed["plans"] > before  # each allocated in full
    assert all(isinstance(d, Pending) and not d.cached for d in decisions)
    s = alloc.stats
    assert (s.cache_hits, s.cache_misses, s.cache_inserts) == (0, 0, 0)


def test_compound_term_failing_behind_earlier_debits_is_not_cached() -> None:
    """Design §3 (exclusions): a COMPOUND term that failed while earlier terms of the
    same job held debits is not cached (its failure may be due to its own job): a later
    job whose requirement is exactly that term still allocates."""
    state = (
        ClusterBuilder()
        .host("A", slots=2, type="X")
        .job("j1", resreq='1*{select[type=="X"]} + 2*{select[type=="X"]}', user="u")
        .job("j2", 2, resreq='select[type=="X"]', user="u")
        .build()
    )
    alloc = allocator(state)
    job1 = next(j for j in state.jobs if j.id == "j1")
    terms = job_request(job1, state.catalog).requirement.alternatives[0]
    assert terms[1].primary.fingerprint == key(alloc, "j2")[0]  # j2 is exactly term 1
    assert isinstance(decide(alloc, "j1"), Pending)
    assert alloc.stats.cache_inserts == 0
    d2 = decide(alloc, "j2")
    assert isinstance(d2, Dispatched)
    assert d2.allocation.slots == 2


def test_compound_first_term_failing_clean_is_cached() -> None:
    """Spec Req 7 AC 3 / design §3: a term failing while the job holds nothing is cached
    under its own fingerprint, so a simple job of that shape hits. (The Z host is busy,
    not missing: the term waits for slots rather than never running, issue 9.)"""
    state = (
        ClusterBuilder()
        .host("A", slots=2, type="X")
        .host("Z", slots=2, type="Z")
        .running("r", on={"Z": 2})
        .job("j1", resreq='2*{select[type=="Z"]} + 1*{select[type=="X"]}', user="u")
        .job("j2", 2, resreq='select[type=="Z"]', user="u")
        .build()
    )
    alloc = allocator(state)
    first = decide(alloc, "j1")
    second = decide(alloc, "j2")
    assert isinstance(first, Pending)
    assert isinstance(second, Pending)
    assert second.cached
    assert second.info.reason is first.info.reason is PendReason.NOT_ENOUGH_SLOTS


def test_cache_off_gives_the_same_decisions() -> None:
    """Spec Req 7 (an optimisation only) / AllocOptions: with the cache off nothing is
    looked up or stored, and every decision is the same apart from `cached`."""
    state = (
        cluster()
        .job("j1", 3, resreq="span[hosts=1]")
        .job("j2", 3, resreq="span[hosts=1]")
        .job("j3", 2)
        .job("j4", 3)
        .build()
    )
    on = Session(state).run()
    off = Session(state, options=AllocOptions(cache=False)).run()
    strip = [(d.job, d.info if isinstance(d, Pending) else d.allocation) for d in on.decisions]
    assert strip == [
        (d.job, d.info if isinstance(d, Pending) else d.allocation) for d in off.decisions
    ]
    s = off.stats
    assert (s.cache_hits, s.cache_misses, s.cache_inserts) == (0, 0, 0)
    assert not any(d.cached for d in off.pending)


def test_alter_job_hit_when_every_alternative_is_cached() -> None:
    """Spec Req 7 / design §3 (cache wraps each primary): an ALTER job is cached only
    when every alternative's primary answered from the cache; it reports the first
    alternative's reason."""
    resreq = '{select[type=="Z"]} || {span[hosts=1]}'
    state = cluster().job("j1", 3, resreq=resreq).job("j2", 3, resreq=resreq).build()
    alloc = allocator(state)
    first, second = decide(alloc, "j1"), decide(alloc, "j2")
    assert isinstance(first, Pending)
    assert isinstance(second, Pending)
    assert (first.cached, second.cached) == (False, True)
    assert second.info.reason is first.info.reason is PendReason.SELECT


# -- AllocOptions.reuse_failures: a failure on unchanged books is answered again ---------


def _pair(differs: dict[str, object]) -> ClusterState:
    base: dict[str, object] = {"tasks": 3, "user": "alice", "queue": "normal", "project": "p1"}
    return (
        cluster()
        .job("j1", resreq="span[hosts=1]", **base)  # type: ignore[arg-type]
        .job("j2", resreq="span[hosts=1]", **{**base, **differs})  # type: ignore[arg-type]
        .job("small", resreq="rusage[mem=1]", tasks=1)
        .job("j3", resreq="span[hosts=1]", **base)  # type: ignore[arg-type]
        .build()
    )


@pytest.mark.parametrize("cache", [True, False])
def test_a_failure_on_unchanged_books_is_reused_for_another_identity(
    constructed: Counter[str], cache: bool
) -> None:
    """Issue 9 (exact shortcuts): another user's identical primary, tried before anything
    was charged, gets the first failure's pend info without a plan being constructed —
    the very reason, message and per-host breakdown a full attempt gives (the same books
    give the same answer), not marked ``cached`` (it is not a Req 7 hit)."""
    state = _pair({"user": "bob"})
    full = allocator(state, cache=cache, reuse_failures=False)
    fast = allocator(state, cache=cache)
    decide(fast, "j1")
    before = constructed["plans"]
    got = decide(fast, "j2")
    assert constructed["plans"] == before  # no plan: the failure was reused
    assert fast.stats.failures_reused == 1
    decide(full, "j1")
    want = decide(full, "j2")
    assert isinstance(got, Pending)
    assert isinstance(want, Pending)
    assert not got.cached
    assert not want.cached
    assert (got.info, got.info.hosts, got.info.examples) == (
        want.info,
        want.info.hosts,
        want.info.examples,
    )


def test_a_charge_ends_the_reuse(constructed: Counter[str]) -> None:
    """Issue 9: once a job is charged the books have changed, and an identical primary of
    another identity is tried in full again (its pend reason may have changed)."""
    state = _pair({"user": "bob"})
    alloc = allocator(state, cache=False)
    decide(alloc, "j1")
    assert isinstance(decide(alloc, "small"), Dispatched)
    before = constructed["plans"]
    assert isinstance(decide(alloc, "j3"), Pending)
    assert constructed["plans"] > before
    assert alloc.stats.failures_reused == 0


def test_reuse_respects_the_limits_that_apply() -> None:
    """Issue 9: the reuse key holds the limits that apply to the job, so a job that a
    limit holds back and one it does not are never answered by each other."""
    state = (
        cluster()
        .limit("cap", users=["bob"], slots=1)
        .job("j1", resreq="span[hosts=1]", tasks=3, user="alice")
        .job("j2", resreq="span[hosts=1]", tasks=3, user="bob")
        .build()
    )
    alloc = allocator(state, cache=False)
    decide(alloc, "j1")
    decide(alloc, "j2")
    assert alloc.stats.failures_reused == 0
