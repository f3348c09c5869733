"""Start-time prediction (issue 27): ``xce predict``'s forward replays on a crowded
snapshot of 5,000 hosts and 20,000 pending jobs."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from benchmarks.common import Result
from xce.cluster import ClusterState, state_from_dict
from xce.predict import FinishedJob, default_predictors, learn
from xce.predict.forward import Policy, predict_starts

NOW = 1_000_000.0


def snapshot(n_hosts: int = 5_000, n_pending: int = 20_000, seed: int = 3) -> ClusterState:
    """Hosts of 32 slots, every slot held by running jobs of 1-32 slots (started within
    the last day, limits 1-24 h); ``n_pending`` jobs of 1-256 slots, limits 10 min-24 h,
    from 300 users, submitted over the last day."""
    rng = random.Random(seed)
    hosts = [{"name": f"n{i:05d}", "slots": 32} for i in range(n_hosts)]
    running = []
    k = 0
    for host in hosts:
        free = 32
        while free:
            slots = min(free, rng.choice((1, 2, 4, 8, 16, 32)))
            free -= slots
            limit = rng.choice((3600, 7200, 14400, 43200, 86400))
            running.append(
                {
                    "id": f"r{k}",
                    "user": f"u{rng.randrange(300)}",
                    "start_time": NOW - rng.uniform(0, limit),
                    "requested_time": limit,
                    "alloc": [{"host": host["name"], "slots": slots}],
                }
            )
            k += 1
    jobs: list[dict[str, Any]] = []
    for i in range(n_pending):
        jobs.append(
            {
                "id": f"p{i}",
                "user": f"u{rng.randrange(300)}",
                "tasks": rng.choice((1, 1, 1, 2, 4, 8, 16, 32, 64, 128, 256)),
                "submit_time": NOW - 86400 + i * 86400 / n_pending,
                "requested_time": rng.choice((600, 1800, 3600, 7200, 14400, 43200, 86400)),
            }
        )
    data = {"now": NOW, "hosts": hosts, "running": running, "jobs": jobs}
    return state_from_dict(data, f"<bench predict {n_hosts} hosts>")


def bench_predict(
    n_hosts: int = 5_000,
    n_pending: int = 20_000,
    backfill: str = "easy",
    runs: int = 0,
    workers: int = 1,
) -> Result:
    state = snapshot(n_hosts, n_pending)
    start = time.perf_counter()
    predictor = default_predictors().make("history")
    learn(predictor, _history(state))
    forecast = predict_starts(
        state, predictor, runs=runs, policy=Policy(backfill=backfill), workers=workers
    )
    seconds = time.perf_counter() - start
    started = sum(1 for j in forecast.jobs if j.start is not None)
    name = (
        f"xce predict, {n_hosts:,} hosts x {n_pending:,} pending, {backfill}, "
        f"{runs} sampled runs on {workers} process(es) "
        f"({forecast.point.sessions:,} sessions, {started:,} start)"
    )
    return Result(name, seconds, "s")


def _history(state: ClusterState) -> list[FinishedJob]:
    """A day of finished jobs for the snapshot's users: each user's jobs ran a share
    of their limits (the predictor learns a per-user spread)."""
    rng = random.Random(11)
    out = []
    for i in range(3_000):
        limit = rng.choice((600, 1800, 3600, 7200, 14400))
        end = NOW - rng.uniform(0, 86400)
        ran = limit * rng.uniform(0.05, 1.0)
        out.append(FinishedJob(f"h{i}", f"u{rng.randrange(300)}", end - ran, end, limit))
    return out


def run() -> list[Result]:
    # the snapshot is plain: every replay runs on the simulator's plain replay
    # (xce.predict.plain); conservative plans every pending job at every event, which
    # is not interactive at these sizes (200 x 800: 198 s, docs/prediction.md); the
    # sampled runs are what `xce predict` does by default (--runs 10)
    cpus = max(1, len(os.sched_getaffinity(0)))
    return [
        bench_predict(5_000, 20_000, "none"),
        bench_predict(5_000, 20_000, "none", runs=10, workers=cpus),
        bench_predict(5_000, 20_000, "easy"),
        bench_predict(5_000, 20_000, "easy", runs=10, workers=cpus),
        bench_predict(500, 2_000, "none"),
        bench_predict(500, 2_000, "easy"),
    ]
