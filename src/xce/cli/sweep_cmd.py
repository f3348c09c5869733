"""``xce sweep``: every cell of a grid file replayed on Dask, results kept per cell.

``--out DIR`` receives only ``results.csv``: one row per finished cell, appended (and
synced) as each cell finishes, so an interrupted sweep keeps what it finished. Run
again, the same command skips the cells whose id is in the table already; a changed
grid runs only its new cells (rows of cells no longer in the grid stay).

``--keep-jobs`` also keeps each cell's per-job records, ``DIR/cells/<cell id>/jobs.csv``
(:func:`xce.sim.sweep.cell_jobs`), written on the worker before the cell's row: a
finished cell without one (a run without ``--keep-jobs``) is replayed for it, and its
row is not written twice.

On stderr, a line per finished cell (its waits and slowdown, rounded as ``xce compare``
rounds them) above a progress bar on a terminal; on stdout at the end, a table of the
grid's cells and the count of cells in the table.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli.outputs import Inputs, check_dir, output_path, plain, write_file
from xce.errors import InputError

if TYPE_CHECKING:
    from distributed import Client

    from xce.sim.sweep import Cell

RESULTS = "results.csv"
METRIC_COLUMNS = (
    "jobs",
    "ran",
    "unrunnable",
    "mean_wait_s",
    "median_wait_s",
    "p95_wait_s",
    "max_wait_s",
    "mean_bsld",
    "utilization",
    "makespan_s",
    "throughput_jobs_per_hour",
    "preemptions",
    "backfilled",
)
"""Top-level numbers of ``metrics.json`` given a column each; ``metrics`` holds it all."""
COLUMNS = (
    "cell",
    "workload",
    "seed",
    "cluster",
    "policy",
    "options",
    "repetition",
    *METRIC_COLUMNS,
    "metrics",
)


class ResultsTable:
    """``DIR/results.csv``: the finished cells, one row each, in the order they finished.

    Rows are appended and synced one at a time; a row cut short by a kill (no final
    newline) is dropped when the table is opened again, so its cell runs again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: set[str] = set()
        self.metrics: dict[str, dict[str, Any]] = {}  # by cell id: each row's metrics
        if path.exists():
            self._read()
        else:
            write_file(path, "--out", _text(_line(COLUMNS)), force=False)

    def _read(self) -> None:
        text = self.path.read_text("utf-8")
        complete = text[: text.rfind("\n") + 1]
        rows = list(csv.reader(io.StringIO(complete)))
        if not rows or tuple(rows[0]) != COLUMNS:
            raise InputError(
                f"--out {self.path} is not a results table of xce sweep (its header differs); "
                "give another --out DIR"
            )
        whole = [row for row in rows[1:] if len(row) == len(COLUMNS)]
        self.done = {row[0] for row in whole}
        for row in whole:
            try:
                self.metrics[row[0]] = json.loads(row[-1])
            except ValueError:  # a row edited by hand: kept, just not summarised
                continue
        if complete != text:  # a row cut short: the table without it, written whole
            write_file(self.path, "--out", _text(complete), force=True)

    def add(self, cell: Cell, metrics: dict[str, Any]) -> None:
        """Append the cell's row and sync it to disk."""
        row = [
            cell.id,
            cell.workload.name,
            cell.workload.seed if cell.workload.generated else "",
            cell.cluster.name,
            cell.policy,
            cell.options.text,
            cell.repetition,
            *(_value(metrics.get(k)) for k in METRIC_COLUMNS),
            json.dumps(metrics, sort_keys=True, separators=(",", ":")),
        ]
        with self.path.open("a", encoding="utf-8", newline="") as f:
            f.write(_line(row))
            f.flush()
            os.fsync(f.fileno())
        self.done.add(cell.id)
        self.metrics[cell.id] = metrics


def _text(text: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(text, "utf-8")

    return write


def _line(values: Sequence[object]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


def _value(value: Any) -> str:
    return "" if value is None else str(value)


def run_sweep(
    cells: Sequence[Cell],
    table: ResultsTable,
    client: Client | None,
    on_done: Callable[[Cell], None] = lambda cell: None,
    keep_jobs: Path | None = None,
) -> list[Cell]:
    """Run the cells not yet in ``table`` (on ``client``, or here one by one), adding
    each row as its cell finishes; ``on_done`` is called after each row is kept.
    ``keep_jobs`` (the ``--out`` directory): each cell's ``jobs.csv`` is kept there,
    and a finished cell without one runs again for it (its row is not added twice).
    Returns the cells run, in the order they finished."""
    from xce.sim.sweep import run_cells

    todo = to_run(cells, table, keep_jobs)
    finished: list[Cell] = []
    results = run_cells(todo, client, None if keep_jobs is None else str(keep_jobs))
    try:
        for cell, metrics in results:
            if cell.id not in table.done:
                table.add(cell, metrics)
            finished.append(cell)
            on_done(cell)
    finally:
        results.close()  # cancels the tasks left when interrupted
    return finished


def to_run(cells: Sequence[Cell], table: ResultsTable, keep_jobs: Path | None) -> list[Cell]:
    """The cells without a row in ``table``, and with ``keep_jobs`` those without a
    ``jobs.csv`` there."""
    from xce.sim.sweep import cell_jobs

    return [
        c
        for c in cells
        if c.id not in table.done
        or (keep_jobs is not None and not cell_jobs(keep_jobs, c.id).is_file())
    ]


@contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[Client]:
    """A client of the Dask cluster at ``scheduler``, or of a LocalCluster of
    ``workers`` single-threaded worker processes (default: one per core)."""
    import logging

    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=30)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError, ValueError) as err:
            raise InputError(f"--scheduler {plain(scheduler)}: cannot connect: {err}") from None
        with client:
            yield client
        return
    n = workers if workers is not None else os.cpu_count() or 1
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            silence_logs=logging.CRITICAL,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):
        yield client


def dashboard(client: Client) -> str | None:
    """The dashboard's address, when the scheduler serves one (it needs bokeh)."""
    services = client.scheduler_info().get("services", {})
    return str(client.dashboard_link) if "dashboard" in services else None


def sweep(
    grid: Annotated[
        Path, typer.Argument(metavar="GRID", help="A grid file (YAML): see docs/sweep.md.")
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Keep results.csv here (one row per finished cell); a second run skips "
            "the cells already there.",
        ),
    ],
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="A running Dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", metavar="N", help="Worker processes of the LocalCluster (default: cores)."
        ),
    ] = None,
    keep_jobs: Annotated[
        bool,
        typer.Option(
            "--keep-jobs",
            help="Also keep each cell's jobs.csv in DIR/cells/<cell id>/ (for xce report's "
            "distributions); finished cells without one run again for it.",
        ),
    ] = False,
) -> None:
    """Replay every cell of a grid of workloads, clusters, policies and options on Dask."""
    from rich.console import Console

    from xce.sim.sweep import CELLS, load_grid

    if scheduler is not None and workers is not None:
        raise InputError("--workers sizes the LocalCluster; with --scheduler, give neither")
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    cells = load_grid(grid)
    out_dir = output_path(out, "--out")
    check_dir(out_dir, "--out", [RESULTS], _inputs(grid, cells), force=True)
    out_dir.mkdir(exist_ok=True)
    table = ResultsTable(out_dir / RESULTS)
    jobs_dir = out_dir if keep_jobs else None
    todo = to_run(cells, table, jobs_dir)
    console = Console(stderr=True, highlight=False)
    console.print(f"{len(cells):,} cells: {len(cells) - len(todo):,} done, {len(todo):,} to run")
    if todo:
        with dask_client(scheduler, workers) as client:
            if (link := dashboard(client)) is not None:
                console.print(f"Dask dashboard: {link}")
            _with_progress(todo, table, client, console, jobs_dir)
    summary(cells, table, Console(highlight=False, width=None if sys.stdout.isatty() else 120))
    kept = len(table.done & {c.id for c in cells})
    where = f" and their jobs in {plain(str(out_dir / CELLS))}" if keep_jobs else ""
    typer.echo(f"{kept:,} of {len(cells):,} cells in {plain(str(out_dir / RESULTS))}{where}")


def _with_progress(
    cells: Sequence[Cell],
    table: ResultsTable,
    client: Client,
    console: Any,
    jobs_dir: Path | None,
) -> None:
    """A line per finished cell on stderr, under a progress bar on a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    count = 0

    def line(cell: Cell) -> None:
        nonlocal count
        count += 1
        text = cell_line(cell, table.metrics.get(cell.id))
        console.print(f"\\[{count:,}/{len(cells):,}] {text}", soft_wrap=True)

    if not sys.stderr.isatty():
        run_sweep(cells, table, client, line, jobs_dir)
        return
    columns = ("[bold]sweep", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("sweep", total=len(cells))

        def advance(cell: Cell) -> None:
            line(cell)
            bar.advance(task)

        run_sweep(cells, table, client, advance, jobs_dir)
    console.print(f"ran {len(cells):,} cells")


def cell_line(cell: Cell, metrics: dict[str, Any] | None) -> str:
    """``CELL: mean wait W, max M, mean bsld B`` as a person reads a finished cell."""
    from xce.cli.conventions import metric_text as shown

    text = plain(cell.text)
    if metrics is None:
        return text
    return (
        f"{text}: mean wait {shown(metrics.get('mean_wait_s'), 'mean_wait_s')}, "
        f"max {shown(metrics.get('max_wait_s'), 'max_wait_s')}, "
        f"mean bsld {shown(metrics.get('mean_bsld'), 'mean_bsld')}"
    )


SUMMARY_ROWS = 50
"""The end-of-sweep table shows at most this many cells (results.csv has them all)."""
_SUMMARY = (
    ("jobs", "jobs"),
    ("mean_wait_s", "mean\nwait"),
    ("p95_wait_s", "p95\nwait"),
    ("max_wait_s", "max\nwait"),
    ("mean_bsld", "mean\nbsld"),
    ("utilization", "utilis-\nation"),
    ("jain_mean_bsld", "user\nfair-\nness"),
)
"""(key, heading) of the summary's numbers: metrics.json's, then the user fairness."""


def summary(cells: Sequence[Cell], table: ResultsTable, console: Any) -> None:
    """A row per cell of the grid that the table holds, in grid order, numbers rounded
    as ``xce compare`` rounds them; what every row shares (the workload, say) goes in
    the title instead of a column."""
    from rich.table import Table

    from xce.cli.conventions import metric_text as shown
    from xce.sim.compare import user_fairness

    rows = [(c, table.metrics[c.id]) for c in cells if c.id in table.metrics]
    if not rows:
        return
    names = {
        "workload": [_workload(c) for c, _ in rows],
        "cluster": [c.cluster.name for c, _ in rows],
        "policy": [c.policy for c, _ in rows],
        "options": [c.options.text for c, _ in rows],
    }
    varying = [k for k, v in names.items() if len(set(v)) > 1] or ["policy"]
    shared = [f"{k} {plain(v[0])}" for k, v in names.items() if k not in varying]
    title = f"Sweep: {len(rows):,} cells" + (f" ({', '.join(shared)})" if shared else "")
    out = Table(title=title, title_justify="left")
    for key in varying:
        out.add_column(key)
    for _, heading in _SUMMARY:
        out.add_column(heading, justify="right", no_wrap=True)
    for i, (_, metrics) in enumerate(rows[:SUMMARY_ROWS]):
        values = {**metrics, **user_fairness(metrics).json()}
        out.add_row(
            *(plain(names[k][i]) for k in varying),
            *(shown(values.get(k), k) for k, _ in _SUMMARY),
        )
    console.print(out)
    if len(rows) > SUMMARY_ROWS:
        console.print(f"... and {len(rows) - SUMMARY_ROWS:,} more cells (results.csv has them)")


def _workload(cell: Cell) -> str:
    w = cell.workload
    return f"{w.name} seed {w.seed}" if w.generated else w.name


def _inputs(grid: Path, cells: Sequence[Cell]) -> Inputs:
    """The grid file and every file it names: results.csv may be none of them."""
    files: list[tuple[str, Path]] = [("GRID", grid)]
    for cell in cells:
        for path in (cell.workload.spec, cell.cluster.file, cell.cluster.queues):
            if path is not None and not path.startswith("synthetic:"):
                files.append(("the grid's file", Path(path)))
    return list(dict.fromkeys(files))
