"""PBS's JSON (``pbsnodes -a -F json``, ``qstat -f -F json``, ``qstat -Q -f -F json``)
-> a state-file dict.

Each document is recognised by its section: ``nodes`` (pbsnodes), ``Jobs`` (qstat), ``Queue``
(qstat -Q), ``Server`` (qstat -B). qstat leaves ``Jobs`` out when there are none, so a
PBS document (``pbs_version`` or ``pbs_server`` at the top) without any section is an
empty job list. A slot is a CPU (``ncpus``); memory is MiB; see docs/import-pbs.md.

The pieces: :mod:`~xce.importers.pbs_json` (strict JSON), :mod:`~xce.importers.pbs_values`
(PBS's encodings), :mod:`~xce.importers.pbs_jobs` and :mod:`~xce.importers.pbs_request`
(jobs), :mod:`~xce.importers.pbs_capacity` (``resources_assigned``); nodes and queues here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.documents import located
from xce.importers.pbs_capacity import Assigned, WalltimeLimits, add_unattributed
from xce.importers.pbs_jobs import JobMapper, Origin
from xce.importers.pbs_json import parse_pbs_json
from xce.importers.pbs_values import (
    boolean,
    chunks,
    count,
    exec_hosts,
    finite,
    integer,
    mebibytes,
    seconds,
    timestamp,
    vnodes,
)
from xce.importers.report import ImportReport, ImportResult, empty_state, settle_now
from xce.importers.units import resource_name
from xce.inputs import MAX_HOST_SLOTS

__all__ = [
    "CLOSED_STATES",
    "OK_STATES",
    "UNAVAIL_STATES",
    "PbsDocument",
    "boolean",
    "chunks",
    "exec_hosts",
    "host_status",
    "import_pbs",
    "mebibytes",
    "read_pbs_documents",
    "seconds",
    "timestamp",
    "vnodes",
]

SECTIONS = ("nodes", "Jobs", "Queue", "Server")

#: Node states (``pbsnodes``; a node may show several, comma-separated, read in lower
#: case) by host status. Every state OpenPBS 23 and PBS Pro 2022 print is in one of
#: them (docs/import-pbs.md, "Node states"); another is warned and read as ok.
UNAVAIL_STATES = frozenset(
    {"down", "stale", "state-unknown", "unknown", "unresolvable", "sleep", "initializing"}
)
CLOSED_STATES = frozenset(
    {
        "offline",
        "offline_by_mom",
        "maintenance",
        "busy",  # load above the node's limit: PBS starts nothing there
        "provisioning",
        "wait-provisioning",
        "resv-exclusive",  # an exclusive reservation runs there (reservations not imported)
    }
)
OK_STATES = frozenset({"free", "job-busy", "job-exclusive", "job-sharing"})
#: States that say every CPU of the node is in use (``job-exclusive``: by one job).
WHOLE_STATES = frozenset({"job-busy", "job-exclusive"})

#: Node resources mapped to slots/mem/gpu, or naming the node itself.
NODE_BUILTIN = frozenset({"ncpus", "mem", "ngpus", "host", "vnode"})
#: Names a custom resource may not take as an attribute: xce's own and this importer's.
RESERVED = frozenset({"slots", "hname", "any", "mem", "gpu"})
QUEUE_LIMITS = ("max_run", "max_run_res", "max_run_soft", "max_run_res_soft")
#: Documents captured further apart than this (their ``timestamp``) are reported.
CAPTURE_SPREAD = 300


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


def host_status(text: str) -> tuple[str, list[str]]:
    """The xce host status of a node ``state`` (``free``, ``down,offline``), and the
    states it did not know (read as ok)."""
    states = [s.strip().lower() for s in text.split(",") if s.strip()]
    return units.host_status(states, (UNAVAIL_STATES, CLOSED_STATES, OK_STATES))


# --- documents ---------------------------------------------------------------------------


def read_pbs_documents(texts: Iterable[tuple[str, str]]) -> list[PbsDocument]:
    """Parse ``(source, text)`` pairs; InputError (located) for anything not PBS's."""
    docs = []
    for source, text in texts:
        data = parse_pbs_json(source, text)
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
    """``(name, JSON path, body)`` of each entry of the document's section; a name must
    not be empty (a node, job or queue without one cannot be referred to)."""
    out = []
    for name, body in (doc.data.get(doc.kind) or {}).items():
        path = _key(doc.kind, name)
        if not name.strip():
            raise _error(doc.source, path, f"an empty name in {doc.kind}")
        if not isinstance(body, Mapping):
            raise _error(doc.source, path, "expected an object")
        out.append((name, path, body))
    return out


def _now(docs: list[PbsDocument], report: ImportReport) -> int | None:
    """The capture's time: the latest header ``timestamp`` of the nodes and jobs
    documents (else of any); nodes and jobs taken apart are reported (they need not
    agree). Queues change seldom: their time is not compared."""
    stamps = [(d.data["timestamp"], d.source, d.kind) for d in docs if "timestamp" in d.data]
    for value, source, _ in stamps:
        if not isinstance(value, int) or isinstance(value, bool) or not finite(value) or value < 0:
            raise _error(source, "timestamp", f"expected Unix seconds, got {value!r}")
    live = [(v, s) for v, s, kind in stamps if kind in ("nodes", "Jobs")]
    if len(live) > 1 and max(live)[0] - min(live)[0] > CAPTURE_SPREAD:
        (low, first), (high, last) = min(live), max(live)
        report.warn("nodes and jobs captured at different times (they may disagree)",
                    f"{first} {high - low} s before {last}")  # fmt: skip
    pool = live or [(v, s) for v, s, _ in stamps]
    return int(max(pool)[0]) if pool else None


def import_pbs(
    docs: Iterable[PbsDocument], report: ImportReport | None = None, *, now: float | None = None
) -> ImportResult:
    """The state-file dict of PBS documents (nodes, queues, jobs, server); ``now`` (Unix
    seconds) is the capture's time, else the documents' own timestamp."""
    report = report or ImportReport()
    docs = list(docs)
    state = empty_state("PBS")
    given = now is not None
    now = now if now is not None else _now(docs, report)
    origins: dict[int, Origin] = {}
    assigned: dict[str, Assigned] = {}
    names: set[str] = set()
    for doc in (d for d in docs if d.kind == "nodes"):
        for name, path, node in _entries(doc):
            if name in names:
                report.warn("node listed twice (first kept)", f"{doc.source}: {path}")
                continue
            names.add(name)
            with located(doc.source, path, missing=True):
                host, said = _node(name, (doc.source, path), node, report)
            state["hosts"].append(host)
            origins[id(host)] = (doc.source, path)
            if said is not None:
                assigned[name] = said
    _drop_clashing_attributes(state["hosts"], report)
    walltimes: dict[str, int | None] = {}
    server_max: list[int | None] = [None]
    for doc in (d for d in docs if d.kind in ("Queue", "Server")):
        for name, path, body in _entries(doc):
            with located(doc.source, path, missing=True):
                _queue(doc, name, path, body, state, walltimes, server_max, report)
    jobs = JobMapper(state, report, now)
    for doc in (d for d in docs if d.kind == "Jobs"):
        server = doc.data.get("pbs_server")
        for name, path, job in _entries(doc):
            with located(doc.source, path, missing=True):
                jobs.map(doc.source, server, name, path, job)
    jobs.finish()
    limits = WalltimeLimits(
        {q: (w if w is not None else server_max[0]) for q, w in walltimes.items()},
        frozenset(q for q in walltimes if f"queue_{resource_name(q)}" in jobs.known),
    )
    add_unattributed(state, assigned, jobs, limits, now, report)
    origins.update(jobs.origins)
    if jobs.uses_gpu or any("gpu" in h["resources"] for h in state["hosts"]):
        state["resources"]["gpu"] = {"kind": "consumable", "reservation": "per_host"}
    if any("priority" in j for j in state["jobs"]):
        state["picker"] = "priority"
    if now is not None:
        state["now"] = now
        settle_now(state, report, given=given)
    result = ImportResult.of(state, report)
    _check_loads(result.state, origins)
    return result


def _check_loads(state: dict[str, Any], origins: Mapping[int, Origin]) -> None:
    """The state must load; where it would not because of a value PBS printed, the
    error names the input file and the entry's JSON path, not the state's.

    Every value is checked as it is read; this is the net under those checks. A key
    the loader does not know is the importer's own doing (a bug, exit 1): re-raised."""
    from xce.cluster import state_from_dict
    from xce.errors import StateError

    try:
        state_from_dict(state, "<import>")
    except StateError as err:
        if "unknown field" in err.message or not err.path:
            raise
        section, _, rest = err.path.partition("[")
        index = rest.partition("]")[0]
        entries = state.get(section)
        if not isinstance(entries, list) or not index.isdigit() or int(index) >= len(entries):
            raise
        origin = origins.get(id(entries[int(index)]))
        if origin is None:
            raise
        raise _error(origin[0], origin[1], f"{err.message} (as {err.path})") from None


# --- nodes and queues ----------------------------------------------------------------------


def _node(
    name: str, origin: Origin, node: Mapping[str, Any], report: ImportReport
) -> tuple[dict[str, Any], Assigned | None]:
    """A host of a pbsnodes vnode (ncpus -> slots, mem -> MiB, ngpus -> gpu), and what
    its ``resources_assigned`` says is in use."""
    where = f"{origin[0]}: {origin[1]}"
    avail = node.get("resources_available")
    if not isinstance(avail, Mapping) or "ncpus" not in avail:
        raise ValueError("no resources_available.ncpus (the node's CPUs)")
    if isinstance(avail["ncpus"], str):  # PBS prints it as a JSON number
        raise ValueError(f"resources_available.ncpus: expected a count, got {avail['ncpus']!r}")
    ncpus = count(avail["ncpus"], "resources_available.ncpus", MAX_HOST_SLOTS)
    resources: dict[str, int] = {"mem": int(mebibytes(avail["mem"])) if "mem" in avail else 0}
    if "mem" not in avail:
        report.warn("node memory unknown (no resources_available.mem)", where)
    gpus = count(avail.get("ngpus", 0), "resources_available.ngpus")
    if gpus:
        resources["gpu"] = gpus
    states = str(node.get("state", ""))
    status, unknown = host_status(states)
    for flag in unknown:
        report.warn("unknown node state (read as ok)", f"{where}: {flag}")
    attributes = _attributes(avail, where, report)
    queue = node.get("queue") if isinstance(node.get("queue"), str) and node["queue"] else None
    if queue is not None:
        attributes[f"queue_{resource_name(queue)}"] = True
    report.count("hosts")
    if status != "ok":
        report.count(f"hosts {status}")
    host = {
        "name": name,
        "slots": ncpus,
        "resources": resources,
        "attributes": attributes,
        "status": status,
    }
    return host, _assigned(origin, node, ncpus, queue, states)


def _assigned(
    origin: Origin, node: Mapping[str, Any], ncpus: int, queue: str | None, states: str
) -> Assigned | None:
    """``resources_assigned`` (a key it leaves out is nothing assigned); ``job-busy`` and
    ``job-exclusive`` say every CPU is in use whatever it says. None when the node says
    nothing of what is in use."""
    said = node.get("resources_assigned")
    flags = {s.strip().lower() for s in states.split(",")}
    whole = bool(flags & WHOLE_STATES)
    if not isinstance(said, Mapping):
        if said is not None:
            raise ValueError(f"resources_assigned: expected an object, got {said!r}")
        if not whole:
            return None
        said = {}
    slots = count(said.get("ncpus", 0), "resources_assigned.ncpus", MAX_HOST_SLOTS)
    given = isinstance(node.get("resources_assigned"), Mapping)
    return Assigned(
        origin=origin,
        queue=queue,
        slots=ncpus if whole else slots,
        mem=mebibytes(said.get("mem", 0)) if given else None,
        gpu=count(said.get("ngpus", 0), "resources_assigned.ngpus") if given else None,
        exclusive="job-exclusive" in flags,
    )


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
    """A number a state file holds, or a string that is not a size or a duration (those
    have units)."""
    if isinstance(value, str):
        try:
            mebibytes(value)
        except ValueError:
            return ":" not in value
        return False
    return not isinstance(value, bool) and finite(value)


def _queue(
    doc: PbsDocument,
    name: str,
    path: str,
    body: Mapping[str, Any],
    state: dict[str, Any],
    walltimes: dict[str, int | None],
    server_max: list[int | None],
    report: ImportReport,
) -> None:
    """A queue (or the server object: its limits and ``resources_max.walltime``);
    ``walltimes`` gets each execution queue's walltime bound (None: none of its own)."""
    where = f"{doc.source}: {path}"
    for limit in QUEUE_LIMITS:
        if limit in body:
            report.warn("run limit not mapped", f"{where}.{limit}: {body[limit]}")
    maxima, defaults = body.get("resources_max") or {}, body.get("resources_default") or {}
    longest = seconds(maxima["walltime"]) if "walltime" in maxima else 0
    if doc.kind == "Server":
        server_max[0] = longest or server_max[0]
        report.count("server objects (only their limits read)")
        return
    if body.get("queue_type") == "Route":
        report.count("route queues (not mapped)")
        return
    if boolean(body.get("started")) is False:
        report.warn("stopped queue (started=False; xce dispatches from it)", where)
    queue: dict[str, Any] = {"priority": integer(body.get("Priority") or 0, "Priority")}
    if longest > 0:
        queue["max_runtime"] = longest
    if "walltime" in defaults and seconds(defaults["walltime"]) > 0:
        default = seconds(defaults["walltime"])
        if default <= queue.get("max_runtime", default):
            queue["default_runtime"] = default
    state["queues"][name] = queue
    walltimes[name] = longest or None
    report.count("queues")
