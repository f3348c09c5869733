"""Allocator plugins: the registry, election, the prepare fan-out and its guards
(spec Req 4 AC 6, Req 9 AC 1/5), and a conformance suite every plugin must pass."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.alloc import (
    Allocator,
    AllocatorPlugin,
    AllocatorRegistry,
    AllocContext,
    AllocMode,
    AllocStats,
    CancelToken,
    Decision,
    Dispatched,
    LimitBooks,
    ParJobAllocator,
    Pending,
    Plan,
    PlanIterator,
    PreparedPrimary,
    SeqJobAllocator,
    SessionBooks,
    default_registry,
    prepare_requirement,
)
from xce.alloc.plugins import request_host_want
from xce.cluster import ClusterState, HostStatus
from xce.core import Session
from xce.core.session import job_request
from xce.errors import RegistryError


def prepared(state: ClusterState, text: str, tasks: int) -> PreparedPrimary:
    return prepare_requirement(text, state.catalog, tasks, tasks).alternatives[0][0]


def decide(alloc: Allocator, job_id: str, mode: AllocMode = AllocMode.NORMAL) -> Decision:
    job = next(j for j in alloc.state.jobs if j.id == job_id)
    return alloc.decide(job_request(job, alloc.state.catalog), mode)


class Spy:
    """A plugin that is never elected and records every prepare call it receives."""

    name = "spy"

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, AllocMode, float]] = []

    def elect(self, primary: PreparedPrimary) -> bool:
        return False

    def prepare(self, ctx: AllocContext) -> None:
        assert ctx.primary is not None
        slots = sum(a for name, a in ctx.request if name == "slots")
        self.calls.append((ctx.primary.tasks, ctx.nslots, ctx.mode, slots))

    def plans(self, primary: PreparedPrimary, ctx: AllocContext) -> PlanIterator:
        raise AssertionError("never elected")


class UnguardedSeqJob(SeqJobAllocator):
    """seqjob without the Req 4 AC 6 `maxTasks == 1` guard on its prepare hook."""

    def prepare(self, ctx: AllocContext) -> None:
        request_host_want(ctx, 1)


# --- the registry ----------------------------------------------------------------------
def test_registry_refuses_duplicate_names() -> None:
    """Spec Req 9 / STYLE 3 (a registry refusing duplicates): registering a second plugin
    under a taken name raises RegistryError, whether at construction or later."""
    registry = default_registry()
    assert registry.names() == ["seqjob", "parjob"]
    with pytest.raises(RegistryError, match="seqjob"):
        registry.register(UnguardedSeqJob())
    with pytest.raises(RegistryError):
        AllocatorRegistry((ParJobAllocator(), ParJobAllocator()))
    registry.register(Spy())
    assert registry.names() == ["seqjob", "parjob", "spy"]
    assert default_registry().names() == ["seqjob", "parjob"]  # a fresh one each time


@pytest.mark.parametrize(("tasks", "name"), [(1, "seqjob"), (2, "parjob"), (7, "parjob")])
def test_election_by_task_count(tasks: int, name: str) -> None:
    """Spec 'Who uses this composition' / Req 4 AC 1: maxTasks == 1 → seqjob,
    maxTasks > 1 → parjob."""
    state = ClusterBuilder().host("A").build()
    assert default_registry().elect(prepared(state, "", tasks)).name == name


def test_election_asks_plugins_in_registration_order() -> None:
    """AllocatorPlugin contract: the first plugin, in registration order, that elects a
    primary places it; a registry where none elects raises RegistryError (misuse)."""
    state = ClusterBuilder().host("A").build()
    pp = prepared(state, "", 3)

    class Greedy(ParJobAllocator):
        name = "greedy"

        def elect(self, primary: PreparedPrimary) -> bool:
            return True

    assert AllocatorRegistry((Greedy(), ParJobAllocator())).elect(pp).name == "greedy"
    with pytest.raises(RegistryError):
        AllocatorRegistry((SeqJobAllocator(),)).elect(pp)


def test_builtin_plugins_obey_the_protocol() -> None:
    """Spec Req 2 AC 1 / STYLE 3: every builtin allocator is an AllocatorPlugin."""
    for plugin in default_registry():
        assert isinstance(plugin, AllocatorPlugin)


# --- the prepare fan-out ---------------------------------------------------------------
def test_prepare_fan_out_reaches_every_plugin_before_each_host_try() -> None:
    """Spec Req 4 AC 6: before each host try, every registered plugin's prepare hook runs
    (elected or not), with ctx.nslots the bucket size; thanks to the guards exactly one
    builtin hook contributes the bucket's slots."""
    spy = Spy()
    registry = AllocatorRegistry((SeqJobAllocator(), ParJobAllocator(), spy))
    state = (
        ClusterBuilder()
        .host("A", slots=1)
        .host("B", slots=2)
        .host("C", slots=2, mem=1)
        .host("D", slots=2, mem=1)
        .job("par", tasks=3)
        .job("seq", tasks=1)
        .job("mem", tasks=2, resreq="rusage[mem=1]")
        .build()
    )
    result = Session(state, registry=registry).run()
    assert all(isinstance(d, Dispatched) for d in result.decisions)
    assert len(spy.calls) == result.stats.host_tries > 0
    assert {tasks for tasks, *_ in spy.calls} == {1, 2, 3}
    for tasks, nslots, _, slots in spy.calls:
        assert slots == nslots
        if tasks == 1:
            assert nslots == 1


@pytest.mark.parametrize(
    ("slots", "guarded", "unguarded"),
    [
        pytest.param(2, [("A", 2)], None, id="failed allocation"),
        pytest.param(4, [("A", 2)], [("A", 3)], id="wrong claim"),
    ],
)
def test_unguarded_seqjob_prepare_corrupts_parallel_jobs(
    slots: int, guarded: list[tuple[str, int]], unguarded: list[tuple[str, int]] | None
) -> None:
    """Spec Req 4 AC 6: the fan-out calls every plugin's prepare hook, and entries are
    appended without dedup, so a seqjob hook without its maxTasks == 1 guard adds a
    second, wrong want to a parallel job's request: its 2-task job then claims 3 slots
    or fails; the real, guarded seqjob does not."""
    state = ClusterBuilder().host("A", slots=slots).job("j", tasks=2).build()

    def placed(registry: AllocatorRegistry) -> list[tuple[str, int]] | None:
        alloc = Allocator(state, registry)
        alloc.begin_session()
        d = decide(alloc, "j")
        if isinstance(d, Pending):
            return None
        return [(state.hosts.names[c.host], c.slots) for c in d.allocation.claims]

    assert placed(default_registry()) == guarded
    assert placed(AllocatorRegistry((UnguardedSeqJob(), ParJobAllocator()))) == unguarded


# --- allocation mode -------------------------------------------------------------------
def test_alloc_mode_defaults_to_normal() -> None:
    """Spec Req 9 AC 5: the context carries an allocation mode, NORMAL by default; the
    mode a job is decided in reaches every hook through the context."""
    assert (AllocMode.NORMAL.value, AllocMode.PREEMPT.value) == (0, 1)
    state = ClusterBuilder().host("A", slots=2).job("j", tasks=1).build()
    books = SessionBooks(state)
    ctx = AllocContext(
        books,
        LimitBooks(state),
        user="u",
        queue="normal",
        project="default",
        token=CancelToken(),
        stats=AllocStats(),
    )
    assert ctx.mode is AllocMode.NORMAL
    spy = Spy()
    alloc = Allocator(state, AllocatorRegistry((SeqJobAllocator(), ParJobAllocator(), spy)))
    alloc.begin_session()
    decide(alloc, "j")
    alloc.begin_session()
    decide(alloc, "j", AllocMode.PREEMPT)
    assert [mode for _, _, mode, _ in spy.calls] == [AllocMode.NORMAL, AllocMode.PREEMPT]


# --- seqjob regression -----------------------------------------------------------------
SEQ_RESREQS: dict[str, Callable[[int, float, str], bool]] = {
    "": lambda free, mem, typ: True,
    'select[type=="X"]': lambda free, mem, typ: typ == "X",
    "select[mem>=200]": lambda free, mem, typ: mem >= 200,
    "rusage[mem=150]": lambda free, mem, typ: mem >= 150,
    'select[type=="Y"] rusage[mem=100]': lambda free, mem, typ: typ == "Y" and mem >= 100,
}


@st.composite
def seq_cases(draw: st.DrawFn) -> tuple[ClusterState, str, str | None]:
    b = ClusterBuilder()
    expected: str | None = None
    resreq = draw(st.sampled_from(sorted(SEQ_RESREQS)))
    for i in range(draw(st.integers(1, 8))):
        slots = draw(st.integers(1, 3))
        busy = draw(st.integers(0, slots))
        mem = draw(st.sampled_from([0, 100, 150, 300]))
        typ = draw(st.sampled_from(["X", "Y"]))
        ok = draw(st.sampled_from(["ok", "ok", "closed", "unavail"]))
        b.host(f"h{i}", slots=slots, mem=mem, type=typ, status=ok)
        if busy:
            b.running(f"r{i}", on={f"h{i}": busy})
        fits = ok == "ok" and slots - busy >= 1 and SEQ_RESREQS[resreq](slots - busy, mem, typ)
        if expected is None and fits:
            expected = f"h{i}"
    return b.job("j", resreq=resreq).build(), resreq, expected


@given(seq_cases())
def test_seqjob_is_first_matching_host_in_host_order(
    case: tuple[ClusterState, str, str | None],
) -> None:
    """Spec Req 9 AC 1: seqjob, rewrapped onto the iterators, still places a one-task job
    on the first ok host, in host order, that matches its select and has room."""
    state, _, expected = case
    (d,) = Session(state).run().decisions
    if expected is None:
        assert isinstance(d, Pending)
    else:
        assert isinstance(d, Dispatched)
        assert [state.hosts.names[c.host] for c in d.allocation.claims] == [expected]


# --- conformance suite over every allocator plugin -------------------------------------
PLUGIN_NAMES = default_registry().names()  # plugins registered later join automatically
RESREQS = [
    "",
    "span[hosts=1]",
    "span[hosts=-1]",
    "span[ptile=2]",
    "span[ptile=3]",
    "order[slots]",
    "order[-slots] rusage[mem=50]",
    "rusage[mem=100:lic=1]",
    "select[mem>=100]",
    'select[type=="X"] span[ptile=1]',
    "1*{rusage[mem=50]} + 2*{select[mem>0]}",
    '{span[hosts=1]} || {select[type=="Y"]}',
]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    b = ClusterBuilder().shared("lic", draw(st.integers(0, 3)))
    n = draw(st.integers(1, 6))
    for i in range(n):
        slots = draw(st.integers(1, 4))
        b.host(
            f"h{i}",
            slots=slots,
            mem=draw(st.sampled_from([0, 100, 400, 1000])),
            type=draw(st.sampled_from(["X", "Y"])),
            status=draw(st.sampled_from(["ok", "ok", "ok", "closed"])),
        )
        busy = draw(st.integers(0, slots))
        if busy:
            b.running(f"r{i}", on={f"h{i}": busy})
    for j in range(draw(st.integers(1, 6))):
        resreq = draw(st.sampled_from(RESREQS))
        tasks = None if "*{" in resreq else draw(st.integers(1, 6))
        b.job(f"j{j}", tasks, resreq=resreq, user=draw(st.sampled_from(["u", "v"])))
    return b.build()


def check_plan_iterator(plugin: AllocatorPlugin, pp: PreparedPrimary, ctx: AllocContext) -> None:
    """The PlanIterator contract (spec Req 2 AC 2-6) for one primary."""
    token = ctx.token
    it = plugin.plans(pp, ctx)
    assert isinstance(it, PlanIterator)
    produced: list[Plan] = []
    for _ in range(pp.tasks + 3):  # a bound: N balanced plans and one fill at most
        before = token.checkpoints
        try:
            plan = next(it)
        except StopIteration:
            assert token.checkpoints == before + 1
            break
        assert token.checkpoints == before + 1  # every next is a checkpoint
        assert not (produced and produced[-1].fill)  # the fill plan comes last
        produced.append(plan)
    else:
        pytest.fail(f"{plugin.name}: more than {pp.tasks + 2} plans for {pp.tasks} tasks")
    assert produced or ctx.books.n_ok < pp.tasks  # too few hosts: no plan can succeed
    for plan in produced:
        if plan.fill:
            continue
        assert plan.buckets
        assert min(plan.buckets) >= 1
        assert sum(plan.buckets) == pp.tasks
        assert list(plan.buckets) == sorted(plan.buckets, reverse=True)
    for _ in range(2):
        with pytest.raises(StopIteration):
            next(it)
    it.close()
    it.close()
    with pytest.raises(StopIteration):
        next(it)


def check_allocations(state: ClusterState, decisions: tuple[Decision, ...]) -> None:
    """No host is ever given more than it had free at session start; every term gets
    its task count on distinct hosts."""
    given_out: dict[tuple[int, str], float] = defaultdict(float)
    shared = 0.0
    for d in decisions:
        if not isinstance(d, Dispatched):
            continue
        per_term: dict[int, list[int]] = defaultdict(list)
        for c in d.allocation.claims:
            assert c.slots >= 1
            assert state.hosts.status[c.host] == HostStatus.OK
            per_term[c.term].append(c.host)
            given_out[(c.host, "slots")] += c.slots
            for name, amount in c.amounts:
                given_out[(c.host, name)] += amount
        for hosts in per_term.values():
            assert len(hosts) == len(set(hosts))
        shared += sum(a for _, a in d.allocation.shared)
    for (h, name), amount in given_out.items():
        assert amount <= state.free(name)[h] + 1e-9
    assert shared <= state.shared_free("lic") + 1e-9


@pytest.mark.parametrize("plugin_name", PLUGIN_NAMES)
@given(state=clusters())
def test_conformance(plugin_name: str, state: ClusterState) -> None:
    """Spec Req 2 / Req 4 conformance, for every allocator plugin of default_registry():
    each primary it elects gets a plan iterator obeying the PlanIterator contract (one
    checkpoint per next, stable end, idempotent close), each plan's buckets sum to the
    primary's tasks (except the fill plan, last) and descend; and a session's
    allocations never exceed any host's availability, with distinct hosts per term."""
    registry = default_registry()
    plugin = registry[plugin_name]
    books = SessionBooks(state)
    for job in state.jobs:
        request = job_request(job, state.catalog)
        for terms in request.requirement.alternatives:
            for pp in terms:
                if registry.elect(pp) is not plugin:
                    continue
                ctx = AllocContext(
                    books,
                    LimitBooks(state),
                    user=job.user,
                    queue=job.queue,
                    project=job.project,
                    token=CancelToken(),
                    stats=AllocStats(),
                )
                ctx.primary = pp
                check_plan_iterator(plugin, pp, ctx)
    result = Session(state, registry=registry).run()
    assert len(result.decisions) == len(state.jobs)
    check_allocations(state, result.decisions)
    for d in result.dispatched:
        job = next(j for j in state.jobs if j.id == d.job)
        req = job_request(job, state.catalog).requirement
        alt = d.allocation.alternative or 0
        for t, pp in enumerate(req.alternatives[alt]):
            assert sum(c.slots for c in d.allocation.claims if c.term == t) == pp.tasks
