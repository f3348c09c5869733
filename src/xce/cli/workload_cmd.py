"""``xce workload generate``: write a seeded synthetic workload as a jobs file.

main.py registers the sub-app with ``app.add_typer(workload_app, name="workload")``.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer

from xce.cluster import ClusterState, load_state
from xce.errors import InputError
from xce.resreq import AlterResreq, CompoundResreq, parse
from xce.sim.generate import WorkloadModel, generate_workload
from xce.sim.model import SimJob
from xce.sim.workload import JOBS_FILE_SUFFIXES, write_jobs_file

__all__ = ["generate", "job_kind", "parse_queues", "workload_app"]

P = ParamSpec("P")
R = TypeVar("R")

workload_app = typer.Typer(
    name="workload",
    help="Synthetic workloads for `xce simulate`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@workload_app.callback()
def _group() -> None:
    """Synthetic workloads for `xce simulate`."""


def _guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """main.py's ``guarded`` (exit 2 on bad input, 1 on a bug), looked up at call time:
    main.py imports this module, so importing main.py here at load time would be a cycle."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from xce.cli.main import guarded

        return guarded(fn)(*args, **kwargs)

    return run


def job_kind(job: SimJob) -> str:
    """``sequential``, ``parallel``, ``compound`` or ``alternative``."""
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
    return f"wrote {len(jobs)} jobs to {out} ({mix}; submitted over {span:.1f} h)"


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


@workload_app.command("generate")
@_guarded
def generate(
    jobs: Annotated[int, typer.Option("--jobs", "-n", help="How many jobs.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The jobs file: .yaml, .yml, .json or .jsonl.")
    ],
    seed: Annotated[int, typer.Option(help="Same seed, same workload (byte for byte).")] = 0,
    cluster: Annotated[
        Path | None,
        typer.Option(
            help="A state file: use its names and keep every job runnable on it "
            "(default: the cluster of examples/cluster.yaml)."
        ),
    ] = None,
    mean_interarrival: Annotated[
        float, typer.Option(help="Mean seconds between submissions (Poisson arrivals).")
    ] = 40.0,
    load: Annotated[
        float | None,
        typer.Option(
            help="Offered load, a fraction of the cluster's open slots (e.g. 0.8); "
            "sets the mean inter-arrival time instead of --mean-interarrival."
        ),
    ] = None,
    daily_cycle: Annotated[
        float,
        typer.Option(help="Amplitude of the daily arrival cycle, 0 (none) to 1."),
    ] = 0.0,
    peak_hour: Annotated[float, typer.Option(help="Hour of the daily peak.")] = 14.0,
    runtime_median: Annotated[float, typer.Option(help="Median runtime, seconds.")] = 600.0,
    runtime_sigma: Annotated[float, typer.Option(help="Sigma of the log of the runtime.")] = 1.5,
    runtime_cap: Annotated[float, typer.Option(help="Longest runtime, seconds.")] = 86400.0,
    max_tasks: Annotated[int, typer.Option(help="Largest parallel job, tasks.")] = 64,
    users: Annotated[int, typer.Option(help="How many users (Zipf-like activity).")] = 20,
    queues: Annotated[
        str, typer.Option(help="Queues and their shares of the jobs, NAME=WEIGHT,...")
    ] = "normal=0.8,high=0.15,low=0.05",
) -> None:
    """Generate a seeded synthetic workload (see docs/workload-generator.md)."""
    if jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {jobs}")
    if out.suffix.lower() not in JOBS_FILE_SUFFIXES:
        raise InputError(
            f"--out must end in {', '.join(JOBS_FILE_SUFFIXES)}", source=os.fspath(out)
        )
    model = WorkloadModel(
        mean_interarrival=mean_interarrival,
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
    try:
        model.check()
    except InputError as err:
        raise InputError(_option_names(err.message)) from None
    state: ClusterState | None = load_state(cluster) if cluster is not None else None
    workload = generate_workload(jobs, seed=seed, cluster=state, model=model)
    try:
        write_jobs_file(workload, out)
    except OSError as err:
        raise InputError(
            f"cannot write the jobs file: {err.strerror or err}", source=os.fspath(out)
        ) from err
    typer.echo(_summary(workload, out))
