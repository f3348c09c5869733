"""``xce workload generate``: write a seeded synthetic workload as a jobs file.

main.py registers the sub-app with ``app.add_typer(workload_app, name="workload")``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from xce.cli.conventions import CONTEXT, XceCommand, XceGroup, guarded
from xce.cli.outputs import check_file, output_path, plain, write_file
from xce.errors import InputError, InternalError

if TYPE_CHECKING:  # the library and numpy load when the command runs (start-up time)
    from xce.cluster import ClusterState
    from xce.sim.model import SimJob

__all__ = ["generate", "job_kind", "parse_queues", "workload_app"]

workload_app = typer.Typer(
    name="workload",
    help="Synthetic workloads for `xce simulate`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    cls=XceGroup,
)


@workload_app.callback()
def _group() -> None:
    """Synthetic workloads for `xce simulate`."""


def job_kind(job: SimJob) -> str:
    """``sequential``, ``parallel``, ``compound`` or ``alternative``."""
    from xce.resreq import AlterResreq, CompoundResreq, parse

    resreq = parse(job.resreq)
    if isinstance(resreq, CompoundResreq):
        return "compound"
    if isinstance(resreq, AlterResreq):
        return "alternative"
    return "sequential" if job.tasks == 1 else "parallel"


def _summary(jobs: Sequence[SimJob], out: Path) -> str:
    kinds = Counter(job_kind(j) for j in jobs)
    mix = ", ".join(
        f"{kinds[k]} {k}" for k in ("sequential", "parallel", "compound", "alternative")
    )
    span = (jobs[-1].submit - jobs[0].submit) / 3600.0 if jobs else 0.0
    return f"wrote {len(jobs)} jobs to {plain(str(out))} ({mix}; submitted over {span:.1f} h)"


def parse_queues(text: str) -> tuple[tuple[str, float], ...]:
    """``normal=0.8,high=0.2`` -> ``(("normal", 0.8), ("high", 0.2))``."""
    out: list[tuple[str, float]] = []
    for item in text.split(","):
        name, sep, weight = item.partition("=")
        try:
            value = float(weight)
        except ValueError:
            value = math.nan
        if not (sep and name.strip() and math.isfinite(value) and value >= 0):
            raise InputError(f"--queues: expected NAME=WEIGHT,..., got {item!r}")
        if any(n == name.strip() for n, _ in out):
            raise InputError(f"--queues: queue {name.strip()!r} is given twice")
        out.append((name.strip(), value))
    return tuple(out)


_OPTIONS = {
    "mean_interarrival": "--mean-interarrival",
    "load": "--load",
    "daily_amplitude": "--daily-cycle",
    "runtime_median": "--runtime-median",
    "runtime_sigma": "--runtime-sigma",
    "runtime_cap": "--runtime-cap",
    "max_tasks": "--max-tasks",
    "users": "--users",
    "queues need": "--queues needs",
}


def _option_names(message: str) -> str:
    """A model error in the words of the command line."""
    for knob, option in _OPTIONS.items():
        message = message.replace(knob, option)
    return message


def check_options(jobs: int, peak_hour: float, max_tasks: int, users: int, sigma: float) -> None:
    """The options the model's own check would blame on an internal name, or accept."""
    from xce.sim.generate import MAX_GENERATED_JOBS

    if not 1 <= jobs <= MAX_GENERATED_JOBS:
        raise InputError(f"--jobs must be between 1 and {MAX_GENERATED_JOBS:,}, got {jobs}")
    if not (math.isfinite(peak_hour) and 0 <= peak_hour < 24):
        raise InputError(
            f"--peak-hour must be an hour from 0 to 24 (not included), got {peak_hour}"
        )
    if max_tasks < 2:
        raise InputError(f"--max-tasks must be at least 2, got {max_tasks}")
    if users < 1:
        raise InputError(f"--users must be at least 1, got {users}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise InputError(f"--runtime-sigma must be a finite number >= 0, got {sigma}")


def check_readable(workload: Sequence[SimJob]) -> None:
    """Refuse a workload ``xce simulate`` could not read back: its times must stay within
    the jobs file's number limit (huge --mean-interarrival, --runtime-median,
    --runtime-cap or a tiny --load would write times of 1e300 seconds)."""
    from xce.cluster.schema import MAX_NUMBER

    for key, what, options in (
        ("submit", "submit time", "--mean-interarrival or --load"),
        ("runtime", "runtime", "--runtime-median or --runtime-cap"),
        ("requested_time", "requested time", "--runtime-median or --runtime-cap"),
    ):
        largest = max((getattr(j, key) or 0.0 for j in workload), default=0.0)
        if not largest <= MAX_NUMBER:
            raise InputError(
                f"{options}: the workload would hold a {what} of "
                f"{largest:.3g} s, more than a jobs file may hold ({MAX_NUMBER:.0e})"
            )


@workload_app.command("generate", cls=XceCommand)
@guarded
def generate(
    jobs: Annotated[
        int, typer.Option("--jobs", "-n", metavar="N", help="How many jobs, at most 10,000,000.")
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="The jobs file: .yaml, .yml, .json or .jsonl (never the --cluster file; "
            "an existing file only with --force).",
        ),
    ],
    seed: Annotated[
        int, typer.Option(metavar="N", help="Same seed, same workload (byte for byte).")
    ] = 0,
    cluster: Annotated[
        Path | None,
        typer.Option(
            metavar="STATE",
            help="A state file: use its names and keep every job runnable on it "
            "(default: the cluster of examples/cluster.yaml).",
        ),
    ] = None,
    mean_interarrival: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Mean seconds between submissions (Poisson arrivals; default 40).",
        ),
    ] = None,
    load: Annotated[
        float | None,
        typer.Option(
            metavar="FRACTION",
            help="Offered load, a fraction of the cluster's open slots (e.g. 0.8); "
            "sets the mean inter-arrival time instead of --mean-interarrival.",
        ),
    ] = None,
    daily_cycle: Annotated[
        float,
        typer.Option(
            metavar="AMPLITUDE", help="Amplitude of the daily arrival cycle, 0 (none) to 1."
        ),
    ] = 0.0,
    peak_hour: Annotated[
        float, typer.Option(metavar="HOUR", help="Hour of the daily peak, 0 to 24.")
    ] = 14.0,
    runtime_median: Annotated[
        float, typer.Option(metavar="SECONDS", help="Median runtime, seconds.")
    ] = 600.0,
    runtime_sigma: Annotated[
        float, typer.Option(metavar="SIGMA", help="Sigma of the log of the runtime.")
    ] = 1.5,
    runtime_cap: Annotated[
        float, typer.Option(metavar="SECONDS", help="Longest runtime, seconds.")
    ] = 86400.0,
    max_tasks: Annotated[
        int, typer.Option(metavar="N", help="Largest parallel job, tasks (at least 2).")
    ] = 64,
    users: Annotated[
        int, typer.Option(metavar="N", help="How many users (Zipf-like activity).")
    ] = 20,
    queues: Annotated[
        str,
        typer.Option(metavar="NAME=WEIGHT,...", help="Queues and their shares of the jobs."),
    ] = "normal=0.8,high=0.15,low=0.05",
    force: Annotated[
        bool, typer.Option("--force", help="Let --out replace an existing file.")
    ] = False,
) -> None:
    """Generate a seeded synthetic workload (see docs/workload-generator.md)."""
    from xce.cluster import load_state
    from xce.sim.generate import WorkloadModel, generate_workload
    from xce.sim.workload import JOBS_FILE_SUFFIXES, write_jobs_file

    check_options(jobs, peak_hour, max_tasks, users, runtime_sigma)
    if load is not None and mean_interarrival is not None:
        raise InputError(
            "--mean-interarrival and --load: give one (--load sets the mean inter-arrival "
            "time from the cluster's open slots)"
        )
    target = output_path(out, "--out")
    if target.suffix.lower() not in JOBS_FILE_SUFFIXES:
        raise InputError(f"--out {out}: expected a name ending in {', '.join(JOBS_FILE_SUFFIXES)}")
    check_file(target, "--out", [("--cluster", cluster)] if cluster else [], force=force)
    model = WorkloadModel(
        load=load,
        daily_amplitude=daily_cycle,
        peak_hour=peak_hour,
        runtime_median=runtime_median,
        runtime_sigma=runtime_sigma,
        runtime_cap=runtime_cap,
        max_tasks=max_tasks,
        users=users,
        queues=parse_queues(queues),
    )
    if mean_interarrival is not None:
        model = dataclasses.replace(model, mean_interarrival=mean_interarrival)
    try:
        model.check()
    except InputError as err:
        raise InputError(_option_names(err.message)) from None
    state: ClusterState | None = load_state(cluster) if cluster is not None else None
    workload = generate_workload(jobs, seed=seed, cluster=state, model=model)
    check_readable(workload)
    try:  # before writing: the summary reads every requirement back
        summary = _summary(workload, target)
    except InputError as err:  # the generator's own requirement: a bug, not the input's
        raise InternalError(f"the generator wrote a requirement it cannot read: {err}") from err
    write_file(target, "--out", lambda temp: write_jobs_file(workload, temp), force=force)
    typer.echo(summary)
