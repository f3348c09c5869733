"""LSF's fairshare: hierarchical share trees and the dynamic user priority (the
``lsf-fairshare`` picker).

A queue's share tree is its ``shares`` (LSF's ``FAIRSHARE=USER_SHARES[[alice, 10]
[groupA, 30] [default, 1]]``): a key is a user, a user group declared in
``priority.lsf.groups`` (lsb.users ``UserGroup``, whose own ``shares`` divide it further,
down any depth), or ``default`` (each user not otherwise named gets that many shares).
A group without shares of its own lets its members compete first come, first served.

A share account's dynamic priority (IBM's "Dynamic user priority", lsb.params)::

    shares / (cpu_time * CPU_TIME_FACTOR
              + (historical_run_time + run_time) * RUN_TIME_FACTOR
              + (committed_run_time - run_time) * COMMITTED_RUN_TIME_FACTOR
              + (1 + job_slots) * RUN_JOB_FACTOR)

over the account's jobs in the queue (a group's: its members' and subgroups', all of
them), in hours and job slots (parallel fairshare, ``LSB_NCPU_ENFORCE=1``: a job's times
count once per slot):

- ``cpu_time``: slot-hours used, finished and running, decayed so that an hour used is
  worth 0.1 h ``HIST_HOURS`` later (a replay has no CPU counters: a slot is busy the
  whole time it is held);
- ``run_time``: slot-hours of running jobs so far (not decayed);
- ``historical_run_time``: slot-hours of finished jobs, decayed as ``cpu_time``
  (counted with ``ENABLE_HIST_RUN_TIME=Y`` only);
- ``committed_run_time``: running jobs' requested times, in slot-hours;
- ``job_slots``: slots the account's running jobs hold, and those dispatched so far in
  the session.

With every factor 0 (LSF's "static priority fairshare") the priority is the shares. At
each level of the tree the account of highest priority offers its next job: a user its
oldest job, a group by descending into it. Ties go to the account whose next job was
submitted first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xce.alloc import Decision, Dispatched
from xce.cluster import ClusterState, PendingJob, Queue
from xce.core.pickers import Pick, PlainSession, RunningWork
from xce.errors import InputError

if TYPE_CHECKING:
    from xce.priority.setup import PrioritySetup

__all__ = ["LsfConfig", "LsfFairsharePicker", "LsfUsage", "lsf_config"]

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class LsfConfig:
    """lsb.params' fairshare factors and user groups."""

    cpu_time_factor: float = 0.7
    run_time_factor: float = 0.7
    run_job_factor: float = 3.0
    committed_run_time_factor: float = 0.0
    hist_hours: float = 5.0
    historical_run_time: bool = False  # ENABLE_HIST_RUN_TIME
    groups: Mapping[str, tuple[tuple[str, ...], Mapping[str, float]]] = field(
        default_factory=dict
    )  # group -> (members, USER_SHARES)

    @property
    def decay(self) -> float:
        """Per second: an hour used decays to 0.1 h in ``HIST_HOURS`` (0: no decay)."""
        return 0.1 ** (1.0 / (self.hist_hours * HOUR)) if self.hist_hours > 0 else 1.0


_FACTORS = {
    "CPU_TIME_FACTOR": "cpu_time_factor",
    "RUN_TIME_FACTOR": "run_time_factor",
    "RUN_JOB_FACTOR": "run_job_factor",
    "COMMITTED_RUN_TIME_FACTOR": "committed_run_time_factor",
    "HIST_HOURS": "hist_hours",
}


def lsf_config(values: Mapping[str, object]) -> LsfConfig:
    """The ``priority.lsf`` section: lsb.params' names, ``ENABLE_HIST_RUN_TIME`` (Y/N)
    and ``groups: {NAME: {members: [...], shares: {member: n, default: n}}}``."""
    kwargs: dict[str, object] = {}
    for key, value in values.items():
        if key in _FACTORS:
            number = _number(key, value)
            if key == "COMMITTED_RUN_TIME_FACTOR" and number > 1:
                raise InputError(f"{key}: from 0 to 1, not {value!r}")
            kwargs[_FACTORS[key]] = number
        elif key == "ENABLE_HIST_RUN_TIME":
            if value not in ("Y", "N", "y", "n", True, False):
                raise InputError(f"{key}: Y or N, not {value!r}")
            kwargs["historical_run_time"] = value in ("Y", "y", True)
        elif key == "groups":
            kwargs["groups"] = _groups(value)
        else:
            known = ", ".join([*_FACTORS, "ENABLE_HIST_RUN_TIME", "groups"])
            raise InputError(f"{key}: unknown setting (known: {known})")
    return LsfConfig(**kwargs)  # type: ignore[arg-type]


def _number(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"{key}: a number, not {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"{key}: a number, not {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{key}: a number of at least 0, not {value!r}")
    return number


def _groups(value: object) -> dict[str, tuple[tuple[str, ...], Mapping[str, float]]]:
    if not isinstance(value, Mapping):
        raise InputError("groups: a mapping of group name to {members, shares}")
    out: dict[str, tuple[tuple[str, ...], Mapping[str, float]]] = {}
    for name, spec in value.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("members"), list):
            raise InputError(f"groups.{name}: give members: [user or group, ...]")
        members = tuple(str(m) for m in spec["members"])
        shares = spec.get("shares", {})
        if not isinstance(shares, Mapping):
            raise InputError(f"groups.{name}.shares: a mapping of member to shares")
        for who, n in shares.items():
            if who != "default" and who not in members:
                raise InputError(f"groups.{name}.shares: {who!r} is not a member")
            _number(f"groups.{name}.shares.{who}", n)
        out[str(name)] = (members, {str(k): float(v) for k, v in shares.items()})
    for name in out:
        _acyclic(name, out, [])
    return out


def _acyclic(
    name: str, groups: Mapping[str, tuple[tuple[str, ...], Mapping[str, float]]], path: list[str]
) -> None:
    if name in path:
        raise InputError(f"groups: {' -> '.join([*path, name])} is a cycle")
    for m in groups[name][0]:
        if m in groups:
            _acyclic(m, groups, [*path, name])


class LsfUsage:
    """Per queue and user: decayed slot-hours of finished jobs (``cpu_time`` and
    ``historical_run_time`` alike in a replay), each kept as (value, its time)."""

    def __init__(self, decay: float, since: float) -> None:
        self.decay = decay
        self.since = since
        self._book: dict[tuple[str, str], tuple[float, float]] = {}

    def copy(self) -> LsfUsage:
        out = LsfUsage(self.decay, self.since)
        out._book = dict(self._book)
        return out

    def set(self, queue: str, user: str, hours: float) -> None:
        self._book[queue, user] = (hours, self.since)

    def charge(self, queue: str, user: str, slots: float, start: float, end: float) -> None:
        used = _decayed_hours(slots, max(start, self.since), end, self.decay)
        if used > 0:
            self._book[queue, user] = (self.at(queue, user, end) + used, end)

    def at(self, queue: str, user: str, t: float) -> float:
        value, when = self._book.get((queue, user), (0.0, t))
        return value * self.decay ** max(t - when, 0.0) if value else 0.0

    def users(self, queue: str) -> Iterable[str]:
        return [u for q, u in self._book if q == queue]

    def entries(self) -> Iterable[tuple[str, str]]:
        return list(self._book)

    def ran(self, slots: float, start: float, t: float) -> float:
        """What work holding ``slots`` since ``start`` has used by ``t`` (decayed)."""
        return _decayed_hours(slots, max(start, self.since), t, self.decay)


def _decayed_hours(slots: float, start: float, end: float, decay: float) -> float:
    span = max(end - start, 0.0)
    if decay >= 1.0:
        return slots * span / HOUR
    rate = -math.log(decay)
    return slots * -math.expm1(-rate * span) / rate / HOUR


@dataclass(slots=True)
class _Load:
    """One share account's usage terms (hours, slots)."""

    cpu: float = 0.0
    history: float = 0.0
    run: float = 0.0
    committed: float = 0.0
    slots: float = 0.0

    def add(self, other: _Load) -> None:
        self.cpu += other.cpu
        self.history += other.history
        self.run += other.run
        self.committed += other.committed
        self.slots += other.slots


def dynamic_priority(shares: float, load: _Load, cfg: LsfConfig) -> float:
    """LSF's dynamic priority of a share account (module docstring)."""
    history = load.history if cfg.historical_run_time else 0.0
    denominator = (
        load.cpu * cfg.cpu_time_factor
        + (history + load.run) * cfg.run_time_factor
        + (load.committed - load.run) * cfg.committed_run_time_factor
        + (1.0 + load.slots) * cfg.run_job_factor
    )
    return shares / denominator if denominator > 0 else shares


class _Node:
    """A share account: a user (``jobs``) or a group (``children``)."""

    __slots__ = ("children", "jobs", "load", "name", "next", "shares")

    def __init__(self, name: str, shares: float) -> None:
        self.name = name
        self.shares = shares
        self.children: list[_Node] = []
        self.jobs: list[PendingJob] = []  # a user's, FCFS; a group without shares: all
        self.next = 0
        self.load = _Load()


class _Cursor:
    """The queue's jobs in LSF's fairshare order; re-ranked after every dispatch."""

    needs_feedback = True

    def __init__(self, root: _Node, users: Mapping[str, list[_Node]], cfg: LsfConfig) -> None:
        self._root = root
        self._users = users  # user -> the tree's nodes holding their jobs (and ancestors)
        self._cfg = cfg
        self._out: Pick | None = None

    def _best(self, node: _Node) -> _Node | None:
        """The user node (or FCFS group) whose next job comes first under ``node``."""
        if not node.children:
            return node if node.next < len(node.jobs) else None
        best: tuple[float, float, int, _Node] | None = None
        for child in node.children:
            leaf = self._best(child)
            if leaf is None:
                continue
            job = leaf.jobs[leaf.next]
            key = (
                -dynamic_priority(child.shares, child.load, self._cfg),
                job.submit_time,
                job.order,
                leaf,
            )
            if best is None or key[:3] < best[:3]:
                best = key
        return best[3] if best is not None else None

    def peek(self) -> Pick | None:
        leaf = self._best(self._root)
        return Pick(leaf.jobs[leaf.next]) if leaf is not None else None

    def pop(self) -> Pick | None:
        leaf = self._best(self._root)
        if leaf is None:
            return None
        leaf.next += 1
        return Pick(leaf.jobs[leaf.next - 1])

    def feedback(self, pick: Pick, decision: Decision) -> None:
        if isinstance(decision, Dispatched):
            self.started(pick.job, decision.allocation.slots)

    # as a PlainCursor
    def peek_job(self) -> PendingJob | None:
        leaf = self._best(self._root)
        return leaf.jobs[leaf.next] if leaf is not None else None

    def pop_job(self) -> PendingJob | None:
        pick = self.pop()
        return pick.job if pick is not None else None

    def started(self, job: PendingJob, slots: float) -> None:
        """``job``, just taken, started holding ``slots``: its accounts' job slots."""
        for node in self._users.get(job.user, ()):
            node.load.slots += slots


class LsfFairsharePicker:
    """LSF's hierarchical fairshare (module docstring). Needs ``priority.lsf`` for
    factors other than LSF's defaults and for user groups; the queue's ``shares``
    give the top of the tree."""

    name = "lsf-fairshare"
    never_blocks = True  # its cursor offers every job, none blocked

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> _Cursor:
        return self.start_at(queue, jobs, state, state.session_time())

    def start_at(
        self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState, now: float
    ) -> _Cursor:
        return _cursor(queue, jobs, state.priority, state.running, now)

    def start_plain_at(
        self, queue: Queue, jobs: Sequence[PendingJob], session: PlainSession
    ) -> _Cursor:
        # the accounts' priorities follow the usage books, the running work and the
        # session's dispatches, never the pending jobs; within an account the order is
        # FCFS, so a job left out that would not start leaves the others' order
        # (ClockedPlainOrder's promise)
        return _cursor(queue, jobs, session.state.priority, session.running, session.now)


def _cursor(
    queue: Queue,
    jobs: Sequence[PendingJob],
    setup: PrioritySetup | None,
    running: Iterable[RunningWork],
    now: float,
) -> _Cursor:
    """The queue's share tree over ``jobs``, loaded with the usage and ``running``."""
    cfg = setup.lsf if setup is not None and setup.lsf is not None else LsfConfig()
    book = setup.lsf_usage if setup is not None else None
    loads = _user_loads(queue.name, running, book, now)
    users = sorted({j.user for j in jobs} | set(loads))
    root = _Node("", 1.0)
    holders: dict[str, list[_Node]] = {}
    _build(root, dict(queue.shares), users, cfg, holders, [])
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.order)):
        for node in holders.get(job.user, [])[:1]:
            node.jobs.append(job)
    for user, nodes in holders.items():
        load = loads.get(user)
        if load is not None:
            for node in _with_ancestors(nodes, root):
                node.load.add(load)
    return _Cursor(root, {u: _with_ancestors(n, root) for u, n in holders.items()}, cfg)


def _user_loads(
    queue: str, running: Iterable[RunningWork], book: LsfUsage | None, now: float
) -> dict[str, _Load]:
    loads: dict[str, _Load] = {}
    if book is not None:
        for user in book.users(queue):
            past = book.at(queue, user, now)
            loads.setdefault(user, _Load()).add(_Load(cpu=past, history=past))
    since = book.since if book is not None else -math.inf
    decay = book.decay if book is not None else 1.0
    for run in running:
        if run.queue != queue:
            continue
        slots = float(run.slots)
        load = loads.setdefault(run.user, _Load())
        load.run += slots * max(now - run.start_time, 0.0) / HOUR
        load.cpu += _decayed_hours(slots, max(run.start_time, since), now, decay)
        if run.requested_time is not None:
            load.committed += slots * run.requested_time / HOUR
        load.slots += slots
    return loads


def _build(
    node: _Node,
    shares: dict[str, float],
    users: list[str],
    cfg: LsfConfig,
    holders: dict[str, list[_Node]],
    path: list[_Node],
) -> None:
    """``node``'s children from ``shares`` (users, groups, ``default``)."""
    groups = cfg.groups
    named = {m for m in shares if m != "default"}
    covered = set()
    for member in named:
        covered |= _members(member, groups)
    for member, n in shares.items():
        if member == "default":
            continue
        child = _Node(member, n)
        node.children.append(child)
        if member in groups:
            own = groups[member][1]
            if own:
                pool = sorted(_members(member, groups))
                _build(
                    child, dict(own), [u for u in users if u in pool], cfg, holders, [*path, node]
                )
            else:  # members compete FCFS within the group
                for user in _members(member, groups):
                    holders.setdefault(user, []).append(child)
        else:
            holders.setdefault(member, []).append(child)
    default = shares.get("default")
    for user in users:
        if user not in covered and user not in holders and (default is not None or not path):
            # ``default`` shares each, else (at the top) none: offered after everyone
            child = _Node(user, default if default is not None else 0.0)
            node.children.append(child)
            holders.setdefault(user, []).append(child)


def _members(
    name: str, groups: Mapping[str, tuple[tuple[str, ...], Mapping[str, float]]]
) -> set[str]:
    if name not in groups:
        return {name}
    out: set[str] = set()
    for m in groups[name][0]:
        out |= _members(m, groups)
    return out


def _with_ancestors(nodes: list[_Node], root: _Node) -> list[_Node]:
    """``nodes`` (where a user's jobs sit) and every group above them."""
    out: list[_Node] = []
    seen: set[int] = set()

    def walk(node: _Node, trail: list[_Node]) -> None:
        if any(node is n for n in nodes):
            for n in [*trail, node]:
                if id(n) not in seen and n is not root:
                    seen.add(id(n))
                    out.append(n)
        for child in node.children:
            walk(child, [*trail, node])

    walk(root, [])
    return out
