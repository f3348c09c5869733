"""``xce simulate``: replay a workload through the real scheduler in simulated time.

``--out DIR`` receives exactly the files of :data:`OUTPUT_FILES`, each written whole;
nothing else in DIR is touched, and a file of those names already there is replaced
only with ``--force`` (never one that is an input of the run).
"""

from __future__ import annotations

import json
import sys
import time
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
from xce.cli.outputs import shown, write_dir
from xce.cli.replay_options import Replay
from xce.sim.files import simulate_files

if TYPE_CHECKING:  # the library, numpy and matplotlib load when the command runs
    from rich.console import Console

    from xce.cluster import ClusterState
    from xce.sim.model import SimJob
    from xce.sim.options import SimOptions
    from xce.sim.result import SimResult
    from xce.sim.swf import SwfTrace

OUTPUT_FILES = simulate_files()
"""Every file ``--out DIR`` writes (PNG plots), and the only ones."""


def _summary(data: dict[str, Any], result: SimResult, console: Console, out: Path | None) -> None:
    from rich.table import Table

    from xce.cli.conventions import metric_text

    def fmt(v: Any, unit: str = "") -> str:
        if v is None:
            return "-"
        return f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v:,}{unit}"

    def span(v: Any) -> str:
        """A duration as a person reads it (``29 min 1 s``, ``1 h``), not ``1741.0 s``."""
        return metric_text(v, "duration_s")

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


@ro.replay_command
def simulate(
    replay: Replay,
    picker: Annotated[
        str | None,
        typer.Option(
            "--picker",
            metavar="NAME",
            help="Default job picker (fcfs, strict, fairshare, priority, multifactor, "
            "lsf-fairshare, or a plugin's).",
        ),
    ] = None,
    preemptor: Annotated[str | None, PREEMPTOR_OPTION] = None,
    backfill: Annotated[str | None, BACKFILL_OPTION] = None,
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

    from xce.sim.metrics import metrics
    from xce.sim.verify import verify

    check_picker(picker)
    check_preemptor(preemptor)
    check_backfill(backfill)
    replay.check()
    check_plot_format(plot_format)
    out_dir = replay.out_dir(out, simulate_files(plot_format), force)
    state, jobs, trace = replay.load()
    options = replay.options(picker, preemptor, backfill)
    result, replayed = _run(state, jobs, options, show=not as_json and sys.stderr.isatty())
    verify(result, replayed)
    warn(result.warnings)
    policy = policy_text(state, picker, preemptor, backfill)
    learned = {}  # what the replay predicted with, and what its backfill planned with
    if replay.predictor is not None:
        learned = {"predictor": replay.predictor, "backfill_with": replay.backfill_with}
    data = {"policy": policy, **learned, **metrics(result, trace)}
    written = (
        _write(
            out_dir,
            result,
            data,
            replay.workload,
            policy,
            plot_format,
            force,
            calendar_start(trace),
        )
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


def warn(lines: list[str], policy: str | None = None) -> None:
    """What the replay says about its inputs (``SimResult.warnings``, xce.sim.caveats),
    on stderr, one ``xce: warning:`` line each (``policy``: which replay said it)."""
    from xce.cli.outputs import plain

    for line in dict.fromkeys(lines):
        where = f"{policy}: " if policy is not None else ""
        print(plain(f"xce: warning: {where}{line}"), file=sys.stderr)


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
