"""The ``xce`` command line: thin drivers around the library.

Exit codes for every command: 0 done, 2 bad input or usage, 1 internal error (a bug).

Start-up stays fast (``xce --help`` must not load numpy or matplotlib): this module and
the command modules import only typer and the standard library at load time; each
command imports the library when it runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from xce.cli.conventions import CONTEXT, XceCommand, XceGroup, guarded, version

__all__ = ["app", "guarded", "main"]

app = typer.Typer(
    name="xce",
    help="xce: a batch-job scheduler core for HPC clusters.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (docs/cli.md)
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    cls=XceGroup,
    rich_markup_mode=None,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"xce {version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """xce: a batch-job scheduler core for HPC clusters."""


def _register() -> None:
    from xce.cli import (
        compare_cmd,
        import_cmd,
        predict_cmd,
        report_cmd,
        resreq_cmd,
        schedule_cmd,
        simulate_cmd,
        sweep_cmd,
        workload_cmd,
    )

    app.command("schedule", cls=XceCommand)(guarded(schedule_cmd.schedule))
    app.command("simulate", cls=XceCommand)(guarded(simulate_cmd.simulate))
    app.command("compare", cls=XceCommand)(guarded(compare_cmd.compare))
    app.command("sweep", cls=XceCommand)(guarded(sweep_cmd.sweep))
    app.command("report", cls=XceCommand)(guarded(report_cmd.report))
    app.command("resreq", cls=XceCommand)(guarded(resreq_cmd.resreq))
    app.command("predict", cls=XceCommand)(guarded(predict_cmd.predict))
    app.add_typer(workload_cmd.workload_app, name="workload", cls=XceGroup)
    app.add_typer(import_cmd.import_app, name="import", cls=XceGroup)


_register()


def main() -> None:
    """Console-script entry point."""
    app()
