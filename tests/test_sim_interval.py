"""issue 26: with ``--interval``, sessions with nothing new to decide are skipped, and
their instants are not visited (xce.sim.idle), an exact shortcut: the example workload
with ``--interval 1 --backfill easy`` took over 100 s, 100 jobs at 0.7 took 11 s.

An equivalence property replays random workloads with the shortcut on and off
(``SimOptions(idle_skip=False)``, and with every fast path off) and compares every
record, the timeline and ``metrics.json``. The random cases mix pickers, backfill that
plans (``easy``, ``conservative``), queues that preempt, jobs overrunning their estimates
(time alone then moves a plan), jobs without estimates, selects that can turn true as
resources fall, begin times and accrue times, multifactor (whose order moves with time
alone), advance reservations (their bounds are events; some admit a user), and
intervals whose multiples fall between, and on, event times; a second test checks they
reach every branch of the shortcut. Hand-made cases pin what the replay visits: no more
instants at ``--interval 0.001`` than at 1.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.cluster import ClusterState, state_from_dict
from xce.sim.engine import SimOptions, SimResult, Simulation, next_session_time, verify
from xce.sim.idle import chain_at
from xce.sim.metrics import metrics
from xce.sim.model import SimJob

EXAMPLES = 120
INTERVALS = (0.25, 0.7, 1.0, 1.1, 3.3, 5.0)
TIMES = (0.0, 0.0, 0.5, 1.0, 2.0, 3.3, 4.0, 7.0, 10.0, 11.0, 25.0, 60.0)
RUNTIMES = (0.0, 1.0, 2.0, 3.0, 5.0, 9.5, 20.0, 40.0)
ESTIMATES = (None, 1.0, 2.0, 6.0, 10.0, 30.0, 100.0)  # below a runtime: it overruns
RESREQS = ("", "", "", "rusage[mem=100]")
VOLATILE = "select[mem<300]"  # can turn true as memory is taken: never idle under a plan
PICKERS = ("fcfs", "strict", "fairshare", "multifactor")
# multifactor's age grows to PriorityMaxAge from a job's accrue or begin time: time alone
# reorders its queue (a ClockedPicker: never idle)
PRIORITY = {"PriorityWeightAge": 1000, "PriorityMaxAge": "0-00:00:30", "usage_time": 0}
BACKFILLS = (None, None, "easy", "conservative")


@dataclass(frozen=True)
class Case:
    """A random replay with an interval; its repr is the whole input."""

    hosts: tuple[int, ...]  # slots of each host (each with 400 mem)
    picker: str
    backfill: str | None
    preempting: bool  # a queue "hi" that preempts "lo"
    default_runtime: float | None
    interval: float
    jobs: tuple[SimJob, ...]
    priority: tuple[tuple[str, object], ...] = tuple(PRIORITY.items())  # multifactor's
    # advance reservations: (hosts, start, end, whether user u1 may use it)
    reservations: tuple[tuple[tuple[int, ...], float, float, bool], ...] = ()

    def state(self) -> ClusterState:
        b = ClusterBuilder()
        for i, slots in enumerate(self.hosts):
            b.host(f"h{i}", slots=slots, mem=400)
        runtime = {"default_runtime": self.default_runtime} if self.default_runtime else {}
        b.queue("lo", 0, **runtime)
        b.queue("hi", 10, preempts=["lo"] if self.preempting else (), **runtime)
        for k, (hosts, start, end, admits) in enumerate(self.reservations):
            names = [f"h{i}" for i in hosts]
            b.reservation(f"r{k}", start, end, hosts=names, users=["u1"] if admits else None)
        if self.picker != "multifactor":
            return b.build()
        data = b.to_dict()
        data["priority"] = dict(self.priority)
        return state_from_dict(data, "<case>")

    def options(self, **changes: Any) -> SimOptions:
        return SimOptions(
            picker=self.picker, backfill=self.backfill, interval=self.interval, **changes
        )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    hosts = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    n = draw(st.integers(1, 14))
    resreqs = RESREQS + (VOLATILE,) * draw(st.sampled_from((0, 0, 0, 1)))
    jobs = []
    for i in range(n):
        tasks = draw(st.integers(1, max(1, sum(hosts))))
        jobs.append(
            SimJob(
                f"j{i}",
                draw(st.sampled_from(TIMES)),
                draw(st.sampled_from(RUNTIMES)),
                tasks,
                user=draw(st.sampled_from(("u1", "u2"))),
                queue=draw(st.sampled_from(("lo", "lo", "hi"))),
                resreq=draw(st.sampled_from(resreqs)),
                requested_time=draw(st.sampled_from(ESTIMATES)),
                # a jobs file's gate and age inputs (tests/test_sim_gates.py)
                begin_time=draw(st.sampled_from((None, None, None, None, 3.0, 12.0))),
                accrue_time=draw(st.sampled_from((None, None, None, -20.0, 9.0))),
                nice=draw(st.sampled_from((0, 0, 0, 150))),
            )
        )
    reservations = []
    for _ in range(draw(st.sampled_from((0, 0, 1, 2)))):
        on = draw(st.lists(st.integers(0, len(hosts) - 1), min_size=1, unique=True))
        start = draw(st.sampled_from(TIMES))
        length = draw(st.sampled_from((2.5, 8.0, 30.0)))
        reservations.append((tuple(sorted(on)), start, start + length, draw(st.booleans())))
    return Case(
        hosts,
        draw(st.sampled_from(PICKERS)),
        draw(st.sampled_from(BACKFILLS)),
        draw(st.booleans()),
        draw(st.sampled_from((None, None, 4.0, 50.0))),
        draw(st.sampled_from(INTERVALS)),
        tuple(jobs),
        reservations=tuple(reservations),
    )


@st.composite
def clocked_cases(draw: st.DrawFn) -> Case:
    """Cases whose picker's order moves with time alone while a plan holds: multifactor
    under backfill, its age capped soon and a job-size factor that puts jobs' totals a
    fraction apart, so truncated priorities swap places as they age (xce.sim.idle)."""
    case = draw(cases())
    priority = {
        "PriorityWeightAge": draw(st.sampled_from((100, 1000))),
        "PriorityWeightJobSize": draw(st.sampled_from((0, 150, 1000))),
        "PriorityMaxAge": draw(st.sampled_from(("0-00:00:20", "0-00:01:00"))),
        "usage_time": 0,
    }
    return replace(
        case,
        picker="multifactor",
        backfill=draw(st.sampled_from(("easy", "easy", "conservative"))),
        default_runtime=draw(st.sampled_from((None, 50.0, 50.0))),  # estimates jobs lack
        priority=tuple(priority.items()),
    )


class _Watched(Simulation):
    """A simulation that notes which branches of the idle shortcut it took."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: Counter[str] = Counter()

    def _work_out_quiet(self) -> float:
        quiet = super()._work_out_quiet()
        kind = "for ever" if quiet == math.inf else "never" if quiet == -math.inf else "until"
        planned = "planned" if self._last_planned is not None else "unplanned"
        if self._clocked is not None and self._clocked[1]:
            planned = "clocked picker"
        self.seen[f"quiet {kind}, {planned}"] += 1
        return quiet

    def _queue_session(self, now: float, skipped: bool = False) -> None:
        chained = self._chain is not None
        queued = self._session_queued
        super()._queue_session(now, skipped)
        if skipped and not queued and self.core.pending_count:
            self.seen["left for the next event" if self._chain is not None else "queued"] += 1
        elif chained and self._chain is None:
            self.seen["resumed after an event"] += 1


def replay(case: Case, **changes: Any) -> tuple[SimResult, _Watched]:
    sim = _Watched(case.state(), list(case.jobs), case.options(**changes))
    result = sim.run()
    verify(result, sim.jobs)
    return result, sim


def assert_same(fast: SimResult, slow: SimResult) -> None:
    assert list(fast.records) == list(slow.records)
    timeline, reference = fast.timeline, slow.timeline
    assert list(timeline.times) == list(reference.times)
    assert list(timeline.busy) == list(reference.busy)
    assert list(timeline.pending) == list(reference.pending)
    assert json.dumps(metrics(fast)) == json.dumps(metrics(slow))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cases())
def test_skipping_idle_sessions_decides_as_running_them(case: Case) -> None:
    fast, _ = replay(case)
    slow, _ = replay(case, idle_skip=False)
    assert_same(fast, slow)
    assert fast.stats.sessions <= slow.stats.sessions
    assert fast.stats.events <= slow.stats.events


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(clocked_cases())
def test_a_session_whose_order_time_alone_keeps_is_idle(case: Case) -> None:
    """Under a ClockedPicker a session is idle only while a whole session at its time
    would pick in the last session's order (xce.sim.idle): skipping decides as running
    every session."""
    fast, _ = replay(case)
    slow, _ = replay(case, idle_skip=False)
    assert_same(fast, slow)
    assert fast.stats.sessions <= slow.stats.sessions


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_skipping_idle_sessions_decides_as_with_every_fast_path_off(case: Case) -> None:
    fast, _ = replay(case)
    slow, _ = replay(case, fast_paths=False)
    assert_same(fast, slow)


def test_random_cases_reach_every_branch() -> None:
    """The property's cases (drawn the same way) skip sessions of unplanned and planned
    replays, leave the next session to the next event, queue one where a plan's quiet
    ends, resume the chain after an event, and meet plans that move with time alone
    (a job past its estimate: never idle)."""
    seen: Counter[str] = Counter()

    @settings(max_examples=2 * EXAMPLES, derandomize=True, database=None, deadline=None)
    @given(cases())
    def collect(case: Case) -> None:
        result, sim = replay(case)
        seen.update(sim.seen)
        if result.stats.idle_skipped:
            seen["skipped, " + ("planned" if case.backfill else "unplanned")] += 1
            if case.reservations:
                seen["skipped beside a reservation, " + (case.backfill or "none")] += 1
            if case.picker == "multifactor" and case.backfill:
                seen["skipped, planned, clocked picker"] += 1

    collect()
    wanted = {
        "skipped, planned",
        "skipped, unplanned",
        "quiet for ever, unplanned",
        "quiet until, planned",
        "quiet never, planned",
        "quiet never, clocked picker",
        "quiet for ever, clocked picker",
        "quiet until, clocked picker",
        "skipped, planned, clocked picker",
        "skipped beside a reservation, none",
        "skipped beside a reservation, easy",
        "skipped beside a reservation, conservative",
        "left for the next event",
        "queued",
        "resumed after an event",
    }
    assert wanted <= set(seen), seen


def test_an_order_that_time_alone_changes_leaves_no_session_idle() -> None:
    """multifactor's age (a ClockedPicker) reorders the queue with no event: a's age
    counts from its begin time (150), b's from its accrue time (45). Until 45 they tie
    and a, submitted first, is the job easy reserves for (b, with no estimate, cannot
    run beside that plan); from 45 on b leads, takes the reservation and starts at the
    next session, 49. Skipping the sessions between 25 and 150 as idle started b at 154
    (found by review; the property's random cases reach it only now and then)."""
    data = ClusterBuilder().host("h0", 6).picker("multifactor").to_dict()
    data["priority"] = {"PriorityWeightAge": 1000, "PriorityMaxAge": "0-00:01:00", "usage_time": 0}
    jobs = [
        SimJob("a", 0.0, 50.0, 4, begin_time=150.0),
        SimJob("b", 25.0, 5.0, 3, accrue_time=45.0),
    ]
    starts = []
    for changes in ({}, {"idle_skip": False}):
        options = SimOptions(interval=7.0, backfill="easy", **changes)
        sim = Simulation(state_from_dict(data, "<case>"), jobs, options)
        result = sim.run()
        verify(result, sim.jobs)
        starts.append({r.job.id: r.start for r in result.records})
    assert starts[0] == starts[1] == {"a": 154.0, "b": 49.0}


# --- what the replay visits -----------------------------------------------------------


def _crowd(interval: float, backfill: str | None) -> SimResult:
    """Two hosts, a long job holding both, a queue of short ones behind it."""
    jobs = [SimJob("long", 0.0, 500.0, 2, requested_time=600.0)]
    jobs += [SimJob(f"s{i}", 1.0 + i, 3.0, 1, requested_time=5.0) for i in range(6)]
    state = ClusterBuilder().hosts(2).queue("normal", 0).build()
    sim = Simulation(state, jobs, SimOptions(interval=interval, backfill=backfill))
    result = sim.run()
    verify(result, sim.jobs)
    return result


@pytest.mark.parametrize("backfill", [None, "easy", "conservative"])
def test_a_smaller_interval_visits_no_more_instants(backfill: str | None) -> None:
    """Jobs wait 500 s: at ``--interval 0.001`` the replay used to visit 500,000
    instants, each a session (under backfill, a whole plan). Now it visits about what
    it visits at 1: the events, and a session or two after each (under a policy that
    keeps placements, a second plan confirms the first before sessions are skipped)."""
    coarse = _crowd(1.0, backfill)
    fine = _crowd(0.001, backfill)
    assert [r.start for r in fine.records] == [r.start for r in coarse.records]
    jobs = len(fine.records)
    assert fine.stats.events <= 2 * coarse.stats.events < 10 * jobs
    assert fine.stats.sessions <= 2 * coarse.stats.sessions < 10 * jobs
    assert len(fine.timeline.times) <= len(coarse.timeline.times)
    assert fine.stats.idle_skipped > 0


@pytest.mark.parametrize(
    ("after", "x", "interval", "strictly", "expected"),
    [
        (0.0, 0.0, 1.0, True, 1.0),
        (0.0, 0.0, 1.0, False, 1.0),  # never at or before the chain's last session
        (3.0, 7.5, 1.0, False, 8.0),
        (3.0, 8.0, 1.0, False, 8.0),
        (3.0, 8.0, 1.0, True, 9.0),
        # 330 * 1.1 is 363.00000000000006: on the chain, past an event at 363 (where
        # next_session_time(363) gives 364.1: a session queued at an event begins a
        # chain of its own, as the engine always did)
        (329 * 1.1, 363.0, 1.1, True, 330 * 1.1),
        (1.1, 11.0, 1.1, False, 10 * 1.1),  # 10 * 1.1 is 11.000000000000002
        (0.0, 2.0**52, 1.0, False, None),  # past the chain's whole multiples
    ],
)
def test_chain_at(
    after: float, x: float, interval: float, strictly: bool, expected: float | None
) -> None:
    assert chain_at(after, x, interval, strictly=strictly) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from((*INTERVALS, 0.001, 0.3, 60.0)),
    st.integers(0, 10**9),
    st.integers(1, 60),
    st.floats(0.0, 1.0),
)
def test_chain_at_is_where_stepping_the_chain_arrives(
    interval: float, k: int, steps: int, frac: float
) -> None:
    """From a session time ``k * interval``, the chain stepped one session at a time
    (next_session_time) first reaches ``x`` where chain_at says."""
    start = k * interval
    chain = [start]
    for _ in range(steps):
        chain.append(next_session_time(chain[-1], interval))
    x = chain[-2] + frac * (chain[-1] - chain[-2])
    at = chain_at(start, x, interval, strictly=False)
    assert at == next(t for t in chain[1:] if t >= x)
    after = chain_at(start, x, interval, strictly=True)
    assert after == next((t for t in chain[1:] if t > x), next_session_time(chain[-1], interval))


def test_the_example_workload_with_a_small_interval(tmp_path: Path) -> None:
    """The issue's case in small: the bundled workload's first 60 jobs on the bundled
    cluster (memory, selects, a queue that preempts) under ``easy`` every 0.7 s: the
    same schedule with the shortcut on and off, and far fewer sessions."""
    from xce.cluster import load_state
    from xce.sim.workload import replay_jobs

    root = Path(__file__).resolve().parent.parent
    state = load_state(root / "examples" / "cluster.yaml")
    jobs, _ = replay_jobs(str(root / "examples" / "workload.jsonl"), state, 0, 60, False)
    results = []
    for idle in (True, False):
        options = SimOptions(interval=0.7, backfill="easy", idle_skip=idle)
        sim = Simulation(state, jobs, options)
        results.append(sim.run())
        verify(results[-1], sim.jobs)
    fast, slow = results
    assert_same(fast, slow)
    assert fast.stats.idle_skipped > 0
    assert 4 * fast.stats.sessions < slow.stats.sessions
