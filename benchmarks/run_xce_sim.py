"""Run one ``xce simulate`` replay in a fresh process and print its figures as JSON.

The twin of ``benchmarks/accasim/run_accasim.py``: the same workload prefix and cluster,
so the two are measured side by side (wall time of the simulation alone, total time,
peak memory, and the aggregates).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.append(str(Path(__file__).resolve().parent))

from peak_memory import peak_rss_mb
from xce.cluster import state_from_dict
from xce.sim.clusters import uniform_cluster
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.metrics import metrics
from xce.sim.swf import read_swf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--picker", default="strict")
    parser.add_argument("--backfill", default=None)
    parser.add_argument(
        "--preempt",
        action="store_true",
        help="two queues: every 4th job in 'high' (priority 10, preempts 'low'), the rest "
        "in 'low'; preemptor lowest_priority_first",
    )
    parser.add_argument(
        "--site-priority",
        action="store_true",
        help="give the cluster the priority study's site (benchmarks/priority_study.py: "
        "every SWF group an account, its users under it; Fair Tree), for multifactor",
    )
    args = parser.parse_args()
    start = time.perf_counter()
    trace = read_swf(args.workload, limit=args.jobs)
    cluster = uniform_cluster(args.nodes, args.cores)
    jobs = trace.jobs
    options = SimOptions(picker=args.picker, single_queue=True, backfill=args.backfill)
    if args.preempt:
        queues = state_from_dict(
            {"queues": {"low": {"priority": 0}, "high": {"priority": 10, "preempts": ["low"]}}}
        )
        cluster = uniform_cluster(args.nodes, args.cores, queues=queues)
        jobs = [replace(j, queue="high" if k % 4 == 0 else "low") for k, j in enumerate(jobs)]
        options = replace(options, single_queue=False, preemptor="lowest_priority_first")
    if args.site_priority:
        from priority_study import site

        cluster = site(cluster, jobs, "FAIR_TREE")
    sim = Simulation(cluster, jobs, options)
    began, cpu_began = time.perf_counter(), time.process_time()
    result = sim.run()
    wall = time.perf_counter() - began
    cpu = time.process_time() - cpu_began  # robust to a shared machine, unlike the wall
    verify(result, sim.jobs)
    data = metrics(result, trace)
    total = time.perf_counter() - start
    peak = peak_rss_mb()
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": cpu,
                "total_s": total,
                "peak_rss_mb": peak,
                "jobs": data["ran"],
                "mean_wait_s": data["mean_wait_s"],
                "median_wait_s": data["median_wait_s"],
                "mean_bsld": data["mean_bsld"],
                "makespan_s": data["makespan_s"],
                "backfilled": data["backfilled"],
                "prediction_error_s": data["prediction_error_s"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
