"""issue 26: backfill over jobs without a requested time (an SWF trace whose field 9 is
-1, like NASA-iPSC) used to do nothing and say nothing. The replay now warns, per queue
whose policy plans: how many of its jobs lack an estimate, and which estimate planning
gives them (the queue's ``default_runtime``, else its ``max_runtime``, else none: no
end, so no backfill). The lines are ``Simulation.warnings`` (before the run) and
``SimResult.warnings``; ``metrics.json`` is unchanged by them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import ClusterBuilder
from xce.cluster import ClusterState
from xce.sim.caveats import backfill_estimates
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.model import SimJob
from xce.sim.workload import load_workload

# an SWF excerpt shaped as NASA-iPSC's (field 9, the requested time, is -1 on every
# line) on 8 processors: job 2 (7 processors) waits for job 1 (6); job 3 (1) fits beside
# either; job 4 (2) fits now only by delaying job 2
NASA_LIKE = """\
; Version: 2.2
; Computer: made for this test, shaped as NASA-iPSC-1993-3.1-cln.swf
; MaxProcs: 8
    1        0     -1    100    6     -1    -1    6     -1    -1 1   1   1  -1  1 -1 -1 -1
    2        1     -1    100    7     -1    -1    7     -1    -1 1   1   1  -1  1 -1 -1 -1
    3        2     -1     10    1     -1    -1    1     -1    -1 1   1   1  -1  1 -1 -1 -1
    4        3     -1    300    2     -1    -1    2     -1    -1 1   1   1  -1  1 -1 -1 -1
"""


def _state(**queue: float) -> ClusterState:
    return ClusterBuilder().hosts(4, slots=2).queue("normal", 0, **queue).build()


def _jobs(estimates: list[float | None]) -> list[SimJob]:
    return [SimJob(f"j{i}", float(i), 10.0, 1, requested_time=e) for i, e in enumerate(estimates)]


CASES = {
    # name: (queue settings, backfill, each job's requested time, expected lines)
    "no estimate at all": (
        {},
        "easy",
        [None, None, None],
        [
            "backfill: 3 of the 3 jobs of queue normal have no requested time and the "
            "queue sets no default_runtime or max_runtime: they have no estimated end, "
            "so a job waiting for the slots they hold gets no planned start and nothing "
            "is kept for it; jobs start wherever they fit, as with fcfs and no backfill "
            "(give the queue a default_runtime in the cluster or --queues file)"
        ],
    ),
    "some jobs without an estimate, none given": (
        {},
        "easy",
        [None, 30.0],
        [
            "backfill: 1 of the 2 jobs of queue normal have no requested time and the "
            "queue sets no default_runtime or max_runtime: they have no estimated end, "
            "so a job waiting for the slots they hold gets no planned start and nothing "
            "is kept for it (give the queue a default_runtime in the cluster or --queues "
            "file)"
        ],
    ),
    "the queue's default_runtime": (
        {"default_runtime": 3600.0, "max_runtime": 7200.0},
        "conservative",
        [None, 60.0, None],
        [
            "backfill: 2 of the 3 jobs of queue normal have no requested time: planning "
            "takes the queue's default_runtime, 1 h, for them"
        ],
    ),
    "the queue's max_runtime": (
        {"max_runtime": 5400.0},
        "easy",
        [None],
        [
            "backfill: 1 of the 1 jobs of queue normal have no requested time: planning "
            "takes the queue's max_runtime, 1 h 30 min, for them"
        ],
    ),
    "every job has an estimate": ({}, "easy", [5.0, 6.0], []),
    "no backfill": ({}, None, [None, None], []),
    "backfill none": ({}, "none", [None, None], []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_warning_names_the_count_and_the_estimate(name: str) -> None:
    queue, backfill, estimates, expected = CASES[name]
    sim = Simulation(_state(**queue), _jobs(estimates), SimOptions(backfill=backfill))
    assert sim.warnings == expected
    result = sim.run()
    verify(result, sim.jobs)
    assert result.warnings == expected


def test_one_line_per_planning_queue_in_name_order() -> None:
    """Only queues whose policy plans count; each its own line, by queue name."""
    state = (
        ClusterBuilder()
        .hosts(2)
        .queue("zeta", 0, backfill="easy")
        .queue("alpha", 0, backfill="conservative", default_runtime=60.0)
        .queue("plain", 0, backfill="none")
        .build()
    )
    jobs = [
        SimJob("z", 0.0, 1.0, 1, queue="zeta"),
        SimJob("a", 0.0, 1.0, 1, queue="alpha"),
        SimJob("p", 0.0, 1.0, 1, queue="plain"),
    ]
    lines = Simulation(state, jobs, SimOptions()).warnings
    assert [line.split(" jobs of queue ")[1].split(" ")[0] for line in lines] == ["alpha", "zeta"]
    plans = {"zeta": True, "alpha": True, "plain": False}
    assert backfill_estimates(jobs, state, plans) == lines


def _starts(cluster: ClusterState, jobs: list[SimJob], backfill: str | None) -> SimResult:
    sim = Simulation(cluster, jobs, SimOptions(backfill=backfill, single_queue=True))
    result = sim.run()
    verify(result, sim.jobs)
    return result


def _runs(result: SimResult) -> list[tuple[str, float | None, float | None, tuple[str, ...]]]:
    return [(r.job.id, r.start, r.end, tuple(r.hosts)) for r in result.records]


def test_a_trace_without_requested_times_backfills_nothing_and_says_so(tmp_path: Path) -> None:
    """The NASA-iPSC shape under ``easy``: without estimates job 1 has no end, so job 2
    gets no planned start and nothing is kept for it: job 4 overtakes it, exactly as
    without backfill, and the warning says so. With the queue's default_runtime job 2
    is planned at job 1's estimated end, job 3 is backfilled beside it, job 4 waits,
    and the warning names the estimate."""
    path = tmp_path / "nasa-like.swf"
    path.write_text(NASA_LIKE, encoding="utf-8")
    jobs, _ = load_workload(str(path))
    assert all(j.requested_time is None for j in jobs)
    cluster = ClusterBuilder().hosts(8).queue("normal", 0).build()
    silent = _starts(cluster, jobs, "easy")
    assert silent.stats.backfilled == 0
    alone = _starts(cluster, jobs, None)
    assert _runs(silent) == _runs(alone)  # the schedule without backfill, host for host
    assert {r.job.id: r.start for r in silent.records} == {"1": 0, "2": 312, "3": 2, "4": 12}
    assert len(silent.warnings) == 1
    assert silent.warnings[0].startswith("backfill: 4 of the 4 jobs of queue normal")
    assert "as with fcfs and no backfill" in silent.warnings[0]
    given = ClusterBuilder().hosts(8).queue("normal", 0, default_runtime=150.0).build()
    planned = _starts(given, jobs, "easy")
    assert planned.stats.backfilled == 1
    assert {r.job.id: r.start for r in planned.records} == {"1": 0, "2": 100, "3": 2, "4": 200}
    assert planned.warnings == [
        "backfill: 4 of the 4 jobs of queue normal have no requested time: planning "
        "takes the queue's default_runtime, 2 min 30 s, for them"
    ]
