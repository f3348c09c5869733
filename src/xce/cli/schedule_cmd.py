"""``xce schedule``: one scheduling session on a state file — where jobs land, why others wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from xce.alloc import Dispatched, Pending
from xce.cluster import ClusterState, load_state
from xce.core import JobStarted, SchedulerCore, SessionResult, write_state


def _dispatched(d: Dispatched, state: ClusterState) -> dict[str, Any]:
    names = state.hosts.names
    return {
        "job": d.job,
        "alternative": d.allocation.alternative,
        "allocation": [
            {"host": names[c.host], "slots": c.slots, "term": c.term, "resources": dict(c.amounts)}
            for c in d.allocation.claims
        ],
        "shared": _summed(d.allocation.shared),
    }


def _summed(amounts: tuple[tuple[str, float], ...]) -> dict[str, float]:
    """Shared amounts per resource: compound terms may each want the same licence."""
    out: dict[str, float] = {}
    for name, amount in amounts:
        out[name] = out.get(name, 0.0) + amount
    return out


def _pending(p: Pending) -> dict[str, Any]:
    return {
        "job": p.job,
        "reason": p.info.reason.value,
        "message": p.info.message,
        "cached": p.cached,
        "hosts": dict(p.info.hosts),
    }


def decisions_json(result: SessionResult, state: ClusterState) -> dict[str, Any]:
    """The decisions JSON of design §5."""
    s = result.stats
    return {
        "dispatched": [_dispatched(d, state) for d in result.dispatched],
        "pending": [_pending(p) for p in result.pending],
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
            "elapsed_s": round(s.elapsed_s, 6),
        },
    }


def _render(info: dict[str, Any], explain: bool, console: Console) -> None:
    table = Table(title=f"Dispatched ({len(info['dispatched'])})", title_justify="left")
    for col in ("job", "hosts (slots, term)", "resources", "shared"):
        table.add_column(col)
    for d in info["dispatched"]:
        hosts = ", ".join(
            f"{a['host']}:{a['slots']}" + (f" t{a['term']}" if a["term"] else "")
            for a in d["allocation"]
        )
        res: dict[str, float] = {}
        for a in d["allocation"]:
            for k, v in a["resources"].items():
                res[k] = res.get(k, 0.0) + v
        alt = "" if d["alternative"] is None else f" (alt {d['alternative']})"
        table.add_row(
            d["job"] + alt,
            hosts,
            " ".join(f"{k}={v:g}" for k, v in res.items()),
            " ".join(f"{k}={v:g}" for k, v in d["shared"].items()),
        )
    console.print(table)
    table = Table(title=f"Pending ({len(info['pending'])})", title_justify="left")
    for col in ("job", "reason", "why"):
        table.add_column(col)
    if explain:
        table.add_column("hosts by reason")
    for p in info["pending"]:
        row = [p["job"], p["reason"] + (" (cached)" if p["cached"] else ""), p["message"]]
        if explain:
            row.append(", ".join(f"{k}: {v}" for k, v in p["hosts"].items()) or "-")
        table.add_row(*row)
    console.print(table)
    s = info["stats"]
    by_reason = ", ".join(f"{k} {v}" for k, v in s["pending_by_reason"].items())
    console.print(
        f"{s['jobs']} jobs: {s['dispatched']} dispatched, {s['pending']} pending"
        + (f" ({by_reason})" if by_reason else "")
        + "; "
        f"{s['plans_tried']} plans, {s['host_tries']} host tries, "
        f"cache {s['cache_hits']} hits / {s['cache_misses']} misses; {s['elapsed_s'] * 1000:.1f} ms"
    )


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
    picker: Annotated[
        str | None,
        typer.Option(
            "--picker",
            help="Default job picker (fcfs, strict, fairshare, or a plugin's) "
            "for queues that name none.",
        ),
    ] = None,
    threads: Annotated[
        bool, typer.Option("--threads", help="Picker and allocator in two threads.")
    ] = False,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            help="Write the state after starting the dispatched jobs (.json/.yaml).",
        ),
    ] = None,
) -> None:
    """Run one scheduling session: where every pending job lands, or why it waits."""
    state = load_state(state_file)
    core = SchedulerCore(state, picker=picker)
    result = core.run_session(threads=threads)
    info = decisions_json(result, state)
    if snapshot is not None:
        core.apply(*(JobStarted(d.job, d.allocation) for d in result.dispatched))
        write_state(core.state, snapshot)
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        _render(info, explain, Console(highlight=False))
