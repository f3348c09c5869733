"""Replay an SWF trace prefix through AccaSim (FIFO or EASY + FirstFit); print one JSON object.

Run with the AccaSim venv's interpreter (``make accasim-venv``), not the project's:

    .venv-accasim/bin/python benchmarks/accasim/run_accasim.py --nodes 100 --cores 1 \\
        --workload ../shared/data/traces/KTH-SP2-1996-2.1-cln.swf.gz --jobs 2000

The aggregates are computed from AccaSim's own dispatching-plan output (its per-job start and
end times), never by re-simulating. See README.md beside this file for what AccaSim does with
each SWF field, so that ``xce simulate`` can be given the same workload.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import csv
import gzip
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # benchmarks/: shared helpers

from peak_memory import peak_rss_mb

_T0 = time.perf_counter()  # total_s counts from here: accasim import, trace extraction, setup, run

# AccaSim 1.1.3 does `from collections import Mapping` (removed in Python 3.10); this alias is
# the only shim it needs on 3.11. It must be set before the first accasim import.
collections.Mapping = collections.abc.Mapping  # type: ignore[attr-defined]

TAU = 10.0  # bounded-slowdown threshold, seconds
DISPATCHERS = {"fifo": "FirstInFirstOut", "easy": "EASYBackfilling"}  # AccaSim's class names

# AccaSim's dispatching-plan writer formats each finished job with this template (the
# "SCHEDULE_OUTPUT" constant). Its default prints local-time date strings; we ask for the raw
# integer seconds it holds instead, so nothing is lost in a round trip.
SCHEDULE_OUTPUT = {
    "format": "{job_id};{queue_time};{start_time};{end_time};{procs};{expected_duration}",
    "attributes": {
        "job_id": ("id", "str"),
        "queue_time": ("queued_time", "int"),
        "start_time": ("start_time", "int"),
        "end_time": ("end_time", "int"),
        "procs": ("requested_nodes", "int"),
        "expected_duration": ("expected_duration", "int"),
    },
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, type=Path, help="SWF trace, .swf or .swf.gz")
    p.add_argument("--nodes", required=True, type=int, help="number of nodes")
    p.add_argument("--cores", required=True, type=int, help="cores per node")
    p.add_argument(
        "--jobs", type=int, default=None, help="replay only the first K job lines of the trace"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="keep AccaSim's output files and write jobs.csv here (default: a temp dir, removed)",
    )
    p.add_argument("--log-level", default="WARNING", help="AccaSim's log level (INFO shows more)")
    p.add_argument(
        "--dispatcher",
        choices=sorted(DISPATCHERS),
        default="fifo",
        help="fifo: FirstInFirstOut (strict FIFO); easy: EASYBackfilling; both with FirstFit",
    )
    return p.parse_args(argv)


def extract_prefix(src: Path, dest: Path, limit: int | None) -> int:
    """Copy the first ``limit`` job lines of ``src`` (gzipped or not) to ``dest``; return the count.

    AccaSim's reader opens the file with plain ``open()`` (no .gz), counts ``;`` header lines
    against its own ``max_lines``, and chops the last character of every line (so a final line
    without a newline loses a digit). Writing only job lines, each newline-terminated, avoids
    all three.
    """
    opener = gzip.open if src.suffix == ".gz" else open
    count = 0
    with opener(src, "rt") as fin, dest.open("w") as fout:
        for line in fin:
            stripped = line.strip()
            if not stripped or stripped.startswith(";"):
                continue
            if limit is not None and count >= limit:
                break
            fout.write(stripped + "\n")
            count += 1
    return count


def write_system_config(path: Path, nodes: int, cores: int) -> None:
    """A homogeneous cluster: one group of ``nodes`` nodes with ``cores`` cores and no memory."""
    config = {
        "groups": {"g0": {"core": cores}},
        "resources": {"g0": nodes},
        # One SWF processor is one core; a job of P processors asks for P units of 1 core,
        # which FirstFit may pack several to a node.
        "equivalence": {"processor": {"core": 1}},
        "start_time": 0,
    }
    path.write_text(json.dumps(config))


def build_simulator(
    workload: Path, sys_config: Path, results: Path, log_level: str, dispatcher_name: str = "fifo"
) -> Any:
    from accasim.base import scheduler_class
    from accasim.base.allocator_class import FirstFit
    from accasim.base.simulator_class import Simulator
    from accasim.utils.reader_class import DefaultTweaker

    class CoresOnlyTweaker(DefaultTweaker):  # type: ignore[misc]
        """AccaSim's default SWF tweak, minus memory: the simulated cluster has none.

        The default tweaker decides from the *first* job whether to strip the memory request;
        a later job without memory fields then crashes the job factory (KeyError: 'mem'), as in
        LANL-CM5 from line 43,691 on. Memory plays no part on a cores-only cluster, so drop it.
        """

        def tweak_function(self, job: dict[str, Any]) -> dict[str, Any]:
            job.pop("mem", None)
            return super().tweak_function(job)  # type: ignore[no-any-return]

    # fifo: strict FIFO, stops at the first job that can't fit; easy: EASY backfilling
    dispatcher = getattr(scheduler_class, DISPATCHERS[dispatcher_name])(FirstFit())
    return Simulator(
        str(workload),
        str(sys_config),
        dispatcher,
        tweak_function=CoresOnlyTweaker(0),
        RESULTS_FOLDER_PATH=str(results),
        SCHEDULE_OUTPUT=SCHEDULE_OUTPUT,
        LOG_LEVEL=log_level,
        scheduling_output=True,  # the per-job plan we read back
        statistics_output=True,  # AccaSim's own averages, reported for cross-checking
        show_statistics=False,
        pprint_output=False,
        benchmark_output=False,
    )


def read_plan(path: Path) -> list[tuple[str, int, int, int, int]]:
    """(job, submit, start, end, processors) for every job in AccaSim's dispatching plan."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            job, submit, start, end, procs, _ = line.split(";")
            rows.append((job, int(submit), int(start), int(end), int(procs)))
    rows.sort(key=lambda r: (r[1], r[2], r[0]))
    return rows


def read_stats(path: Path) -> dict[str, str]:
    """AccaSim's statistics file, ``Key: value`` lines, as a dict of strings."""
    if not path.exists():
        return {}
    with path.open() as f:
        pairs = [line.partition(":") for line in f]
    return {k.strip(): v.strip() for k, _, v in pairs}


def aggregates(rows: list[tuple[str, int, int, int, int]]) -> dict[str, float | None]:
    waits = [start - submit for _, submit, start, _, _ in rows]
    bslds = [
        max(1.0, (start - submit + end - start) / max(end - start, TAU))
        for _, submit, start, end, _ in rows
    ]
    if not rows:
        return {"mean_wait_s": None, "median_wait_s": None, "mean_bsld": None, "makespan_s": None}
    return {
        "mean_wait_s": statistics.fmean(waits),
        "median_wait_s": float(statistics.median(waits)),
        "mean_bsld": statistics.fmean(bslds),
        "makespan_s": float(max(r[3] for r in rows) - min(r[1] for r in rows)),
    }


def write_jobs_csv(path: Path, rows: list[tuple[str, int, int, int, int]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "submit", "start", "end", "wait", "runtime", "procs"])
        for job, submit, start, end, procs in rows:
            w.writerow([job, submit, start, end, start - submit, end - start, procs])


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="accasim-"))
    out.mkdir(parents=True, exist_ok=True)
    stem = args.workload.name.removesuffix(".gz").removesuffix(".swf")
    suffix = f"-first{args.jobs}" if args.jobs is not None else ""
    workload = out / f"{stem}{suffix}.swf"
    try:
        job_lines = extract_prefix(args.workload, workload, args.jobs)
        sys_config = out / "sys_config.json"
        write_system_config(sys_config, args.nodes, args.cores)

        t_setup = time.perf_counter()
        sim = build_simulator(workload, sys_config, out, args.log_level, args.dispatcher)
        t_start = time.perf_counter()
        files = sim.start_simulation()
        t_end = time.perf_counter()

        rows = read_plan(Path(files.get("sched-", out / f"sched-{workload.name}")))
        stats = read_stats(Path(files.get("stats-", out / f"stats-{workload.name}")))
        result: dict[str, Any] = {
            "simulator": "accasim",
            "version": _accasim_version(),
            "dispatcher": f"{DISPATCHERS[args.dispatcher]}(FirstFit)",
            "workload": str(args.workload),
            "nodes": args.nodes,
            "cores": args.cores,
            "job_lines": job_lines,
            "loaded": sim.loaded_jobs,  # parsed; lines without a processor count are not
            "skipped_unparsed": job_lines - sim.loaded_jobs,
            "rejected": sim.rejected_jobs,  # more processors than the machine has
            "jobs": len(rows),
            "wall_s": t_end - t_start,
            "setup_s": t_start - t_setup,
            **aggregates(rows),
            "accasim_stats": stats,
        }
        if args.out is not None:
            per_job = out / "jobs.csv"
            write_jobs_csv(per_job, rows)
            result["per_job"] = str(per_job)
        result["peak_rss_mb"] = peak_rss_mb()
        result["total_s"] = time.perf_counter() - _T0
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


def _accasim_version() -> str:
    from importlib.metadata import version

    return version("accasim")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
