"""Slurm jobs -> ``running`` (with their allocation) and ``jobs`` (pending) entries.

A slot is a CPU: a job of N tasks of c CPUs each asks for N*c slots. Memory per CPU is
then ``rusage[mem=…]`` per slot; memory per node is spread over the CPUs the job has
per node (rounded up, said in the report). GRES: :mod:`xce.importers.slurm_tres`;
priority, holds, begin times, dependencies and arrays: :mod:`xce.importers.slurm_flow`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xce.errors import InputError
from xce.importers import slurm_flow, slurm_priority, slurm_tres, units
from xce.importers.hostlist import expand
from xce.importers.report import ImportReport
from xce.inputs import MAX_TASKS

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


@dataclass(slots=True)
class JobContext:
    """What mapping a job reads and fills: the imported nodes (by name), the state, the
    ids already mapped, the report, the capture's time (``now``: the state's, else the
    latest start or submit time of the capture) and the most sockets of a node."""

    hosts: Mapping[str, Mapping[str, Any]]
    state: dict[str, Any]
    seen: set[str]
    report: ImportReport
    now: float | None = None
    sockets: int = 1
    features: Mapping[str, str] = field(default_factory=dict)  # feature -> its tag's name
    # (job id, partition) -> the priority Slurm gave the job there (sprio's text)
    priorities: Mapping[tuple[str, str], float] = field(default_factory=dict)
    # host -> what the running jobs mapped so far hold there (slots, mem, GRES)
    charged: dict[str, dict[str, float]] = field(default_factory=dict)
    # the site runs priority/multifactor: pending jobs get its fields (qos, nice, ...)
    multifactor: bool = False
    # job id -> squeue's accrue_time, where set (to date sprio's factors)
    accrue: dict[str, float] = field(default_factory=dict)


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


def map_job(source: str, path: str, job: Any, ctx: JobContext) -> None:
    """Append ``job`` to the state's running or pending jobs, or report why not."""
    where = f"{source}: {path}"
    if not isinstance(job, Mapping):
        raise InputError("expected a job object", source=source, path=path)
    try:
        flags = job_state(job)
        job_id = _job_id(job)
        if "RUNNING" in flags or "SUSPENDED" in flags:
            element = slurm_flow.running_array_job(job)
            job_id = element[0] if element else job_id
            if _listed(job_id, where, ctx):
                return
            entry = _running(job, job_id, where, ctx)
            if entry:
                if element:
                    entry["array_job"] = element[1]
                ctx.state["running"].append(entry)
                ctx.report.count("running")
                ctx.seen.add(job_id)
        elif "PENDING" in flags:
            array = slurm_flow.array_record(job, where, ctx.report)
            job_id = _pending_id(job, job_id, array)
            if _listed(job_id, where, ctx):
                return
            entry = _pending(job, job_id, where, ctx)
            if array:
                entry["array"] = array
                ctx.report.count("pending array records")
            _named_reservation(job, entry, where, ctx.state, ctx.report)
            ctx.state["jobs"].append(entry)
            ctx.report.count("pending")
            ctx.seen.add(job_id)
        elif set(flags) & FINISHED or "COMPLETING" in flags:
            ctx.report.count("finished jobs (not mapped)")
        else:
            ctx.report.warn("job state not mapped", f"{where}: {'+'.join(flags)}")
    except ValueError as err:
        raise InputError(str(err), source=source, path=path) from None


def _job_id(job: Mapping[str, Any]) -> str:
    number = units.number(job.get("job_id"))
    if number is None or not float(number).is_integer():
        raise ValueError(f"expected a job_id (a whole number), got {job.get('job_id')!r}")
    return str(int(number))


def _pending_id(job: Mapping[str, Any], job_id: str, array: str | None) -> str:
    """An array record is named by its array job id; a pending element split off it
    (its own record, ``array_task_id`` set) as ``412_7``."""
    array_job = units.number(job.get("array_job_id"))
    if not array_job:
        return job_id
    if array:
        return str(int(array_job))
    task = units.number(job.get("array_task_id"))
    return job_id if task is None else f"{int(array_job)}_{int(task)}"


def _listed(job_id: str, where: str, ctx: JobContext) -> bool:
    if job_id in ctx.seen:
        ctx.report.warn("job listed twice (first kept)", f"{where} ({job_id})")
        return True
    return False


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
    for key, key_name in (("user", "user_name"), ("project", "account"), ("queue", "partition")):
        value = job.get(key_name)
        if isinstance(value, str) and value:
            entry[key] = value.split(",")[0]  # a job may list several partitions
    minutes = units.number(job.get("time_limit"))
    if minutes is not None:
        entry["requested_time"] = minutes * 60
    name = job.get("name")
    if isinstance(name, str) and name:
        entry["name"] = name
    return entry


def _per_node_mem(job: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(MiB per CPU, MiB per node); old releases flag per-CPU in the high bit of the
    bare ``memory_per_node`` (read before :func:`units.number`: it is above its range)."""
    raw = job.get("memory_per_node")
    if isinstance(raw, int) and not isinstance(raw, bool) and raw & units.MEM_PER_CPU_FLAG:
        low = raw & ~units.MEM_PER_CPU_FLAG
        if low not in units.SENTINELS and low & units.MEM_PER_CPU_FLAG == 0:
            return units.number(low) or None, None
    per_cpu = units.number(job.get("memory_per_cpu"))
    per_node = units.number(raw)
    return per_cpu or None, per_node or None


def _slots(job: Mapping[str, Any]) -> tuple[int, int, int]:
    """(slots, Slurm tasks, CPUs per task) of a pending job, each checked in range."""
    tasks = units.number(job.get("num_tasks")) or units.number(job.get("tasks"))
    per_task = units.number(job.get("cpus_per_task"))
    cpus = units.number(job.get("cpus"))
    if per_task is None and tasks and cpus and cpus > tasks and cpus % tasks == 0:
        # v0.0.38 prints cpus_per_task null unless a CPU frequency was asked for (it
        # tests cpu_freq_min): a pending job's cpus (its minimum) are tasks x -c then
        per_task = cpus // tasks
    per_task = per_task or 1
    slots = int(tasks * per_task) if tasks else int(cpus or 1)
    if not 1 <= slots <= MAX_TASKS:
        raise ValueError(f"{slots} CPUs is out of range (1 to {MAX_TASKS})")
    return slots, int(tasks or slots), int(per_task)


def _pending(job: Mapping[str, Any], job_id: str, where: str, ctx: JobContext) -> dict[str, Any]:
    entry = _common(job, job_id)
    slots, ntasks, per_task = _slots(job)
    entry["tasks"] = slots
    resreq = _requirement(job, entry.get("queue"), (slots, ntasks, per_task), where, ctx)
    if resreq:
        entry["resreq"] = resreq
    submit = units.number(job.get("submit_time"))
    if submit is not None:
        entry["submit_time"] = submit
    _flow(job, job_id, entry, where, ctx)
    _also_queues(job, job_id, entry, (slots, ntasks, per_task), where, ctx)
    if ctx.multifactor:
        entry.update(slurm_priority.job_fields(job, entry, ctx.now))
        accrue = units.number(job.get("accrue_time"))
        if accrue:
            ctx.accrue[job_id] = accrue
    return entry


def _also_queues(
    job: Mapping[str, Any],
    job_id: str,
    entry: dict[str, Any],
    sizes: tuple[int, int, int],
    where: str,
    ctx: JobContext,
) -> None:
    """The further partitions of ``-p a,b`` (``partition: "prio,batch"``): each with the
    requirement the job has there and, from ``sprio`` text when it is in the input, the
    priority Slurm gave it there (else the job's one priority, reported: Slurm prints
    one priority, of one of them)."""
    names = [p for p in str(job.get("partition") or "").split(",") if p]
    if len(names) < 2:
        return
    quiet = JobContext(ctx.hosts, ctx.state, ctx.seen, ImportReport(), ctx.now, ctx.sockets,
                       ctx.features)  # fmt: skip  # warnings said once, for the first
    given = ctx.priorities.get((job_id, names[0]))
    if given is not None:
        entry["priority"] = given
    out = []
    for name in names[1:]:
        item: dict[str, Any] = {"queue": name}
        priority = ctx.priorities.get((job_id, name))
        if priority is not None:
            item["priority"] = priority
        elif ctx.priorities or "priority" in entry:
            ctx.report.warn(
                "job's priority in a further partition unknown (its one priority used; "
                "give sprio's text)",
                f"{where} ({job_id}): {name}",
            )
        resreq = _requirement(job, name, sizes, where, quiet)
        if resreq != entry.get("resreq"):
            item["resreq"] = resreq or ""
        out.append(item)
    entry["also_queues"] = out
    ctx.report.count("pending jobs in several partitions")


def _requirement(
    job: Mapping[str, Any],
    queue: Any,
    sizes: tuple[int, int, int],
    where: str,
    ctx: JobContext,
) -> str | None:
    """The job's requirement in partition ``queue``: its nodes, constraint, memory,
    GRES and node count (None: any host)."""
    slots, ntasks, per_task = sizes
    sections: list[str] = []
    selects = _partitions(queue, ctx, where)
    features = str(job.get("features") or "")
    if features:
        try:
            select = units.constraint(features, ctx.features)
        except ValueError as err:
            ctx.report.warn("constraint not mapped", f"{where}: {err}")
        else:
            _declare_features(select, ctx, where)
            selects.append(f"({select})")
    if selects:
        sections.append(f"select[{' && '.join(selects)}]")
    rusage = _memory(job, slots, where, ctx.report)
    gres = slurm_tres.request_rusage(job, (ntasks, per_task, ctx.sockets), where, ctx.report)
    _declare_gres(gres, ctx, where)
    rusage.update(gres)
    if rusage:
        sections.append("rusage[" + ":".join(f"{k}={v}" for k, v in rusage.items()) + "]")
    span = _span(job, slots, where, ctx.report)
    if span:
        sections.append(span)
    return " ".join(sections) if sections else None


def _memory(job: Mapping[str, Any], slots: int, where: str, report: ImportReport) -> dict[str, str]:
    """``mem`` per slot: ``--mem-per-cpu`` as is, ``--mem`` (per node) over the CPUs per
    node (Slurm's node count, its estimate without ``-N``), rounded up (reported)."""
    per_cpu, per_node = _per_node_mem(job)
    if per_cpu:
        return {"mem": _num(per_cpu)}
    if not per_node:
        return {}
    nodes = units.number(job.get("node_count")) or 1
    per_host = max(1.0, slots / nodes)
    if per_node % per_host:
        report.warn(
            "memory per node rounded up per CPU", f"{where}: {per_node} MiB / {per_host} CPUs"
        )
    return {"mem": _num(math.ceil(per_node / per_host))}


def _span(job: Mapping[str, Any], slots: int, where: str, report: ImportReport) -> str | None:
    """``span`` only for a node count the user gave (``-N n``: Slurm keeps ``max_nodes``
    and the minimum of ``tres_req_str``'s ``node=``, both n). Without ``-N``, Slurm's
    ``node_count`` is its own estimate and ``max_nodes`` is 0: no span."""
    most = units.number(job.get("max_nodes"))
    least = units.number(job.get("minimum_nodes"))
    if least is None:
        least = _tres_nodes(job.get("tres_req_str"))
    if not most or least != most:
        return None
    nodes = int(most)
    if nodes == 1:
        return "span[hosts=1]"
    if slots % nodes:
        report.warn(
            "node count not mapped (its CPUs do not split evenly over -N nodes)",
            f"{where}: {slots} CPUs on {nodes} nodes",
        )
        return None
    return f"span[ptile={slots // nodes}]"


def _tres_nodes(text: Any) -> float | None:
    if not isinstance(text, str) or "node=" not in text:
        return None
    value = units.tres(text).get("node", "")
    return float(value) if value.isdigit() else None


def _flow(
    job: Mapping[str, Any], job_id: str, entry: dict[str, Any], where: str, ctx: JobContext
) -> None:
    """Priority, holds, begin time, dependency and Slurm's reason and expected start."""
    reason = job.get("state_reason")
    reason = reason if isinstance(reason, str) and reason and reason != "None" else None
    priority = units.number(job.get("priority"))
    if priority is not None:
        entry["priority"] = priority
    dependency, never = slurm_flow.dependency(job.get("dependency"), reason, where, ctx.report)
    if dependency:
        entry["dependency"] = dependency
    if never:
        ctx.report.warn("dependency never satisfied (held)", f"{where} ({job_id})")
    if never or slurm_flow.held(job, reason):
        entry["hold"] = True
        ctx.report.count("held")
    entry.update(slurm_flow.job_times(job, ctx.now, reason))
    if reason:
        ctx.report.reasons[job_id] = reason
        entry["reason"] = reason  # shown beside xce's own (xce schedule)


def _declare_features(select: str, ctx: JobContext, where: str) -> None:
    """A constraint naming a feature no imported node has (``-C abc``): the tag is
    declared, so the job cannot run on the imported nodes, as in Slurm, reported (the
    state failed xce's loader: an unknown name in a select)."""
    have = {a for h in ctx.hosts.values() for a in h["host"]["attributes"]}
    have |= set(ctx.state["resources"])
    for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", select):
        if name not in have:
            ctx.state["resources"].setdefault(name, {"kind": "boolean"})
            ctx.report.warn(
                "constraint names a feature no imported node has (it cannot run on them)",
                f"{where}: {name}",
            )


def _declare_gres(gres: Mapping[str, str], ctx: JobContext, where: str) -> None:
    """A GRES no imported node has is declared (the job cannot run on them, as in
    Slurm), reported: never dropped."""
    have = {r for h in ctx.hosts.values() for r in h["host"]["resources"]}
    for name in gres:
        if name not in have:
            ctx.state["resources"].setdefault(
                name, {"kind": "consumable", "reservation": "per_host"}
            )
            ctx.report.warn("job asks for a GRES no imported node has (it cannot run on them)",
                            f"{where}: {name}")  # fmt: skip


def _partitions(queue: Any, ctx: JobContext, where: str) -> list[str]:
    """``[partition_q]``: the job runs only on the nodes of its partition ``q`` (their
    queue membership). When no imported node is in it, the tag is declared (no host has
    it: the job cannot run on the imported nodes, as in Slurm) and that is reported.
    Nothing when every imported node is in it, or none gives its partitions."""
    if not isinstance(queue, str):
        return []
    tag = f"partition_{units.resource_name(queue)}"
    attributes = [h["host"]["attributes"] for h in ctx.hosts.values()]
    if not any(k.startswith("partition_") for a in attributes for k in a):
        return []
    members = sum(1 for a in attributes if a.get(tag))
    if members == len(attributes):
        return []  # every imported node is in it: no restriction
    if not members:
        ctx.state["resources"].setdefault(tag, {"kind": "boolean"})
        ctx.report.warn("job's partition has no imported node (it cannot run on them)", where)
    return [tag]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _running(
    job: Mapping[str, Any], job_id: str, where: str, ctx: JobContext
) -> dict[str, Any] | None:
    entry = _common(job, job_id)
    start = units.number(job.get("start_time"))
    if start is not None:
        entry["start_time"] = start
    alloc = _allocation(job, where, ctx.report)
    if not alloc:
        ctx.report.warn("running job without an allocation (skipped)", where)
        return None
    missing = [name for name, _, _ in alloc if name not in ctx.hosts]
    if missing:
        ctx.report.warn(
            "running job on a node not in the input (skipped)", f"{where}: {missing[0]}"
        )
        return None
    gres = slurm_tres.allocated_gres(job, [n for n, _, _ in alloc], where, ctx.report)
    per_cpu, per_node = _per_node_mem(job)
    guessed = False
    out = []
    for name, cpus, mem in alloc:
        host = ctx.hosts[name]["host"]
        used = ctx.charged.get(name, {})
        free = host["slots"] - used.get("slots", 0)
        if free < 1:
            ctx.report.warn(
                "running job on a node its other running jobs fill (skipped)", f"{where}: {name}"
            )
            return None
        item: dict[str, Any] = {"host": name, "slots": min(int(cpus) or 1, free)}
        if not mem and (per_node or per_cpu):  # job_resources gives none: the request's
            mem = per_node or (per_cpu or 0) * item["slots"]
            guessed = True
        held = {"mem": int(mem)} if mem else {}
        for res, amount in gres.get(name, {}).items():
            if res in host["resources"]:
                held[res] = amount
            else:
                ctx.report.warn("running job's GRES on a node without it (not charged)",
                                f"{where}: {res} on {name}")  # fmt: skip
        for res, amount in list(held.items()):  # never more than the node has left
            left = host["resources"][res] - used.get(res, 0)
            if amount > left:
                ctx.report.warn(
                    "running jobs hold more than a node has (capped at what is left)",
                    f"{where}: {res} on {name}",
                )
            if left > 0:
                held[res] = min(amount, left)
            else:
                del held[res]
        if held:
            item["resources"] = held
        out.append(item)
    for item in out:
        used = ctx.charged.setdefault(item["host"], {})
        for res, amount in {"slots": item["slots"], **item.get("resources", {})}.items():
            used[res] = used.get(res, 0) + amount
    if guessed:
        ctx.report.warn("running job's memory from its request (job_resources gives none)", where)
    entry["alloc"] = out
    return entry


def _node_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a node of a job's allocation without a name: {value!r}")
    return value


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
        try:
            return [
                (
                    _node_name(r["name"]),
                    units.number(r["cpus"]["count"]) or 0,
                    units.number(r["memory"]["allocated"]) or 0,
                )
                for r in rows
            ]
        except (KeyError, TypeError):
            raise ValueError(
                "job_resources.nodes.allocation: expected {name, cpus.count, "
                "memory.allocated} per node"
            ) from None
    names = expand(str((res or {}).get("nodes") or job.get("nodes") or ""))
    if not names:
        return []
    nodes = (res or {}).get("allocated_nodes")
    rows_old: list[tuple[str, float, float]] = []
    if isinstance(nodes, Mapping):  # v0.0.37/38: {"0": {cpus, memory}} by node index
        nodes = [dict(v, nodename=names[int(k)]) for k, v in nodes.items() if int(k) < len(names)]
    if not isinstance(nodes, list) or not all(isinstance(r, Mapping) for r in nodes):
        nodes = []
    for r in nodes:
        name = _node_name(r.get("nodename"))
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
