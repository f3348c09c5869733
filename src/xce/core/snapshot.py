"""Snapshots: a whole cluster state written as a state file (design §4).

``state_from_dict(state_to_dict(s))`` is the same state, so ``xce schedule`` replays a
snapshot to identical decisions. The unsatisfiable cache is session state and is never
written (spec Req 7 AC 2).
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

import msgspec
import numpy as np
import yaml

from xce.cluster import (
    SLOTS,
    ClusterState,
    HostStatus,
    PendingJob,
    Queue,
    QueueEntry,
    ResourceKind,
)
from xce.errors import StateError

__all__ = ["state_to_dict", "write_state"]

try:
    from yaml import CSafeDumper as _Dumper
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeDumper as _Dumper  # type: ignore[assignment]

_BUILTIN = (SLOTS, "hname")
_STATUS = {HostStatus.OK: "ok", HostStatus.CLOSED: "closed", HostStatus.UNAVAIL: "unavail"}


def _number(x: float) -> int | float:
    """Whole numbers as ints, so the file reads as it would be written by hand."""
    value = float(x)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _hosts(state: ClusterState) -> list[dict[str, Any]]:
    t = state.hosts
    status = np.asarray(t.status)
    out = []
    for i, name in enumerate(t.names):
        host: dict[str, Any] = {"name": name, "slots": int(t.capacity[SLOTS][i])}
        resources = {
            k: _number(v[i]) for k, v in t.capacity.items() if k != SLOTS and not math.isnan(v[i])
        }
        attributes: dict[str, Any] = {
            k: v[i] for k, v in t.strings.items() if k != "hname" and v[i] is not None
        }
        attributes.update({k: _number(v[i]) for k, v in t.numeric.items() if not math.isnan(v[i])})
        attributes.update({k: True for k, v in t.tags.items() if v[i]})
        if resources:
            host["resources"] = resources
        if attributes:
            host["attributes"] = attributes
        if status[i] != HostStatus.OK:
            host["status"] = _STATUS[HostStatus(int(status[i]))]
        out.append(host)
    return out


def _resources(state: ClusterState) -> dict[str, Any]:
    """Every resource declared, so that kinds and reservations survive the round trip."""
    out: dict[str, Any] = {}
    for name, d in state.catalog.items():
        if name in _BUILTIN:
            continue
        decl: dict[str, Any] = {"kind": d.kind.value}
        if d.kind is ResourceKind.CONSUMABLE:
            decl["reservation"] = d.reservation.value
        out[name] = decl
    return out


def _limits(state: ClusterState) -> list[dict[str, Any]]:
    out = []
    for lim in state.limits:
        item: dict[str, Any] = {"name": lim.name}
        for key in ("users", "queues", "projects"):
            value = getattr(lim, key)
            if value is not None:
                item[key] = list(value)
        if lim.per_host:
            item["per_host"] = True
        if lim.slots is not None:
            item["slots"] = lim.slots
        if lim.jobs is not None:
            item["jobs"] = lim.jobs
        if lim.resources:
            item["resources"] = {k: _number(v) for k, v in lim.resources.items()}
        out.append(item)
    return out


def _running(state: ClusterState) -> list[dict[str, Any]]:
    out = []
    for r in state.running:
        item: dict[str, Any] = {
            "id": r.id,
            "user": r.user,
            "queue": r.queue,
            "project": r.project,
            "start_time": _number(r.start_time),
            "alloc": [
                {
                    "host": a.host,
                    "slots": a.slots,
                    "resources": {k: _number(v) for k, v in a.resources.items()},
                }
                for a in r.alloc
            ],
        }
        if r.shared:
            item["shared"] = {k: _number(v) for k, v in r.shared.items()}
        if r.resreq:
            item["resreq"] = r.resreq
        if r.runtime is not None:
            item["runtime"] = _number(r.runtime)
        if r.requested_time is not None:
            item["requested_time"] = _number(r.requested_time)
        if r.name is not None:
            item["name"] = r.name
        if r.array_job is not None:
            item["array_job"] = r.array_job
        out.append(item)
    return out


def _jobs(state: ClusterState) -> list[dict[str, Any]]:
    out = []
    for j in sorted(state.jobs, key=lambda j: j.order):
        item: dict[str, Any] = {"id": j.id, "user": j.user, "queue": j.queue, "project": j.project}
        if j.tasks_given:
            if j.min_tasks == j.max_tasks:
                item["tasks"] = j.min_tasks
            else:
                item["min_tasks"], item["max_tasks"] = j.min_tasks, j.max_tasks
        if j.resreq:
            item["resreq"] = j.resreq
        item["submit_time"] = _number(j.submit_time)
        if j.runtime is not None:
            item["runtime"] = _number(j.runtime)
        if j.requested_time is not None:
            item["requested_time"] = _number(j.requested_time)
        if j.reservation is not None:
            item["reservation"] = j.reservation
        if j.reason is not None:
            item["reason"] = j.reason
        item.update(_flow(j))
        out.append(item)
    return out


def _flow(j: PendingJob) -> dict[str, Any]:
    """What besides resources a job waits on, and what the scheduler said of it."""
    item: dict[str, Any] = {}
    if j.priority is not None:
        item["priority"] = _number(j.priority)
    if j.hold:
        item["hold"] = True
    if j.begin_time is not None:
        item["begin_time"] = _number(j.begin_time)
    if j.dependency is not None:
        item["dependency"] = j.dependency.text
    if j.name is not None:
        item["name"] = j.name
    if j.array is not None:
        item["array"] = j.array.text()
    if j.scheduler_start is not None:
        item["scheduler_start"] = _number(j.scheduler_start)
    if j.also_queues:
        item["also_queues"] = [_entry(e, j.resreq) for e in j.also_queues]
    if j.qos is not None:
        item["qos"] = j.qos
    if j.nice:
        item["nice"] = j.nice
    if j.nodes is not None:
        item["nodes"] = j.nodes
    if j.accrue_time is not None:
        item["accrue_time"] = _number(j.accrue_time)
    return item


def _priority(state: ClusterState) -> dict[str, Any]:
    """The priority section: the settings as given, the associations with their usage
    at the state's time (running work charged up to it) and that time."""
    setup = state.priority
    assert setup is not None
    now = state.session_time()
    tree = setup.tree
    running = [
        (tree.association_of(r.user, r.project), float(r.slots), r.start_time)
        for r in state.running
    ]
    usage = setup.usage.at(now, running)
    data: dict[str, Any] = dict(setup.settings or {})
    associations = []
    for key, a in tree.nodes.items():
        item: dict[str, Any] = {"account": a.account}
        if a.user is not None:
            item["user"] = a.user
        elif a.parent is not None:
            item["parent"] = a.parent
        item["shares"] = _number(a.shares)
        item["usage"] = _number(usage.get(key, 0.0))
        if a.priority:
            item["priority"] = a.priority
        associations.append(item)
    data["associations"] = associations
    if setup.qos:
        data["qos"] = {name: {"priority": p} for name, p in setup.qos.items()}
    if setup.default_qos is not None:
        data["default_qos"] = setup.default_qos
    data["usage_time"] = _number(now)
    if setup.lsf_usage is not None:
        lsf: dict[str, Any] = dict(setup.lsf_settings or {})
        book = setup.lsf_usage
        queues = sorted({q for q, _ in book.entries()} | {r.queue for r in state.running})
        hours_of: dict[str, dict[str, float]] = {}
        for queue in queues:
            users = sorted(
                set(book.users(queue)) | {r.user for r in state.running if r.queue == queue}
            )
            for user in users:
                hours = book.at(queue, user, now)
                hours += sum(
                    book.ran(float(r.slots), r.start_time, now)
                    for r in state.running
                    if r.queue == queue and r.user == user
                )
                if hours:
                    hours_of.setdefault(queue, {})[user] = _number(hours)
        lsf["usage"] = hours_of
        data["lsf"] = lsf
    return data


def _entry(e: QueueEntry, resreq: str) -> dict[str, Any]:
    item: dict[str, Any] = {"queue": e.queue}
    if e.priority is not None:
        item["priority"] = _number(e.priority)
    if e.resreq != resreq:
        item["resreq"] = e.resreq
    return item


def _queue(q: Queue) -> dict[str, Any]:
    item: dict[str, Any] = {"priority": q.priority, "preempts": list(q.preempts)}
    if q.picker:
        item["picker"] = q.picker
    if q.shares:
        item["shares"] = {u: _number(s) for u, s in q.shares.items()}
    if q.default_runtime is not None:
        item["default_runtime"] = _number(q.default_runtime)
    if q.max_runtime is not None:
        item["max_runtime"] = _number(q.max_runtime)
    if q.backfill:
        item["backfill"] = q.backfill
    if q.priority_job_factor != 1:
        item["priority_job_factor"] = q.priority_job_factor
    return item


def _reservations(state: ClusterState) -> list[dict[str, Any]]:
    """Hosts as the file gave them: the select (it resolves to the same hosts, whose
    static attributes are written too), else the names."""
    out = []
    for r in state.reservations:
        item: dict[str, Any] = {"name": r.name}
        if r.select is not None:
            item["select"] = r.select
        else:
            item["hosts"] = [state.hosts.names[h] for h in r.hosts]
        item["start"], item["end"] = _number(r.start), _number(r.end)
        for key in ("users", "queues", "projects"):
            value = getattr(r, key)
            if value is not None:
                item[key] = list(value)
        out.append(item)
    return out


def state_to_dict(state: ClusterState) -> dict[str, Any]:
    """The state file describing ``state`` (pending jobs in arrival order)."""
    data: dict[str, Any] = {
        "resources": _resources(state),
        "hosts": _hosts(state),
        "shared": {k: {"total": _number(v)} for k, v in state.shared_total.items()},
        "queues": {name: _queue(q) for name, q in state.queues.items()},
        "limits": _limits(state),
        "running": _running(state),
        "jobs": _jobs(state),
    }
    if state.reservations:
        data["reservations"] = _reservations(state)
    if state.default_picker:
        data["picker"] = state.default_picker
    if state.default_backfill:
        data["backfill"] = state.default_backfill
    if state.now is not None:
        data["now"] = _number(state.now)
    if state.scheduler is not None:
        data["scheduler"] = state.scheduler
    if state.timezone is not None:
        data["timezone"] = state.timezone
    if state.scheduler_resolution is not None:
        data["scheduler_resolution"] = _number(state.scheduler_resolution)
    if state.priority is not None:
        data["priority"] = _priority(state)
    if state.left_out:  # a dependency on one never holds, after a reload too
        data["left_out"] = sorted(state.left_out)
    return data


def write_state(state: ClusterState, path: str | os.PathLike[str]) -> None:
    """Write ``state`` as a state file: JSON for ``.json``, YAML for ``.yaml``/``.yml``.

    The file is written whole or not at all: into a temporary file in the same
    directory, renamed over ``path`` once complete (a reader never sees half a snapshot;
    a failed write leaves ``path`` as it was and no temporary file behind)."""
    target = os.fspath(path)
    suffix = os.path.splitext(target)[1].lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise StateError("unknown file type: expected .yaml, .yml or .json", source=target)
    payload = _payload(state_to_dict(state), suffix)
    directory, name = os.path.split(target)
    fd, temp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(temp, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        os.replace(temp, target)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _payload(data: dict[str, Any], suffix: str) -> bytes:
    if suffix == ".json":
        return msgspec.json.format(msgspec.json.encode(data), indent=1)
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=False)
    return text.encode("utf-8")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
