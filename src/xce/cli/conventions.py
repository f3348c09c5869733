"""Conventions every ``xce`` command follows: exit codes, ``-h``, quiet help, the version.

Exit codes: 0 done, 2 bad input or usage (a message on stderr), 1 internal error (a bug,
with its traceback). Imports only typer and the standard library (start-up time).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from xce.errors import InputError, InternalError

if TYPE_CHECKING:
    from xce.cluster import ClusterState
    from xce.core import PickerRegistry
    from xce.preempt import Preemptor

__all__ = [
    "CONTEXT",
    "XceCommand",
    "XceGroup",
    "check_backfill",
    "check_now",
    "check_picker",
    "guarded",
    "metric_text",
    "note_started_after",
    "version",
]

P = ParamSpec("P")
R = TypeVar("R")

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
"""Context settings of every command: ``-h`` is ``--help``."""


def _quiet(params: list[Any]) -> list[Any]:
    """Flags (``--json``, ``--help``) take no value: typer's help would show ``<bool>``."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class XceCommand(TyperCommand):
    """A command whose help shows no ``<bool>`` after a flag and whose usage line reads
    ``xce schedule [OPTIONS] STATE`` (typer writes a required argument ``{STATE}``,
    which reads like shell syntax)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _quiet(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = super().collect_usage_pieces(ctx)
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in pieces]


class XceGroup(TyperGroup):
    """A command group whose help shows no ``<bool>`` after a flag."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _quiet(super().get_params(ctx))


def _stderr(text: str) -> None:
    from xce.cli.outputs import plain

    print(plain(text), file=sys.stderr)


BROKEN_PIPE = 141
"""The exit code when the reader of stdout went away (``xce ... | head``): 128 + SIGPIPE,
what a shell reports for a tool SIGPIPE stops; not 1, which says xce has a bug."""


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Bad input -> message on stderr and exit 2; anything unexpected -> exit 1, said as a bug.

    Messages quote user input (file names, ids): their control characters are shown
    escaped, never sent to the terminal."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = fn(*args, **kwargs)
            sys.stdout.flush()  # here, so that a reader gone away is seen here
            return result
        except BrokenPipeError:  # ``xce ... | head``: not a bug, and nothing to say
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # what remains goes nowhere, quietly
            raise typer.Exit(BROKEN_PIPE) from None
        except SystemExit as err:  # rich's own answer to a broken pipe is exit 1
            if isinstance(err.__context__, BrokenPipeError):
                raise typer.Exit(BROKEN_PIPE) from None
            raise
        except InputError as err:
            _stderr(f"xce: error: {err}")
            raise typer.Exit(2) from None
        except InternalError as err:  # a check of xce's own found a bug
            traceback.print_exc(file=sys.stderr)
            _stderr(f"xce: {err}")
            raise typer.Exit(1) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as err:  # an internal error is a bug: say so
            traceback.print_exc(file=sys.stderr)
            _stderr(
                f"xce: internal error (a bug in xce, please report it): {type(err).__name__}: {err}"
            )
            raise typer.Exit(1) from None

    return run


def version() -> str:
    """The installed distribution's version (pyproject.toml is the one place it is set)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("xce")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


PREEMPTOR_OPTION = typer.Option(
    "--preemptor",
    metavar="NAME",
    help="Victim-set iterator for queues that list preempts (lowest_priority_first, or a "
    "plugin's).",
)
"""``--preemptor NAME`` (xce schedule and xce simulate); checked by :func:`check_preemptor`."""


BACKFILL_OPTION = typer.Option(
    "--backfill",
    metavar="POLICY",
    help="Backfill policy of queues that name none: none (default), easy, conservative, "
    "slurm (Slurm's own planner) or a plugin's. none with --picker strict is Slurm's "
    "sched/builtin and the literature's FCFS; easy is EASY backfill (LSF slot "
    "reservation with backfill); conservative plans every waiting job, as Slurm's sched/backfill.",
)
"""``--backfill POLICY`` (xce schedule, simulate); checked by :func:`check_backfill`."""


def check_backfill(name: str | None) -> None:
    """``--backfill``, checked before any input is read (the option's fault)."""
    from xce.backfill import default_backfills
    from xce.cli.outputs import plain

    if name is None:
        return
    registry = default_backfills()
    if name not in registry.names():
        known = ", ".join(registry.names())
        raise InputError(
            f"--backfill: unknown backfill policy {plain(repr(name))} (known: {known})"
        )


def check_now(now: float | None) -> None:
    """``--now`` of schedule and predict: a time a state holds (checked before any input
    is read, the option's fault)."""
    if now is not None and not abs(now) <= 1e15:  # a state's times (nan fails too)
        raise InputError(f"--now: {now} is not a time a state holds (at most 1e15 s)")


def note_started_after(state: ClusterState, now: float | None) -> None:
    """On stderr: running work of ``state`` that starts after ``--now`` still holds its
    slots in a session at ``--now`` (the state says what it holds, not what it did
    before), which a reader of the decisions must know."""
    early = state.started_after(now) if now is not None else []
    if early:
        first = early[0]
        _stderr(
            f"xce: note: {len(early)} running job(s) start after --now (first "
            f"{first.id!r} at {first.start_time:.17g}); the session counts them as "
            "holding their slots, as the state does"
        )


PLOT_FORMAT_OPTION = typer.Option(
    "--plot-format", metavar="FORMAT", help="The plots' format with --out: png or svg."
)
"""``--plot-format png|svg`` (xce simulate and xce compare)."""


def check_plot_format(fmt: str) -> None:
    """``--plot-format``: one of the formats plots are written in."""
    from xce.sim.files import PLOT_FORMATS

    if fmt not in PLOT_FORMATS:
        raise InputError(f"--plot-format: {fmt!r} is not one of {', '.join(PLOT_FORMATS)}")


def check_preemptor(name: str | None) -> Preemptor | None:
    """``--preemptor``, checked before any input is read (the option's fault)."""
    from xce.cli.outputs import plain
    from xce.preempt import default_preemptors

    if name is None:
        return None
    registry = default_preemptors()
    if name not in registry.names():
        known = ", ".join(sorted(registry.names()))
        raise InputError(f"--preemptor: unknown preemptor {plain(repr(name))} (known: {known})")
    return registry.get(name)


def check_picker(picker: str | None) -> PickerRegistry:
    """The picker registry, with ``--picker`` checked against it before any input is
    read: an unknown name is the option's fault, not the state file's."""
    from xce.cli.outputs import plain
    from xce.core import default_pickers

    pickers = default_pickers()
    if picker is not None and picker.partition(":")[0] not in pickers.names():
        known = ", ".join(sorted(pickers.names()))
        raise InputError(f"--picker: unknown picker {plain(repr(picker))} (known: {known})")
    if picker is not None:
        try:
            pickers.get(picker)  # NAME:OPTION: the option checked now
        except InputError as err:
            raise InputError(f"--picker: {err}") from None
    return pickers


def metric_text(value: Any, key: str) -> str:
    """A metric as every summary prints it (``xce simulate``, ``compare``, ``sweep``):
    a duration (a ``*_s`` key) as :func:`xce.timefmt.duration`, from whole seconds once
    it is a second or more (``52 s``, not ``52.113 s``; ``1 h 5 min``); a share
    (``utilization*``) as a percentage; an index (``jain*``) to two places; a
    slowdown of thousands without tenths; counts with thousands separators; ``-`` for
    none."""
    from xce.timefmt import duration

    if value is None:
        return "-"
    if key.startswith("utilization"):
        return f"{100 * value:.1f} %"
    if key.endswith("_s"):
        seconds = float(value)
        return duration(float(round(seconds)) if abs(seconds) >= 1 else seconds)
    if key.startswith("jain"):
        return f"{value:.2f}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.1f}"
    return f"{value:,}"
