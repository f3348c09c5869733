"""PNG plots of a simulation: utilisation and queue length over time, the wait-time CDF
and the mean bounded slowdown by job size.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend
switch) under matplotlib's default style, whatever the user's matplotlibrc says, and
saved without the software tag, so the same input gives byte-identical files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.style
import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from xce.sim.files import COMPARE_PLOTS, SIMULATE_PLOTS
from xce.sim.metrics import utilisation
from xce.sim.model import BSLD_TAU, JobRecord, Timeline

__all__ = [
    "SIZE_BUCKETS",
    "size_bucket",
    "write_compare_plots",
    "write_plots",
]

SIZE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1", 1, 1),
    ("2–4", 2, 4),
    ("5–16", 5, 16),
    ("17–64", 17, 64),
    ("65+", 65, None),
)
"""(label, fewest tasks, most tasks or None) of each job-size bucket."""

FloatArray = npt.NDArray[np.float64]

_HOUR = 3600.0
_WAIT_FLOOR = 1.0  # seconds: shorter waits are drawn at this point of the log axis
_WAIT_TICKS = (
    (1.0, "1 s"),
    (10.0, "10 s"),
    (60.0, "1 min"),
    (600.0, "10 min"),
    (3600.0, "1 h"),
    (6 * 3600.0, "6 h"),
    (86400.0, "1 d"),
    (7 * 86400.0, "1 wk"),
    (30 * 86400.0, "30 d"),
)
_COLOR = "#1f77b4"
_ACCENT = "#d62728"
_MAX_POINTS = 4000  # per curve: more than the pixels across a plot
_SIZE = (8.0, 4.5)  # inches
_DPI = 100


def write_plots(
    records: Sequence[JobRecord],
    timeline: Timeline,
    out_dir: Path,
    subtitle: str = "",
    fmt: str = "png",
) -> list[Path]:
    """Write utilisation.png, queue.png, wait_cdf.png and bsld_by_size.png into
    ``out_dir`` (created if missing); return their paths in that order. Empty input
    gives figures that say there is no data. ``subtitle`` (the workload and the policy)
    is a second line of every title."""
    out_dir.mkdir(parents=True, exist_ok=True)
    draws: tuple[Callable[[Axes], None], ...] = (
        lambda ax: _utilisation(ax, timeline, records),
        lambda ax: _queue(ax, timeline),
        lambda ax: _wait_cdf(ax, records),
        lambda ax: _bsld_by_size(ax, records),
    )
    written = []
    for name, draw in zip(SIMULATE_PLOTS, draws, strict=True):
        path = out_dir / f"{name}.{fmt}"
        _save(draw, path, subtitle)
        written.append(path)
    return written


def _save(draw: Callable[[Axes], None], path: Path, subtitle: str = "") -> None:
    with matplotlib.style.context("default"):  # ignore the user's matplotlibrc
        fig = Figure(figsize=_SIZE, dpi=_DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        draw(ax)
        if subtitle:
            ax.set_title(f"{ax.get_title()}\n{subtitle}")
        ax.grid(True, alpha=0.3)
        if path.suffix == ".svg":  # the same input, the same bytes: no date, fixed ids
            with matplotlib.rc_context({"svg.hashsalt": "xce"}):
                fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
        else:
            fig.savefig(path, format="png", metadata={"Software": None})


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_steps(ax: Axes, hours: FloatArray, values: FloatArray, *, fill: bool = False) -> None:
    """A step function; a long one as its per-bin min/max envelope, which draws the
    same picture (Agg cannot fill a million-point path, and need not)."""
    if hours.size > 2 * _MAX_POINTS:
        x, y = _envelope(hours, values, _MAX_POINTS // 2)
        ax.plot(x, y, color=_COLOR, linewidth=0.8)
        if fill:
            ax.fill_between(x, y, color=_COLOR, alpha=0.2, linewidth=0)
        return
    ax.step(hours, values, where="post", color=_COLOR, linewidth=0.8)
    if fill:
        ax.fill_between(hours, values, step="post", color=_COLOR, alpha=0.2, linewidth=0)


def _envelope(hours: FloatArray, values: FloatArray, bins: int) -> tuple[FloatArray, FloatArray]:
    """Per equal-width time bin, the least and the most value the step function takes
    in it (the value carried in from the bin's start included), as two points."""
    edges = np.linspace(hours[0], hours[-1], bins + 1)
    which = np.clip(np.searchsorted(edges, hours, side="right") - 1, 0, bins - 1)
    carried = values[np.searchsorted(hours, edges[:-1], side="right") - 1]
    low, high = carried.copy(), carried.copy()
    np.minimum.at(low, which, values)
    np.maximum.at(high, which, values)
    half = (edges[1] - edges[0]) / 2
    x = np.column_stack([edges[:-1], edges[:-1] + half]).ravel()
    return x, np.column_stack([low, high]).ravel()


def _hours(timeline: Timeline) -> FloatArray:
    return np.asarray(timeline.times, dtype=np.float64) / _HOUR


# -- over time ------------------------------------------------------------------------


def _utilisation(ax: Axes, timeline: Timeline, records: Sequence[JobRecord]) -> None:
    """Busy slots over time (every busy slot, work running at the start included); the
    title gives both figures of ``metrics.json`` and the dashed line is the curve's mean
    over their window, ``utilization_all_work`` (:func:`xce.sim.metrics.utilisation`)."""
    ax.set_xlabel("Simulated time (hours)")
    ax.set_ylabel(f"Busy slots (% of {timeline.total_slots:,})")
    if not timeline.times or timeline.total_slots <= 0:
        ax.set_title("Cluster utilisation")
        _no_data(ax, "samples")
        return
    hours = _hours(timeline)
    busy = 100.0 * np.asarray(timeline.busy, dtype=np.float64) / timeline.total_slots
    _draw_steps(ax, hours, busy)
    used = utilisation(records, timeline)
    if used.makespan <= 0:
        ax.set_title("Cluster utilisation")
    else:
        ax.set_title(
            "Cluster utilisation, first submission to last end:\n"
            f"all work {100 * used.all_work:.1f} % (dashed), "
            f"the workload's jobs {100 * used.workload:.1f} %",
            fontsize="medium",
        )
        ax.hlines(
            100 * used.all_work,
            used.start / _HOUR,
            used.end / _HOUR,
            color=_ACCENT,
            linestyle="--",
            linewidth=1,
        )
    ax.set_ylim(0, 105)
    _time_limits(ax, hours)


def _time_limits(ax: Axes, hours: FloatArray) -> None:
    ax.set_xlim(hours[0], hours[-1] if hours[-1] > hours[0] else hours[0] + 1)


def _queue(ax: Axes, timeline: Timeline) -> None:
    ax.set_title("Queue length")
    ax.set_xlabel("Simulated time (hours)")
    ax.set_ylabel("Pending jobs")
    if not timeline.times:
        _no_data(ax, "samples")
        return
    hours = _hours(timeline)
    pending = np.asarray(timeline.pending, dtype=np.float64)
    _draw_steps(ax, hours, pending, fill=True)
    ax.set_ylim(bottom=0)
    _time_limits(ax, hours)
    ax.text(
        0.99,
        0.95,
        f"peak {int(pending.max())} pending",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize="small",
        color="0.3",
    )


# -- per job -----------------------------------------------------------------------------


def _wait_cdf(ax: Axes, records: Sequence[JobRecord]) -> None:
    ax.set_title("Wait-time distribution (jobs that started)")
    ax.set_xlabel("Wait (log scale; waits under 1 s drawn at 1 s)")
    ax.set_ylabel("Jobs that waited at most this long (%)")
    waits = np.sort(np.array([r.wait for r in records if r.wait is not None], dtype=np.float64))
    if waits.size == 0:
        _no_data(ax, "job started")
        return
    shown = np.maximum(waits, _WAIT_FLOOR)
    share = 100.0 * np.arange(1, waits.size + 1) / waits.size
    if waits.size > _MAX_POINTS:  # evenly spaced ranks, the last included
        keep = np.linspace(0, waits.size - 1, _MAX_POINTS).astype(np.int64)
        shown, share = shown[keep], share[keep]
    top = max(float(shown[-1]) * 2, 10.0)
    ax.step(np.append(shown, top), np.append(share, 100.0), where="post", color=_COLOR)
    ax.set_xscale("log")
    ax.set_xlim(_WAIT_FLOOR * 0.8, top)
    ax.set_ylim(0, 101)
    ticks = [(x, label) for x, label in _WAIT_TICKS if x <= top]
    ax.xaxis.set_major_locator(FixedLocator([x for x, _ in ticks]))
    ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    quick = 100.0 * float((waits < _WAIT_FLOOR).mean())
    median = float(np.median(waits))
    ax.text(
        0.99,
        0.04,
        f"{waits.size} jobs; {quick:.0f} % started within 1 s; median wait {_duration(median)}",
        transform=ax.transAxes,
        ha="right",
        fontsize="small",
        color="0.3",
    )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < _HOUR:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / _HOUR:.1f} h"


def size_bucket(tasks: int) -> int:
    """Index in :data:`SIZE_BUCKETS` of a job of ``tasks`` tasks."""
    for i, (_, low, high) in enumerate(SIZE_BUCKETS):
        if tasks >= low and (high is None or tasks <= high):
            return i
    return 0


def _bsld_by_size(ax: Axes, records: Sequence[JobRecord]) -> None:
    ax.set_title("Mean bounded slowdown by job size")
    ax.set_xlabel("Job size (tasks)")
    ax.set_ylabel(f"Mean bounded slowdown (τ = {BSLD_TAU:g} s)")
    sums = [0.0] * len(SIZE_BUCKETS)
    counts = [0] * len(SIZE_BUCKETS)
    for r in records:
        bsld = r.bsld
        if r.start is None or bsld is None:
            continue
        b = size_bucket(r.slots or r.job.tasks or 1)
        sums[b] += bsld
        counts[b] += 1
    labels = [label for label, _, _ in SIZE_BUCKETS]
    if not any(counts):
        _no_data(ax, "job finished")
        return
    means = [s / n if n else 0.0 for s, n in zip(sums, counts, strict=True)]
    bars = ax.bar(labels, means, color=_COLOR, width=0.6)
    ax.bar_label(
        bars,
        labels=[
            f"{m:.2f}\n({n} jobs)" if n else "no jobs" for m, n in zip(means, counts, strict=True)
        ],
        fontsize="small",
        padding=2,
    )
    ax.axhline(1.0, color="0.5", linewidth=0.8, linestyle=":")
    ax.set_ylim(0, max(means) * 1.25 + 0.5)


# -- several policies on one workload (xce compare) ----------------------------------------

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")

Run = tuple[str, Sequence[JobRecord]]
"""(policy name, its records)."""


def write_compare_plots(
    runs: Sequence[Run], workload: str, out_dir: Path, fmt: str = "png"
) -> list[Path]:
    """Write compare_wait_cdf.png (the policies' wait CDFs overlaid) and
    compare_bsld_by_size.png (median and p95 bounded slowdown per job size, a bar group
    per size) into ``out_dir``; titles name the workload and the policies."""
    out_dir.mkdir(parents=True, exist_ok=True)
    draws: tuple[Callable[[Axes], None], ...] = (
        lambda ax: _compare_waits(ax, runs, workload),
        lambda ax: _compare_bsld(ax, runs, workload),
    )
    written = []
    for name, draw in zip(COMPARE_PLOTS, draws, strict=True):
        path = out_dir / f"{name}.{fmt}"
        _save(draw, path)
        written.append(path)
    return written


def _compare_waits(ax: Axes, runs: Sequence[Run], workload: str) -> None:
    ax.set_title(f"Wait-time distribution: {workload}")
    ax.set_xlabel("Wait (log scale; waits under 1 s drawn at 1 s)")
    ax.set_ylabel("Jobs that waited at most this long (%)")
    top = 10.0
    drawn = False
    for k, (name, records) in enumerate(runs):
        waits = np.sort(np.array([r.wait for r in records if r.wait is not None], np.float64))
        if waits.size == 0:
            continue
        shown = np.maximum(waits, _WAIT_FLOOR)
        share = 100.0 * np.arange(1, waits.size + 1) / waits.size
        if waits.size > _MAX_POINTS:
            keep = np.linspace(0, waits.size - 1, _MAX_POINTS).astype(np.int64)
            shown, share = shown[keep], share[keep]
        top = max(top, float(shown[-1]) * 2)
        median = _duration(float(np.median(waits)))
        color = _PALETTE[k % len(_PALETTE)]
        ax.step(shown, share, where="post", color=color, label=f"{name} (median {median})")
        drawn = True
    if not drawn:
        _no_data(ax, "job started")
        return
    ax.set_xscale("log")
    ax.set_xlim(_WAIT_FLOOR * 0.8, top)
    ax.set_ylim(0, 101)
    ticks = [(x, label) for x, label in _WAIT_TICKS if x <= top]
    ax.xaxis.set_major_locator(FixedLocator([x for x, _ in ticks]))
    ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(loc="lower right", fontsize="small")


def _compare_bsld(ax: Axes, runs: Sequence[Run], workload: str) -> None:
    ax.set_title(f"Bounded slowdown by job size (bar: median, tick: p95): {workload}")
    ax.set_xlabel("Job size (tasks)")
    ax.set_ylabel(f"Bounded slowdown (τ = {BSLD_TAU:g} s, log scale)")
    labels = [label for label, _, _ in SIZE_BUCKETS]
    width = 0.8 / max(len(runs), 1)
    drawn = False
    for k, (name, records) in enumerate(runs):
        per: list[list[float]] = [[] for _ in SIZE_BUCKETS]
        for r in records:
            if r.start is not None and r.bsld is not None:
                per[size_bucket(r.slots or r.job.tasks or 1)].append(r.bsld)
        x = np.arange(len(SIZE_BUCKETS)) + (k - (len(runs) - 1) / 2) * width
        medians = [float(np.median(v)) if v else 0.0 for v in per]
        p95 = [float(np.percentile(v, 95)) if v else 0.0 for v in per]
        color = _PALETTE[k % len(_PALETTE)]
        ax.bar(x, medians, width=width, color=color, label=name)
        ax.scatter(x, p95, marker="_", s=120, color=color)
        drawn = drawn or any(per)
    if not drawn:
        _no_data(ax, "job finished")
        return
    ax.set_xticks(np.arange(len(SIZE_BUCKETS)))
    ax.set_xticklabels(labels)
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.8)
    ax.legend(loc="upper right", fontsize="small")
