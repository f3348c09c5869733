"""The allocation engine: the spec's composition algorithm, per job.

``ALTER`` (first alternative that fully allocates) → ``COMPOUND`` (every term, atomic) →
``PRIMARY``: unsatisfiable-cache check → shared-resource check (once per primary) →
the elected plugin's plans → per plan, per bucket a *fresh* host iterator → per host
the exact try (prepare fan-out, availability minus uncommitted debits, per-host limits).
A failed plan's claims are rolled back before the next plan; a satisfied plan stops the
search. Nothing reaches the session's books until the whole job is dispatched.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from xce.alloc.books import SessionBooks
from xce.alloc.bulk import claim_run
from xce.alloc.cache import CacheKey, UnsatCache
from xce.alloc.cancel import CancelToken
from xce.alloc.context import AllocContext, AllocStats
from xce.alloc.diagnose import diagnose, shared_shortfall
from xce.alloc.hosts import HostFinder, HostIterator
from xce.alloc.limits import LimitBooks
from xce.alloc.never import EmptyCluster
from xce.alloc.outcome import (
    AllocMode,
    Claim,
    ClaimRun,
    Decision,
    Dispatched,
    JobAllocation,
    Part,
    PendInfo,
    Pending,
    PendReason,
    Preemption,
)
from xce.alloc.plans import Plan
from xce.alloc.plugins import AllocatorRegistry, default_registry
from xce.alloc.preemption import (
    Accept,
    Footprint,
    Masked,
    Released,
    find_preemption,
    footprint,
    may_preempt,
)
from xce.alloc.request import PreparedPrimary, PreparedRequirement
from xce.cluster.catalog import SLOTS
from xce.cluster.state import ClusterState, RunningJob
from xce.cluster.units import to_units
from xce.preempt import LowestPriorityFirst, Preemptor, Victim

__all__ = ["AllocOptions", "Allocator", "JobRequest"]

_JOBS = "jobs"  # a limit's key for the number of jobs
_NOTHING: dict[str, float] = {}
Hook = Callable[[AllocContext], None]
Placed = tuple[tuple[Part, ...], tuple[tuple[str, float], ...]]
_FailureKey = tuple[object, int, object, AllocMode]
_FEW_GROUPS = 16  # same[] groups ranked by a pass per group rather than a sort
_UNPLACED = PendInfo(PendReason.NOT_ENOUGH_SLOTS, "no placement (reason not worked out)")


@dataclass(frozen=True, slots=True)
class AllocOptions:
    """Switches that must never change a decision, only its cost (tested)."""

    cache: bool = True  # the unsatisfiable cache (spec Req 7)
    shortcuts: bool = True  # exact shortcuts: skip plans that provably fail
    cursors: bool = True  # per-session host-scan cursors (skip hosts that can never fit)
    explain: bool = True  # per-host breakdowns of pend reasons (drivers that show them)
    # a primary that failed on books unchanged since (no charge in between, same limits)
    # fails the same way again: its pend reason is reused without trying the plans
    reuse_failures: bool = True


@dataclass(frozen=True, slots=True)
class JobRequest:
    """What the allocator needs of a job: identity and its prepared requirement."""

    id: str
    user: str
    queue: str
    project: str
    requirement: PreparedRequirement


@dataclass(frozen=True, slots=True)
class _Failed:
    info: PendInfo
    cached: bool = False


class Allocator:
    """Places jobs one at a time against a session's books; see the module docstring."""

    def __init__(
        self,
        state: ClusterState,
        registry: AllocatorRegistry | None = None,
        options: AllocOptions | None = None,
        token: CancelToken | None = None,
        preemptor: Preemptor | None = None,
    ) -> None:
        self.state = state
        self.registry = registry if registry is not None else default_registry()
        self.preemptor: Preemptor = preemptor if preemptor is not None else LowestPriorityFirst()
        self.preempted: set[str] = set()  # running jobs preempted this session
        self._prints: dict[str, Footprint] = {}  # running job -> footprint (same object)
        self._deferred: list[tuple[CacheKey, PendInfo]] | None = None
        self._quiet = False  # a view asked only whether a job fits: no pend reasons
        self.options = options if options is not None else AllocOptions()
        self.token = token if token is not None else CancelToken()
        self.books = SessionBooks(state)
        self.limits = LimitBooks(state)
        self.cache = UnsatCache()
        self.stats = AllocStats()
        self._hooks: tuple[Hook, ...] = self.registry.prepare_hooks()
        self._standard_hooks = self.registry.builtin_only()
        self._known_want = self._standard_hooks and self.options.shortcuts
        self._groups: dict[tuple[str, ...], list[np.ndarray | None]] = {}
        self._group_of: dict[tuple[str, ...], npt.NDArray[np.intp]] = {}
        self._failed: dict[_FailureKey, PendInfo] = {}  # this books version's failures
        self._failed_version = -1
        self.empty = EmptyCluster(self, self._on_empty)

    def _on_empty(self, state: ClusterState) -> Allocator:
        """An allocator like this one on ``state`` (the never-runnable check's)."""
        return Allocator(state, self.registry, replace(self.options, cache=False), self.token)

    def rebind(self, state: ClusterState) -> None:
        """Use ``state`` (a newer view of the same cluster) from the next session on."""
        hosts_changed = state.hosts is not self.state.hosts
        self.state = state
        self.books.state = state
        if state.limits is self.limits.limits:
            self.limits.state = state
        else:
            self.limits = LimitBooks(state)
        if hosts_changed:
            self._groups.clear()
            self._prints.clear()  # host indices may have changed

    def begin_session(self) -> None:
        """Reset the session's books, the evaluation memo and the unsatisfiable cache."""
        self.books.reset()
        self.limits.reset()
        self.cache.clear()
        self.stats = AllocStats()
        self._hooks = self.registry.prepare_hooks()
        self._standard_hooks = self.registry.builtin_only()
        self._known_want = self._standard_hooks and self.options.shortcuts
        self._groups.clear()  # host attributes may have changed between sessions
        self._failed.clear()
        self.preempted.clear()
        prints = self._prints
        if len(prints) > 2 * len(self.state.running) + 64:  # jobs that ended since
            running = {r.id for r in self.state.running}
            self._prints = {k: v for k, v in prints.items() if k in running}

    # --- job level -------------------------------------------------------------------
    def decide(
        self,
        job: JobRequest,
        mode: AllocMode = AllocMode.NORMAL,
        *,
        masked: Masked = (),
        accept: Accept | None = None,
        preempt: bool = True,
    ) -> Decision:
        """Place ``job`` and charge the session's books at once, or say why it waits.

        The spec's full preemption flow: cache check, normal allocation, then — only if
        that failed and the job's queue may preempt — the preemptor's victim sets; on
        success the job pends PREEMPTING with its victims and no cache entry is made,
        else the cache entries of the normal attempt are made as usual.

        ``masked``: hosts the job may not be promised by a preemption (the advance
        reservations that do not admit it over its run: xce.alloc.planner). A failure
        under a mask makes no cache entry: an identical job another mask (or none)
        leaves free to preempt may still succeed. ``accept``: a victim set whose promise
        it refuses is not committed (a planner's plans; a failure then makes no cache
        entry either). ``preempt=False``: no preemption is looked for (the caller knows
        it fails: xce.alloc.planner), and the failure makes no cache entry under a mask.
        """
        preempting = mode is AllocMode.NORMAL and may_preempt(self, job.queue)
        kept_out = preempting and (bool(masked) or accept is not None)
        preempting = preempting and preempt
        self._deferred = [] if preempting or kept_out else None
        try:
            decision = self._decide(job, mode, charge=True)
        finally:
            deferred, self._deferred = self._deferred, None
        never = self.empty.never_runnable(job) if isinstance(decision, Pending) else None
        if isinstance(decision, Pending) and preempting and never is None and not decision.cached:
            found = find_preemption(self, job, self.preemptor, masked, accept)
            if found is not None:
                return self._commit_preemption(job, *found)
        if kept_out:
            deferred = None
        for key, info in deferred or ():  # e.g. an alternative that failed before one fit
            self.cache.insert(key, info)
            self.stats.cache_inserts += 1
        if not isinstance(decision, Pending):
            return decision
        if never is not None:
            return Pending(job.id, never, decision.cached)
        return decision

    def _commit_preemption(self, job: JobRequest, found: Preemption, back: Released) -> Pending:
        """Mark the victims preempted and hand out the job's promise (what its victims
        give back stays charged to them until they release)."""
        promise = found.promise
        self.books.charge_beyond(promise, back)
        ids = self.limits.applicable(job.user, job.queue, job.project)
        if ids:
            self.limits.charge_beyond(ids, promise, back.limit_jobs)
        self.preempted.update(found.victims)
        self.stats.preemptions += 1
        names = ", ".join(found.victims[:5]) + (", ..." if len(found.victims) > 5 else "")
        info = PendInfo(
            PendReason.PREEMPTING,
            f"preempts {len(found.victims)} running job(s) ({names}); "
            "starts once they have released",
        )
        return Pending(job.id, info, preemption=found)

    def victim_of(self, job: RunningJob, priority: int) -> tuple[Victim, Footprint]:
        """A running job as preemptors see it, and its footprint (kept while the job
        object is the same one: the scheduling core keeps them across sessions)."""
        found = self.footprint_of(job)
        victim = found.victim
        if victim is None or victim.priority != priority:  # queue priorities may change
            victim = Victim(job.id, job.queue, priority, job.start_time, found.slots, found.hosts)
            found.victim = victim
        return victim, found

    def footprint_of(self, job: RunningJob) -> Footprint:
        """What a running job holds, in units (kept while the job object is the same)."""
        found = self._prints.get(job.id)
        if found is None or found.job is not job:
            found = self._prints[job.id] = footprint(self, job)
        return found

    def charge(self, job: JobRequest, allocation: JobAllocation) -> None:
        """Hand ``allocation`` (placed for ``job`` on a view of these books, which it
        fits) out in the session's books and limits, as :meth:`decide` does."""
        ids = self.limits.applicable(job.user, job.queue, job.project)
        if ids:
            self.limits.charge(ids, allocation)
        self.books.charge(allocation)

    def preempt_view(self, back: Released, masked: Masked = ()) -> Allocator:
        """An allocator like this one on a view of the session's books in which
        ``back``'s victims have released everything and the hosts of ``masked`` have
        nothing (PREEMPT mode; the session's books are not touched)."""
        limits = self.limits.released(back.limit_jobs) if back.limit_jobs else self.limits
        return self.on_view(self.books.released(back, masked), limits)

    def could_preempt(self, job: JobRequest) -> bool:
        """Whether some victim set the preemptor offers would let ``job`` be placed
        (nothing is preempted, charged or cached: a question, e.g. whether only a
        mask stopped a preemption)."""
        if not may_preempt(self, job.queue) or self.empty.never_runnable(job) is not None:
            return False
        return find_preemption(self, job, self.preemptor) is not None

    def preempt(
        self, job: JobRequest, masked: Masked = (), accept: Accept | None = None
    ) -> Pending | None:
        """Preemption alone, for a job the caller has failed to place on a view of the
        books (a job that runs only in its own reservation: xce.alloc.planner): the
        job pending PREEMPTING with its victims chosen and its promise charged, or None
        (its queue may not preempt, it can never run, or no victim set is sufficient).
        No cache entry is made either way."""
        if not may_preempt(self, job.queue) or self.empty.never_runnable(job) is not None:
            return None
        found = find_preemption(self, job, self.preemptor, masked, accept)
        return None if found is None else self._commit_preemption(job, *found)

    @property
    def job_blind(self) -> bool:
        """Whether an attempt's outcome depends on the job only through its requirement,
        user, queue and project (no plugin but the builtin ones sees the job)."""
        return self._standard_hooks

    def on_view(
        self,
        books: SessionBooks,
        limits: LimitBooks,
        *,
        explain: bool | None = None,
        reasons: bool = True,
    ) -> Allocator:
        """An allocator like this one on other books of the same cluster (an
        availability view, design §3a), for :meth:`try_place`: its own unsatisfiable
        cache, off, and its own failure memo; the session's books are not touched.
        ``explain=False``: no per-host breakdown of a failure; ``reasons=False``: no
        pend reason worked out either (a caller that only asks whether the job fits
        gets a Pending of a placeholder reason)."""
        view = object.__new__(Allocator)
        view.__dict__.update(self.__dict__)
        view.options = _view_options(self.options, explain)
        view.books = books
        view.limits = limits
        view.cache = UnsatCache()
        view.stats = AllocStats()
        view._failed = {}
        view._failed_version = -1
        view._deferred = None
        view._quiet = not reasons
        return view

    def try_place(self, job: JobRequest, mode: AllocMode = AllocMode.NORMAL) -> Decision:
        """:meth:`decide` without charging the books or the never-runnable check (what
        the job would get now; the books are left exactly as they were)."""
        return self._decide(job, mode, charge=False)

    def _decide(self, job: JobRequest, mode: AllocMode, *, charge: bool) -> Decision:
        self.token.checkpoint()
        ctx = AllocContext(
            self.books,
            self.limits,
            user=job.user,
            queue=job.queue,
            project=job.project,
            token=self.token,
            stats=self.stats,
            mode=mode,
        )
        with ctx:
            placed = self._place_requirement(job.requirement, ctx)
        if isinstance(placed, _Failed):
            return Pending(job.id, placed.info, placed.cached)
        if charge:
            if ctx.limit_ids:
                self.limits.charge(ctx.limit_ids, placed)
            self.books.charge(placed)
        return Dispatched(job.id, placed)

    def _place_requirement(
        self, req: PreparedRequirement, ctx: AllocContext
    ) -> JobAllocation | _Failed:
        failures: list[_Failed] = []
        for a, terms in enumerate(req.alternatives):
            # Job-level causes come first (docs/allocation.md): shared, then aggregate.
            over = _shared_shortfall(terms, ctx) if req.shared else None
            if over is None and ctx.limit_ids:
                over = self._aggregate_limit(ctx, terms, None)
            if over is not None:
                failures.append(over)
                continue
            placed = self._place_terms(terms, ctx)
            if isinstance(placed, _Failed):
                failures.append(placed)
                continue
            claims, shared = placed
            over = self._aggregate_limit(ctx, terms, placed) if ctx.limit_ids else None
            if over is not None:
                ctx.credit(claims)
                for pp in terms:
                    ctx.credit_shared(pp.wants.shared_units)
                failures.append(over)
                continue
            return JobAllocation(claims, shared, a if req.is_alter else None)
        first = failures[0]
        if len(failures) == 1:
            return first
        others = "; ".join(
            f"alternative {i}: {f.info.reason.value}" for i, f in enumerate(failures) if i
        )
        info = replace(first.info, message=f"alternative 0: {first.info.message} ({others})")
        return _Failed(info, all(f.cached for f in failures))

    def _aggregate_limit(
        self,
        ctx: AllocContext,
        terms: Sequence[PreparedPrimary],
        placed: Placed | None,
    ) -> _Failed | None:
        """An aggregate limit this alternative would exceed: checked before placement with
        the least it can take (tasks, per-task amounts, one host's per-host amounts) and
        after it with what it did take."""
        totals: dict[str, float] = {}  # units
        if placed is None:
            slots = sum(pp.tasks for pp in terms)
            for pp in terms:
                w = pp.wants
                for name, amount in (
                    *((n, a * pp.tasks) for n, a in w.per_task_units),
                    *w.per_host_units,
                    *w.per_job_units,
                    *w.shared_units,
                ):
                    totals[name] = totals.get(name, 0.0) + amount
        else:
            parts, shared = placed
            scales = ctx.scales
            slots = 0
            for part in parts:
                k = len(part.hosts) if isinstance(part, ClaimRun) else 1
                slots += part.slots * k
                for name, amount in part.amounts:
                    totals[name] = totals.get(name, 0.0) + to_units(amount, scales[name]) * k
            for name, amount in shared:
                totals[name] = totals.get(name, 0.0) + to_units(amount, scales[name])
        over = self.limits.aggregate_violation(ctx.limit_ids, slots, totals)
        if over is None:
            return None
        lim, key, used, cap, extra = over
        show = self._show
        what = f"{show(key, used)} of {show(key, cap)} {key} in use, wants {show(key, extra)}"
        return _Failed(
            PendInfo(
                PendReason.LIMIT,
                f"limit {lim.name!r} would be exceeded: {what}",
                limits=(lim.name,),
            )
        )

    def _show(self, key: str, units: float) -> str:
        """An amount in units as the resource's own number (slots and jobs: whole)."""
        scale = self.books.scales.get(key, 1.0)
        return f"{units / scale:g}"

    def _place_terms(self, terms: Sequence[PreparedPrimary], ctx: AllocContext) -> Placed | _Failed:
        """Every term or nothing: a failing term gives back all earlier terms' debits."""
        claims: list[Part] = []
        shared: list[tuple[str, float]] = []
        for t, pp in enumerate(terms):
            placed = self._place_primary(pp, ctx, t)
            if isinstance(placed, _Failed):
                ctx.credit(claims)
                for earlier in terms[:t]:
                    ctx.credit_shared(earlier.wants.shared_units)
                return placed
            claims.extend(placed)
            shared.extend(pp.wants.shared)
        return tuple(claims), tuple(shared)

    # --- primary level ---------------------------------------------------------------
    def _place_primary(
        self, pp: PreparedPrimary, ctx: AllocContext, term: int
    ) -> list[Part] | _Failed:
        key: CacheKey | None = None
        if self.options.cache and pp.cacheable:
            key = (pp.primary.fingerprint, ctx.user, ctx.queue, ctx.project)
            hit = self.cache.lookup(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return _Failed(hit, cached=True)
            self.stats.cache_misses += 1
        # Sound to cache only if no earlier term of this job holds debits (design §3).
        clean = not ctx.holds_any
        again = self._failure_key(pp, ctx) if clean else None
        if again is not None and again in self._failed:
            self.stats.failures_reused += 1
            return self._unsatisfiable(key, self._failed[again])
        ctx.primary, ctx.term = pp, term
        short = shared_shortfall(pp, ctx)
        if short is not None:
            return self._unsatisfiable(key if clean else None, short)
        ctx.debit_shared(pp.wants.shared_units)
        groups = self._same_groups(pp.primary.same)
        claims = self._run_plans(pp, ctx, groups)
        if claims is None:
            ctx.credit_shared(pp.wants.shared_units)
            info = (
                _UNPLACED
                if self._quiet
                else diagnose(pp, ctx, breakdown=self.options.explain, groups=groups)
            )
            if again is not None:
                self._failed[again] = info
            return self._unsatisfiable(key if clean else None, info)
        return claims

    def _failure_key(self, pp: PreparedPrimary, ctx: AllocContext) -> _FailureKey | None:
        """What a clean attempt's outcome depends on besides the books, if the outcome
        is a function of them (builtin plugins: no hook sees the job); None otherwise.

        Valid for the current books version only: the memo is emptied when it changes.
        """
        if not (self.options.reuse_failures and self._standard_hooks):
            return None
        version = self.books.version
        if version != self._failed_version:
            self._failed.clear()
            self._failed_version = version
        return (pp.primary.fingerprint, pp.tasks, ctx.limit_ids, ctx.mode)

    def _unsatisfiable(self, key: CacheKey | None, info: PendInfo) -> _Failed:
        if key is not None:
            if self._deferred is not None:  # made only once preemption has failed too
                self._deferred.append((key, info))
            else:
                self.cache.insert(key, info)
                self.stats.cache_inserts += 1
        return _Failed(info)

    def _run_plans(
        self, pp: PreparedPrimary, ctx: AllocContext, groups: list[np.ndarray | None]
    ) -> list[Part] | None:
        """Walk the elected plugin's plans; the first satisfied plan wins (Req 4 AC 2-4)."""
        if pp.tasks > self.books.total_slots:
            return None  # more tasks than the ok hosts have slots free: no plan can fit
        finders = [HostFinder(pp, self.books, g, cursors=self.options.cursors) for g in groups]
        if len(finders) > 1:
            finders = self._in_host_order(pp, ctx, finders)
        # The shortcuts' bounds cost a pass over the eligible hosts, so they are computed
        # only once a first plan has failed (most jobs place on their first plan), and
        # never for a single-slot primary (one plan of one bucket: nothing to skip).
        shortcuts = self.options.shortcuts and pp.tasks > 1
        bounds: list[_Capacity] | None = None
        tried = False  # a plan was tried on hosts (not refused by its largest bucket)
        plugin = self.registry.elect(pp)
        plans = plugin.plans(pp, ctx)
        skip = getattr(plans, "skip_buckets_over", None) if shortcuts else None
        skip_wide = getattr(plans, "skip_buckets_beyond", None) if shortcuts else None
        self.stats.iterators += 1
        try:
            for plan in plans:
                self.stats.plans_tried += 1
                if (
                    shortcuts
                    and not plan.fill
                    and plan.buckets
                    and plan.buckets[0] > self.books.max_slots
                ):
                    # No ok host has that many slots: every bucket scan of the largest
                    # bucket would be empty. Jump to the plans that could fit.
                    if skip is not None:
                        skip(int(self.books.max_slots))
                    continue
                if shortcuts and bounds is None and tried:
                    bounds = [_Capacity(f) for f in finders]
                    if not any(b.total >= pp.tasks for b in bounds):
                        return None  # more tasks than fit anywhere: every plan fails
                    if skip is not None and not plan.fill:
                        skip(max(b.largest for b in bounds))
                    if skip_wide is not None and not plan.fill:
                        # a plan of k buckets needs k distinct hosts that take a task
                        skip_wide(max(b.hosts_taking(1) for b in bounds))
                tried = True
                for i, finder in enumerate(finders):
                    if bounds is not None and not bounds[i].admits(plan, pp.tasks):
                        continue
                    claims: list[Part] | None = (
                        self._fill(pp, ctx, finder)
                        if plan.fill
                        else self._try_plan(plan, ctx, finder)
                    )
                    if claims is not None:
                        return claims
        finally:
            plans.close()
        return None

    def _in_host_order(
        self, pp: PreparedPrimary, ctx: AllocContext, finders: list[HostFinder]
    ) -> list[HostFinder]:
        """``same[]`` groups in the job's host order (``order[]``, else host order) of
        their first eligible member: a host that is ok, matches the select and could take
        one task with the job's first-bucket want now (so a 1-task job lands where the
        seqjob rule puts it). Groups without one come last, in their own order."""
        want = pp.wants.units_for_bucket(1, True)
        candidates = HostFinder(pp, self.books).ordered(want, 1)
        if ctx.limit_ids or ctx.holds_any:  # the exact try: debits and per-host limits
            taken = {SLOTS: 1.0, **dict(want)}
            candidates = candidates[
                [self._would_take(h, ctx, taken) for h in candidates.tolist()]
            ].astype(np.intp)
        group = self._group_of[pp.primary.same][candidates]  # each candidate's group
        rank = np.full(len(finders), len(candidates), dtype=np.intp)
        if not len(candidates):
            return finders  # no group has a candidate: their own order
        if len(finders) <= _FEW_GROUPS:  # a pass per group beats sorting many hosts
            for g in range(len(finders)):
                hit = group == g
                at = int(hit.argmax())
                if hit[at]:
                    rank[g] = at
        else:
            kept = group >= 0
            seen, first = np.unique(group[kept], return_index=True)
            rank[seen] = np.flatnonzero(kept)[first]  # position of each group's first
        return [finders[int(i)] for i in np.argsort(rank, kind="stable")]

    def _would_take(self, h: int, ctx: AllocContext, taken: dict[str, float]) -> bool:
        """Whether the try would give host ``h`` ``taken`` (units) now."""
        held = ctx.uncommitted.get(h, _NOTHING)
        units = self.books.units
        if not all(units(n)[h] - held.get(n, 0.0) >= a for n, a in taken.items()):
            return False
        ids = ctx.limit_ids
        return not ids or self.limits.host_violation(ids, h, taken, held) is None

    def _same_groups(self, names: tuple[str, ...]) -> list[np.ndarray | None]:
        """``same[a:b]``: one host mask per distinct value combination (hosts lacking one
        of them are in none), by first member."""
        if not names:
            return [None]
        groups = self._groups.get(names)
        if groups is None:
            groups = self._groups[names] = self._group_hosts(names)
        return groups

    def _group_hosts(self, names: tuple[str, ...]) -> list[np.ndarray | None]:
        """The group masks of ``same[names]``; also records each host's group index
        (-1: in none) in ``_group_of``."""
        hosts = self.books.hosts
        columns: list[npt.NDArray[Any]] = []
        for name in names:
            if name in hosts.strings:
                columns.append(hosts.strings[name])
            elif name in hosts.tags:
                columns.append(hosts.tags[name])
            else:
                columns.append(hosts.numeric[name])
        keys = list(zip(*columns, strict=True))
        groups: dict[tuple[object, ...], list[int]] = {}
        for h, k in enumerate(keys):
            if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in k):
                groups.setdefault(k, []).append(h)
        masks: list[np.ndarray | None] = []
        group_of = np.full(hosts.n, -1, dtype=np.intp)
        for g, members in enumerate(groups.values()):
            mask = np.zeros(hosts.n, dtype=np.bool_)
            mask[members] = True
            masks.append(mask)
            group_of[members] = g
        self._group_of[names] = group_of
        return masks or [np.zeros(hosts.n, dtype=np.bool_)]

    def _try_plan(self, plan: Plan, ctx: AllocContext, finder: HostFinder) -> list[Part] | None:
        """Every bucket on a distinct host, a fresh host iterator per bucket (Req 4 AC 2)."""
        assert ctx.primary is not None
        claimed: list[Part] = []
        # Hosts this plan holds (a byte per host: exclusivity checks one host or many).
        taken = bytearray(self.books.hosts.n) if len(plan.buckets) > 1 else None
        ntaken = 0
        for need, count in plan.size_runs():
            left = count
            while left:
                ctx.nhosts, ctx.nslots, ctx.first = 1, need, not claimed
                if self.options.shortcuts and left > 1 and taken is not None:
                    hooks = None if self._standard_hooks else self._hooks
                    bulk = claim_run(ctx, finder, hooks, need, left, taken, ntaken)
                    if bulk is not None:
                        if len(bulk) < left:  # too few hosts: the plan fails (not debited)
                            ctx.credit(claimed)
                            return None
                        claimed.append(bulk)
                        if ntaken + left < len(plan.buckets):  # more buckets to place
                            np.frombuffer(taken, dtype=np.bool_)[bulk.hosts] = True
                        ntaken += left
                        break
                left -= 1
                claim = self._claim_next(ctx, finder, need, taken, claimed, ntaken)
                if claim is None:
                    ctx.credit(claimed)  # rollback: no phantom debit reaches the next plan
                    return None
                claimed.append(claim)
                if taken is not None:
                    taken[claim.host] = 1
                ntaken += 1
        return claimed

    def _claim_next(
        self,
        ctx: AllocContext,
        finder: HostFinder,
        need: int,
        taken: bytearray | None,
        claimed: list[Part],
        ntaken: int,
    ) -> Claim | None:
        """The next bucket of a plan, on a host of its own fresh iterator."""
        # Exact shortcut: a bucket wanting what the previous (non-first) bucket wanted
        # would be offered, and refuse, every host up to that bucket's claim again:
        # those hosts were claimed or refused, and this plan's debits only grow.
        after = None
        if self.options.shortcuts and ntaken > 1:
            last = claimed[-1]
            if last.slots == need:
                after = int(last.hosts[-1]) if isinstance(last, ClaimRun) else last.host
        return self._claim_one(ctx, finder, need, taken, after)

    def _claim_one(
        self,
        ctx: AllocContext,
        finder: HostFinder,
        need: int,
        taken: bytearray | None,
        after: int | None,
    ) -> Claim | None:
        assert ctx.primary is not None
        if self.options.shortcuts and need > self.books.max_slots:
            return None  # no ok host has that many slots at all: every scan would be empty
        want = ctx.primary.wants.units_for_bucket(need, ctx.first)
        hosts = HostIterator(finder, need, want, self.token, after=after)
        self.stats.iterators += 1
        try:
            for h in hosts:
                if taken is not None and taken[h]:  # exclusivity within a plan: the caller's
                    continue
                claim = self.try_host(h, ctx)
                if claim is not None:
                    return claim
        finally:
            hosts.close()
        return None

    def try_host(self, h: int, ctx: AllocContext) -> Claim | None:
        """The per-host try: the prepare fan-out builds the want, then the exact check
        (in resolution units: no tolerance)."""
        self.stats.host_tries += 1
        if self._known_want:
            want, taken = self._builtin_want(ctx)
        else:
            request = ctx.request
            request.clear()
            for hook in self._hooks:
                hook(ctx)
            want = {}
            for name, amount in request:
                want[name] = want.get(name, 0.0) + amount
            scales = ctx.scales
            taken = {name: float(round(amount * scales[name])) for name, amount in want.items()}
        held = ctx.uncommitted.get(h, _NOTHING)
        units = self.books.units
        for name, amount in taken.items():
            if not units(name)[h] - held.get(name, 0.0) >= amount:
                return None
        if ctx.limit_ids and self.limits.host_violation(ctx.limit_ids, h, taken, held) is not None:
            return None
        slots = int(want.pop(SLOTS, 0))
        claim = Claim(h, slots, tuple(want.items()), ctx.term)
        ctx.debit_units(h, taken)
        return claim

    @staticmethod
    def _builtin_want(ctx: AllocContext) -> tuple[dict[str, float], dict[str, float]]:
        """The want the two builtin plugins' fan-out builds (exactly one of them adds the
        bucket's standard want), in the resources' units and in resolution units."""
        assert ctx.primary is not None
        wants, n, first = ctx.primary.wants, ctx.nslots, ctx.first
        want = {SLOTS: float(n)}
        taken = {SLOTS: float(n)}
        for name, amount in wants.for_bucket(n, first):
            want[name] = want.get(name, 0.0) + amount
        for name, amount in wants.units_for_bucket(n, first):
            taken[name] = taken.get(name, 0.0) + amount
        return want, taken

    def _fill(
        self, pp: PreparedPrimary, ctx: AllocContext, finder: HostFinder
    ) -> list[Part] | None:
        """The fill plan (design §3): each host in order takes what it can of the rest.

        The first claim carries the per-job amounts, so it goes on the first host (in
        order) that can take them with at least one task *and* leaves enough room on the
        others for the rest; the others follow in order. Whether the plan succeeds then
        depends only on what each host can take, not on the order (so it can only stop
        succeeding as availability falls: what the unsatisfiable cache relies on).
        """
        hosts = HostIterator(finder, 1, pp.wants.units_for_bucket(1, False), self.token)
        self.stats.iterators += 1
        try:
            if pp.wants.per_job_units:
                order = self._first_then_rest(pp, ctx, list(hosts))
                if order is None:
                    return None
                return self._fill_in(pp, ctx, iter(order))
            return self._fill_in(pp, ctx, hosts)
        finally:
            hosts.close()

    def _first_then_rest(
        self, pp: PreparedPrimary, ctx: AllocContext, candidates: list[int]
    ) -> list[int] | None:
        """The fill order with per-job amounts: the first host that can carry them and
        still complete the plan, then every other candidate in order (None: none can)."""
        rooms = [self._room(h, pp, ctx, first=False) for h in candidates]
        total = sum(rooms)
        for i, h in enumerate(candidates):
            if rooms[i] < 1:
                continue
            own = self._room(h, pp, ctx, first=True)
            if own >= 1 and total - rooms[i] + own >= pp.tasks:
                return [h, *candidates[:i], *candidates[i + 1 :]]
        return None

    def _fill_in(
        self, pp: PreparedPrimary, ctx: AllocContext, hosts: Iterator[int]
    ) -> list[Part] | None:
        remaining = pp.tasks
        claimed: list[Part] = []
        for h in hosts:
            ctx.first = not claimed
            take = min(remaining, self._room(h, pp, ctx, ctx.first))
            if take < 1:
                continue
            ctx.nhosts, ctx.nslots = 1, take
            claim = self.try_host(h, ctx)
            if claim is None:
                continue
            claimed.append(claim)
            remaining -= take
            if remaining == 0:
                return claimed
        ctx.credit(claimed)
        return None

    def _room(self, h: int, pp: PreparedPrimary, ctx: AllocContext, first: bool) -> int:
        """How many tasks host ``h`` can still take for this attempt (0 if none), with
        the per-job amounts if ``first``; exact (units)."""
        held = ctx.uncommitted.get(h, _NOTHING)
        units = self.books.units
        room = _whole(units(SLOTS)[h] - held.get(SLOTS, 0.0))
        ids = ctx.limit_ids
        limits = self.limits
        if ids:
            if not held and limits.host_headroom(ids, h, _JOBS) < 1:
                return 0  # a per-host jobs limit: this job would be one too many here
            room = min(room, _whole(limits.host_headroom(ids, h, SLOTS) - held.get(SLOTS, 0.0)))
        wants = pp.wants
        fixed = dict(wants.per_host_units)
        if first:
            for name, amount in wants.per_job_units:
                fixed[name] = fixed.get(name, 0.0) + amount
        per_task = dict(wants.per_task_units)
        for name in (*per_task, *(n for n in fixed if n not in per_task)):
            free = units(name)[h] - held.get(name, 0.0) - fixed.get(name, 0.0)
            if ids:
                free = min(
                    free,
                    limits.host_headroom(ids, h, name) - held.get(name, 0.0) - fixed.get(name, 0.0),
                )
            if not free >= 0:
                return 0
            if per_task.get(name, 0.0) > 0:
                room = min(room, _whole(free // per_task[name]))
        return max(room, 0)


def _whole(x: float) -> int:
    """A whole number of units or tasks as an int (NaN: none; infinite: unbounded)."""
    if math.isnan(x):
        return 0
    return int(x) if math.isfinite(x) else 1 << 62


@functools.lru_cache(maxsize=64)
def _view_options(options: AllocOptions, explain: bool | None) -> AllocOptions:
    """The options of an allocator on a view (see :meth:`Allocator.on_view`)."""
    return replace(options, cache=False, explain=options.explain if explain is None else explain)


def _shared_shortfall(terms: Sequence[PreparedPrimary], ctx: AllocContext) -> _Failed | None:
    """A shared resource the whole alternative wants more of than is left (job level)."""
    if len(terms) == 1:
        if not terms[0].wants.shared_units:
            return None  # the common case: nothing shared
        wanted = dict(terms[0].wants.shared_units)
    else:
        wanted = {}
        for pp in terms:
            for name, amount in pp.wants.shared_units:
                wanted[name] = wanted.get(name, 0.0) + amount
    for name, amount in wanted.items():
        left = ctx.books.shared_units(name)
        if left < amount:
            scale = ctx.scales[name]
            total = ctx.books.shared_total(name)
            return _Failed(
                PendInfo(
                    PendReason.SHARED_RESOURCE,
                    f"shared resource {name}: wants {amount / scale:g}, "
                    f"{max(left, 0) / scale:g} of {total:g} left",
                )
            )
    return None


class _Capacity:
    """Upper bounds on what a finder's hosts can take now, for the exact shortcuts.

    A plan of ``a`` buckets of size ``s1`` and ``b`` of size ``s2 <= s1`` needs ``a``
    distinct hosts taking ``s1`` and ``a + b`` taking ``s2``; the fill plan needs the
    total. Bounds come from the session's books, which this attempt's debits only lower,
    so a plan they reject would fail anyway.
    """

    __slots__ = ("_cap", "_taking", "largest", "total")

    def __init__(self, finder: HostFinder) -> None:
        self._cap = finder.task_capacity()
        self._taking: dict[int, int] = {}
        self.total = int(self._cap.sum())
        self.largest = int(self._cap.max()) if len(self._cap) else 0

    def hosts_taking(self, s: int) -> int:
        """How many hosts could take a bucket of ``s`` tasks."""
        n = self._taking.get(s)
        if n is None:
            n = self._taking[s] = int(np.count_nonzero(self._cap >= s))
        return n

    def admits(self, plan: Plan, tasks: int) -> bool:
        if plan.fill:
            return self.total >= tasks
        needed, previous = 0, 1 << 62
        for size, count in plan.size_runs():  # descending sizes (the contract): one pass
            if size >= previous:
                return self._admits_any_order(plan)
            previous = size
            needed += count  # buckets of at least this size need that many distinct hosts
            if self.hosts_taking(size) < needed:
                return False
        return True

    def _admits_any_order(self, plan: Plan) -> bool:
        needed = 0
        sizes: Counter[int] = Counter()
        for size, count in plan.size_runs():
            sizes[size] += count
        for size, count in sorted(sizes.items(), reverse=True):
            needed += count  # buckets of at least this size need that many distinct hosts
            if self.hosts_taking(size) < needed:
                return False
        return True
