"""Several policies on one workload and cluster (``xce compare``, issue 14).

A policy is written ``PICKER[+MODIFIER...]``: a job picker by name (``fcfs``,
``strict``, ``fairshare`` or a plugin's), then modifiers, each one of:

- a preemptor's name (``lowest_priority_first`` or a plugin's): the victim-set iterator
  of the queues that list ``preempts``;
- ``nopreempt``: the queues' ``preempts`` are ignored (no preemption at all);
- a backfill policy's name (``none``, ``easy``, ``conservative`` or a plugin's): the
  backfill policy of the queues that name none (``fcfs+easy``).

Each policy is one replay of the same jobs on the same cluster, run exactly as
``xce simulate --picker PICKER [--backfill POLICY]`` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from xce.backfill import BackfillRegistry, default_backfills
from xce.cluster import ClusterState
from xce.core.pickers import PickerRegistry
from xce.errors import InputError
from xce.preempt import PreemptorRegistry
from xce.sim.engine import SimOptions, SimResult, Simulation, verify
from xce.sim.metrics import metrics
from xce.sim.model import SimJob
from xce.sim.swf import SwfTrace

__all__ = ["COLUMNS", "Compared", "Policy", "compare", "parse_policy"]

NOPREEMPT = "nopreempt"


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy of a comparison: its text, picker, preemptor, and whether queues'
    ``preempts`` count."""

    text: str
    picker: str
    preemptor: str | None = None
    preempt: bool = True
    backfill: str | None = None


@dataclass(frozen=True, slots=True)
class Compared:
    """A policy, its replay and its metrics (the ``metrics.json`` object)."""

    policy: Policy
    result: SimResult
    metrics: dict[str, Any]


COLUMNS: tuple[tuple[str, str], ...] = (
    ("mean_wait_s", "mean\nwait"),
    ("median_wait_s", "median\nwait"),
    ("p95_wait_s", "p95\nwait"),
    ("mean_bsld", "mean\nbsld"),
    ("utilization", "utilis-\nation"),
    ("makespan_s", "make-\nspan"),
    ("preemptions", "pre-\nempted"),
    ("backfilled", "back-\nfilled"),
)
"""(metrics.json key, column heading) of the comparison table."""


def parse_policy(
    text: str,
    pickers: PickerRegistry,
    preemptors: PreemptorRegistry,
    backfills: BackfillRegistry | None = None,
) -> Policy:
    """``PICKER[+MODIFIER...]`` (module docstring); anything unknown is an InputError
    naming ``--policy`` and what is known."""
    backfills = backfills if backfills is not None else default_backfills()
    head, *mods = text.split("+")
    if head not in pickers.names():
        known = ", ".join(sorted(pickers.names()))
        raise InputError(f"--policy {text!r}: unknown picker {head!r} (known: {known})")
    preemptor: str | None = None
    backfill: str | None = None
    preempt = True
    for mod in mods:
        if mod == NOPREEMPT:
            preempt = False
        elif mod in preemptors.names() and preemptor is None:
            preemptor = mod
        elif mod in backfills.names() and backfill is None:
            backfill = mod
        else:
            known = ", ".join([NOPREEMPT, *sorted(preemptors.names()), *backfills.names()])
            raise InputError(
                f"--policy {text!r}: unknown or repeated modifier {mod!r} (known: {known})"
            )
    if not preempt and preemptor is not None:
        raise InputError(f"--policy {text!r}: {NOPREEMPT} and a preemptor contradict")
    return Policy(text, head, preemptor, preempt, backfill)


def compare(
    cluster: ClusterState,
    jobs: Sequence[SimJob],
    policies: Sequence[Policy],
    options: SimOptions,
    trace: SwfTrace | None = None,
) -> list[Compared]:
    """Replay ``jobs`` on ``cluster`` once per policy (each run checked by ``verify``)."""
    out = []
    for policy in policies:
        state = cluster if policy.preempt else _without_preemption(cluster)
        run = replace(
            options, picker=policy.picker, preemptor=policy.preemptor, backfill=policy.backfill
        )
        result = Simulation(state, jobs, run).run()
        verify(result, jobs)
        out.append(Compared(policy, result, {"policy": policy.text, **metrics(result, trace)}))
    return out


def _without_preemption(state: ClusterState) -> ClusterState:
    queues = {n: replace(q, preempts=()) for n, q in state.queues.items()}
    return replace(state, queues=queues)
