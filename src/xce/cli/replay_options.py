"""The replay options ``xce simulate`` and ``xce compare`` share, defined once.

:data:`REPLAY_OPTIONS` is the one list: each option's name, type, help and default.
:func:`replay_command` gives a command all of them: the command takes one parameter
``replay: Replay`` where the options go, and typer sees the options themselves in its
place. A new replay option is added here and both commands (and their ``--help``) have
it; the two cannot drift apart (issue 26: compare lacked ``--single-queue`` and
``--enforce-walltime``).

What is not here is what differs on purpose: the policy (``--picker``/``--preemptor``/
``--backfill`` for one replay, ``--policy`` given once per policy for a comparison),
the outputs (``--out``, ``--json``) and ``--force``/``--plot-format``, whose help is
each command's own.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli.outputs import Inputs, check_dir, output_path, plain
from xce.errors import InputError
from xce.sim.files import SYNTHETIC

if TYPE_CHECKING:  # the library loads when a command runs
    from xce.cluster import ClusterState
    from xce.sim.model import SimJob
    from xce.sim.options import SimOptions
    from xce.sim.swf import SwfTrace

__all__ = [
    "FORCE",
    "REPLAY_OPTIONS",
    "Replay",
    "check_interval",
    "replay_command",
]

FORCE = typer.Option("--force", help="Let --out replace those files where they already exist.")

PREEMPT_MODES = ("requeue",)

_REQUIRED = inspect.Parameter.empty

REPLAY_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    (
        "workload",
        Annotated[
            str,
            typer.Option(
                "--workload",
                metavar="FILE",
                help="An SWF trace (.swf/.swf.gz), a jobs file (.yaml/.json/.jsonl) or "
                "synthetic:N.",
            ),
        ],
        _REQUIRED,
    ),
    (
        "cluster",
        Annotated[
            Path | None,
            typer.Option("--cluster", metavar="STATE", help="A state file: the cluster."),
        ],
        None,
    ),
    (
        "queues",
        Annotated[
            Path | None,
            typer.Option(
                "--queues",
                metavar="STATE",
                help="With --hosts: a state file with only queues (and limits), e.g. "
                "high: {priority: 50, preempts: [low]}, for the uniform cluster.",
            ),
        ],
        None,
    ),
    (
        "hosts",
        Annotated[
            int | None,
            typer.Option(
                "--hosts",
                metavar="N",
                help="A uniform cluster of N hosts, at most 1,000,000 (default: from the "
                "SWF header).",
            ),
        ],
        None,
    ),
    (
        "slots_per_host",
        Annotated[
            int | None,
            typer.Option("--slots-per-host", metavar="N", help="Slots of each of the --hosts."),
        ],
        None,
    ),
    (
        "single_queue",
        Annotated[bool, typer.Option("--single-queue", help="Put every job in one queue.")],
        False,
    ),
    (
        "interval",
        Annotated[
            float | None,
            typer.Option(
                "--interval",
                metavar="SECONDS",
                help="Seconds between sessions, at least 0.001 (default: at every event).",
            ),
        ],
        None,
    ),
    (
        "enforce_walltime",
        Annotated[
            bool,
            typer.Option(
                "--enforce-walltime",
                help="End jobs at their time limit: the requested time, capped by the "
                "queue's max_runtime (else its default_runtime, else max_runtime).",
            ),
        ],
        False,
    ),
    (
        "preempt_mode",
        Annotated[
            str,
            typer.Option(
                "--preempt-mode",
                metavar="MODE",
                help="What happens to a preempted job: requeue (back to its queue, restarted "
                "from the beginning; the only mode so far).",
            ),
        ],
        "requeue",
    ),
    (
        "predictor",
        Annotated[
            str | None,
            typer.Option(
                "--predictor",
                metavar="NAME[:OPTION]",
                help="A runtime predictor that learns as jobs end (history, fraction[:F], "
                "limit, or a plugin's): each job's planned start is what a plan with its "
                "predictions says (prediction_error_s), and with --backfill-with predicted "
                "backfill plans with them (docs/prediction.md).",
            ),
        ],
        None,
    ),
    (
        "backfill_with",
        Annotated[
            str,
            typer.Option(
                "--backfill-with",
                metavar="WHAT",
                help="What backfill plans with: requested (the jobs' requested times, as "
                "schedulers do) or predicted (the --predictor's predictions).",
            ),
        ],
        "requested",
    ),
    (
        "seed",
        Annotated[
            int | None,
            typer.Option("--seed", metavar="N", help="Seed of a synthetic:N workload (default 0)."),
        ],
        None,
    ),
    (
        "limit",
        Annotated[
            int | None,
            typer.Option("--limit", metavar="N", help="Only the first N jobs of the workload."),
        ],
        None,
    ),
    (
        "lenient",
        Annotated[bool, typer.Option("--lenient", help="Skip (and count) malformed trace lines.")],
        False,
    ),
)
"""(parameter name, annotated type, default) of every replay option, in ``--help`` order;
the names are :class:`Replay`'s fields."""


@dataclass(frozen=True, slots=True)
class Replay:
    """What a replay reads and how it runs, as the options give it: checked before
    anything is read (:meth:`check`), then loaded (:meth:`load`)."""

    workload: str
    cluster: Path | None = None
    queues: Path | None = None
    hosts: int | None = None
    slots_per_host: int | None = None
    single_queue: bool = False
    interval: float | None = None
    enforce_walltime: bool = False
    preempt_mode: str = "requeue"
    predictor: str | None = None
    backfill_with: str = "requested"
    seed: int | None = None  # None: 0 for a synthetic workload; a file takes none
    limit: int | None = None
    lenient: bool = False

    def check(self) -> None:
        """Every option on its own and together, before any input is read."""
        from xce.inputs import check_input_file
        from xce.sim.clusters import check_hosts
        from xce.sim.workload import synthetic_count

        check_interval(self.interval)
        if self.limit is not None and self.limit < 0:
            raise InputError(f"--limit must be >= 0, got {self.limit}")
        check_hosts(self.hosts, self.slots_per_host)
        if self.cluster is not None and (self.hosts is not None or self.slots_per_host is not None):
            raise InputError("give --cluster or --hosts/--slots-per-host, not both")
        if self.cluster is not None and self.queues is not None:
            raise InputError("--queues goes with --hosts; with --cluster, put the queues there")
        if self.preempt_mode not in PREEMPT_MODES:
            raise InputError(
                f"--preempt-mode: unknown mode {plain(repr(self.preempt_mode))} "
                f"(known: {', '.join(PREEMPT_MODES)})"
            )
        if self.predictor is not None:
            from xce.predict import default_predictors

            default_predictors().make(self.predictor)
        from xce.sim.predicted import check_backfill_with

        check_backfill_with(self.backfill_with, self.predictor)
        if self.workload.startswith(SYNTHETIC):
            synthetic_count(self.workload)
        elif self.seed is not None:
            raise InputError(
                f"--seed {self.seed}: only a synthetic:N workload is drawn from a seed; "
                f"--workload {plain(self.workload)} is a file, replayed as it is"
            )
        else:
            check_input_file(self.workload, what="--workload file")
        if self.cluster is not None:
            check_input_file(self.cluster, what="--cluster state file")
        if self.queues is not None:
            check_input_file(self.queues, what="--queues file")

    def options(
        self,
        picker: str | None = None,
        preemptor: str | None = None,
        backfill: str | None = None,
    ) -> SimOptions:
        """The engine's options of this replay under one policy."""
        from xce.sim.options import SimOptions

        return SimOptions(
            picker=picker,
            single_queue=self.single_queue,
            interval=self.interval,
            enforce_walltime=self.enforce_walltime,
            preemptor=preemptor,
            backfill=backfill,
            predictor=self.predictor,
            backfill_with=self.backfill_with,
        )

    def out_dir(self, out: str | None, names: tuple[str, ...], force: bool) -> Path | None:
        """``--out``, checked before the run: may receive ``names``, none an input."""
        if out is None:
            return None
        path = output_path(out, "--out")
        inputs: Inputs = [("--cluster", self.cluster)] if self.cluster is not None else []
        if not self.workload.startswith(SYNTHETIC):
            inputs = [*inputs, ("--workload", Path(self.workload))]
        check_dir(path, "--out", names, inputs, force=force)
        return path

    def load(self) -> tuple[ClusterState, list[SimJob], SwfTrace | None]:
        """The cluster, the jobs and the trace (None unless SWF)."""
        from xce.cluster import load_state
        from xce.sim.clusters import header_cluster, uniform_cluster
        from xce.sim.workload import replay_jobs

        state = load_state(self.cluster) if self.cluster is not None else None
        queue_state = _queues_file(self.queues) if self.queues is not None else None
        hosts, slots = self.hosts, self.slots_per_host
        if state is None and hosts is not None:  # before the jobs: they are checked on it
            state = uniform_cluster(hosts, slots or 1, queue_state)
        jobs, trace = replay_jobs(self.workload, state, self.seed or 0, self.limit, self.lenient)
        if state is None:
            if hosts is None and trace is not None:
                hosts, default_slots = header_cluster(trace)
                slots = slots or default_slots
            if hosts is None:
                raise InputError("give --cluster STATE or --hosts N (and --slots-per-host C)")
            state = uniform_cluster(hosts, slots or 1, queue_state)
        return state, jobs, trace


_NAMES = tuple(name for name, _, _ in REPLAY_OPTIONS)


def replay_command(fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` with its ``replay: Replay`` parameter replaced, for typer, by every option
    of :data:`REPLAY_OPTIONS` (keyword-only, in their order, at that parameter's place);
    when the command runs, their values reach ``fn`` as one :class:`Replay`."""
    signature = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True)
    own = [p.replace(annotation=hints[p.name]) for p in signature.parameters.values()]
    at = [p.name for p in own].index("replay")
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, kind, default in REPLAY_OPTIONS
    ]
    rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    params = [*rest[:at], *shared, *rest[at + 1 :]]

    @functools.wraps(fn)
    def run(**kwargs: Any) -> None:
        replay = Replay(**{name: kwargs.pop(name) for name in _NAMES})
        fn(replay=replay, **kwargs)

    run.__signature__ = signature.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return run


def _queues_file(path: Path) -> ClusterState:
    """``--queues``: a state file of queues (and limits, a default picker) only."""
    from xce.cluster import load_state

    state = load_state(path)
    extra = [
        what
        for what, there in (
            ("hosts", state.hosts.n),
            ("running", state.running),
            ("jobs", state.jobs),
            ("shared", state.shared_total),
        )
        if there
    ]
    if extra:
        raise InputError(
            f"--queues takes queues and limits only; it has {', '.join(extra)} "
            "(give a whole cluster with --cluster instead)",
            source=str(path),
        )
    return state


def check_interval(interval: float | None) -> None:
    """``--interval``: a finite number of seconds, at least the engine's MIN_INTERVAL."""
    from xce.sim.options import MIN_INTERVAL

    if interval is not None and not (math.isfinite(interval) and interval >= MIN_INTERVAL):
        raise InputError(
            f"--interval must be a finite number of seconds >= {MIN_INTERVAL:g}, got {interval}"
        )
