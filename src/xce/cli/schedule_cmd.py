"""``xce schedule``: one scheduling session on a state file — where jobs land, why others wait.

``--job ID`` explains one job in detail; ``--lenient`` lets a malformed job entry pend
``INVALID`` instead of failing the whole file. Everything a state file names (job ids,
host names, messages) is printed through Rich escaped, so it is never read as markup.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli.agreement import (
    Judge,
    add_agreement,
    entry_of,
    label,
    says,
    summary,
    verdict,
    waiting,
)
from xce.cli.conventions import (
    BACKFILL_OPTION,
    PREEMPTOR_OPTION,
    check_backfill,
    check_picker,
    check_preemptor,
)
from xce.cli.outputs import check_file, output_path, plain, write_file
from xce.cli.outputs import shown as escape
from xce.cli.resreq_cmd import _render as _render_requirement
from xce.cli.resreq_cmd import describe
from xce.errors import InputError
from xce.timefmt import absolute, duration, iso, when

if TYPE_CHECKING:  # the library and rich load when the command runs (start-up time)
    from rich.console import Console

    from xce.alloc import Decision, Dispatched, JobAllocation, Pending
    from xce.cluster import ClusterState, Limit, PendingJob
    from xce.cluster.load import InvalidJob
    from xce.core import SchedulerCore, SessionResult

SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml")


def _dispatched(d: Dispatched, state: ClusterState, planning: bool = False) -> dict[str, Any]:
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


def _pending(p: Pending, state: ClusterState, planning: bool = False) -> dict[str, Any]:
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
        "dispatched": [_dispatched(d, state, planning) for d in result.dispatched],
        "pending": [_pending(p, state, planning) for p in result.pending],
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


def _amounts_text(amounts: Mapping[str, float]) -> str:
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


def _render(info: dict[str, Any], explain: bool, console: Console, tz: str | None = None) -> None:
    """The tables of ``xce schedule``; times in the zone ``tz`` (None: UTC)."""
    from rich.table import Table

    agreement = info["stats"].get("agreement")
    name = escape(agreement["scheduler"] if agreement else info.get("scheduler") or "scheduler")
    now = info.get("now", agreement["now"] if agreement else None)
    table = Table(title=f"Dispatched ({len(info['dispatched'])})", title_justify="left")
    for col in ("job", "hosts (slots, term)", "resources", "shared"):
        table.add_column(col)
    theirs = "scheduler" in info or agreement is not None  # the scheduler's reason too
    if theirs:
        table.add_column(f"{name} says")
    if agreement:
        table.add_column(f"agrees with {name}")
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
        row = [escape(d["job"]) + alt, hosts, _amounts_text(res), _amounts_text(d["shared"])]
        if theirs:
            row.append(escape(says(d, now, tz)))
        if agreement:
            row.append(escape(verdict(d["agreement"], name)))
        table.add_row(*row)
    console.print(table)
    table = Table(title=f"Pending ({len(info['pending'])})", title_justify="left")
    planning = "now" in info
    for col in ("job", "reason", "why"):
        table.add_column(col)
    if theirs:
        table.add_column(f"{name} says")
    if agreement:
        table.add_column(f"agrees with {name}")
    if planning:
        table.add_column("expected start")
    if explain:
        table.add_column("hosts by reason")
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
            row.append(_expected(p, info["now"], tz))
        if explain:
            row.append(_breakdown(p))
        table.add_row(*row)
    console.print(table)
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
        + (f"; now {absolute(info['now'], tz)}" if planning else "")
    )
    if agreement:
        console.print(escape(summary(s, planning)))


def _expected(p: dict[str, Any], now: float, tz: str | None) -> str:
    """The expected start, as ``squeue --start`` shows it: the planned time (a date in
    the state's zone, or simulated time) and how far off it is, on which hosts; ``-``
    when nothing is planned."""
    start = p.get("planned_start")
    if start is None:
        return "-"
    hosts = [a["host"] for a in p["planned"]["allocation"]]
    shown = ", ".join(escape(h) for h in hosts[:3]) + (", …" if len(hosts) > 3 else "")
    return f"{escape(when(start, now, tz))} on {shown}"


# -- one job: --job ID --------------------------------------------------------------------


def find_job(
    job_id: str, state: ClusterState, invalid: Sequence[InvalidJob], source: str
) -> PendingJob | InvalidJob:
    """The pending job entry with this id, the first in file order; InputError (exit 2)
    naming the file, the id and close matches when there is none."""
    entries: list[PendingJob | InvalidJob] = sorted([*state.jobs, *invalid], key=lambda j: j.order)
    for entry in entries:
        if entry.id == job_id:
            return entry
    shown = json.dumps(job_id, ensure_ascii=False)
    running = next((i for i, r in enumerate(state.running) if r.id == job_id), None)
    if running is not None:
        raise InputError(
            f"job {shown} is running work (running[{running}]), not a pending job", source=source
        )
    ids = list(dict.fromkeys(e.id for e in entries))
    close = difflib.get_close_matches(job_id, ids, n=5, cutoff=0.6)
    if close:
        hint = "; close matches: " + ", ".join(json.dumps(c, ensure_ascii=False) for c in close)
    else:
        hint = f" ({len(ids)} pending job{'s' if len(ids) != 1 else ''})"
    raise InputError(f"no pending job {shown}{hint}", source=source)


def _limit(lim: Limit) -> dict[str, Any]:
    return {
        "name": lim.name,
        "users": None if lim.users is None else list(lim.users),
        "queues": None if lim.queues is None else list(lim.queues),
        "projects": None if lim.projects is None else list(lim.projects),
        "per_host": lim.per_host,
        "slots": lim.slots,
        "jobs": lim.jobs,
        "resources": dict(lim.resources),
    }


def _identity(job: PendingJob | InvalidJob, state: ClusterState) -> dict[str, Any]:
    """Who the job is; for an invalid entry, the fields as written (where readable)."""
    from xce.cluster import PendingJob

    if isinstance(job, PendingJob):
        fields: dict[str, Any] = {
            "user": job.user,
            "queue": job.queue,
            "project": job.project,
            "tasks": {"min": job.min_tasks, "max": job.max_tasks, "given": job.tasks_given},
            "submit_time": job.submit_time,
            "submit_time_iso": iso(job.submit_time, zone_of(state)),
            "runtime": job.runtime,
            "requested_time": job.requested_time,
            **_flow(job, state),
        }
    else:
        entry = job.entry or {}
        fields = {k: v for k, v in entry.items() if k not in ("id", "resreq")}
    queue = fields.get("queue", "normal")
    if isinstance(queue, str):
        fields["queue_priority"] = state.queue_priority(queue)
    return fields


def _flow(job: PendingJob, state: ClusterState) -> dict[str, Any]:
    """What besides resources the job waits on, and its scheduler's priority: only the
    keys the job sets (a plain job's identity is that of before)."""
    out: dict[str, Any] = {}
    if job.priority is not None:
        out["priority"] = job.priority
    if job.hold:
        out["hold"] = True
    if job.begin_time is not None:
        out["begin_time"] = job.begin_time
        out["begin_time_iso"] = iso(job.begin_time, zone_of(state))
    if job.dependency is not None:
        out["dependency"] = job.dependency.text
    if job.name is not None:
        out["name"] = job.name
    if job.array is not None:
        out["array"] = job.array.text()
    if job.array_job is not None:
        out["array_job"] = job.array_job
    return out


def _error(err: InputError) -> dict[str, Any]:
    """An error as JSON; the quoted line cut to the width messages use (a state file of
    one 50 MB line must not make a 50 MB answer)."""
    from xce.errors import clip_around

    text = err.text
    if text is not None:
        text, _ = clip_around(text, (err.column or 1) - 1)
    return {
        "message": err.message,
        "file": err.source,
        "line": err.line,
        "column": err.column,
        "path": err.path,
        "text": text,
    }


def explain_job(
    job: PendingJob | InvalidJob,
    decisions: Sequence[Decision],
    state: ClusterState,
    source: str,
    now: float | None = None,
    at: float | None = None,
) -> dict[str, Any]:
    """The ``--job`` JSON: identity, requirement, decision, host breakdown, limits, and
    on an imported state its agreement with the scheduler.

    ``decisions`` are the session's, in picker order: ``pick`` is the job's position
    among them (from 1; None for an invalid entry, which never reached the picker).
    ``now`` is the time planning counted from (None: the session did not plan), ``at``
    the session's time (None: ``now``, else the state's).
    """
    from xce.alloc import Dispatched, Pending
    from xce.cluster.load import InvalidJob
    from xce.resreq import requirement_for_job

    out: dict[str, Any] = {"job": job.id, "entry": f"jobs[{job.order}]", "file": source}
    out["identity"] = _identity(job, state)
    if isinstance(job, InvalidJob):
        raw = job.entry.get("resreq") if job.entry is not None else None
        out["resreq"] = raw if isinstance(raw, str) else None
        out["requirement"] = None
        decision: Decision = invalid_decision(job)
        pick = None
    else:
        out["resreq"] = job.resreq
        tasks = (job.min_tasks, job.max_tasks) if job.tasks_given else (None, None)
        parsed = requirement_for_job(job.resreq, state.catalog, *tasks)
        out["requirement"] = describe(parsed, validated_against=source)
        pick, decision = next((i, d) for i, d in enumerate(decisions, 1) if d.job == job.id)
    out["pick"] = pick
    out["picks"] = len(decisions)
    if now is not None:
        out["now"] = now
        out["now_iso"] = iso(now, zone_of(state))
    if isinstance(decision, Dispatched):
        out["status"] = "dispatched"
        out["decision"] = _dispatched(decision, state, now is not None)
        out["limits"] = []
    else:
        out["status"] = "pending"
        out["decision"] = _pending(decision, state, now is not None)
        cause = decision.info.cause  # NEVER_RUNNABLE: what fails even on the empty cluster
        out["cause"] = cause.value if cause is not None else None
        by_name = {lim.name: lim for lim in state.limits}
        out["limits"] = [_limit(by_name[n]) for n in decision.info.limits if n in by_name]
    if not isinstance(job, InvalidJob) and job.reason is not None:
        out["scheduler"] = state.scheduler
        out["scheduler_reason"] = job.reason
    if state.scheduler is not None:
        out["scheduler"] = state.scheduler
        at = at if at is not None else now if now is not None else state.session_time()
        pending = [
            {"job": d.job, "reason": d.info.reason.value}
            for d in decisions
            if isinstance(d, Pending)
        ]
        judge = Judge(state, at, waiting(pending))
        out["agreement"] = judge(out["decision"], out["status"] == "dispatched")
    if isinstance(job, InvalidJob):
        out["error"] = _error(job.error)
    return out


def _render_theirs(
    info: dict[str, Any], console: Console, tz: str | None, now: float | None
) -> None:
    """The real scheduler's own reason for the job (and expected start), where the
    state was imported, and whether xce agrees."""
    if "scheduler_reason" not in info and "agreement" not in info:
        return
    name = label(info.get("scheduler"))
    console.print(f"[bold]{escape(name)} says[/]  {escape(says(info, now, tz))}")
    if "agreement" in info:
        console.print(f"[bold]agrees[/]       {escape(verdict(info['agreement'], name))}")


_TIMES = ("submit_time", "begin_time")  # identity keys shown as times, and as durations:
_DURATIONS = ("runtime", "requested_time")


def _identity_word(key: str, value: Any, now: float | None, tz: str | None) -> str:
    """``submit time 2026-12-01 10:00:00 UTC (2 h ago)``, ``requested time 1 h 5 min``;
    any other key as its JSON (an invalid entry's fields as written)."""
    label = escape(key.replace("_", " "))
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key in _TIMES and number:
        return f"{label} {escape(when(value, now, tz))}"
    if key in _DURATIONS and number:
        return f"{label} {duration(value)}"
    return f"{label} {escape(json.dumps(value, ensure_ascii=False))}"


def _render_job(
    info: dict[str, Any], console: Console, tz: str | None = None, at: float | None = None
) -> None:
    """``--job``: one job in detail; times in the zone ``tz`` (None: UTC), relative to
    the session's time ``at`` (None: the JSON's ``now``, if it plans)."""
    from rich.table import Table

    e = escape
    console.print(f"[bold]job[/]          {e(info['job'])}  ({info['entry']} of {e(info['file'])})")
    ident = info["identity"]
    words = [f"{k} {e(str(ident[k]))}" for k in ("user", "queue", "project") if k in ident]
    if "queue_priority" in ident:
        words = [
            w + (f" (priority {ident['queue_priority']})" if w.startswith("queue ") else "")
            for w in words
        ]
    tasks = ident.get("tasks")
    requirement = info["requirement"]
    if isinstance(tasks, dict) and not tasks["given"] and requirement is not None:
        words.append(f"tasks {requirement['alternatives'][0]['tasks']} (not given)")
    elif isinstance(tasks, dict):
        n = str(tasks["min"]) if tasks["min"] == tasks["max"] else f"{tasks['min']}..{tasks['max']}"
        words.append(f"tasks {n}")
    elif tasks is not None:
        words.append(f"tasks {e(str(tasks))}")
    known = {"user", "queue", "project", "tasks", "queue_priority"}
    now = at if at is not None else info.get("now")
    for key, value in ident.items():  # an invalid entry: every other key as written
        if key not in known and value is not None and not key.endswith("_iso"):
            words.append(_identity_word(key, value, now, tz))
    console.print("[bold]identity[/]     " + (", ".join(words) or "-"))
    resreq = info["resreq"]
    shown = "-" if resreq is None else json.dumps(resreq, ensure_ascii=False)
    console.print(f"[bold]resreq[/]       {e(shown)}")
    if info["requirement"] is not None:
        _render_requirement(info["requirement"], console)
    d = info["decision"]
    where = (
        f"pick {info['pick']} of {info['picks']}"
        if info["pick"]
        else "left out of the session: the entry is invalid"
    )
    if info["status"] == "dispatched":
        alt = "" if d["alternative"] is None else f", alternative {d['alternative']}"
        console.print(f"[bold green]dispatched[/]   ({where}{alt})")
        _render_theirs(info, console, tz, now)
        table = Table(title="Allocation", title_justify="left")
        for col in ("host", "slots", "term", "resources"):
            table.add_column(col)
        for a in d["allocation"]:
            table.add_row(
                e(a["host"]), str(a["slots"]), str(a["term"]), _amounts_text(a["resources"])
            )
        console.print(table)
        if d["shared"]:
            console.print(f"[bold]shared[/]       {_amounts_text(d['shared'])}")
        return
    cached = ", cached: the unsatisfiable cache answered" if d["cached"] else ""
    cause = f", cause {info['cause']}" if info.get("cause") else ""
    console.print(f"[bold yellow]pending[/]      {d['reason']} ({where}{cause}{cached})")
    console.print(f"[bold]why[/]          {e(d['message'])}")
    _render_theirs(info, console, tz, now)
    if "now" in info:
        console.print(f"[bold]expected[/]     {_expected(d, info['now'], tz)}")
    if "error" in info and info["error"]["text"] is not None and info["error"]["column"]:
        err = info["error"]
        console.print(f"  {e(err['text'])}\n  {' ' * (err['column'] - 1)}^", highlight=False)
    if d["hosts"]:
        table = Table(title="Hosts by reason", title_justify="left")
        for col in ("reason", "hosts", "for example"):
            table.add_column(col)
        for reason, count in d["hosts"].items():
            shown = d["examples"].get(reason, [])
            more = ", …" if count > len(shown) else ""
            table.add_row(
                reason, str(count), ", ".join(e(h) for h in shown) + more if shown else ""
            )
        console.print(table)
    if info["limits"]:
        table = Table(title="Limits it waits on", title_justify="left")
        for col in ("limit", "consumers", "scope", "slots", "jobs", "resources"):
            table.add_column(col)
        for lim in info["limits"]:
            consumers = "; ".join(
                f"{k} {', '.join(e(v) for v in lim[k])}"
                for k in ("users", "queues", "projects")
                if lim[k] is not None
            )
            table.add_row(
                e(lim["name"]),
                consumers or "everyone",
                "per host" if lim["per_host"] else "in all",
                "-" if lim["slots"] is None else str(lim["slots"]),
                "-" if lim["jobs"] is None else str(lim["jobs"]),
                _amounts_text(lim["resources"]) or "-",
            )
        console.print(table)
    elif d.get("limits"):  # named by the engine but not (any more) in the state
        console.print("[bold]limits[/]       " + ", ".join(e(n) for n in d["limits"]))


# -- the command --------------------------------------------------------------------------


def schedule(
    state_file: Annotated[
        Path, typer.Argument(metavar="STATE", help="A state file (.yaml, .yml or .json).")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the decisions JSON on stdout.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show per-host reasons for pending jobs.")
    ] = False,
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="ID",
            help="Explain this job in detail: requirement, identity, where it landed or "
            "why it waits, per host, and the limits it waits on.",
        ),
    ] = None,
    lenient: Annotated[
        bool,
        typer.Option(
            "--lenient",
            help="A malformed job entry pends INVALID (with its error) instead of failing "
            "the whole file.",
        ),
    ] = False,
    picker: Annotated[
        str | None,
        typer.Option(
            "--picker",
            metavar="NAME",
            help="Default job picker (fcfs, strict, fairshare, or a plugin's) "
            "for queues that name none.",
        ),
    ] = None,
    preemptor: Annotated[str | None, PREEMPTOR_OPTION] = None,
    backfill: Annotated[str | None, BACKFILL_OPTION] = None,
    now: Annotated[
        float | None,
        typer.Option(
            "--now",
            metavar="SECONDS",
            help="The session's time, which planning counts from (default: the state's "
            "now, else its latest start or submit time).",
        ),
    ] = None,
    threads: Annotated[
        bool, typer.Option("--threads", help="Picker and allocator in two threads.")
    ] = False,
    snapshot: Annotated[
        str | None,
        typer.Option(
            "--snapshot",
            metavar="PATH",
            help="Write the state after starting the dispatched jobs (.json, .yaml or .yml). "
            "Never the STATE file; an existing file only with --force.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Let --snapshot replace an existing file (never STATE)."),
    ] = False,
    timing: Annotated[
        bool,
        typer.Option(
            "--timing",
            help='With --json, add "timing": {"elapsed_s": ...}; without it the JSON is '
            "the same bytes on every run.",
        ),
    ] = False,
) -> None:
    """Run one scheduling session: where every pending job lands, or why it waits."""
    from rich.console import Console

    from xce.cluster import load_state
    from xce.core import SchedulerCore

    target = _snapshot_target(snapshot, state_file, force)
    pickers = check_picker(picker)
    chosen = check_preemptor(preemptor)
    check_backfill(backfill)
    _check_now(now)
    invalid: tuple[InvalidJob, ...] = ()
    if lenient:
        state, invalid = load_state(state_file, lenient=True)
    else:
        state = load_state(state_file)
    source = str(state_file)
    wanted = find_job(job, state, invalid, source) if job is not None else None
    core = SchedulerCore(state, picker=picker, pickers=pickers, preemptor=chosen, backfill=backfill)
    session = core.run_session(threads=threads, now=now)
    result = with_invalid(session, invalid)
    if target is not None:
        _write_snapshot(core, result, invalid, target, force)
    console = Console(highlight=False)
    if wanted is not None:
        at = session_time(session, state, now)
        detail = explain_job(wanted, session.decisions, state, source, session.stats.now, at)
        if as_json:
            typer.echo(json.dumps(detail, indent=2))
        else:
            _render_job(detail, console, zone_of(state), session_time(session, state, now))
        return
    info = decisions_json(result, state, timing=timing or not as_json, now=now)
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        _render(info, explain, console, zone_of(state))


def _check_now(now: float | None) -> None:
    import math

    if now is not None and not math.isfinite(now):
        raise InputError(f"--now: the session time must be a finite number of seconds, not {now}")


def _snapshot_target(snapshot: str | None, state_file: Path, force: bool) -> Path | None:
    """``--snapshot``, checked before the session: a new (or, with --force, an existing)
    .json/.yaml file in a writable directory, and never the state file read."""
    if snapshot is None:
        return None
    target = output_path(snapshot, "--snapshot")
    check_file(target, "--snapshot", [("STATE", state_file)], force=force)
    if target.suffix.lower() not in SNAPSHOT_SUFFIXES:
        raise InputError(
            f"--snapshot {plain(snapshot)}: expected a name ending in "
            f"{', '.join(SNAPSHOT_SUFFIXES)}"
        )
    return target


def _write_snapshot(
    core: SchedulerCore,
    result: SessionResult,
    invalid: Sequence[InvalidJob],
    target: Path,
    force: bool,
) -> None:
    from xce.alloc import Dispatched, Pending
    from xce.core import Event, JobPreempted, JobStarted, write_state

    events: list[Event] = []
    preempted: list[str] = []
    # jobs start at the session's time (what planning counted from, else the state's)
    now = result.stats.now if result.stats.now is not None else core.state.session_time()
    for d in result.decisions:  # in decision order: each fits when it is applied
        if isinstance(d, Dispatched):
            events.append(JobStarted(d.job, d.allocation, now))
        elif isinstance(d, Pending) and d.preemption is not None:
            events += [JobPreempted(v, now, by=d.job) for v in d.preemption.victims]
            events.append(JobStarted(d.job, d.preemption.promise, now))
            preempted += d.preemption.victims
    core.apply(*events)
    write_file(target, "--snapshot", lambda temp: write_state(core.state, temp), force=force)
    if preempted:
        print(
            plain(
                f"xce: note: in the snapshot the {len(preempted)} preempted job(s) no longer "
                f"run and their preemptors do: {', '.join(preempted[:10])}"
                + (", ..." if len(preempted) > 10 else "")
            ),
            file=sys.stderr,
        )
    if invalid:
        left = ", ".join(j.id for j in invalid)
        print(
            plain(f"xce: note: the snapshot leaves out {len(invalid)} invalid job(s): {left}"),
            file=sys.stderr,
        )
