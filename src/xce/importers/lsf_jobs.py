"""bjobs records -> ``running`` (RUN, USUSP, SSUSP: with their hosts) and ``jobs``
(PEND, PSUSP, WAIT) entries; finished ones are counted, and kept aside to tell whether a
dependency can still be met.

A pending array's elements (bjobs lists each pending element, ``sim[7]``, under the
array's job id) become one record whose ``array`` holds their indices as ranges; a
summary record (``sim[1-100]%5``) keeps its index list as written. Running elements are
``ID_INDEX`` with ``array_job`` (docs/import-lsf.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from datetime import tzinfo
from typing import Any

from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers import lsf_values as values
from xce.importers.report import ImportReport
from xce.inputs import MAX_TASKS
from xce.resreq import PrimaryResreq, parse, requirement_for_job

__all__ = ["JobMapper"]

RUNNING = frozenset({"RUN", "USUSP", "SSUSP"})  # suspended jobs keep their slots
PENDING = frozenset({"PEND", "PSUSP", "WAIT"})  # PSUSP: suspended while pending = held
FINISHED = frozenset({"DONE", "EXIT", "POST_DONE", "POST_ERR"})
#: The requirement fields, most complete first: job + queue + application merged, the
#: one LSF used, the user's own -R.
RESREQ_FIELDS = ("COMBINED_RESREQ", "EFFECTIVE_RESREQ", "RESREQ")
_ID = re.compile(r"^(\d+)(?:\[(\d+)\])?$")
_AT_LIMIT = re.compile(r"job array has reached its job slot limit", re.IGNORECASE)
_NEVER = re.compile(r"never (?:be )?satisfied", re.IGNORECASE)


class JobMapper:
    """Maps one bjobs record at a time (:meth:`map`); :meth:`finish` merges pending
    array elements, resolves dependencies on finished jobs, and sets the picker."""

    def __init__(
        self, state: dict[str, Any], report: ImportReport, now: float, zone: tzinfo
    ) -> None:
        self.state, self.report, self.now, self.zone = state, report, now, zone
        self.hosts = {h["name"]: h for h in state["hosts"]}
        self.used: dict[str, dict[str, int]] = {n: {} for n in self.hosts}
        self.seen: set[str] = set()
        self.finished: dict[str, str] = {}  # job id -> DONE / EXIT
        self.arrays: dict[str, dict[str, Any]] = {}  # pending array records by job id
        self.catalog = state_from_dict(
            {"resources": state["resources"], "hosts": state["hosts"]}, "<lsf hosts>"
        ).catalog

    def map(self, source: str, path: str, record: Mapping[str, str]) -> None:
        where = f"{source}: {path}"
        if "ERROR" in record:
            self.report.warn("bjobs error record (not mapped)", f"{where}: {record['ERROR']}")
            return
        text = record.get("JOBID", "").strip()
        match = _ID.match(text)
        if not match:
            raise ValueError(f"JOBID: expected a job id (digits), got {text!r}")
        base, index = match.group(1), match.group(2) or _index(record)
        stat = record.get("STAT", "").strip().upper()
        where = f"{where} ({text})"
        if not stat:
            self.report.warn("job without STAT (not mapped)", where)
        elif stat in FINISHED:
            self.finished[f"{base}_{index}" if index else base] = stat
            self.report.count("finished jobs (not mapped)")
        elif stat in RUNNING:
            self._running(record, base, index, where)
        elif stat in PENDING:
            self._pending(record, base, index, stat, where)
        else:
            self.report.warn("job state not mapped", f"{where}: {stat}")

    # --- running ------------------------------------------------------------------------

    def _running(self, record: Mapping[str, str], base: str, index: str | None, where: str) -> None:
        job_id = f"{base}_{index}" if index else base
        if self._twice(job_id, where):
            return
        hosts = values.exec_hosts(record.get("EXEC_HOST", ""))
        if not hosts:
            self.report.warn("running job without EXEC_HOST (skipped)", where)
            return
        missing = [h for h, _ in hosts if h not in self.hosts]
        if missing:
            self.report.warn(
                "running job on a host not in the input (skipped)", f"{where}: {missing[0]}"
            )
            return
        per_host = self._reserved(record)
        amounts = {h: {"slots": n, **per_host} for h, n in hosts}
        full = [h for h, a in amounts.items() if not self._fits(h, a)]
        if full:
            self.report.warn("running job over a host's capacity (skipped)", f"{where}: {full[0]}")
            return
        entry = self._common(record, job_id)
        start = values.timestamp(record.get("START_TIME", ""), self.now, self.zone, past=True)
        if start is not None:
            entry["start_time"] = values.plain(start)
        if index:
            entry["array_job"] = base
        entry["alloc"] = [self._hold(h, a) for h, a in amounts.items()]
        self.state["running"].append(entry)
        self.report.count("running")

    def _reserved(self, record: Mapping[str, str]) -> dict[str, int]:
        """What the job's rusage reserves per host of mem, swp and tmp (LSF's default
        method: per host), from its requirement when it parses."""
        text = _resreq_text(record)
        try:
            resreq = parse(text) if text else None
        except InputError:
            return {}
        if not isinstance(resreq, PrimaryResreq):
            return {}
        amounts = resreq.rusage.amounts
        return {k: int(-(-amounts[k] // 1)) for k in ("mem", "swp", "tmp") if amounts.get(k)}

    def _fits(self, name: str, amounts: Mapping[str, int]) -> bool:
        host, used = self.hosts[name], self.used[name]
        capacity = {"slots": host["slots"], **host.get("resources", {})}
        return (
            all(used.get(k, 0) + v <= capacity[k] for k, v in amounts.items() if k in capacity)
            and used.get("slots", 0) + amounts["slots"] <= host["slots"]
        )

    def _hold(self, name: str, amounts: Mapping[str, int]) -> dict[str, Any]:
        capacity = self.hosts[name].get("resources", {})
        kept = {k: v for k, v in amounts.items() if k == "slots" or k in capacity}
        for key, value in kept.items():
            self.used[name][key] = self.used[name].get(key, 0) + value
        item: dict[str, Any] = {"host": name, "slots": kept["slots"]}
        resources = {k: v for k, v in kept.items() if k != "slots"}
        if resources:
            item["resources"] = resources
        return item

    # --- pending ------------------------------------------------------------------------

    def _pending(
        self, record: Mapping[str, str], base: str, index: str | None, stat: str, where: str
    ) -> None:
        name = record.get("JOB_NAME", "")
        spec = values.array_spec(name) if name else None
        if spec is not None and not index and not spec[1].isdigit():
            self._array(record, base, where, spec)  # a summary record: sim[1-100]%5
            return
        if index or (spec is not None and spec[1].isdigit()):
            element = index or (spec[1] if spec else "")
            record_ = self.arrays.get(base)
            if record_ is not None:
                record_["_indices"].append(int(element))
                return
            entry = self._entry(record, base, stat, where)
            entry["_indices"], entry["_specs"] = [int(element)], []
            entry["_limit"] = spec[2] if spec else None
            if spec:
                entry["name"] = spec[0]
            self.arrays[base] = entry
            return
        if self._twice(base, where):
            return
        self.state["jobs"].append(self._entry(record, base, stat, where))
        self.report.count("pending")

    def _array(
        self, record: Mapping[str, str], base: str, where: str, spec: tuple[str, str, int | None]
    ) -> None:
        entry = self.arrays.get(base)
        if entry is None:
            entry = self._entry(record, base, record.get("STAT", "").upper(), where)
            entry["_indices"], entry["_specs"], entry["_limit"] = [], [], None
            self.arrays[base] = entry
        entry["name"] = spec[0]
        entry["_specs"].append(spec[1])
        entry["_limit"] = spec[2] if spec[2] is not None else entry["_limit"]

    def _entry(
        self, record: Mapping[str, str], job_id: str, stat: str, where: str
    ) -> dict[str, Any]:
        entry = self._common(record, job_id)
        self._tasks(record, entry)
        resreq = _resreq_text(record)
        if resreq:
            self._requirement(resreq, entry, where)
        for field, key, past in (
            ("SUBMIT_TIME", "submit_time", True),
            ("ESTIMATED_START_TIME", "scheduler_start", False),
        ):
            moment = values.timestamp(record.get(field, ""), self.now, self.zone, past=past)
            if moment is not None:
                entry[key] = values.plain(moment)
        begin = values.timestamp(record.get("SPECIFIED_START_TIME", ""), self.now, self.zone)
        if begin is not None and begin > self.now:
            entry["begin_time"] = values.plain(begin)
        priority = values.number(record.get("JOB_PRIORITY", ""))
        if priority is not None:
            entry["priority"] = values.plain(priority)
        if stat == "PSUSP":
            entry["hold"] = True
            self.report.count("held jobs (PSUSP)")
        reason = " ".join(record.get("PEND_REASON", "").split())
        if reason:
            entry["reason"] = reason
            self.report.reasons[job_id] = reason
        entry["_where"] = where
        dependency, why = values.dependency(record.get("DEPENDENCY", ""))
        if why:
            self.report.warn(
                "dependency not mapped (job kept without it)",
                f"{where}: {why} in {record['DEPENDENCY']!r}",
            )
        elif dependency:
            entry["dependency"] = dependency
        return entry

    def _tasks(self, record: Mapping[str, str], entry: dict[str, Any]) -> None:
        """``bsub -n min,max`` (MIN_/MAX_REQ_PROC) as a range, else the slots asked
        (NREQ_SLOT, else SLOTS), else 1."""
        low = _slots(record, "MIN_REQ_PROC")
        high = _slots(record, "MAX_REQ_PROC")
        if low and high and low > high:
            raise ValueError(f"MIN_REQ_PROC {low} is more than MAX_REQ_PROC {high}")
        if low and high and low != high:
            entry["min_tasks"], entry["max_tasks"] = int(low), int(high)
            return
        for field in ("NREQ_SLOT", "SLOTS"):
            asked = _slots(record, field)
            if asked:
                entry["tasks"] = int(high or low or asked)
                return
        entry["tasks"] = int(high or low or 1)

    def _requirement(self, text: str, entry: dict[str, Any], where: str) -> None:
        """Keep LSF's requirement when xce reads it against the imported hosts."""
        low = entry.get("min_tasks", entry.get("tasks"))
        high = entry.get("max_tasks", entry.get("tasks"))
        try:
            requirement_for_job(text, self.catalog, low, high)
        except InputError as err:
            first = str(err).splitlines()[0]
            self.report.warn(
                "requirement not valid in xce (job kept without it)", f"{where}: {text!r}: {first}"
            )
            return
        entry["resreq"] = text

    # --- shared -------------------------------------------------------------------------

    def _common(self, record: Mapping[str, str], job_id: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": job_id}
        for key, field in (("user", "USER"), ("queue", "QUEUE"), ("project", "PROJ_NAME")):
            value = record.get(field, "").strip()
            if value and not values.blank(value):
                entry[key] = value
        name = record.get("JOB_NAME", "").strip()
        if name:
            spec = values.array_spec(name)
            entry["name"] = spec[0] if spec else name
        limit = values.duration(record.get("RUNTIMELIMIT", ""))
        if limit:
            entry["requested_time"] = values.plain(limit)
        return entry

    def _twice(self, job_id: str, where: str) -> bool:
        if job_id in self.seen:
            self.report.warn("job listed twice (first kept)", where)
            return True
        self.seen.add(job_id)
        return False

    def finish(self) -> None:
        """Array records into ``jobs``; a dependency that can no longer be met (on a
        finished job that ended the other way) holds its job; ``picker: priority``
        when any job has a priority."""
        running = Counter(j.get("array_job") for j in self.state["running"])
        for base, entry in self.arrays.items():
            indices, specs, limit = (entry.pop(k) for k in ("_indices", "_specs", "_limit"))
            if self._twice(base, f"array {base}"):
                continue
            if not limit and _AT_LIMIT.search(entry.get("reason") or "") and running[base]:
                # bjobs prints no %N on pending elements, but says when the array is at
                # it: as many as run now is the limit LSF applies
                limit = running[base]
                self.report.warn(
                    "array limit taken from the running elements (LSF says it is reached)",
                    f"{entry['_where']}: %{limit}",
                )
            parts = [*specs, values.compress(indices)] if indices else specs
            entry["array"] = ",".join(parts) + (f"%{limit}" if limit else "")
            self.state["jobs"].append(entry)
            self.report.count("pending arrays")
        for entry in self.state["jobs"]:
            self._never(entry)
            del entry["_where"]
        if any("priority" in j for j in self.state["jobs"]):
            self.state["picker"] = "priority"

    def _never(self, entry: dict[str, Any]) -> None:
        reason = entry.get("reason") or ""
        items = [i.split(":", 1) for i in re.split(r"[,?]", entry.get("dependency") or "") if i]
        failed = [self._failed(kind, job) for kind, job in items]
        anyone = "?" in (entry.get("dependency") or "")
        never = bool(items) and (all(failed) if anyone else any(failed))
        if never or _NEVER.search(reason):
            entry["hold"] = True
            entry.pop("dependency", None)
            self.report.warn("dependency never satisfied (held)", entry["_where"])
        elif anyone and any(failed):  # an item that can never hold is no way out: left out
            left = [f"{k}:{j}" for (k, j), bad in zip(items, failed, strict=True) if not bad]
            entry["dependency"] = "?".join(left)

    def _failed(self, kind: str, job: str) -> bool:
        state = self.finished.get(job)
        if state is None:
            return False
        ok = state in ("DONE", "POST_DONE", "POST_ERR")
        return (kind == "afterok" and not ok) or (kind == "afternotok" and ok)


def _index(record: Mapping[str, str]) -> str | None:
    """An array element's index from JOBINDEX (0: not an element)."""
    text = record.get("JOBINDEX", "").strip()
    return text if text.isdigit() and int(text) > 0 else None


def _resreq_text(record: Mapping[str, str]) -> str:
    for field in RESREQ_FIELDS:
        text = " ".join(record.get(field, "").split())
        if text and not values.blank(text):
            return text
    return ""


def _slots(record: Mapping[str, str], field: str) -> int | None:
    """A slot count LSF printed: a whole number from 0 (not asked: LSF's blank) to
    MAX_TASKS, None when blank; anything else is the capture's fault (located)."""
    text = record.get(field, "")
    value = values.number(text)
    if value is None:
        return None
    if not (value.is_integer() and 0 <= value <= MAX_TASKS):
        raise ValueError(
            f"{field}: expected a whole number of slots, 0 to {MAX_TASKS}, got {text!r}"
        )
    return int(value)
