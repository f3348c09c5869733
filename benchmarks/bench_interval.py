"""Sessions every ``--interval`` under a picker whose order moves with time alone
(``multifactor``'s age): the idle-session skip (xce.sim.idle) against running every
session, on KTH-SP2's first 3,000 jobs, 100 x 1, sessions every 60 s. The waits must be
the same; the skip is an exact shortcut."""

from __future__ import annotations

import statistics
import time

from benchmarks.bench_sim import TRACES
from benchmarks.common import Result
from xce.cluster import state_from_dict
from xce.sim.engine import SimOptions, Simulation
from xce.sim.swf import read_swf

TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"
JOBS = 3_000
INTERVAL = 60.0
PRIORITY = {
    "PriorityWeightAge": 1000,
    "PriorityWeightJobSize": 200,
    "PriorityMaxAge": "1-00:00:00",
    "usage_time": 0,
}


def _replay(backfill: str, idle_skip: bool) -> tuple[float, int, dict[str, float | None]]:
    """(CPU seconds, sessions held, each job's start) of one replay."""
    trace = read_swf(TRACES / TRACE, limit=JOBS)
    doc = {
        "hosts": [{"name": f"n{i}", "slots": 1} for i in range(100)],
        "picker": "multifactor",
        "priority": PRIORITY,
    }
    options = SimOptions(
        picker="multifactor",
        single_queue=True,
        backfill=backfill,
        interval=INTERVAL,
        idle_skip=idle_skip,
    )
    sim = Simulation(state_from_dict(doc, "<bench>"), trace.jobs, options)
    started = time.process_time()
    result = sim.run()
    cpu = time.process_time() - started
    return cpu, result.stats.sessions, {r.job.id: r.start for r in result.records}


def run() -> list[Result]:
    out = []
    for backfill in ("easy", "conservative"):
        label = f"KTH-SP2 first {JOBS:,}, multifactor + {backfill}, --interval {INTERVAL:g}"
        skip_cpu, skip_sessions, starts = _replay(backfill, True)
        every_cpu, every_sessions, reference = _replay(backfill, False)
        moved = sum(1 for job, start in starts.items() if reference[job] != start)
        trace = read_swf(TRACES / TRACE, limit=JOBS)
        submit = {j.id: j.submit for j in trace.jobs}
        waits = [s - submit[j] for j, s in starts.items() if s is not None]
        out += [
            Result(f"{label}: CPU, idle sessions skipped", skip_cpu, "s"),
            Result(f"{label}: CPU, every session run", every_cpu, "s"),
            Result(f"{label}: sessions, idle skipped", skip_sessions, ""),
            Result(f"{label}: sessions, every one run", every_sessions, ""),
            Result(f"{label}: mean wait", statistics.fmean(waits), "s"),
            Result(
                f"{label}: jobs started otherwise than with every session", moved, "", at_most=0
            ),
        ]
    return out
