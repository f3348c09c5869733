"""Pending jobs whose dependencies wait for each other in a cycle: none of them can ever
start (Slurm refuses such a dependency at submission, "Circular dependency"), so a state
file holding one is bad input.

A pending job *may start* when its dependency can hold: every job an all-of (``,``)
dependency names may start, or one that an any-of (``?``) dependency names may; a job
that is not pending (running, ended, unknown to the state) counts as one that may. The
jobs that may start are found as a fixpoint; those left over wait, through one another,
for a cycle. Only the ids matter here, not the kinds (``after``, ``afterok`` ...): each
needs the other job to start at least. An item naming an array record's task
(``412_3``), or every task (``412_*``), waits for the record while it is pending.
"""

from __future__ import annotations

from collections.abc import Sequence

from xce.cluster.jobflow import SyntaxProblem, parse_dependency
from xce.errors import clip

__all__ = ["dependency_cycle"]

_SHOWN = 8  # jobs of a cycle named in the message


def dependency_cycle(jobs: Sequence[tuple[str, str | None]]) -> tuple[int, str] | None:
    """The first of ``jobs`` (``(id, dependency text)`` of each pending job, in file
    order) on a cycle of dependencies none of whose jobs can start, and the message
    naming the cycle; None when every dependency can hold. Texts that do not parse are
    left to the syntax check (no edge)."""
    index = {job_id: i for i, (job_id, _) in enumerate(jobs)}
    waits: dict[int, tuple[list[int], bool]] = {}  # job -> (pending jobs named, any-of)
    for i, (_, text) in enumerate(jobs):
        if text is None:
            continue
        try:
            dep = parse_dependency(text)
        except SyntaxProblem:
            continue
        named = [index[t] for t in (_target(j, index) for j in dep.jobs()) if t is not None]
        if any(item.job is None for item in dep.items) and dep.any_of:
            continue  # any-of with singleton: it may hold whatever the others do
        if len(named) < len(dep.jobs()) and dep.any_of:
            continue  # an alternative that is not pending may hold
        if named:
            waits[i] = (named, dep.any_of)
    stuck = _stuck(waits)
    if not stuck:
        return None
    first = min(stuck)
    cycle = _cycle_from(first, waits, stuck)
    on = min(cycle)  # report at the first job of the cycle in file order
    at = cycle.index(on)
    ring = cycle[at:] + cycle[:at] + [on]
    if len(ring) == 2:
        return on, f"its dependency names the job itself ({clip(jobs[on][0])} would wait for ever)"
    shown = " -> ".join(clip(jobs[k][0]) for k in ring[:_SHOWN])
    more = " -> ..." if len(ring) > _SHOWN else ""
    return on, f"jobs wait for each other in a cycle: {shown}{more}"


def _target(name: str, index: dict[str, int]) -> str | None:
    """The pending job ``name`` waits for (None: not a pending job's)."""
    for candidate in (name, name.removesuffix("_*"), name.rpartition("_")[0]):
        if candidate and candidate in index:
            return candidate
    return None


def _stuck(waits: dict[int, tuple[list[int], bool]]) -> set[int]:
    """The jobs of ``waits`` that can never start (the complement of the fixpoint of
    those that may)."""
    waiting_on: dict[int, list[int]] = {}
    left: dict[int, int] = {}  # how many named jobs must still be found to start
    for job, (named, any_of) in waits.items():
        left[job] = 1 if any_of else len(named)
        for other in named:
            waiting_on.setdefault(other, []).append(job)
    free = [j for j in waiting_on if j not in waits]  # may start: no dependency edge
    may: set[int] = set(free)
    while free:
        job = free.pop()
        for dependent in waiting_on.get(job, ()):
            if dependent in may:
                continue
            left[dependent] -= 1
            if left[dependent] <= 0:
                may.add(dependent)
                free.append(dependent)
    return {j for j in waits if j not in may}


def _cycle_from(job: int, waits: dict[int, tuple[list[int], bool]], stuck: set[int]) -> list[int]:
    """A cycle among the stuck jobs reached from ``job``, in the order they wait."""
    path: list[int] = []
    seen: dict[int, int] = {}
    while job not in seen:
        seen[job] = len(path)
        path.append(job)
        job = next(j for j in waits[job][0] if j in stuck)
    return path[seen[job] :]
