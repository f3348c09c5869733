"""``xce schedule``: one scheduling session on a state file — where jobs land, why others wait.

``--job ID`` explains one job in detail (:mod:`xce.cli.schedule_job`); ``--lenient`` lets
a malformed job entry pend ``INVALID`` instead of failing the whole file. What is shown
(the decisions JSON, the tables) is :mod:`xce.cli.schedule_view`; the state read from
stdin (``-``) and ``--add-job`` are :mod:`xce.cli.schedule_add`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from xce.cli.conventions import (
    BACKFILL_OPTION,
    PREEMPTOR_OPTION,
    check_backfill,
    check_now,
    check_picker,
    check_preemptor,
    note_started_after,
)
from xce.cli.outputs import check_file, output_path, plain, write_file
from xce.cli.schedule_add import STDIN, STDIN_SOURCE, AddedJob, added_json, headline
from xce.cli.schedule_job import explain_job, find_job, render_job
from xce.cli.schedule_view import decisions_json, render, session_time, with_invalid, zone_of
from xce.errors import InputError

if TYPE_CHECKING:  # the library and rich load when the command runs (start-up time)
    from xce.cluster import ClusterState
    from xce.cluster.load import InvalidJob
    from xce.core import SchedulerCore, SessionResult

SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml")


# -- the command --------------------------------------------------------------------------


def schedule(
    state_file: Annotated[
        Path,
        typer.Argument(
            metavar="STATE",
            help="A state file (.yaml, .yml or .json), or - to read it from stdin (JSON if "
            "it parses as JSON, else YAML).",
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the decisions JSON on stdout.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show per-host reasons for pending jobs.")
    ] = False,
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="ID",
            help="Explain this job in detail: requirement, identity, where it landed or "
            "why it waits, per host, and the limits it waits on.",
        ),
    ] = None,
    lenient: Annotated[
        bool,
        typer.Option(
            "--lenient",
            help="A malformed job entry pends INVALID (with its error) instead of failing "
            "the whole file.",
        ),
    ] = False,
    picker: Annotated[
        str | None,
        typer.Option(
            "--picker",
            metavar="NAME",
            help="Default job picker (fcfs, strict, fairshare, priority, multifactor, "
            "lsf-fairshare, or a plugin's) "
            "for queues that name none.",
        ),
    ] = None,
    preemptor: Annotated[str | None, PREEMPTOR_OPTION] = None,
    backfill: Annotated[str | None, BACKFILL_OPTION] = None,
    now: Annotated[
        float | None,
        typer.Option(
            "--now",
            metavar="SECONDS",
            help="The session's time, which planning counts from (default: the state's "
            "now, else its latest start or submit time).",
        ),
    ] = None,
    threads: Annotated[
        bool, typer.Option("--threads", help="Picker and allocator in two threads.")
    ] = False,
    snapshot: Annotated[
        str | None,
        typer.Option(
            "--snapshot",
            metavar="PATH",
            help="Write the state after starting the dispatched jobs (.json, .yaml or .yml). "
            "Never the STATE file; an existing file only with --force.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Let --snapshot replace an existing file (never STATE)."),
    ] = False,
    timing: Annotated[
        bool,
        typer.Option(
            "--timing",
            help='With --json, add "timing": {"elapsed_s": ...}; without it the JSON is '
            "the same bytes on every run.",
        ),
    ] = False,
    add_job: Annotated[
        str | None,
        typer.Option(
            "--add-job",
            metavar="RESREQ",
            help="Where and when would a job like this start? Add a job of this requirement, "
            "submitted at the session's time after every other, and show its decision "
            "first (with --backfill, its expected start); no file is written.",
        ),
    ] = None,
    tasks: Annotated[
        int | None,
        typer.Option("--tasks", metavar="N", help="With --add-job: its tasks (default 1)."),
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option("--queue", metavar="Q", help="With --add-job: its queue (default normal)."),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", metavar="U", help="With --add-job: its user (default nobody)."),
    ] = None,
    requested_time: Annotated[
        float | None,
        typer.Option(
            "--requested-time",
            metavar="SECONDS",
            help="With --add-job: its run-time estimate, which backfill plans with.",
        ),
    ] = None,
    add_job_id: Annotated[
        str | None,
        typer.Option("--add-job-id", metavar="ID", help="With --add-job: its id (default: added)."),
    ] = None,
) -> None:
    """Run one scheduling session: where every pending job lands, or why it waits."""
    from rich.console import Console

    from xce.core import JobSubmitted, SchedulerCore

    added = AddedJob(add_job, tasks, queue, user, requested_time, add_job_id)
    added.check()
    if added.given and snapshot is not None:
        raise InputError(
            "--add-job asks where a job would start and writes nothing; --snapshot writes "
            "a state: give one of them"
        )
    target = _snapshot_target(snapshot, state_file, force)
    pickers = check_picker(picker)
    chosen = check_preemptor(preemptor)
    check_backfill(backfill)
    check_now(now)
    state, invalid = _load(state_file, lenient)
    if now is not None:
        if target is not None and (later := state.later_than(now)) is not None:
            raise InputError(
                f"--snapshot with --now {now:.17g}: {plain(later)}, after it; a snapshot "
                "holds only the jobs submitted and started by its time"
            )
        state = state.seen_at(now)  # a job submitted after --now waits for it
        note_started_after(state, now)
    source = STDIN_SOURCE if _from_stdin(state_file) else str(state_file)
    core = SchedulerCore(state, picker=picker, pickers=pickers, preemptor=chosen, backfill=backfill)
    if added.given:
        submit = now if now is not None else state.session_time()
        core.apply(JobSubmitted(added.job(state, submit, [i.id for i in invalid])))
        state = core.state
    wanted = find_job(job, state, invalid, source) if job is not None else None
    session = core.run_session(threads=threads, now=now)
    result = with_invalid(session, invalid)
    if target is not None:
        _write_snapshot(core, result, invalid, target, force, now)
    console = Console(highlight=False)
    if wanted is not None:
        at = session_time(session, state, now)
        detail = explain_job(wanted, session.decisions, state, source, session.stats.now, at)
        if as_json:
            typer.echo(json.dumps(detail, indent=2))
        else:
            render_job(detail, console, zone_of(state), session_time(session, state, now))
        return
    info = decisions_json(result, state, timing=timing or not as_json, now=now)
    entry = added_json(info, added.job_id) if added.given else None
    if as_json:
        out = {"added": entry, **info} if entry is not None else info
        typer.echo(json.dumps(out, indent=2))
        return
    if entry is not None:
        headline(entry, info, console, zone_of(state))
    render(info, explain, console, zone_of(state))


def _from_stdin(state_file: Path) -> bool:
    return str(state_file) == STDIN


def _load(state_file: Path, lenient: bool) -> tuple[ClusterState, tuple[InvalidJob, ...]]:
    """The state of STATE (a file, or stdin for ``-``) and, with ``lenient``, the job
    entries left out."""
    from xce.cli.schedule_add import read_stdin_state
    from xce.cluster import load_state

    if _from_stdin(state_file):
        loaded = read_stdin_state(lenient)
        if isinstance(loaded, tuple):  # a LenientState
            return loaded.state, loaded.invalid
        return loaded, ()
    if lenient:
        state, invalid = load_state(state_file, lenient=True)
        return state, invalid
    return load_state(state_file), ()


def _snapshot_target(snapshot: str | None, state_file: Path, force: bool) -> Path | None:
    """``--snapshot``, checked before the session: a new (or, with --force, an existing)
    .json/.yaml file in a writable directory, and never the state file read."""
    if snapshot is None:
        return None
    target = output_path(snapshot, "--snapshot")
    inputs = [] if _from_stdin(state_file) else [("STATE", state_file)]
    check_file(target, "--snapshot", inputs, force=force)
    if target.suffix.lower() not in SNAPSHOT_SUFFIXES:
        raise InputError(
            f"--snapshot {plain(snapshot)}: expected a name ending in "
            f"{', '.join(SNAPSHOT_SUFFIXES)}"
        )
    return target


def _write_snapshot(
    core: SchedulerCore,
    result: SessionResult,
    invalid: Sequence[InvalidJob],
    target: Path,
    force: bool,
    at: float | None,
) -> None:
    """The state after the session: its jobs started at the session's time, which is
    the snapshot's ``now`` (``--now`` too: a job started then is not from after it)."""
    from xce.alloc import Dispatched, Pending
    from xce.core import Event, JobPreempted, JobStarted, write_state

    events: list[Event] = []
    preempted: list[str] = []
    now = session_time(result, core.state, at)
    for d in result.decisions:  # in decision order: each fits when it is applied
        if isinstance(d, Dispatched):
            events.append(JobStarted(d.job, d.allocation, now))
        elif isinstance(d, Pending) and d.preemption is not None:
            events += [JobPreempted(v, now, by=d.job) for v in d.preemption.victims]
            events.append(JobStarted(d.job, d.preemption.promise, now))
            preempted += d.preemption.victims
    core.apply(*events)
    after = dataclasses.replace(core.state, now=now)
    write_file(target, "--snapshot", lambda temp: write_state(after, temp), force=force)
    if preempted:
        print(
            plain(
                f"xce: note: in the snapshot the {len(preempted)} preempted job(s) no longer "
                f"run and their preemptors do: {', '.join(preempted[:10])}"
                + (", ..." if len(preempted) > 10 else "")
            ),
            file=sys.stderr,
        )
    if invalid:
        left = ", ".join(j.id for j in invalid)
        print(
            plain(f"xce: note: the snapshot leaves out {len(invalid)} invalid job(s): {left}"),
            file=sys.stderr,
        )
