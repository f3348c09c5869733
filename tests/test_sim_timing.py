"""issue 26: the replay's timings are figures users quote (``time allocating / wall
time``, ``timing.json``), so they must be sane on every path.

The plain replay reused the name of its start-time variable for a heap entry's start
step inside its loop, so its wall time was ``perf_counter() - <a step number>`` (KTH-SP2,
1,000 jobs: -379.8 s), and it never measured its time allocating (0.0). These tests
check signs and orderings only (never a threshold): each timing is non-negative, the
time allocating is within the wall time and within what the caller measured around the
run, the time allocating is positive once a job was placed, and the progress callback
sees counts and simulated times that only grow, over a span within the wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from builders import ClusterBuilder
from xce.cluster import ClusterState
from xce.errors import InputError
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.metrics import timing
from xce.sim.model import SimJob


def _jobs(n: int) -> list[SimJob]:
    """``n`` jobs of 1-4 tasks, some overlapping (so some wait)."""
    return [
        SimJob(f"j{i}", float(i // 3), float(5 + (i * 7) % 11), 1 + i % 4, requested_time=20.0)
        for i in range(n)
    ]


def _easy_queue() -> ClusterState:
    return ClusterBuilder().hosts(8, slots=4).queue("normal", 0, backfill="easy").build()


@dataclass
class _Path:
    """One way through the simulator: its cluster, options, and whether it is plain."""

    cluster: Callable[[], ClusterState]
    options: SimOptions
    plain: bool


PATHS = {
    "plain replay": _Path(lambda: uniform_cluster(8, 4), SimOptions(), True),
    "plain replay, strict": _Path(lambda: uniform_cluster(8, 4), SimOptions(picker="strict"), True),
    "plain replay, backfill handed to the core": _Path(_easy_queue, SimOptions(), True),
    "general path": _Path(lambda: uniform_cluster(8, 4), SimOptions(plain_replay=False), False),
    "general path, interval": _Path(lambda: uniform_cluster(8, 4), SimOptions(interval=2.5), False),
    "general path, fast paths off": _Path(
        lambda: uniform_cluster(8, 4), SimOptions(fast_paths=False), False
    ),
}


@dataclass
class _Calls:
    """What the progress callback saw: (jobs done, simulated time, wall clock)."""

    seen: list[tuple[int, float, float]] = field(default_factory=list)

    def __call__(self, done: int, now: float) -> None:
        self.seen.append((done, now, time.perf_counter()))


def _run(path: _Path, jobs: list[SimJob]) -> tuple[SimResult, _Calls, float]:
    calls = _Calls()
    # progress every 16 instants, so a small replay calls it during the run too
    sim = Simulation(path.cluster(), jobs, path.options, progress=calls, progress_every=16)
    assert (sim._plain_replay() is not None) is path.plain
    before = time.perf_counter()
    result = sim.run()
    outside = time.perf_counter() - before
    verify(result, sim.jobs)
    return result, calls, outside


@pytest.mark.parametrize("name", list(PATHS))
def test_timings_are_non_negative_and_ordered(name: str) -> None:
    """wall >= alloc >= 0, the wall time within what the caller measured, and (jobs
    were placed) a positive time allocating: on the plain path too."""
    result, _, outside = _run(PATHS[name], _jobs(150))
    s = result.stats
    assert s.dispatched > 0
    assert 0.0 < s.alloc_seconds <= s.wall_seconds <= outside
    data = timing(result)  # what timing.json holds
    assert 0.0 < data["alloc_s"] <= data["wall_s"]


@pytest.mark.parametrize("name", list(PATHS))
def test_progress_counts_and_times_only_grow(name: str) -> None:
    """The progress callback (what drives the progress bar) is called during the run
    and at its end: jobs done and simulated time never fall, the last call has every
    job done, and the calls span no more than the run's wall time."""
    jobs = _jobs(150)
    result, calls, _ = _run(PATHS[name], jobs)
    seen = calls.seen
    assert len(seen) >= 2
    done = [d for d, _, _ in seen]
    sim_times = [t for _, t, _ in seen]
    assert done == sorted(done)
    assert done[0] >= 0
    assert done[-1] == len(jobs)
    assert sim_times == sorted(sim_times)
    assert sim_times[0] >= 0.0
    assert sim_times[-1] == max(r.end for r in result.records if r.end is not None)
    assert 0.0 <= seen[-1][2] - seen[0][2] <= result.stats.wall_seconds


def test_no_job_placed_no_time_allocating_needed() -> None:
    """Every job unrunnable (wider than the cluster): nothing placed; the timings are
    still non-negative and ordered."""
    jobs = [SimJob(f"w{i}", float(i), 5.0, 64) for i in range(5)]
    sim = Simulation(uniform_cluster(2, 2), jobs, SimOptions())
    result = sim.run()
    s = result.stats
    assert s.dispatched == 0
    assert 0.0 <= s.alloc_seconds <= s.wall_seconds


@pytest.mark.parametrize("every", [0, -3, 2.5, True])
def test_progress_every_is_a_positive_whole_number(every: object) -> None:
    """A progress frequency that is not a whole number of instants, at least 1, is the
    caller's error, said before the replay begins."""
    with pytest.raises(InputError, match="progress_every"):
        Simulation(PATHS["plain replay"].cluster(), _jobs(5), progress_every=every)  # type: ignore[arg-type]
