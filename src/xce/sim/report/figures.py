"""The figures only ``xce report`` draws: utilisation binned over calendar time, wait by
queue or user, simulated against logged wait, and the Gantt chart of a window. They
follow :mod:`xce.sim.plots`' conventions (its colours, its log wait axis, its time
axis) and are rendered by :func:`xce.sim.plots.render`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes

from xce.sim import plots
from xce.sim.model import JobRecord
from xce.sim.plots import FloatArray

__all__ = [
    "MAX_GANTT_JOBS",
    "MAX_GROUPS",
    "binned_utilisation",
    "gantt",
    "logged_against_simulated",
    "wait_by_group",
]


def binned_utilisation(
    ax: Axes, records: Sequence[JobRecord], total_slots: int, calendar_start: float | None
) -> None:
    """The workload's jobs' busy share of ``total_slots`` per hour, day or week
    (:func:`bin_width`), over calendar time when ``calendar_start`` is known."""
    times, busy = plots.busy_steps(records)
    plots.time_axis(ax, calendar_start)
    ax.set_ylabel(f"Busy slots, mean per bin (% of {total_slots:,})")
    if times.size < 2 or total_slots <= 0:
        ax.set_title("Utilisation over time")
        plots.no_data(ax, "job finished")
        return
    edges, share, unit = plots.step_bins(times, 100.0 * busy / total_slots, calendar_start)
    x = plots.time_x(edges, calendar_start)
    ax.set_title(f"Utilisation per {unit} (the workload's jobs)")
    ax.stairs(share, x, color=plots.COLOR, fill=True, alpha=0.5)
    ax.set_ylim(0, 105)
    plots.time_limits(ax, x)


def wait_by_group(ax: Axes, groups: dict[str, dict[str, float | None]], what: str) -> None:
    """Median (bar) and p95 (tick) wait of each group of ``metrics.json``'s ``by_queue``
    or ``by_user``, the :data:`MAX_GROUPS` with the most jobs, on a log axis."""
    ax.set_title(f"Wait by {what} (bar: median, tick: p95; the {MAX_GROUPS} largest)")
    ax.set_ylabel("Wait (s, log scale; under 1 s drawn at 1 s)")
    ax.set_xlabel(what.capitalize())
    largest = sorted(groups, key=lambda g: (-float(groups[g].get("jobs") or 0), g))[:MAX_GROUPS]
    kept = [g for g in largest if groups[g].get("median_wait_s") is not None]
    if not kept:
        plots.no_data(ax, "job started")
        return
    medians = [max(float(groups[g]["median_wait_s"] or 0.0), plots.WAIT_FLOOR) for g in kept]
    p95 = [max(float(groups[g]["p95_wait_s"] or 0.0), plots.WAIT_FLOOR) for g in kept]
    x = np.arange(len(kept))
    ax.bar(x, medians, color=plots.COLOR, width=0.6, label="median")
    ax.scatter(x, p95, marker="_", s=200, color=plots.ACCENT, label="p95")
    ax.set_xticks(x)
    slanted = len(kept) > 8 or max(len(g) for g in kept) > 12
    ax.set_xticklabels(kept, rotation=30 if slanted else 0, ha="right" if slanted else "center")
    ax.set_yscale("log")
    ax.set_ylim(bottom=plots.WAIT_FLOOR * 0.8, top=max(p95) * 3)
    ax.legend(loc="upper right", fontsize="small")


MAX_GROUPS = 20
"""At most this many queues or users in a :func:`wait_by_group` figure."""


def logged_against_simulated(ax: Axes, simulated: FloatArray, logged: FloatArray) -> None:
    """The replay's waits against the trace's logged waits of the same jobs: both CDFs."""
    plots.wait_cdfs(
        ax,
        [("logged", logged), ("simulated", simulated)],
        f"Simulated against logged wait ({simulated.size} jobs with both)",
    )


def gantt(
    ax: Axes,
    records: Sequence[JobRecord],
    window: tuple[float, float],
    calendar_start: float | None,
) -> None:
    """The jobs running in ``window`` (simulated seconds), one row per host, a bar per
    job on each of its hosts, coloured by job; jobs sharing a host at once get lanes
    of its row. At most :data:`MAX_GANTT_JOBS` jobs."""
    low, high = window
    shown = [
        (r, max(r.start, low), min(r.end, high))
        for r in records
        if r.start is not None and r.end is not None and r.start < high and r.end > low
    ][:MAX_GANTT_JOBS]
    ax.set_title(f"Jobs on hosts, {len(shown)} jobs in the window")
    plots.time_axis(ax, calendar_start)
    ax.set_ylabel("Host")
    if not shown:
        plots.no_data(ax, "job running in this window")
        return
    on: dict[str, list[tuple[float, float, int]]] = {}
    for k, (r, start, end) in enumerate(shown):
        for h in set(r.hosts or ("(no host)",)):
            on.setdefault(h, []).append((start, end, k))
    hosts = sorted(on, key=_natural)
    for spans in on.values():
        spans.sort()  # by start: the greedy lanes are then as few as can be
    edges = plots.time_x(np.array([low, high], dtype=np.float64), calendar_start)
    for row, h in enumerate(hosts):
        lanes = _lanes(on[h])
        height = 0.8 / (max(lanes) + 1)
        for (start, end, k), lane in zip(on[h], lanes, strict=True):
            x = plots.time_x(np.array([start, end]), calendar_start)
            bottom = row - 0.4 + lane * height
            color = plots.PALETTE[k % len(plots.PALETTE)]
            ax.broken_barh([(x[0], x[1] - x[0])], (bottom, height), color=color, alpha=0.8)
    ax.set_xlim(edges[0], edges[1])
    ax.set_ylim(-0.6, len(hosts) - 0.4)
    if len(hosts) <= 40:
        ax.set_yticks(np.arange(len(hosts)))
        ax.set_yticklabels(hosts, fontsize="x-small")
    ax.invert_yaxis()


MAX_GANTT_JOBS = 5000
"""A Gantt chart draws at most this many jobs (the first to start in its window)."""


def _lanes(spans: list[tuple[float, float, int]]) -> list[int]:
    """A lane for each span (in order of start) so that no two spans of one lane overlap:
    the first free one (greedy interval colouring, as few lanes as overlap at once)."""
    ends: list[float] = []
    lanes = []
    for start, end, _ in spans:
        lane = next((i for i, e in enumerate(ends) if e <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        ends[lane] = end
        lanes.append(lane)
    return lanes


def _natural(name: str) -> tuple[str, int]:
    """``node10`` after ``node9``."""
    digits = len(name) - len(name.rstrip("0123456789"))
    return (name[: len(name) - digits], int(name[len(name) - digits :]) if digits else -1)
