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
from xce.cli.conventions import metric_text as cell
from xce.cli.outputs import plain, shown, write_dir
from xce.cli.replay_options import Replay
from xce.cli.simulate_cmd import warn
from xce.errors import InputError
from xce.sim.files import COMPARE_JOBS, compare_files

if TYPE_CHECKING:
    from xce.sim.compare import Compared, Policy

OUTPUT_FILES = compare_files()
"""Every file ``--out DIR`` writes (PNG plots), and the only ones."""


@ro.replay_command
def compare(
    policy: Annotated[
        list[str],
        typer.Option(
            "--policy",
            metavar="POLICY",
            help="PICKER[+MODIFIER...]: fcfs, strict, fairshare, priority, multifactor, "
            "lsf-fairshare or a plugin's picker; "
            "modifiers: a preemptor's name, nopreempt, a backfill policy (none, easy, "
            "conservative, slurm). Give it once per policy.",
        ),
    ],
    replay: Replay,
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
    """Replay one workload under several policies and compare them in one table: waits
    (max too), slowdown, fairness between users, utilisation."""
    from rich.console import Console

    from xce.core import default_pickers
    from xce.preempt import default_preemptors
    from xce.sim.compare import compare as run_all
    from xce.sim.compare import parse_policy

    pickers, preemptors = default_pickers(), default_preemptors()
    policies = [parse_policy(p, pickers, preemptors) for p in policy]
    texts = [p.text for p in policies]
    if len(set(texts)) != len(texts):
        raise InputError("--policy: a policy is given twice")
    replay.check()
    check_plot_format(plot_format)
    out_dir = replay.out_dir(out, compare_files(plot_format), force)
    state, jobs, trace = replay.load()
    results = run_all(state, jobs, policies, replay.options(), trace)
    for c in results:
        warn(c.result.warnings, c.policy.text)
    workload = replay.workload
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
    "backfill", "metrics", "fairness"}]}``: each policy's metrics object is that of
    ``xce simulate``; ``fairness`` is read from it (:func:`xce.sim.compare.user_fairness`)."""
    return {
        "workload": workload,
        "policies": [
            {**_policy_json(c.policy), "metrics": c.metrics, "fairness": c.fairness.json()}
            for c in results
        ],
    }


def _policy_json(p: Policy) -> dict[str, Any]:
    return {
        "policy": p.text,
        "picker": p.picker,
        "preemptor": p.preemptor,
        "preempt": p.preempt,
        "backfill": p.backfill,
    }


_LEFT_OUT = frozenset({"median_wait_s"})
"""Metrics the terminal table leaves out so that it fits 120 columns (compare.csv,
compare.json and the report have them): the median wait is 0 s on most traces."""
_ONLY_WHEN_ANY = frozenset({"preemptions", "backfilled"})
"""Counts whose column is shown only when some policy's is not 0."""


def _table(results: list[Compared], workload: str, console: Any) -> None:
    from rich.table import Table

    from xce.sim.compare import COLUMNS, FAIRNESS_COLUMNS

    shown_columns = [
        (k, h)
        for k, h in COLUMNS
        if k not in _LEFT_OUT
        and (k not in _ONLY_WHEN_ANY or any(c.metrics.get(k) for c in results))
    ]
    headings = [
        h.replace("-\n", "").replace("\n", " ") for _, h in (*shown_columns, *FAIRNESS_COLUMNS)
    ]
    rows = []
    for c in results:
        fair = c.fairness.json()
        rows.append(
            [
                *(cell(c.metrics.get(k), k) for k, _ in shown_columns),
                *(cell(fair[k], k) for k, _ in FAIRNESS_COLUMNS),
            ]
        )
    title = f"Policies on {plain(workload)}"
    table = Table(title=title, title_justify="left")
    table.add_column("policy", no_wrap=True)
    for _, heading in (*shown_columns, *FAIRNESS_COLUMNS):
        table.add_column(heading, justify="right", no_wrap=True)
    for c, row in zip(results, rows, strict=True):
        table.add_row(plain(c.policy.text), *row)
    wide = console.options.update_width(10_000)

    def fits(t: Table) -> bool:
        return bool(console.measure(t, options=wide).maximum <= console.width)

    labels = [plain(c.policy.text) for c in results]

    def by_column(first: int, last: int, heading: str) -> Table:
        """Policies ``first`` to ``last`` (exclusive) as columns, the metrics as rows."""
        t = Table(title=heading, title_justify="left")
        t.add_column("", no_wrap=True)
        for label in labels[first:last]:
            t.add_column(label, justify="right", no_wrap=True)
        for k, name in enumerate(headings):
            t.add_row(name, *(row[k] for row in rows[first:last]))
        return t

    legend = False
    if fits(table):
        console.print(table)
    else:  # a policy per column; as many tables as it takes for each to fit
        if not all(fits(by_column(i, i + 1, title)) for i in range(len(results))):
            labels = [f"[{i}]" for i in range(1, len(results) + 1)]  # a name too long
            legend = True
        groups, first = [], 0
        while first < len(results):
            last = first + 1
            while last < len(results) and fits(by_column(first, last + 1, title)):
                last += 1
            groups.append((first, last))
            first = last
        for n, (first, last) in enumerate(groups, 1):
            part = f" ({n} of {len(groups)})" if len(groups) > 1 else ""
            console.print(by_column(first, last, title + part))
    if legend:
        for label, c in zip(labels, results, strict=True):
            console.print(f"{label} {plain(c.policy.text)}", highlight=False, soft_wrap=True)
    if any(c.fairness.users for c in results):
        console.print(
            "user fairness: Jain's index over users' mean bounded slowdowns (1: alike); "
            "worst user bsld: the highest such mean"
        )


def _write(
    out: Path,
    workload: str,
    results: list[Compared],
    data: dict[str, Any],
    fmt: str,
    force: bool,
) -> list[Path]:
    from xce.sim.metrics import write_policies_jobs_csv
    from xce.sim.plots import write_compare_plots

    def write(staging: Path) -> None:
        write_compare_csv(results, staging / "compare.csv")
        (staging / "compare.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
        runs = [(c.policy.text, c.result.records) for c in results]
        write_policies_jobs_csv(runs, staging / COMPARE_JOBS)
        write_compare_plots(runs, Path(workload).name, staging, fmt)

    return write_dir(out, "--out", compare_files(fmt), write, force=force)


def write_compare_csv(results: list[Compared], path: Path) -> None:
    """A row per policy: every key of its ``metrics.json`` object as a column (in that
    object's order; a nested object, ``by_user`` say, as compact JSON), then the
    fairness figures of ``compare.json`` (``fairness.jain_mean_bsld``, ...)."""
    keys = list(dict.fromkeys(k for c in results for k in c.metrics))
    fair = list(results[0].fairness.json()) if results else []
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*keys, *(f"fairness.{k}" for k in fair)])
        for c in results:
            figures = c.fairness.json()
            w.writerow([*(_csv(c.metrics.get(k)) for k in keys), *(_csv(figures[k]) for k in fair)])


def _csv(value: Any) -> str:
    """A CSV field: empty for null, compact JSON for an object or a list."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=False, separators=(",", ":"))
    return str(value)
