"""What a replay tells its user about its inputs before they read its numbers (issue 26).

A caveat is an expected outcome, not an error: the replay runs as asked, but a figure
would mislead without it. Each is one line of text, kept on the
:class:`~xce.sim.engine.Simulation` (``warnings``, known before the run) and on its
:class:`~xce.sim.engine.SimResult`; the command line prints each as
``xce: warning: ...`` on stderr. None goes into ``metrics.json`` (its bytes stay those
of the same replay without caveats).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from xce.cluster import ClusterState, Queue
from xce.cluster.estimates import estimate
from xce.sim.model import SimJob
from xce.timefmt import duration

__all__ = ["backfill_estimates", "endless_running", "ignored_jobs", "predictor_unused"]


def backfill_estimates(
    jobs: Sequence[SimJob], state: ClusterState, plans: dict[str, bool]
) -> list[str]:
    """One line per queue whose backfill policy plans (``plans``: queue name -> its
    policy plans) and that has jobs without a requested time (an SWF trace whose field 9
    is -1, like NASA-iPSC): how many, and which estimate planning gives them
    (:func:`xce.cluster.estimates.estimate`: the queue's ``default_runtime``, else its
    ``max_runtime``, else none). Without any, such a job has no end: running, it never
    gives its slots back to the plan, so no job waiting for them gets a planned start
    and nothing is kept for one; a queue of such jobs alone replays as ``fcfs`` without
    backfill (before issue 26, silently)."""
    missing: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for job in jobs:
        if plans.get(job.queue, False):
            total[job.queue] += 1
            if job.requested_time is None:
                missing[job.queue] += 1
    return [
        _line(name, missing[name], total[name], state.queues.get(name)) for name in sorted(missing)
    ]


def predictor_unused(predictor: str | None, plans: dict[str, bool]) -> list[str]:
    """A line when a runtime predictor is given but no queue of the workload plans
    (``plans``: queue name -> its backfill policy plans): a predictor's predictions are
    planned starts (and, with ``backfill_with="predicted"``, what backfill plans with),
    so without a plan it predicts nothing and ``prediction_error_s`` counts no job."""
    if predictor is None or any(plans.values()):
        return []
    return [
        f"--predictor {predictor}: no queue of the workload plans (no backfill policy), "
        "so no job gets a predicted start and prediction_error_s counts none (give "
        "--backfill easy or conservative)"
    ]


def _line(name: str, missing: int, total: int, queue: Queue | None) -> str:
    jobs = f"{missing:,} of the {total:,} jobs of queue {name} have no requested time"
    seconds = estimate(None, queue)
    if math.isinf(seconds):
        # no job with an end: nothing is ever planned, so nothing is ever kept
        alike = "; jobs start wherever they fit, as with fcfs and no backfill"
        alike = alike if missing == total else ""
        return (
            f"backfill: {jobs} and the queue sets no default_runtime or max_runtime: "
            "they have no estimated end, so a job waiting for the slots they hold gets "
            f"no planned start and nothing is kept for it{alike} (give the queue a "
            "default_runtime in the cluster or --queues file)"
        )
    given = queue is not None and queue.default_runtime is not None
    source = "default_runtime" if given else "max_runtime"
    return f"backfill: {jobs}: planning takes the queue's {source}, {duration(seconds)}, for them"


def ignored_jobs(state: ClusterState) -> list[str]:
    """One line when the cluster's state has pending jobs: a replay's jobs are its
    workload's, so they are not replayed (a state's pending jobs have no runtime to
    replay; ``xce predict`` replays a snapshot's queue forward)."""
    if not state.jobs:
        return []
    count = len(state.jobs)
    return [
        f"cluster: its {count:,} pending job(s) are not replayed (a replay's jobs are the "
        "workload's; to replay a snapshot's queue forward, use xce predict)"
    ]


def endless_running(state: ClusterState) -> list[str]:
    """One line when running jobs of the cluster's state have no runtime: they hold
    their slots for the whole replay (docs/simulation.md), which an imported capture's
    running jobs always do; a job the rest cannot run for it is then "unrunnable"."""
    count = sum(1 for r in state.running if r.runtime is None)
    if not count:
        return []
    return [
        f"cluster: its {count:,} running job(s) have no runtime, so they hold their slots "
        "for the whole replay (a capture gives none): give each a runtime in the state "
        "file to have it end"
    ]
