"""Scheduling core: threaded vs single-threaded sessions; snapshot write and load."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.bench_alloc import state
from benchmarks.common import Result, best_of
from xce.cluster import load_state
from xce.core import JobStarted, SchedulerCore, write_state


def bench_threads(n_hosts: int = 5_000, n_jobs: int = 20_000) -> list[Result]:
    core = SchedulerCore(state(n_hosts, n_jobs))
    core.run_session()  # warm: parse and prepare the requirement strings once
    out = []
    for threads in (False, True):
        seconds = best_of(3, lambda t=threads: core.run_session(threads=t))  # type: ignore[misc]
        how = "threaded (picker + allocator)" if threads else "single-threaded"
        out.append(
            Result(
                f"session {how}, {n_hosts:,} hosts x {n_jobs:,} jobs", n_jobs / seconds, "jobs/s"
            )
        )
    return out


def bench_snapshot(n_hosts: int = 50_000, n_jobs: int = 100_000) -> list[Result]:
    core = SchedulerCore(state(n_hosts, n_jobs))
    result = core.run_session()
    core.apply(*(JobStarted(d.job, d.allocation) for d in result.dispatched))
    running, pending = len(core.state.running), len(core.state.jobs)
    label = f"{n_hosts:,} hosts, {running:,} running + {pending:,} pending jobs"
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".json", ".yaml"):
            path = Path(tmp) / f"snapshot{suffix}"
            start = time.perf_counter()
            write_state(core.state, path)
            written = time.perf_counter() - start
            start = time.perf_counter()
            load_state(path)
            loaded = time.perf_counter() - start
            size = path.stat().st_size / 1e6
            out.append(
                Result(f"snapshot write {suffix[1:]} ({size:.0f} MB), {label}", written, "s")
            )
            out.append(Result(f"snapshot load {suffix[1:]}, {label}", loaded, "s"))
    return out


def run() -> list[Result]:
    return bench_threads() + bench_snapshot()
