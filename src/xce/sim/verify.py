"""The end-of-run invariants of a replay (:func:`verify`): every job ended exactly once
or was reported unrunnable, and no host ever held more slots than it has. Read from the
records' columns (:class:`~xce.sim.model.RecordTable`), no object made per job, with one
count per host for the capacity sweep. Both replays (the general path and the plain
replay) are checked by it, in the tests and by ``xce simulate``.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from xce.errors import InternalError, clip
from xce.sim.model import RecordTable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xce.sim.model import SimJob
    from xce.sim.result import SimResult

__all__ = ["verify"]

_SWEEP_CHUNK = 8_192  # events of the end-of-run capacity sweep turned into ints at once


def verify(result: SimResult, jobs: Sequence[SimJob]) -> None:
    """The end-of-run invariants; raises :class:`InternalError` on a violation.

    Every job ended exactly once (a start and an end, end >= start >= submit) or was
    reported unrunnable; at no time did a host hold more slots than it has. Read from
    the records' columns (:class:`~xce.sim.model.RecordTable`): no record is made per job.
    """
    names = result.host_names or list(result.host_capacity)
    try:
        table = RecordTable.of(result.records, names)
    except KeyError as err:
        raise InternalError(f"a job ran on unknown host {err}") from None
    # a table kept over the workload's own list has one record per job by construction
    if table.jobs is not jobs:
        ids = [j.id for j in table.jobs]
        if sorted(ids) != sorted(j.id for j in jobs) or len(set(ids)) != len(ids):
            raise InternalError("the records do not match the workload one to one")
    n = len(table)
    reported = np.zeros(n, dtype=np.bool_)
    reported[list(table.unrunnable())] = True
    start, end = table.start, table.end
    submit = np.array([j.submit for j in table.jobs], dtype=np.float64)
    started = ~np.isnan(start)
    with np.errstate(invalid="ignore"):
        once = started & ~np.isnan(end) & (submit <= start) & (start <= end)
    ran = np.flatnonzero(~reported & once)
    wrong = np.zeros(n, dtype=np.bool_)
    wrong[ran] = ~_claims_add_up(table, ran)
    bad = (reported & started) | (~reported & ~once) | wrong
    if bad.any():
        i = int(np.argmax(bad))
        job = clip(table.jobs[i].id)
        if reported[i]:
            raise InternalError(f"job {job} was reported unrunnable but started")
        if not once[i]:
            first = None if np.isnan(start[i]) else float(start[i])
            last = None if np.isnan(end[i]) else float(end[i])
            raise InternalError(f"job {job} did not run exactly once: start {first}, end {last}")
        raise InternalError(f"job {job}: its hosts do not add up to its slots")
    _check_capacity(result, table, ran)


def _claims_add_up(table: RecordTable, ran: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """Per job of ``ran``: as many hosts as slot counts, and the counts add up to its
    slots (one count repeated, a column of strides 0, is not materialised)."""
    fine = np.zeros(len(ran), dtype=np.bool_)
    for k, i in enumerate(_ints(ran)):
        hosts, slots = table.hosts_of(i), table.host_slots[i]
        if hosts is None or slots is None or len(hosts) != len(slots):
            continue
        total = (
            int(slots[0]) * len(slots) if len(slots) and slots.strides == (0,) else int(slots.sum())
        )
        fine[k] = total == table.slots[i]
    return fine


def _check_capacity(result: SimResult, table: RecordTable, ran: npt.NDArray[np.intp]) -> None:
    """Sweep the jobs' starts and ends in time over a per-host count of held slots: at no
    start may a host hold more than it has. At one time, starts and ends follow the run's
    own order (``JobRecord.sequence``; a record without one ends before, and starts
    after, the others of its time; work running when the run began ends first). Memory
    stays at one count per host, whatever the number of claims."""
    index = {name: i for i, name in enumerate(result.host_capacity)}
    capacity = np.array(list(result.host_capacity.values()), dtype=np.float64) + 1e-9
    # claim c: the c-th job of ``ran``, then the work running when the run began
    jobs = _ints(ran)
    claimed: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]] = []
    try:
        for host, _, _, slots_held in result.base_load:
            claimed.append((np.array([index[host]], dtype=np.intp), np.array([slots_held])))
    except KeyError as err:
        raise InternalError(f"a job ran on unknown host {err}") from None
    base = [(b[1], b[2]) for b in result.base_load]
    starts = np.concatenate((table.start[ran], np.array([b[0] for b in base], dtype=np.float64)))
    ends = np.concatenate((table.end[ran], np.array([b[1] for b in base], dtype=np.float64)))
    k = len(starts)
    times = np.concatenate([starts, ends])
    late, early = 1 << 62, -1
    first, last = table.seq_start[ran], table.seq_end[ran]
    steps = np.concatenate(
        (
            np.where(first >= 0, first, late),
            np.full(len(base), early, dtype=np.int64),
            np.where(first >= 0, last, early),
            np.full(len(base), early, dtype=np.int64),
        )
    )
    order = np.lexsort((steps, times))  # by time, then the run's order
    held = np.zeros(len(capacity), dtype=np.int64)
    n_jobs = len(jobs)
    for part in range(0, len(order), _SWEEP_CHUNK):  # a few Python ints at a time
        for e in order[part : part + _SWEEP_CHUNK].tolist():
            c = e % k
            if c < n_jobs:
                i = jobs[c]
                run = table.run_of(i)
                if run is not None:  # consecutive hosts: slices, no index array
                    _sweep_run(held, capacity, run, table.host_slots[i], e >= k, result)
                    continue
                hosts, slots = table.hosts_of(i), table.host_slots[i]
                assert hosts is not None
                assert slots is not None
            else:
                hosts, slots = claimed[c - n_jobs]
            if e >= k:
                np.subtract.at(held, hosts, slots)
                continue
            np.add.at(held, hosts, slots)
            over = held[hosts] > capacity[hosts]
            if np.count_nonzero(over):
                h = int(hosts[int(np.flatnonzero(over)[0])])
                name = list(result.host_capacity)[h]
                raise InternalError(f"host {name} was over-allocated: {held[h]:g} slots")


def _sweep_run(
    held: npt.NDArray[np.int64],
    capacity: npt.NDArray[np.float64],
    run: tuple[int, int],
    slots: npt.NDArray[np.int64] | None,
    ending: bool,
    result: SimResult,
) -> None:
    """One start or end of the capacity sweep for a claim of consecutive hosts."""
    assert slots is not None
    first, count = run
    span = slice(first, first + count)
    if ending:
        held[span] -= slots
        return
    held[span] += slots
    over = held[span] > capacity[span]
    if np.count_nonzero(over):
        h = first + int(np.flatnonzero(over)[0])
        name = list(result.host_capacity)[h]
        raise InternalError(f"host {name} was over-allocated: {held[h]:g} slots")


def _ints(indices: npt.NDArray[np.intp]) -> array[int]:
    """Indices as a compact array of Python ints made on access (8 bytes each, where a
    list holds an object of 28 or more per index)."""
    out = array("q")
    out.frombytes(indices.astype(np.int64).tobytes())
    return out
