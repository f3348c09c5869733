"""Fluent builders for test clusters, shared by the whole suite.

    state = (
        ClusterBuilder()
        .host("h1", slots=4, mem=1000, type="X86_64", fast=True)
        .shared("lic", 4)
        .queue("high", priority=50)
        .job("j1", tasks=2, resreq="rusage[mem=100]", user="alice")
        .running("r1", on={"h1": 1}, rusage={"mem": 200})
        .build()
    )

``build()`` goes through the same loader as a state file (``state_from_dict``), so a
builder can only make states a file could describe; ``to_dict()`` gives that file.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Self

from xce.alloc import PendInfo, PendReason
from xce.cluster import ClusterState, RequirementCheck, state_from_dict

__all__ = ["ClusterBuilder", "reason_under_test"]

Scalar = str | bool | int | float


def _given(**fields: Any) -> dict[str, Any]:
    """Only the fields a test set, so the loader's defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}


class ClusterBuilder:
    """Accumulates a state document section by section; every method returns self."""

    def __init__(self) -> None:
        self._resources: dict[str, dict[str, str]] = {}
        self._hosts: list[dict[str, Any]] = []
        self._shared: dict[str, dict[str, float]] = {}
        self._queues: dict[str, dict[str, Any]] = {}
        self._limits: list[dict[str, Any]] = []
        self._running: list[dict[str, Any]] = []
        self._jobs: list[dict[str, Any]] = []
        self._reservations: list[dict[str, Any]] = []
        self._top: dict[str, Any] = {}  # now, picker, backfill

    def resource(self, name: str, kind: str, reservation: str | None = None) -> Self:
        """Declare a resource's kind (and reservation) instead of letting it be inferred."""
        self._resources[name] = _given(kind=kind, reservation=reservation)
        return self

    def host(
        self,
        name: str,
        slots: int = 1,
        *,
        status: str | None = None,
        attributes: Mapping[str, Scalar] | None = None,
        resources: Mapping[str, float] | None = None,
        **values: Scalar,
    ) -> Self:
        """A host; keyword numbers are consumables (``mem=1000``), strings and booleans
        attributes (``type="X86_64"``, ``fast=True``). Static numbers go in ``attributes``."""
        res = dict(resources or {})
        attrs = dict(attributes or {})
        for key, value in values.items():
            if isinstance(value, bool | str):
                attrs[key] = value
            else:
                res[key] = value
        host: dict[str, Any] = {"name": name, "slots": slots}
        host.update(_given(resources=res or None, attributes=attrs or None, status=status))
        self._hosts.append(host)
        return self

    def hosts(self, count: int, prefix: str = "h", *, start: int = 0, **kwargs: Any) -> Self:
        """``count`` alike hosts named ``h0``, ``h1``, ... (so a name's number is its index)."""
        for i in range(start, start + count):
            self.host(f"{prefix}{i}", **kwargs)
        return self

    def shared(self, name: str, total: float) -> Self:
        """A cluster-wide consumable (a license pool)."""
        self._shared[name] = {"total": total}
        return self

    def queue(
        self,
        name: str,
        priority: int = 0,
        *,
        preempts: Iterable[str] = (),
        picker: str | None = None,
        shares: Mapping[str, float] | None = None,
        backfill: str | None = None,
        default_runtime: float | None = None,
        max_runtime: float | None = None,
    ) -> Self:
        queue: dict[str, Any] = {"priority": priority}
        queue.update(
            _given(
                preempts=list(preempts) or None,
                picker=picker,
                shares=shares,
                backfill=backfill,
                default_runtime=default_runtime,
                max_runtime=max_runtime,
            )
        )
        self._queues[name] = queue
        return self

    def limit(
        self,
        name: str,
        *,
        users: Iterable[str] | None = None,
        queues: Iterable[str] | None = None,
        projects: Iterable[str] | None = None,
        per_host: bool = False,
        slots: int | None = None,
        jobs: int | None = None,
        resources: Mapping[str, float] | None = None,
    ) -> Self:
        lim = _given(
            name=name,
            users=_listed(users),
            queues=_listed(queues),
            projects=_listed(projects),
            per_host=per_host or None,
            slots=slots,
            jobs=jobs,
            resources=dict(resources) if resources else None,
        )
        self._limits.append(lim)
        return self

    def job(
        self,
        id: str | int,
        tasks: int | None = None,
        *,
        resreq: str | None = None,
        user: str | None = None,
        queue: str | None = None,
        project: str | None = None,
        min_tasks: int | None = None,
        max_tasks: int | None = None,
        submit_time: float | None = None,
        runtime: float | None = None,
        requested_time: float | None = None,
        reservation: str | None = None,
    ) -> Self:
        """A pending job; jobs are scheduled in the order they are added."""
        self._jobs.append(
            _given(
                id=id,
                user=user,
                queue=queue,
                project=project,
                tasks=tasks,
                min_tasks=min_tasks,
                max_tasks=max_tasks,
                resreq=resreq,
                submit_time=submit_time,
                runtime=runtime,
                requested_time=requested_time,
                reservation=reservation,
            )
        )
        return self

    def running(
        self,
        id: str | int,
        on: Mapping[str, int] | None = None,
        *,
        rusage: Mapping[str, float] | None = None,
        alloc: Iterable[Mapping[str, Any]] | None = None,
        shared: Mapping[str, float] | None = None,
        user: str | None = None,
        queue: str | None = None,
        project: str | None = None,
        start_time: float | None = None,
        resreq: str | None = None,
        runtime: float | None = None,
        requested_time: float | None = None,
    ) -> Self:
        """Running work: ``on={"h1": 2}`` holds 2 slots of h1 and, per task, ``rusage``
        amounts (``rusage={"mem": 100}`` holds 200 mem); or give raw ``alloc`` entries."""
        entries = [dict(a) for a in alloc or ()]
        for host, slots in (on or {}).items():
            held = {k: v * slots for k, v in (rusage or {}).items()}
            entries.append(_given(host=host, slots=slots, resources=held or None))
        run = _given(
            id=id,
            user=user,
            queue=queue,
            project=project,
            start_time=start_time,
            alloc=entries,
            shared=dict(shared) if shared else None,
            resreq=resreq,
            runtime=runtime,
            requested_time=requested_time,
        )
        self._running.append(run)
        return self

    def reservation(
        self,
        name: str,
        start: float,
        end: float,
        *,
        hosts: Iterable[str] | None = None,
        select: str | None = None,
        users: Iterable[str] | None = None,
        queues: Iterable[str] | None = None,
        projects: Iterable[str] | None = None,
    ) -> Self:
        """An advance reservation of ``hosts`` (names) or the hosts ``select`` matches."""
        self._reservations.append(
            _given(
                name=name,
                start=start,
                end=end,
                hosts=_listed(hosts),
                select=select,
                users=_listed(users),
                queues=_listed(queues),
                projects=_listed(projects),
            )
        )
        return self

    def at(self, now: float) -> Self:
        """The snapshot's time (the state's ``now``)."""
        self._top["now"] = now
        return self

    def backfill(self, policy: str) -> Self:
        """The default backfill policy of queues that name none."""
        self._top["backfill"] = policy
        return self

    def picker(self, name: str) -> Self:
        """The default picker of queues that name none."""
        self._top["picker"] = name
        return self

    def to_dict(self) -> dict[str, Any]:
        """The state document (a fresh copy), leaving out empty sections."""
        doc = {
            "resources": self._resources,
            "hosts": self._hosts,
            "shared": self._shared,
            "queues": self._queues,
            "limits": self._limits,
            "running": self._running,
            "jobs": self._jobs,
            "reservations": self._reservations,
        }
        doc = {k: v for k, v in doc.items() if v}
        doc.update(self._top)
        return copy.deepcopy(doc)

    def build(
        self, *, source: str = "<builder>", check_resreq: RequirementCheck | None = None
    ) -> ClusterState:
        """The ClusterState, through the state-file loader (raises StateError if invalid)."""
        return state_from_dict(self.to_dict(), source, check_resreq=check_resreq)


def _listed(names: Iterable[str] | None) -> list[str] | None:
    return list(names) if names is not None else None


def reason_under_test(info: PendInfo) -> PendReason:
    """The reason a test is about: a job that could not run even on the empty cluster
    pends NEVER_RUNNABLE (issue 9), with the reason it fails there as its ``cause``."""
    if info.reason is PendReason.NEVER_RUNNABLE:
        assert info.cause is not None
        return info.cause
    return info.reason


def reserved_victim_site(slots: int = 2) -> ClusterBuilder:
    """Hosts a and b of ``slots`` slots; high (50) preempts low (10); advance reservation
    maint holds a over [0, 10000); r1 (low) fills a and r2 (high) fills b, both estimated
    to 50000; the session at 10. A high job's only victim runs on the reserved host."""
    return (
        ClusterBuilder()
        .queue("high", 50, preempts=["low"])
        .queue("low", 10)
        .host("a", slots)
        .host("b", slots)
        .reservation("maint", 0, 10_000, hosts=["a"])
        .running("r1", {"a": slots}, queue="low", start_time=0, requested_time=50_000)
        .running("r2", {"b": slots}, queue="high", start_time=0, requested_time=50_000)
        .at(10)
    )
