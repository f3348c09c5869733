"""An independent strict-FIFO replay, to check AccaSim's schedule job by job.

Plain Python, no dependencies: reads the same SWF prefix with AccaSim's conventions
(processors = field 8 else field 5, lines with neither skipped, jobs wider than the machine
rejected, runtime = field 4) on a machine of ``nodes x cores`` fungible cores, and starts jobs
strictly in submit order (ties in file order), never past a job that does not fit.

    python benchmarks/accasim/fifo_reference.py --workload TRACE.swf.gz --nodes 100 --cores 1 \\
        --jobs 2000 [--compare /tmp/out/jobs.csv] [--accasim-zero-runtime]

``--accasim-zero-runtime`` copies one AccaSim quirk (see README.md): a job that runs 0 s holds
its cores until the end of the scheduling pass that started it, and the queue is not looked at
again until the next event time, so it can delay the job behind it.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import heapq
import json
import statistics
import sys
from collections import deque
from pathlib import Path
from typing import NamedTuple


class Job(NamedTuple):
    job: str
    submit: int
    runtime: int
    procs: int


def read_jobs(path: Path, limit: int | None, capacity: int) -> tuple[list[Job], int, int]:
    """(runnable jobs in file order, lines skipped for no processor count, jobs rejected)."""
    opener = gzip.open if path.suffix == ".gz" else open
    jobs: list[Job] = []
    seen = skipped = rejected = 0
    with opener(path, "rt") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith(";"):
                continue
            if limit is not None and seen >= limit:
                break
            seen += 1
            requested, allocated = int(fields[7]), int(fields[4])
            procs = requested if requested != -1 else allocated
            if procs == -1:
                skipped += 1
            elif procs > capacity:
                rejected += 1
            else:
                jobs.append(Job(fields[0], int(fields[1]), int(fields[3]), procs))
    return jobs, skipped, rejected


def strict_fifo(jobs: list[Job], capacity: int, zero_runtime_quirk: bool) -> dict[str, int]:
    """Start time of every job under strict FIFO, deciding at each submit and end time."""
    starts: dict[str, int] = {}
    ends: list[tuple[int, int]] = []  # heap of (end time, procs)
    queue: deque[Job] = deque()
    free, i = capacity, 0
    while i < len(jobs) or queue:
        candidates = [ends[0][0]] if ends else []
        if i < len(jobs):
            candidates.append(jobs[i].submit)
        now = min(candidates)
        while ends and ends[0][0] <= now:
            free += heapq.heappop(ends)[1]
        while i < len(jobs) and jobs[i].submit <= now:
            queue.append(jobs[i])
            i += 1
        held = 0
        while queue and queue[0].procs <= free:
            job = queue.popleft()
            starts[job.job] = now
            free -= job.procs
            if job.runtime > 0:
                heapq.heappush(ends, (now + job.runtime, job.procs))
            elif zero_runtime_quirk:
                held += job.procs
            else:
                free += job.procs
        free += held
    return starts


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, type=Path)
    p.add_argument("--nodes", required=True, type=int)
    p.add_argument("--cores", required=True, type=int)
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--compare", type=Path, help="a jobs.csv written by run_accasim.py --out")
    p.add_argument("--accasim-zero-runtime", action="store_true")
    args = p.parse_args(argv)

    capacity = args.nodes * args.cores
    jobs, skipped, rejected = read_jobs(args.workload, args.jobs, capacity)
    starts = strict_fifo(jobs, capacity, args.accasim_zero_runtime)
    waits = [starts[j.job] - j.submit for j in jobs]
    report: dict[str, object] = {
        "jobs": len(jobs),
        "skipped_unparsed": skipped,
        "rejected": rejected,
        "mean_wait_s": statistics.fmean(waits) if waits else None,
        "mean_bsld": statistics.fmean(
            max(1.0, (w + j.runtime) / max(j.runtime, 10)) for w, j in zip(waits, jobs, strict=True)
        )
        if jobs
        else None,
    }
    if args.compare:
        with args.compare.open() as f:
            theirs = {row["job"]: int(row["start"]) for row in csv.DictReader(f)}
        differ = [j for j in starts if theirs.get(j) != starts[j]]
        report["compared"] = len(theirs)
        report["start_mismatches"] = len(differ)
        report["first_mismatches"] = [(j, starts[j], theirs.get(j)) for j in differ[:5]]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
