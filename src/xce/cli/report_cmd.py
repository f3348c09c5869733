"""``xce report RESULTS [-o FILE] [--force]``: one self-contained HTML page of the results
of ``xce simulate --out``, ``xce compare --out``, a sweep, or a directory of replays.

Register in ``xce.cli.main._register``::

    app.command("report", cls=XceCommand)(guarded(report_cmd.report))

``report_app`` runs the command alone (the tests use it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from xce.cli.conventions import CONTEXT, XceCommand, guarded

__all__ = ["report", "report_app"]

REPORT_NAME = "report.html"
"""The page's name in RESULTS when ``-o`` is not given."""
MAX_GANTT_HOURS = 876_000
"""The longest Gantt window, a century: it stays within the dates a calendar shows."""


def report(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help="A directory written by xce simulate --out or xce compare --out, a "
            "sweep's directory (results.csv), or a directory of replays.",
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help=f"The HTML file (default RESULTS/{REPORT_NAME})."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            help="The SWF trace replayed, for calendar time (UnixStartTime) and logged "
            "waits; default: the trace the results name, if it is there.",
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="A replay's policy, for titles (metrics.json lacks it)."),
    ] = None,
    gantt_from: Annotated[
        str | None,
        typer.Option(
            "--gantt-from",
            metavar="T",
            help="The Gantt window's start: seconds of simulated time, or an ISO date "
            "(UTC) when the trace's UnixStartTime is known; default: the busiest day.",
        ),
    ] = None,
    gantt_hours: Annotated[
        float, typer.Option("--gantt-hours", metavar="H", help="The Gantt window's length.")
    ] = 24.0,
    svg: Annotated[bool, typer.Option("--svg", help="Embed the plots as SVG, not PNG.")] = False,
) -> None:
    """Write a self-contained HTML report (plots embedded, sortable tables, no network)."""
    from xce.cli.outputs import check_file, output_path, shown, write_file
    from xce.errors import InputError

    if not results.is_dir():
        raise InputError(f"RESULTS {results}: not a directory")
    target = output_path(output, "--output") if output is not None else results / REPORT_NAME
    inputs = [("RESULTS", p) for p in sorted(results.iterdir()) if _read(p)]
    if trace is not None:
        inputs.append(("--trace", trace))
    check_file(target, "--output", inputs, force=force)
    if not 0 < gantt_hours <= MAX_GANTT_HOURS:
        raise InputError(
            f"--gantt-hours {gantt_hours}: expected a positive number of hours, at most "
            f"{MAX_GANTT_HOURS:,} (a century)"
        )

    from xce.sim.report import build_report, load_results

    with _progress() as step:
        step(0, 1, f"reading {shown(results)}")
        loaded = load_results(results, trace=trace, policy=policy)
        page = build_report(
            loaded,
            gantt_from=gantt_from,
            gantt_hours=gantt_hours,
            fmt="svg" if svg else "png",
            progress=step,
        )

    def write(path: Path) -> None:
        path.write_text(page, encoding="utf-8")

    write_file(target, "--output", write, force=force)
    typer.echo(f"wrote {shown(target)}")


report_app = typer.Typer(
    help="Write a self-contained HTML report of simulation results.",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    rich_markup_mode=None,
)
report_app.command("report", cls=XceCommand)(guarded(report))


def _read(path: Path) -> bool:
    """Whether the report may read ``path`` (so it must never write there): any file
    of RESULTS but an earlier HTML page."""
    return path.is_file() and path.suffix != ".html"


def _show_progress() -> bool:
    """Whether to draw the progress bar: on a terminal only (a log or a pipe gets none)."""
    return sys.stderr.isatty()


@contextmanager
def _progress() -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar on stderr, cleared at the end, fed ``(done, total, what)``: a report
    of a long trace takes tens of seconds (issue 26: 19 s with nothing shown)."""
    if not _show_progress():
        yield lambda done, total, what: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]report"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    console = Console(file=sys.stderr, force_terminal=True)
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=what)

        yield step
