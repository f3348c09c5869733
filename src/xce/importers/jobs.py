"""Slurm jobs -> ``running`` (with their allocation) and ``jobs`` (pending) entries.

A slot is a CPU: a job of N tasks of c CPUs each asks for N*c slots. Memory per CPU is
then ``rusage[mem=…]`` per slot; memory per node is spread over the CPUs the job has
per node (rounded up, said in the report). GRES are per node (``per_host``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.hostlist import expand
from xce.importers.report import ImportReport

FINISHED = {
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
}


def job_state(job: Mapping[str, Any]) -> list[str]:
    """The job's state flags: ``job_state`` a string or list, or slurmdbd's
    ``state.current``."""
    value = job.get("job_state")
    if value is None and isinstance(job.get("state"), Mapping):
        value = job["state"].get("current")
    if isinstance(value, str):
        return [value.upper()]
    if isinstance(value, list):
        return [str(v).upper() for v in value]
    if value is None:
        raise ValueError("no job_state in this job")
    raise ValueError(f"expected job_state as a string or a list of flags, got {value!r}")


def map_job(
    source: str,
    path: str,
    job: Any,
    hosts: Mapping[str, Mapping[str, Any]],
    state: dict[str, Any],
    seen: set[str],
    report: ImportReport,
) -> None:
    """Append ``job`` to ``state``'s running or pending jobs, or report why not."""
    where = f"{source}: {path}"
    if not isinstance(job, Mapping):
        raise InputError("expected a job object", source=source, path=path)
    try:
        flags = job_state(job)
        job_id = str(units.number(job.get("job_id")) or job.get("job_id"))
        if job_id in seen:
            report.warn("job listed twice (first kept)", f"{where} ({job_id})")
            return
        if "RUNNING" in flags or "SUSPENDED" in flags:
            entry = _running(job, job_id, where, hosts, report)
            if entry:
                state["running"].append(entry)
                report.count("running")
                seen.add(job_id)
        elif "PENDING" in flags:
            entry = _pending(job, job_id, where, hosts, state, report)
            _named_reservation(job, entry, where, state, report)
            state["jobs"].append(entry)
            report.count("pending")
            seen.add(job_id)
        elif set(flags) & FINISHED or "COMPLETING" in flags:
            report.count("finished jobs (not mapped)")
        else:
            report.warn("job state not mapped", f"{where}: {'+'.join(flags)}")
    except ValueError as err:
        raise InputError(str(err), source=source, path=path) from None


def _allocated_cores(sockets: Any) -> int:
    """v0.0.37/38: the cores of a node marked allocated to the job (``{socket: {"cores":
    {core: "allocated"}}}``), its CPUs there when ``cpus_used`` is 0 (one thread per
    core: a node of several threads per core counts fewer CPUs than Slurm gave)."""
    if not isinstance(sockets, Mapping):
        return 0
    return sum(
        1
        for socket in sockets.values()
        if isinstance(socket, Mapping) and isinstance(socket.get("cores"), Mapping)
        for state in socket["cores"].values()
        if str(state).lower().startswith("allocated")
    )


def _named_reservation(
    job: Mapping[str, Any],
    entry: dict[str, Any],
    where: str,
    state: Mapping[str, Any],
    report: ImportReport,
) -> None:
    """The reservation a pending job asked for (``sbatch --reservation``, Slurm's
    ``resv_name``), where it was imported; else the job is kept without it, reported."""
    name = job.get("resv_name")
    if not isinstance(name, str) or not name:
        return
    if any(r["name"] == name for r in state.get("reservations", ())):
        entry["reservation"] = name
    else:
        report.warn(
            "job's reservation not in the input (kept without it; import /reservations)",
            f"{where}: {name}",
        )


def _common(job: Mapping[str, Any], job_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": job_id}
    for key, field in (("user", "user_name"), ("project", "account"), ("queue", "partition")):
        value = job.get(field)
        if isinstance(value, str) and value:
            entry[key] = value.split(",")[0]  # a job may list several partitions
    minutes = units.number(job.get("time_limit"))
    if minutes is not None:
        entry["requested_time"] = minutes * 60
    return entry


def _per_node_mem(job: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(MiB per CPU, MiB per node); old releases flag per-CPU in the high bit."""
    per_cpu = units.number(job.get("memory_per_cpu"))
    per_node = units.number(job.get("memory_per_node"))
    if per_node and int(per_node) & units.MEM_PER_CPU_FLAG:
        per_cpu, per_node = int(per_node) & ~units.MEM_PER_CPU_FLAG, None
    return per_cpu or None, per_node or None


def _pending(
    job: Mapping[str, Any],
    job_id: str,
    where: str,
    hosts: Mapping[str, Mapping[str, Any]],
    state: dict[str, Any],
    report: ImportReport,
) -> dict[str, Any]:
    entry = _common(job, job_id)
    tasks = units.number(job.get("num_tasks")) or units.number(job.get("tasks"))
    per_task = units.number(job.get("cpus_per_task")) or 1
    cpus = units.number(job.get("cpus"))
    slots = int(tasks * per_task) if tasks else int(cpus or 1)
    nodes = units.number(job.get("node_count")) or units.number(job.get("minimum_nodes"))
    entry["tasks"] = slots
    sections: list[str] = []
    selects = _partitions(entry.get("queue"), hosts, state, where, report)
    features = str(job.get("features") or "")
    if features:
        try:
            selects.append(f"({units.constraint(features)})")
        except ValueError as err:
            report.warn("constraint not mapped", f"{where}: {err}")
    if selects:
        sections.append(f"select[{' && '.join(selects)}]")
    rusage: dict[str, float] = {}
    per_cpu, per_node = _per_node_mem(job)
    if per_cpu:
        rusage["mem"] = per_cpu
    elif per_node:
        per_host = slots / nodes if nodes else slots
        rusage["mem"] = math.ceil(per_node / per_host)
        if per_node % per_host:
            report.warn(
                "memory per node rounded up per CPU", f"{where}: {per_node} MiB / {per_host} CPUs"
            )
    tres = str(job.get("tres_per_node") or "")
    if tres:
        for name, amount in units.gres(tres).items():
            rusage[name] = amount
    if rusage:
        sections.append("rusage[" + ":".join(f"{k}={_num(v)}" for k, v in rusage.items()) + "]")
    # A pending job's node_count is Slurm's estimate when -N was not given, so 1 is no
    # constraint; more than one node is only written when the CPUs split evenly.
    if nodes and nodes > 1 and slots % nodes == 0:
        sections.append(f"span[ptile={slots // int(nodes)}]")
    if sections:
        entry["resreq"] = " ".join(sections)
    submit = units.number(job.get("submit_time"))
    if submit is not None:
        entry["submit_time"] = submit
    priority = units.number(job.get("priority"))
    if priority is not None:
        report.count("priorities read (kept in the report)")
    reason = job.get("state_reason")
    if isinstance(reason, str) and reason and reason != "None":
        report.reasons[job_id] = reason
        entry["reason"] = reason  # shown beside xce's own (xce schedule)
    return entry


def _partitions(
    queue: Any,
    hosts: Mapping[str, Mapping[str, Any]],
    state: dict[str, Any],
    where: str,
    report: ImportReport,
) -> list[str]:
    """``[partition_q]``: the job runs only on the nodes of its partition ``q`` (their
    queue membership). When no imported node is in it, the tag is declared (no host has
    it: the job cannot run on the imported nodes, as in Slurm) and that is reported.
    Nothing when every imported node is in it, or none gives its partitions."""
    if not isinstance(queue, str):
        return []
    tag = f"partition_{units.resource_name(queue)}"
    attributes = [h["host"]["attributes"] for h in hosts.values()]
    if not any(k.startswith("partition_") for a in attributes for k in a):
        return []
    members = sum(1 for a in attributes if a.get(tag))
    if members == len(attributes):
        return []  # every imported node is in it: no restriction
    if not members:
        state["resources"].setdefault(tag, {"kind": "boolean"})
        report.warn("job's partition has no imported node (it cannot run on them)", where)
    return [tag]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _running(
    job: Mapping[str, Any],
    job_id: str,
    where: str,
    hosts: Mapping[str, Mapping[str, Any]],
    report: ImportReport,
) -> dict[str, Any] | None:
    entry = _common(job, job_id)
    start = units.number(job.get("start_time"))
    if start is not None:
        entry["start_time"] = start
    alloc = _allocation(job, where, report)
    if not alloc:
        report.warn("running job without an allocation (skipped)", where)
        return None
    out = []
    per_cpu, per_node = _per_node_mem(job)
    guessed = False
    for name, cpus, mem in alloc:
        host = hosts.get(name)
        if host is None:
            report.warn("running job on a node not in the input (skipped)", f"{where}: {name}")
            return None
        slots = min(int(cpus), host["host"]["slots"]) or 1
        item: dict[str, Any] = {"host": name, "slots": slots}
        if not mem and (per_node or per_cpu):  # job_resources gives none: the request's
            mem = per_node or (per_cpu or 0) * slots
            guessed = True
        if mem:
            item["resources"] = {"mem": min(int(mem), host["host"]["resources"]["mem"])}
        out.append(item)
    if guessed:
        report.warn("running job's memory from its request (job_resources gives none)", where)
    entry["alloc"] = out
    return entry


def _allocation(
    job: Mapping[str, Any], where: str, report: ImportReport
) -> list[tuple[str, float, float]]:
    """(node, cpus, MiB) per node of a running job, from ``job_resources`` (v0.0.41 on:
    ``nodes.allocation[]``; before: ``allocated_nodes``), else the job's CPUs spread
    evenly over its node list (warned)."""
    res = job.get("job_resources")
    cpus = units.number(job.get("cpus")) or 0
    if isinstance(res, Mapping) and isinstance(res.get("nodes"), Mapping):
        rows = res["nodes"].get("allocation") or []
        return [
            (
                r["name"],
                units.number(r["cpus"]["count"]) or 0,
                units.number(r["memory"]["allocated"]) or 0,
            )
            for r in rows
        ]
    names = expand(str((res or {}).get("nodes") or job.get("nodes") or ""))
    if not names:
        return []
    nodes = (res or {}).get("allocated_nodes")
    rows_old: list[tuple[str, float, float]] = []
    if isinstance(nodes, Mapping):  # v0.0.37/38: {"0": {cpus, memory}} by node index
        nodes = [dict(v, nodename=names[int(k)]) for k, v in nodes.items() if int(k) < len(names)]
    for r in nodes or []:
        name = r.get("nodename")
        got = (
            units.number(r.get("cpus"))
            or units.number(r.get("cpus_used"))
            or _allocated_cores(r.get("sockets"))
        )
        mem = units.number(r.get("memory")) or units.number(r.get("memory_allocated")) or 0
        rows_old.append((name, got, mem))
    if rows_old and all(c for _, c, _ in rows_old):
        return rows_old
    report.warn("allocation spread evenly (job_resources without CPU counts)", where)
    share = max(1, int(cpus // len(names))) if cpus else 1
    return [(n, share, 0) for n in names]
