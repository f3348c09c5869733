"""Dependencies and think time in a replay (issue 28): which workload jobs wait for which,
checked before the replay, and what each submission, start and end of a job releases.

Two relations between the jobs of a workload:

- **Feedback** (SWF fields 17 and 18, ``SimJob.preceding`` and ``think``): job S names a
  preceding job P and is *submitted* ``think`` seconds after P ends, however P ended,
  instead of at its logged submit time (the user submits the next job of a session once
  the last one is done). A P not in the workload (a prefix cut it off, it was skipped)
  leaves S at its logged time (:func:`check_flow` counts them, for one warning). A P that
  never runs leaves S never submitted.
- **Dependencies** (``SimJob.dependency``, Slurm's ``--dependency`` naming jobs of the
  workload): the job is submitted at its time and pends ``DEPENDENCY`` in the core until
  the dependency holds, as a state file's job does. ``after:X+M`` holds M minutes after X
  first starts; ``afterany`` (and ``afterburstbuffer``) once X ends; ``afterok`` (and
  ``aftercorr``) once X ends successfully; ``afternotok`` once X ends unsuccessfully
  (``SimJob.failed``, or killed at its time limit with ``--enforce-walltime``);
  ``singleton`` is the core's own gate (no other running job of the user and name).
  Items are joined by ``,`` (all) or ``?`` (any).

The replay knows how each job ends, so it decides every item but ``singleton`` itself and
tells the core only what is still to come (Slurm too removes a dependency once it is
satisfied): the core's job carries the items left, so that sessions and plans see it
waiting exactly as a state file's job would (:mod:`xce.core.gates`: planned from the
named job's estimated or planned end). A job whose dependency still waits for a job the
core does not hold (not submitted yet; or, for ``after:X+M``, X ended before the M
minutes passed) is given to the core *held*, since the core reads an id it does not hold
as a job that has ended. A ``?`` dependency shows the core only its items on jobs the
core holds, held only when it has none. A held job and a job waiting for a job without a
plan are both never planned.

A dependency that can never hold (``afterok`` on a job that failed, ``afternotok`` on one
that succeeded, any item on a job that never runs) is what Slurm leaves pending for ever
with reason ``DependencyNeverSatisfied`` (unless ``kill_invalid_depend``): a finite
replay records the job as never run with that reason and removes it from the core. A job
at a gate charges nothing and holds no strict queue, so removing it changes no decision.

Why the engine's exact session shortcuts stay exact: a gate opens only at an event of
the replay (an end, a start, the instant ``after:X+M`` holds: a *wake*), and every
change the replay makes to a pending job counts as freeing resources (a full session
follows). A job's dependency is looked at from its submission on; once it has held (or
the job started), it holds for good, through preemption and requeueing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

from xce.cluster.jobflow import Dependency, DependencyItem, DepKind
from xce.errors import InputError, clip
from xce.sim.model import SimJob

__all__ = ["Changes", "Flow", "FlowError", "View", "check_flow"]


class _Status(Enum):
    WAITS = "waits"
    HOLDS = "holds"
    NEVER = "never"


_ENDS = frozenset({DepKind.AFTERANY, DepKind.AFTERBURSTBUFFER})
_OK = frozenset({DepKind.AFTEROK, DepKind.AFTERCORR})


@dataclass(frozen=True, slots=True)
class View:
    """What the core is told of a pending job's dependency: the items still to come
    (None: none), and whether it is held (it names a job not submitted yet)."""

    dependency: Dependency | None
    hold: bool = False


_FREE = View(None)


@dataclass(slots=True)
class Changes:
    """What the replay must do after an event (values; the engine applies them)."""

    views: dict[str, View] = field(default_factory=dict)  # pending jobs to update
    doomed: dict[str, str] = field(default_factory=dict)  # never run: job -> why
    submits: list[tuple[float, str]] = field(default_factory=list)  # (when, job)
    wakes: list[tuple[float, str]] = field(default_factory=list)  # (when, job)

    def __bool__(self) -> bool:
        return bool(self.views or self.doomed or self.submits or self.wakes)


def check_flow(jobs: Sequence[SimJob]) -> tuple[Flow | None, list[str]]:
    """The workload's flow (None: no job waits for another), and its warnings. A
    dependency naming a job not in the workload, a preceding job that is the job itself
    or comes after it, and a cycle are :class:`InputError`\\ s at the job's file and
    line."""
    index = {job.id: i for i, job in enumerate(jobs)}
    missing = 0
    edges: dict[str, list[str]] = {}
    for i, job in enumerate(jobs):
        named = list(_named(job, index))
        if job.preceding is not None:
            if job.preceding not in index:
                missing += 1
            else:
                _check_preceding(job, i, jobs[index[job.preceding]], index[job.preceding])
                named.append(job.preceding)
        if named:
            edges[job.id] = named
    _check_cycles(jobs, index, edges)
    warnings = []
    if missing:
        warnings.append(
            f"feedback: {missing:,} job(s) name a preceding job (SWF field 17) that is not in "
            "the workload (cut off by --limit, skipped, or unknown): they keep their logged "
            "submit times"
        )
    waits = bool(edges) or any(job.dependency is not None for job in jobs)  # singleton
    return (Flow(jobs, index, edges) if waits else None), warnings


def _named(job: SimJob, index: dict[str, int]) -> Iterator[str]:
    """The workload jobs ``job``'s dependency names (each must be one)."""
    if job.dependency is None:
        return
    for other in job.dependency.jobs():
        if other == job.id:
            raise _error(job, f"its dependency {job.dependency.text!r} names the job itself")
        if other not in index:
            raise _error(
                job,
                f"its dependency {job.dependency.text!r} names job {clip(other)!r}, "
                "which is not in the workload",
            )
        yield other


def _check_preceding(job: SimJob, i: int, before: SimJob, at: int) -> None:
    if at == i:
        raise _error(job, "its preceding job (SWF field 17) is the job itself")
    if at > i:
        where = f" (line {before.line})" if before.line is not None else ""
        raise _error(
            job,
            f"its preceding job (SWF field 17) {clip(before.id)!r} comes after it{where}: "
            "a job can only follow one before it",
        )


def _check_cycles(
    jobs: Sequence[SimJob], index: dict[str, int], edges: dict[str, list[str]]
) -> None:
    """No job waits, through others, for itself (a depth-first walk without recursion)."""
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        path: list[str] = [start]
        on_path = {start}
        stack = [iter(edges.get(start, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                on_path.discard(path.pop())
            elif nxt in on_path:
                cycle = [*path[path.index(nxt) :], nxt]
                shown = " -> ".join(clip(j) for j in cycle[:8])
                more = " -> ..." if len(cycle) > 8 else ""
                raise _error(
                    jobs[index[nxt]], f"jobs wait for each other in a cycle: {shown}{more}"
                )
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(edges.get(nxt, ())))


class FlowError(InputError):
    """A job names another it cannot wait for; ``job`` is the job to blame."""

    job: SimJob | None = None


def _error(job: SimJob, what: str) -> FlowError:
    err = FlowError(f"workload: job {clip(job.id)!r}: {what}", source=job.source, line=job.line)
    err.job = job
    return err


class Flow:
    """What the jobs of one replay wait for, and what each event releases (module
    docstring). Told of every submission, start, end and job that never runs; answers
    with :class:`Changes` for the engine to apply."""

    def __init__(
        self, jobs: Sequence[SimJob], index: dict[str, int], edges: dict[str, list[str]]
    ) -> None:
        self._jobs = jobs
        self._index = index
        self._deps = {j.id: j.dependency for j in jobs if j.dependency is not None}
        self._named_by: dict[str, list[str]] = {}  # job -> the dependent jobs naming it
        self._successors: dict[str, list[str]] = {}  # job -> the jobs it feeds back to
        for job in jobs:
            if job.dependency is not None:
                for other in job.dependency.jobs():
                    self._named_by.setdefault(other, []).append(job.id)
            if job.preceding is not None and job.id in edges and job.preceding in index:
                self._successors.setdefault(job.preceding, []).append(job.id)
        self._fed = {s for succ in self._successors.values() for s in succ}
        self._present: set[str] = set()  # jobs the core holds (pending or running)
        self._started: dict[str, float] = {}  # job -> its first start
        self._ended: dict[str, bool] = {}  # job -> whether it ended successfully
        self._never: set[str] = set()  # jobs that never run
        self._waiting: dict[str, View] = {}  # pending jobs whose dependency is to come

    # --- what the engine asks ------------------------------------------------------------
    def deferred(self, job_id: str) -> bool:
        """Whether ``job_id`` is submitted by feedback (not at its logged time)."""
        return job_id in self._fed

    def held_why(self, job_id: str) -> str | None:
        """Why a pending job the core holds waits (for jobs not submitted yet), if it does."""
        view = self._waiting.get(job_id)
        if view is None or not view.hold or view.dependency is None:
            return None
        future = [j for j in view.dependency.jobs() if j not in self._present]
        return f"waits for {_jobs(future)}, never submitted"

    # --- what happens --------------------------------------------------------------------
    def submitted(self, job_id: str, now: float) -> tuple[View | str, Changes]:
        """``job_id`` joins the core: what it is told of the job's dependency (or why
        the job can never run: it is then not submitted), and what changes for the jobs
        waiting for it (their views now name a job the core knows)."""
        changes = Changes()
        first = job_id not in self._present  # (not a job requeued after a preemption)
        self._present.add(job_id)
        own: View | str = _FREE
        dep = self._deps.get(job_id)
        if dep is not None and job_id not in self._started:
            status, left = self._evaluate(dep, now)
            if status is _Status.NEVER:
                why = self._never_why(dep, now)
                self._doom(job_id, why, now, changes, record=False)
                return why, changes
            own = self._view(dep, left)
            if own.dependency is not None:
                self._waiting[job_id] = own
        if first:
            for waiting in self._named_by.get(job_id, ()):
                self._recheck(waiting, now, changes)
        return own, changes

    def started(self, job_id: str, now: float) -> Changes:
        """``job_id`` started: its own dependency held (for good), and the jobs waiting
        for it to start are looked at again when each ``after`` item holds."""
        changes = Changes()
        self._waiting.pop(job_id, None)
        if job_id in self._started:
            return changes
        self._started[job_id] = now
        for waiting in self._named_by.get(job_id, ()):
            for item in self._deps[waiting].items:
                if item.kind is DepKind.AFTER and item.job == job_id:
                    changes.wakes.append((now + item.delay, waiting))
        return changes

    def ended(self, job_id: str, ok: bool, now: float) -> Changes:
        """``job_id`` ended (successfully or not, for good)."""
        changes = Changes()
        self._ended[job_id] = ok
        self._present.discard(job_id)
        for waiting in self._named_by.get(job_id, ()):
            self._recheck(waiting, now, changes)
        for successor in self._successors.get(job_id, ()):
            changes.submits.append((now + self._jobs[self._index[successor]].think, successor))
        return changes

    def never(self, job_id: str, now: float) -> Changes:
        """``job_id`` never runs (unrunnable, or still pending when the run ended)."""
        changes = Changes()
        self._release_never(job_id, now, changes)
        return changes

    def wake(self, job_id: str, now: float) -> Changes:
        """An ``after`` item of ``job_id`` holds from ``now``."""
        changes = Changes()
        self._recheck(job_id, now, changes)
        return changes

    # --- inside ----------------------------------------------------------------------------
    def _recheck(self, job_id: str, now: float, changes: Changes) -> None:
        """A pending job's dependency looked at again: a new view, or never (and then
        what waits for it too)."""
        if self._recheck_one(job_id, now, changes):
            self._release_never(job_id, now, changes)

    def _recheck_one(self, job_id: str, now: float, changes: Changes) -> bool:
        """:meth:`_recheck` of one job, without passing never on: whether it is doomed."""
        view = self._waiting.get(job_id)
        if view is None:
            return False  # not submitted yet (looked at then), started, or its dependency held
        dep = self._deps[job_id]
        status, left = self._evaluate(dep, now)
        if status is _Status.NEVER:
            del self._waiting[job_id]
            changes.doomed[job_id] = self._never_why(dep, now)
            return True
        new = self._view(dep, left)
        if new != view:
            if new.dependency is None:
                del self._waiting[job_id]
            else:
                self._waiting[job_id] = new
            changes.views[job_id] = new
        return False

    def _doom(self, job_id: str, why: str, now: float, changes: Changes, *, record: bool) -> None:
        """``job_id`` can never run: recorded (if ``record``), and what waits for it told."""
        if record:
            changes.doomed[job_id] = why
        self._release_never(job_id, now, changes)

    def _release_never(self, job_id: str, now: float, changes: Changes) -> None:
        """``job_id`` never runs: the jobs waiting for it looked at again (an item on it
        never holds), the jobs it feeds back to never submitted; and so on down the
        chains (a worklist: a user's session may chain thousands of jobs)."""
        work = [job_id]
        while work:
            job = work.pop()
            if job in self._never:
                continue
            self._never.add(job)
            self._present.discard(job)
            self._waiting.pop(job, None)
            for waiting in self._named_by.get(job, ()):
                if self._recheck_one(waiting, now, changes):
                    work.append(waiting)
            for successor in self._successors.get(job, ()):
                why = f"never submitted: its preceding job {clip(job)} (SWF field 17) never ran"
                changes.doomed[successor] = why
                work.append(successor)

    def _evaluate(self, dep: Dependency, now: float) -> tuple[_Status, list[DependencyItem]]:
        """Whether ``dep`` holds, waits or never can, and the items left for the core
        (``singleton`` always: the core decides it)."""
        left: list[DependencyItem] = []
        seen: list[_Status] = []
        for item in dep.items:
            if item.kind is DepKind.SINGLETON:
                left.append(item)
                continue
            status = self._item(item, now)
            seen.append(status)
            if status is _Status.WAITS:
                left.append(item)
        if dep.any_of:
            if _Status.HOLDS in seen:
                return _Status.HOLDS, []
            return (_Status.WAITS if left else _Status.NEVER), left
        if _Status.NEVER in seen:
            return _Status.NEVER, []
        return (_Status.WAITS if left else _Status.HOLDS), left

    def _item(self, item: DependencyItem, now: float) -> _Status:
        job = item.job
        assert job is not None
        if item.kind is DepKind.AFTER:
            began = self._started.get(job)
            if began is not None:
                return _Status.HOLDS if now >= began + item.delay else _Status.WAITS
            return _Status.NEVER if job in self._never else _Status.WAITS
        ok = self._ended.get(job)
        if ok is None:
            return _Status.NEVER if job in self._never else _Status.WAITS
        if item.kind in _ENDS:
            return _Status.HOLDS
        wanted = item.kind in _OK  # afterok, aftercorr: success; afternotok: failure
        return _Status.HOLDS if ok == wanted else _Status.NEVER

    def _view(self, dep: Dependency, left: list[DependencyItem]) -> View:
        if not left:
            return _FREE
        future = [i for i in left if i.job is not None and i.job not in self._present]
        if dep.any_of:
            known = [i for i in left if i.job is None or i.job in self._present]
            if known:
                return View(_dependency(known, any_of=True))
            return View(_dependency(left, any_of=True), hold=True)
        return View(_dependency(left, any_of=False), hold=bool(future))

    def _never_why(self, dep: Dependency, now: float) -> str:
        """Why ``dep`` can never hold: the first item that cannot (for ``?``: all)."""
        parts = [
            f"{_item_text(item)}: {self._cannot(item)}"
            for item in dep.items
            if item.kind is not DepKind.SINGLETON and self._item(item, now) is _Status.NEVER
        ]
        shown = parts if dep.any_of else parts[:1]
        return (
            "never started: its dependency can never be satisfied (DependencyNeverSatisfied: "
            + "; ".join(shown)
            + ")"
        )

    def _cannot(self, item: DependencyItem) -> str:
        assert item.job is not None
        ok = self._ended.get(item.job)
        if ok is None:
            began = item.job in self._started
            verb = "ended" if began else "started" if item.kind is DepKind.AFTER else "ran"
            return f"job {clip(item.job)} never {verb}"
        return f"job {clip(item.job)} ended {'successfully' if ok else 'unsuccessfully'}"


def _item_text(item: DependencyItem) -> str:
    if item.kind is DepKind.SINGLETON:
        return "singleton"
    minutes = f"+{round(item.delay / 60)}" if item.delay else ""
    return f"{item.kind.value}:{item.job}{minutes}"


def _dependency(items: list[DependencyItem], *, any_of: bool) -> Dependency:
    """The items left, as a dependency (its text as Slurm writes what is left)."""
    text = ("?" if any_of else ",").join(_item_text(i) for i in items)
    return Dependency(tuple(items), any_of, text)


def _jobs(ids: list[str]) -> str:
    return ("job " if len(ids) == 1 else "jobs ") + ", ".join(clip(j) for j in ids)
