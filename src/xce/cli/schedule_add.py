"""``xce schedule`` inputs beyond a state file: the state read from stdin (``xce
schedule -``) and a job added for the question "where and when would a job like this
start?" (``--add-job RESREQ --tasks N``), answered without writing any file.

**stdin.** ``-`` reads the state from standard input, at most MAX_STATE_BYTES, named
``<stdin>`` in errors (``<stdin>:12:5: jobs[3].tasks: ...``). Its format is JSON when
the text parses as JSON, else YAML (what ``xce import`` prints); a text that starts
with ``{`` and is neither is reported as JSON, which it most likely meant to be.
A terminal on stdin is refused at once rather than waited on.

**An added job** is submitted to the session's core (``JobSubmitted``) at the session's
time (``--now``, else the state's ``now``, else its latest start or submit time), after
every job of the state, so it is decided as a job submitted now would be. Its id is
``added`` unless ``--add-job-id`` names another; the id, the queue and the requirement
are checked as the state file's jobs are (exit 2 naming the option).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

from xce.cli.outputs import plain
from xce.cli.outputs import shown as escape
from xce.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from xce.cluster import ClusterState, PendingJob
    from xce.cluster.load import LenientState

__all__ = [
    "ADDED_ID",
    "STDIN",
    "STDIN_SOURCE",
    "AddedJob",
    "headline",
    "read_stdin_state",
    "stdin_format",
]

STDIN = "-"
STDIN_SOURCE = "<stdin>"
ADDED_ID = "added"


def stdin_format(text: str) -> Literal["yaml", "json"]:
    """JSON when ``text`` parses as JSON, else YAML; a ``{...}`` text that parses as
    neither is taken as JSON, whose error then says what is wrong with it."""
    import yaml

    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return "json"
    if text.lstrip().startswith("{"):
        try:
            yaml.safe_load(text)
        except yaml.YAMLError:
            return "json"
    return "yaml"


def _stdin_text() -> str:
    from xce.inputs import MAX_STATE_BYTES

    stream = sys.stdin
    if stream is None or stream.isatty():
        raise InputError(
            "STATE '-' reads the state from stdin, which is a terminal: pipe one in "
            "(xce import slurm FILES | xce schedule -)"
        )
    raw = stream.buffer.read(MAX_STATE_BYTES + 1) if hasattr(stream, "buffer") else None
    data = raw if raw is not None else stream.read(MAX_STATE_BYTES + 1).encode("utf-8")
    if len(data) > MAX_STATE_BYTES:
        raise InputError(
            f"the state on stdin is larger than {MAX_STATE_BYTES:,} bytes", source=STDIN_SOURCE
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})",
            source=STDIN_SOURCE,
            line=line,
            column=column,
        ) from None


def read_stdin_state(lenient: bool) -> ClusterState | LenientState:
    """The state on stdin (module docstring), loaded as a file would be."""
    from xce.cluster import state_from_text

    text = _stdin_text()
    fmt = stdin_format(text)
    if lenient:
        return state_from_text(text, STDIN_SOURCE, fmt, lenient=True)
    return state_from_text(text, STDIN_SOURCE, fmt)


class AddedJob:
    """The options of ``--add-job``, checked before the state is read
    (:meth:`check`), then made a pending job of that state (:meth:`job`)."""

    def __init__(
        self,
        resreq: str | None,
        tasks: int | None,
        queue: str | None,
        user: str | None,
        requested_time: float | None,
        job_id: str | None,
    ) -> None:
        self.resreq = resreq
        self.tasks = tasks
        self.queue = queue
        self.user = user
        self.requested_time = requested_time
        self.job_id = job_id if job_id is not None else ADDED_ID

    @property
    def given(self) -> bool:
        return self.resreq is not None

    def check(self) -> None:
        """The options on their own: each only with ``--add-job``, and in range."""
        from xce.inputs import MAX_TASKS

        if not self.given:
            stray = [
                name
                for name, value in (
                    ("--tasks", self.tasks),
                    ("--queue", self.queue),
                    ("--user", self.user),
                    ("--requested-time", self.requested_time),
                    ("--add-job-id", None if self.job_id == ADDED_ID else self.job_id),
                )
                if value is not None
            ]
            if stray:
                raise InputError(f"{', '.join(stray)}: only with --add-job RESREQ")
            return
        if self.tasks is not None and not 1 <= self.tasks <= MAX_TASKS:
            raise InputError(f"--tasks must be between 1 and {MAX_TASKS:,}, got {self.tasks}")
        from xce.cluster.schema import MAX_NUMBER

        t = self.requested_time
        if t is not None and not 0 < t <= MAX_NUMBER:  # a state's largest time (nan fails)
            raise InputError(
                f"--requested-time must be a number of seconds > 0 and at most 1e15, got {t}"
            )
        if not self.job_id:
            raise InputError("--add-job-id must not be empty")

    def job(self, state: ClusterState, submit: float, claimed: Collection[str] = ()) -> PendingJob:
        """The job, submitted at ``submit``; its id, queue and requirement checked
        against ``state`` as the loader checks a state's jobs. ``claimed``: the ids of
        entries a lenient load left out (they still claim their ids)."""
        from xce.cluster import PendingJob
        from xce.resreq import requirement_for_job

        assert self.resreq is not None  # only called when given
        ids = {j.id for j in state.jobs} | {r.id for r in state.running} | set(claimed)
        if self.job_id in ids:
            raise InputError(
                f"--add-job-id: the state has a job {json.dumps(self.job_id)} already; "
                "give another id with --add-job-id"
            )
        record, sep, index = self.job_id.rpartition("_")
        if sep and index.isdigit():  # as the loader: a task an array record still holds
            held = any(
                j.id == record and j.array is not None and int(index) in j.array for j in state.jobs
            )
            if held:
                raise InputError(
                    f"--add-job-id: {json.dumps(self.job_id)} is a task the array record "
                    f"{json.dumps(record)} still holds; give another id with --add-job-id"
                )
        queue = self.queue if self.queue is not None else "normal"
        if state.queues and queue not in state.queues:
            known = ", ".join(sorted(state.queues))
            which = "--queue" if self.queue is not None else "the default queue 'normal'"
            raise InputError(
                f"{which}: no queue {plain(repr(queue))} in the state (its queues: {known}); "
                "give one with --queue"
            )
        tasks = self.tasks if self.tasks is not None else 1
        try:
            requirement_for_job(self.resreq, state.catalog, tasks, tasks)
        except InputError as err:
            raise InputError(
                f"--add-job: {err.message}", column=err.column, text=self.resreq
            ) from None
        return PendingJob(
            id=self.job_id,
            user=self.user if self.user is not None else "nobody",
            queue=queue,
            project="default",
            min_tasks=tasks,
            max_tasks=tasks,
            resreq=self.resreq,
            submit_time=submit,
            runtime=None,
            order=len(state.jobs),
            tasks_given=self.tasks is not None,
            requested_time=self.requested_time,
        )


def added_json(info: dict[str, Any], job_id: str) -> dict[str, Any]:
    """The added job's entry of the decisions JSON, with ``"decision"``: ``dispatched``
    or ``pending``."""
    for kind in ("dispatched", "pending"):
        for entry in info[kind]:
            if entry["job"] == job_id:
                return {"decision": kind, **entry}
    raise AssertionError(f"the session decided nothing for the added job {job_id!r}")


def headline(added: dict[str, Any], info: dict[str, Any], console: Console, tz: str | None) -> None:
    """The added job's decision, before the tables: where it starts, or why it waits
    and (when the session plans) when it is expected to start."""
    from xce.cli.schedule_view import expected

    name = escape(json.dumps(added["job"], ensure_ascii=False))
    if added["decision"] == "dispatched":
        hosts = ", ".join(f"{escape(a['host'])}:{a['slots']}" for a in added["allocation"][:8]) + (
            ", …" if len(added["allocation"]) > 8 else ""
        )
        how = " (backfilled)" if added.get("backfilled") else ""
        console.print(f"[bold green]added job {name} starts now{how}[/] on {hosts}")
        return
    console.print(
        f"[bold yellow]added job {name} pends {added['reason']}[/]: {escape(added['message'])}"
    )
    if "now" in info:
        start = expected(added, info["now"], tz)
        console.print(
            f"  expected start: {start}" if start != "-" else "  expected start: none planned"
        )
