"""The clusters a replay runs on when no state file is given: ``n`` uniform hosts
(``xce simulate --hosts N --slots-per-host C``, a sweep's ``hosts:`` variant), or the
machine an SWF trace's header describes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xce.errors import InputError

if TYPE_CHECKING:
    from xce.cluster import ClusterState
    from xce.sim.swf import SwfTrace

__all__ = ["check_hosts", "header_cluster", "uniform_cluster"]


def header_cluster(trace: SwfTrace) -> tuple[int, int]:
    """(hosts, slots per host) from an SWF header: MaxNodes x MaxProcs/MaxNodes."""
    from xce.inputs import MAX_HOST_SLOTS
    from xce.sim.generate import MAX_HOSTS

    nodes = trace.header_int("MaxNodes", limit=MAX_HOSTS)  # located: file and header line
    procs = trace.header_int("MaxProcs", limit=None if nodes else MAX_HOSTS)  # hosts if alone
    if nodes and procs:
        slots = max(procs // nodes, 1)
        if slots > MAX_HOST_SLOTS:
            raise InputError(
                f"header MaxProcs/MaxNodes gives {slots:,} slots per host, more than "
                f"{MAX_HOST_SLOTS:,} (the limit): pass --hosts and --slots-per-host",
                source=trace.source,
                line=trace.header_lines.get("MaxProcs"),
                text=f"; MaxProcs: {trace.header['MaxProcs']}",
            )
        return nodes, slots
    if nodes or procs:
        return (nodes or procs or 0), 1
    raise InputError(
        "the trace header gives neither MaxNodes nor MaxProcs: pass --hosts and --slots-per-host",
        source=trace.source,
    )


def uniform_cluster(hosts: int, slots: int, queues: ClusterState | None = None) -> ClusterState:
    """``hosts`` hosts ``n0``... of ``slots`` slots each (with what ``queues``, a state
    file of queues only, sets: its queues and limits, its default picker and backfill
    policy, its priority setup; an error in those names that file)."""
    from dataclasses import replace

    from xce.cluster import state_from_dict

    check_hosts(hosts, slots)
    width = len(str(hosts - 1))
    data = {"hosts": [{"name": f"n{i:0{width}d}", "slots": slots} for i in range(hosts)]}
    state = state_from_dict(data, f"<{hosts} hosts x {slots} slots>")
    if queues is not None:
        state = replace(
            state,
            queues=queues.queues,
            limits=queues.limits,
            default_picker=queues.default_picker,
            default_backfill=queues.default_backfill,
            priority=queues.priority,
            source=queues.source if queues.source is not None else state.source,
        )
    return state


def check_hosts(hosts: int | None, slots: int | None) -> None:
    """``--hosts`` within 1..MAX_HOSTS, ``--slots-per-host`` at least 1 (0 is refused,
    not taken as 1)."""
    from xce.sim.generate import MAX_HOSTS

    if hosts is not None and not 1 <= hosts <= MAX_HOSTS:
        raise InputError(f"--hosts must be between 1 and {MAX_HOSTS:,}, got {hosts}")
    if slots is not None and slots < 1:
        raise InputError(f"--slots-per-host must be at least 1, got {slots}")
