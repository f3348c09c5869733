"""``xce simulate``: replay a workload through the real scheduler in simulated time."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from xce.cluster import ClusterState, load_state, state_from_dict
from xce.errors import InputError
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.generate import generate_workload
from xce.sim.metrics import metrics, timing, write_jobs_csv, write_metrics
from xce.sim.model import SimJob
from xce.sim.plots import write_plots
from xce.sim.swf import SwfTrace
from xce.sim.workload import is_swf, load_workload

SYNTHETIC = "synthetic:"


def header_cluster(trace: SwfTrace) -> tuple[int, int]:
    """(hosts, slots per host) from an SWF header: MaxNodes x MaxProcs/MaxNodes."""
    nodes, procs = trace.header_int("MaxNodes"), trace.header_int("MaxProcs")
    if nodes and procs:
        return nodes, max(procs // nodes, 1)
    if nodes or procs:
        return (nodes or procs or 0), 1
    raise InputError(
        "the trace header gives neither MaxNodes nor MaxProcs: pass --hosts and --slots-per-host",
        source=trace.source,
    )


def uniform_cluster(hosts: int, slots: int) -> ClusterState:
    if hosts < 1 or slots < 1:
        raise InputError(f"--hosts and --slots-per-host must be >= 1, got {hosts} and {slots}")
    width = len(str(hosts - 1))
    data = {"hosts": [{"name": f"n{i:0{width}d}", "slots": slots} for i in range(hosts)]}
    return state_from_dict(data, f"<{hosts} hosts x {slots} slots>")


def _workload(
    spec: str, cluster: ClusterState | None, seed: int, limit: int | None, lenient: bool
) -> tuple[list[SimJob], SwfTrace | None]:
    if spec.startswith(SYNTHETIC):
        try:
            count = int(spec[len(SYNTHETIC) :])
        except ValueError:
            raise InputError(
                f"--workload {spec!r}: expected synthetic:N with a whole number N"
            ) from None
        return generate_workload(count, seed=seed, cluster=cluster), None
    has_mem = cluster is not None and "mem" in cluster.hosts.capacity
    options: dict[str, object] = (
        {"limit": limit, "lenient": lenient, "memory": has_mem} if is_swf(spec) else {}
    )
    jobs, trace = load_workload(spec, **options)
    if limit is not None and trace is None:
        jobs = jobs[:limit]
    return jobs, trace


def _summary(data: dict[str, Any], result: SimResult, console: Console) -> None:
    def fmt(v: Any, unit: str = "") -> str:
        if v is None:
            return "-"
        return f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v:,}{unit}"

    table = Table(title="Simulation", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [
        ("jobs", fmt(data["jobs"])),
        ("ran", fmt(data["ran"])),
        ("unrunnable on this cluster", fmt(data["unrunnable"])),
        ("killed at their requested time", fmt(data["killed_at_walltime"])),
        (
            "mean / median / p95 wait",
            " / ".join(fmt(data[k], " s") for k in ("mean_wait_s", "median_wait_s", "p95_wait_s")),
        ),
        ("mean bounded slowdown (10 s)", fmt(data["mean_bsld"])),
        ("utilisation", f"{100 * data['utilization']:.1f} %"),
        ("makespan", f"{data['makespan_s'] / 3600:,.1f} h"),
        ("throughput", fmt(data["throughput_jobs_per_hour"], " jobs/h")),
    ]
    s = data["scheduler"]
    rows += [
        ("sessions / decisions", f"{s['sessions']:,} / {s['decisions']:,}"),
        ("unsatisfiable-cache hit rate", f"{100 * s['cache_hit_rate']:.1f} %"),
        (
            "time allocating / wall time",
            f"{result.stats.alloc_seconds:.1f} s / {result.stats.wall_seconds:.1f} s",
        ),
    ]
    if "trace" in data and data["trace"]["skipped"]:
        skipped = ", ".join(f"{v:,} {k}" for k, v in data["trace"]["skipped"].items())
        rows.append(("trace lines skipped", skipped))
    for what, value in rows:
        table.add_row(what, value)
    console.print(table)
    for record in result.unrunnable[:5]:
        why = escape(record.unrunnable or "")
        console.print(f"[yellow]unrunnable[/] job {record.job.id}: {why}", highlight=False)
    if len(result.unrunnable) > 5:
        console.print(f"... and {len(result.unrunnable) - 5:,} more unrunnable jobs (see jobs.csv)")


def simulate(
    workload: Annotated[
        str,
        typer.Option(
            "--workload",
            help="An SWF trace (.swf/.swf.gz), a jobs file (.yaml/.json/.jsonl) or synthetic:N.",
        ),
    ],
    cluster: Annotated[
        Path | None, typer.Option("--cluster", help="A state file: the cluster to simulate.")
    ] = None,
    hosts: Annotated[
        int | None,
        typer.Option(
            "--hosts", help="A uniform cluster of N hosts (default: from the SWF header)."
        ),
    ] = None,
    slots_per_host: Annotated[
        int | None, typer.Option("--slots-per-host", help="Slots of each of the --hosts.")
    ] = None,
    picker: Annotated[
        str | None,
        typer.Option("--picker", help="Default job picker (fcfs, strict, fairshare, ...)."),
    ] = None,
    single_queue: Annotated[
        bool, typer.Option("--single-queue", help="Put every job in one queue.")
    ] = False,
    interval: Annotated[
        float | None,
        typer.Option("--interval", help="Seconds between sessions (default: at every event)."),
    ] = None,
    enforce_walltime: Annotated[
        bool, typer.Option("--enforce-walltime", help="End jobs at their requested time.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of a synthetic:N workload.")] = 0,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Only the first N jobs of the workload.")
    ] = None,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip (and count) malformed trace lines.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write jobs.csv, metrics.json and PNG plots here.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the metrics JSON on stdout.")
    ] = False,
) -> None:
    """Replay a workload through the scheduler in simulated time and report waits,
    slowdowns and utilisation."""
    if interval is not None and interval <= 0:
        raise InputError(f"--interval must be > 0, got {interval}")
    if limit is not None and limit < 0:
        raise InputError(f"--limit must be >= 0, got {limit}")
    state = load_state(cluster) if cluster is not None else None
    if state is not None and (hosts is not None or slots_per_host is not None):
        raise InputError("give --cluster or --hosts/--slots-per-host, not both")
    if state is None and hosts is not None and workload.startswith(SYNTHETIC):
        state = uniform_cluster(hosts, slots_per_host or 1)  # generate for this cluster
    jobs, trace = _workload(workload, state, seed, limit, lenient)
    if state is None:
        if hosts is None and trace is not None:
            hosts, default_slots = header_cluster(trace)
            slots_per_host = slots_per_host or default_slots
        if hosts is None:
            raise InputError("give --cluster STATE or --hosts N (and --slots-per-host C)")
        state = uniform_cluster(hosts, slots_per_host or 1)
    options = SimOptions(
        picker=picker,
        single_queue=single_queue,
        interval=interval,
        enforce_walltime=enforce_walltime,
    )
    result = _run(state, jobs, options, show=not as_json and sys.stderr.isatty())
    verify(result, [r.job for r in result.records])
    data = metrics(result, trace)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_jobs_csv(result.records, out / "jobs.csv")
        write_metrics(data, out / "metrics.json")
        write_metrics(timing(result), out / "timing.json")
        write_plots(result.records, result.timeline, out)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        console = Console(highlight=False)
        _summary(data, result, console)
        if out is not None:
            console.print(f"wrote {out}/jobs.csv, metrics.json and plots")


def _run(state: ClusterState, jobs: list[SimJob], options: SimOptions, show: bool) -> SimResult:
    if not show:
        return Simulation(state, jobs, options).run()
    columns = (
        TextColumn("[bold]simulating"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} jobs"),
        TextColumn("{task.fields[simtime]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sim", total=len(jobs), simtime="")

        started = time.perf_counter()

        def progress(done: int, now: float) -> None:
            speed = done / max(time.perf_counter() - started, 1e-9)
            bar.update(task, completed=done, simtime=f"day {now / 86400:,.1f}, {speed:,.0f} jobs/s")

        return Simulation(state, jobs, options, progress).run()
