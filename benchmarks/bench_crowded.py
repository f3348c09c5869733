"""The "crowded" suite (issue 29): backfill on a deep queue, xce beside AccaSim.

The generator's workload at offered load 1.3 (``WorkloadModel(load=1.3)``, seed 15 as in
the shapes suite), 3,000 jobs, written slot-only as SWF by bench_shapes.write_workload for
128 x 8 and for 1,024 x 1: the queue grows, so every session plans. Each replay is a fresh
process and each figure the median of 3: xce ``fcfs`` + ``easy`` and ``fcfs`` +
``conservative`` (wall and CPU seconds, ``run_xce_sim.py``), AccaSim EASYBackfilling and,
for reference, FIFO (wall only: AccaSim's runner reports no CPU time). Held: fcfs+easy at
least 5x AccaSim EASY's wall; conservative's CPU at most twice easy's.

The trace cases are opt-in, ``XCE_BENCH_CROWDED_TRACES=1`` (LANL-CM5 under conservative
takes hours today): KTH-SP2 and LANL-CM5 whole on their header machines
(``header_cluster``) under fcfs + conservative, one run each: CPU (budgets 60 s and
600 s) and peak memory (300 MB). ``XCE_BENCH_CROWDED_TRACE_JOBS=N`` replays the first N
job lines of each instead (no budget then: a prefix proves nothing about the whole).
``XCE_BENCH_NO_ACCASIM`` set, or no AccaSim venv (``make accasim-venv``), leaves AccaSim out.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.accasim import available, run_accasim
from benchmarks.bench_shapes import XCE_RUNS, _median, _xce, write_workload
from benchmarks.bench_sim import TRACES
from benchmarks.common import Result
from xce.sim.clusters import header_cluster
from xce.sim.generate import WorkloadModel
from xce.sim.swf import read_swf

SHAPES = ((128, 8), (1024, 1))  # hosts x slots
JOBS = 3_000
LOAD = 1.3  # offered load: work submitted per second over the slots
POLICIES = ("easy", "conservative")  # each behind fcfs
TARGET = 5  # fcfs+easy at least 5x AccaSim EASY's speed
CONSERVATIVE_BUDGET = 2  # conservative's CPU at most twice easy's
# (label, file, CPU budget of the whole trace under fcfs + conservative)
TRACE_CASES = (
    ("KTH-SP2", "KTH-SP2-1996-2.1-cln.swf.gz", 60.0),
    ("LANL-CM5", "LANL-CM5-1994-4.1-cln.swf.gz", 600.0),
)
TRACE_MEMORY_BUDGET_MB = 300


def offered_load(path: Path) -> float:
    """Slot-seconds submitted over slot-seconds available from the first submit to the
    last, on the machine of the SWF header (what ``WorkloadModel.load`` asks for)."""
    trace = read_swf(path)
    hosts, slots = header_cluster(trace)
    jobs = trace.jobs
    work = sum((job.tasks or 0) * job.runtime for job in jobs)
    span = jobs[-1].submit - jobs[0].submit
    return work / (span * hosts * slots)


def _cpu(runs: list[dict[str, Any]]) -> float:
    return statistics.median(float(r["cpu_s"]) for r in runs)


def crowded(path: Path, hosts: int, slots: int, n: int) -> list[Result]:
    label = f"{hosts} x {slots}, {n:,} jobs at load {LOAD:g}"
    out = [Result(f"{label}: offered load", offered_load(path), "")]
    walls: dict[str, float] = {}
    cpus: dict[str, float] = {}
    for policy in POLICIES:
        runs = [_xce(path, hosts, slots, "fcfs", backfill=policy) for _ in range(XCE_RUNS)]
        median = _median(runs)
        if median["jobs"] != n:
            raise RuntimeError(f"{label}, {policy}: xce ran {median['jobs']} of {n} jobs")
        walls[policy], cpus[policy] = float(median["wall_s"]), _cpu(runs)
        name = f"{label}, fcfs+{policy}"
        out += [
            Result(f"{name}: xce wall (median of {XCE_RUNS})", walls[policy], "s"),
            Result(f"{name}: xce CPU (median of {XCE_RUNS})", cpus[policy], "s"),
            Result(f"{name}: xce mean wait", median["mean_wait_s"], "s"),
        ]
    out.append(
        Result(
            f"{label}: conservative CPU over easy's",
            cpus["conservative"] / cpus["easy"],
            "x",
            at_most=CONSERVATIVE_BUDGET,
        )
    )
    if not available() or os.environ.get("XCE_BENCH_NO_ACCASIM"):
        return out
    theirs = {}
    for dispatcher in ("easy", "fifo"):
        runs = [run_accasim(path, hosts, slots, dispatcher=dispatcher) for _ in range(XCE_RUNS)]
        theirs[dispatcher] = _median(runs)
        if theirs[dispatcher]["jobs"] != n:
            raise RuntimeError(f"{label}: AccaSim ({dispatcher}) ran {theirs[dispatcher]['jobs']}")
        name = f"{label}: AccaSim {dispatcher.upper()}"
        out += [
            Result(f"{name} wall (median of {XCE_RUNS})", theirs[dispatcher]["wall_s"], "s"),
            Result(f"{name} mean wait", theirs[dispatcher]["mean_wait_s"], "s"),
        ]
    speed_up = float(theirs["easy"]["wall_s"]) / walls["easy"]
    return [
        *out,
        Result(f"{label}: fcfs+easy speed-up over AccaSim EASY", speed_up, "x", TARGET),
    ]


def trace_jobs() -> int | None:
    """The prefix ``XCE_BENCH_CROWDED_TRACE_JOBS`` asks for, or None: the whole trace."""
    wanted = os.environ.get("XCE_BENCH_CROWDED_TRACE_JOBS")
    return max(1, int(wanted)) if wanted else None


def trace_case(label: str, file: str, budget: float, jobs: int | None) -> list[Result]:
    """One fcfs + conservative replay of a trace (or its first ``jobs`` job lines) on the
    machine its header describes."""
    path = TRACES / file
    hosts, slots = header_cluster(read_swf(path, limit=1))
    run = _xce(path, hosts, slots, "fcfs", jobs=jobs, backfill="conservative")
    whole = jobs is None
    part = "whole" if whole else f"first {jobs:,}"
    name = f"{label} {part}, {hosts:,} x {slots}, fcfs+conservative"
    return [
        Result(f"{name}: xce wall", run["wall_s"], "s"),
        Result(f"{name}: xce CPU", run["cpu_s"], "s", at_most=budget if whole else None),
        Result(
            f"{name}: peak memory",
            run["peak_rss_mb"],
            "MB",
            at_most=TRACE_MEMORY_BUDGET_MB if whole else None,
        ),
        Result(f"{name}: jobs", run["jobs"], "jobs"),
        Result(f"{name}: backfilled", run["backfilled"], "jobs"),
    ]


def run() -> list[Result]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="xce-crowded-") as tmp:
        for hosts, slots in SHAPES:
            path = Path(tmp) / f"crowded-{hosts}x{slots}-{JOBS}.swf"
            write_workload(path, hosts, slots, JOBS, model=WorkloadModel(load=LOAD))
            results += crowded(path, hosts, slots, JOBS)
    if os.environ.get("XCE_BENCH_CROWDED_TRACES"):
        jobs = trace_jobs()
        for label, file, budget in TRACE_CASES:
            results += trace_case(label, file, budget, jobs)
    return results
