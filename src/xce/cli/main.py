"""The ``xce`` command line: thin drivers around the library.

Exit codes for every command: 0 done, 2 bad input or usage, 1 internal error (a bug).
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from xce.errors import InputError, InternalError

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="xce",
    help="xce: a batch-job scheduler core for HPC clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Bad input -> message on stderr and exit 2; anything unexpected -> exit 1, said as a bug."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except InputError as err:
            print(f"xce: error: {err}", file=sys.stderr)
            raise typer.Exit(2) from None
        except InternalError as err:  # a check of xce's own found a bug
            traceback.print_exc(file=sys.stderr)
            print(f"xce: {err}", file=sys.stderr)
            raise typer.Exit(1) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as err:  # an internal error is a bug: say so
            traceback.print_exc(file=sys.stderr)
            print(
                "xce: internal error (a bug in xce, please report it): "
                f"{type(err).__name__}: {err}",
                file=sys.stderr,
            )
            raise typer.Exit(1) from None

    return run


@app.callback()
def _root() -> None:
    """xce: a batch-job scheduler core for HPC clusters."""


def _register() -> None:
    from xce.cli import resreq_cmd, schedule_cmd, simulate_cmd, workload_cmd

    app.command("schedule")(guarded(schedule_cmd.schedule))
    app.command("simulate")(guarded(simulate_cmd.simulate))
    app.command("resreq")(guarded(resreq_cmd.resreq))
    app.add_typer(workload_cmd.workload_app, name="workload")


_register()


def main() -> None:
    """Console-script entry point."""
    app()
