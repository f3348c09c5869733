"""Aggregates of a simulation and the files that report it (``jobs.csv``, ``metrics.json``)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xce.sim.engine import SimResult
from xce.sim.model import JobRecord
from xce.sim.swf import SwfTrace

__all__ = ["JOBS_CSV_COLUMNS", "metrics", "timing", "write_jobs_csv", "write_metrics"]

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
        out[name] = {
            "jobs": len(groups[name]),
            "mean_wait_s": _mean([r.wait for r in ran]),
            "mean_bsld": _mean([r.bsld for r in ran]),
        }
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def metrics(result: SimResult, trace: SwfTrace | None = None) -> dict[str, Any]:
    """The ``metrics.json`` object (design: at least jobs, unrunnable, waits, bsld,
    utilization, makespan), with per-queue and per-user aggregates and scheduler stats."""
    records = result.records
    ran = [r for r in records if r.start is not None and r.end is not None]
    waits = [r.wait for r in ran if r.wait is not None]
    bslds = [r.bsld for r in ran if r.bsld is not None]
    first = min((r.job.submit for r in records), default=0.0)
    last = max((r.end for r in ran if r.end is not None), default=first)
    makespan = max(last - first, 0.0)
    area = sum(
        r.slots * (r.end - r.start) for r in ran if r.end is not None and r.start is not None
    )
    capacity = result.total_slots * makespan
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
        "utilization": area / capacity if capacity > 0 else 0.0,
        "makespan_s": makespan,
        "throughput_jobs_per_hour": len(ran) / (makespan / 3600.0) if makespan > 0 else None,
        "total_slots": result.total_slots,
        "by_queue": _group(records, "queue"),
        "by_user": _group(records, "user"),
        "scheduler": {
            "sessions": s.sessions,
            "decisions": s.decisions,
            "dispatched": s.dispatched,
            "cache_hit_rate": s.cache_hit_rate,
            "events": s.events,
        },
    }
    if trace is not None:
        out["trace"] = {
            "source": trace.source,
            "lines": trace.lines,
            "skipped": dict(sorted(trace.skipped.items())),
        }
    return out


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:.6g}"


def write_jobs_csv(records: Sequence[JobRecord], path: Path) -> None:
    """One row per job, in workload order."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(JOBS_CSV_COLUMNS)
        for r in records:
            job = r.job
            w.writerow(
                [
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
                ]
            )


def timing(result: SimResult) -> dict[str, float]:
    """How long the run took (kept out of metrics.json, which is byte-for-byte
    reproducible)."""
    return {"wall_s": result.stats.wall_seconds, "alloc_s": result.stats.alloc_seconds}


def write_metrics(data: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
