"""Job pickers (issue 4, "Picker interface"): fcfs, strict and fairshare orders, per-queue
and default pickers, the registry, and the JobPicker/QueueCursor contracts.

Acceptance: "`strict` vs `fcfs` on a hand-made state: a large head job blocks a queue
under `strict` and not under `fcfs`; `fairshare` orders users as its documented formula
says (table-driven test)."
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.alloc import Claim, Decision, Dispatched, JobAllocation, PendInfo, Pending, PendReason
from xce.cluster import ClusterState, PendingJob, Queue, load_state, state_from_dict
from xce.core import (
    FairsharePicker,
    FcfsPicker,
    JobPicker,
    Pick,
    PickerRegistry,
    PlainCursor,
    PlainOrder,
    QueueCursor,
    QueuesChanged,
    SchedulerCore,
    Session,
    StrictPicker,
    default_pickers,
    fairshare_priority,
    fcfs_order,
)
from xce.core.pickers import PriorityPicker, held_slots, plain_order
from xce.errors import EventError, InputError, RegistryError
from xce.priority.lsf import LsfFairsharePicker
from xce.priority.multifactor import MultifactorPicker

BUILTINS = ("fcfs", "strict", "fairshare", "priority", "multifactor", "lsf-fairshare")
HUGE = 10_000  # tasks no test cluster can hold: such a job always pends
# (NEVER_RUNNABLE once the allocator says so; a job that is to wait for resources, and
# hold a strict queue, must fit the empty cluster: see ``busy_host``)
TOO_BIG = ("NOT_ENOUGH_SLOTS", "NEVER_RUNNABLE")
RUN = "run"  # the outcome of a dispatched job in the tables below


def busy_host(b: ClusterBuilder, free: int, held: int = 8) -> ClusterBuilder:
    """Host h0 with ``free`` slots free and ``held`` more held by running work r0 (queue
    "elsewhere"): a job of up to ``free + held`` tasks could run there some day, so one
    wider than ``free`` waits for resources (not NEVER_RUNNABLE)."""
    return b.host("h0", slots=free + held).running("r0", on={"h0": held}, queue="elsewhere")


def decide(
    state: ClusterState, picker: str | None = None, *, threads: bool = False
) -> tuple[Decision, ...]:
    return Session(state, picker=picker).run(threads=threads).decisions


def outcome(decision: Decision) -> str:
    """``run`` for a dispatched job, else its pend reason code."""
    return RUN if isinstance(decision, Dispatched) else decision.info.reason.value


def order(decisions: Sequence[Decision]) -> list[str]:
    return [d.job for d in decisions]


def outcomes(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.job: outcome(d) for d in decisions}


# --- fcfs ------------------------------------------------------------------------------
# (declared queues {name: priority}, jobs (id, queue, submit_time) in file order, order)
FCFS_ORDER = {
    "queue priority high first": (
        {"low": 10, "high": 50},
        [("l1", "low", 0), ("h1", "high", 5), ("l2", "low", 1), ("h2", "high", 6)],
        ["h1", "h2", "l1", "l2"],
    ),
    "submit time within a queue": (
        {},
        [("a", "normal", 3), ("b", "normal", 1), ("c", "normal", 2)],
        ["b", "c", "a"],
    ),
    "equal submit times keep arrival order": (
        {},
        [("c", "normal", 0), ("a", "normal", 0), ("b", "normal", 0)],
        ["c", "a", "b"],
    ),
    "equal-priority queues interleave by submit time": (
        {"qa": 30, "qb": 30},
        [("a1", "qa", 0), ("a2", "qa", 2), ("b1", "qb", 1), ("b2", "qb", 3)],
        ["a1", "b1", "a2", "b2"],
    ),
    "equal priority and submit time across queues: arrival order": (
        {"qa": 30, "qb": 30},
        [("b1", "qb", 0), ("a1", "qa", 0), ("b2", "qb", 0)],
        ["b1", "a1", "b2"],
    ),
    "an undeclared queue has priority 0 and merges with declared ones": (
        {"pos": 1, "zero": 0, "neg": -5},
        [("n1", "neg", 0), ("z1", "zero", 2), ("u1", "adhoc", 1), ("p1", "pos", 9)],
        ["p1", "u1", "z1", "n1"],
    ),
}


@pytest.mark.parametrize(
    ("queues", "jobs", "expected"), list(FCFS_ORDER.values()), ids=list(FCFS_ORDER)
)
def test_fcfs_order(
    queues: Mapping[str, int], jobs: list[tuple[str, str, float]], expected: list[str]
) -> None:
    """fcfs: queue priority high first, then submit time, then arrival (file) order;
    queues of equal priority interleave by the submit time of their next job."""
    b = ClusterBuilder().host("h0", slots=100)
    for name, prio in queues.items():
        b.queue(name, priority=prio)
    for job_id, queue, submit in jobs:
        b.job(job_id, queue=queue, submit_time=submit)
    decisions = decide(b.build(), "fcfs")
    assert order(decisions) == expected
    assert all(isinstance(d, Dispatched) for d in decisions)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["qa", "qb", "qc", "undeclared"]),
            st.integers(0, 3),  # submit time: plenty of ties
            st.sampled_from([1, 2, HUGE]),  # tasks: some jobs pend
        ),
        max_size=12,
    ),
    st.lists(st.integers(-1, 2), min_size=3, max_size=3),
)
def test_fcfs_order_is_the_documented_sort(
    jobs: list[tuple[str, int, int]], priorities: list[int]
) -> None:
    """Property: under fcfs the session decides every job once, in exactly the order of
    ``fcfs_order`` (priority desc, submit time, file order), whatever the outcomes."""
    b = ClusterBuilder().host("h0", slots=6)
    for name, prio in zip(("qa", "qb", "qc"), priorities, strict=True):
        b.queue(name, priority=prio)
    for i, (queue, submit, tasks) in enumerate(jobs):
        b.job(f"j{i}", tasks, queue=queue, submit_time=submit)
    state = b.build()
    assert order(decide(state, "fcfs")) == [j.id for j in fcfs_order(state)]


# (jobs (id, tasks) in one queue, submit time = file position; outcome per job)
FCFS_SKIPS = {
    "a job too large is pended, the next one runs": (
        [("big", 8), ("s1", 1), ("s2", 1)],
        {"big": "NOT_ENOUGH_SLOTS", "s1": RUN, "s2": RUN},
    ),
    "a middle job too large for what is left": (
        [("s1", 3), ("mid", 2), ("s2", 1)],
        {"s1": RUN, "mid": "NOT_ENOUGH_SLOTS", "s2": RUN},
    ),
    "several too large, every small one still runs": (
        [("b1", 5), ("s1", 1), ("b2", 9), ("s2", 2), ("s3", 1)],
        {"b1": "NOT_ENOUGH_SLOTS", "s1": RUN, "b2": "NOT_ENOUGH_SLOTS", "s2": RUN, "s3": RUN},
    ),
}


@pytest.mark.parametrize(("jobs", "expected"), list(FCFS_SKIPS.values()), ids=list(FCFS_SKIPS))
@pytest.mark.parametrize("threads", [False, True], ids=["sync", "threads"])
def test_fcfs_pends_a_job_that_cannot_start_and_tries_the_next(
    jobs: list[tuple[str, int]], expected: dict[str, str], threads: bool
) -> None:
    """fcfs: "a job that cannot start is pended and the next one tried" (4 slots free)."""
    b = busy_host(ClusterBuilder(), free=4)
    for i, (job_id, tasks) in enumerate(jobs):
        b.job(job_id, tasks, submit_time=i)
    decisions = decide(b.build(), "fcfs", threads=threads)
    assert order(decisions) == [j for j, _ in jobs]
    assert outcomes(decisions) == expected


# --- strict vs fcfs ----------------------------------------------------------------------
def head_blocking_state() -> ClusterState:
    """4 slots free. Queue ``big`` (50): head b1 (by submit time, not file order) wants 8;
    ``peer`` has the same priority, ``other`` a lower one."""
    return (
        busy_host(ClusterBuilder(), free=4)
        .queue("big", priority=50)
        .queue("peer", priority=50)
        .queue("other", priority=30)
        .job("b2", 1, queue="big", submit_time=2)
        .job("b1", 8, queue="big", submit_time=1)
        .job("b3", 1, queue="big", submit_time=3)
        .job("p1", 1, queue="peer", submit_time=4)
        .job("o1", 1, queue="other", submit_time=0)
        .build()
    )


def head_after_a_runner_state() -> ClusterState:
    """4 slots free, one queue: s1 runs, s2 (the first that cannot start) wants 8, s3
    wants 1; o1 in a lower queue wants 3 — exactly what is left if s3 takes nothing."""
    return (
        busy_host(ClusterBuilder(), free=4)
        .queue("q", priority=50)
        .queue("other", priority=10)
        .job("s1", 1, queue="q", submit_time=0)
        .job("s2", 8, queue="q", submit_time=1)
        .job("s3", 1, queue="q", submit_time=2)
        .job("o1", 3, queue="other", submit_time=0)
        .build()
    )


BLOCKED = PendReason.QUEUE_BLOCKED.value
STRICT_VS_FCFS = {
    "head job blocks its queue (strict)": (
        head_blocking_state,
        "strict",
        {"b1": "NOT_ENOUGH_SLOTS", "b2": BLOCKED, "b3": BLOCKED, "p1": RUN, "o1": RUN},
        "b1",
    ),
    "head job does not block (fcfs)": (
        head_blocking_state,
        "fcfs",
        {"b1": "NOT_ENOUGH_SLOTS", "b2": RUN, "b3": RUN, "p1": RUN, "o1": RUN},
        None,
    ),
    "jobs before the head run, blocked jobs hold nothing (strict)": (
        head_after_a_runner_state,
        "strict",
        {"s1": RUN, "s2": "NOT_ENOUGH_SLOTS", "s3": BLOCKED, "o1": RUN},
        "s2",
    ),
    "the job after the head takes the slots (fcfs)": (
        head_after_a_runner_state,
        "fcfs",
        {"s1": RUN, "s2": "NOT_ENOUGH_SLOTS", "s3": RUN, "o1": "NOT_ENOUGH_SLOTS"},
        None,
    ),
}


@pytest.mark.parametrize(
    ("make_state", "picker", "expected", "head"),
    list(STRICT_VS_FCFS.values()),
    ids=list(STRICT_VS_FCFS),
)
@pytest.mark.parametrize("threads", [False, True], ids=["sync", "threads"])
def test_strict_vs_fcfs_on_a_hand_made_state(
    make_state: Any, picker: str, expected: dict[str, str], head: str | None, threads: bool
) -> None:
    """Acceptance: a large head job blocks its queue under ``strict`` — later jobs of the
    queue pend QUEUE_BLOCKED with a message naming the head — and not under ``fcfs``;
    other queues (same or lower priority) are never blocked."""
    state = make_state()
    decisions = decide(state, picker, threads=threads)
    assert outcomes(decisions) == expected
    assert order(decisions) == [j.id for j in fcfs_order(state)]
    for d in decisions:
        if isinstance(d, Pending) and d.info.reason is PendReason.QUEUE_BLOCKED:
            assert head is not None
            assert f"job {head}" in d.info.message
            assert not d.cached


@given(
    st.lists(
        st.tuples(st.sampled_from(["qa", "qb"]), st.integers(0, 3), st.sampled_from([1, 3, 7])),
        max_size=12,
    )
)
def test_strict_blocks_everything_after_each_queues_first_pending_job(
    jobs: list[tuple[str, int, int]],
) -> None:
    """Property (strict): within each queue, in fcfs order, no job before the first
    pending one is blocked, and every job after it pends QUEUE_BLOCKED naming it."""
    b = busy_host(ClusterBuilder(), free=6).queue("qa", priority=5).queue("qb", priority=5)
    for i, (queue, submit, tasks) in enumerate(jobs):
        b.job(f"j{i}", tasks, queue=queue, submit_time=submit)
    state = b.build()
    by_id = {d.job: d for d in decide(state, "strict")}
    for queue in ("qa", "qb"):
        head: str | None = None
        for job in fcfs_order(state, [j for j in state.jobs if j.queue == queue]):
            d = by_id[job.id]
            if head is None:
                assert outcome(d) != BLOCKED
                if isinstance(d, Pending):
                    head = job.id
            else:
                assert isinstance(d, Pending)
                assert d.info.reason is PendReason.QUEUE_BLOCKED
                assert f"job {head}," in d.info.message


# --- fairshare -------------------------------------------------------------------------
# Jobs are (id, user, tasks, submit_time), in file order, all in queue "q". ``running``
# is (user, queue, slots). A job with HUGE tasks pends (it never adds to its user's slots).
FAIRSHARE = {
    "equal shares: one job per user in turn": (
        {},
        [],
        [("a1", "alice", 1, 0), ("a2", "alice", 1, 1), ("b1", "bob", 1, 2), ("c1", "carol", 1, 3)],
        ["a1", "b1", "c1", "a2"],
    ),
    "shares 2:1 — alice twice as often": (
        {"alice": 2, "bob": 1},
        [],
        [
            ("b1", "bob", 1, 0),
            ("b2", "bob", 1, 1),
            ("a1", "alice", 1, 2),
            ("a2", "alice", 1, 3),
            ("a3", "alice", 1, 4),
        ],
        ["a1", "b1", "a2", "a3", "b2"],
    ),
    "running slots in the queue lower a user's priority": (
        {},
        [("alice", "q", 3)],
        [("a1", "alice", 1, 0), ("b1", "bob", 1, 1), ("b2", "bob", 1, 2)],
        ["b1", "b2", "a1"],
    ),
    "running slots in another queue do not count": (
        {},
        [("alice", "other", 5)],
        [("a1", "alice", 1, 0), ("b1", "bob", 1, 1)],
        ["a1", "b1"],
    ),
    'shares["default"] for users not named': (
        {"default": 3, "bob": 1},
        [],
        [("b1", "bob", 1, 0), ("a1", "alice", 1, 1), ("c1", "carol", 1, 2)],
        ["a1", "c1", "b1"],
    ),
    "a wide job costs its user its task count": (
        {},
        [],
        [("a1", "alice", 4, 0), ("a2", "alice", 1, 1), ("b1", "bob", 1, 2), ("b2", "bob", 1, 3)],
        ["a1", "b1", "b2", "a2"],
    ),
    "a job that pends does not lower its user's priority": (
        {},
        [],
        [("a1", "alice", HUGE, 0), ("a2", "alice", 1, 1), ("b1", "bob", 1, 2)],
        ["a1", "a2", "b1"],
    ),
    "fractional shares against running work": (
        {"alice": 0.5, "bob": 1.5},
        [("bob", "q", 2)],
        [("b1", "bob", 1, 0), ("a1", "alice", 1, 1), ("a2", "alice", 1, 2)],
        ["b1", "a1", "a2"],
    ),
    "equal priority and submit time: arrival order": (
        {},
        [],
        [("b1", "bob", 1, 0), ("a1", "alice", 1, 0)],
        ["b1", "a1"],
    ),
    "within a user: submit time, not file order": (
        {"alice": 5},
        [],
        [("a2", "alice", 1, 7), ("a1", "alice", 1, 3), ("b1", "bob", 1, 0)],
        ["a1", "a2", "b1"],
    ),
}

FairshareJobs = Sequence[tuple[str, str, int, float]]
Running = Sequence[tuple[str, str, int]]


def fairshare_state(
    shares: Mapping[str, float], running: Running, jobs: FairshareJobs
) -> ClusterState:
    """One 1000-slot host (room for every job but the HUGE ones); queue ``q`` has the
    shares; the running work holds slots on the host."""
    b = ClusterBuilder().host("h0", slots=1000).queue("q", shares=shares or None)
    for i, (user, queue, slots) in enumerate(running):
        b.running(f"r{i}", on={"h0": slots}, user=user, queue=queue)
    for job_id, user, tasks, submit in jobs:
        b.job(job_id, tasks, user=user, queue="q", submit_time=submit)
    return b.build()


def fairshare_model(
    shares: Mapping[str, float], running: Running, jobs: FairshareJobs
) -> list[str]:
    """The module docstring's formula, written out: the user with the highest
    ``fairshare_priority(share, slots)`` offers their earliest job; ties go to the earlier
    submitted job (then file order); a dispatched job adds its tasks to the user's slots."""
    default = shares.get("default", 1.0)
    slots: dict[str, float] = {}
    for user, queue, n in running:
        if queue == "q":
            slots[user] = slots.get(user, 0.0) + n
    waiting = sorted(range(len(jobs)), key=lambda i: (jobs[i][3], i))  # fcfs per user
    out: list[str] = []
    while waiting:
        heads: dict[str, int] = {}
        for i in waiting:
            heads.setdefault(jobs[i][1], i)
        best = min(
            heads.values(),
            key=lambda i: (
                -fairshare_priority(shares.get(jobs[i][1], default), slots.get(jobs[i][1], 0.0)),
                jobs[i][3],
                i,
            ),
        )
        waiting.remove(best)
        job_id, user, tasks, _ = jobs[best]
        out.append(job_id)
        if tasks != HUGE:
            slots[user] = slots.get(user, 0.0) + tasks
    return out


@pytest.mark.parametrize(
    ("shares", "running", "jobs", "expected"), list(FAIRSHARE.values()), ids=list(FAIRSHARE)
)
def test_fairshare_orders_users_by_the_documented_formula(
    shares: dict[str, float], running: Running, jobs: FairshareJobs, expected: list[str]
) -> None:
    """Acceptance: fairshare orders users as ``share / (1 + slots)`` says — share from
    ``shares[user]``, else ``shares["default"]``, else 1; slots held in the queue at session
    start plus those dispatched this session; ties to the earlier submitted job."""
    assert fairshare_model(shares, running, jobs) == expected  # the table obeys the formula
    decisions = decide(fairshare_state(shares, running, jobs), "fairshare")
    assert order(decisions) == expected
    tasks = {job_id: n for job_id, _, n, _ in jobs}
    for d in decisions:
        assert outcome(d) in ((RUN,) if tasks[d.job] != HUGE else TOO_BIG)


@pytest.mark.parametrize(
    ("share", "slots", "priority"),
    [(1, 0, 1.0), (2, 0, 2.0), (1, 1, 0.5), (2, 3, 0.5), (3, 2, 1.0), (0.5, 0, 0.5)],
)
def test_fairshare_priority_is_share_over_one_plus_slots(
    share: float, slots: float, priority: float
) -> None:
    """The documented formula itself: ``share / (1 + slots)``."""
    assert fairshare_priority(share, slots) == pytest.approx(priority)


USERS = ["alice", "bob", "carol"]


@given(
    shares=st.dictionaries(
        st.sampled_from([*USERS, "default"]), st.sampled_from([0.5, 1, 2, 3]), max_size=4
    ),
    running=st.lists(
        st.tuples(st.sampled_from(USERS), st.sampled_from(["q", "other"]), st.integers(1, 4)),
        max_size=3,
    ),
    jobs=st.lists(
        st.tuples(st.sampled_from(USERS), st.sampled_from([1, 2, 3, HUGE]), st.integers(0, 4)),
        max_size=10,
    ),
)
def test_fairshare_matches_the_formula_on_random_tables(
    shares: dict[str, float], running: Running, jobs: list[tuple[str, int, int]]
) -> None:
    """Property: the fairshare session order equals the formula's, on random shares,
    running work and jobs (some too large to start)."""
    table = [(f"j{i}", user, tasks, submit) for i, (user, tasks, submit) in enumerate(jobs)]
    decisions = decide(fairshare_state(shares, running, table), "fairshare")
    assert order(decisions) == fairshare_model(shares, running, table)


# --- per-queue and default pickers -------------------------------------------------------
PER_QUEUE_YAML = """\
{default}
hosts: [{{name: h0, slots: 12}}]
running: [{{id: r0, queue: elsewhere, alloc: [{{host: h0, slots: 8}}]}}]
queues:
  fs: {{priority: 50, picker: fairshare, shares: {{alice: 2, bob: 1}}}}
  plain: {{priority: 10}}
jobs:
  - {{id: fb1, user: bob, queue: fs, submit_time: 0}}
  - {{id: fa1, user: alice, queue: fs, submit_time: 1}}
  - {{id: p1, user: carol, queue: plain, tasks: 8, submit_time: 0}}
  - {{id: p2, user: carol, queue: plain, submit_time: 1}}
"""


@pytest.mark.parametrize(
    ("default", "p2"), [(None, RUN), ("fcfs", RUN), ("strict", BLOCKED), ("fairshare", RUN)]
)
def test_a_queue_naming_its_own_picker_uses_it(
    tmp_path: Path, default: str | None, p2: str
) -> None:
    """``queues: {fs: {picker: fairshare, shares: {alice: 2, bob: 1}}}`` in the state file:
    fs orders alice (share 2) before bob although bob submitted first; the plain queue
    uses the file's default picker (``picker:``; fcfs when absent), so only strict blocks
    p2 behind p1."""
    path = tmp_path / "state.yaml"
    path.write_text(PER_QUEUE_YAML.format(default=f"picker: {default}" if default else ""))
    state = load_state(path)
    assert state.queues["fs"].picker == "fairshare"
    assert dict(state.queues["fs"].shares) == {"alice": 2, "bob": 1}
    decisions = decide(state)
    assert order(decisions) == ["fa1", "fb1", "p1", "p2"]
    assert outcomes(decisions) == {"fa1": RUN, "fb1": RUN, "p1": "NOT_ENOUGH_SLOTS", "p2": p2}


def blockable_doc() -> dict[str, Any]:
    """A queue whose second job pends QUEUE_BLOCKED under strict and runs under fcfs."""
    return busy_host(ClusterBuilder(), free=2).job("j1", 4, submit_time=0).job("j2").to_dict()


# (the state file's top-level picker, Session(picker=...), the default in effect)
DEFAULTS = {
    "neither: fcfs": (None, None, "fcfs"),
    "from the state file": ("strict", None, "strict"),
    "from Session(picker=)": (None, "strict", "strict"),
    "Session(picker=) overrides the file": ("strict", "fcfs", "fcfs"),
    "Session(picker=) overrides the file (other way)": ("fcfs", "strict", "strict"),
}


@pytest.mark.parametrize(
    ("in_file", "in_session", "expected"), list(DEFAULTS.values()), ids=list(DEFAULTS)
)
def test_the_default_picker_comes_from_the_session_or_the_state_file(
    in_file: str | None, in_session: str | None, expected: str
) -> None:
    """The default picker (for queues naming none): ``Session(picker=...)``, else the
    state file's top-level ``picker:``, else fcfs."""
    doc = blockable_doc() | ({"picker": in_file} if in_file else {})
    state = state_from_dict(doc)
    assert state.default_picker == in_file
    session = Session(state, picker=in_session)
    assert session.default_picker == expected
    assert session.picker_for(Queue("normal")).name == expected
    j2 = outcomes(session.run().decisions)["j2"]
    assert j2 == (BLOCKED if expected == "strict" else RUN)


@pytest.mark.parametrize(
    "where",
    ["Session(picker=)", "top-level picker:", "a queue's picker:"],
)
def test_an_unknown_picker_name_is_an_input_error(where: str) -> None:
    """An unknown picker name, wherever it is given, raises InputError (a ValueError)
    naming it and the known pickers, when the session is made — before any job is tried."""
    doc = blockable_doc()
    picker = None
    if where == "Session(picker=)":
        picker = "nope"
    elif where == "top-level picker:":
        doc["picker"] = "nope"
    else:
        doc["queues"] = {"normal": {"picker": "nope"}}
    state = state_from_dict(doc)
    with pytest.raises(InputError, match="'nope'") as info:
        Session(state, picker=picker)
    assert isinstance(info.value, ValueError)
    for name in BUILTINS:
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("queues", "default"),
    [
        pytest.param({"normal": Queue("normal", picker="nope")}, None, id="a queue's picker"),
        pytest.param({}, "nope", id="the default picker"),
    ],
)
def test_queues_changed_with_an_unknown_picker_is_refused(
    queues: dict[str, Queue], default: str | None
) -> None:
    """The default picker is configurable through the core too (``QueuesChanged``): an
    unknown name is refused with a clear error and the core keeps its queues, default
    picker, and a working next session."""
    core = SchedulerCore(state_from_dict(blockable_doc()), picker="strict")
    with pytest.raises((EventError, InputError), match="nope"):
        core.apply(QueuesChanged(queues, default))
    assert core.state.default_picker == "strict"
    assert core.state.queues == {}
    assert outcomes(core.run_session().decisions)["j2"] == BLOCKED


# --- the registry ----------------------------------------------------------------------
class NewestCursor:
    """Newest submitted first; the order needs no feedback."""

    needs_feedback = False

    def __init__(self, jobs: Sequence[PendingJob]) -> None:
        self._jobs = sorted(jobs, key=lambda j: (-j.submit_time, -j.order))

    def peek(self) -> Pick | None:
        return Pick(self._jobs[0]) if self._jobs else None

    def pop(self) -> Pick | None:
        return Pick(self._jobs.pop(0)) if self._jobs else None

    def feedback(self, pick: Pick, decision: Decision) -> None:
        return None


class Newest:
    name = "newest"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return NewestCursor(jobs)


def test_builtin_pickers_are_registered_under_their_names() -> None:
    """``default_pickers(plugins=False)``: fcfs, strict, fairshare, priority, each under
    its name."""
    registry = default_pickers(plugins=False)
    assert registry.names() == list(BUILTINS)
    assert [type(p) for p in registry] == [
        FcfsPicker,
        StrictPicker,
        FairsharePicker,
        PriorityPicker,
        MultifactorPicker,
        LsfFairsharePicker,
    ]
    for name in BUILTINS:
        assert registry.get(name).name == name


class StrictAsFcfs(StrictPicker):
    """Another class claiming a taken name."""

    name = "fcfs"


@pytest.mark.parametrize("second", [FcfsPicker, StrictAsFcfs], ids=["same class", "other class"])
def test_registry_refuses_a_duplicate_name(second: type[JobPicker]) -> None:
    """STYLE 3: a registry refusing duplicates — a second picker named like a registered
    one raises RegistryError and leaves the first in place."""
    registry = PickerRegistry()
    first = FcfsPicker()
    registry.register(first)
    with pytest.raises(RegistryError, match="fcfs"):
        registry.register(second())
    assert registry.get("fcfs") is first
    assert registry.names() == ["fcfs"]


def test_registry_get_of_an_unknown_name_lists_the_known_ones() -> None:
    registry = default_pickers(plugins=False)
    with pytest.raises(
        InputError,
        match=r"unknown picker 'lifo' \(known: fairshare, fcfs, lsf-fairshare, multifactor, "
        r"priority, strict\)",
    ):
        registry.get("lifo")


def test_a_session_uses_a_picker_from_its_own_registry() -> None:
    """``Session(pickers=registry, picker=name)``: a picker registered by hand is used."""
    registry = default_pickers(plugins=False)
    registry.register(Newest())
    b = ClusterBuilder().host("h0", slots=9)
    state = b.job("a", submit_time=0).job("b", submit_time=5).job("c", submit_time=1).build()
    decisions = Session(state, pickers=registry, picker="newest").run().decisions
    assert order(decisions) == ["b", "c", "a"]


# --- the JobPicker / QueueCursor contracts, over every builtin -----------------------------
def builtin(name: str) -> JobPicker:
    return default_pickers(plugins=False).get(name)


def a_decision(job: PendingJob, dispatched: bool) -> Decision:
    if dispatched:
        return Dispatched(job.id, JobAllocation((Claim(0, job.min_tasks, ()),)))
    return Pending(job.id, PendInfo(PendReason.NOT_ENOUGH_SLOTS, "test"))


def drain(cursor: QueueCursor, fates: Sequence[bool] | None) -> list[Pick]:
    """Take every pick, checking peek/pop; feed back ``fates[i]`` (dispatched or not) for
    the i-th pick, or no feedback at all when ``fates`` is None."""
    picks: list[Pick] = []
    while True:
        seen = cursor.peek()
        assert cursor.peek() == seen, "peek must not change the cursor"
        pick = cursor.pop()
        assert pick == seen, "pop must return what peek returned"
        if pick is None:
            break
        picks.append(pick)
        if fates is not None:
            cursor.feedback(pick, a_decision(pick.job, fates[len(picks) - 1]))
    assert cursor.peek() is None
    assert cursor.pop() is None
    return picks


contract_jobs = st.lists(
    st.tuples(st.sampled_from(USERS), st.integers(0, 3), st.integers(1, 3)), max_size=10
)


def contract_state(jobs: list[tuple[str, int, int]], running: int) -> ClusterState:
    b = ClusterBuilder().host("h0", slots=100).queue("q", shares={"alice": 2})
    if running:
        b.running("r0", on={"h0": running}, user="bob", queue="q")
    for i, (user, submit, tasks) in enumerate(jobs):
        b.job(f"j{i}", tasks, user=user, queue="q", submit_time=submit)
    doc = b.to_dict()
    # the multifactor picker's section: ages, sizes and fair share all count
    doc["priority"] = {
        "PriorityWeightAge": 1000,
        "PriorityWeightJobSize": 100,
        "PriorityWeightFairshare": 500,
        "associations": [
            {"account": "default"},
            *(
                {"account": "default", "user": u, "usage": n}
                for n, u in enumerate(["alice", "bob"])
            ),
        ],
    }
    return state_from_dict(doc)


@pytest.mark.parametrize("name", BUILTINS)
@given(jobs=contract_jobs, running=st.integers(0, 3), data=st.data())
def test_every_builtin_picker_keeps_the_cursor_contract(
    name: str, jobs: list[tuple[str, int, int]], running: int, data: st.DataObject
) -> None:
    """JobPicker/QueueCursor contracts: the picker and its cursors satisfy the Protocols;
    ``peek`` does not move the cursor; ``pop`` returns what ``peek`` returned; every job is
    offered exactly once; an exhausted cursor gives None; ``start`` does not change the
    job list it is given."""
    picker = builtin(name)
    state = contract_state(jobs, running)
    given_jobs = list(state.jobs)
    assert isinstance(picker, JobPicker)
    assert picker.name == name
    cursor = picker.start(state.queues["q"], given_jobs, state)
    assert isinstance(cursor, QueueCursor)
    assert isinstance(cursor.needs_feedback, bool)
    fates = data.draw(st.lists(st.booleans(), min_size=len(jobs), max_size=len(jobs)))
    picks = drain(cursor, fates)
    assert sorted(p.job.id for p in picks) == sorted(j.id for j in state.jobs)
    assert given_jobs == list(state.jobs)


@pytest.mark.parametrize("name", BUILTINS)
def test_start_gives_a_fresh_independent_cursor(name: str) -> None:
    """``start`` returns a fresh cursor each call: one picker instance serves every queue
    and session, so cursors must not share state."""
    picker = builtin(name)
    state = contract_state([("alice", 0, 1), ("bob", 1, 1), ("carol", 2, 1)], 0)
    q = state.queues["q"]
    first = picker.start(q, state.jobs, state)
    whole = drain(picker.start(q, state.jobs, state), [True] * 3)
    one = first.pop()
    assert one is not None
    first.feedback(one, a_decision(one.job, True))
    assert drain(picker.start(q, state.jobs, state), [True] * 3) == whole
    assert [one, *drain(first, [True] * 2)] == whole


@pytest.mark.parametrize(
    ("name", "needs_feedback"), [("fcfs", False), ("strict", True), ("fairshare", True)]
)
def test_needs_feedback_says_whether_the_order_depends_on_decisions(
    name: str, needs_feedback: bool
) -> None:
    """fcfs needs no feedback: its order is the same with any feedback or none (so the
    threaded picker may run ahead). strict (blocking) and fairshare (slots) need it."""
    picker = builtin(name)
    state = contract_state([("alice", 0, 1), ("bob", 1, 1), ("alice", 2, 1), ("bob", 3, 1)], 0)
    cursor = picker.start(state.queues["q"], state.jobs, state)
    assert cursor.needs_feedback is needs_feedback
    if not needs_feedback:
        runs = [
            drain(picker.start(state.queues["q"], state.jobs, state), fates)
            for fates in (None, [True] * 4, [False] * 4, [False, True, False, True])
        ]
        assert all(r == runs[0] for r in runs)


def test_strict_cursor_blocks_after_the_first_pending_feedback() -> None:
    """strict: picks carry ``blocked_by`` = the first job whose feedback was Pending;
    Dispatched feedback blocks nothing."""
    state = contract_state([("alice", i, 1) for i in range(4)], 0)
    cursor = builtin("strict").start(state.queues["q"], state.jobs, state)
    picks = drain(cursor, [True, False, True, True])
    assert [p.blocked_by for p in picks] == [None, None, "j1", "j1"]


def test_fairshare_cursor_counts_dispatched_slots_from_feedback() -> None:
    """fairshare: Dispatched feedback adds the allocation's slots to the user; Pending
    feedback adds nothing. bob's jobs j0, j2; alice's (share 2) j1, j3."""
    jobs = [("bob", 0, 1), ("alice", 1, 1), ("bob", 2, 1), ("alice", 3, 1)]
    state = contract_state(jobs, 0)
    picker = builtin("fairshare")
    q = state.queues["q"]
    # alice 2/1 > bob 1/1 -> j1; then alice 2/2 == bob 1/1: the earlier job, j0; ...
    dispatched = drain(picker.start(q, state.jobs, state), [True] * 4)
    assert [p.job.id for p in dispatched] == ["j1", "j0", "j3", "j2"]
    # ... but when j1 pends, alice keeps 2/1 and offers j3 at once.
    pended = drain(picker.start(q, state.jobs, state), [False, True, True, True])
    assert [p.job.id for p in pended] == ["j1", "j3", "j0", "j2"]


def drain_plain(cursor: PlainCursor, fates: Mapping[str, bool]) -> list[str]:
    """Take every job of a plain cursor, reporting ``started`` for those whose fate is
    True (their tasks as slots); the job ids in the order taken."""
    taken: list[str] = []
    while True:
        seen = cursor.peek_job()
        job = cursor.pop_job()
        assert job == seen, "pop_job must return what peek_job returned"
        if job is None:
            return taken
        taken.append(job.id)
        if fates[job.id]:
            cursor.started(job, float(job.min_tasks))


plain_fates = st.lists(st.booleans(), min_size=10, max_size=10)


@given(jobs=contract_jobs, running=st.integers(0, 3), fates=plain_fates)
def test_fairshare_plain_cursor_orders_as_its_session_cursor(
    jobs: list[tuple[str, int, int]], running: int, fates: list[bool]
) -> None:
    """PlainOrder (issue 15): ``start_plain`` with the slots the queue's running work
    holds per user (``held_slots``) offers the jobs in the order of ``start`` on the
    state, when the same jobs start (reported by ``started`` / ``feedback``)."""
    picker = builtin("fairshare")
    assert isinstance(picker, PlainOrder)
    assert plain_order(picker) is picker
    state = contract_state(jobs, running)
    q = state.queues["q"]
    fate = {j.id: fates[i] for i, j in enumerate(state.jobs)}
    session = drain(picker.start(q, state.jobs, state), [fate[j.id] for j in state.jobs])
    # drain feeds fates by pick position; give start_plain the same fate per pick
    by_pick = {p.job.id: fates[i] for i, p in enumerate(session)}
    plain = picker.start_plain(q, list(state.jobs), held_slots("q", state))
    assert isinstance(plain, PlainCursor)
    assert drain_plain(plain, by_pick) == [p.job.id for p in session]


@given(jobs=contract_jobs, running=st.integers(0, 3), fates=plain_fates, out=plain_fates)
def test_fairshare_plain_order_keeps_its_promise(
    jobs: list[tuple[str, int, int]], running: int, fates: list[bool], out: list[bool]
) -> None:
    """PlainOrder's promise, which the plain replay relies on: leaving out any jobs that
    do not start changes not the order of the others."""
    picker = builtin("fairshare")
    state = contract_state(jobs, running)
    q = state.queues["q"]
    held = held_slots("q", state)
    fate = {j.id: fates[i] for i, j in enumerate(state.jobs)}
    whole = drain_plain(picker.start_plain(q, list(state.jobs), held), fate)
    kept = [j for i, j in enumerate(state.jobs) if fate[j.id] or not out[i]]
    assert drain_plain(picker.start_plain(q, kept, held), fate) == [
        x for x in whole if x in {j.id for j in kept}
    ]


def test_plain_order_is_offered_only_by_a_picker_that_has_it() -> None:
    """fcfs and strict are monotone and offer no PlainOrder; fairshare does."""
    assert plain_order(builtin("fcfs")) is None
    assert plain_order(builtin("strict")) is None
    assert plain_order(builtin("fairshare")) is not None


# --- strict: who holds the queue (issue 9) -------------------------------------------------
# A job pending for resources holds the rest of its queue; one pending LIMIT holds only
# the later jobs one of its limits applies to (no names, or unknown ones: its own user,
# queue and project); NEVER_RUNNABLE and INVALID hold nobody. Each case: the limits
# (name, users, projects), the jobs (id, user, project) of queue q in order, the fate of
# each job that is tried (RUN, a reason, or "LIMIT:name,name"), and ``blocked_by`` of
# each pick (a job held is not tried: its fate is ignored).
HOLD_LIMITS = {
    "alice2": (["alice"], None),
    "all": (None, None),
    "p2": (None, ["p2"]),
}
HOLDS: dict[str, tuple[list[str], list[tuple[str, str, str]], list[str], list[str | None]]] = {
    "a resource pend holds every later job": (
        [],
        [("j0", "alice", "p1"), ("j1", "bob", "p1"), ("j2", "carol", "p1"), ("j3", "bob", "p2")],
        [RUN, "NOT_ENOUGH_SLOTS", RUN, RUN],
        [None, None, "j1", "j1"],
    ),
    "a LIMIT pend holds only the jobs its limit applies to": (
        ["alice2"],
        [("a1", "alice", "p1"), ("b1", "bob", "p1"), ("a2", "alice", "p2"), ("b2", "bob", "p1")],
        ["LIMIT:alice2", RUN, RUN, RUN],
        [None, None, "a1", None],
    ),
    "the first later job pending for resources becomes the head": (
        ["alice2"],
        [("a1", "alice", "p1"), ("b1", "bob", "p1"), ("c1", "carol", "p1"), ("a2", "alice", "p1")],
        ["LIMIT:alice2", "NOT_ENOUGH_RESOURCE", RUN, RUN],
        [None, None, "b1", "b1"],
    ),
    "a LIMIT pend naming no limit holds its own user, queue and project": (
        ["alice2"],
        [("a1", "alice", "p1"), ("a2", "alice", "p2"), ("a3", "alice", "p1"), ("b1", "bob", "p1")],
        ["LIMIT", "LIMIT", RUN, RUN],
        [None, None, "a1", None],
    ),
    "a LIMIT pend naming unknown limits: as naming none": (
        ["alice2"],
        [("a1", "alice", "p1"), ("a2", "alice", "p2"), ("a3", "alice", "p1")],
        ["LIMIT:nosuch", RUN, RUN],
        [None, None, "a1"],
    ),
    "a limit on a project holds that project's jobs, whoever submits them": (
        ["p2"],
        [("x1", "alice", "p2"), ("x2", "bob", "p2"), ("x3", "bob", "p1")],
        ["LIMIT:p2", RUN, RUN],
        [None, "x1", None],
    ),
    "a job held by several: the earliest is named": (
        ["alice2", "all"],
        [("a1", "alice", "p1"), ("c1", "carol", "p1"), ("a2", "alice", "p1"), ("b1", "bob", "p1")],
        ["LIMIT:alice2", "LIMIT:all", RUN, RUN],
        [None, None, "a1", "c1"],
    ),
    "a LIMIT pend naming two limits holds the jobs of either": (
        ["alice2", "p2"],
        [("a1", "alice", "p2"), ("a2", "alice", "p1"), ("b1", "bob", "p2"), ("b2", "bob", "p1")],
        ["LIMIT:alice2,p2", RUN, RUN, RUN],
        [None, "a1", "a1", None],
    ),
    "a job held by a limit holds nobody itself": (
        ["alice2"],
        [("a1", "alice", "p1"), ("a2", "alice", "p1"), ("b1", "bob", "p1")],
        ["LIMIT:alice2", "NOT_ENOUGH_SLOTS", RUN],
        [None, "a1", None],
    ),
    "NEVER_RUNNABLE and INVALID hold nobody": (
        [],
        [("j0", "alice", "p1"), ("j1", "alice", "p1"), ("j2", "alice", "p1"), ("j3", "bob", "p1")],
        ["NEVER_RUNNABLE", "INVALID", "SELECT", RUN],
        [None, None, None, "j2"],
    ),
    "a LIMIT pend after the head changes nothing": (
        ["all"],
        [("j0", "alice", "p1"), ("j1", "bob", "p1"), ("j2", "carol", "p1")],
        ["SHARED_RESOURCE", "LIMIT:all", RUN],
        [None, "j0", "j0"],
    ),
}


def hold_decision(job: PendingJob, fate: str) -> Decision:
    if fate == RUN:
        return a_decision(job, True)
    reason, _, names = fate.partition(":")
    limits = tuple(names.split(",")) if names else ()
    return Pending(job.id, PendInfo(PendReason(reason), "test", limits=limits))


def hold_state(limits: Sequence[str], jobs: Sequence[tuple[str, str, str]]) -> ClusterState:
    b = ClusterBuilder().host("h0", slots=100).queue("q")
    for name in limits:
        users, projects = HOLD_LIMITS[name]
        b.limit(name, users=users, projects=projects, slots=50)
    for i, (job_id, user, project) in enumerate(jobs):
        b.job(job_id, 1, user=user, project=project, queue="q", submit_time=i)
    return b.build()


@pytest.mark.parametrize(("limits", "jobs", "fates", "held"), list(HOLDS.values()), ids=list(HOLDS))
def test_strict_holds_only_behind_jobs_waiting_for_resources(
    limits: list[str], jobs: list[tuple[str, str, str]], fates: list[str], held: list[str | None]
) -> None:
    """issue 9 (table): the strict cursor's ``blocked_by`` per pick, given the decisions
    fed back; ``blocks_rest`` turns True once the queue has a head, never before."""
    state = hold_state(limits, jobs)
    cursor = builtin("strict").start(state.queues["q"], state.jobs, state)
    got: list[str | None] = []
    headed = False
    for fate in fates:
        assert getattr(cursor, "blocks_rest", False) is headed
        pick = cursor.pop()
        assert pick is not None
        got.append(pick.blocked_by)
        if pick.blocked_by is not None:
            fate = BLOCKED
        cursor.feedback(pick, hold_decision(pick.job, fate))
        headed = headed or fate.split(":")[0] not in (RUN, BLOCKED, *NOT_HEADS)
    assert got == held
    assert cursor.pop() is None


NOT_HEADS = ("LIMIT", "NEVER_RUNNABLE", "INVALID")


def limit_session_state() -> ClusterState:
    """8 slots, one strict queue; alice already holds the 2 slots limit alice2 allows."""
    return (
        ClusterBuilder()
        .host("h0", slots=8)
        .queue("q", picker="strict")
        .limit("alice2", users=["alice"], slots=2)
        .running("r0", on={"h0": 2}, user="alice", queue="q")
        .job("a1", 1, user="alice", queue="q", submit_time=0)
        .job("b1", 1, user="bob", queue="q", submit_time=1)
        .job("a2", 1, user="alice", queue="q", submit_time=2)
        .job("big", 7, user="bob", queue="q", submit_time=3)  # 5 free: waits
        .job("b2", 1, user="bob", queue="q", submit_time=4)
        .build()
    )


@pytest.mark.parametrize("skip_blocked", [False, True], ids=["all", "skip blocked"])
@pytest.mark.parametrize("threads", [False, True], ids=["sync", "threads"])
def test_strict_in_a_session_a_limit_holds_only_its_own(threads: bool, skip_blocked: bool) -> None:
    """issue 9, end to end: a1 waits on alice's limit; bob's b1 starts past it, alice's
    a2 is held by a1; big waits for slots and holds the rest of the queue (b2). A
    session that skips blocked picks still tries what follows a job held by a limit."""
    state = limit_session_state()
    result = Session(state).run(threads=threads, skip_blocked=skip_blocked)
    got = outcomes(result.decisions)
    expected = {"a1": "LIMIT", "b1": RUN, "a2": BLOCKED, "big": "NOT_ENOUGH_SLOTS", "b2": BLOCKED}
    if skip_blocked:
        del expected["b2"]  # nothing after the head is offered
    assert got == expected
    by_id = {d.job: d for d in result.decisions}
    assert isinstance(by_id["a2"], Pending)
    assert "job a1" in by_id["a2"].info.message
