"""Replays beside an advance reservation (a maintenance window): the session shortcuts
(only the new jobs tried while nothing is freed, idle sessions skipped, plans repeated)
stay on, since a window's bounds are events that make a full session and between them
a reservation only keeps more from a job as time passes. KTH-SP2's first 3,000 jobs on
100 x 1 hosts, 20 of them reserved for a day; every figure against the same replay with
the engine's session shortcuts off (``incremental=False, idle_skip=False``) and against
the replay without the reservation. The starts must be the same with and without the
shortcuts; the shortcuts are exact."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.bench_sim import TRACES
from benchmarks.common import Result
from xce.cluster import state_from_dict
from xce.sim.engine import SimOptions, Simulation
from xce.sim.swf import read_swf

TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"
JOBS = 3_000
HOSTS = 100
DAY = 86_400.0
WINDOW = (3 * DAY, 4 * DAY)  # within the first 3,000 jobs' weeks
RESERVED = 20


def _state(reserved: bool) -> Any:
    doc: dict[str, Any] = {"hosts": [{"name": f"n{i}", "slots": 1} for i in range(HOSTS)]}
    if reserved:
        names = [f"n{i}" for i in range(HOSTS - RESERVED, HOSTS)]
        doc["reservations"] = [
            {"name": "maint", "hosts": names, "start": WINDOW[0], "end": WINDOW[1]}
        ]
    return state_from_dict(doc, "<bench>")


def _replay(
    backfill: str | None, interval: float | None, reserved: bool, shortcuts: bool
) -> tuple[float, dict[str, float | None]]:
    """(CPU seconds, each job's start) of one replay."""
    trace = read_swf(TRACES / TRACE, limit=JOBS)
    options = SimOptions(
        single_queue=True,
        backfill=backfill,
        interval=interval,
        incremental=shortcuts,
        idle_skip=shortcuts,
    )
    sim = Simulation(_state(reserved), trace.jobs, options)
    started = time.process_time()
    result = sim.run()
    cpu = time.process_time() - started
    return cpu, {r.job.id: r.start for r in result.records}


def run() -> list[Result]:
    out = []
    for backfill, interval in ((None, None), (None, 60.0), ("easy", None), ("easy", 60.0)):
        policy = f"fcfs+{backfill or 'none'}" + (f", --interval {interval:g}" if interval else "")
        label = f"KTH-SP2 first {JOBS:,}, {HOSTS} x 1, {policy}"
        fast, starts = _replay(backfill, interval, True, True)
        slow, reference = _replay(backfill, interval, True, False)
        plain, _ = _replay(backfill, interval, False, True)
        moved = sum(1 for job, start in starts.items() if reference[job] != start)
        out += [
            Result(f"{label}: CPU beside a reservation", fast, "s"),
            Result(f"{label}: CPU beside it, session shortcuts off", slow, "s"),
            Result(f"{label}: CPU without the reservation", plain, "s"),
            Result(f"{label}: starts that differ, shortcuts on/off", moved, "", at_most=0),
        ]
    return out
