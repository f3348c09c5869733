"""``xce schedule --job ID``: one job in detail — identity, requirement, where it
landed or why it waits, per host, the limits it waits on, and on an imported state the
scheduler's reason, expected start and agreement. Times as :mod:`xce.timefmt` shows them.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xce.cli.agreement import Judge, label, says, verdict, waiting
from xce.cli.outputs import shown as escape
from xce.cli.resreq_cmd import _render as _render_requirement
from xce.cli.resreq_cmd import describe
from xce.cli.schedule_view import (
    amounts_text,
    dispatched_json,
    expected,
    invalid_decision,
    pending_json,
    zone_of,
)
from xce.errors import InputError
from xce.timefmt import duration, iso, when

if TYPE_CHECKING:
    from rich.console import Console

    from xce.alloc import Decision
    from xce.cluster import ClusterState, Limit, PendingJob
    from xce.cluster.load import InvalidJob

__all__ = ["explain_job", "find_job", "render_job"]


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
    if job.also_queues:  # the further queues it may run in (its decision: the best one's)
        out["also_queues"] = [
            {"queue": q.queue, "priority": q.priority, "resreq": q.resreq} for q in job.also_queues
        ]
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
        out["decision"] = dispatched_json(decision, state, now is not None)
        out["limits"] = []
    else:
        out["status"] = "pending"
        out["decision"] = pending_json(decision, state, now is not None)
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
    elif state.priority is not None:
        when_at = at if at is not None else now if now is not None else state.session_time()
        out["priority"] = priority_json(job, state, when_at)
    return out


def priority_json(job: PendingJob, state: ClusterState, at: float) -> dict[str, Any]:
    """The job's multifactor priority at ``at``: each factor, weighted, and the row
    ``sprio -l`` would print (docs/priority.md)."""
    from xce.priority.multifactor import MultifactorPicker, sprio_row

    f = MultifactorPicker().book(state, at).factors(job)
    assoc = f.association
    return {
        "at": at,
        "priority": f.priority,
        "factors": {
            "age": f.age,
            "assoc": f.assoc,
            "fairshare": f.fairshare,
            "jobsize": f.jobsize,
            "partition": f.partition,
            "qos": f.qos,
            "tres": dict(f.tres),
        },
        "weighted": dict(f.weighted),
        "weighted_tres": dict(f.weighted_tres),
        "nice": f.nice,
        "association": None if assoc is None else {"account": assoc[0], "user": assoc[1]},
        "sprio": sprio_row(f),
    }


def _render_priority(info: dict[str, Any], console: Console) -> None:
    """The job's multifactor factors as ``sprio -l`` shows them."""
    from rich.table import Table

    p = info.get("priority")
    if p is None:
        return
    row = p["sprio"]
    columns = ("PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS")
    table = Table(title="Priority (multifactor, as sprio -l)", title_justify="left")
    for col in (*columns, "NICE", "TRES"):
        table.add_column(col, justify="right")
    table.add_row(*(str(row[c]) for c in (*columns, "NICE", "TRES")))
    console.print(table)
    assoc = p["association"]
    where = "none (fair share 0)" if assoc is None else f"{assoc['user']} in {assoc['account']}"
    factors = ", ".join(f"{k} {v:.4f}" for k, v in p["factors"].items() if isinstance(v, float))
    console.print(f"[bold]factors[/]      {escape(factors)}; association {escape(where)}")


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


def render_job(
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
    _render_priority(info, console)
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
                e(a["host"]), str(a["slots"]), str(a["term"]), amounts_text(a["resources"])
            )
        console.print(table)
        if d["shared"]:
            console.print(f"[bold]shared[/]       {amounts_text(d['shared'])}")
        return
    cached = ", cached: the unsatisfiable cache answered" if d["cached"] else ""
    cause = f", cause {info['cause']}" if info.get("cause") else ""
    console.print(f"[bold yellow]pending[/]      {d['reason']} ({where}{cause}{cached})")
    console.print(f"[bold]why[/]          {e(d['message'])}")
    _render_theirs(info, console, tz, now)
    if "now" in info:
        console.print(f"[bold]expected[/]     {expected(d, info['now'], tz)}")
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
                amounts_text(lim["resources"]) or "-",
            )
        console.print(table)
    elif d.get("limits"):  # named by the engine but not (any more) in the state
        console.print("[bold]limits[/]       " + ", ".join(e(n) for n in d["limits"]))
