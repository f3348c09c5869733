"""What ``xce schedule`` shows of a session: the decisions JSON (docs/allocation.md) and
the tables. Times are shown in the state's zone (:mod:`xce.timefmt`); on a state naming
its scheduler, each job's agreement with it (:mod:`xce.cli.agreement`). Everything a
state file names is printed through Rich escaped, so it is never read as markup.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from xce.cli.agreement import add_agreement, entry_of, says, summary, verdict
from xce.cli.outputs import shown as escape
from xce.cli.tables import print_table
from xce.timefmt import absolute, iso, when

if TYPE_CHECKING:  # the library and rich load when the command runs (start-up time)
    from rich.console import Console

    from xce.alloc import Dispatched, JobAllocation, Pending
    from xce.cluster import ClusterState
    from xce.cluster.load import InvalidJob
    from xce.core import SessionResult

__all__ = [
    "amounts_text",
    "decisions_json",
    "dispatched_json",
    "expected",
    "invalid_decision",
    "pending_json",
    "render",
    "session_time",
    "with_invalid",
    "zone_of",
]


def dispatched_json(d: Dispatched, state: ClusterState, planning: bool = False) -> dict[str, Any]:
    entry = {"job": d.job, **_allocation(d.allocation, state)}
    if planning:
        entry["backfilled"] = d.backfilled
    return entry


def _allocation(a: JobAllocation, state: ClusterState) -> dict[str, Any]:
    names = state.hosts.names
    return {
        "alternative": a.alternative,
        "allocation": [
            {"host": names[c.host], "slots": c.slots, "term": c.term, "resources": dict(c.amounts)}
            for c in a.claims
        ],
        "shared": _summed(a.shared),
    }


def _summed(amounts: tuple[tuple[str, float], ...]) -> dict[str, float]:
    """Shared amounts per resource: compound terms may each want the same licence."""
    out: dict[str, float] = {}
    for name, amount in amounts:
        out[name] = out.get(name, 0.0) + amount
    return out


def pending_json(p: Pending, state: ClusterState, planning: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "job": p.job,
        "reason": p.info.reason.value,
        "message": p.info.message,
        "cached": p.cached,
        "hosts": dict(p.info.hosts),
        "examples": {k: list(v) for k, v in p.info.examples.items()},
    }
    if p.info.limits:
        entry["limits"] = list(p.info.limits)
    if p.info.cause is not None:  # NEVER_RUNNABLE: why, even on the empty cluster
        entry["cause"] = p.info.cause.value
    if p.preemption is not None:  # PREEMPTING: its victims and where it will start
        entry["preempts"] = list(p.preemption.victims)
        entry["promise"] = _allocation(p.preemption.promise, state)
    if planning:  # backfill or reservations: when and where it is planned to start
        plan = p.plan
        tz = zone_of(state)
        entry["planned_start"] = plan.start if plan is not None else None
        entry["planned_start_iso"] = iso(entry["planned_start"], tz)
        entry["planned_end"] = _seconds(plan.end) if plan is not None else None
        entry["planned_end_iso"] = iso(entry["planned_end"], tz)
        entry["planned"] = _allocation(plan.allocation, state) if plan is not None else None
    return entry


def zone_of(state: ClusterState) -> str | None:
    """The zone times are shown in: the state's ``timezone`` (an IANA name the loader
    checked), None for UTC."""
    return state.timezone


def _seconds(t: float) -> float | None:
    """A time for JSON: None for "never" (no estimate)."""
    return None if t == float("inf") else t


def _preempted(result: SessionResult, state: ClusterState) -> list[dict[str, Any]]:
    """Every job preempted this session: by whom, and the hosts it held."""
    names = state.hosts.names
    return [
        {"job": victim, "by": p.job, "hosts": [names[h] for h in hosts]}
        for p in result.pending
        if p.preemption is not None
        for victim, hosts in zip(p.preemption.victims, p.preemption.hosts, strict=True)
    ]


def decisions_json(
    result: SessionResult,
    state: ClusterState,
    *,
    timing: bool = False,
    now: float | None = None,
) -> dict[str, Any]:
    """The decisions JSON of design §5: the same bytes for the same input, run after run.
    The session's wall time is the one thing that is not; it comes only with ``timing``,
    as a key of its own (``"timing": {"elapsed_s": ...}``). ``now`` is the session's
    time where it does not plan (``--now``; None: the state's), which agreement with
    the scheduler counts from."""
    s = result.stats
    planning = s.now is not None
    info: dict[str, Any] = {
        "dispatched": [dispatched_json(d, state, planning) for d in result.dispatched],
        "pending": [pending_json(p, state, planning) for p in result.pending],
        "stats": {
            "jobs": s.jobs,
            "dispatched": s.dispatched,
            "pending": s.pending,
            "pending_by_reason": dict(s.pending_by_reason),
            "cache_hits": s.cache_hits,
            "cache_misses": s.cache_misses,
            "cache_inserts": s.cache_inserts,
            "plans_tried": s.plans_tried,
            "host_tries": s.host_tries,
            "iterators": s.iterators,
            "threads": s.threads,
        },
    }
    if any(q.preempts for q in state.queues.values()):  # else the JSON of before
        info["preempted"] = _preempted(result, state)
        info["stats"]["preemptions"] = s.preemptions
    if planning:  # else the JSON of before (backfill none, no reservation)
        info["now"] = s.now
        info["now_iso"] = iso(s.now, zone_of(state))
        info["stats"]["planned"] = s.planned
        info["stats"]["backfilled"] = s.backfilled
    _with_scheduler_reasons(info, state)
    add_agreement(info, state, session_time(result, state, now))
    if timing:
        info["timing"] = {"elapsed_s": round(s.elapsed_s, 6)}
    return info


def session_time(result: SessionResult, state: ClusterState, now: float | None) -> float:
    """When the session ran: what planning counted from, else ``--now``, else the
    state's time."""
    if result.stats.now is not None:
        return result.stats.now
    return now if now is not None else state.session_time()


def _with_scheduler_reasons(info: dict[str, Any], state: ClusterState) -> None:
    """On a state imported from a real scheduler (some job keeps its reason): the
    scheduler's name, and each decided job's reason from it (null: none given; an array
    task: its record's), so the two can be read side by side (else the JSON of before;
    the ``agreement`` keys come whenever the state names its scheduler)."""
    jobs = {j.id: j for j in state.jobs}
    if all(j.reason is None for j in state.jobs):
        return
    info["scheduler"] = state.scheduler
    for entry in (*info["dispatched"], *info["pending"]):
        job = entry_of(jobs, entry["job"])
        entry["scheduler_reason"] = job.reason if job is not None else None


def invalid_decision(job: InvalidJob) -> Pending:
    """The decision of a job entry a lenient load left out: it pends INVALID."""
    from xce.alloc import PendInfo, Pending, PendReason

    return Pending(job.id, PendInfo(PendReason.INVALID, job.message))


def with_invalid(result: SessionResult, invalid: Sequence[InvalidJob]) -> SessionResult:
    """``result`` with the invalid jobs' INVALID decisions put first, in file order (they
    never reached the picker), and counted in the stats as pending jobs."""
    from xce.alloc import PendReason
    from xce.core import SessionResult

    if not invalid:
        return result
    extra = tuple(invalid_decision(j) for j in invalid)
    s = result.stats
    by_reason = Counter(s.pending_by_reason)
    by_reason[PendReason.INVALID.value] += len(extra)
    stats = dataclasses.replace(
        s,
        jobs=s.jobs + len(extra),
        pending=s.pending + len(extra),
        pending_by_reason=MappingProxyType(dict(sorted(by_reason.items()))),
    )
    return SessionResult(extra + result.decisions, stats)


# -- the tables ---------------------------------------------------------------------------


def amounts_text(amounts: Mapping[str, float]) -> str:
    return " ".join(f"{escape(k)}={v:g}" for k, v in amounts.items())


def _examples(names: Sequence[str], count: int) -> str:
    """``h1, h2, …``: the example hosts (escaped), ``…`` when there are more."""
    if not names:
        return ""
    return ", ".join(escape(h) for h in names) + (", …" if count > len(names) else "")


def _breakdown(p: dict[str, Any]) -> str:
    """``SELECT: 7 (h1, h2, h3, …)`` per host-level reason, then the limits waited on."""
    parts = []
    for reason, count in p["hosts"].items():
        shown = _examples(p["examples"].get(reason, []), count)
        parts.append(f"{reason}: {count}" + (f" ({shown})" if shown else ""))
    text = ", ".join(parts) or "-"
    if p.get("limits"):
        text += "\nlimits: " + ", ".join(escape(n) for n in p["limits"])
    return text


def render(info: dict[str, Any], explain: bool, console: Console, tz: str | None = None) -> None:
    """The tables of ``xce schedule``; times in the zone ``tz`` (None: UTC)."""
    from rich.table import Table

    agreement = info["stats"].get("agreement")
    name = escape(agreement["scheduler"] if agreement else info.get("scheduler") or "scheduler")
    now = info.get("now", agreement["now"] if agreement else None)
    columns = ["job", "hosts (slots, term)", "resources", "shared"]
    theirs = "scheduler" in info or agreement is not None  # the scheduler's reason too
    if theirs:
        columns.append(f"{name} says")
    if agreement:
        columns.append(f"agrees with {name}")
    rows = []
    for d in info["dispatched"]:
        hosts = ", ".join(
            f"{escape(a['host'])}:{a['slots']}" + (f" t{a['term']}" if a["term"] else "")
            for a in d["allocation"]
        )
        res: dict[str, float] = {}
        for a in d["allocation"]:
            for k, v in a["resources"].items():
                res[k] = res.get(k, 0.0) + v
        alt = "" if d["alternative"] is None else f" (alt {d['alternative']})"
        alt += " (backfilled)" if d.get("backfilled") else ""
        row = [escape(d["job"]) + alt, hosts, amounts_text(res), amounts_text(d["shared"])]
        if theirs:
            row.append(escape(says(d, now, tz)))
        if agreement:
            row.append(escape(verdict(d["agreement"], name)))
        rows.append(row)
    print_table(console, f"Dispatched ({len(info['dispatched'])})", columns, rows, markup=True)
    planning = "now" in info
    columns = ["job", "reason", "why"]
    if theirs:
        columns.append(f"{name} says")
    if agreement:
        columns.append(f"agrees with {name}")
    if planning:
        columns.append("expected start")
    if explain:
        columns.append("hosts by reason")
    rows = []
    for p in info["pending"]:
        row = [
            escape(p["job"]),
            p["reason"] + (" (cached)" if p["cached"] else ""),
            escape(p["message"]),
        ]
        if theirs:
            row.append(escape(says(p, now, tz)))
        if agreement:
            row.append(escape(verdict(p["agreement"], name)))
        if planning:
            row.append(expected(p, info["now"], tz))
        if explain:
            row.append(_breakdown(p))
        rows.append(row)
    print_table(console, f"Pending ({len(info['pending'])})", columns, rows, markup=True)
    if info.get("preempted"):
        table = Table(title=f"Preempted ({len(info['preempted'])})", title_justify="left")
        for col in ("job", "by", "hosts"):
            table.add_column(col)
        for v in info["preempted"]:
            hosts = ", ".join(escape(h) for h in v["hosts"])
            table.add_row(escape(v["job"]), escape(v["by"]), hosts)
        console.print(table)
    s = info["stats"]
    elapsed = info["timing"]["elapsed_s"] if "timing" in info else None
    by_reason = ", ".join(f"{k} {v}" for k, v in s["pending_by_reason"].items())
    console.print(
        f"{s['jobs']} jobs: {s['dispatched']} dispatched, {s['pending']} pending"
        + (f" ({by_reason})" if by_reason else "")
        + "; "
        f"{s['plans_tried']} plans, {s['host_tries']} host tries, "
        f"cache {s['cache_hits']} hits / {s['cache_misses']} misses"
        + (f"; {elapsed * 1000:.1f} ms" if elapsed is not None else "")
        + (f"; now {absolute(info['now'], tz)}" if planning else ""),
        soft_wrap=True,  # one line, whatever the width: the terminal wraps it
    )
    if agreement:
        console.print(escape(summary(s, planning)))


def expected(p: dict[str, Any], now: float, tz: str | None) -> str:
    """The expected start, as ``squeue --start`` shows it: the planned time (a date in
    the state's zone, or simulated time) and how far off it is, on which hosts; ``-``
    when nothing is planned."""
    start = p.get("planned_start")
    if start is None:
        return "-"
    hosts = [a["host"] for a in p["planned"]["allocation"]]
    shown = ", ".join(escape(h) for h in hosts[:3]) + (", …" if len(hosts) > 3 else "")
    return f"{escape(when(start, now, tz))} on {shown}"
