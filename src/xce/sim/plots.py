"""PNG plots of a simulation: utilisation and queue length over time, the wait-time CDF
and the mean bounded slowdown by job size.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend
switch) under matplotlib's default style, whatever the user's matplotlibrc says, and
saved without the software tag, so the same input gives byte-identical files. They are
:data:`WIDTH_PX` wide with text to match, so they read at their own size on a 1280-pixel
screen and in the report's column, and every legend sits outside the plot
(:func:`legend_outside`), where it cannot cover a curve or a bar.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.style
import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from xce.sim.files import COMPARE_PLOTS, SIMULATE_PLOTS
from xce.sim.metrics import utilisation
from xce.sim.model import BSLD_TAU, JobRecord, Timeline

# matplotlib says on stderr when it falls back from a font a style names to the one it
# ships (DejaVu Sans, which every plot here is drawn with): not the user's business
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)

__all__ = [
    "ACCENT",
    "COLOR",
    "PALETTE",
    "PANEL_HEIGHT",
    "SIZE_BUCKETS",
    "WAIT_FLOOR",
    "WIDTH_PX",
    "bin_edges",
    "bin_means",
    "bin_width",
    "bsld_by_size",
    "busy_steps",
    "legend_outside",
    "no_data",
    "render",
    "render_panels",
    "size_bucket",
    "step_bins",
    "time_axis",
    "time_limits",
    "time_x",
    "wait_cdfs",
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
_DAY = 86400.0
WAIT_FLOOR = 1.0  # seconds: shorter waits are drawn at this point of the log axis
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
COLOR = "#1f77b4"
ACCENT = "#d62728"
_BIN_COLOR = "#2ca02c"
_MAX_POINTS = 4000  # per curve: more than the pixels across a plot
_DPI = 100
WIDTH_PX = 1100
"""Every figure's width in pixels: the report's column on a 1280-pixel screen, so a
figure is shown at its own size there (issue 26: 800 pixels with 10-point text read
small, and scaled up they blurred)."""
_SIZE = (WIDTH_PX / _DPI, 5.5)  # inches
PANEL_HEIGHT = 3.2
"""Inches per panel of a figure of several (one per policy), by default."""
_FONT_SIZE = 11.0  # points: 15 pixels at 100 dpi


def write_plots(
    records: Sequence[JobRecord],
    timeline: Timeline,
    out_dir: Path,
    subtitle: str = "",
    fmt: str = "png",
    calendar_start: float | None = None,
) -> list[Path]:
    """Write utilisation.png, queue.png, wait_cdf.png and bsld_by_size.png into
    ``out_dir`` (created if missing); return their paths in that order. Empty input
    gives figures that say there is no data. ``subtitle`` (the workload and the policy)
    is a second line of every title. ``calendar_start`` (an SWF header's
    ``UnixStartTime``) puts the time plots on calendar dates (UTC)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    draws: tuple[Callable[[Axes], None], ...] = (
        lambda ax: _utilisation(ax, timeline, records, calendar_start),
        lambda ax: _queue(ax, timeline, calendar_start),
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
    path.write_bytes(render(draw, subtitle, path.suffix.lstrip(".")))


def render(draw: Callable[[Axes], None], subtitle: str = "", fmt: str = "png") -> bytes:
    """One figure drawn by ``draw`` on a fresh axes, as PNG or SVG bytes; ``subtitle``
    (the workload and the policy) is a second line of its title. Same input, same bytes."""
    return render_panels([draw], subtitle, fmt)


def render_panels(
    draws: Sequence[Callable[[Axes], None]],
    subtitle: str = "",
    fmt: str = "png",
    *,
    title: str = "",
    panel_height: float = PANEL_HEIGHT,
) -> bytes:
    """One figure of a panel per ``draws`` (each draws one policy's view of a quantity),
    stacked over a shared x axis, so the policies read side by side in one image; the
    figure's title is ``title`` over ``subtitle``; each panel is ``panel_height`` inches
    high. One draw is :func:`render`'s figure."""
    with matplotlib.style.context("default"), matplotlib.rc_context({"font.size": _FONT_SIZE}):
        n = len(draws)
        height = _SIZE[1] if n == 1 else 1.2 + n * panel_height
        fig = Figure(figsize=(_SIZE[0], height), dpi=_DPI, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, draw in zip(axes, draws, strict=True):
            draw(ax)
            ax.grid(True, alpha=0.3)
        for ax in axes[:-1]:  # the shared axis is labelled once, under the last panel
            ax.set_xlabel("")
        if n == 1 and subtitle:
            axes[0].set_title(f"{axes[0].get_title()}\n{subtitle}")
        elif title or subtitle:
            fig.suptitle("\n".join(t for t in (title, subtitle) if t))
        buffer = io.BytesIO()
        if fmt == "svg":  # the same input, the same bytes: no date, fixed ids
            with matplotlib.rc_context({"svg.hashsalt": "xce"}):
                fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
        else:
            fig.savefig(buffer, format="png", metadata={"Software": None})
        return buffer.getvalue()


def legend_outside(ax: Axes, title: str | None = None) -> None:
    """The axes' legend to the right of its plot, outside it: inside, wherever it went,
    some run's curve or bar could pass under it (issue 26). The constrained layout makes
    room for it."""
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        fontsize="small",
        title=title,
        title_fontsize="small",
        frameon=False,
    )


def no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    # a date axis' ConciseDateFormatter fails on no ticks at all (an empty Gantt window)
    ax.xaxis.set_major_formatter(NullFormatter())


def _draw_steps(ax: Axes, hours: FloatArray, values: FloatArray, *, fill: bool = False) -> None:
    """A step function; a long one as its per-bin min/max envelope, which draws the
    same picture (Agg cannot fill a million-point path, and need not)."""
    if hours.size > 2 * _MAX_POINTS:
        x, y = _envelope(hours, values, _MAX_POINTS // 2)
        ax.plot(x, y, color=COLOR, linewidth=0.8)
        if fill:
            ax.fill_between(x, y, color=COLOR, alpha=0.2, linewidth=0)
        return
    ax.step(hours, values, where="post", color=COLOR, linewidth=0.8)
    if fill:
        ax.fill_between(hours, values, step="post", color=COLOR, alpha=0.2, linewidth=0)


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


def _seconds(timeline: Timeline) -> FloatArray:
    return np.asarray(timeline.times, dtype=np.float64)


def time_x(seconds: FloatArray, calendar_start: float | None) -> FloatArray:
    """Positions on a time axis: simulated hours, or matplotlib date numbers (days since
    1970-01-01 UTC) when the trace's ``UnixStartTime`` is known."""
    if calendar_start is None:
        return seconds / _HOUR
    return (calendar_start + seconds) / _DAY


def time_axis(ax: Axes, calendar_start: float | None) -> None:
    """Label a time axis drawn at :func:`time_x` positions."""
    if calendar_start is None:
        ax.set_xlabel("Simulated time (hours)")
        return
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel("Calendar time (UTC, from the trace's UnixStartTime)")


# -- over time ------------------------------------------------------------------------


def _utilisation(
    ax: Axes,
    timeline: Timeline,
    records: Sequence[JobRecord],
    calendar_start: float | None = None,
) -> None:
    """Busy slots over time, as the report draws them: the mean per hour, day or week
    (:func:`bin_width`) of calendar time when ``calendar_start`` is known, of all work
    (work running at the start included; filled) and of the workload's jobs (a line),
    not a line through every event (issue 26). The title gives both figures of
    ``metrics.json``; the dashed line is ``utilization_all_work``, the curve's mean from
    first submission to last end (:func:`xce.sim.metrics.utilisation`)."""
    time_axis(ax, calendar_start)
    ax.set_ylabel(f"Busy slots, mean per bin (% of {timeline.total_slots:,})")
    if len(timeline.times) < 2 or timeline.total_slots <= 0:
        ax.set_title("Cluster utilisation")
        no_data(ax, "samples")
        return
    seconds = _seconds(timeline)
    busy = 100.0 * np.asarray(timeline.busy, dtype=np.float64) / timeline.total_slots
    edges, unit = bin_edges(float(seconds[0]), float(seconds[-1]), calendar_start)
    x = time_x(edges, calendar_start)
    ax.stairs(
        bin_means(seconds, busy, edges),
        x,
        color=COLOR,
        fill=True,
        alpha=0.35,
        label=f"all work, mean per {unit}",
    )
    times, slots = busy_steps(records)
    if times.size >= 2:
        share = bin_means(times, 100.0 * slots / timeline.total_slots, edges)
        ax.stairs(
            share, x, color=_BIN_COLOR, linewidth=1.5, label=f"the workload's jobs, mean per {unit}"
        )
    used = utilisation(records, timeline)
    if used.makespan <= 0:
        ax.set_title(f"Cluster utilisation per {unit}")
    else:
        ax.set_title(
            f"Cluster utilisation per {unit}, first submission to last end:\n"
            f"all work {100 * used.all_work:.1f} %, the workload's jobs {100 * used.workload:.1f} %"
        )
        ends = time_x(np.array([used.start, used.end]), calendar_start)
        ax.hlines(
            100 * used.all_work,
            ends[0],
            ends[1],
            color=ACCENT,
            linestyle="--",
            linewidth=1,
            label="all work, over the makespan",
        )
    legend_outside(ax)
    ax.set_ylim(0, 105)
    time_limits(ax, x)


def time_limits(ax: Axes, x: FloatArray) -> None:
    ax.set_xlim(x[0], x[-1] if x[-1] > x[0] else x[0] + 1)


def _queue(ax: Axes, timeline: Timeline, calendar_start: float | None = None) -> None:
    """Pending jobs over time; the peak in the title (inside the plot it could sit on
    the peak itself)."""
    ax.set_title("Queue length")
    time_axis(ax, calendar_start)
    ax.set_ylabel("Pending jobs")
    if not timeline.times:
        no_data(ax, "samples")
        return
    x = time_x(_seconds(timeline), calendar_start)
    pending = np.asarray(timeline.pending, dtype=np.float64)
    _draw_steps(ax, x, pending, fill=True)
    ax.set_title(f"Queue length (peak {int(pending.max())} pending)")
    ax.set_ylim(bottom=0)
    time_limits(ax, x)


# -- binning over (calendar) time ---------------------------------------------------------


def bin_width(span: float) -> tuple[float, str]:
    """The bin of a run lasting ``span`` seconds: an hour up to two days, a day up to
    90 days, a week beyond."""
    if span <= 2 * _DAY:
        return _HOUR, "hour"
    if span <= 90 * _DAY:
        return _DAY, "day"
    return 7 * _DAY, "week"


def step_bins(
    times: FloatArray, values: FloatArray, calendar_start: float | None
) -> tuple[FloatArray, FloatArray, str]:
    """The mean of a step function (``values[i]`` holds from ``times[i]`` to the next
    time) per bin: ``(edges, means, unit)``, ``edges`` in simulated seconds, one more
    than the means (:func:`bin_edges` over the step function's own span)."""
    edges, unit = bin_edges(float(times[0]), float(times[-1]), calendar_start)
    return edges, bin_means(times, values, edges), unit


def bin_edges(first: float, last: float, calendar_start: float | None) -> tuple[FloatArray, str]:
    """The bins from ``first`` to ``last`` (simulated seconds) and their unit: whole
    hours, days or weeks (:func:`bin_width` of the span) of the calendar (UTC) when the
    trace's ``UnixStartTime`` is known, else of simulated time; the first bin starts at
    ``first``, the last is cut at ``last``. Runs binned over one span share edges."""
    width, unit = bin_width(last - first)
    offset = calendar_start or 0.0
    low = np.floor((first + offset) / width) * width - offset
    edges = np.append(np.arange(low, last, width), last)
    edges[0] = max(edges[0], first)
    return edges, unit


def bin_means(times: FloatArray, values: FloatArray, edges: FloatArray) -> FloatArray:
    """The mean per bin between ``edges`` of a step function that is 0 before
    ``times[0]`` and ``values[-1]`` after the last time."""
    times = np.concatenate([[min(float(times[0]), float(edges[0]))], times])
    values = np.concatenate([[0.0], values])
    area = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    k = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, times.size - 1)
    at_edges = area[k] + values[k] * (edges - times[k])
    spans = np.diff(edges)
    return np.divide(np.diff(at_edges), spans, out=np.zeros_like(spans), where=spans > 0)


def busy_steps(records: Sequence[JobRecord]) -> tuple[FloatArray, FloatArray]:
    """Busy slots of the workload's jobs as a step function ``(times, slots)``: each
    job holds its slots from its start to its end (ends first at one time)."""
    ran = [r for r in records if r.start is not None and r.end is not None]
    if not ran:
        return np.zeros(0), np.zeros(0)
    at = np.array([t for r in ran for t in (r.start, r.end)], dtype=np.float64)
    delta = np.array([d for r in ran for d in (r.slots, -r.slots)], dtype=np.float64)
    order = np.lexsort((delta, at))
    times, steps = at[order], np.cumsum(delta[order])
    last = np.append(times[1:] != times[:-1], True)  # the value after every event at a time
    return times[last], steps[last]


# -- per job -----------------------------------------------------------------------------


def _wait_cdf(ax: Axes, records: Sequence[JobRecord]) -> None:
    """The wait CDF of one run; its figures in the title, not over the curve."""
    ax.set_title("Wait-time distribution (jobs that started)")
    ax.set_xlabel("Wait (log scale; waits under 1 s drawn at 1 s)")
    ax.set_ylabel("Jobs that waited at most this long (%)")
    waits = np.sort(np.array([r.wait for r in records if r.wait is not None], dtype=np.float64))
    if waits.size == 0:
        no_data(ax, "job started")
        return
    shown = np.maximum(waits, WAIT_FLOOR)
    share = 100.0 * np.arange(1, waits.size + 1) / waits.size
    if waits.size > _MAX_POINTS:  # evenly spaced ranks, the last included
        keep = np.linspace(0, waits.size - 1, _MAX_POINTS).astype(np.int64)
        shown, share = shown[keep], share[keep]
    top = max(float(shown[-1]) * 2, 10.0)
    ax.step(np.append(shown, top), np.append(share, 100.0), where="post", color=COLOR)
    ax.set_xscale("log")
    ax.set_xlim(WAIT_FLOOR * 0.8, top)
    ax.set_ylim(0, 101)
    ticks = [(x, label) for x, label in _WAIT_TICKS if x <= top]
    ax.xaxis.set_major_locator(FixedLocator([x for x, _ in ticks]))
    ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    quick = 100.0 * float((waits < WAIT_FLOOR).mean())
    median = float(np.median(waits))
    ax.set_title(
        f"Wait-time distribution: {waits.size:,} jobs started, {quick:.0f} % within 1 s, "
        f"median wait {_duration(median)}"
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
        no_data(ax, "job finished")
        return
    means = [s / n if n else 0.0 for s, n in zip(sums, counts, strict=True)]
    bars = ax.bar(labels, means, color=COLOR, width=0.6)
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

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)
"""A colour per policy, in order; a figure overlays at most this many."""

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
        lambda ax: bsld_by_size(ax, runs, workload),
    )
    written = []
    for name, draw in zip(COMPARE_PLOTS, draws, strict=True):
        path = out_dir / f"{name}.{fmt}"
        _save(draw, path)
        written.append(path)
    return written


def _compare_waits(ax: Axes, runs: Sequence[Run], workload: str) -> None:
    curves = [(name, _waits(records)) for name, records in runs]
    names = ", ".join(name for name, _ in runs)
    wait_cdfs(ax, curves, f"Wait-time distribution: {workload}\npolicies {names}")


def _waits(records: Sequence[JobRecord]) -> FloatArray:
    return np.array([r.wait for r in records if r.wait is not None], np.float64)


def wait_cdfs(
    ax: Axes,
    curves: Sequence[tuple[str, FloatArray]],
    title: str,
    reference: tuple[str, FloatArray] | None = None,
) -> None:
    """Overlaid wait CDFs on a log axis, one line per ``(label, waits)``, and
    ``reference`` (the trace's logged waits) as a dashed black line first; a label gets
    its curve's median. The legend is outside the plot."""
    ax.set_title(title)
    ax.set_xlabel("Wait (log scale; waits under 1 s drawn at 1 s)")
    ax.set_ylabel("Jobs that waited at most this long (%)")
    top = 10.0
    drawn = False
    # each curve drawn wider than the next, so that curves which coincide all show
    styled = [
        (name, waits, "0.15", "--", 1.8) for name, waits in ([reference] if reference else [])
    ]
    styled += [
        (name, waits, PALETTE[k % len(PALETTE)], "-", 1.2 + 1.0 * (len(curves) - 1 - k))
        for k, (name, waits) in enumerate(curves)
    ]
    for name, unsorted, color, style, width in styled:
        waits = np.sort(unsorted)
        if waits.size == 0:
            continue
        shown = np.maximum(waits, WAIT_FLOOR)
        share = 100.0 * np.arange(1, waits.size + 1) / waits.size
        if waits.size > _MAX_POINTS:
            keep = np.linspace(0, waits.size - 1, _MAX_POINTS).astype(np.int64)
            shown, share = shown[keep], share[keep]
        top = max(top, float(shown[-1]) * 2)
        median = _duration(float(np.median(waits)))
        ax.step(
            shown,
            share,
            where="post",
            color=color,
            linestyle=style,
            linewidth=width,
            label=f"{name} (median {median})",
        )
        drawn = True
    if not drawn:
        no_data(ax, "job started")
        return
    ax.set_xscale("log")
    ax.set_xlim(WAIT_FLOOR * 0.8, top)
    ax.set_ylim(0, 101)
    ticks = [(x, label) for x, label in _WAIT_TICKS if x <= top]
    ax.xaxis.set_major_locator(FixedLocator([x for x, _ in ticks]))
    ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    legend_outside(ax)


def bsld_by_size(ax: Axes, runs: Sequence[Run], workload: str) -> None:
    """Median (bar) and p95 (tick) bounded slowdown per job size, a bar group per size."""
    names = ", ".join(name for name, _ in runs)
    ax.set_title(
        f"Bounded slowdown by job size (bar: median, tick: p95): {workload}\npolicies {names}"
    )
    ax.set_xlabel("Job size (tasks)")
    ax.set_ylabel(f"Bounded slowdown (τ = {BSLD_TAU:g} s, log scale)")
    labels = [label for label, _, _ in SIZE_BUCKETS]
    width = 0.8 / max(len(runs), 1)
    drawn = False
    top = 1.0
    for k, (name, records) in enumerate(runs):
        per: list[list[float]] = [[] for _ in SIZE_BUCKETS]
        for r in records:
            if r.start is not None and r.bsld is not None:
                per[size_bucket(r.slots or r.job.tasks or 1)].append(r.bsld)
        x = np.arange(len(SIZE_BUCKETS)) + (k - (len(runs) - 1) / 2) * width
        medians = [float(np.median(v)) if v else 0.0 for v in per]
        p95 = [float(np.percentile(v, 95)) if v else 0.0 for v in per]
        color = PALETTE[k % len(PALETTE)]
        ax.bar(x, medians, width=width, color=color, label=name)
        ax.scatter(x, p95, marker="_", s=120, color=color)
        drawn = drawn or any(per)
        top = max(top, *p95)
    if not drawn:
        no_data(ax, "job finished")
        return
    ax.set_xticks(np.arange(len(SIZE_BUCKETS)))
    ax.set_xticklabels(labels)
    ax.set_yscale("log")
    ax.set_ylim(0.8, top * 2)  # room above the highest p95 tick
    legend_outside(ax)
