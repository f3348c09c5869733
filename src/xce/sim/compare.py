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

**Fairness between users** (:func:`user_fairness`) is read from a replay's
``metrics.json`` object (its ``by_user`` means), not added to it: Jain's index over
the users' mean bounded slowdowns, and the user who fares worst.
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
from xce.sim.engine import SimOptions, SimResult, Simulation
from xce.sim.metrics import metrics
from xce.sim.model import SimJob
from xce.sim.swf import SwfTrace
from xce.sim.verify import verify

__all__ = [
    "COLUMNS",
    "FAIRNESS_COLUMNS",
    "Compared",
    "Fairness",
    "Policy",
    "compare",
    "parse_policy",
    "user_fairness",
]

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
class Fairness:
    """How evenly a replay treats its users (:func:`user_fairness`)."""

    users: int  # users with at least one job that ran
    jain: float | None  # Jain's index over their mean bounded slowdowns, 1/users .. 1
    worst_user: str | None  # the user of the highest mean bounded slowdown
    worst_mean_bsld: float | None

    def json(self) -> dict[str, Any]:
        return {
            "users": self.users,
            "jain_mean_bsld": self.jain,
            "worst_user": self.worst_user,
            "worst_user_mean_bsld": self.worst_mean_bsld,
        }


def user_fairness(metrics: dict[str, Any]) -> Fairness:
    """Jain's index ``(sum x)^2 / (n sum x^2)`` over ``x``, each user's mean bounded
    slowdown (``metrics["by_user"]``, users none of whose jobs ran left out): 1 when
    every user's jobs are slowed alike, 1/n when one user bears it all. Slowdown, not
    wait, so that users of short jobs and of long ones weigh alike."""
    means = {
        str(user): float(group["mean_bsld"])
        for user, group in metrics.get("by_user", {}).items()
        if group.get("mean_bsld") is not None
    }
    if not means:
        return Fairness(0, None, None, None)
    values = list(means.values())
    jain = sum(values) ** 2 / (len(values) * sum(v * v for v in values))
    worst = max(sorted(means), key=means.__getitem__)  # ties: the first name
    return Fairness(len(values), jain, worst, means[worst])


@dataclass(frozen=True, slots=True)
class Compared:
    """A policy, its replay, its metrics (the ``metrics.json`` object) and how fair
    the replay is to users (read from the metrics)."""

    policy: Policy
    result: SimResult
    metrics: dict[str, Any]

    @property
    def fairness(self) -> Fairness:
        return user_fairness(self.metrics)


COLUMNS: tuple[tuple[str, str], ...] = (
    ("mean_wait_s", "mean\nwait"),
    ("median_wait_s", "median\nwait"),
    ("p95_wait_s", "p95\nwait"),
    ("max_wait_s", "max\nwait"),
    ("mean_bsld", "mean\nbsld"),
    ("utilization", "utilis-\nation"),
    ("makespan_s", "make-\nspan"),
    ("preemptions", "pre-\nempted"),
    ("backfilled", "back-\nfilled"),
)
"""(metrics.json key, column heading) of the comparison table."""

FAIRNESS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("jain_mean_bsld", "user\nfair-\nness"),
    ("worst_user_mean_bsld", "worst\nuser\nbsld"),
)
"""(:meth:`Fairness.json` key, column heading): the table's columns after COLUMNS."""


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
    if head.partition(":")[0] not in pickers.names():
        known = ", ".join(sorted(pickers.names()))
        raise InputError(f"--policy {text!r}: unknown picker {head!r} (known: {known})")
    try:
        pickers.get(head)  # PICKER:OPTION: the option checked now
    except InputError as err:
        raise InputError(f"--policy {text!r}: {err}") from None
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
        elif mod in backfills.names():
            raise InputError(
                f"--policy {text!r}: two backfill policies ({backfill} and {mod}): give one"
            )
        elif mod in preemptors.names():
            raise InputError(f"--policy {text!r}: two preemptors ({preemptor} and {mod}): give one")
        else:
            known = ", ".join([NOPREEMPT, *sorted(preemptors.names()), *backfills.names()])
            raise InputError(f"--policy {text!r}: unknown modifier {mod!r} (known: {known})")
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
