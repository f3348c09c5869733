"""What planning assumes about how long a job runs: two pure rules.

A job's estimate is its own ``requested_time`` capped at its queue's ``max_runtime``
(Slurm's ``--time`` under the partition's MaxTime, LSF's ``bsub -W`` under RUNLIMIT);
without one, the queue's ``default_runtime`` (Slurm DefaultTime), else its
``max_runtime`` (Slurm: "if DefaultTime is not set, MaxTime is used"); without either,
``math.inf``: the job has no end and holds its resources for planning purposes.

A running job past its estimate is assumed to end now: it has not ended, but nothing
says how much longer it runs, and planning it further would be a guess.
"""

from __future__ import annotations

import math

from xce.cluster.state import Queue

__all__ = ["estimate", "estimated_end"]


def estimate(job_requested: float | None, queue: Queue | None) -> float:
    """Seconds planning assumes the job runs (``math.inf``: no end)."""
    limit = queue.max_runtime if queue is not None else None
    if job_requested is not None:
        return job_requested if limit is None else min(job_requested, limit)
    if queue is not None and queue.default_runtime is not None:
        return queue.default_runtime
    return limit if limit is not None else math.inf


def estimated_end(start: float, estimate: float, now: float) -> float:
    """When a job started at ``start`` is assumed to end: ``start + estimate``, or
    ``now`` when that is past (a job overrunning its estimate ends "now")."""
    return max(start + estimate, now)
