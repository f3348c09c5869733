"""The state-file format (design section 4) as msgspec structs, and checks on it.

Decoding with msgspec checks types and ranges; :func:`check_spec` then checks what
types cannot say (unique names, task counts, references between sections). Every
problem is a :class:`SpecError` carrying the path into the document, which the
loader turns into a located :class:`~xce.errors.StateError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from xce.cluster.deadlock import dependency_cycle
from xce.cluster.jobflow import SyntaxProblem, parse_array, parse_dependency
from xce.errors import InputError, clip
from xce.inputs import MAX_DEPTH, MAX_HOST_SLOTS, MAX_TASKS
from xce.resreq.expr import format_number

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER",
    "DocPath",
    "HostAllocSpec",
    "HostSpec",
    "JobSpec",
    "LimitSpec",
    "QueueEntrySpec",
    "QueueSpec",
    "ReservationSpec",
    "ResourceDecl",
    "RunningSpec",
    "SharedSpec",
    "SpecError",
    "StateSpec",
    "check_dependency_cycles",
    "check_job_flow",
    "check_job_reservation",
    "check_replay_time",
    "check_spec",
    "clip",
    "decode",
    "escape_surrogates",
    "format_path",
    "out_of_range",
    "quote",
    "show",
]

DocPath = tuple[str | int, ...]
"""A location in the document: mapping keys and list indices from the root."""


MAX_NUMBER = 10**15
"""Every number of a state file is finite and at most this in magnitude (below 2**53, so
whole numbers are exact in a float64), job ids written as numbers included."""

_BIG = float(MAX_NUMBER)


def check_replay_time(at: float, what: str) -> float:
    """``at`` if a state could hold it as a time (finite, at most :data:`MAX_NUMBER` in
    magnitude); else the InputError a replay (``xce simulate``, ``xce predict``) that
    reaches it gives, naming ``what`` took it there (exit 2, not a failed event)."""
    if not abs(at) <= _BIG:
        raise InputError(
            f"the replay reaches time {at!r} s ({what}), past the largest time a state "
            "holds (1e15 s): start earlier, or use a smaller --interval or runtimes"
        )
    return at


Number = Annotated[float, msgspec.Meta(ge=-_BIG, le=_BIG)]  # also refuses inf and nan
Integer = Annotated[int, msgspec.Meta(ge=-MAX_NUMBER, le=MAX_NUMBER)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0, le=MAX_NUMBER)]
PosInt = Annotated[int, msgspec.Meta(ge=1, le=MAX_NUMBER)]
Tasks = Annotated[int, msgspec.Meta(ge=1, le=MAX_TASKS)]
HostSlots = Annotated[int, msgspec.Meta(ge=0, le=MAX_HOST_SLOTS)]
AllocSlots = Annotated[int, msgspec.Meta(ge=1, le=MAX_HOST_SLOTS)]
_LIMITS = {
    MAX_TASKS: "the most tasks a job may ask for",
    MAX_HOST_SLOTS: "the most slots a host may have",
}
"""The tighter limits than MAX_NUMBER, by value, with what they mean (for messages)."""
Amount = Annotated[float, msgspec.Meta(ge=0, le=_BIG)]
Duration = Annotated[float, msgspec.Meta(gt=0, le=_BIG)]  # a runtime limit: positive, finite
Names = Annotated[list[str], msgspec.Meta(min_length=1)]
Attribute = str | bool | Number


class _Spec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every section: unknown keys are typos, so they are errors."""


class ResourceDecl(_Spec):
    """An explicit catalog entry; overrides what the hosts would let us infer."""

    kind: Literal["consumable", "numeric", "string", "boolean", "shared"]
    reservation: Literal["per_task", "per_host", "per_job"] | None = None
    resolution: Number | None = None  # consumables: amounts are exact multiples of it


class HostSpec(_Spec):
    name: str
    slots: HostSlots
    resources: dict[str, Amount] = {}
    attributes: dict[str, Attribute] = {}
    status: Literal["ok", "closed", "unavail"] = "ok"


class SharedSpec(_Spec):
    total: Amount


class QueueSpec(_Spec):
    priority: Integer = 0
    preempts: list[str] = []
    picker: str | None = None
    shares: dict[str, Amount] = {}
    default_runtime: Duration | None = None  # jobs giving no requested_time (Slurm DefaultTime)
    max_runtime: Duration | None = None  # caps requested_time (Slurm MaxTime, LSF RUNLIMIT)
    backfill: str | None = None  # none | easy | conservative (docs/backfill.md)
    priority_job_factor: NonNegInt = 1  # Slurm's PriorityJobFactor (the multifactor picker)


class LimitSpec(_Spec):
    name: str
    users: Names | None = None
    queues: Names | None = None
    projects: Names | None = None
    per_host: bool = False
    slots: NonNegInt | None = None
    jobs: NonNegInt | None = None
    resources: dict[str, Amount] = {}


class HostAllocSpec(_Spec):
    host: str
    slots: AllocSlots
    resources: dict[str, Amount] = {}


class RunningSpec(_Spec):
    id: str | Integer
    alloc: Annotated[list[HostAllocSpec], msgspec.Meta(min_length=1)]
    user: str = "nobody"
    queue: str = "normal"
    project: str = "default"
    start_time: Number = 0.0
    shared: dict[str, Amount] = {}
    resreq: str = ""
    runtime: Amount | None = None
    requested_time: Amount | None = None  # the walltime estimate it was started with
    name: str | None = None  # the job name (singleton dependencies)
    array_job: str | None = None  # the array job it is a task of (its record's %N limit)


class ReservationSpec(_Spec):
    """An advance reservation (``scontrol create reservation``, ``brsvadd``): hosts, by
    name or by a select on static attributes, set aside over ``[start, end)``."""

    name: str
    start: Number
    end: Number
    hosts: Names | None = None
    select: str | None = None
    users: Names | None = None  # who may use it without naming it (none: nobody)
    queues: Names | None = None
    projects: Names | None = None


class QueueEntrySpec(_Spec):
    """Another queue a pending job may run in (Slurm's ``sbatch -p a,b``), with the
    priority the scheduler gave it there and the requirement it has there (default: the
    job's own)."""

    queue: str
    priority: Number | None = None
    resreq: str | None = None


class JobSpec(_Spec):
    id: str | Integer
    user: str = "nobody"
    queue: str = "normal"
    project: str = "default"
    tasks: Tasks | None = None
    min_tasks: Tasks | None = None
    max_tasks: Tasks | None = None
    resreq: str = ""
    submit_time: Number = 0.0
    runtime: Amount | None = None
    requested_time: Amount | None = None  # the user's walltime estimate (like bsub -W)
    reservation: str | None = None  # the advance reservation the job runs in (sbatch --reservation)
    reason: str | None = None  # the real scheduler's own pend reason, as imported (free text)
    priority: Number | None = None  # the scheduler's job priority (the priority picker)
    hold: bool = False  # held: pends HELD, never planned
    begin_time: Number | None = None  # no start before it (sbatch --begin, bsub -b)
    dependency: str | None = None  # Slurm's --dependency syntax (xce.cluster.jobflow)
    name: str | None = None  # the job name (singleton dependencies)
    array: str | None = None  # an array record's remaining task indices, 10-99%5
    scheduler_start: Number | None = None  # the scheduler's own expected start (imported)
    also_queues: list[QueueEntrySpec] = []  # further queues it may run in (sbatch -p a,b)
    # the multifactor picker's inputs (docs/priority.md)
    qos: str | None = None  # its QOS (priority.qos gives their priorities)
    nice: Integer = 0  # sbatch --nice: taken off its priority
    nodes: PosInt | None = None  # the fewest nodes it asked for (default 1: job size)
    accrue_time: Number | None = None  # when its age starts (Slurm's AccrueTime)

    def task_range(self) -> tuple[int, int]:
        """(min, max) tasks: ``tasks`` is both; a lone ``max_tasks`` means 1..max."""
        if self.tasks is not None:
            return self.tasks, self.tasks
        low = self.min_tasks if self.min_tasks is not None else 1
        high = self.max_tasks if self.max_tasks is not None else max(low, 1)
        return low, high


class AssociationSpec(_Spec):
    """An association of Slurm's tree: an account (under ``parent``, default root) or
    a user (``user``) under ``account``; raw shares and raw usage (sshare's)."""

    account: str
    user: str | None = None
    parent: str | None = None
    shares: Amount = 1.0
    usage: Amount | None = None
    priority: NonNegInt = 0


class QosSpec(_Spec):
    priority: NonNegInt = 0


Setting = str | Number


class PrioritySpec(_Spec):
    """The multifactor picker's settings by Slurm's names, or ``slurm_conf`` lines;
    the association tree with usage at ``usage_time`` (default: the state's time); QOS
    priorities."""

    PriorityType: str | None = None
    PriorityWeightAge: Setting | None = None
    PriorityWeightAssoc: Setting | None = None
    PriorityWeightFairshare: Setting | None = None
    PriorityWeightJobSize: Setting | None = None
    PriorityWeightPartition: Setting | None = None
    PriorityWeightQOS: Setting | None = None
    PriorityWeightTRES: str | None = None
    PriorityMaxAge: Setting | None = None
    PriorityDecayHalfLife: Setting | None = None
    PriorityCalcPeriod: Setting | None = None
    PriorityUsageResetPeriod: str | None = None
    PriorityFavorSmall: str | bool | None = None
    PriorityFlags: str | None = None
    FairShareDampeningFactor: Setting | None = None
    slurm_conf: str | None = None
    associations: list[AssociationSpec] = []
    qos: dict[str, QosSpec] = {}
    default_qos: str | None = None
    usage_time: Number | None = None
    # the lsf-fairshare picker: lsb.params' factors, user groups, and ``usage: {QUEUE:
    # {USER: slot-hours}}`` (decayed, at usage_time)
    lsf: dict[str, Any] | None = None

    def settings(self) -> dict[str, object]:
        """The Slurm settings given (by name)."""
        skip = ("slurm_conf", "associations", "qos", "default_qos", "usage_time", "lsf")
        out: dict[str, object] = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name not in skip and value is not None:
                out[name] = value
        return out


class StateSpec(_Spec):
    """The whole document; every section may be left out."""

    resources: dict[str, ResourceDecl] = {}
    hosts: list[HostSpec] = []
    shared: dict[str, SharedSpec] = {}
    queues: dict[str, QueueSpec] = {}
    limits: list[LimitSpec] = []
    running: list[RunningSpec] = []
    jobs: list[JobSpec] = []
    reservations: list[ReservationSpec] = []
    picker: str | None = None  # the default job picker of queues that name none
    backfill: str | None = None  # the default backfill policy of queues that name none
    now: Number | None = None  # the snapshot's time (default: its latest start/submit time)
    scheduler: str | None = None  # the scheduler the state was imported from (names reasons)
    timezone: str | None = None  # IANA zone of times shown to a person (default UTC)
    scheduler_resolution: Annotated[float, msgspec.Meta(ge=0, le=_BIG)] | None = None
    priority: PrioritySpec | None = None  # the multifactor picker's (docs/priority.md)
    # ids of job entries a lenient load left out (INVALID), kept by a snapshot: they never
    # run, so a dependency on one never holds
    left_out: list[Annotated[str, msgspec.Meta(min_length=1)]] = []


class SpecError(Exception):
    """A problem at ``path`` in the document; ``at_key`` points at the key, not the value.

    ``column`` and ``text``, when set, locate the problem inside a string value (a
    resource requirement) rather than in the file. ``shown``, when set, is how the
    message begins by showing the value; the loader puts the value as written in the
    file there (``1e400``, not ``inf``) when it has the text.
    """

    def __init__(
        self,
        path: DocPath,
        message: str,
        *,
        at_key: bool = False,
        column: int | None = None,
        text: str | None = None,
        shown: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.at_key = at_key
        self.column = column
        self.text = text
        self.shown = shown


_SURROGATE = re.compile("[\ud800-\udfff]")


def quote(value: str) -> str:
    """A name or value as messages show it: in double quotes, escaped like JSON (a lone
    surrogate too, so that the message can always be printed)."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False))


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (which no encoding can print) written as its
    ``\\uXXXX`` escape, as JSON writes it."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def format_path(path: DocPath) -> str:
    """``hosts[2].resources.mem``; keys that are not plain words are quoted, long ones
    cut (see :func:`clip`) so that a message stays short."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif seg.isidentifier() and len(seg) <= 40:
            out.append(f".{seg}" if out else seg)
        else:
            out.append(f"[{quote(clip(seg))}]")
    return "".join(out)


def check_spec(spec: StateSpec) -> None:
    """Raise :class:`SpecError` for the first problem types alone cannot catch."""
    _check_unique((h.name for h in spec.hosts), "hosts", "name", "host")
    _check_unique((lim.name for lim in spec.limits), "limits", "name", "limit")
    _check_unique((r.name for r in spec.reservations), "reservations", "name", "reservation")
    _check_job_ids(spec)
    for i, job in enumerate(spec.jobs):
        _check_tasks(job, ("jobs", i))
        check_job_reservation(job, ("jobs", i), spec.reservations)
        check_job_flow(job, ("jobs", i))
        _check_also_queues(job, ("jobs", i))
    check_dependency_cycles(spec.jobs)
    _check_array_ids(spec)
    _check_now(spec)
    _check_timezone(spec.timezone)
    if spec.priority is not None:
        check_priority(spec.priority)
    _check_qos_names(spec)
    for name, queue in spec.queues.items():
        _check_preempts(spec, name, queue)
        _check_runtimes(name, queue)
    for i, rsv in enumerate(spec.reservations):
        _check_reservation(rsv, ("reservations", i))
    for i, lim in enumerate(spec.limits):
        if lim.slots is None and lim.jobs is None and not lim.resources:
            raise SpecError(
                ("limits", i), f"limit {quote(lim.name)} sets none of slots, jobs, resources"
            )


def check_priority(spec: PrioritySpec) -> None:
    """The priority section's settings, slurm.conf lines and association tree."""
    from xce.errors import InputError
    from xce.priority.assoc import Association, AssocTree
    from xce.priority.config import setting, slurm_conf_settings

    for key, value in spec.settings().items():
        try:
            setting(key, value)
        except InputError as err:
            raise SpecError(("priority", key), str(err), shown=show(value)) from None
    if spec.slurm_conf is not None:
        try:
            slurm_conf_settings(spec.slurm_conf.splitlines(), "slurm_conf line")
        except InputError as err:
            raise SpecError(("priority", "slurm_conf"), str(err)) from None
    try:
        AssocTree(
            Association(a.account, a.user, a.parent, a.shares, a.usage, a.priority)
            for a in spec.associations
        )
    except InputError as err:
        raise SpecError(("priority", "associations"), str(err)) from None
    if spec.lsf is not None:
        _check_lsf(spec.lsf)
    if spec.default_qos is not None and spec.qos and spec.default_qos not in spec.qos:
        raise SpecError(("priority", "default_qos"), f"unknown QOS {quote(spec.default_qos)}")


def _check_lsf(section: dict[str, Any]) -> None:
    from xce.errors import InputError
    from xce.priority.lsf import lsf_config

    for key, value in section.items():
        if key == "usage":
            _check_lsf_usage(value)
            continue
        try:
            lsf_config({key: value})
        except InputError as err:
            raise SpecError(("priority", "lsf", key), str(err)) from None


def _check_lsf_usage(value: Any) -> None:
    at: DocPath = ("priority", "lsf", "usage")
    if not isinstance(value, dict):
        raise SpecError(at, "a mapping of queue to {user: slot-hours}")
    for queue, users in value.items():
        if not isinstance(users, dict):
            raise SpecError((*at, str(queue)), "a mapping of user to slot-hours")
        for user, hours in users.items():
            bad = isinstance(hours, bool) or not isinstance(hours, int | float)
            if bad or not math.isfinite(hours) or hours < 0:
                raise SpecError((*at, str(queue), str(user)), "slot-hours: a number of at least 0")


def _check_qos_names(spec: StateSpec) -> None:
    known = spec.priority.qos if spec.priority is not None else {}
    for i, job in enumerate(spec.jobs):
        if job.qos is not None and known and job.qos not in known:
            raise SpecError(
                ("jobs", i, "qos"),
                f"unknown QOS {quote(job.qos)} (priority.qos has {', '.join(sorted(known))})",
            )


def _check_unique(names: Iterable[str], section: str, key: str, what: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise SpecError(
                (section, i, key), f"duplicate {what} {quote(name)} (also {section}[{seen[name]}])"
            )
        seen[name] = i


def _check_job_ids(spec: StateSpec) -> None:
    """Ids are compared as strings: ``7`` and ``"7"`` are the same job; an id left out
    (INVALID) is no job of the state."""
    seen: dict[str, str] = {}
    entries: list[tuple[str, int, str | int]] = [
        ("left_out", i, x) for i, x in enumerate(spec.left_out)
    ]
    entries += [("running", i, r.id) for i, r in enumerate(spec.running)]
    entries += [("jobs", i, j.id) for i, j in enumerate(spec.jobs)]
    for section, i, raw in entries:
        job_id = str(raw)
        if job_id in seen:
            at: DocPath = (section, i) if section == "left_out" else (section, i, "id")
            raise SpecError(at, f"duplicate job id {quote(job_id)} (also {seen[job_id]})")
        seen[job_id] = f"{section}[{i}]"


def _check_tasks(job: JobSpec, at: DocPath) -> None:
    if job.tasks is not None and (job.min_tasks is not None or job.max_tasks is not None):
        key = "min_tasks" if job.min_tasks is not None else "max_tasks"
        raise SpecError((*at, key), "give either tasks or min_tasks/max_tasks, not both")
    if job.min_tasks is not None and job.max_tasks is not None and job.min_tasks > job.max_tasks:
        raise SpecError(
            (*at, "max_tasks"),
            f"max_tasks ({job.max_tasks}) is less than min_tasks ({job.min_tasks})",
        )


def check_job_flow(job: JobSpec, at: DocPath) -> None:
    """A job's ``dependency`` and ``array`` parse (errors point into the string)."""
    for key, parse in (("dependency", parse_dependency), ("array", parse_array)):
        text = getattr(job, key)
        if text is None:
            continue
        try:
            parse(text)
        except SyntaxProblem as err:
            raise SpecError((*at, key), err.message, column=err.column, text=text) from None


def _check_also_queues(job: JobSpec, at: DocPath) -> None:
    """Each further queue once, and not the job's own."""
    seen = {job.queue}
    for k, entry in enumerate(job.also_queues):
        if entry.queue in seen:
            what = "its own queue" if entry.queue == job.queue else "given twice"
            raise SpecError((*at, "also_queues", k, "queue"), f"{quote(entry.queue)} is {what}")
        seen.add(entry.queue)


def check_dependency_cycles(jobs: list[JobSpec], at: list[int] | None = None) -> None:
    """No pending job waits, through others, for itself (xce.cluster.deadlock); the
    error is at the first job of the cycle (``at``: each job's entry index)."""
    found = dependency_cycle([(str(j.id), j.dependency) for j in jobs])
    if found is not None:
        i, message = found
        raise SpecError(("jobs", at[i] if at is not None else i, "dependency"), message)


def _check_array_ids(spec: StateSpec) -> None:
    """An array task's id (``412_7``) is not another job's: a running or pending job with
    the id of a task the record still holds is refused."""
    arrays = {str(j.id): parse_array(j.array) for j in spec.jobs if j.array is not None}
    if not arrays:
        return
    entries = [("running", i, str(r.id)) for i, r in enumerate(spec.running)]
    entries += [("jobs", i, str(j.id)) for i, j in enumerate(spec.jobs)]
    for section, i, job_id in entries:
        record, sep, index = job_id.rpartition("_")
        if sep and index.isdigit() and record in arrays and int(index) in arrays[record]:
            raise SpecError(
                (section, i, "id"),
                f"job id {quote(job_id)} is a task the array record {quote(record)} still holds",
            )


def _check_now(spec: StateSpec) -> None:
    """A snapshot holds only what was submitted and started by its ``now``: a later time
    would let a session start a job before it exists."""
    if spec.now is None:
        return
    now = float(spec.now)
    times = [("jobs", "submit_time", "submitted", [j.submit_time for j in spec.jobs])]
    times += [("running", "start_time", "started", [r.start_time for r in spec.running])]
    for section, key, done, values in times:
        for i, t in enumerate(values):
            if t > now:
                raise SpecError(
                    (section, i, key),
                    f"{show(t)} is after the snapshot's now ({format_number(now)}): a "
                    f"snapshot holds only jobs {done} by its time",
                    shown=show(t),
                )


def _check_timezone(name: str | None) -> None:
    if name is None:
        return
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError(
            ("timezone",), f"unknown time zone {quote(clip(name))} (an IANA name: Europe/Berlin)"
        ) from None


def check_job_reservation(job: JobSpec, at: DocPath, reservations: list[ReservationSpec]) -> None:
    """A job may name only a reservation the file declares."""
    if job.reservation is not None and all(r.name != job.reservation for r in reservations):
        why = f"unknown reservation {quote(job.reservation)}"
        if not reservations:  # a jobs file (xce simulate) never declares one
            why += (
                ": the file declares no reservations (a replay's jobs file may not name one: "
                "the --cluster file's reservations hold in a replay, for the users, queues "
                "or projects they list)"
            )
        raise SpecError((*at, "reservation"), why)


def _check_runtimes(name: str, queue: QueueSpec) -> None:
    default, limit = queue.default_runtime, queue.max_runtime
    for key, value in (("default_runtime", default), ("max_runtime", limit)):
        if value is not None and (why := out_of_range(value)) is not None:  # built in Python
            raise SpecError(("queues", name, key), why, shown=show(value))
        if value is not None and not value > 0:
            raise SpecError(("queues", name, key), f"expected a number > 0, got {show(value)}")
    if default is not None and limit is not None and default > limit:
        raise SpecError(
            ("queues", name, "default_runtime"),
            f"default_runtime ({show(default)}) is more than max_runtime ({show(limit)})",
        )


def _check_reservation(rsv: ReservationSpec, at: DocPath) -> None:
    """Hosts by names or by a select (one of them); a window that is not empty."""
    if rsv.hosts is None and rsv.select is None:
        raise SpecError(at, f"reservation {quote(rsv.name)} gives neither hosts nor select")
    if rsv.hosts is not None and rsv.select is not None:
        raise SpecError((*at, "select"), "give either hosts or select, not both", at_key=True)
    for key in ("start", "end"):
        value = getattr(rsv, key)
        if (why := out_of_range(value)) is not None:  # a spec built in Python
            raise SpecError((*at, key), why, shown=show(value))
    if not rsv.start < rsv.end:
        raise SpecError(
            (*at, "end"), f"end ({show(rsv.end)}) is not after start ({show(rsv.start)})"
        )


def _check_preempts(spec: StateSpec, name: str, queue: QueueSpec) -> None:
    for k, victim in enumerate(queue.preempts):
        if victim not in spec.queues:
            raise SpecError(("queues", name, "preempts", k), f"unknown queue {quote(victim)}")
        if victim == name:
            raise SpecError(("queues", name, "preempts", k), "a queue cannot preempt itself")


# -- decoding: msgspec's messages made readable ---------------------------------------------


def decode(data: Any) -> StateSpec:
    """Python data (as YAML/JSON give it) as a StateSpec, or a SpecError at a concrete path."""
    if data is None:
        raise SpecError((), "the document is empty: expected a mapping with hosts, jobs, ...")
    try:
        return msgspec.convert(data, StateSpec)
    except msgspec.ValidationError as err:
        raise _explain(str(err), data) from None
    except UnicodeEncodeError:  # a lone surrogate met a type other than str
        check_text(data)
        raise


def check_text(data: Any, *, tree: bool = False) -> None:
    """Raise a SpecError at the first key or string holding a lone surrogate (JSON lets
    ``"\\ud800"`` through; it is not a character and cannot be printed or encoded).

    Call it on a document before :func:`decode`, which lets surrogates through into
    strings. Linear in the distinct containers (YAML aliases may share one many times);
    ``tree``: no container is shared (as JSON decodes), so a fast encoder can vouch first.
    """
    if tree:
        try:
            msgspec.msgpack.encode(data)  # fails on a surrogate, among other things
        except Exception:  # anything odd: look closely
            pass
        else:
            return
    for path, value, is_key in _strings(data):
        if (m := _SURROGATE.search(value)) is not None:
            what = "key" if is_key else "string"
            message = (
                f"{what} {quote(clip(value))} is not valid text: it holds \\u{ord(m[0]):04x}, "
                "a lone UTF-16 surrogate"
            )
            raise SpecError(path, message, at_key=is_key)


def _strings(data: Any) -> Iterator[tuple[DocPath, str, bool]]:
    """Every string key and string value with its path, in document order (a mapping's
    keys before its values), without recursion; each container once (YAML aliases may
    share one, or make one contain itself)."""
    stack: list[tuple[DocPath, Any]] = [((), data)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value, False
        elif isinstance(value, dict | list) and id(value) not in seen:
            seen.add(id(value))
            if isinstance(value, dict):
                items: list[tuple[DocPath, Any]] = []
                for k, v in value.items():
                    if isinstance(k, str):
                        yield (*path, k), k, True
                    items.append(((*path, str(k)), v))
            else:
                items = [((*path, i), v) for i, v in enumerate(value)]
            stack.extend(reversed(items))


_AT = re.compile(r"(?P<msg>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?", re.S)
_SEG = re.compile(r"\.(\w+)|\[(\d+)\]|\[(\.\.\.)\]")
_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}


def _explain(text: str, data: Any) -> SpecError:
    """A msgspec ValidationError message as a SpecError with a concrete path."""
    m = _AT.fullmatch(text)
    assert m is not None  # the pattern matches any text
    raw: list[str | int] = []
    for name, index, _ in _SEG.findall(m["path"] or ""):
        raw.append(name or (int(index) if index else "..."))
    path, value, tp = _resolve(raw, data)
    msg = m["msg"]
    if m["key"]:
        return _key_error(path, value)
    ranged = re.fullmatch(r"(?:Number|Integer value) out of range|Expected `[^`]+` [<>]=? .*", msg)
    if ranged is not None and (bad := _over_limit(msg, value) or out_of_range(value)):
        return SpecError(path, bad, shown=show(value))
    if (found := re.fullmatch(r"Object contains unknown field `(.+)`", msg)) is not None:
        expected = (
            ", ".join(f.encode_name for f in msgspec.structs.fields(tp)) if _is_struct(tp) else ""
        )
        hint = f"; expected one of: {expected}" if expected else ""
        key = quote(clip(found[1]))
        return SpecError((*path, found[1]), f"unknown key {key}{hint}", at_key=True)
    if (found := re.fullmatch(r"Object missing required field `(.+)`", msg)) is not None:
        return SpecError(path, f"missing required key {quote(found[1])}")
    if re.fullmatch(r"Invalid enum value .*", msg):
        choices = " | ".join(str(a) for a in get_args(_unwrap(tp)))
        return SpecError(path, f"expected one of {choices}, got {show(value)}")
    if (found := re.fullmatch(r"Expected `([^`]+)`(.*?)(?:, got `[^`]+`)?", msg)) is not None:
        return SpecError(
            path, f"expected {_want(found[1])}{_constraint(found[2])}, got {show(value)}"
        )
    return SpecError(path, msg[:1].lower() + msg[1:])


def out_of_range(value: Any) -> str | None:
    """Why a number of a state file is refused: not finite, or beyond MAX_NUMBER in
    magnitude (None if it is not a number, or one in range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    limit = f"numbers in a state file are finite and at most 1e{len(str(MAX_NUMBER)) - 1}"
    if isinstance(value, float) and math.isnan(value):
        return f"{show(value)} is not a number ({limit})"
    if abs(value) > MAX_NUMBER:
        return f"{show(value)} is too large ({limit} in magnitude)"
    return None


def _over_limit(msg: str, value: Any) -> str | None:
    """``tasks: 1e9`` beyond one of the tighter limits: say which, and what it means."""
    m = re.search(r"<= (\d+)$", msg)
    if m is None or int(m[1]) not in _LIMITS or isinstance(value, bool):
        return None
    if not isinstance(value, int) or value <= int(m[1]):
        return None
    return f"{show(value)} is more than {m[1]}, {_LIMITS[int(m[1])]}"


def _key_error(path: DocPath, mapping: Any) -> SpecError:
    bad = (
        next((k for k in mapping if not isinstance(k, str)), None)
        if isinstance(mapping, dict)
        else None
    )
    if bad is None:
        return SpecError(path, "keys must be strings")
    return SpecError((*path, str(bad)), f"keys must be strings, got {show(bad)}", at_key=True)


def _resolve(raw: list[str | int], data: Any) -> tuple[DocPath, Any, Any]:
    """Walk data and types along msgspec's path, making ``[...]`` (some dict value) a key;
    returns the concrete path, the value there and its expected type."""
    path: list[str | int] = []
    tp: Any = StateSpec
    for seg in raw:
        tp, seg = _step(_unwrap(tp), seg, data)
        path.append(seg)
        data = _get(data, seg)
    return tuple(path), data, tp


def _step(tp: Any, seg: str | int, data: Any) -> tuple[Any, str | int]:
    """The type one step down from ``tp``, and the concrete segment: for ``[...]`` the key
    of the first value that does not convert, which is the one msgspec rejected."""
    args = get_args(tp)
    if seg == "...":
        value_tp = args[1] if len(args) == 2 else Any
        items = data.items() if isinstance(data, dict) else ()
        return value_tp, next((k for k, v in items if not _converts(v, value_tp)), seg)
    if isinstance(seg, int):
        return (args[0] if args else Any), seg
    fields = {f.encode_name: f.type for f in msgspec.structs.fields(tp)} if _is_struct(tp) else {}
    return fields.get(seg, Any), seg


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated`` and drop ``None`` from an optional type."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, UnionType):
        members = [a for a in get_args(tp) if a is not NoneType]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp


def _converts(value: Any, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp)
    except msgspec.ValidationError:
        return False
    return True


def _get(data: Any, seg: str | int) -> Any:
    if isinstance(data, dict):
        return data.get(seg)
    if isinstance(data, list) and isinstance(seg, int) and seg < len(data):
        return data[seg]
    return None


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _want(types: str) -> str:
    words = [_TYPE_WORDS.get(t.strip(), t.strip()) for t in types.split("|")]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _constraint(text: str) -> str:
    """`` >= 0.0`` -> `` >= 0``; ``of length >= 1`` -> ``with at least 1 entry``."""
    text = re.sub(r"(\d)\.0\b", r"\1", text)
    if (m := re.fullmatch(r" of length >= (\d+)", text)) is not None:
        return f" with at least {m[1]} {'entry' if m[1] == '1' else 'entries'}"
    return text


def show(value: Any) -> str:
    """A value as a message shows it: scalars written out, containers by kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(clip(value))
    if isinstance(value, int) and abs(value) >= 10**16:
        return _big_int(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[]" if not value else "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _big_int(value: int) -> str:
    """A huge whole number shown short, ``1e+400`` style (``str`` refuses over 4300 digits)."""
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude.bit_length() > 13_000:  # about 3900 digits
        about = int(magnitude.bit_length() * math.log10(2)) + 1
        return f"a {'negative ' if sign else ''}number of about {about} digits"
    digits = str(magnitude)
    mantissa = f"{digits[0]}.{digits[1:4]}".rstrip("0").rstrip(".")
    return f"{sign}{mantissa}e+{len(digits) - 1}"
