"""Slurm's choice of nodes (select/cons_tres) and its will-run test, for the ``slurm``
backfill policy (docs/backfill.md, "slurm").

Both work on plain numbers so that they can be tested by hand: the nodes in Slurm's
index order, each with how many of the job's tasks (CPUs) it could take now.

- :func:`choose_nodes`: cons_tres ``choose_nodes``/``_eval_nodes`` (cons_tres/
  job_test.c:3134 and 410) for jobs without required nodes, topology or node weights:
  the usable nodes form sets of consecutive indices; the best-fit set is taken first
  (the first set big enough, then the tightest; while none is, the biggest); when one
  node is left to find, the smallest big-enough node of the set (the first on ties);
  else nodes in index order. When that fails, nodes with the fewest resources are
  dropped, one count at a time, and it is tried again (the knapsack retry).
- :func:`will_run`: cons_common ``_will_run_test`` (cons_common/job_test.c:1882-2070):
  does the job fit now; else remove running jobs in end-time order, in batches, and try
  after each batch. A batch ends only when the job *peeked* right after a removal ends
  later than the first removed job's end (rounded up to 30 s) plus a window that
  doubles after each batch; jobs on none of the candidate nodes are skipped without
  that check. So a batch can run on, past jobs elsewhere, to remove the next job on
  the candidate nodes whatever its end (Slurm's quirk, kept: it is why Slurm plans a
  job at that later end). The start is the end of the last job removed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Ending", "Shape", "choose_nodes", "will_run"]

T = TypeVar("T")
_WINDOW = 30.0  # s: Slurm's first batching window (time_window)
_BATCH_CAP = 200  # removals in one batch after which Slurm skips that batch's test


@dataclass(frozen=True, slots=True)
class Shape:
    """What the chooser needs of a job: ``tasks`` (CPUs), and between ``min_nodes``
    and ``max_nodes`` nodes (Slurm caps the maximum at the task count)."""

    tasks: int
    min_nodes: int = 1
    max_nodes: int | None = None

    @property
    def most_nodes(self) -> int:
        most = self.tasks if self.max_nodes is None else min(self.max_nodes, self.tasks)
        return max(most, self.min_nodes)


def _sets(caps: Sequence[int]) -> list[list[int]]:
    """Runs of consecutive positions whose capacity is positive."""
    out: list[list[int]] = []
    run: list[int] = []
    for i, cap in enumerate(caps):
        if cap > 0:
            run.append(i)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return out


def _best_set(sets: list[list[int]], caps: Sequence[int], cpus: int, nodes: int) -> int:
    """The index of the set ``_eval_nodes`` takes from next (-1: none has a node)."""
    best, best_cpus, best_enough = -1, 0, False
    for i, nodes_of in enumerate(sets):
        if not nodes_of:
            continue
        total = sum(caps[n] for n in nodes_of)
        enough = total >= cpus and len(nodes_of) >= nodes
        if (
            best < 0
            or (enough and not best_enough)
            or (enough and total < best_cpus)
            or (not enough and not best_enough and total > best_cpus)
        ):
            best, best_cpus, best_enough = i, total, enough
    return best


def _eval_nodes(shape: Shape, caps: list[int]) -> list[int] | None:
    """One pass of ``_eval_nodes`` over ``caps`` (changed: best-fit zeroes the rest of
    its set, as Slurm does); the chosen positions, or None."""
    sets = _sets(caps)
    if sum(len(s) for s in sets) < shape.min_nodes:
        return None
    cpus, nodes, most = shape.tasks, shape.min_nodes, shape.most_nodes
    chosen: list[int] = []
    while sets and most > 0:
        k = _best_set(sets, caps, cpus, nodes)
        if k < 0:
            break
        members = sets[k]
        if nodes <= 1:
            fit = [n for n in members if caps[n] >= cpus]
            if fit:
                best = min(fit, key=lambda n: caps[n])  # the first of the smallest
                for n in members:
                    if n != best:
                        caps[n] = 0
        for n in members:
            if most == 0 or (nodes <= 0 and cpus <= 0):
                break
            if caps[n] <= 0 or (most == 1 and caps[n] < cpus):
                continue
            chosen.append(n)
            cpus -= caps[n]
            nodes -= 1
            most -= 1
        if nodes <= 0 and cpus <= 0:
            return chosen
        sets[k] = []
    if cpus <= 0 and nodes <= 0:
        return chosen
    return None


def choose_nodes(shape: Shape, caps: Sequence[int], counts: Sequence[int]) -> list[int] | None:
    """The positions (index order) cons_tres gives a job: ``caps[i]`` tasks fit on node
    ``i`` (0: unusable or not a candidate), ``counts[i]`` is its resource count for the
    knapsack retry (CPUs plus GPUs). None: the job does not fit."""
    first = _eval_nodes(shape, list(caps))
    if first is not None:
        return first
    usable = [i for i, c in enumerate(caps) if c > 0]
    left = len(usable)
    if left <= shape.min_nodes:
        return None
    kept = list(caps)
    most = max(counts, default=0)
    for count in range(1, most):
        changed = False
        for i in usable:
            if kept[i] > 0 and 0 < counts[i] <= count:
                kept[i] = 0
                changed = True
                left -= 1
                if left <= shape.min_nodes:
                    break
        if not changed and count != 1:
            continue
        found = _eval_nodes(shape, list(kept))
        if found is not None:
            return found
        if left <= shape.min_nodes:
            break
    return None


@dataclass(frozen=True, slots=True)
class Ending(Generic[T]):
    """A running job as the will-run test sees it: when it ends, the nodes it is on
    (a bit set) and what the caller keeps to give it back (``item``)."""

    end: float
    nodes: int
    item: T


def will_run(
    candidates: int,
    running: Sequence[Ending[T]],
    fits: Callable[[Sequence[T]], bool],
) -> tuple[float | None, list[T]] | None:
    """When the job fits on ``candidates``: ``(None, [])`` now; ``(end, removed)`` after
    the running jobs ``removed`` have ended, ``end`` being the last one's end; None:
    not even with every running job gone. ``running`` must be sorted by end (stable);
    ``fits(removed)`` says whether the job fits once ``removed`` have given back what
    they hold (see the module for the batches)."""
    if fits(()):
        return None, []
    removed: list[T] = []
    base: float | None = None
    window = _WINDOW
    i, n = 0, len(running)
    more = True
    while more:
        last: Ending[T] | None = None
        peek: Ending[T] | None = None
        in_batch = 0
        skip_test = False
        while True:
            if i >= n:
                more = False
                break
            job = running[i]
            i += 1
            if not job.nodes & candidates:
                continue  # on none of the nodes: skipped, with no window check
            if base is None:
                base = job.end + (_WINDOW - job.end % _WINDOW)
            last = job
            removed.append(job.item)
            if i >= n:
                more, peek = False, None
                break
            peek = running[i]  # the next job of the whole list, on any nodes
            if peek.end > base + window:
                break
            if in_batch > _BATCH_CAP:
                skip_test = True
                break
            in_batch += 1
        if last is None:
            return None
        if skip_test:
            continue
        assert base is not None
        window *= 2
        while peek is not None and peek.end > base + window:
            window *= 2
        if fits(removed):
            return last.end, removed
    return None
