"""PBS jobs (``qstat -f [-t] [-x] -F json``) -> ``running`` and ``jobs`` entries.

Running jobs (R, E, S, U) hold what their ``exec_vnode`` (else ``exec_host``) says,
per vnode, tallied so that no host is over-filled and so that a node's
``resources_assigned`` can be compared with them (:mod:`xce.importers.pbs_capacity`).
Waiting jobs (Q, H, W, and array records in B) become pending entries with the job
structure of the state file: priority, hold, begin time, dependency, name, array, the
scheduler's own estimated start. See docs/import-pbs.md."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xce.importers.pbs_request import Request
from xce.importers.pbs_values import (
    AFTER_KINDS,
    BEFORE_KINDS,
    concurrency,
    count,
    depend,
    exec_hosts,
    index_ranges,
    integer,
    mebibytes,
    seconds,
    slurm_indices,
    timestamp,
    vnodes,
)
from xce.importers.report import ImportReport
from xce.importers.units import resource_name
from xce.inputs import MAX_HOST_SLOTS

#: Job states: R running, E exiting, S/U suspended hold their resources.
RUNNING_STATES = frozenset({"R", "E", "S", "U"})
#: Q queued, H held, W waiting (Execution_Time); B an array record some of whose
#: subjobs have begun.
WAITING_STATES = frozenset({"Q", "H", "W", "B"})
FINISHED_STATES = frozenset({"F", "X", "M"})

_SUBJOB = re.compile(r"^(\d+)\[(\d+)\]$")

Origin = tuple[str, str]
"""Where an entry came from: (file, JSON path)."""


@dataclass(slots=True)
class _Waiting:
    """A pending entry with what is resolved once every job is read: its hold and its
    dependency (``before*`` of other jobs add to it)."""

    entry: dict[str, Any]
    where: str
    held: bool  # job_state H
    hold_types: str  # letters of Hold_Types other than n
    after: list[tuple[str, list[str]]] = field(default_factory=list)


class JobMapper:
    """Maps one job at a time (:meth:`map`), then :meth:`finish` resolves what depends
    on other jobs (dependencies, holds, arrays' running subjobs)."""

    def __init__(self, state: dict[str, Any], report: ImportReport, now: float | None) -> None:
        self.state = state
        self.report = report
        self.now = now
        self.hosts = {h["name"]: h for h in state["hosts"]}
        #: What captured running jobs hold per host (slots, gpu, mem in whole MiB).
        self.used: dict[str, dict[str, int]] = {n: {} for n in self.hosts}
        #: Exact MiB held per host (sizes are not whole MiB), to compare with the node's.
        self.mem_exact: dict[str, float] = dict.fromkeys(self.hosts, 0.0)
        #: Hosts with a job known only by exec_host (its memory and GPUs unknown).
        self.cpus_only: set[str] = set()
        self.seen: set[str] = set()
        self.uses_gpu = False
        self.origins: dict[int, Origin] = {}
        #: Each host attribute seen, with one of its values (its kind).
        self.known = {k: v for h in state["hosts"] for k, v in h["attributes"].items()}
        self._waiting: list[_Waiting] = []
        self._before: dict[str, list[tuple[str, str]]] = {}  # target -> [(after kind, id)]
        self._subjobs_running: Counter[str] = Counter()
        self._arrays_begun: dict[str, tuple[str, int]] = {}  # record id -> (where, running)

    def map(self, source: str, server: Any, name: str, path: str, job: Mapping[str, Any]) -> None:
        where = f"{source}: {path}"
        flag = job.get("job_state")
        if not isinstance(flag, str):
            raise ValueError(f"job_state: expected a state letter, got {flag!r}")
        job_id = job_ref(name, server)
        if not job_id:
            raise ValueError(f"an empty job id ({name!r})")
        if job_id in self.seen:
            self.report.warn("job listed twice (first kept)", f"{where} ({job_id})")
            return
        if flag in RUNNING_STATES or flag in WAITING_STATES:
            self._before_edges(job, job_id, server, where)
        if flag in RUNNING_STATES:
            self._running(job, job_id, server, where, (source, path))
        elif flag in WAITING_STATES and _array_of(job, job_id, server) is not None:
            self.report.count("waiting subjobs (in their array's record)")
        elif flag in WAITING_STATES:
            self._pending(job, job_id, flag, server, where, (source, path))
        elif flag in FINISHED_STATES:
            self.report.count("finished jobs (not mapped)")
        else:  # T (in transit), or a letter of a newer PBS
            self.report.warn("job state not mapped", f"{where}: {flag}")

    # --- running ---------------------------------------------------------------------

    def _running(
        self, job: Mapping[str, Any], job_id: str, server: Any, where: str, origin: Origin
    ) -> None:
        entry = _common(job, job_id)
        if "stime" in job:
            entry["start_time"] = timestamp(job["stime"])
        array = _array_of(job, job_id, server)
        if array is not None:
            entry["array_job"] = array
        alloc, exact, cpus_only = _allocation(job)
        if not alloc:
            self.report.warn("running job without exec_vnode or exec_host (skipped)", where)
            return
        missing = [n for n in alloc if n not in self.hosts]
        if missing:
            self.report.warn(
                "running job on a node not in the input (skipped)", f"{where}: {missing[0]}"
            )
            return
        full = [n for n, amounts in alloc.items() if not self._fits(n, amounts)]
        if full:
            self.report.warn("running job over a node's capacity (skipped)", f"{where}: {full[0]}")
            return
        entry["alloc"] = [self._hold(n, amounts) for n, amounts in alloc.items()]
        for name, mib in exact.items():
            self.mem_exact[name] += mib
        if cpus_only:
            self.cpus_only.update(alloc)
        if array is not None:
            self._subjobs_running[array] += 1
        self.state["running"].append(entry)
        self.origins[id(entry)] = origin
        self.report.count("running")
        self.seen.add(job_id)

    def _fits(self, name: str, amounts: Mapping[str, int]) -> bool:
        host, used = self.hosts[name], self.used[name]
        capacity = {"slots": host["slots"], **host["resources"]}
        return all(used.get(k, 0) + v <= capacity.get(k, 0) for k, v in amounts.items())

    def hold_extra(self, name: str, amounts: Mapping[str, int]) -> dict[str, Any]:
        """Hold ``amounts`` on host ``name`` for work no captured job shows: the alloc."""
        self.mem_exact[name] += amounts.get("mem", 0)
        return self._hold(name, amounts)

    def _hold(self, name: str, amounts: Mapping[str, int]) -> dict[str, Any]:
        for key, value in amounts.items():
            self.used[name][key] = self.used[name].get(key, 0) + value
        item: dict[str, Any] = {"host": name, "slots": amounts["slots"]}
        resources = {k: v for k, v in amounts.items() if k != "slots" and v}
        if resources:
            item["resources"] = resources
        return item

    # --- pending ---------------------------------------------------------------------

    def _pending(
        self,
        job: Mapping[str, Any],
        job_id: str,
        flag: str,
        server: Any,
        where: str,
        origin: Origin,
    ) -> None:
        is_array = _boolean(job.get("array"))
        if flag == "B" and not is_array:
            self.report.warn("job state not mapped", f"{where}: B (not an array)")
            return
        entry = _common(job, job_id)
        if "qtime" in job or "ctime" in job:
            entry["submit_time"] = timestamp(job.get("qtime", job.get("ctime")))
        request = Request(job.get("Resource_List") or {}, self.known, where, self.report)
        entry["tasks"], resreq = request.resreq(self._queue_select(entry.get("queue")))
        self.uses_gpu = self.uses_gpu or request.uses_gpu
        if resreq:
            entry["resreq"] = resreq
        if "Priority" in job:
            entry["priority"] = integer(job["Priority"], "Priority")
        estimated = job.get("estimated")
        if isinstance(estimated, Mapping) and "start_time" in estimated:
            entry["scheduler_start"] = timestamp(estimated["start_time"])
        if is_array and not self._array(job, job_id, entry, where):
            return
        if flag == "W":
            self._begin_time(job, entry, where)
        comment = job.get("comment")
        if isinstance(comment, str) and comment:  # PBS's only pend reason: free text
            self.report.reasons[entry["id"]] = comment
            entry["reason"] = comment  # shown beside xce's own (xce schedule)
        waiting = _Waiting(entry, where, flag == "H", _hold_types(job.get("Hold_Types")))
        if "depend" in job:
            waiting.after = self._after(job["depend"], server, where)
        self._waiting.append(waiting)
        self.state["jobs"].append(entry)
        self.origins[id(entry)] = origin
        self.report.count("pending")
        self.seen.add(job_id)

    def _array(
        self, job: Mapping[str, Any], job_id: str, entry: dict[str, Any], where: str
    ) -> bool:
        """An array record (``12[]``, its id ``12``): ``array`` its remaining indices with the
        ``%N`` limit (``max_run_subjobs``, else the ``%N`` of ``array_indices_submitted``).
        False when no index remains (every subjob has started): no pending entry."""
        indices = job.get("array_indices_remaining", job.get("array_indices_submitted"))
        if indices is None:
            raise ValueError("an array (array: True) without array_indices_submitted")
        remaining = index_ranges(indices)
        running = _state_count(job.get("array_state_count"), "Running")
        self._arrays_begun[job_id] = (where, running)
        if not remaining:
            self.report.count("array records with no subjob left to start")
            return False
        limit = job.get("max_run_subjobs")
        limit = count(limit, "max_run_subjobs") if limit is not None else None
        limit = limit or concurrency(job.get("array_indices_submitted"))
        entry["array"] = slurm_indices(remaining) + (f"%{limit}" if limit else "")
        self.report.count("array records")
        return True

    def _begin_time(self, job: Mapping[str, Any], entry: dict[str, Any], where: str) -> None:
        """State W: waiting for its ``Execution_Time`` (``qsub -a``) when that is after the
        capture; else it waits for something xce does not model (file stage-in)."""
        when = job.get("Execution_Time")
        begin = timestamp(when) if when is not None else None
        if begin is not None and (self.now is None or begin > self.now):
            entry["begin_time"] = begin
            self.report.count("begin times (Execution_Time)")
        else:
            self.report.warn(
                "waiting job (W) without a future Execution_Time (mapped as queued)", where
            )

    def _after(self, text: Any, server: Any, where: str) -> list[tuple[str, list[str]]]:
        """The ``after*`` items of ``depend`` with the state's job ids; ``before*`` are
        the other job's (see :meth:`_before_edges`), ``on:N`` is read through them."""
        out = []
        for kind, ids in depend(text):
            if kind in AFTER_KINDS:
                out.append((kind, [job_ref(i, server) for i in ids]))
            elif kind not in BEFORE_KINDS and kind != "on":
                self.report.warn("dependency kind not mapped", f"{where}: {kind}")
        return out

    def _before_edges(self, job: Mapping[str, Any], job_id: str, server: Any, where: str) -> None:
        """``beforeok:B`` on this job A means B runs after A succeeds: ``afterok:A`` on B."""
        if "depend" not in job:
            return
        for kind, ids in depend(job["depend"]):
            if kind in BEFORE_KINDS:
                for target in ids:
                    edge = (BEFORE_KINDS[kind], job_id)
                    self._before.setdefault(job_ref(target, server), []).append(edge)

    def _queue_select(self, queue: Any) -> list[str]:
        """Nodes associated with a queue (their ``queue`` attribute) run only its jobs, and
        its jobs run only there: ``[queue_Q]`` for a job of such a queue, else
        ``[!queue_A, !queue_B]`` for every queue that has nodes."""
        tag = f"queue_{resource_name(queue)}" if isinstance(queue, str) else ""
        if tag in self.known:
            return [tag]
        return [f"!{k}" for k in sorted(self.known) if k.startswith("queue_")]

    # --- once every job is read --------------------------------------------------------

    def finish(self) -> None:
        """Dependencies (own ``after*`` and other jobs' ``before*``), holds, and arrays
        whose running subjobs the capture does not show."""
        for waiting in self._waiting:
            entry = waiting.entry
            items = waiting.after + [(k, [i]) for k, i in self._before.get(entry["id"], [])]
            if items:
                entry["dependency"] = ",".join(f"{k}:{':'.join(ids)}" for k, ids in items)
                self.report.count("dependencies")
            if waiting.held and not (items and set(waiting.hold_types) <= {"s"}):
                entry["hold"] = True  # a system hold with a dependency is the dependency
                self.report.count("held jobs (hold)")
            elif waiting.held:
                self.report.count("held for their dependency (system hold)")
        for record, (where, running) in self._arrays_begun.items():
            if running > self._subjobs_running[record]:
                self.report.warn(
                    "array's running subjobs not in the capture (qstat -t lists them)",
                    f"{where}: {running} running, {self._subjobs_running[record]} captured",
                )


def job_ref(name: str, server: Any) -> str:
    """A job id as the state file writes it: ``1004.pbs`` -> ``1004`` when ``pbs`` is
    the document's server (``@server`` routing dropped); an array record ``12[].pbs`` is
    ``12`` (its subjobs are ``12[3]``)."""
    name = name.partition("@")[0]
    if isinstance(server, str) and name.endswith(f".{server}"):
        name = name[: -len(server) - 1]
    return name.removesuffix("[]")


def _array_of(job: Mapping[str, Any], job_id: str, server: Any) -> str | None:
    """The array record (``12``) a subjob (``12[3]``) belongs to, else None."""
    parent = job.get("array_id")
    if isinstance(parent, str) and parent:
        return job_ref(parent, server)
    match = _SUBJOB.match(job_id)
    return match[1] if match else None


def _state_count(text: Any, state: str) -> int:
    """A count of ``array_state_count`` (``Queued:999 Running:2 Exiting:0 Expired:2``)."""
    if not isinstance(text, str):
        return 0
    for item in text.split():
        name, _, number = item.partition(":")
        if name == state and number.isdigit():
            return int(number)
    return 0


def _hold_types(value: Any) -> str:
    """The hold letters (u user, o operator, s system, p password) of ``Hold_Types``."""
    return "".join(c for c in str(value or "") if c != "n")


def _boolean(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _common(job: Mapping[str, Any], job_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": job_id}
    user = job.get("euser") or str(job.get("Job_Owner") or "").split("@")[0]
    if user:
        entry["user"] = str(user)
    project = job.get("project")
    if not project or project == "_pbs_project_default":
        project = job.get("Account_Name")
    if project:
        entry["project"] = str(project)
    if isinstance(job.get("queue"), str) and job["queue"]:
        entry["queue"] = job["queue"]
    walltime = (job.get("Resource_List") or {}).get("walltime")
    if walltime is not None:
        entry["requested_time"] = seconds(walltime)
    if isinstance(job.get("Job_Name"), str) and job["Job_Name"]:
        entry["name"] = job["Job_Name"]  # singleton dependencies compare it
    return entry


def _allocation(
    job: Mapping[str, Any],
) -> tuple[dict[str, dict[str, int]], dict[str, float], bool]:
    """Per vnode, the slots (CPUs), MiB and GPUs a running job holds, from
    ``exec_vnode`` (with amounts) or else ``exec_host`` (CPUs only, said by the last
    value); and the exact MiB per vnode (sizes need not be whole MiB)."""
    out: dict[str, dict[str, int]] = {}
    exact: dict[str, float] = {}
    cpus_only = False
    if isinstance(job.get("exec_vnode"), str):
        for name, spec in vnodes(job["exec_vnode"]):
            held = out.setdefault(name, {"slots": 0})
            held["slots"] += count(spec.get("ncpus", 0), "exec_vnode ncpus", MAX_HOST_SLOTS)
            if "mem" in spec:
                mib = mebibytes(spec["mem"])
                held["mem"] = held.get("mem", 0) + int(mib)  # rounded down as nodes are
                exact[name] = exact.get(name, 0.0) + mib
            if "ngpus" in spec:
                held["gpu"] = held.get("gpu", 0) + count(spec["ngpus"], "exec_vnode ngpus")
    elif isinstance(job.get("exec_host"), str):
        cpus_only = True
        for name, cpus in exec_hosts(job["exec_host"]):
            out.setdefault(name, {"slots": 0})["slots"] += cpus
    for held in out.values():
        held["slots"] = max(held["slots"], 1)  # a chunk of ncpus=0 still runs there
    return out, exact, cpus_only
