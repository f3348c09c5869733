"""Aggregates of a simulation and the files that report it (``jobs.csv``, ``metrics.json``).

**Utilisation** has one window and two clearly named figures (:func:`utilisation`; the
summary, ``metrics.json`` and the utilisation plot all show these, issue 10): over the
makespan, from the first submission to the last end,

- ``utilization``: the workload's own jobs' slot-seconds / (total slots x makespan);
- ``utilization_all_work``: every busy slot, work already running when the simulation
  began included, / (total slots x makespan) — the mean of the plotted curve over the
  window.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xce.sim.engine import SimResult
from xce.sim.model import JobRecord, Timeline
from xce.sim.swf import SwfTrace

__all__ = [
    "JOBS_CSV_COLUMNS",
    "Utilisation",
    "metrics",
    "timing",
    "utilisation",
    "write_jobs_csv",
    "write_metrics",
    "write_policies_jobs_csv",
]

JOBS_CSV_COLUMNS = (
    "job",
    "submit",
    "start",
    "end",
    "wait",
    "runtime",
    "tasks",
    "queue",
    "user",
    "bsld",
    "hosts",
    "alternative",
    "killed",
    "unrunnable",
    "preempted",
    "backfilled",
    "planned_start",
)


def _stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "p95": None, "max": None}
    arr = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "median": float(np.median(arr)),
        "p95": float(np.percentile(arr, 95)),
        "max": float(arr.max()),
    }


def _group(records: Iterable[JobRecord], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[JobRecord]] = {}
    for r in records:
        groups.setdefault(getattr(r.job, key), []).append(r)
    out = {}
    for name in sorted(groups):
        ran = [r for r in groups[name] if r.start is not None]
        wait = _stats([r.wait for r in ran if r.wait is not None])
        out[name] = {
            "jobs": len(groups[name]),
            "mean_wait_s": wait["mean"],
            "median_wait_s": wait["median"],
            "p95_wait_s": wait["p95"],
            "mean_bsld": _mean([r.bsld for r in ran]),
            "preempted": sum(r.preempted for r in groups[name]),
            "lost_work_slot_s": sum(r.lost_slot_seconds for r in groups[name]),
        }
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


@dataclass(frozen=True, slots=True)
class Utilisation:
    """The utilisation of one run (module docstring): the window and both figures."""

    start: float  # the first submission
    end: float  # the last end of a workload job (``start`` if none ran)
    workload: float  # the workload's jobs only: metrics.json ``utilization``
    all_work: float  # every busy slot: ``utilization_all_work``, the plot's mean

    @property
    def makespan(self) -> float:
        return self.end - self.start


def utilisation(records: Sequence[JobRecord], timeline: Timeline) -> Utilisation:
    """Both utilisation figures of a run, over its makespan (0 when it has none).

    ``all_work`` integrates the timeline's busy slots, a step function sampled at every
    event time (the first submission and the last end are event times), over the
    window."""
    ran = [r for r in records if r.start is not None and r.end is not None]
    start = min((r.job.submit for r in records), default=0.0)
    end = max(start, max((r.end for r in ran if r.end is not None), default=start))
    capacity = timeline.total_slots * (end - start)
    if capacity <= 0:
        return Utilisation(start, end, 0.0, 0.0)
    area = sum(
        r.slots * (r.end - r.start) for r in ran if r.end is not None and r.start is not None
    )
    times = np.asarray(timeline.times, dtype=np.float64)
    busy = np.asarray(timeline.busy, dtype=np.float64)
    edges = np.clip(np.append(times, end), start, end)  # sample i holds until sample i+1
    busy_area = float((busy * np.diff(edges)).sum()) if times.size else 0.0
    return Utilisation(start, end, area / capacity, busy_area / capacity)


def metrics(result: SimResult, trace: SwfTrace | None = None) -> dict[str, Any]:
    """The ``metrics.json`` object (design: at least jobs, unrunnable, waits, bsld,
    utilization, makespan), with per-queue and per-user aggregates and scheduler stats."""
    records = result.records
    ran = [r for r in records if r.start is not None and r.end is not None]
    waits = [r.wait for r in ran if r.wait is not None]
    bslds = [r.bsld for r in ran if r.bsld is not None]
    used = utilisation(records, result.timeline)
    makespan = used.makespan
    wait = _stats(waits)
    s = result.stats
    out: dict[str, Any] = {
        "jobs": len(records),
        "ran": len(ran),
        "unrunnable": len(records) - len(ran),
        "killed_at_walltime": sum(1 for r in ran if r.killed),
        "mean_wait_s": wait["mean"],
        "median_wait_s": wait["median"],
        "p95_wait_s": wait["p95"],
        "max_wait_s": wait["max"],
        "mean_bsld": _stats(bslds)["mean"],
        "utilization": used.workload,
        "utilization_all_work": used.all_work,
        "makespan_s": makespan,
        "throughput_jobs_per_hour": len(ran) / (makespan / 3600.0) if makespan > 0 else None,
        "total_slots": result.total_slots,
        "preemptions": s.preemptions,
        "lost_work_slot_s": s.lost_slot_seconds,
        "backfilled": s.backfilled,
        "prediction_error_s": prediction_error(ran),
        "by_queue": _group(records, "queue"),
        "by_user": _group(records, "user"),
    }
    if trace is not None:
        out["trace"] = {
            "source": trace.source,
            "lines": trace.lines,
            "skipped": dict(sorted(trace.skipped.items())),
        }
    return out


def prediction_error(ran: Sequence[JobRecord]) -> dict[str, float | int | None]:
    """How far the planned start of each job the first session that decided it planned
    ahead (rather than starting it) was from its actual start: the count, mean, p95 and
    max of ``|planned - actual|`` in seconds (None without such jobs: backfill off, or
    every job started at once)."""
    errors = [
        abs(r.start - r.planned_start)
        for r in ran
        if r.planned_ahead and r.planned_start is not None and r.start is not None
    ]
    st = _stats(errors)
    return {"jobs": len(errors), "mean": st["mean"], "p95": st["p95"], "max": st["max"]}


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:.6g}"


def write_jobs_csv(records: Sequence[JobRecord], path: Path) -> None:
    """One row per job, in workload order."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(JOBS_CSV_COLUMNS)
        w.writerows(_job_row(r) for r in records)


def write_policies_jobs_csv(runs: Sequence[tuple[str, Sequence[JobRecord]]], path: Path) -> None:
    """The jobs of several replays of one workload (``xce compare``): a ``policy``
    column, then those of ``jobs.csv``; each policy's rows in workload order."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("policy", *JOBS_CSV_COLUMNS))
        for policy, records in runs:
            w.writerows([policy, *_job_row(r)] for r in records)


def _job_row(r: JobRecord) -> list[object]:
    job = r.job
    return [
        job.id,
        _cell(job.submit),
        _cell(r.start),
        _cell(r.end),
        _cell(r.wait),
        _cell(r.ran),
        r.slots or (job.tasks or ""),
        job.queue,
        job.user,
        _cell(r.bsld),
        " ".join(sorted(set(r.hosts))),
        "" if r.alternative is None else r.alternative,
        int(r.killed),
        r.unrunnable or "",
        r.preempted,
        int(r.backfilled),
        _cell(r.planned_start),
    ]


def timing(result: SimResult) -> dict[str, Any]:
    """How the run went: how long it took, and the scheduler's work (sessions,
    decisions, cache hit rate), which depends on the exact shortcuts taken. Kept out of
    metrics.json, which is byte-for-byte reproducible and the same with
    ``SimOptions.fast_paths`` off."""
    s = result.stats
    return {
        "wall_s": s.wall_seconds,
        "alloc_s": s.alloc_seconds,
        "scheduler": {
            "sessions": s.sessions,
            "decisions": s.decisions,
            "dispatched": s.dispatched,
            "cache_hit_rate": s.cache_hit_rate,
            "events": s.events,
        },
    }


def write_metrics(data: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
