"""Slurm's JSON (``squeue/sinfo/scontrol --json``, slurmrestd) -> a state-file dict.

The parser follows ``meta.plugin`` (data_parser or OpenAPI version), never the Slurm
release: a 24.11 server may answer in v0.0.40. Versions differ in a few places, all
read here by shape rather than by version number (a flagged number or a bare one, a
state list or a string, ``job_resources`` before or after v0.0.41), so an unknown
newer version is read best effort with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.documents import parse_json
from xce.importers.jobs import map_job
from xce.importers.report import ImportReport, ImportResult, empty_state
from xce.importers.slurm_policy import map_qos, map_reservation

KNOWN_VERSIONS = ("v0.0.37", "v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43")
_VERSION = re.compile(r"(?:db)?v0\.0\.(\d+)")
SECTIONS = ("nodes", "jobs", "partitions", "reservations", "qos")


@dataclass(frozen=True, slots=True)
class SlurmDocument:
    """One JSON document Slurm printed: where it came from, its version, its body."""

    source: str
    version: str
    data: Mapping[str, Any]


def _error(source: str, path: str, message: str) -> InputError:
    return InputError(message, source=source, path=path)


def plugin_version(meta: Any, source: str) -> str:
    """``v0.0.NN`` from ``meta.plugin`` (``data_parser`` from v0.0.39 on, else ``type``)."""
    plugin = meta.get("plugin") if isinstance(meta, Mapping) else None
    if not isinstance(plugin, Mapping):
        raise _error(source, "meta.plugin", "no meta.plugin: not a Slurm JSON document")
    for key in ("data_parser", "type"):
        match = _VERSION.search(str(plugin.get(key) or ""))
        if match:
            return f"v0.0.{match.group(1)}"
    raise _error(source, "meta.plugin", f"no data_parser or OpenAPI version in {dict(plugin)!r}")


def read_slurm_documents(
    texts: Iterable[tuple[str, str]], report: ImportReport
) -> list[SlurmDocument]:
    """Parse ``(source, text)`` pairs; InputError (located) for anything not Slurm's."""
    docs = []
    for source, text in texts:
        data = parse_json(source, text)
        if not isinstance(data, dict):
            raise _error(source, "$", "expected a JSON object (Slurm's output)")
        if "meta" not in data and ("pbs_version" in data or "pbs_server" in data):
            raise _error(source, "pbs_version", "a PBS document, not Slurm's: use xce import pbs")
        version = plugin_version(data.get("meta"), source)
        if version not in KNOWN_VERSIONS:
            newer = int(version.rsplit(".", 1)[1]) > 43
            if not newer:
                raise _error(
                    source,
                    "meta.plugin",
                    f"data_parser {version} is not supported (v0.0.37 to v0.0.43)",
                )
            report.warn("unknown newer version, read best effort", f"{source}: {version}")
        if not any(key in data for key in SECTIONS):
            raise _error(source, "$", f"none of {', '.join(SECTIONS)} in this Slurm document")
        docs.append(SlurmDocument(source, version, data))
    return docs


def import_slurm(
    docs: Iterable[SlurmDocument], report: ImportReport | None = None, *, now: float | None = None
) -> ImportResult:
    """The state-file dict of Slurm documents (nodes, partitions, jobs); ``now`` (Unix
    seconds) is the capture's time, else read from the documents."""
    report = report or ImportReport()
    docs = list(docs)
    state = empty_state("Slurm")
    hosts: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for i, node in enumerate(_items(doc, "nodes")):
            _node(doc, f"nodes[{i}]", node, hosts, state, report)
    for doc in docs:
        for i, part in enumerate(_items(doc, "partitions")):
            _partition(doc, f"partitions[{i}]", part, state, report)
        for i, resv in enumerate(_items(doc, "reservations")):
            _reservation(doc, f"reservations[{i}]", resv, hosts, state, report)
        for i, qos in enumerate(_items(doc, "qos")):
            map_qos(f"{doc.source}: qos[{i}]", qos, report)
    _preemption(state)
    seen: set[str] = set()
    for doc in docs:
        for i, job in enumerate(_items(doc, "jobs")):
            map_job(doc.source, f"jobs[{i}]", job, hosts, state, seen, report)
    if any(_items(doc, "jobs") for doc in docs):
        _check_allocated(hosts, state["running"], report)
    gres = {r for h in state["hosts"] for r in h["resources"] if r != "mem"}
    for name in sorted(gres):
        state["resources"][name] = {"kind": "consumable", "reservation": "per_host"}
    return ImportResult.of(state, report)


def _check_allocated(
    hosts: Mapping[str, Mapping[str, Any]], running: list[dict[str, Any]], report: ImportReport
) -> None:
    """Report each node whose allocated CPUs (as Slurm counts them) differ from what the
    imported running jobs hold there: an inconsistent capture, or jobs left out (the
    jobs' allocations are what the state holds)."""
    held: dict[str, int] = {}
    for job in running:
        for claim in job["alloc"]:
            held[claim["host"]] = held.get(claim["host"], 0) + int(claim["slots"])
    for name, node in hosts.items():
        slurm, jobs = int(node["alloc_cpus"]), held.get(name, 0)
        if slurm != jobs:
            report.warn(
                "node's allocated CPUs differ from its running jobs' (the jobs' are kept)",
                f"{node['where']}: Slurm {slurm}, jobs {jobs}",
            )


def _reservation(
    doc: SlurmDocument,
    path: str,
    resv: Any,
    hosts: Mapping[str, Any],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    mapped = map_reservation(f"{doc.source}: {path}", resv, hosts, report)
    if mapped is None:
        return
    if any(r["name"] == mapped["name"] for r in state["reservations"]):
        report.warn("reservation listed twice (first kept)", f"{doc.source}: {path}")
        return
    state["reservations"].append(mapped)


def _items(doc: SlurmDocument, key: str) -> list[Any]:
    value = doc.data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _error(doc.source, key, f"expected a list, got {type(value).__name__}")
    return value


def _node(
    doc: SlurmDocument,
    path: str,
    node: Any,
    hosts: dict[str, dict[str, Any]],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    where = f"{doc.source}: {path}"
    if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
        raise _error(doc.source, path, "a node without a name")
    name = node["name"]
    if name in hosts:
        report.warn("node listed twice (first kept)", f"{where} ({name})")
        return
    try:
        cpus = units.number(node.get("cpus")) or 0
        mem = units.number(node.get("real_memory")) or 0
        gres = units.gres(str(node.get("gres") or ""))
        states = units.node_states(node.get("state"), node.get("state_flags"))
    except ValueError as err:
        raise _error(doc.source, path, str(err)) from None
    status, unknown = units.host_status(states)
    for flag in unknown:
        report.warn("unknown node state flag (read as ok)", f"{where}: {flag}")
    if mem <= 1:
        report.warn("node memory unknown (real_memory <= 1 MiB)", where)
    features = node.get("active_features") or node.get("features") or []
    if isinstance(features, str):
        features = [f for f in features.split(",") if f]
    attributes: dict[str, Any] = {units.resource_name(str(f)): True for f in features}
    for part in node.get("partitions") or []:
        attributes[f"partition_{units.resource_name(str(part))}"] = True
    host = {
        "name": name,
        "slots": int(cpus),
        "resources": {"mem": int(mem), **gres},
        "attributes": attributes,
        "status": status,
    }
    hosts[name] = {
        "host": host,
        "alloc_cpus": units.number(node.get("alloc_cpus")) or 0,
        "alloc_memory": units.number(node.get("alloc_memory")) or 0,
        "where": f"{where} ({name})",
    }
    state["hosts"].append(host)
    report.count("hosts")
    if status != "ok":
        report.count(f"hosts {status}")


def _partition(
    doc: SlurmDocument, path: str, part: Any, state: dict[str, Any], report: ImportReport
) -> None:
    if not isinstance(part, Mapping) or not isinstance(part.get("name"), str):
        raise _error(doc.source, path, "a partition without a name")
    prio = part.get("priority")
    tier = prio.get("tier") if isinstance(prio, Mapping) else part.get("priority_tier")
    maxima = _mapping(part.get("maximums"))
    defaults = _mapping(part.get("defaults"))
    max_time = maxima.get("time", part.get("max_time_limit"))
    default_time = defaults.get("time", part.get("default_time_limit"))
    queue: dict[str, Any] = {"priority": units.number(tier) or 0}
    max_minutes = units.number(max_time)
    default_minutes = units.number(default_time)
    if max_minutes:
        queue["max_runtime"] = max_minutes * 60
    if default_minutes and (not max_minutes or default_minutes <= max_minutes):
        queue["default_runtime"] = default_minutes * 60
    mode = part.get("preemption_mode")
    queue["_preempt"] = [str(m).upper() for m in mode] if isinstance(mode, list) else []
    state["queues"][part["name"]] = queue
    report.count("queues")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _preemption(state: dict[str, Any]) -> None:
    """A partition whose preemption mode is on (not OFF/DISABLED) preempts those of
    lower tier (PreemptType=preempt/partition_prio); only v0.0.38 prints the mode."""
    queues = state["queues"]
    for queue in queues.values():
        modes = set(queue.pop("_preempt"))
        if modes and not modes <= {"OFF", "DISABLED"}:
            lower = [n for n, q in queues.items() if q["priority"] < queue["priority"]]
            if lower:
                queue["preempts"] = sorted(lower)
