"""The figures only ``xce report`` draws: utilisation binned over calendar time, wait by
queue or user, simulated against logged wait, and the Gantt chart of a window. They
follow :mod:`xce.sim.plots`' conventions (its colours, its log wait axis, its time
axis) and are rendered by :func:`xce.sim.plots.render`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection

from xce.sim import plots
from xce.sim.model import JobRecord
from xce.sim.plots import FloatArray

__all__ = [
    "MAX_GANTT_JOBS",
    "MAX_GROUPS",
    "binned_utilisation",
    "busy_span",
    "gantt",
    "logged_against_simulated",
    "wait_by_group",
]


def binned_utilisation(
    ax: Axes,
    records: Sequence[JobRecord],
    total_slots: int,
    calendar_start: float | None,
    span: tuple[float, float] | None = None,
    policy: str = "",
) -> None:
    """The workload's jobs' busy share of ``total_slots`` per hour, day or week
    (:func:`~xce.sim.plots.bin_width`), over calendar time when ``calendar_start`` is
    known. ``span`` (simulated seconds, :func:`busy_span` of every run): the bins, so
    that the panels of several runs share them; ``policy`` opens the title."""
    times, busy = plots.busy_steps(records)
    plots.time_axis(ax, calendar_start)
    ax.set_ylabel("Busy slots (%)")
    head = f"{policy}: " if policy else ""
    if times.size < 2 or total_slots <= 0:
        ax.set_title(f"{head}utilisation over time")
        plots.no_data(ax, "job finished")
        return
    first, last = span or (float(times[0]), float(times[-1]))
    edges, unit = plots.bin_edges(first, last, calendar_start)
    share = plots.bin_means(times, 100.0 * busy / total_slots, edges)
    x = plots.time_x(edges, calendar_start)
    mean = float(np.sum(share * np.diff(edges)) / max(last - first, 1e-9))
    what = f"the workload's jobs' busy share of {total_slots:,} slots per {unit}"
    ax.set_title(
        f"{head}{what} (mean {mean:.1f} %)" if head else f"{what.capitalize()} (mean {mean:.1f} %)"
    )
    ax.stairs(share, x, color=plots.COLOR, fill=True, alpha=0.5)
    ax.set_ylim(0, 105)
    plots.time_limits(ax, x)


def busy_span(runs: Sequence[Sequence[JobRecord]]) -> tuple[float, float] | None:
    """From the first start to the last end of any run's jobs: the bins the runs'
    utilisation panels share (None when no job ran)."""
    times = [plots.busy_steps(records)[0] for records in runs]
    kept = [t for t in times if t.size >= 2]
    if not kept:
        return None
    return min(float(t[0]) for t in kept), max(float(t[-1]) for t in kept)


def wait_by_group(
    ax: Axes, runs: Sequence[tuple[str, dict[str, dict[str, float | None]]]], what: str
) -> None:
    """Median (bar) and p95 (tick) wait of each group of ``metrics.json``'s ``by_queue``
    or ``by_user``, a bar per ``(policy, groups)`` side by side in each group, for the
    :data:`MAX_GROUPS` groups with the most jobs over all runs, on a log axis. One run
    unnamed (``""``) draws one bar per group."""
    ax.set_title(f"Wait by {what} (bar: median, tick: p95; the {MAX_GROUPS} largest)")
    ax.set_ylabel("Wait (s, log scale; under 1 s drawn at 1 s)")
    ax.set_xlabel(what.capitalize())
    jobs: dict[str, float] = {}
    for _, groups in runs:
        for g, counts in groups.items():
            jobs[g] = jobs.get(g, 0.0) + float(counts.get("jobs") or 0)
    kept = sorted(jobs, key=lambda g: (-jobs[g], g))[:MAX_GROUPS]
    width = 0.8 / max(len(runs), 1)
    top = 0.0
    for k, (name, groups) in enumerate(runs):
        x, medians, p95 = [], [], []
        for i, g in enumerate(kept):
            median = groups.get(g, {}).get("median_wait_s")
            if median is not None:
                x.append(i + (k - (len(runs) - 1) / 2) * width)
                medians.append(max(float(median), plots.WAIT_FLOOR))
                p95.append(max(float(groups[g].get("p95_wait_s") or 0.0), plots.WAIT_FLOOR))
        if not x:
            continue
        color = plots.PALETTE[k % len(plots.PALETTE)]
        ax.bar(x, medians, width=width * 0.9, color=color, label=name or "median")
        ax.scatter(x, p95, marker="_", s=200, color="0.1" if name else plots.ACCENT)
        top = max(top, *p95)
    if not top:
        plots.no_data(ax, "job started")
        return
    ax.set_xticks(np.arange(len(kept)))
    slanted = len(kept) > 8 or max(len(g) for g in kept) > 12
    ax.set_xticklabels(kept, rotation=30 if slanted else 0, ha="right" if slanted else "center")
    ax.set_yscale("log")
    ax.set_ylim(bottom=plots.WAIT_FLOOR * 0.8, top=top * 3)
    if any(name for name, _ in runs):
        plots.legend_outside(ax)


MAX_GROUPS = 20
"""At most this many queues or users in a :func:`wait_by_group` figure."""


def logged_against_simulated(
    ax: Axes, logged: FloatArray, simulated: Sequence[tuple[str, FloatArray]]
) -> None:
    """The trace's logged waits of a set of jobs (dashed) and each policy's replayed
    waits of the same jobs: their CDFs in one figure."""
    plots.wait_cdfs(
        ax,
        simulated,
        f"Simulated against logged wait (the same {logged.size:,} jobs)",
        reference=("logged", logged),
    )


def gantt(
    ax: Axes,
    records: Sequence[JobRecord],
    window: tuple[float, float],
    calendar_start: float | None,
    policy: str = "",
) -> None:
    """The jobs running in ``window`` (simulated seconds), one row per host, a bar per
    job on each of its hosts, coloured by job; jobs sharing a host at once get lanes
    of its row. At most :data:`MAX_GANTT_JOBS` jobs. ``policy`` opens the title (a
    panel of a figure of several policies)."""
    low, high = window
    shown = [
        (r, max(r.start, low), min(r.end, high))
        for r in records
        if r.start is not None and r.end is not None and r.start < high and r.end > low
    ][:MAX_GANTT_JOBS]
    ax.set_title(f"{policy + ': ' if policy else ''}jobs on hosts, {len(shown)} in the window")
    plots.time_axis(ax, calendar_start)
    ax.set_ylabel("Host")
    edges = plots.time_x(np.array([low, high], dtype=np.float64), calendar_start)
    ax.set_xlim(edges[0], edges[1])  # the window, even with no job in it
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
    # every bar in one collection, in the order and with the vertices broken_barh gives
    # one bar at a time (the same picture; one call to matplotlib, not one per bar: a
    # report of 3,000 jobs on 1,024 hosts spent 88 % of its time there)
    vertices: list[list[tuple[float, float]]] = []
    colors: list[str] = []
    for row, h in enumerate(hosts):
        lanes = _lanes(on[h])
        height = 0.8 / (max(lanes) + 1)
        runs = np.array([(start, end) for start, end, _ in on[h]], dtype=np.float64)
        xs = plots.time_x(runs, calendar_start).tolist()
        for ((_, _, k), lane), (x0, x1) in zip(zip(on[h], lanes, strict=True), xs, strict=True):
            bottom = row - 0.4 + lane * height
            right = x0 + (x1 - x0)
            vertices.append(
                [(x0, bottom), (x0, bottom + height), (right, bottom + height), (right, bottom)]
            )
            colors.append(plots.PALETTE[k % len(plots.PALETTE)])
    ax.add_collection(PolyCollection(vertices, color=colors, alpha=0.8))
    ax.set_ylim(-0.6, len(hosts) - 0.4)
    if len(hosts) <= 40:
        ax.set_yticks(np.arange(len(hosts)))
        ax.set_yticklabels(hosts, fontsize="small")
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
