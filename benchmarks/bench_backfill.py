"""Backfill (issue 12): one planning session on a large cluster, and whole traces
replayed under EASY and conservative backfill (wall time, jobs/s, peak memory)."""

from __future__ import annotations

import random
from typing import Any

from benchmarks.bench_sim import TRACES, run_xce
from benchmarks.common import Result, best_of
from xce.cluster import ClusterState
from xce.cluster.load import state_from_dict
from xce.core.session import Session

SESSION_BUDGET_S = 2.0  # issue 12: a conservative session of 2,000 jobs on 5,000 hosts


def planning_state(n_hosts: int = 5_000, n_pending: int = 2_000, seed: int = 1) -> ClusterState:
    """``n_hosts`` hosts of 8 slots, 90 % of them held by running jobs (1 to 16 hosts
    each) with estimated ends over the next day, and ``n_pending`` jobs of 1 to 1,024
    tasks with estimates of a minute to a day: almost every pending job is planned."""
    rng = random.Random(seed)
    busy = int(n_hosts * 0.9)
    running: list[dict[str, Any]] = []
    h = 0
    while h < busy:
        width = min(rng.choice([1, 1, 1, 2, 4, 8, 16]), busy - h)
        alloc = [{"host": f"h{j}", "slots": 8} for j in range(h, h + width)]
        running.append(
            {
                "id": f"r{len(running)}",
                "alloc": alloc,
                "start_time": 0,
                "requested_time": rng.randint(60, 86_400),
            }
        )
        h += width
    jobs = [
        {
            "id": f"p{j}",
            "tasks": rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024]),
            "submit_time": j,
            "requested_time": rng.randint(60, 86_400),
        }
        for j in range(n_pending)
    ]
    doc = {
        "hosts": [{"name": f"h{i}", "slots": 8} for i in range(n_hosts)],
        "running": running,
        "jobs": jobs,
        "now": n_pending,
    }
    return state_from_dict(doc, "<bench>")


def bench_session(n_hosts: int = 5_000, n_pending: int = 2_000) -> list[Result]:
    state = planning_state(n_hosts, n_pending)
    out = []
    for policy in ("easy", "conservative"):
        session = Session(state, backfill=policy)
        session.run()  # warm: parse and prepare the requirements once
        seconds = best_of(3, session.run)
        stats = session.run().stats
        label = f"{policy} session, {n_pending:,} pending on {n_hosts:,} hosts"
        budget = SESSION_BUDGET_S if policy == "conservative" else None
        out.append(Result(f"{label} ({stats.planned:,} planned)", seconds, "s", at_most=budget))
    return out


def bench_traces() -> list[Result]:
    out = []
    for label, trace, nodes in (
        ("KTH-SP2 whole, 100 x 1", "KTH-SP2-1996-2.1-cln.swf.gz", 100),
        ("LANL-CM5 whole, 1,024 x 1", "LANL-CM5-1994-4.1-cln.swf.gz", 1024),
    ):
        for policy in ("easy", "conservative"):
            run = run_xce(TRACES / trace, nodes, picker="fcfs", backfill=policy)
            name = f"{label}, {policy}"
            out += [
                Result(f"{name}: xce wall", run["wall_s"], "s"),
                Result(f"{name}: xce CPU", run["cpu_s"], "s"),
                Result(f"{name}: jobs/s", run["jobs"] / run["wall_s"], "jobs/s"),
                Result(f"{name}: peak memory", run["peak_rss_mb"], "MB"),
                Result(f"{name}: mean wait", run["mean_wait_s"], "s"),
                Result(f"{name}: backfilled", run["backfilled"], "jobs"),
                Result(
                    f"{name}: planned-start error, p95",
                    run["prediction_error_s"]["p95"] or 0.0,
                    "s",
                ),
            ]
    return out


def run() -> list[Result]:
    return bench_session() + bench_traces()
