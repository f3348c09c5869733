"""``xce sweep``: a 24-cell sweep (4 policies x 3 cluster sizes x 2 seeds) of generated
20,000-job workloads, one cell after another in this process against a 2-worker
LocalCluster (issue 14). Both must give the same metrics, cell by cell."""

from __future__ import annotations

import itertools
import logging
import os
import time
from typing import Any

from benchmarks.common import Result
from xce.sim.sweep import Cell, ClusterVariant, Options, Workload, clear_cache, run_cells

JOBS = int(os.environ.get("XCE_BENCH_SWEEP_JOBS", "20000"))
POLICIES = ("fcfs", "strict", "fairshare", "fcfs+easy")
HOSTS = (64, 128, 256)  # of 16 slots each
SEEDS = (1, 2)


def cells(jobs: int = JOBS) -> list[Cell]:
    """The 24 cells, in grid order (workload, cluster, policy)."""
    spec = f"synthetic:{jobs}"
    return [
        Cell(Workload(spec, spec, seed=seed), _uniform(h), policy, Options())
        for seed, h, policy in itertools.product(SEEDS, HOSTS, POLICIES)
    ]


def _uniform(hosts: int) -> ClusterVariant:
    return ClusterVariant(f"{hosts}x16", hosts=hosts, slots_per_host=16)


def _sequential(grid: list[Cell]) -> tuple[float, dict[str, Any]]:
    clear_cache()
    start = time.perf_counter()
    out = {cell.id: metrics for cell, metrics in run_cells(grid)}
    return time.perf_counter() - start, out


def _dask(grid: list[Cell], workers: int) -> tuple[float, dict[str, Any]]:
    """Wall time from starting the LocalCluster to the last result."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster) as client,
    ):
        out = {cell.id: metrics for cell, metrics in run_cells(grid, client)}
    return time.perf_counter() - start, out


def run() -> list[Result]:
    grid = cells()
    load = os.getloadavg()[0]
    sequential, seq_out = _sequential(grid)
    print(f"  (sweep: sequential done in {sequential:.1f} s; now the LocalCluster)", flush=True)
    parallel, par_out = _dask(grid, 2)
    if seq_out != par_out:
        raise AssertionError("a cell's metrics differ between the sequential and the Dask run")
    n = len(grid)
    return [
        Result(f"sweep {n} cells x {JOBS:,} jobs, sequential (load {load:.1f})", sequential, "s"),
        Result(f"sweep {n} cells x {JOBS:,} jobs, 2-worker LocalCluster", parallel, "s"),
        Result("sweep speed-up, 2 workers over sequential", sequential / parallel, "x"),
    ]
