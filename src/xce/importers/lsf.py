"""LSF's JSON (``bjobs``/``bhosts``/``lshosts``/``bqueues``/``lsload -o "…" -json``) -> a
state-file dict.

LSF 10.1 prints ``{"COMMAND": "bjobs", "JOBS": n, "RECORDS": [{FIELD: "string"}]}``
(``HOSTS`` or ``QUEUES`` for the others), every value a string, field names as asked
(upper case for bjobs/bhosts/bqueues, as written for lshosts/lsload: both are read
case-blind). A host is the union of its bhosts, lshosts and lsload records; a slot is a
job slot (bhosts ``MAX``); memory, swap and /tmp are MiB, reserved per host as LSF does
by default. See docs/import-lsf.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from xce.errors import InputError
from xce.importers import lsf_values as values
from xce.importers.documents import located, parse_json
from xce.importers.lsf_jobs import JobMapper
from xce.importers.report import ImportReport, ImportResult, empty_state, settle_now
from xce.importers.units import resource_name

__all__ = ["LsfDocument", "import_lsf", "read_lsf_documents"]

#: The commands read, and the key holding their record count.
COMMANDS = {
    "bjobs": "JOBS",
    "bhosts": "HOSTS",
    "lshosts": "HOSTS",
    "lsload": "HOSTS",
    "bqueues": "QUEUES",
}

#: bhosts ``STATUS`` by xce host status (docs/import-lsf.md has the table).
OK_STATUS = frozenset({"ok"})
CLOSED_STATUS = frozenset(
    {
        "closed_adm",  # closed by the administrator (badmin hclose)
        "closed_busy",  # a load index is past its scheduling threshold
        "closed_excl",  # runs an exclusive job
        "closed_full",  # every slot taken (MAX reached)
        "closed_lim",  # LIM locked (lsadmin limlock) or past a threshold
        "closed_lock",  # locked by lsadmin limlock
        "closed_wind",  # outside its dispatch window
        "closed_cu_excl",  # in a compute unit an exclusive job holds
        "closed_eGO",  # closed by EGO (lower-cased below)
        "closed_rc",  # resource connector: being given back or provisioned
        "closed_inactive",
        "closed",
    }
)
UNAVAIL_STATUS = frozenset({"unavail", "unreach", "unlicensed", "closed_rc_unavail"})
#: lsload ``status`` (when there is no bhosts record): LIM's view of the host.
LOAD_OK = frozenset({"ok", "busy", "-ok"})  # busy: a threshold passed; scheduling decides
LOAD_CLOSED = frozenset({"lockw", "locku", "-lockw", "-locku", "-busy"})
LOAD_UNAVAIL = frozenset({"unavail", "unlicensed", "-unavail"})

#: lsload's load indices kept as host attributes (``ut`` as a fraction, as select reads it).
LOAD_FIELDS = ("R15S", "R1M", "R15M", "UT", "PG", "IO", "LS", "IT")
#: lshosts/bhosts columns for memory, swap and /tmp capacity (MiB), first found wins.
CAPACITY_FIELDS = {"mem": ("MAXMEM", "TOTAL_MEM"), "swp": ("MAXSWP",), "tmp": ("MAXTMP",)}
#: Names a RESOURCES entry may not take: xce's own and this importer's.
RESERVED = frozenset(
    {
        "slots",
        "hname",
        "any",
        "local",
        "mem",
        "swp",
        "tmp",
        "type",
        "model",
        "cpuf",
        "ncpus",
        *(f.lower() for f in LOAD_FIELDS),
    }
)
QUEUE_LIMITS = ("MAX", "JL_U", "JL_P", "JL_H")


@dataclass(frozen=True, slots=True)
class LsfDocument:
    """One JSON document an LSF command printed: where from, the command, its records
    (field names upper-cased, values strings)."""

    source: str
    command: str
    records: tuple[tuple[str, Mapping[str, str]], ...]  # (JSON path, record)


def _error(source: str, path: str, message: str) -> InputError:
    return InputError(message, source=source, path=path)


# --- documents ------------------------------------------------------------------------------


def read_lsf_documents(texts: Iterable[tuple[str, str]]) -> list[LsfDocument]:
    """Parse ``(source, text)`` pairs; InputError (file and JSON path) for anything not
    LSF's: not JSON, nested too deep, numbers not finite, a key twice, another
    scheduler's document, an unknown command, records of the wrong shape."""
    docs = []
    for source, text in texts:
        data = parse_json(source, text, strict=True)
        docs.append(_document(source, data))
    return docs


def _document(source: str, data: Any) -> LsfDocument:
    if not isinstance(data, dict):
        raise _error(source, "$", "expected a JSON object (LSF's -json output)")
    if isinstance(data.get("meta"), Mapping):
        raise _error(source, "meta", "a Slurm document: read it with xce import slurm")
    if "pbs_version" in data or "pbs_server" in data:
        raise _error(source, "pbs_version", "a PBS document: read it with xce import pbs")
    command = data.get("COMMAND")
    if not isinstance(command, str):
        raise _error(source, "COMMAND", "no COMMAND: not an LSF -json document")
    if command not in COMMANDS:
        known = ", ".join(sorted(COMMANDS))
        raise _error(source, "COMMAND", f"LSF command {command!r} is not read (only {known})")
    records = data.get("RECORDS", [])
    if not isinstance(records, list):
        raise _error(source, "RECORDS", f"expected a list, got {type(records).__name__}")
    count_key = COMMANDS[command]
    count = data.get(count_key, len(records))
    if isinstance(count, bool) or not isinstance(count, int | str):
        raise _error(source, count_key, f"expected a count, got {count!r}")
    return LsfDocument(source, command, tuple(_record(source, i, r) for i, r in enumerate(records)))


def _record(source: str, i: int, record: Any) -> tuple[str, Mapping[str, str]]:
    path = f"RECORDS[{i}]"
    if not isinstance(record, dict):
        raise _error(source, path, "expected an object (one record)")
    out: dict[str, str] = {}
    for key, value in record.items():
        field = key.upper()
        at = f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"
        if field in out:
            raise _error(source, at, f"field {key!r} given twice (field names are case-blind)")
        if value is None:
            value = ""
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)  # LSF prints strings; a number is read as its text
        elif not isinstance(value, str):
            raise _error(source, at, f"expected a string, got {type(value).__name__}")
        out[field] = value
    return path, out


def _name(doc: LsfDocument, path: str, record: Mapping[str, str], field: str) -> str:
    name = record.get(field)
    if name is None:
        raise _error(doc.source, path, f"a record without {field}")
    if not name.strip():
        raise _error(doc.source, f"{path}.{field}", f"an empty {field}")
    return name.strip()


# --- the import -------------------------------------------------------------------------------


def import_lsf(
    docs: Iterable[LsfDocument],
    report: ImportReport | None = None,
    *,
    now: float | None = None,
    zone: tzinfo = UTC,
) -> ImportResult:
    """The state-file dict of LSF documents. ``now`` is the capture's time (default: the
    clock), the reference for dates printed without a year and the start of
    unattributed work; ``zone`` the zone LSF's dates are in (default UTC). A job
    submitted or started after a given ``now`` is refused; after the clock, reported
    (:func:`~xce.importers.report.settle_now`)."""
    report = report or ImportReport()
    docs = list(docs)
    given_now = now is not None
    now = time.time() if now is None else now
    state = empty_state("LSF")
    for name in ("mem", "swp", "tmp"):  # LSF reserves memory, swap and /tmp per host
        state["resources"][name] = {"kind": "consumable", "reservation": "per_host"}
    hosts = _Hosts(report)
    for command in ("bhosts", "lshosts", "lsload"):
        for doc in (d for d in docs if d.command == command):
            for path, record in doc.records:
                with located(doc.source, path):
                    hosts.add(doc, path, record)
    state["hosts"] = [_compact(h) for h in hosts.finish()]
    for doc in (d for d in docs if d.command == "bqueues"):
        for path, record in doc.records:
            with located(doc.source, path):
                _queue(doc, path, record, state, report)
    jobs = JobMapper(state, report, now, zone)
    for doc in (d for d in docs if d.command == "bjobs"):
        for path, record in doc.records:
            with located(doc.source, path):
                jobs.map(doc.source, path, record)
    jobs.finish()
    _unattributed(hosts, state, now, report)
    state["now"] = values.plain(now)
    settle_now(state, report, given=given_now)
    return ImportResult.of(state, report)


# --- hosts ------------------------------------------------------------------------------------


class _Hosts:
    """Hosts by name, merged from bhosts (slots, status, jobs' slots), lshosts (type,
    model, cpuf, memory, resources) and lsload (load indices)."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        #: (where, record) by host name, of each command.
        self.batch: dict[str, tuple[str, Mapping[str, str]]] = {}  # bhosts
        self.static: dict[str, tuple[str, Mapping[str, str]]] = {}  # lshosts
        self.load: dict[str, tuple[str, Mapping[str, str]]] = {}  # lsload
        self.order: list[str] = []
        self.first: dict[str, tuple[str, str]] = {}  # (source, JSON path) of its first record
        self.allocated: dict[str, int] = {}  # slots bhosts says running/suspended work holds

    def add(self, doc: LsfDocument, path: str, record: Mapping[str, str]) -> None:
        name = _name(doc, path, record, "HOST_NAME")
        where = f"{doc.source}: {path} ({name})"
        table = {"bhosts": self.batch, "lshosts": self.static, "lsload": self.load}[doc.command]
        if name in table:
            self.report.warn(f"host listed twice in {doc.command} (first kept)", where)
            return
        _check(doc.command, record)
        table[name] = (where, record)
        if name not in self.order:
            self.order.append(name)
            self.first[name] = (doc.source, path)

    def finish(self) -> list[dict[str, Any]]:
        """The hosts in first-seen order: bhosts' hosts when there are any (lshosts'
        other hosts are not batch hosts), else lshosts' server hosts."""
        out = []
        for name in self.order:
            with located(*self.first[name]):
                host = self._host(name)
            if host is not None:
                out.append(host)
        _drop_clashing_attributes(out, self.report)
        return out

    def _host(self, name: str) -> dict[str, Any] | None:
        static = self.static.get(name)
        batch = self.batch.get(name)
        if batch is None and self.batch:
            if static is not None:
                self.report.warn(
                    "lshosts host not in bhosts (not a batch host: left out)", static[0]
                )
            return None
        if batch is None and static is None:
            self.report.warn("lsload host not in bhosts or lshosts (left out)", self.load[name][0])
            return None
        lsf = static[1] if static else {}
        if batch is None and lsf.get("SERVER", "Yes").strip().lower() == "no":
            self.report.count("client hosts (not mapped)")
            return None
        where, bhosts = batch if batch else (static[0] if static else "", {})
        host: dict[str, Any] = {"name": name, "slots": self._slots(name, where, bhosts, lsf)}
        host["resources"] = self._capacity(where, bhosts, lsf)
        host["attributes"] = self._attributes(name, where, lsf)
        host["status"] = self._status(name, where, bhosts if batch else None)
        if load_given := self.load.get(name):
            self.report.count("hosts with load indices")
            if any(not values.blank(load_given[1].get(k, "")) for k in ("MEM", "SWP", "TMP")):
                self.report.count("lsload mem/swp/tmp not read (capacity: lshosts maxmem/swp/tmp)")
        self.report.count("hosts")
        if host["status"] != "ok":
            self.report.count(f"hosts {host['status']}")
        return host

    def _slots(
        self, name: str, where: str, record: Mapping[str, str], lsf: Mapping[str, str]
    ) -> int:
        """bhosts ``MAX`` (its job slots); lshosts ``ncpus`` when MAX is ``-`` or there is
        no bhosts record (LSF's default MXJ is the CPUs), warned."""
        batch = name in self.batch
        slots = values.number(record.get("MAX", ""))
        if batch:
            held = sum(
                int(values.number(record.get(k, "")) or 0) for k in ("RUN", "SSUSP", "USUSP")
            )
            self.allocated[name] = held
        if slots is None:
            slots = values.number(lsf.get("NCPUS", "")) or values.number(lsf.get("MAXSLOTS", ""))
            what = "bhosts MAX unlimited or missing" if batch else "no bhosts record"
            self.report.warn(f"host's slots from lshosts ncpus ({what})", where)
        if slots is None or slots < 0 or not float(slots).is_integer():
            raise ValueError(f"{name}: no job slot count (bhosts MAX, lshosts ncpus)")
        return int(slots)

    def _capacity(
        self, where: str, batch: Mapping[str, str], lsf: Mapping[str, str]
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, fields in CAPACITY_FIELDS.items():
            for field in fields:
                amount = values.mebibytes(lsf.get(field) or batch.get(field) or "")
                if amount is not None:
                    out[name] = int(amount)
                    break
        if "mem" not in out:
            self.report.warn(
                "host memory unknown (no lshosts maxmem): jobs asking for mem cannot run there",
                where,
            )
        return out

    def _attributes(self, name: str, where: str, lsf: Mapping[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in ("TYPE", "MODEL"):
            text = lsf.get(field, "").strip()
            if text and not values.blank(text):
                out[field.lower()] = text
        for field in ("CPUF", "NCPUS"):
            number = values.number(lsf.get(field, ""))
            if number is not None:
                out[field.lower()] = values.plain(number)
        out.update(self._resources(where, lsf.get("RESOURCES", "")))
        _, load = self.load.get(name, ("", {}))
        for field in LOAD_FIELDS if load else ():
            text = load.get(field, "")
            number = values.percent(text) if field == "UT" else values.number(text)
            if number is not None:
                out[field.lower()] = values.plain(number)
        return out

    def _resources(self, where: str, text: str) -> dict[str, Any]:
        """lshosts ``RESOURCES`` (``(fs gpu !lic)``, ``(vendor=intel)``): a bare name is a
        tag, ``name=value`` an attribute (a number or a string); ``!name`` (exclusive:
        only jobs asking for it go there) is a tag too, reported."""
        out: dict[str, Any] = {}
        for item in text.strip().strip("()").split():
            if values.blank(item):
                continue
            key, sep, value = item.partition("=")
            if key.startswith("!"):
                key = key[1:]
                self.report.warn("exclusive resource read as a plain tag", f"{where}: {item}")
            name = resource_name(key)
            if name in RESERVED:
                self.report.warn(
                    "host resource named like an xce one (not mapped)", f"{where}: {item}"
                )
                continue
            if not sep:
                out[name] = True
                continue
            try:
                number = values.number(value)
            except ValueError:
                number = None
            out[name] = values.plain(number) if number is not None else value
        return out

    def _status(self, name: str, where: str, batch: Mapping[str, str] | None) -> str:
        if batch is not None:
            text = batch.get("STATUS", "ok").strip()
            tables = (UNAVAIL_STATUS, CLOSED_STATUS, OK_STATUS)
        else:
            load = self.load.get(name)
            text = load[1].get("STATUS", "ok").strip() if load else "ok"
            tables = (LOAD_UNAVAIL, LOAD_CLOSED, LOAD_OK)
        return host_status(text, tables, where, self.report)


#: The numeric fields of each host command, checked where they are read (located).
_NUMBERS = {
    "bhosts": ("MAX", "RUN", "SSUSP", "USUSP"),
    "lshosts": ("CPUF", "NCPUS", "MAXSLOTS"),
    "lsload": tuple(f for f in LOAD_FIELDS if f != "UT"),
}
_COUNTS = ("MAX", "RUN", "SSUSP", "USUSP", "NCPUS", "MAXSLOTS")


def _check(command: str, record: Mapping[str, str]) -> None:
    """Raise ValueError at the first field of a host record that will not read: a
    number (a count: whole and not negative), a size, a utilisation."""
    for field in _NUMBERS[command]:
        number = values.number(record.get(field, ""))
        if field in _COUNTS and number is not None and (number < 0 or not number.is_integer()):
            raise ValueError(f"{field}: expected a count, got {record[field]!r}")
    if command == "lshosts":
        for field in ("MAXMEM", "MAXSWP", "MAXTMP"):
            values.mebibytes(record.get(field, ""))
    if command == "lsload":
        values.percent(record.get("UT", ""))


def host_status(
    text: str,
    tables: tuple[frozenset[str], frozenset[str], frozenset[str]],
    where: str,
    report: ImportReport,
) -> str:
    """The xce status of an LSF host status (case-blind); an unknown one is ``ok``,
    warned (a ``closed_…`` one is ``closed``, warned)."""
    key = text.lower()
    unavail, closed, ok = ({s.lower() for s in t} for t in tables)
    if key in unavail:
        return "unavail"
    if key in closed:
        return "closed"
    if key in ok:
        return "ok"
    if key.startswith("closed"):
        report.warn("unknown host status (read as closed)", f"{where}: {text}")
        return "closed"
    report.warn("unknown host status (read as ok)", f"{where}: {text}")
    return "ok"


def _compact(host: dict[str, Any]) -> dict[str, Any]:
    """A host without its empty sections."""
    return {k: v for k, v in host.items() if v != {}}


def _drop_clashing_attributes(hosts: list[dict[str, Any]], report: ImportReport) -> None:
    """An attribute of different kinds on different hosts would not load: dropped from
    every host, reported."""
    kinds: dict[str, set[type]] = {}
    for host in hosts:
        for key, value in host["attributes"].items():
            kinds.setdefault(key, set()).add(bool if isinstance(value, bool) else type(value))
    for key in sorted(k for k, seen in kinds.items() if len(seen) > 1 and seen != {int, float}):
        report.warn("host resource of several kinds (not mapped)", key)
        for host in hosts:
            host["attributes"].pop(key, None)


# --- queues -----------------------------------------------------------------------------------


def _queue(
    doc: LsfDocument,
    path: str,
    record: Mapping[str, str],
    state: dict[str, Any],
    report: ImportReport,
) -> None:
    """bqueues: ``PRIORITY`` (higher first, as in xce), ``RUNLIMIT``/``MAX_RUNLIMIT`` ->
    ``max_runtime``, ``DEFAULT_RUNLIMIT`` -> ``default_runtime``; an inactive queue
    and slot limits are reported."""
    name = _name(doc, path, record, "QUEUE_NAME")
    where = f"{doc.source}: {path} ({name})"
    if name in state["queues"]:
        report.warn("queue listed twice (first kept)", where)
        return
    priority = values.number(record.get("PRIORITY", ""))
    queue: dict[str, Any] = {"priority": int(priority or 0)}
    limit = values.duration(record.get("MAX_RUNLIMIT") or record.get("RUNLIMIT") or "")
    if limit:
        queue["max_runtime"] = values.plain(limit)
    default = values.duration(record.get("DEFAULT_RUNLIMIT", ""))
    if default and default <= queue.get("max_runtime", default):
        queue["default_runtime"] = values.plain(default)
    status = record.get("STATUS", "Open:Active").strip()
    if ":inact" in status.lower():
        report.warn(
            "inactive queue (LSF dispatches nothing from it; xce does)", f"{where}: {status}"
        )
    elif status.lower().startswith("closed"):
        report.count("closed queues (no new submissions; their jobs are scheduled)")
    for field in QUEUE_LIMITS:
        if not values.blank(record.get(field, "")):
            report.warn("queue slot limit not mapped", f"{where}: {field}={record[field]}")
    state["queues"][name] = queue
    report.count("queues")


# --- what bhosts says is taken, that no captured job holds --------------------------------------


def _unattributed(hosts: _Hosts, state: dict[str, Any], now: float, report: ImportReport) -> None:
    """bhosts ``RUN + SSUSP + USUSP`` slots beyond what the captured running jobs hold
    on a host become running work of its own, ``lsf:HOST:unattributed``, held until the
    longest queue run limit from now (none when a queue has none); fewer is reported."""
    held: dict[str, int] = {}
    for job in state["running"]:
        for claim in job["alloc"]:
            held[claim["host"]] = held.get(claim["host"], 0) + int(claim["slots"])
    limits = [q.get("max_runtime") for q in state["queues"].values()]
    longest = max(float(t) for t in limits) if limits and all(limits) else None
    queue = (
        "normal"
        if "normal" in state["queues"] or not state["queues"]
        else next(iter(state["queues"]))
    )
    slots_of = {h["name"]: h["slots"] for h in state["hosts"]}
    for name, lsf in hosts.allocated.items():
        if name not in slots_of:
            continue
        extra = lsf - held.get(name, 0)
        if extra < 0:
            report.warn(
                "host's running jobs hold more slots than bhosts says (the jobs' kept)",
                f"{hosts.batch[name][0]}: bhosts {lsf}, jobs {held[name]}",
            )
            continue
        if extra == 0:
            continue
        entry: dict[str, Any] = {
            "id": f"lsf:{name}:unattributed",
            "user": "unknown",
            "queue": queue,
            "start_time": values.plain(now),
            "alloc": [{"host": name, "slots": min(extra, slots_of[name] - held.get(name, 0))}],
        }
        if longest:
            entry["requested_time"] = longest
        state["running"].append(entry)
        report.count("unattributed allocations (bhosts slots no captured job holds)")
