"""Slurm's multifactor priority inputs -> the state's ``priority`` section, and each
pending job's priority fields (docs/import.md, "Multifactor priorities").

The section is written when ``scontrol show config`` says ``PriorityType=priority/
multifactor``: its settings (by Slurm's names), the association tree with raw usage
(``sshare -a -l -P``, usage to two decimals from ``scontrol show assoc_mgr``), the
QOS priorities (``sacctmgr show qos``, slurmrestd's ``/qos``) and ``usage_time``, the
time of slurmctld's last recalculation: sprio shows the factors of that moment, and
the usage printed is the usage of that moment. The picker is then ``multifactor``
unless an input a non-zero weight needs is missing (reported)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from xce.errors import InputError
from xce.importers import units
from xce.importers.report import ImportReport
from xce.importers.slurm_priority_text import USE_PARENT, AssocRow
from xce.priority.assoc import Association, AssocTree
from xce.priority.config import FLAGS, setting

__all__ = ["PriorityInputs", "job_fields", "priority_section", "qos_priority"]

MULTIFACTOR = "priority/multifactor"
# scontrol show config's names (case aside) of the settings the state keeps
_NAMES = {
    n.lower(): n
    for n in (
        "PriorityType", "PriorityWeightAge", "PriorityWeightAssoc", "PriorityWeightFairshare",
        "PriorityWeightJobSize", "PriorityWeightPartition", "PriorityWeightQOS",
        "PriorityWeightTRES", "PriorityMaxAge", "PriorityDecayHalfLife", "PriorityCalcPeriod",
        "PriorityUsageResetPeriod", "PriorityFavorSmall", "PriorityFlags",
        "FairShareDampeningFactor",
    )
}  # fmt: skip
_TRES_ITEM = re.compile(r"^[\w/:.-]+=\d+(?:\.\d+)?[KMGTP]?$", re.IGNORECASE)
_MAX_NICE = 2**31 - 2


@dataclass(slots=True)
class PriorityInputs:
    """What the capture gives of the multifactor inputs, each with its source."""

    config: tuple[str, Mapping[str, tuple[str, int, str]]] | None = None
    sshare: tuple[str, list[AssocRow]] | None = None
    assoc_mgr: tuple[str, list[AssocRow]] | None = None
    qos: dict[str, int] = field(default_factory=dict)
    last_decay: tuple[str, float] | None = None
    ages: dict[tuple[str, str], int] = field(default_factory=dict)  # sprio's AGE

    def multifactor(self) -> bool:
        """Whether the capture says the site runs priority/multifactor."""
        if self.config is None:
            return False
        value = self.config[1].get("PriorityType")
        return value is not None and value[0] == MULTIFACTOR


def qos_priority(qos: Any) -> tuple[str, int] | None:
    """(name, priority) of a slurmrestd ``/qos`` entry (v0.0.38's bare number, later
    versions' ``{set, number}``); None without a name or a priority."""
    if not isinstance(qos, Mapping) or not isinstance(qos.get("name"), str):
        return None
    value = units.number(qos.get("priority"))
    if value is None or not float(value).is_integer():
        return None
    return qos["name"], int(value)


# -- per job ------------------------------------------------------------------------------


def job_fields(
    job: Mapping[str, Any], entry: Mapping[str, Any], now: float | None
) -> dict[str, Any]:
    """A pending job's multifactor fields: ``qos``, ``nice``, ``nodes`` (its minimum:
    ``minimum_nodes``, else ``tres_req_str``'s ``node=``, which 22.05 fills from it) and
    ``accrue_time`` (squeue's; 0 — the scheduler has not seen the job since it became
    eligible — is the capture's time for a job that may run: Slurm starts its age at its
    next scheduling pass). ValueError for a value no field means."""
    out: dict[str, Any] = {}
    qos = job.get("qos")
    if isinstance(qos, str) and qos:
        out["qos"] = qos
    nice = _nice(job.get("nice"))
    if nice:
        out["nice"] = nice
    nodes = units.number(job.get("minimum_nodes"))
    if nodes is None:
        text = job.get("tres_req_str")
        item = units.tres(text).get("node", "") if isinstance(text, str) else ""
        nodes = int(item) if item.isdigit() else None
    if nodes is not None and nodes >= 1:
        if not float(nodes).is_integer() or nodes > 10**6:
            raise ValueError(f"a minimum node count of {nodes} is out of range")
        out["nodes"] = int(nodes)
    accrue = units.number(job.get("accrue_time"))
    if accrue:
        out["accrue_time"] = accrue
    elif now is not None and _may_accrue(entry, now):
        out["accrue_time"] = now
    return out


def _may_accrue(entry: Mapping[str, Any], now: float) -> bool:
    """Whether Slurm would start the job's age at its next pass: not held, no
    dependency, no begin time ahead."""
    if entry.get("hold") or entry.get("dependency"):
        return False
    return entry.get("begin_time") is None or entry["begin_time"] <= now


def _nice(value: Any) -> int:
    """v0.0.38 prints nice 0 as null; later versions may flag it. Operators may set a
    negative one, so it is read apart from :func:`units.number`."""
    if isinstance(value, Mapping):
        if not value.get("set", False) or value.get("infinite", False):
            return 0
        value = value.get("number")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"nice {value!r} is not a whole number")
    if not float(value).is_integer() or abs(value) > _MAX_NICE:
        raise ValueError(f"nice {value!r} is out of Slurm's range")
    return int(value)


# -- the section ----------------------------------------------------------------------------


def priority_section(
    inputs: PriorityInputs,
    state: Mapping[str, Any],
    squeue_accrue: Mapping[str, float],
    now: float | None,
    report: ImportReport,
) -> tuple[dict[str, Any] | None, bool]:
    """(the state's priority section, whether its picker is multifactor); (None, False)
    when the capture has no multifactor configuration (reported when it has another)."""
    if inputs.config is None:
        return None, False
    source, config = inputs.config
    settings = _settings(source, config, report)
    if settings is None:
        return None, False
    section: dict[str, Any] = dict(settings)
    missing: list[str] = []
    associations = _associations(inputs, report)
    if associations:
        section["associations"] = associations
        _compare_fairshare(inputs, associations, settings, report)
    elif _weight(settings, "PriorityWeightFairshare"):
        missing.append("associations (sshare -a -l -P, scontrol show assoc_mgr flags=assoc)")
    qos = _qos(inputs.qos, state["jobs"], report)
    if qos:
        section["qos"] = {name: {"priority": p} for name, p in qos.items()}
    elif _weight(settings, "PriorityWeightQOS"):
        missing.append("QOS priorities (sacctmgr show qos -P format=name,priority)")
    used = _usage_time(inputs, settings, squeue_accrue, now, report)
    if used is not None:
        section["usage_time"] = _num(used)
    for what in missing:
        report.warn("multifactor input missing (the picker stays priority: Slurm's numbers)",
                    what)  # fmt: skip
    report.count("priority settings (multifactor)")
    return section, not missing


def _weight(settings: Mapping[str, Any], name: str) -> bool:
    return bool(settings.get(name))


def _settings(
    source: str, config: Mapping[str, tuple[str, int, str]], report: ImportReport
) -> dict[str, Any] | None:
    """The multifactor settings of ``scontrol show config``, checked; None (reported)
    when the site runs another priority plugin."""
    kept = {_NAMES[k.lower()]: v for k, v in config.items() if k.lower() in _NAMES}
    kind = kept.get("PriorityType")
    if kind is None or kind[0] != MULTIFACTOR:
        shown = kind[0] if kind is not None else "not given"
        report.warn("PriorityType is not priority/multifactor (no priority section; Slurm's "
                    "priorities stand)", f"{source}: {shown}")  # fmt: skip
        return None
    out: dict[str, Any] = {}
    for name, (value, number, line) in kept.items():
        if not value:
            continue
        if name == "PriorityFlags":
            value = _flags(value, source, number, line, report)
        elif name == "PriorityWeightTRES":
            value = _tres(value, source, number, line, report)
        if not value:
            continue
        try:
            setting(name, value)
        except InputError as err:
            column = line.find("=") + 2
            raise InputError(f"{name}: {err.message}", source=source, line=number,
                             column=column, text=line) from None  # fmt: skip
        out[name] = int(value) if value.isdigit() else value
    return out


def _flags(value: str, source: str, number: int, line: str, report: ImportReport) -> str:
    """The flags xce models; one it does not is reported and left out, one Slurm does
    not know is an error."""
    kept = []
    for flag in (f.strip() for f in value.split(",")):
        if not flag:
            continue
        if flag.upper() not in FLAGS:
            raise InputError(f"PriorityFlags: unknown flag {flag!r}", source=source,
                             line=number, column=line.find(flag) + 1, text=line)  # fmt: skip
        try:
            setting("PriorityFlags", flag)
        except InputError:
            report.warn("priority flag xce does not model (left out: priorities approximate)",
                        f"{source}:{number}: {flag}")  # fmt: skip
            continue
        kept.append(flag)
    return ",".join(kept)


def _tres(value: str, source: str, number: int, line: str, report: ImportReport) -> str:
    """The TRES weights xce models (``cpu``, ``node``, no unit); another is reported and
    left out, text Slurm would not read is an error."""
    kept = []
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        if not _TRES_ITEM.match(item):
            raise InputError(f"PriorityWeightTRES: {item!r} is not TYPE=WEIGHT", source=source,
                             line=number, column=line.find(item) + 1, text=line)  # fmt: skip
        try:
            setting("PriorityWeightTRES", item)
        except InputError:
            report.warn("TRES weight xce does not model (left out)", f"{source}:{number}: {item}")
            continue
        kept.append(item)
    return ",".join(kept)


# -- associations ----------------------------------------------------------------------------


def _associations(inputs: PriorityInputs, report: ImportReport) -> list[dict[str, Any]]:
    """The tree in sshare's order (else assoc_mgr's), usage and priority from assoc_mgr
    where it is given (two decimals, where sshare truncates)."""
    base = inputs.sshare or inputs.assoc_mgr
    if base is None:
        return []
    source, rows = base
    precise: dict[tuple[str, str | None, str], AssocRow] = {}
    if inputs.assoc_mgr is not None and inputs.sshare is not None:
        precise = {r.key: r for r in inputs.assoc_mgr[1]}
        unmatched = [r for r in rows if r.key not in precise]
        extra = set(precise) - {r.key for r in rows}
        for r in unmatched:
            report.warn("association in sshare, not in assoc_mgr (sshare's usage kept)",
                        f"{source}:{r.line}: {_who(r)}")  # fmt: skip
        for key in sorted(extra, key=str):
            row = precise[key]
            report.warn("association in assoc_mgr, not in sshare (left out)",
                        f"{inputs.assoc_mgr[0]}:{row.line}: {_who(row)}")  # fmt: skip
    out = []
    seen: dict[tuple[str, str | None], int] = {}
    for row in rows:
        better = precise.get(row.key, row)
        out.append(_association(row, better, seen, f"{source}:{row.line}", report))
    tree(out, source)  # a tree xce's loader accepts: every account declared, no cycle
    report.count("associations", len(out))
    return out


def tree(associations: list[dict[str, Any]], source: str) -> AssocTree:
    """The associations as xce's tree; InputError at ``source`` when they are none (an
    account never declared, a cycle of parents: text cut or edited)."""
    try:
        return AssocTree(
            Association(a["account"], a.get("user"), a.get("parent"), float(a.get("shares", 1)),
                        float(a["usage"]), int(a.get("priority", 0)))
            for a in associations
        )  # fmt: skip
    except InputError as err:
        raise InputError(f"associations: {err.message}", source=source) from None


def _association(
    row: AssocRow,
    better: AssocRow,
    seen: dict[tuple[str, str | None], int],
    where: str,
    report: ImportReport,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"account": row.account}
    if row.user is not None:
        user = row.user
        if row.partition:
            user = f"{row.user}@{row.partition}"
            report.warn("partition association kept as USER@PARTITION (its rank counts; jobs "
                        "use the user's own association)", f"{where}: {user}")  # fmt: skip
        times = seen.get((row.account, user), 0)
        seen[(row.account, user)] = times + 1
        if times:
            user = f"{user}@{times + 1}"
            report.warn("association listed twice (kept apart: a partition association?)",
                        f"{where}: {user}")  # fmt: skip
        entry["user"] = user
    elif row.parent is not None and row.parent != "root":
        entry["parent"] = row.parent
    if not (row.user is None and row.parent is None):
        shares = row.shares
        if shares == USE_PARENT:
            report.warn("shares 'parent' not modelled (1 used)", f"{where}: {_who(row)}")
            shares = 1.0
        entry["shares"] = _num(float(shares))
    entry["usage"] = _num(better.usage)
    if better.priority:
        entry["priority"] = better.priority
    return entry


def _who(row: AssocRow) -> str:
    name = f"{row.account}/{row.user}" if row.user else row.account
    return f"{name} (partition {row.partition})" if row.partition else name


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _compare_fairshare(
    inputs: PriorityInputs,
    associations: list[dict[str, Any]],
    settings: Mapping[str, Any],
    report: ImportReport,
) -> None:
    """Fair Tree from the imported usage against the FairShare sshare printed (the
    factor slurmctld computed from the same usage): ties are exact in Slurm's long
    doubles, and the printed usage (two decimals, sshare's integers) may lose one."""
    if inputs.sshare is None or "fair_tree" not in _flag_words(settings):
        return
    found = tree(associations, inputs.sshare[0])
    own = {k: a.usage for k, a in found.nodes.items() if a.usage is not None}
    factors = found.fair_tree(found.raw_usage(own))
    given = [(r, a) for r, a in zip(inputs.sshare[1], associations, strict=True)
             if r.user is not None and r.fairshare is not None]  # fmt: skip
    differ = []
    for row, entry in given:
        mine = factors.get((entry["account"], entry["user"]), 0.0)
        if abs(mine - float(row.fairshare or 0.0)) > 5e-7:
            differ.append(f"{_who(row)}: {mine:.6f} (sshare {row.fairshare:.6f})")
    if differ:
        for text in differ:
            report.warn("fair share from the imported usage differs from sshare's FairShare "
                        "(usage printed rounded: a Fair Tree tie lost?)", text)  # fmt: skip
    elif given:
        report.count("user associations whose fair share is sshare's", len(given))


def _flag_words(settings: Mapping[str, Any]) -> set[str]:
    flags = {f.strip().upper() for f in str(settings.get("PriorityFlags", "")).split(",")}
    return set() if "NO_FAIR_TREE" in flags else {"fair_tree"}


# -- QOS ---------------------------------------------------------------------------------------


def _qos(
    given: dict[str, int], jobs: Iterable[Mapping[str, Any]], report: ImportReport
) -> dict[str, int]:
    out = dict(given)
    if not out:
        return out
    for job in jobs:
        name = job.get("qos")
        if isinstance(name, str) and name not in out:
            out[name] = 0
            report.warn("job's QOS not in the QOS list (priority 0)", f"job {job['id']}: {name}")
    report.count("QOS priorities", len(given))
    return out


# -- usage_time ------------------------------------------------------------------------------


def _usage_time(
    inputs: PriorityInputs,
    settings: Mapping[str, Any],
    accrue: Mapping[str, float],
    now: float | None,
    report: ImportReport,
) -> float | None:
    """When slurmctld last recalculated priorities: ``PriorityLastDecayRan=``, else
    derived from sprio's AGE and the jobs' accrue times; None (the state's now,
    reported) when neither is in the capture."""
    if inputs.last_decay is not None:
        source, when = inputs.last_decay
        if now is not None and when > now:
            report.warn(
                "last recalculation after the capture's time (kept)", f"{source}: {when:.0f}"
            )
        report.count("usage_time from priority_last_decay_ran")
        return when
    derived = derive_recalculation(inputs.ages, accrue, settings)
    if derived is not None:
        low, high = derived
        when = float(math.ceil(low))
        if when > high:
            report.warn("sprio's AGE values contradict each other (usage_time not derived)",
                        f"{low:.2f} .. {high:.2f}")  # fmt: skip
            return None
        if math.floor(high) > when:
            report.warn("usage_time derived from sprio's AGE only to within seconds (give "
                        "PriorityLastDecayRan=)",
                        f"{low:.2f} .. {high:.2f}, {when:.0f} taken")  # fmt: skip
        report.count("usage_time derived from sprio's AGE")
        return when
    report.warn("time of Slurm's last priority recalculation unknown: usage_time is the "
                "state's now (give PriorityLastDecayRan=, docs/import.md)",
                "sprio shows factors up to PriorityCalcPeriod old")  # fmt: skip
    return None


def derive_recalculation(
    ages: Mapping[tuple[str, str], int],
    accrue: Mapping[str, float],
    settings: Mapping[str, Any],
) -> tuple[float, float] | None:
    """The interval of times ``T`` at which every AGE sprio shows is
    ``(T - accrue) / PriorityMaxAge * PriorityWeightAge`` rounded: from the jobs whose
    AGE is above 0 (a job priced at submission shows 0 whatever T) and below the
    weight (at the cap). None when no job tells."""
    weight = float(settings.get("PriorityWeightAge", 0) or 0)
    try:
        max_age = _seconds(settings.get("PriorityMaxAge", "7-00:00:00"))
    except InputError:
        return None
    if weight <= 0 or max_age <= 0:
        return None
    low, high = -math.inf, math.inf
    step = max_age / weight
    for (job, _), age in ages.items():
        when = accrue.get(job)
        if not when or not 0 < age < weight:
            continue
        low = max(low, when + (age - 0.5) * step)
        high = min(high, when + (age + 0.5) * step)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _seconds(value: Any) -> float:
    got = setting("PriorityMaxAge", value)
    return float(got["max_age"])  # type: ignore[arg-type]
