"""``xce compare``: one workload and cluster, several policies; one table, overlaid plots.

``--out DIR`` receives exactly the files of :data:`OUTPUT_FILES`, each written whole;
nothing else in DIR is touched, and a file of those names already there is replaced
only with ``--force``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli import replay_options as ro
from xce.cli.conventions import PLOT_FORMAT_OPTION, check_plot_format
from xce.cli.outputs import plain, shown, write_dir
from xce.cli.simulate_cmd import ReplayInputs
from xce.errors import InputError
from xce.sim.files import COMPARE_JOBS, compare_files

if TYPE_CHECKING:
    from xce.sim.compare import Compared, Policy

OUTPUT_FILES = compare_files()
"""Every file ``--out DIR`` writes (PNG plots), and the only ones."""


def compare(
    workload: Annotated[str, ro.WORKLOAD],
    policy: Annotated[
        list[str],
        typer.Option(
            "--policy",
            metavar="POLICY",
            help="PICKER[+MODIFIER...]: fcfs, strict, fairshare or a plugin's picker; "
            "modifiers: a preemptor's name, nopreempt, a backfill policy (none, easy, "
            "conservative). Give it once per policy.",
        ),
    ],
    cluster: Annotated[Path | None, ro.CLUSTER] = None,
    queues: Annotated[Path | None, ro.QUEUES] = None,
    hosts: Annotated[int | None, ro.HOSTS] = None,
    slots_per_host: Annotated[int | None, ro.SLOTS_PER_HOST] = None,
    interval: Annotated[float | None, ro.INTERVAL] = None,
    seed: Annotated[int, ro.SEED] = 0,
    limit: Annotated[int | None, ro.LIMIT] = None,
    lenient: Annotated[bool, ro.LENIENT] = False,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Write compare.csv, compare.json, every policy's jobs (compare_jobs.csv) "
            "and the plots compare_wait_cdf.png, compare_bsld_by_size.png into DIR; "
            "nothing else there is touched.",
        ),
    ] = None,
    force: Annotated[bool, ro.FORCE] = False,
    plot_format: Annotated[str, PLOT_FORMAT_OPTION] = "png",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the comparison JSON on stdout.")
    ] = False,
) -> None:
    """Replay one workload under several policies and compare them in one table."""
    from rich.console import Console

    from xce.core import default_pickers
    from xce.preempt import default_preemptors
    from xce.sim.compare import compare as run_all
    from xce.sim.compare import parse_policy
    from xce.sim.engine import SimOptions

    pickers, preemptors = default_pickers(), default_preemptors()
    policies = [parse_policy(p, pickers, preemptors) for p in policy]
    texts = [p.text for p in policies]
    if len(set(texts)) != len(texts):
        raise InputError("--policy: a policy is given twice")
    replay = ReplayInputs(workload, cluster, queues, hosts, slots_per_host, seed, limit, lenient)
    replay.check(interval)
    check_plot_format(plot_format)
    out_dir = replay.out_dir(out, compare_files(plot_format), force)
    state, jobs, trace = replay.load()
    results = run_all(state, jobs, policies, SimOptions(interval=interval), trace)
    data = comparison_json(workload, results)
    written = (
        _write(out_dir, workload, results, data, plot_format, force) if out_dir is not None else []
    )
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    console = Console(highlight=False)
    if not console.is_terminal:  # a file or a pipe: room for every column
        console = Console(highlight=False, width=120)
    _table(results, workload, console)
    if out_dir is not None:
        names = ", ".join(p.name for p in written)
        console.print(f"wrote {names} in {shown(out_dir)}")


def comparison_json(workload: str, results: list[Compared]) -> dict[str, Any]:
    """``{"workload": ..., "policies": [{"policy", "picker", "preemptor", "preempt",
    "metrics"}]}``: each policy's metrics object is that of ``xce simulate``."""
    return {
        "workload": workload,
        "policies": [{**_policy_json(c.policy), "metrics": c.metrics} for c in results],
    }


def _policy_json(p: Policy) -> dict[str, Any]:
    return {
        "policy": p.text,
        "picker": p.picker,
        "preemptor": p.preemptor,
        "preempt": p.preempt,
        "backfill": p.backfill,
    }


def _table(results: list[Compared], workload: str, console: Any) -> None:
    from rich.table import Table

    from xce.sim.compare import COLUMNS

    table = Table(title=f"Policies on {plain(workload)}", title_justify="left")
    table.add_column("policy", no_wrap=True)
    for _, heading in COLUMNS:
        table.add_column(heading, justify="right", no_wrap=True)
    for c in results:
        table.add_row(plain(c.policy.text), *(_cell(c.metrics.get(k), k) for k, _ in COLUMNS))
    console.print(table)


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key == "utilization":
        return f"{100 * value:.1f} %"
    if key.endswith("_s"):
        return _duration(float(value))
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"


def _duration(seconds: float) -> str:
    """A duration in the unit that keeps it short: s, min, h or d."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"


def _write(
    out: Path,
    workload: str,
    results: list[Compared],
    data: dict[str, Any],
    fmt: str,
    force: bool,
) -> list[Path]:
    from xce.sim.compare import COLUMNS
    from xce.sim.metrics import write_policies_jobs_csv
    from xce.sim.plots import write_compare_plots

    def write(staging: Path) -> None:
        with (staging / "compare.csv").open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["policy", *(k for k, _ in COLUMNS)])  # metrics.json keys
            for c in results:
                w.writerow([c.policy.text, *(_csv(c.metrics.get(k)) for k, _ in COLUMNS)])
        (staging / "compare.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
        runs = [(c.policy.text, c.result.records) for c in results]
        write_policies_jobs_csv(runs, staging / COMPARE_JOBS)
        write_compare_plots(runs, Path(workload).name, staging, fmt)

    return write_dir(out, "--out", compare_files(fmt), write, force=force)


def _csv(value: Any) -> str:
    return "" if value is None else str(value)
