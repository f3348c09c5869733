"""issue 28: the plain replay (xce.sim.plain) under site priority: the ``multifactor``
and ``lsf-fairshare`` orders offered through ``ClockedPlainOrder``, proven equivalent to
the general path by a property over random workloads and sites, the two run side by
side.

Acceptance (issue 28): "Plain replay: the multifactor order offered through the picker
Protocol, as fairshare does today, so replays under it stay fast; the equivalence
properties extended." The random cases reach what the shortcut relies on (checked, not
assumed): a session offering jobs out of arrival order, usage charged by the replay
before a session orders by it, two queues of one priority merged by the multifactor
key, and jobs left out of a cursor because they want more slots than are free.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from test_plain_replay import assert_same_result
from xce.cluster import ClusterState, state_from_dict
from xce.core.pickers import PlainCursor
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.model import SimJob
from xce.sim.plain import PlainReplay, plain_replay

QUEUES = ("a", "b", "c")
PICKERS = (
    "multifactor",
    "multifactor",
    "multifactor:PriorityWeightAge=7 PriorityFlags=NO_FAIR_TREE",
    "lsf-fairshare",
    "lsf-fairshare",
    "fcfs",
    "strict",
    "fairshare",
)
USERS = ("u1", "u2", "u3", "u4")
ACCOUNTS = ("acct1", "acct2", "acct3")
SHARES = ({"default": 1.0}, {"u1": 3.0, "default": 1.0}, {"g1": 2.0, "u3": 1.0, "default": 0.5})
TIMES = (0.0, 0.0, 10.0, 20.0, 25.0, 30.0, 50.0, 80.0, 130.0, 200.0)  # repeats: one instant
RUNTIMES = (0.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0)
ESTIMATES = (None, 10.0, 60.0, 300.0)
EXAMPLES = 150


@dataclass(frozen=True)
class Case:
    """A random replay under site priority: host slots, queues (name, priority, picker,
    shares), the priority section, the workload and the options. Its repr is the whole
    input, to replay a failure by hand."""

    hosts: tuple[int, ...]
    queues: tuple[tuple[str, int, str, dict[str, float]], ...]
    priority: dict[str, Any]
    jobs: tuple[SimJob, ...]
    enforce_walltime: bool

    def state(self) -> ClusterState:
        b = ClusterBuilder()
        for i, slots in enumerate(self.hosts):
            b.host(f"h{i}", slots)
        for name, level, picker, shares in self.queues:
            b.queue(name, level, picker=picker, shares=shares)
        data = b.to_dict()
        data["priority"] = self.priority
        return state_from_dict(data, "<case>")

    def options(self, plain: bool) -> SimOptions:
        return SimOptions(enforce_walltime=self.enforce_walltime, plain_replay=plain)


@st.composite
def priority_sections(draw: st.DrawFn) -> dict[str, Any]:
    """Random weights (small ones make truncation ties), Fair Tree or classic, a short
    half-life (usage decays within a replay), an association tree (accounts under root,
    one under another, users under one or two accounts) with random shares and usage,
    and LSF factors, groups and usage."""
    associations: list[dict[str, Any]] = [
        {"account": "acct1", "shares": draw(st.sampled_from((1, 2, 5)))},
        {"account": "acct2", "shares": draw(st.sampled_from((1, 3)))},
        {"account": "acct3", "parent": "acct1", "shares": 1},
    ]
    for user in USERS:
        accounts = draw(st.lists(st.sampled_from(ACCOUNTS), min_size=1, max_size=2, unique=True))
        for account in accounts:
            associations.append(
                {
                    "account": account,
                    "user": user,
                    "shares": draw(st.sampled_from((0, 1, 1, 4))),
                    "usage": draw(st.sampled_from((0, 0, 100, 5000))),
                }
            )
    section: dict[str, Any] = {
        "PriorityWeightAge": draw(st.sampled_from((0, 3, 1000))),
        "PriorityWeightFairshare": draw(st.sampled_from((0, 5, 10000))),
        "PriorityWeightJobSize": draw(st.sampled_from((0, 2, 1000))),
        "PriorityWeightQOS": draw(st.sampled_from((0, 1000))),
        "qos": {"normal": {"priority": 0}, "urgent": {"priority": 100}},
        "PriorityMaxAge": draw(st.sampled_from(("0-00:01:00", "0-00:05:00"))),
        "PriorityDecayHalfLife": draw(st.sampled_from(("0-00:01:00", "0-01:00:00"))),
        "PriorityFavorSmall": draw(st.sampled_from(("YES", "NO"))),
        "PriorityFlags": draw(st.sampled_from(("FAIR_TREE", "NO_FAIR_TREE", "ACCRUE_ALWAYS"))),
        "associations": associations,
        "usage_time": 0,
    }
    lsf: dict[str, Any] = {
        "RUN_JOB_FACTOR": draw(st.sampled_from((0.0, 3.0))),
        "RUN_TIME_FACTOR": draw(st.sampled_from((0.0, 0.7))),
        "COMMITTED_RUN_TIME_FACTOR": draw(st.sampled_from((0.0, 0.5))),
        "HIST_HOURS": draw(st.sampled_from((0, 5))),
        "groups": {"g1": {"members": ["u1", "u2"]}},
    }
    if draw(st.booleans()):
        lsf["groups"]["g1"]["shares"] = {"u1": 1, "u2": 3}
    if draw(st.booleans()):
        lsf["usage"] = {q: {"u2": 0.01, "u3": 0.002} for q in QUEUES}
    section["lsf"] = lsf
    return section


@st.composite
def priority_cases(draw: st.DrawFn) -> Case:
    """1-40 slot-only jobs of four users on 1-6 hosts, in 1-3 queues of one or two
    priorities under multifactor (two settings), lsf-fairshare, fcfs, strict or
    fairshare; submissions and ends at shared instants, zero-second jobs, estimates
    shorter than runtimes, jobs wider than the cluster; jobs with a QOS, a nice value,
    nodes or an accrue time of their own."""
    hosts = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=6)))
    total = sum(hosts)
    names = QUEUES[: draw(st.integers(1, 3))]
    queues = tuple(
        (
            name,
            draw(st.sampled_from((0, 0, 10))),
            draw(st.sampled_from(PICKERS)),
            draw(st.sampled_from(SHARES)),
        )
        for name in names
    )
    tasks = st.one_of(st.just(1), st.integers(1, total), st.integers(1, total + 2))
    jobs = tuple(
        SimJob(
            f"j{j}",
            draw(st.sampled_from(TIMES)),
            draw(st.sampled_from(RUNTIMES)),
            draw(tasks),
            user=draw(st.sampled_from(USERS)),
            queue=draw(st.sampled_from(names)),
            project=draw(st.sampled_from((*ACCOUNTS, "default"))),
            requested_time=draw(st.sampled_from(ESTIMATES)),
            # a jobs file's multifactor inputs (tests/test_sim_gates.py)
            qos=draw(st.sampled_from((None, None, "normal", "urgent"))),
            nice=draw(st.sampled_from((0, 0, 0, 40, -3))),
            nodes=draw(st.sampled_from((None, None, 1, 3))),
            accrue_time=draw(st.sampled_from((None, None, None, 0.0, 15.0, -400.0))),
            begin_time=draw(st.sampled_from((None, None, None, 0.0))),  # by its submission
        )
        for j in range(draw(st.integers(1, 40)))
    )
    return Case(hosts, queues, draw(priority_sections()), jobs, draw(st.booleans()))


def both_ways(case: Case) -> tuple[SimResult, SimResult]:
    """The case by the plain replay (asserted to be the path taken) and by the general
    path: every record, the timeline and ``metrics.json`` alike."""
    state = case.state()
    fast_sim = Simulation(state, case.jobs, case.options(True))
    assert isinstance(plain_replay(fast_sim), PlainReplay), "the case is not plain"
    fast = fast_sim.run()
    verify(fast, fast_sim.jobs)
    general_sim = Simulation(state, case.jobs, case.options(False))
    assert plain_replay(general_sim) is None
    general = general_sim.run()
    verify(general, general_sim.jobs)
    assert_same_result(fast, general)
    return fast, general


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None)
@given(case=priority_cases())
def test_plain_replay_under_site_priority_decides_as_the_general_path(case: Case) -> None:
    """issue 28 (plain replay; equivalence properties extended): random sites (weights,
    Fair Tree or classic, association trees with usage, LSF groups and factors) and
    workloads in queues under multifactor and lsf-fairshare, alone or merged with fcfs,
    strict and fairshare queues of their priority, give the general path's records,
    timeline and metrics."""
    both_ways(case)


# --- the random cases reach what the shortcut relies on -----------------------------


@contextmanager
def watched(seen: Counter[str]) -> Iterator[None]:
    """Count, in plain replays, the sessions whose clocked cursors offer jobs out of
    arrival order, that order after the replay charged usage, that merge two queues by
    the multifactor key, and that leave a too-wide job out of a cursor."""
    cursor = PlainReplay._cursor
    merged = PlainReplay._merged
    ordered = PlainReplay._ordered_level

    def spy_cursor(self: PlainReplay, q: int, jobs: list[int], now: float) -> PlainCursor:
        made = cursor(self, q, jobs, now)
        if self.by_books[q] is not None and len(jobs) > 1:
            probe = cursor(self, q, jobs, now)
            offered = []
            while (job := probe.pop_job()) is not None:
                offered.append(job.order)
            if offered != sorted(offered):
                seen["out of arrival order"] += 1
            charged, given = self.books.priority, self.sim.core.state.priority
            if (
                charged is not None
                and given is not None
                and charged.usage.at(now, []) != given.usage.at(now, [])
            ):
                seen["ordered after a charge"] += 1
        return made

    def spy_merged(self: PlainReplay, offered: Any, now: float, held: Any, keyed: bool) -> Any:
        if keyed and any(self.by_books[q] is not None for q in offered):
            seen["merged by the key"] += 1
        return merged(self, offered, now, held, keyed)

    def spy_ordered(self: PlainReplay, lv: int, now: float) -> None:
        free = self.space.total
        level = self.levels[lv]
        if any(
            self.by_books[q] is not None and self.wide_out[q] and self.tasks[i] > free
            for i in level
            for q in (self.queue_of[i],)
        ):
            seen["too wide left out"] += 1
        ordered(self, lv, now)

    with (
        mock.patch.object(PlainReplay, "_cursor", spy_cursor),
        mock.patch.object(PlainReplay, "_merged", spy_merged),
        mock.patch.object(PlainReplay, "_ordered_level", spy_ordered),
    ):
        yield


def test_random_cases_reach_what_the_shortcut_relies_on() -> None:
    """The property is not vacuous: over its own cases, sessions order jobs out of
    arrival order after the replay charged usage, merge two multifactor queues by their
    key, and leave too-wide jobs out."""
    seen: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
        phases=[Phase.generate],
    )  # fmt: skip
    @given(case=priority_cases())
    def run(case: Case) -> None:
        sim = Simulation(case.state(), case.jobs, case.options(True))
        sim.run()

    with watched(seen):
        run()
    for what in ("out of arrival order", "ordered after a charge", "merged by the key"):
        assert seen[what] >= 5, (what, seen)
    assert seen["too wide left out"] >= 5, seen


# --- hand cases ------------------------------------------------------------------------


def site(picker: str, jobs: list[SimJob], **extra: Any) -> tuple[ClusterState, list[SimJob]]:
    """Two 2-slot hosts, queue ``normal`` under ``picker`` (one share a user); u1 and
    u2 in one account, fair share weighted far above age."""
    b = ClusterBuilder().hosts(2, slots=2)
    data = b.queue("normal", picker=picker, shares={"default": 1.0}).to_dict()
    data["priority"] = {
        "PriorityWeightAge": 1,
        "PriorityWeightFairshare": 10000,
        "PriorityDecayHalfLife": "0-01:00:00",
        "usage_time": 0,
        "associations": [
            {"account": "acct"},
            {"account": "acct", "user": "u1"},
            {"account": "acct", "user": "u2"},
        ],
        **extra,
    }
    return state_from_dict(data, "<site>"), jobs


def starts(state: ClusterState, jobs: list[SimJob], **options: Any) -> dict[str, float | None]:
    sim = Simulation(state, jobs, SimOptions(**options))
    assert isinstance(plain_replay(sim), PlainReplay)
    result = sim.run()
    general = Simulation(state, jobs, SimOptions(plain_replay=False, **options)).run()
    assert list(result.records) == list(general.records)
    return {r.job.id: r.start for r in result.records}


# u1's long job holds every slot; u1 then u2 submit one job each behind it
TURNS = [
    SimJob("u1-long", 0.0, 100.0, 4, user="u1"),
    SimJob("u1-next", 10.0, 10.0, 4, user="u1"),
    SimJob("u2-next", 20.0, 10.0, 4, user="u2"),
]


def test_usage_the_replay_charged_orders_the_next_session() -> None:
    """u1's first job runs 100 s on every slot; when it ends, u2's job (submitted after
    u1's second) starts first: u1's charged usage puts u1 behind."""
    state, jobs = site("multifactor", TURNS)
    got = starts(state, jobs)
    assert got == {"u1-long": 0.0, "u1-next": 110.0, "u2-next": 100.0}


def test_without_fair_share_weight_the_order_is_first_come() -> None:
    """The same workload with only the age weight: u1's second job, older, goes first."""
    state, jobs = site("multifactor", TURNS, PriorityWeightFairshare=0)
    got = starts(state, jobs)
    assert got == {"u1-long": 0.0, "u1-next": 100.0, "u2-next": 110.0}


def test_lsf_fairshare_running_slots_order_the_session() -> None:
    """lsf-fairshare: while u1 holds 2 slots, u2's later job starts before u1's."""
    jobs = [
        SimJob("u1-run", 0.0, 100.0, 2, user="u1"),
        SimJob("u1-wide", 0.0, 50.0, 2, user="u1"),
        SimJob("u1-next", 10.0, 10.0, 2, user="u1"),
        SimJob("u2-next", 20.0, 10.0, 2, user="u2"),
    ]
    state, jobs = site("lsf-fairshare", jobs)
    got = starts(state, jobs)
    assert got["u2-next"] == 50.0
    assert got["u1-next"] == 60.0


@pytest.mark.parametrize("change", ["easy", "preempting"])
def test_clocked_orders_that_plan_or_preempt_take_the_general_path(change: str) -> None:
    """A replay whose sessions the core would run part of (a policy that plans, a queue
    that preempts) is not replayed plain under a clocked order: the core's usage books
    would miss the work that started and ended between its sessions."""
    state, jobs = site("multifactor", [SimJob("j", 0.0, 1.0, 1, user="u1")])
    assert isinstance(plain_replay(Simulation(state, jobs, SimOptions())), PlainReplay)
    if change == "easy":
        options = SimOptions(backfill="easy")
    else:
        data = ClusterBuilder().hosts(2, slots=2).queue("normal", picker="multifactor")
        data.queue("high", 10, picker="fcfs", preempts=["normal"])
        state = state_from_dict({**data.to_dict(), "priority": {}}, "<site>")
        options = SimOptions(preemptor="lowest_priority_first")
    assert plain_replay(Simulation(state, jobs, options)) is None
