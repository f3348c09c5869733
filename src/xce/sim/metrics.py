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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from xce.sim.model import BSLD_TAU, JobRecord, RecordTable, SimJob, Timeline
from xce.sim.result import SimResult
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

FloatArray = npt.NDArray[np.float64]

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


def _stats(values: Sequence[float] | FloatArray) -> dict[str, float | None]:
    if not len(values):
        return {"mean": None, "median": None, "p95": None, "max": None}
    arr = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(arr.mean()),
        "median": float(np.median(arr)),
        "p95": float(np.percentile(arr, 95)),
        "max": float(arr.max()),
    }


@dataclass(frozen=True, slots=True)
class _Columns:
    """What the aggregates read of a run's records, as columns in workload order (from a
    :class:`~xce.sim.model.RecordTable` without making a record per job)."""

    jobs: Sequence[SimJob]
    submit: FloatArray
    start: FloatArray  # NaN: never started
    end: FloatArray  # NaN: never ended
    slots: npt.NDArray[np.int64]
    killed: npt.NDArray[np.bool_]
    preempted: dict[int, tuple[int, float]]  # job index: (times, lost slot-seconds)
    planned: dict[int, tuple[float | None, bool]]  # job index: (planned start, ahead)

    @property
    def ran(self) -> npt.NDArray[np.bool_]:
        return ~(np.isnan(self.start) | np.isnan(self.end))

    @staticmethod
    def of(records: Sequence[JobRecord]) -> _Columns:
        if isinstance(records, RecordTable):
            jobs: Sequence[SimJob] = records.jobs
            start, end = records.start, records.end
            slots, killed = records.slots, records.killed
            preempted, planned = records.preemptions(), records.plans()
        else:
            jobs = [r.job for r in records]
            start = np.array([_nan(r.start) for r in records], dtype=np.float64)
            end = np.array([_nan(r.end) for r in records], dtype=np.float64)
            slots = np.array([r.slots for r in records], dtype=np.int64)
            killed = np.array([r.killed for r in records], dtype=np.bool_)
            preempted = {
                i: (r.preempted, r.lost_slot_seconds)
                for i, r in enumerate(records)
                if r.preempted or r.lost_slot_seconds
            }
            planned = {
                i: (r.planned_start, r.planned_ahead)
                for i, r in enumerate(records)
                if r.planned_start is not None or r.planned_ahead
            }
        submit = np.fromiter((j.submit for j in jobs), dtype=np.float64, count=len(jobs))
        return _Columns(jobs, submit, start, end, slots, killed, preempted, planned)


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _group(cols: _Columns, key: str, waits: FloatArray, bslds: FloatArray) -> dict[str, Any]:
    """Per queue or user: jobs, waits and bounded slowdowns of those that ran (``waits``
    and ``bslds`` are per job, NaN for a job that did not), preemptions."""
    keys = [getattr(job, key) for job in cols.jobs]
    names = sorted(set(keys))
    code = {name: c for c, name in enumerate(names)}
    codes = np.fromiter((code[k] for k in keys), dtype=np.int64, count=len(keys))
    del keys
    members_all = np.argsort(codes, kind="stable")  # by group, each in workload order
    bounds = np.searchsorted(codes[members_all], np.arange(len(names) + 1))
    started = ~np.isnan(cols.start)
    preempted = cols.preempted
    out = {}
    for c, name in enumerate(names):
        members = members_all[bounds[c] : bounds[c + 1]]
        ran = members[started[members]]
        wait = _stats(waits[ran][~np.isnan(waits[ran])])
        bsld = bslds[ran]
        kept = bsld[~np.isnan(bsld)]
        hit = [preempted[i] for i in members.tolist() if i in preempted] if preempted else []
        out[name] = {
            "jobs": len(members),
            "mean_wait_s": wait["mean"],
            "median_wait_s": wait["median"],
            "p95_wait_s": wait["p95"],
            "mean_bsld": float(np.mean(kept)) if len(kept) else None,
            "preempted": sum(times for times, _ in hit),
            "lost_work_slot_s": sum((lost for _, lost in hit), 0.0),
        }
    return out


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
    return _utilisation(_Columns.of(records), timeline)


def _utilisation(cols: _Columns, timeline: Timeline) -> Utilisation:
    ran = cols.ran
    start = float(cols.submit.min()) if len(cols.submit) else 0.0
    end = max(start, float(cols.end[ran].max()) if ran.any() else start)
    capacity = timeline.total_slots * (end - start)
    if capacity <= 0:
        return Utilisation(start, end, 0.0, 0.0)
    # summed in workload order, one job at a time, as the records were
    area = sum((cols.slots[ran] * (cols.end[ran] - cols.start[ran])).tolist())
    times = np.asarray(timeline.times, dtype=np.float64)
    busy = np.asarray(timeline.busy, dtype=np.float64)
    edges = np.clip(np.append(times, end), start, end)  # sample i holds until sample i+1
    busy_area = float((busy * np.diff(edges)).sum()) if times.size else 0.0
    return Utilisation(start, end, area / capacity, busy_area / capacity)


def metrics(result: SimResult, trace: SwfTrace | None = None) -> dict[str, Any]:
    """The ``metrics.json`` object (design: at least jobs, unrunnable, waits, bsld,
    utilization, makespan), with per-queue and per-user aggregates and scheduler stats.
    Read from the records' columns: no record is made per job."""
    cols = _Columns.of(result.records)
    ran = cols.ran
    started = ~np.isnan(cols.start)
    waits = np.where(started, cols.start - cols.submit, np.nan)
    runtimes = cols.end - cols.start
    bslds = np.where(
        ran, np.maximum(1.0, (waits + runtimes) / np.maximum(runtimes, BSLD_TAU)), np.nan
    )
    used = _utilisation(cols, result.timeline)
    makespan = used.makespan
    wait = _stats(waits[ran])
    s = result.stats
    count = int(np.count_nonzero(ran))
    out: dict[str, Any] = {
        "jobs": len(cols.jobs),
        "ran": count,
        "unrunnable": len(cols.jobs) - count,
        "killed_at_walltime": int(np.count_nonzero(cols.killed & ran)),
        "mean_wait_s": wait["mean"],
        "median_wait_s": wait["median"],
        "p95_wait_s": wait["p95"],
        "max_wait_s": wait["max"],
        "mean_bsld": _stats(bslds[ran])["mean"],
        "utilization": used.workload,
        "utilization_all_work": used.all_work,
        "makespan_s": makespan,
        "throughput_jobs_per_hour": count / (makespan / 3600.0) if makespan > 0 else None,
        "total_slots": result.total_slots,
        "preemptions": s.preemptions,
        "lost_work_slot_s": s.lost_slot_seconds,
        "backfilled": s.backfilled,
        "prediction_error_s": _prediction_error(cols),
        "by_queue": _group(cols, "queue", waits, bslds),
        "by_user": _group(cols, "user", waits, bslds),
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
    ahead (rather than starting it) was from its actual start: the count, mean, median,
    p90, p95 and max of ``|planned - actual|`` in seconds (None without such jobs:
    backfill off, or every job started at once)."""
    return _prediction_error(_Columns.of(ran))


def _prediction_error(cols: _Columns) -> dict[str, float | int | None]:
    errors = [
        abs(float(cols.start[i]) - planned)
        for i, (planned, ahead) in sorted(cols.planned.items())
        if ahead
        and planned is not None
        and not math.isnan(cols.start[i])
        and not math.isnan(cols.end[i])
    ]
    st = _stats(errors)
    p90 = float(np.percentile(np.asarray(errors, dtype=np.float64), 90)) if errors else None
    return {
        "jobs": len(errors),
        "mean": st["mean"],
        "median": st["median"],
        "p90": p90,
        "p95": st["p95"],
        "max": st["max"],
    }


def _cell(value: float | None) -> str:
    """A ratio (a bounded slowdown): a whole number as one, else 6 significant figures."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:.6g}"


def _time(value: float | None) -> str:
    """A time or a duration (seconds): a whole number as one, else exactly (the shortest
    text that reads back as the same float), so that wait = start - submit holds in the
    file as in the replay."""
    if value is None:
        return ""
    v = float(value)
    return str(int(v)) if v.is_integer() and math.isfinite(v) else repr(v)


def write_jobs_csv(records: Sequence[JobRecord], path: Path) -> None:
    """One row per job, in workload order."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(JOBS_CSV_COLUMNS)
        w.writerows(_rows(records))


def _rows(records: Sequence[JobRecord]) -> Iterator[list[object]]:
    """The rows of ``records``; a table's hosts are named from its host indices."""
    if not isinstance(records, RecordTable):
        yield from (_job_row(r) for r in records)
        return
    hosts = _HostNames(records.names)
    for i, r in enumerate(records):
        run = records.run_of(i)
        text = hosts.run(*run) if run is not None else hosts.text(records.hosts_of(i))
        yield _job_row(r, text)


class _HostNames:
    """A job's distinct hosts by name, sorted, from its host indices (what ``jobs.csv``
    lists): each index ranked once by its name."""

    __slots__ = ("_in_order", "_rank", "_sorted")

    def __init__(self, names: Sequence[str]) -> None:
        by_name = sorted(range(len(names)), key=names.__getitem__)
        self._sorted = [names[i] for i in by_name]
        self._rank = np.empty(len(names), dtype=np.int64)
        self._rank[by_name] = np.arange(len(names), dtype=np.int64)
        self._in_order = by_name == list(range(len(names)))  # names sort as indices

    def text(self, hosts: npt.NDArray[Any] | None) -> str:
        if hosts is None or not len(hosts):
            return ""
        ranks = np.unique(self._rank[hosts]).tolist()
        named = self._sorted
        return " ".join([named[k] for k in ranks])

    def run(self, first: int, count: int) -> str:
        """Hosts ``first`` .. ``first + count - 1``."""
        if self._in_order:
            return " ".join(self._sorted[first : first + count])
        return self.text(np.arange(first, first + count))


def write_policies_jobs_csv(runs: Sequence[tuple[str, Sequence[JobRecord]]], path: Path) -> None:
    """The jobs of several replays of one workload (``xce compare``): a ``policy``
    column, then those of ``jobs.csv``; each policy's rows in workload order."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("policy", *JOBS_CSV_COLUMNS))
        for policy, records in runs:
            w.writerows([policy, *_job_row(r)] for r in records)


def _job_row(r: JobRecord, hosts: str | None = None) -> list[object]:
    """A row of ``jobs.csv``; ``hosts``: the hosts column if known already."""
    job = r.job
    return [
        job.id,
        _time(job.submit),
        _time(r.start),
        _time(r.end),
        _time(r.wait),
        _time(r.ran),
        r.slots or (job.tasks or ""),
        job.queue,
        job.user,
        _cell(r.bsld),
        " ".join(sorted(set(r.hosts))) if hosts is None else hosts,
        "" if r.alternative is None else r.alternative,
        int(r.killed),
        r.unrunnable or "",
        r.preempted,
        int(r.backfilled),
        _time(r.planned_start),
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
            "idle_skipped": s.idle_skipped,
        },
    }


def write_metrics(data: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
