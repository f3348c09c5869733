"""PBS's JSON (``pbsnodes -a -F json``, ``qstat -f -F json``, ``qstat -Q -f -F json``)
-> a state-file dict.

Each document is recognised by its section: ``nodes`` (pbsnodes), ``Jobs`` (qstat), ``Queue``
(qstat -Q), ``Server`` (qstat -B). qstat leaves ``Jobs`` out when there are none, so a
PBS document (``pbs_version`` or ``pbs_server`` at the top) without any section is an
empty job list. A slot is a CPU (``ncpus``); memory is MiB; see docs/import-pbs.md.
"""

from __future__ import annotations

import calendar
import json
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.documents import parse_json
from xce.importers.report import ImportReport, ImportResult, empty_state
from xce.importers.units import resource_name

SECTIONS = ("nodes", "Jobs", "Queue", "Server")

#: Node states (``pbsnodes``; a node may show several, comma-separated) by host status.
UNAVAIL_STATES = frozenset(
    {"down", "stale", "state-unknown", "unknown", "unresolvable", "sleep", "initializing"}
)
CLOSED_STATES = frozenset({"offline", "maintenance", "busy", "provisioning", "wait-provisioning"})
OK_STATES = frozenset({"free", "job-busy", "job-exclusive", "resv-exclusive"})

#: Job states: R running, E exiting, S/U suspended hold their resources; Q waits.
RUNNING_STATES = frozenset({"R", "E", "S", "U"})
NOT_MAPPED_WAITING = {"H": "held job", "W": "waiting job (start time in the future)"}
FINISHED_STATES = frozenset({"F", "X", "M"})

#: Chunk resources that say how to run, not where: no placement meaning.
IGNORED_CHUNK = frozenset({"mpiprocs", "ompthreads"})
#: Node resources mapped to slots/mem/gpu, or naming the node itself.
NODE_BUILTIN = frozenset({"ncpus", "mem", "ngpus", "host", "vnode"})
#: Names a custom resource may not take as an attribute: xce's own and this importer's.
RESERVED = frozenset({"slots", "hname", "any", "mem", "gpu"})
QUEUE_LIMITS = ("max_run", "max_run_res", "max_run_soft", "max_run_res_soft")

_SIZE = re.compile(r"^(\d+)\s*([kmgtp]?)(b|w)?$", re.IGNORECASE)
_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_DURATION = re.compile(r"^\d+(?::\d+){0,2}(?:\.\d+)?$")
_CTIME = "%a %b %d %H:%M:%S %Y"


@dataclass(frozen=True, slots=True)
class PbsDocument:
    """One JSON document PBS printed: where it came from, its section, its body."""

    source: str
    kind: str  # one of SECTIONS
    data: Mapping[str, Any]


def _error(source: str, path: str, message: str) -> InputError:
    return InputError(message, source=source, path=path)


def _key(section: str, name: str) -> str:
    """A JSON path to a named entry: ``Jobs["1.pbs"]`` (ids hold dots)."""
    return f"{section}[{json.dumps(name)}]"


# --- values ----------------------------------------------------------------------------


def mebibytes(value: Any) -> float:
    """A PBS size (``384000000kb``, ``514260mb``, ``8gb``, ``1024``: bytes) in MiB.

    Units are powers of 1024; ``w`` counts 8-byte words."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    match = _SIZE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"not a PBS size: {value!r}")
    number, power, unit = match.groups()
    word = 8 if (unit or "b").lower() == "w" else 1
    return float(int(number) * word * 1024 ** _POWER[power.lower()] / 1024**2)


def seconds(value: Any) -> int:
    """A PBS duration (``01:30:00``, ``05:00``, ``3600``, ``00:00:10.5``) in seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not _DURATION.match(value.strip()):
        raise ValueError(f"not a PBS duration: {value!r}")
    total = 0.0
    for part in value.strip().split(":"):
        total = total * 60 + float(part)
    return int(total)


def timestamp(value: Any) -> int:
    """A PBS time: a ctime string (``Thu Jun 19 21:27:51 2025``, read as UTC: the JSON
    says no zone) or Unix seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a PBS time: {value!r}")
    try:
        return calendar.timegm(time.strptime(" ".join(value.split()), _CTIME))
    except ValueError:
        raise ValueError(f"not a PBS time: {value!r}") from None


def boolean(value: Any) -> bool | None:
    """PBS's booleans (JSON ``true`` or the strings ``True``/``False``), else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def host_status(text: str) -> tuple[str, list[str]]:
    """The xce host status of a node ``state`` (``free``, ``down,offline``), and the
    states it did not know (read as ok)."""
    states = [s.strip().lower() for s in text.split(",") if s.strip()]
    return units.host_status(states, (UNAVAIL_STATES, CLOSED_STATES, OK_STATES))


def chunks(select: Any) -> list[tuple[int, dict[str, str]]]:
    """A select statement as ``(count, {resource: value})`` chunks:
    ``2:ncpus=4:mem=8gb+1:ncpus=1`` -> ``[(2, {ncpus: 4, mem: 8gb}), (1, {ncpus: 1})]``;
    a bare count (``40``, as qstat prints a select of default chunks) is that many
    empty chunks."""
    if isinstance(select, int) and not isinstance(select, bool):
        select = str(select)
    if not isinstance(select, str) or not select.strip():
        raise ValueError(f"not a select statement: {select!r}")
    out = []
    for part in select.split("+"):
        items = [i.strip() for i in part.split(":")]
        count = int(items.pop(0)) if items[0].isdigit() else 1
        if count < 1:
            raise ValueError(f"chunk {part!r} of select {select!r}: a count of at least 1")
        spec: dict[str, str] = {}
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise ValueError(f"cannot read chunk {part!r} of select {select!r}")
            spec[name] = value
        out.append((count, spec))
    return out


def vnodes(exec_vnode: str) -> list[tuple[str, dict[str, str]]]:
    """``(vnode, {resource: value})`` of each piece of an ``exec_vnode``:
    ``(n1:ncpus=4:mem=8gb)+(n2:ncpus=2+n3:ncpus=2)``; a chunk may span vnodes."""
    out = []
    for piece in exec_vnode.replace("(", "").replace(")", "").split("+"):
        name, *items = piece.strip().split(":")
        if not name:
            raise ValueError(f"cannot read exec_vnode {exec_vnode!r}")
        spec = dict(i.partition("=")[::2] for i in items)
        out.append((name, spec))
    return out


def exec_hosts(exec_host: str) -> list[tuple[str, int]]:
    """``(host, cpus)`` of an ``exec_host``: ``n1/0*4+n2/0*4`` (``*N`` CPUs, default 1)."""
    out = []
    for piece in exec_host.split("+"):
        name, sep, rest = piece.strip().partition("/")
        _, star, count = rest.partition("*")
        if not name or not sep or (star and not count.isdigit()):
            raise ValueError(f"cannot read exec_host {exec_host!r}")
        out.append((name, int(count) if star else 1))
    return out


# --- documents ---------------------------------------------------------------------------


def read_pbs_documents(texts: Iterable[tuple[str, str]]) -> list[PbsDocument]:
    """Parse ``(source, text)`` pairs; InputError (located) for anything not PBS's."""
    docs = []
    for source, text in texts:
        data = parse_json(source, text)
        docs.append(PbsDocument(source, _kind(source, data), data))
    return docs


def _kind(source: str, data: Any) -> str:
    if not isinstance(data, dict):
        raise _error(source, "$", "expected a JSON object (PBS's -F json output)")
    if isinstance(data.get("meta"), Mapping) and "plugin" in data["meta"]:
        raise _error(source, "meta.plugin", "a Slurm document: read it with xce import slurm")
    found = [key for key in SECTIONS if key in data]
    if len(found) > 1:
        raise _error(source, "$", f"both {found[0]} and {found[1]} in one PBS document")
    if found:
        if not isinstance(data[found[0]], dict):
            raise _error(source, found[0], "expected an object keyed by name")
        return found[0]
    if "pbs_version" in data or "pbs_server" in data:
        return "Jobs"  # qstat prints no "Jobs" key when there are no jobs
    raise _error(source, "$", f"not a PBS document (none of pbs_version, {', '.join(SECTIONS)})")


def _entries(doc: PbsDocument) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(name, JSON path, body)`` of each entry of the document's section."""
    out = []
    for name, body in (doc.data.get(doc.kind) or {}).items():
        path = _key(doc.kind, name)
        if not isinstance(body, Mapping):
            raise _error(doc.source, path, "expected an object")
        out.append((name, path, body))
    return out


def import_pbs(docs: Iterable[PbsDocument], report: ImportReport | None = None) -> ImportResult:
    """The state-file dict of PBS documents (nodes, queues, jobs, server)."""
    report = report or ImportReport()
    docs = list(docs)
    state = empty_state("PBS")
    names: set[str] = set()
    for doc in (d for d in docs if d.kind == "nodes"):
        for name, path, node in _entries(doc):
            where = f"{doc.source}: {path}"
            if name in names:
                report.warn("node listed twice (first kept)", where)
                continue
            names.add(name)
            with _at(doc.source, path):
                state["hosts"].append(_node(name, where, node, report))
    _drop_clashing_attributes(state["hosts"], report)
    for doc in (d for d in docs if d.kind in ("Queue", "Server")):
        for name, path, body in _entries(doc):
            with _at(doc.source, path):
                _queue(doc, name, path, body, state, report)
    jobs = _JobMapper(state, report)
    for doc in (d for d in docs if d.kind == "Jobs"):
        for name, path, job in _entries(doc):
            with _at(doc.source, path):
                jobs.map(doc, name, path, job)
    if jobs.uses_gpu or any("gpu" in h["resources"] for h in state["hosts"]):
        state["resources"]["gpu"] = {"kind": "consumable", "reservation": "per_host"}
    return ImportResult.of(state, report)


@contextmanager
def _at(source: str, path: str) -> Iterator[None]:
    """A ValueError (or missing key) inside becomes an InputError at ``source: path``."""
    try:
        yield
    except InputError:
        raise
    except KeyError as err:
        raise _error(source, path, f"no {err.args[0]!r}") from None
    except ValueError as err:
        raise _error(source, path, str(err)) from None


# --- nodes and queues ----------------------------------------------------------------------


def _node(name: str, where: str, node: Mapping[str, Any], report: ImportReport) -> dict[str, Any]:
    """A host of a pbsnodes vnode: ncpus -> slots, mem -> MiB, ngpus -> gpu."""
    avail = node.get("resources_available")
    if not isinstance(avail, Mapping) or "ncpus" not in avail:
        raise ValueError("no resources_available.ncpus (the node's CPUs)")
    ncpus = avail["ncpus"]
    if not isinstance(ncpus, int) or isinstance(ncpus, bool) or ncpus < 0:
        raise ValueError(f"resources_available.ncpus: expected a count, got {ncpus!r}")
    resources: dict[str, int] = {"mem": int(mebibytes(avail["mem"])) if "mem" in avail else 0}
    if "mem" not in avail:
        report.warn("node memory unknown (no resources_available.mem)", where)
    if avail.get("ngpus"):
        resources["gpu"] = int(avail["ngpus"])
    status, unknown = host_status(str(node.get("state", "")))
    for flag in unknown:
        report.warn("unknown node state (read as ok)", f"{where}: {flag}")
    attributes = _attributes(avail, where, report)
    if isinstance(node.get("queue"), str):
        attributes[f"queue_{resource_name(node['queue'])}"] = True
    report.count("hosts")
    if status != "ok":
        report.count(f"hosts {status}")
    return {
        "name": name,
        "slots": ncpus,
        "resources": resources,
        "attributes": attributes,
        "status": status,
    }


def _attributes(avail: Mapping[str, Any], where: str, report: ImportReport) -> dict[str, Any]:
    """Custom ``resources_available``: booleans -> tags, plain strings -> string
    attributes, numbers -> static numbers; sizes and durations are reported."""
    out: dict[str, Any] = {}
    for key, value in avail.items():
        name, flag = resource_name(key), boolean(value)
        if key in NODE_BUILTIN:
            continue
        if name in RESERVED or name.startswith("queue_"):
            report.warn("node resource named like an xce one (not mapped)", f"{where}: {key}")
        elif flag is not None:
            out[name] = flag
        elif _plain(value):
            out[name] = value
        else:
            report.warn("node resource not mapped", f"{where}: {key}={value!r}")
    return out


def _drop_clashing_attributes(hosts: list[dict[str, Any]], report: ImportReport) -> None:
    """An attribute of different kinds on different nodes (a tag here, a string there)
    would not load: it is dropped from every node, and reported."""
    kinds: dict[str, set[type]] = {}
    for host in hosts:
        for key, value in host["attributes"].items():
            kinds.setdefault(key, set()).add(bool if isinstance(value, bool) else type(value))
    for key in sorted(k for k, seen in kinds.items() if len(seen) > 1 and seen != {int, float}):
        report.warn("node resource of several kinds (not mapped)", key)
        for host in hosts:
            host["attributes"].pop(key, None)


def _plain(value: Any) -> bool:
    """A number (finite, within a state file's 1e15), or a string that is not a size or a
    duration (those have units)."""
    if isinstance(value, str):
        return not _SIZE.match(value) and ":" not in value
    return isinstance(value, (int, float)) and math.isfinite(value) and abs(value) <= 1e15


def _queue(
    doc: PbsDocument,
    name: str,
    path: str,
    body: Mapping[str, Any],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    where = f"{doc.source}: {path}"
    for limit in QUEUE_LIMITS:
        if limit in body:
            report.warn("run limit not mapped", f"{where}.{limit}: {body[limit]}")
    if doc.kind == "Server":
        report.count("server objects (only their limits read)")
        return
    if body.get("queue_type") == "Route":
        report.count("route queues (not mapped)")
        return
    if boolean(body.get("started")) is False:
        report.warn("stopped queue (started=False; xce dispatches from it)", where)
    queue: dict[str, Any] = {"priority": int(body.get("Priority") or 0)}
    maxima, defaults = body.get("resources_max") or {}, body.get("resources_default") or {}
    if "walltime" in maxima and seconds(maxima["walltime"]) > 0:
        queue["max_runtime"] = seconds(maxima["walltime"])
    if "walltime" in defaults and seconds(defaults["walltime"]) > 0:
        default = seconds(defaults["walltime"])
        if default <= queue.get("max_runtime", default):
            queue["default_runtime"] = default
    state["queues"][name] = queue
    report.count("queues")


# --- jobs ------------------------------------------------------------------------------------


class _JobMapper:
    """Jobs -> ``running`` (R/E/S/U, with their allocation) and ``jobs`` (Q) entries,
    keeping what running work holds per host so that no host is over-filled."""

    def __init__(self, state: dict[str, Any], report: ImportReport) -> None:
        self.state = state
        self.report = report
        self.hosts = {h["name"]: h for h in state["hosts"]}
        self.used: dict[str, dict[str, int]] = {n: {} for n in self.hosts}
        self.seen: set[str] = set()
        self.uses_gpu = False
        #: Each host attribute seen, with one of its values (its kind).
        self.known = {k: v for h in state["hosts"] for k, v in h["attributes"].items()}

    def map(self, doc: PbsDocument, name: str, path: str, job: Mapping[str, Any]) -> None:
        where = f"{doc.source}: {path}"
        flag = job.get("job_state")
        if not isinstance(flag, str):
            raise ValueError(f"job_state: expected a state letter, got {flag!r}")
        job_id = _short_id(name, doc.data.get("pbs_server"))
        if job_id in self.seen:
            self.report.warn("job listed twice (first kept)", f"{where} ({job_id})")
        elif flag in RUNNING_STATES:
            self._running(job, job_id, where)
        elif flag == "Q":
            self.state["jobs"].append(self._pending(job, job_id, where))
            self.report.count("pending")
            self.seen.add(job_id)
        elif flag in NOT_MAPPED_WAITING:
            comment = job.get("comment") or "no comment"
            self.report.warn(f"{NOT_MAPPED_WAITING[flag]} (not mapped)", f"{where}: {comment}")
        elif flag in FINISHED_STATES:
            self.report.count("finished jobs (not mapped)")
        else:
            self.report.warn("job state not mapped", f"{where}: {flag}")

    def _running(self, job: Mapping[str, Any], job_id: str, where: str) -> None:
        entry = _common(job, job_id)
        if "stime" in job:
            entry["start_time"] = timestamp(job["stime"])
        alloc = _allocation(job)
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
        self.state["running"].append(entry)
        self.report.count("running")
        self.seen.add(job_id)

    def _fits(self, name: str, amounts: Mapping[str, int]) -> bool:
        host, used = self.hosts[name], self.used[name]
        capacity = {"slots": host["slots"], **host["resources"]}
        return all(used.get(k, 0) + v <= capacity.get(k, 0) for k, v in amounts.items())

    def _hold(self, name: str, amounts: Mapping[str, int]) -> dict[str, Any]:
        for key, value in amounts.items():
            self.used[name][key] = self.used[name].get(key, 0) + value
        item: dict[str, Any] = {"host": name, "slots": amounts["slots"]}
        resources = {k: v for k, v in amounts.items() if k != "slots" and v}
        if resources:
            item["resources"] = resources
        return item

    def _pending(self, job: Mapping[str, Any], job_id: str, where: str) -> dict[str, Any]:
        entry = _common(job, job_id)
        if "qtime" in job or "ctime" in job:
            entry["submit_time"] = timestamp(job.get("qtime", job.get("ctime")))
        request = _Request(job.get("Resource_List") or {}, self.known, where, self.report)
        entry["tasks"], resreq = request.resreq(self._queue_select(entry.get("queue")))
        self.uses_gpu = self.uses_gpu or request.uses_gpu
        if resreq:
            entry["resreq"] = resreq
        if "Priority" in job:
            self.report.count("priorities read (kept in the report)")
        comment = job.get("comment")
        if isinstance(comment, str) and comment:  # PBS's only pend reason: free text
            self.report.reasons[job_id] = comment
            entry["reason"] = comment  # shown beside xce's own (xce schedule)
        return entry

    def _queue_select(self, queue: Any) -> list[str]:
        """Nodes associated with a queue (their ``queue`` attribute) run only its jobs, and
        its jobs run only there: ``[queue_Q]`` for a job of such a queue, else
        ``[!queue_A, !queue_B]`` for every queue that has nodes."""
        tag = f"queue_{resource_name(queue)}" if isinstance(queue, str) else ""
        if tag in self.known:
            return [tag]
        return [f"!{k}" for k in sorted(self.known) if k.startswith("queue_")]


def _short_id(name: str, server: Any) -> str:
    """``1004.pbs`` -> ``1004`` when ``pbs`` is the document's server."""
    if isinstance(server, str) and name.endswith(f".{server}"):
        return name[: -len(server) - 1]
    return name


def _common(job: Mapping[str, Any], job_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": job_id}
    user = job.get("euser") or str(job.get("Job_Owner") or "").split("@")[0]
    if user:
        entry["user"] = user
    project = job.get("project")
    if not project or project == "_pbs_project_default":
        project = job.get("Account_Name")
    if project:
        entry["project"] = str(project)
    if isinstance(job.get("queue"), str):
        entry["queue"] = job["queue"]
    walltime = (job.get("Resource_List") or {}).get("walltime")
    if walltime is not None:
        entry["requested_time"] = seconds(walltime)
    return entry


def _allocation(job: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Per vnode, the slots (CPUs), MiB and GPUs a running job holds, from
    ``exec_vnode`` (with amounts) or else ``exec_host`` (CPUs only)."""
    out: dict[str, dict[str, int]] = {}
    if isinstance(job.get("exec_vnode"), str):
        for name, spec in vnodes(job["exec_vnode"]):
            held = out.setdefault(name, {"slots": 0})
            held["slots"] += int(spec.get("ncpus", 0))
            if "mem" in spec:
                held["mem"] = held.get("mem", 0) + int(mebibytes(spec["mem"]))  # as nodes
            if "ngpus" in spec:
                held["gpu"] = held.get("gpu", 0) + int(spec["ngpus"])
    elif isinstance(job.get("exec_host"), str):
        for name, cpus in exec_hosts(job["exec_host"]):
            out.setdefault(name, {"slots": 0})["slots"] += cpus
    for held in out.values():
        held["slots"] = max(held["slots"], 1)  # a chunk of ncpus=0 still runs there
    return out


def _span(place: str, count: int, cpus: int) -> str:
    """A chunk is always on one host: one chunk (or pack) -> ``span[hosts=1]``; scatter
    puts each chunk on its own host -> ``span[ptile=CPUs]``; free chunks may share a host,
    which xce cannot say without splitting them: no span."""
    if count == 1 or place == "pack":
        return "span[hosts=1]"
    if place in ("scatter", "vscatter"):
        return f"span[ptile={cpus}]"
    return ""


class _Request:
    """A pending job's ``Resource_List`` (select, ncpus, place, mem) as a requirement."""

    def __init__(
        self, res: Mapping[str, Any], known: Mapping[str, Any], where: str, report: ImportReport
    ) -> None:
        self.res, self.known, self.where, self.report = res, known, where, report
        self.uses_gpu = False

    def resreq(self, queue_terms: list[str]) -> tuple[int, str]:
        """(tasks, requirement): one term per chunk kind, a compound when several."""
        if "select" in self.res:
            parsed = chunks(self.res["select"])
        else:  # -l ncpus=N[,mem=M]: one chunk
            parsed = [(1, {k: str(self.res[k]) for k in ("ncpus", "mem") if k in self.res})]
        default_cpus = self._default_cpus(parsed)
        place = self._place(len(parsed))
        terms = []
        for count, spec in parsed:
            cpus = max(int(spec.get("ncpus", default_cpus)), 1)  # ncpus=0 still takes a slot
            span = _span(place, count, cpus)
            terms.append((count * cpus, self._sections(spec, cpus, queue_terms, span)))
        total = sum(t for t, _ in terms)
        if len(terms) == 1:
            return total, terms[0][1]
        return total, " + ".join(f"{t}*{{{s or '-'}}}" for t, s in terms)

    def _default_cpus(self, parsed: list[tuple[int, dict[str, str]]]) -> int:
        """CPUs of a chunk naming none: the job's ``ncpus`` shared by such chunks (qstat
        prints a select of default chunks as a bare count, ``40`` with ``ncpus: 8320``),
        else 1 as PBS does."""
        bare = sum(c for c, spec in parsed if "ncpus" not in spec)
        given = sum(c * int(spec["ncpus"]) for c, spec in parsed if "ncpus" in spec)
        ncpus = self.res.get("ncpus")
        if bare and isinstance(ncpus, int) and ncpus > given and (ncpus - given) % bare == 0:
            return (ncpus - given) // bare
        return 1

    def _place(self, kinds: int) -> str:
        """The arrangement of ``place`` (pack, scatter, vscatter or free); excl, exclhost
        and group=, and pack over several chunk kinds, have no equivalent: reported."""
        words = str(self.res.get("place") or "free").split(":")
        for word in words:
            if word in ("excl", "exclhost") or word.startswith("group="):
                self.report.warn("place not mapped", f"{self.where}: {word}")
        if "pack" in words and kinds > 1:
            self.report.warn("place=pack of several chunk kinds not mapped", self.where)
            return "free"
        return next((w for w in words if w in ("pack", "scatter", "vscatter")), "free")

    def _sections(
        self, spec: Mapping[str, str], cpus: int, queue_terms: list[str], span: str
    ) -> str:
        selects = list(queue_terms)
        rusage: dict[str, int] = {}
        for key, value in spec.items():
            if key == "ncpus" or key in IGNORED_CHUNK:
                continue
            if key == "mem":
                rusage["mem"] = self._mem_per_cpu(mebibytes(value), cpus)
            elif key == "ngpus":
                if int(value):
                    rusage["gpu"] = int(value)
                    self.uses_gpu = True
            else:
                term = self._select_term(key, value)
                if term:
                    selects.append(term)
        out = []
        if selects:
            out.append(f"select[{' && '.join(selects)}]")
        if rusage:
            out.append("rusage[" + ":".join(f"{k}={v}" for k, v in rusage.items()) + "]")
        if span:
            out.append(span)
        return " ".join(out)

    def _mem_per_cpu(self, mib: float, cpus: int) -> int:
        per_cpu = math.ceil(mib / cpus)
        if per_cpu * cpus != mib:
            self.report.warn(
                "memory per chunk rounded up per CPU", f"{self.where}: {mib:g} MiB / {cpus} CPUs"
            )
        return per_cpu

    def _select_term(self, key: str, value: str) -> str | None:
        """A chunk's custom resource as a select term, when the hosts have it."""
        name = resource_name(key)
        kind = self.known.get(name)
        flag = boolean(value)
        if key in ("host", "vnode") and "'" not in value:
            return f"hname=='{value}'"
        if isinstance(kind, bool) and flag is not None:
            return name if flag else f"!{name}"
        if isinstance(kind, str) and "'" not in value:
            return f"{name}=='{value}'"
        self.report.warn("chunk resource not mapped", f"{self.where}: {key}={value}")
        return None
