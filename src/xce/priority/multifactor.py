"""Slurm's multifactor job priority (``priority/multifactor``) and the ``multifactor``
picker that orders queues by it.

A job's priority at time ``T`` (Slurm 22.05's ``priority_multifactor.c``; every factor
a number in [0, 1], docs/priority.md)::

    age * WeightAge + assoc * WeightAssoc + fairshare * WeightFairshare
      + jobsize * WeightJobSize + partition * WeightPartition + qos * WeightQOS
      + sum(tres_i * WeightTRES_i) - nice

added in that order in double precision, raised to at least 1 and truncated to an
integer. ``sprio -l`` shows each weighted factor rounded (``%.0f``) and the total
recomputed from them in its own order, truncated (:func:`sprio_row`).

- age: ``min(T - accrue, PriorityMaxAge) / PriorityMaxAge``; ``accrue`` is the job's
  ``accrue_time`` when the state gives it (squeue's), else its eligible time (submit, or
  its begin time when later; ``ACCRUE_ALWAYS``: submit). A held job's is 0.
- jobsize: with ``m`` its nodes (``nodes``, default 1) of ``N`` hosts and ``c`` its
  tasks of ``C`` slots: ``(m/N + c/C) / 2``; ``PriorityFavorSmall=YES``: ``((N-m)/N +
  (C-c)/C) / 2``; ``SMALL_RELATIVE_TO_TIME``: ``max(m*C/N, c) / minutes / C`` (one minus
  that when favouring small).
- partition: its queue's ``priority_job_factor`` over the largest of the state's queues
  (at least 1); qos: its QOS's priority over the largest; assoc: its association's
  priority over the largest.
- fairshare: the user association's Fair Tree or classic factor (:mod:`.assoc`) from the
  usage at ``T``: the state's, decayed, plus what running work has used since.
- tres: ``cpu``: ``c`` over the slots of the job's partition; ``node``: ``m`` over its
  hosts (the hosts tagged ``partition_QUEUE``, as ``xce import slurm`` tags them, else
  the cluster's); not capped at 1, as Slurm does not.

Priorities are computed at each session's time (Slurm recomputes them every
``PriorityCalcPeriod``), once per session for every queue that uses the picker.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from xce.cluster import SLOTS, ClusterState, PendingJob, Queue
from xce.core.pickers import ListCursor, PlainSession, RunningWork
from xce.errors import InputError
from xce.priority.assoc import Key
from xce.priority.config import config_from_mapping, slurm_conf_settings
from xce.priority.setup import PrioritySetup

__all__ = [
    "Factors",
    "MultifactorPicker",
    "PriorityBook",
    "SiteTotals",
    "sprio_row",
]

_MAX = float(0xFFFFFFFF)


@dataclass(frozen=True, slots=True)
class Factors:
    """One job's factors (each in [0, 1]), their weighted values and the total."""

    age: float
    assoc: float
    fairshare: float
    jobsize: float
    partition: float
    qos: float
    tres: Mapping[str, float]
    nice: int
    weighted: Mapping[str, float]  # AGE, ASSOC, FAIRSHARE, JOBSIZE, PARTITION, QOS
    weighted_tres: Mapping[str, float]
    priority: int
    association: Key | None


@dataclass(frozen=True, slots=True)
class _Fixed:
    """The factors of a job that time does not change (all but age and fair share),
    with their weighted values: the same for every session of states that share their
    hosts, queues, QOS and associations (:class:`SiteTotals`) under one setup."""

    job: PendingJob  # the job they are of (a table keyed by id() checks it)
    assoc: float
    jobsize: float
    partition: float
    qos: float
    tres: Mapping[str, float]
    weighted_tres: Mapping[str, float]
    tres_sum: float
    association: Key | None
    assoc_w: float
    jobsize_w: float
    partition_w: float
    qos_w: float


FixedTable = dict[int, _Fixed]
"""Jobs' fixed factors by ``id(job)``, kept by the picker while site and setup stay."""


class PriorityBook:
    """The priorities of one session: the fair-share factors at its time, computed
    once, and each job's factors on demand (memoised)."""

    def __init__(
        self,
        state: ClusterState,
        setup: PrioritySetup,
        now: float,
        running: Iterable[RunningWork] | None = None,
        site: SiteTotals | None = None,
        fixed: FixedTable | None = None,
    ) -> None:
        """``running``: the work running at ``now`` (default: the state's); ``site``:
        the state's totals, when a caller keeps them across sessions; ``fixed``: the
        jobs' fixed factors under ``site`` and ``setup``, when a caller keeps them."""
        self.state = state
        self.setup = setup
        self.now = now
        cfg = setup.config
        tree = setup.tree
        work = [
            (tree.association_of(r.user, r.project), float(r.slots), r.start_time)
            for r in (state.running if running is None else running)
        ]
        self.usage = setup.usage.at(now, work)
        if cfg.fairshare:
            if cfg.fair_tree:
                self.fairshare = tree.fair_tree(self.usage)
            else:
                self.fairshare = tree.classic(self.usage, cfg.dampening)
        else:
            self.fairshare = {}
        self.site = site if site is not None else SiteTotals(state, setup)
        self.hosts, self.slots = self.site.hosts, self.site.slots
        self.max_partition = self.site.max_partition
        self.max_qos, self.max_assoc = self.site.max_qos, self.site.max_assoc
        self._memo: dict[str, Factors] = {}
        self._totals: dict[str, int] = {}  # priorities worked out without their factors
        self._fixed: FixedTable = fixed if fixed is not None else {}

    def factors(self, job: PendingJob) -> Factors:
        got = self._memo.get(job.id)
        if got is None:
            got = self._memo[job.id] = self._factors(job)
        return got

    def priority(self, job: PendingJob) -> int:
        got = self._memo.get(job.id)
        if got is not None:
            return got.priority
        total = self._totals.get(job.id)
        if total is None:
            f = self._fixed_of(job)
            cfg = self.setup.config
            age = self._age(job) if cfg.age else 0.0
            fairshare = self.fairshare.get(f.association, 0.0) if f.association else 0.0
            total = self._totals[job.id] = _total(
                (
                    age * cfg.age,
                    f.assoc_w,
                    fairshare * cfg.fairshare,
                    f.jobsize_w,
                    f.partition_w,
                    f.qos_w,
                ),
                f.tres_sum,
                job.nice,
            )
        return total

    def key(self, job: PendingJob) -> tuple[float, float, int]:
        """A job's place in the order: priority high first, then submit time, then
        arrival order (Slurm: then job id)."""
        return (-float(self.priority(job)), job.submit_time, job.order)

    def _factors(self, job: PendingJob) -> Factors:
        f = self._fixed_of(job)
        cfg = self.setup.config
        age = self._age(job) if cfg.age else 0.0
        fairshare = self.fairshare.get(f.association, 0.0) if f.association else 0.0
        weighted = {
            "AGE": age * cfg.age,
            "ASSOC": f.assoc_w,
            "FAIRSHARE": fairshare * cfg.fairshare,
            "JOBSIZE": f.jobsize_w,
            "PARTITION": f.partition_w,
            "QOS": f.qos_w,
        }
        return Factors(
            age,
            f.assoc,
            fairshare,
            f.jobsize,
            f.partition,
            f.qos,
            f.tres,
            job.nice,
            weighted,
            f.weighted_tres,
            _total(tuple(weighted.values()), f.tres_sum, job.nice),
            f.association,
        )

    def _fixed_of(self, job: PendingJob) -> _Fixed:
        got = self._fixed.get(id(job))
        if got is None or got.job is not job:
            got = self._fixed[id(job)] = self._work_out_fixed(job)
        return got

    def _work_out_fixed(self, job: PendingJob) -> _Fixed:
        cfg = self.setup.config
        assoc_key = self.setup.tree.association_of(job.user, job.project)
        queue = self.state.queues.get(job.queue)
        nodes = float(job.nodes or 1)
        tasks = float(job.max_tasks)
        jobsize = self._jobsize(job, nodes, tasks) if cfg.jobsize else 0.0
        part = queue.priority_job_factor if queue is not None else 1
        partition = part / self.max_partition if cfg.partition and part else 0.0
        qos_prio = self.setup.qos.get(job.qos or self.setup.default_qos or "", 0)
        qos = qos_prio / self.max_qos if cfg.qos and qos_prio and self.max_qos else 0.0
        assoc_prio = self.setup.tree.nodes[assoc_key].priority if assoc_key else 0
        assoc = assoc_prio / self.max_assoc if cfg.assoc and self.max_assoc else 0.0
        tres = {}
        if cfg.tres:
            part_hosts, part_slots = self.site.partition_totals(job.queue)
            for name in cfg.tres:
                count, total = (tasks, part_slots) if name == "cpu" else (nodes, part_hosts)
                tres[name] = count / total if total else 0.0  # Slurm does not cap it
        weighted_tres = {n: tres[n] * w for n, w in cfg.tres.items()}
        tres_sum = 0.0
        for value in weighted_tres.values():
            tres_sum += value
        return _Fixed(
            job,
            assoc,
            jobsize,
            partition,
            qos,
            tres,
            weighted_tres,
            tres_sum,
            assoc_key,
            assoc * cfg.assoc,
            jobsize * cfg.jobsize,
            partition * cfg.partition,
            qos * cfg.qos,
        )

    def _age(self, job: PendingJob) -> float:
        if job.hold:
            return 0.0
        cfg = self.setup.config
        if job.accrue_time is not None:
            accrue = job.accrue_time
        elif cfg.accrue_always or job.begin_time is None:
            accrue = job.submit_time
        else:
            accrue = max(job.submit_time, job.begin_time)
        waited = max(self.now - accrue, 0.0)
        if cfg.max_age <= 0 or waited >= cfg.max_age:
            return 1.0
        return waited / cfg.max_age

    def _jobsize(self, job: PendingJob, nodes: float, tasks: float) -> float:
        cfg = self.setup.config
        n, c = float(self.hosts), self.slots
        if n <= 0 or c <= 0:
            return 0.0
        if cfg.small_relative_to_time:
            x = max(nodes * c / n, tasks)
            minutes = (job.requested_time or 0.0) / 60.0
            queue = self.state.queues.get(job.queue)
            if not minutes and queue is not None and queue.max_runtime:
                minutes = queue.max_runtime / 60.0
            x = x / minutes / c if minutes else 0.0
            size = 1.0 - x if cfg.favor_small else x
        elif cfg.favor_small:
            size = ((n - nodes) / n + (c - tasks) / c) / 2.0
        else:
            size = (nodes / n + tasks / c) / 2.0
        return min(max(size, 0.0), 1.0)


class SiteTotals:
    """What the factors divide by, which does not change between sessions of one state:
    the cluster's hosts and slots, each partition's, and the largest partition, QOS and
    association priorities."""

    def __init__(self, state: ClusterState, setup: PrioritySetup) -> None:
        self.state = state
        self.hosts = state.hosts.n
        self.slots = float(np.nansum(state.hosts.capacity[SLOTS]))
        factors = [q.priority_job_factor for q in state.queues.values()]
        self.max_partition = max([1, *factors])
        self.max_qos = max([0, *setup.qos.values()])
        self.max_assoc = setup.tree.max_priority
        self._partitions: dict[str, tuple[float, float]] = {}

        self._of = (state.hosts, state.queues, setup.qos, setup.tree)

    def same(self, state: ClusterState, setup: PrioritySetup) -> bool:
        """Whether these are ``state``'s totals too (the same hosts, queues, QOS and
        associations: a replay's states share them)."""
        of = (state.hosts, state.queues, setup.qos, setup.tree)
        return all(a is b for a, b in zip(of, self._of, strict=True))

    def partition_totals(self, queue: str) -> tuple[float, float]:
        """The hosts and slots of ``queue``'s partition (Slurm's TRES factors divide by
        the job's partition's totals): the hosts tagged ``partition_QUEUE`` (as ``xce
        import slurm`` tags them), else the whole cluster's."""
        got = self._partitions.get(queue)
        if got is None:
            hosts = self.state.hosts
            tag = hosts.tags.get("partition_" + re.sub(r"[^A-Za-z0-9_]", "_", queue))
            if tag is None:
                got = (float(self.hosts), self.slots)
            else:
                got = (float(tag.sum()), float(np.nansum(hosts.capacity[SLOTS][tag])))
            self._partitions[queue] = got
        return got


def _total(weighted: Sequence[float], tres_sum: float, nice: int) -> int:
    """The priority from the weighted factors (AGE, ASSOC, FAIRSHARE, JOBSIZE,
    PARTITION, QOS), their TRES sum and the nice value: Slurm's order of additions."""
    total = 0.0
    for value in weighted:
        total += value
    return _truncate(total + tres_sum - nice)


def _truncate(total: float) -> int:
    return int(min(max(total, 1.0), _MAX))


def _wire(value: float) -> float:
    """A double as sprio receives it: Slurm packs ``value * 10^6`` and unpacks it
    divided by 10^6, in doubles (checked against a real Slurm 22.05: a sum that lands
    on an integer keeps it)."""
    return (value * 1e6) / 1e6 if math.isfinite(value) else value


def sprio_row(f: Factors) -> dict[str, str | int]:
    """A job's ``sprio -l`` columns: each weighted factor ``%.0f`` (as sprio prints
    it), NICE, TRES (``name=value`` of the non-zero ones) and PRIORITY as sprio
    recomputes it from the received factors (truncated)."""
    received = {k: _wire(v) for k, v in f.weighted.items()}
    tres = {k: _wire(v) for k, v in f.weighted_tres.items()}
    total = 0.0
    for name in ("AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"):
        total += received[name]
    total -= f.nice
    for value in tres.values():
        if value:
            total += value
    row: dict[str, str | int] = {"PRIORITY": int(max(total, 1.0)), "SITE": "0"}
    for name, value in received.items():
        row[name] = format(value, ".0f")
    row["NICE"] = str(f.nice)
    row["TRES"] = ",".join(f"{k}={format(v, '.0f')}" for k, v in tres.items() if v)
    return row


class _Cursor(ListCursor):
    """A queue's jobs by the session's multifactor priority; queues of one priority
    merge by it too. Also the plain replay's cursor (a ``ListCursor`` is a
    ``PlainCursor``): the order is fixed at the session's start."""

    def __init__(self, jobs: Sequence[PendingJob], book: PriorityBook) -> None:
        super().__init__(jobs, book.key)
        self.merge_key = book.key


class MultifactorPicker:
    """Slurm's multifactor priority, high first (module docstring); ties by submit
    time, then arrival order. Within the queue's priority (Slurm's PriorityTier), and
    queues of one priority merge by it. Needs the state's ``priority`` section.

    ``multifactor:SETTINGS`` (``with_option``): the state's settings with these, in
    slurm.conf's form, over them (``multifactor:PriorityWeightAge=2000
    PriorityFlags=NO_FAIR_TREE``): the same site under other weights or Fair Tree off.
    ``PriorityDecayHalfLife`` is the accounting's and cannot be changed so."""

    name = "multifactor"
    never_blocks = True  # its cursor offers every job, none blocked

    def __init__(
        self, overrides: Mapping[str, object] | None = None, name: str | None = None
    ) -> None:
        self._book: tuple[ClusterState, float, PriorityBook] | None = None
        self._plain: tuple[PlainSession, PriorityBook] | None = None
        self._site: SiteTotals | None = None  # kept while the states share their hosts
        self._fixed: tuple[SiteTotals, PrioritySetup, FixedTable] | None = None
        self._overrides = dict(overrides or {})
        self._config: tuple[PrioritySetup, PrioritySetup] | None = None  # given, configured
        if name is not None:
            self.name = name

    def with_option(self, option: str) -> MultifactorPicker:
        """This picker with ``option``'s settings (slurm.conf words) over the state's."""
        words = option.split()
        if not words:
            raise InputError("picker multifactor: the option gives no setting (KEY=VALUE ...)")
        overrides = slurm_conf_settings([option], "picker multifactor option")
        unknown = [
            w for w in words if w.partition("=")[0].lower() not in {k.lower() for k in overrides}
        ]
        if unknown:
            raise InputError(f"picker multifactor option: {unknown[0]!r} is not a priority setting")
        if "PriorityDecayHalfLife" in overrides:
            raise InputError(
                "picker multifactor option: PriorityDecayHalfLife belongs to the state's "
                "accounting (its usage book), not to the picker"
            )
        return MultifactorPicker(overrides, f"{self.name}:{option}")

    def _setup(self, given: PrioritySetup) -> PrioritySetup:
        if not self._overrides:
            return given
        held = self._config
        if held is not None and held[0] is given:
            return held[1]
        config = config_from_mapping({**(given.settings or {}), **self._overrides})
        configured = replace(given, config=config)
        self._config = (given, configured)
        return configured

    def book(self, state: ClusterState, now: float) -> PriorityBook:
        """The session's priorities (one per state and time)."""
        held = self._book
        if held is not None and held[0] is state and held[1] == now:
            return held[2]
        setup = self._setup(_priority_of(state))
        site = self._site_of(state, setup)
        book = PriorityBook(state, setup, now, site=site, fixed=self._fixed_for(site, setup, state))
        self._book = (state, now, book)
        return book

    def _fixed_for(self, site: SiteTotals, setup: PrioritySetup, state: ClusterState) -> FixedTable:
        """The jobs' fixed factors under ``site`` and ``setup`` (a fresh table when
        either changed), rid of the jobs no longer pending now and then."""
        held = self._fixed
        if held is None or held[0] is not site or held[1] is not setup:
            held = self._fixed = (site, setup, {})
        table = held[2]
        if len(table) > 4 * len(state.jobs) + 1024:
            live = {id(j) for j in state.jobs}
            for key in [k for k in table if k not in live]:
                del table[key]
        return table

    def _site_of(self, state: ClusterState, setup: PrioritySetup) -> SiteTotals:
        site = self._site
        if site is None or not site.same(state, setup):
            site = self._site = SiteTotals(state, setup)
        return site

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> _Cursor:
        return self.start_at(queue, jobs, state, state.session_time())

    def start_at(
        self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState, now: float
    ) -> _Cursor:
        return _Cursor(jobs, self.book(state, now))

    def start_plain_at(
        self, queue: Queue, jobs: Sequence[PendingJob], session: PlainSession
    ) -> _Cursor:
        # a job's priority depends on the session's time, the usage books and the
        # running work, never on the other pending jobs: leaving out a job that would
        # not start leaves the others' order (ClockedPlainOrder's promise)
        held = self._plain
        if held is None or held[0] is not session:
            state = session.state
            setup = self._setup(_priority_of(state))
            site = self._site_of(state, setup)
            fixed = self._fixed_for(site, setup, state)
            book = PriorityBook(state, setup, session.now, session.running, site, fixed)
            held = self._plain = (session, book)
        return _Cursor(jobs, held[1])


def _priority_of(state: ClusterState) -> PrioritySetup:
    if state.priority is None:
        raise InputError(
            "the multifactor picker needs the state's priority section "
            "(weights, and associations for fair share: docs/priority.md); the cluster "
            f"({state.source or 'given in code'}) has none"
        )
    return state.priority
