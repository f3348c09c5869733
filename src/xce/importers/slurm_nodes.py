"""Slurm nodes -> hosts, and what Slurm says is allocated on them that no captured job
holds -> running work of its own.

Slurm's node record says what is allocated there (``alloc_cpus``, ``alloc_memory``,
``gres_used``/``tres_used``), whatever the jobs of the capture show: a job left out of
the capture (another user's, filtered, finished but completing), or a node captured
apart from the jobs. The scheduler sees the node that busy, so xce must too: the
difference becomes ``running[]`` entry ``slurm:NODE:unattributed`` (docs/import.md,
"Capacity as Slurm sees it"). Where the jobs hold more than Slurm says, the capture is
inconsistent: the jobs' allocations are kept, reported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.report import ImportReport
from xce.inputs import MAX_HOST_SLOTS

__all__ = ["map_node", "unattributed"]


def map_node(
    source: str,
    path: str,
    node: Any,
    hosts: dict[str, dict[str, Any]],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    """Append Slurm node ``node`` (at ``source``: ``path``) to the state's hosts."""
    where = f"{source}: {path}"
    if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
        raise InputError("a node without a name", source=source, path=path)
    name = node["name"]
    if not name.strip():
        raise InputError("a node with an empty name", source=source, path=f"{path}.name")
    if name in hosts:
        report.warn("node listed twice (first kept)", f"{where} ({name})")
        return
    try:
        host, used = _host(node, name)
    except _FieldError as err:
        raise InputError(err.message, source=source, path=f"{path}.{err.key}") from None
    except ValueError as err:
        raise InputError(str(err), source=source, path=path) from None
    for flag in host.pop("_unknown"):
        report.warn("unknown node state flag (read as ok)", f"{where}: {flag}")
    if host["resources"]["mem"] <= 1:
        report.warn("node memory unknown (real_memory <= 1 MiB)", where)
    hosts[name] = {
        "host": host,
        "used": used,
        "where": f"{where} ({name})",
        "partitions": [str(p) for p in node.get("partitions") or []],
        "sockets": int(units.number(node.get("sockets")) or 1),
        "states": units.node_states(node.get("state"), node.get("state_flags")),
    }
    state["hosts"].append(host)
    report.count("hosts")
    if host["status"] != "ok":
        report.count(f"hosts {host['status']}")


def _host(node: Mapping[str, Any], name: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The host of a node, and what Slurm says is allocated there (slots, mem, GRES)."""
    cpus = _field(node, "cpus")
    if cpus > MAX_HOST_SLOTS:
        message = f"{cpus} is more than {MAX_HOST_SLOTS}, the most slots a host may have"
        raise _FieldError("cpus", message)
    mem = _field(node, "real_memory")
    gres = units.gres(_text(node.get("gres")))
    states = units.node_states(node.get("state"), node.get("state_flags"))
    status, unknown = units.host_status(states)
    features = node.get("active_features") or node.get("features") or []
    if isinstance(features, str):
        features = [f for f in features.split(",") if f]
    attributes: dict[str, Any] = {units.resource_name(str(f)): True for f in features}
    for part in node.get("partitions") or []:
        attributes[f"partition_{units.resource_name(str(part))}"] = True
    used = {"slots": int(_field(node, "alloc_cpus")), "mem": int(_field(node, "alloc_memory"))}
    used.update(_gres_used(node))
    host = {
        "name": name,
        "slots": int(cpus),
        "resources": {"mem": int(mem), **gres},
        "attributes": attributes,
        "status": status,
        "_unknown": unknown,
    }
    return host, used


class _FieldError(ValueError):
    """A bad value of one field of a node (located at it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def _field(node: Mapping[str, Any], key: str) -> int | float:
    try:
        return units.number(node.get(key)) or 0
    except ValueError as err:
        raise _FieldError(key, str(err)) from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _gres_used(node: Mapping[str, Any]) -> dict[str, int]:
    """GRES in use: ``gres_used`` (``gpu:h100:2(IDX:0-1)``), else the ``gres/…`` items
    of ``tres_used``."""
    used = units.gres(_text(node.get("gres_used")))
    if used:
        return used
    tres = _text(node.get("tres_used"))
    if not tres:
        return {}
    items = [f"{k}={v}" for k, v in units.tres(tres).items() if k.startswith("gres/")]
    return units.gres(",".join(items))


def unattributed(
    hosts: Mapping[str, Mapping[str, Any]],
    state: dict[str, Any],
    start: float | None,
    report: ImportReport,
) -> None:
    """Charge each node's allocation beyond its captured running jobs as running work
    ``slurm:NODE:unattributed`` started at ``start`` (the capture's now), held for the
    node's longest partition MaxTime (none when unknown); report the nodes whose jobs
    hold more than Slurm says."""
    held = _held(state["running"])
    for name, node in hosts.items():
        host, used = node["host"], node["used"]
        jobs = held.get(name, {})
        extra = {k: used.get(k, 0) - jobs.get(k, 0) for k in used}
        over = [
            f"{k} Slurm {used[k]}, jobs {jobs[k]}"
            for k in used
            if jobs.get(k, 0) > used[k] and (used[k] or k == "slots")  # 0: memory not tracked
        ]
        if over:
            report.warn(
                "node's running jobs hold more than Slurm allocates there (inconsistent "
                "capture: the jobs' are kept)",
                f"{node['where']}: {'; '.join(over)}",
            )
        entry = _entry(name, node, host, jobs, extra, start, state["queues"])
        if entry is None:
            continue
        state["running"].append(entry)
        report.count("unattributed allocations")
        shown = ", ".join(f"{k} {v}" for k, v in entry["alloc"][0].get("resources", {}).items())
        report.warn(
            "allocated on a node beyond its captured jobs (charged as running work "
            "slurm:NODE:unattributed)",
            f"{node['where']}: {entry['alloc'][0]['slots']} CPUs" + (f", {shown}" if shown else ""),
        )


def _held(running: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for job in running:
        for claim in job["alloc"]:
            mine = out.setdefault(claim["host"], {})
            mine["slots"] = mine.get("slots", 0) + int(claim["slots"])
            for res, amount in claim.get("resources", {}).items():
                mine[res] = mine.get(res, 0) + int(amount)
    return out


def _entry(
    name: str,
    node: Mapping[str, Any],
    host: Mapping[str, Any],
    jobs: Mapping[str, int],
    extra: Mapping[str, int],
    start: float | None,
    queues: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any] | None:
    """The unattributed running entry of one node, or None when nothing is left over.
    Amounts are capped at what the jobs leave free; memory or GRES with no CPU left
    over take one slot (a running entry holds at least one), if one is free."""
    free_slots = host["slots"] - jobs.get("slots", 0)
    slots = min(max(extra["slots"], 0), max(free_slots, 0))
    resources = {}
    for res, amount in extra.items():
        if res == "slots" or res not in host["resources"]:
            continue
        left = min(amount, host["resources"][res] - jobs.get(res, 0))
        if left > 0 and not (res == "mem" and host["resources"]["mem"] <= 1):
            resources[res] = left
    if not slots and resources and free_slots > 0:
        slots = 1
    if not slots:
        return None
    partitions = node["partitions"]
    entry: dict[str, Any] = {
        "id": f"slurm:{name}:unattributed",
        "user": "unknown",
        "queue": partitions[0] if partitions else "normal",
    }
    if start is not None:
        entry["start_time"] = start
    limits = [queues[p]["max_runtime"] for p in partitions if "max_runtime" in queues.get(p, {})]
    if limits and len(limits) == len(partitions):
        entry["requested_time"] = max(limits)
    claim: dict[str, Any] = {"host": name, "slots": slots}
    if resources:
        claim["resources"] = resources
    entry["alloc"] = [claim]
    return entry
