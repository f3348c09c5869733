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
from xce.importers.jobs import JobContext, job_state, map_job
from xce.importers.report import ImportReport, ImportResult, empty_state, settle_now
from xce.importers.slurm_nodes import map_node, unattributed
from xce.importers.slurm_policy import map_qos, map_reservation
from xce.importers.slurm_priority import PriorityInputs, priority_section, qos_priority
from xce.importers.slurm_priority_text import (
    is_assoc_mgr_text,
    is_config_text,
    is_last_decay_text,
    is_qos_text,
    is_sshare_text,
    read_assoc_mgr,
    read_config,
    read_job_factors,
    read_last_decay,
    read_qos,
    read_sprio_ages,
    read_sshare,
)
from xce.importers.slurm_text import (
    is_partition_text,
    is_priority_text,
    read_partitions,
    read_priorities,
)

KNOWN_VERSIONS = ("v0.0.37", "v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43")
_VERSION = re.compile(r"(?:db)?v0\.0\.(\d+)")
SECTIONS = ("nodes", "jobs", "partitions", "reservations", "qos")
#: Seconds within which a planned start equals Slurm's (its bf_resolution default).
SCHEDULER_RESOLUTION = 60


@dataclass(frozen=True, slots=True)
class SlurmDocument:
    """One JSON document Slurm printed: where it came from, its version, its body."""

    source: str
    version: str
    data: Mapping[str, Any]


def _error(source: str, path: str, message: str) -> InputError:
    return InputError(message, source=source, path=path)


def plugin_version(meta: Any, source: str) -> str:
    """``v0.0.NN`` from ``meta.plugin`` (slurmrestd, and the CLI before 23.02) or
    ``meta.plugins`` (the CLI's ``--json`` of 23.02 on): its ``data_parser``, else the
    OpenAPI ``type``."""
    meta = meta if isinstance(meta, Mapping) else {}
    key = "plugin" if isinstance(meta.get("plugin"), Mapping) else "plugins"
    plugin = meta.get(key)
    if not isinstance(plugin, Mapping):
        raise _error(source, "meta.plugin", "no meta.plugin: not a Slurm JSON document")
    for name in ("data_parser", "type"):
        match = _VERSION.search(str(plugin.get(name) or ""))
        if match:
            return f"v0.0.{match.group(1)}"
    raise _error(source, f"meta.{key}", f"no data_parser or OpenAPI version in {dict(plugin)!r}")


def read_slurm_documents(
    texts: Iterable[tuple[str, str]], report: ImportReport
) -> list[SlurmDocument]:
    """Parse ``(source, text)`` pairs; InputError (located) for anything not Slurm's."""
    docs = []
    for source, text in texts:
        if is_partition_text(text):  # 22.05's scontrol has no --json: its text
            partitions = read_partitions(source, text)
            factors = read_job_factors(source, text)
            for part in partitions:
                if part["name"] in factors:
                    part["priority_job_factor"] = factors[part["name"]]
            docs.append(SlurmDocument(source, "scontrol", {"partitions": partitions}))
            continue
        if is_priority_text(text):  # sprio has no --json: its per-partition priorities
            rows = read_priorities(source, text)
            ages = read_sprio_ages(source, text)
            docs.append(SlurmDocument(source, "sprio", {"job_priorities": rows, "ages": ages}))
            continue
        text_doc = _priority_text(source, text)
        if text_doc is not None:
            docs.append(text_doc)
            continue
        data = parse_json(source, text, strict=True)
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


def _priority_text(source: str, text: str) -> SlurmDocument | None:
    """The multifactor priority's inputs Slurm prints as text, or None."""
    readers = (
        (is_config_text, "slurm_config", read_config),
        (is_sshare_text, "sshare", read_sshare),
        (is_assoc_mgr_text, "assoc_mgr", read_assoc_mgr),
        (is_qos_text, "qos_priorities", read_qos),
        (is_last_decay_text, "last_decay", read_last_decay),
    )
    for test, kind, read in readers:
        if test(text):
            return SlurmDocument(source, kind, {kind: read(source, text)})
    return None


def _priority_inputs(docs: list[SlurmDocument], report: ImportReport) -> PriorityInputs:
    """What the documents give of the multifactor inputs; one of each kind (the first,
    the rest reported), QOS priorities from the text and from ``/qos``."""
    inputs = PriorityInputs()
    for doc in docs:
        for kind in ("slurm_config", "sshare", "assoc_mgr", "last_decay"):
            if kind not in doc.data:
                continue
            attr = {"slurm_config": "config"}.get(kind, kind)
            if getattr(inputs, attr) is not None:
                report.warn("multifactor input given twice (first kept)", doc.source)
                continue
            setattr(inputs, attr, (doc.source, doc.data[kind]))
        inputs.qos.update(doc.data.get("qos_priorities", {}))
        inputs.ages.update(doc.data.get("ages", {}))
        for qos in _items(doc, "qos"):
            named = qos_priority(qos)
            if named is not None:
                inputs.qos.setdefault(*named)
    return inputs


def import_slurm(
    docs: Iterable[SlurmDocument], report: ImportReport | None = None, *, now: float | None = None
) -> ImportResult:
    """The state-file dict of Slurm documents (nodes, partitions, jobs); ``now`` (Unix
    seconds) is the capture's time, else when the documents say they were made."""
    report = report or ImportReport()
    docs = list(docs)
    state = empty_state("Slurm")
    hosts: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for i, node in enumerate(_items(doc, "nodes")):
            map_node(doc.source, f"nodes[{i}]", node, hosts, state, report)
    for doc in docs:
        for i, part in enumerate(_items(doc, "partitions")):
            _partition(doc, f"partitions[{i}]", part, state, report)
        for i, resv in enumerate(_items(doc, "reservations")):
            _reservation(doc, f"reservations[{i}]", resv, hosts, state, report)
        for i, qos in enumerate(_items(doc, "qos")):
            map_qos(f"{doc.source}: qos[{i}]", qos, report)
    if not any(_items(doc, "partitions") for doc in docs):
        _queues_from_names(docs, hosts, state, report)
    _preemption(state)
    _reserved_nodes(hosts, state, report)
    features = feature_tags(state["hosts"], report)
    given = now is not None
    now = now if now is not None else capture_time(docs)
    start = now if now is not None else _latest_time(docs)
    sockets = max((h["sockets"] for h in hosts.values()), default=1)
    priorities = {
        (str(row["job_id"]), str(row["partition"])): row["priority"]
        for doc in docs
        for row in _items(doc, "job_priorities")
    }
    inputs = _priority_inputs(docs, report)
    ctx = JobContext(hosts, state, set(), report, start, sockets, features, priorities)
    ctx.multifactor = inputs.multifactor()
    for doc in docs:
        for i, job in enumerate(_items(doc, "jobs")):
            map_job(doc.source, f"jobs[{i}]", job, ctx)
    section, multifactor = priority_section(inputs, state, ctx.accrue, start, report)
    for queue in state["queues"].values():
        factor = queue.pop("_job_factor", None)
        if section is not None and factor is not None:
            queue["priority_job_factor"] = factor
    unattributed(hosts, state, start, report)
    gres = {r for h in state["hosts"] for r in h["resources"] if r != "mem"}
    for name in sorted(gres):
        state["resources"][name] = {"kind": "consumable", "reservation": "per_host"}
    if now is not None:
        state["now"] = now
        settle_now(state, report, given=given)
    state["scheduler_resolution"] = SCHEDULER_RESOLUTION
    if any("priority" in job for job in state["jobs"]):
        state["picker"] = "priority"
    if section is not None:
        state["priority"] = section
        if multifactor:
            state["picker"] = "multifactor"
    return ImportResult.of(state, report)


def feature_tags(hosts: list[dict[str, Any]], report: ImportReport) -> dict[str, str]:
    """Node features named as a resource of the cluster (a feature ``gpu`` beside the
    GRES ``gpu``, as real sites write them) become the tag ``feature_NAME`` on every host,
    reported; the map says so to the jobs' constraints. Other features keep their name."""
    resources = {r for h in hosts for r in h["resources"]} | {"slots", "hname", "any"}
    clash = {a for h in hosts for a, v in h["attributes"].items() if v is True} & resources
    renamed = {name: f"feature_{name}" for name in sorted(clash)}
    for h in hosts:
        for name, tag in renamed.items():
            if name in h["attributes"]:
                h["attributes"][tag] = h["attributes"].pop(name)
    for name, tag in renamed.items():
        report.warn("node feature named as a resource (its tag renamed)", f"{name} -> {tag}")
    return renamed


def capture_time(docs: Iterable[SlurmDocument]) -> float | None:
    """When the documents say they were made: the latest ``last_update`` (slurmrestd
    and the CLI from v0.0.40: when slurmctld last changed what they show) or
    ``last_backfill``; None when no document says (v0.0.37 to v0.0.39)."""
    times = []
    for doc in docs:
        for key in ("last_update", "last_backfill"):
            try:
                value = units.number(doc.data.get(key))
            except ValueError as err:
                raise _error(doc.source, key, str(err)) from None
            if value:
                times.append(value)
    return max(times, default=None)


def _latest_time(docs: Iterable[SlurmDocument]) -> float | None:
    """The latest start (of a running job: a pending one's is Slurm's expected start, in
    the future) or submit time of the jobs: the state's own default now."""
    latest: float | None = None
    for doc in docs:
        for job in _items(doc, "jobs"):
            if not isinstance(job, Mapping):
                continue
            try:
                started = bool({"RUNNING", "SUSPENDED"} & set(job_state(job)))
            except ValueError:
                continue  # refused, located, where the job is mapped
            for key in ("start_time", "submit_time") if started else ("submit_time",):
                try:
                    value = units.number(job.get(key))
                except ValueError:
                    continue  # refused, located, where the job is mapped
                if value and (latest is None or value > latest):
                    latest = value
    return latest


def _queues_from_names(
    docs: list[SlurmDocument],
    hosts: Mapping[str, Mapping[str, Any]],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    """Without partitions in the capture (22.05's ``sinfo --json`` has none), a queue
    per partition the nodes and jobs name, all of tier 0: which partition Slurm serves
    first is unknown, which changes decisions (reported)."""
    names = [p for node in hosts.values() for p in node["partitions"]]
    for doc in docs:
        for job in _items(doc, "jobs"):
            part = job.get("partition") if isinstance(job, Mapping) else None
            if isinstance(part, str) and part:
                names.extend(part.split(","))
    names = [n for n in dict.fromkeys(n.strip() for n in names) if n]
    if not names:
        return
    for name in names:
        state["queues"][name] = {"priority": 0, "_preempt": []}
    report.warn(
        "no partitions in the input: queues made from the nodes' and jobs' partitions, "
        "tiers unknown (all 0; import scontrol show partitions --json or /partitions)",
        ", ".join(names[:5]) + (", ..." if len(names) > 5 else ""),
    )


def _reserved_nodes(
    hosts: Mapping[str, Mapping[str, Any]], state: Mapping[str, Any], report: ImportReport
) -> None:
    """A node Slurm flags RESERVED or MAINTENANCE is ok: the reservation restricts it.
    Report those no imported reservation holds (xce may place any job there)."""
    reserved = {h for r in state["reservations"] for h in r["hosts"]}
    for name, node in hosts.items():
        flags = {"RESERVED", "MAINTENANCE"} & set(node["states"])
        if flags and name not in reserved:
            report.warn(
                "node in a reservation not in the input (import /reservations: else xce "
                "may place any job there)",
                f"{node['where']}: {', '.join(sorted(flags))}",
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


def _partition(
    doc: SlurmDocument, path: str, part: Any, state: dict[str, Any], report: ImportReport
) -> None:
    if not isinstance(part, Mapping) or not isinstance(part.get("name"), str):
        raise _error(doc.source, path, "a partition without a name")
    if not part["name"].strip():
        raise _error(doc.source, f"{path}.name", "a partition with an empty name")
    try:
        queue = _queue(part)
    except ValueError as err:
        raise _error(doc.source, path, str(err)) from None
    if part["name"] in state["queues"]:
        report.warn("partition listed twice (first kept)", f"{doc.source}: {path}")
        return
    state["queues"][part["name"]] = queue
    report.count("queues")


def _queue(part: Mapping[str, Any]) -> dict[str, Any]:
    """A partition's queue: tier, MaxTime and DefaultTime (minutes -> seconds), and its
    preemption mode (v0.0.38). v0.0.38 prints -1 for "unlimited" in its bare numbers."""
    prio = part.get("priority")
    tier = prio.get("tier") if isinstance(prio, Mapping) else part.get("priority_tier")
    maxima = _mapping(part.get("maximums"))
    defaults = _mapping(part.get("defaults"))
    max_time = maxima.get("time", part.get("max_time_limit"))
    default_time = defaults.get("time", part.get("default_time_limit"))
    priority = units.number(tier, negative_unset=True) or 0
    if not float(priority).is_integer():
        raise ValueError(f"priority tier {priority!r} is not a whole number")
    queue: dict[str, Any] = {"priority": int(priority)}
    max_minutes = units.number(max_time, negative_unset=True)
    default_minutes = units.number(default_time, negative_unset=True)
    for minutes in (max_minutes, default_minutes):
        if minutes and minutes * 60 > units.MAX_NUMBER:
            raise ValueError(f"a time limit of {minutes} minutes is too large")
    if max_minutes:
        queue["max_runtime"] = max_minutes * 60
    if default_minutes and (not max_minutes or default_minutes <= max_minutes):
        queue["default_runtime"] = default_minutes * 60
    mode = part.get("preemption_mode")
    queue["_preempt"] = [str(m).upper() for m in mode] if isinstance(mode, list) else []
    factor = units.number(prio.get("job_factor") if isinstance(prio, Mapping) else
                          part.get("priority_job_factor"))  # fmt: skip
    if factor is not None:
        if not float(factor).is_integer() or factor > 0xFFFF:
            raise ValueError(f"PriorityJobFactor {factor!r} is not a whole number to 65535")
        queue["_job_factor"] = int(factor)  # written with a priority section only
    return queue


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
