"""Site priority on archive traces (issue 28, docs/simulation.md): a trace replayed on
its own machine under fcfs, LSF-style ``fairshare``, and Slurm's ``multifactor`` (Fair
Tree and classic), with and without EASY backfill; per policy the mean wait, the mean
bounded slowdown, Jain's index over users' mean bounded slowdowns (1: every user slowed
alike) and the replay's wall time.

The multifactor site: every group of the trace (SWF field 13) an account under root,
every user an association under each group it submitted from, all with one share;
``PriorityWeightAge=1000``, ``PriorityWeightFairshare=10000``,
``PriorityWeightJobSize=1000``, ``PriorityMaxAge=7-0``, ``PriorityDecayHalfLife=7-0``.
The fairshare site: every user one share (``shares: {default: 1}``).

    PYTHONPATH=. python -m benchmarks.priority_study --trace KTH-SP2-1996-2.1-cln.swf.gz --jobs 5000
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from xce.cluster import ClusterState, Queue, state_from_dict
from xce.core import state_to_dict
from xce.sim.clusters import header_cluster, uniform_cluster
from xce.sim.compare import user_fairness
from xce.sim.engine import SimOptions, Simulation
from xce.sim.metrics import metrics
from xce.sim.model import SimJob
from xce.sim.swf import read_swf

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"
WEIGHTS = {
    "PriorityWeightAge": 1000,
    "PriorityWeightFairshare": 10000,
    "PriorityWeightJobSize": 1000,
    "PriorityMaxAge": "7-0",
    "PriorityDecayHalfLife": "7-0",
}
POLICIES = (
    ("fcfs", None),
    ("fairshare", None),
    ("multifactor", "FAIR_TREE"),
    ("multifactor", "NO_FAIR_TREE"),
)


def site(cluster: ClusterState, jobs: list[SimJob], flags: str | None) -> ClusterState:
    """The cluster with the queues' shares and, for multifactor, a priority section."""
    queues = {j.queue for j in jobs}
    data = state_to_dict(cluster)
    data["queues"] = {q: {"shares": {"default": 1}} for q in sorted(queues)}
    if flags is not None:
        groups = sorted({j.project for j in jobs})
        pairs = sorted({(j.project, j.user) for j in jobs})
        data["priority"] = dict(
            WEIGHTS,
            PriorityFlags=flags,
            associations=[{"account": g} for g in groups]
            + [{"account": g, "user": u, "usage": 0} for g, u in pairs],
        )
    return state_from_dict(data, "<priority study>")


def study(trace: str, n: int, backfills: tuple[str, ...]) -> list[dict[str, Any]]:
    tr = read_swf(TRACES / trace, limit=n)
    hosts, slots = header_cluster(tr)
    base = uniform_cluster(hosts, slots, None)
    base = replace(base, queues={q: Queue(q) for q in {j.queue for j in tr.jobs}})
    rows = []
    for backfill in backfills:
        for picker, flags in POLICIES:
            cluster = site(base, tr.jobs, flags)
            options = SimOptions(picker=picker, backfill=backfill, single_queue=True)
            started = time.perf_counter()
            result = Simulation(cluster, tr.jobs, options).run()
            seconds = time.perf_counter() - started
            m = metrics(result)
            fair = user_fairness(m)
            name = picker if flags is None else f"{picker} ({flags.lower().replace('_', ' ')})"
            rows.append(
                {
                    "trace": trace,
                    "jobs": n,
                    "backfill": backfill,
                    "policy": name,
                    "mean_wait_s": m["mean_wait_s"],
                    "mean_bsld": m["mean_bsld"],
                    "jain_mean_bsld": fair.jain,
                    "users": fair.users,
                    "seconds": seconds,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--backfill", action="append", default=None, help="none, easy, ...")
    a = ap.parse_args()
    study(a.trace, a.jobs, tuple(a.backfill or ("none", "easy")))


if __name__ == "__main__":
    main()
