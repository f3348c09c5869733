"""``xce simulate``: replay a workload through the real scheduler in simulated time.

``--out DIR`` receives exactly the files of :data:`OUTPUT_FILES`, each written whole;
nothing else in DIR is touched, and a file of those names already there is replaced
only with ``--force`` (never one that is an input of the run).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli import replay_options as ro
from xce.cli.conventions import (
    BACKFILL_OPTION,
    PLOT_FORMAT_OPTION,
    PREEMPTOR_OPTION,
    check_backfill,
    check_picker,
    check_plot_format,
    check_preemptor,
)
from xce.cli.outputs import Inputs, check_dir, output_path, plain, shown, write_dir
from xce.errors import InputError
from xce.sim.files import SYNTHETIC, simulate_files

if TYPE_CHECKING:  # the library, numpy and matplotlib load when the command runs
    from rich.console import Console

    from xce.cluster import ClusterState
    from xce.sim.engine import SimOptions, SimResult
    from xce.sim.model import SimJob
    from xce.sim.swf import SwfTrace

OUTPUT_FILES = simulate_files()
"""Every file ``--out DIR`` writes (PNG plots), and the only ones."""


def _queues_file(path: Path) -> ClusterState:
    """``--queues``: a state file of queues (and limits, a default picker) only."""
    from xce.cluster import load_state

    state = load_state(path)
    extra = [
        what
        for what, there in (
            ("hosts", state.hosts.n),
            ("running", state.running),
            ("jobs", state.jobs),
            ("shared", state.shared_total),
        )
        if there
    ]
    if extra:
        raise InputError(
            f"--queues takes queues and limits only; it has {', '.join(extra)} "
            "(give a whole cluster with --cluster instead)",
            source=str(path),
        )
    return state


def check_interval(interval: float | None) -> None:
    """``--interval``: a finite number of seconds, at least the engine's MIN_INTERVAL."""
    from xce.sim.engine import MIN_INTERVAL

    if interval is not None and not (math.isfinite(interval) and interval >= MIN_INTERVAL):
        raise InputError(
            f"--interval must be a finite number of seconds >= {MIN_INTERVAL:g}, got {interval}"
        )


@dataclass(frozen=True, slots=True)
class ReplayInputs:
    """What a replay reads, as the options give it (``xce simulate``, ``xce compare``):
    checked before anything is read, then loaded."""

    workload: str
    cluster: Path | None
    queues: Path | None
    hosts: int | None
    slots_per_host: int | None
    seed: int
    limit: int | None
    lenient: bool

    def check(self, interval: float | None) -> None:
        """Every option on its own and together, before any input is read."""
        from xce.sim.clusters import check_hosts
        from xce.sim.workload import synthetic_count

        check_interval(interval)
        if self.limit is not None and self.limit < 0:
            raise InputError(f"--limit must be >= 0, got {self.limit}")
        check_hosts(self.hosts, self.slots_per_host)
        if self.cluster is not None and (self.hosts is not None or self.slots_per_host is not None):
            raise InputError("give --cluster or --hosts/--slots-per-host, not both")
        if self.cluster is not None and self.queues is not None:
            raise InputError("--queues goes with --hosts; with --cluster, put the queues there")
        if self.workload.startswith(SYNTHETIC):
            synthetic_count(self.workload)

    def out_dir(self, out: str | None, names: tuple[str, ...], force: bool) -> Path | None:
        """``--out``, checked before the run: may receive ``names``, none an input."""
        if out is None:
            return None
        path = output_path(out, "--out")
        inputs: Inputs = [("--cluster", self.cluster)] if self.cluster is not None else []
        if not self.workload.startswith(SYNTHETIC):
            inputs = [*inputs, ("--workload", Path(self.workload))]
        check_dir(path, "--out", names, inputs, force=force)
        return path

    def load(self) -> tuple[ClusterState, list[SimJob], SwfTrace | None]:
        """The cluster, the jobs and the trace (None unless SWF)."""
        from xce.cluster import load_state
        from xce.sim.clusters import header_cluster, uniform_cluster
        from xce.sim.workload import replay_jobs

        state = load_state(self.cluster) if self.cluster is not None else None
        queue_state = _queues_file(self.queues) if self.queues is not None else None
        hosts, slots = self.hosts, self.slots_per_host
        if state is None and hosts is not None:  # before the jobs: they are checked on it
            state = uniform_cluster(hosts, slots or 1, queue_state)
        jobs, trace = replay_jobs(self.workload, state, self.seed, self.limit, self.lenient)
        if state is None:
            if hosts is None and trace is not None:
                hosts, default_slots = header_cluster(trace)
                slots = slots or default_slots
            if hosts is None:
                raise InputError("give --cluster STATE or --hosts N (and --slots-per-host C)")
            state = uniform_cluster(hosts, slots or 1, queue_state)
        return state, jobs, trace


def _summary(data: dict[str, Any], result: SimResult, console: Console, out: Path | None) -> None:
    from rich.table import Table

    from xce.timefmt import duration

    def fmt(v: Any, unit: str = "") -> str:
        if v is None:
            return "-"
        return f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v:,}{unit}"

    def span(v: Any) -> str:
        """A duration as a person reads it (``29 min 1 s``, ``1 h``), not ``1741.0 s``."""
        return "-" if v is None else duration(float(v))

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
            " / ".join(span(data[k]) for k in ("mean_wait_s", "median_wait_s", "p95_wait_s")),
        ),
        ("mean bounded slowdown (10 s)", fmt(data["mean_bsld"])),
        ("utilisation, workload jobs", f"{100 * data['utilization']:.1f} %"),
        ("utilisation, all work", f"{100 * data['utilization_all_work']:.1f} %"),
        ("makespan", span(data["makespan_s"])),
        *(
            [
                ("preemptions", fmt(data["preemptions"])),
                ("work lost to preemption", f"{data['lost_work_slot_s'] / 3600:,.1f} slot-h"),
            ]
            if data["preemptions"]
            else []
        ),
        *(
            [
                ("jobs started by backfill", fmt(data["backfilled"])),
                (
                    "planned start error, mean / p95",
                    " / ".join(span(data["prediction_error_s"][k]) for k in ("mean", "p95"))
                    + f" ({data['prediction_error_s']['jobs']:,} jobs planned ahead)",
                ),
            ]
            if data["prediction_error_s"]["jobs"] or data["backfilled"]
            else []
        ),
        ("throughput", fmt(data["throughput_jobs_per_hour"], " jobs/h")),
    ]
    s = result.stats
    rows += [
        ("sessions / decisions", f"{s.sessions:,} / {s.decisions:,}"),
        ("unsatisfiable-cache hit rate", f"{100 * s.cache_hit_rate:.1f} %"),
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
        why = shown(record.unrunnable or "")
        console.print(f"[yellow]unrunnable[/] job {shown(record.job.id)}: {why}", highlight=False)
    if len(result.unrunnable) > 5:
        where = f"see {shown(out / 'jobs.csv')}" if out is not None else "--out DIR lists them all"
        console.print(f"... and {len(result.unrunnable) - 5:,} more unrunnable jobs ({where})")


def simulate(
    workload: Annotated[str, ro.WORKLOAD],
    cluster: Annotated[Path | None, ro.CLUSTER] = None,
    queues: Annotated[Path | None, ro.QUEUES] = None,
    preempt_mode: Annotated[
        str,
        typer.Option(
            "--preempt-mode",
            metavar="MODE",
            help="What happens to a preempted job: requeue (back to its queue, restarted "
            "from the beginning; the only mode so far).",
        ),
    ] = "requeue",
    hosts: Annotated[int | None, ro.HOSTS] = None,
    slots_per_host: Annotated[int | None, ro.SLOTS_PER_HOST] = None,
    picker: Annotated[
        str | None,
        typer.Option(
            "--picker", metavar="NAME", help="Default job picker (fcfs, strict, fairshare, ...)."
        ),
    ] = None,
    preemptor: Annotated[str | None, PREEMPTOR_OPTION] = None,
    backfill: Annotated[str | None, BACKFILL_OPTION] = None,
    single_queue: Annotated[
        bool, typer.Option("--single-queue", help="Put every job in one queue.")
    ] = False,
    interval: Annotated[float | None, ro.INTERVAL] = None,
    enforce_walltime: Annotated[
        bool, typer.Option("--enforce-walltime", help="End jobs at their requested time.")
    ] = False,
    seed: Annotated[int, ro.SEED] = 0,
    limit: Annotated[int | None, ro.LIMIT] = None,
    lenient: Annotated[bool, ro.LENIENT] = False,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Write jobs.csv, metrics.json, timing.json, the plots utilisation.png, "
            "queue.png, wait_cdf.png, bsld_by_size.png and the schedule as SWF "
            "(schedule.swf) into DIR (created if missing); nothing else there is touched.",
        ),
    ] = None,
    force: Annotated[bool, ro.FORCE] = False,
    plot_format: Annotated[str, PLOT_FORMAT_OPTION] = "png",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the metrics JSON on stdout.")
    ] = False,
) -> None:
    """Replay a workload through the scheduler in simulated time and report waits,
    slowdowns and utilisation."""
    from rich.console import Console

    from xce.sim.engine import SimOptions, verify
    from xce.sim.metrics import metrics

    check_picker(picker)
    check_preemptor(preemptor)
    check_backfill(backfill)
    replay = ReplayInputs(workload, cluster, queues, hosts, slots_per_host, seed, limit, lenient)
    replay.check(interval)
    if preempt_mode != "requeue":
        raise InputError(
            f"--preempt-mode: unknown mode {plain(repr(preempt_mode))} (known: requeue)"
        )
    check_plot_format(plot_format)
    out_dir = replay.out_dir(out, simulate_files(plot_format), force)
    state, jobs, trace = replay.load()
    options = SimOptions(
        picker=picker,
        single_queue=single_queue,
        interval=interval,
        enforce_walltime=enforce_walltime,
        preemptor=preemptor,
        backfill=backfill,
    )
    result, replayed = _run(state, jobs, options, show=not as_json and sys.stderr.isatty())
    verify(result, replayed)
    policy = policy_text(state, picker, preemptor, backfill)
    data = {"policy": policy, **metrics(result, trace)}
    written = (
        _write(out_dir, result, data, workload, policy, plot_format, force, calendar_start(trace))
        if out_dir is not None
        else []
    )
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        console = Console(highlight=False)
        _summary(data, result, console, out_dir)
        if out_dir is not None:
            names = ", ".join(p.name for p in written)
            console.print(f"wrote {names} in {shown(out_dir)}")


def _write(
    out: Path,
    result: SimResult,
    data: dict[str, Any],
    workload: str,
    policy: str,
    fmt: str,
    force: bool,
    start: float | None = None,
) -> list[Path]:
    """The files of OUTPUT_FILES, each whole (see outputs.write_dir); the plots' titles
    name the workload and the policy, their time axes are calendar dates when the
    trace's ``UnixStartTime`` (``start``) is known."""
    subtitle = f"{Path(workload).name}, policy {policy}"
    from xce.sim.metrics import timing, write_jobs_csv, write_metrics
    from xce.sim.plots import write_plots
    from xce.sim.swf import SWF_NAME, write_swf

    def write(staging: Path) -> None:
        write_jobs_csv(result.records, staging / "jobs.csv")
        write_metrics(data, staging / "metrics.json")
        write_metrics(timing(result), staging / "timing.json")
        write_plots(result.records, result.timeline, staging, subtitle, fmt, start)
        write_swf(result.records, staging / SWF_NAME, result.total_slots, workload)

    return write_dir(out, "--out", simulate_files(fmt), write, force=force)


def policy_text(
    state: ClusterState, picker: str | None, preemptor: str | None, backfill: str | None
) -> str:
    """The replay's policy as ``xce compare --policy`` writes it: the default picker,
    then the preemptor when one is named, then the backfill policy unless ``none``
    (queues may name their own; this is the session's default)."""
    parts = [picker or state.default_picker or "fcfs"]
    if preemptor:
        parts.append(preemptor)
    bf = backfill or state.default_backfill
    if bf and bf != "none":
        parts.append(bf)
    return "+".join(parts)


def calendar_start(trace: SwfTrace | None) -> float | None:
    """The trace's ``UnixStartTime`` header, when it has a usable one."""
    return None if trace is None else trace.header_int("UnixStartTime")


def _run(
    state: ClusterState, jobs: list[SimJob], options: SimOptions, show: bool
) -> tuple[SimResult, list[SimJob]]:
    """The replay's result and the jobs it replayed (``single_queue`` puts them all in
    one queue)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from xce.sim.engine import Simulation

    if not show:
        sim = Simulation(state, jobs, options)
        return sim.run(), sim.jobs
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

        sim = Simulation(state, jobs, options, progress)
        return sim.run(), sim.jobs
