"""The page of ``xce report`` (:func:`build_report`): its sections, each drawn from the
runs read by :mod:`xce.sim.report.read`.

Per-job sections (wait distributions, slowdown, utilisation over time, simulated against
logged wait, the Gantt chart) need each run's jobs (a replay's ``jobs.csv``, a
comparison's ``compare_jobs.csv``, a sweep's kept ``cells/CELL/jobs.csv``); without them
the page says so where a section cannot be drawn. Each quantity is one figure: the runs
overlaid, or side by side as panels of one image.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from xce.errors import InputError
from xce.sim import plots
from xce.sim.model import JobRecord
from xce.sim.report import figures
from xce.sim.report.html import (
    DAY,
    HOUR,
    Cell,
    document,
    html_table,
    img,
    note,
    number_cell,
    text_cell,
)
from xce.sim.report.read import CELLS, Results, Run, finite

__all__ = ["MAX_OVERLAID", "Progress", "build_report", "gantt_window"]


# -- the Gantt window ----------------------------------------------------------------------


def gantt_window(
    records: Sequence[JobRecord], start: str | None, hours: float, calendar_start: float | None
) -> tuple[float, float]:
    """The window ``(from, to)`` in simulated seconds: from ``start`` (seconds of
    simulated time, or an ISO date and time in UTC when the trace's ``UnixStartTime``
    is known) for ``hours``; by default the (calendar) day on which most jobs started,
    the first such day on a tie."""
    if not (math.isfinite(hours) and hours > 0):
        raise InputError(f"--gantt-hours {hours}: expected a positive number of hours")
    if start is not None:
        low = _window_start(start, calendar_start)
    else:
        low = _busiest_day(records, calendar_start)
    high = low + hours * HOUR
    if start is not None and calendar_start is not None:  # drawn on calendar dates
        try:
            for t in (low, high):
                datetime.fromtimestamp(calendar_start + t, UTC)
        except (ValueError, OverflowError, OSError):
            raise InputError(
                f"--gantt-from {start}, --gantt-hours {hours:g}: the window must lie "
                "between the years 1 and 9999 of the trace's calendar"
            ) from None
    return low, high


def _window_start(text: str, calendar_start: float | None) -> float:
    from xce.cluster.schema import MAX_NUMBER

    number = finite(text)
    if number is not None:
        if abs(number) > MAX_NUMBER:
            raise InputError(
                f"--gantt-from {text}: expected seconds within ±{MAX_NUMBER:g} "
                "(a state's largest time)"
            )
        return number
    try:
        float(text)
    except ValueError:
        pass
    else:  # a number, but inf or nan
        raise InputError(f"--gantt-from {text}: expected a finite number of seconds or a date")
    if calendar_start is None:
        raise InputError(
            f"--gantt-from {text}: a date needs the trace's UnixStartTime; give seconds of "
            "simulated time"
        )
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"--gantt-from {text}: expected seconds or an ISO date (2024-03-01T08:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - calendar_start


def _busiest_day(records: Sequence[JobRecord], calendar_start: float | None) -> float:
    starts = np.array([r.start for r in records if r.start is not None], dtype=np.float64)
    if starts.size == 0:
        return 0.0
    offset = calendar_start or 0.0
    days = np.floor((starts + offset) / DAY).astype(np.int64)
    values, counts = np.unique(days, return_counts=True)
    busiest = int(values[int(np.argmax(counts))])  # argmax: the first on a tie
    return busiest * DAY - offset


Progress = Callable[[int, int, str], None]
"""Called before each section is drawn: (sections done, sections in all, its name)."""


def build_report(
    results: Results,
    *,
    gantt_from: str | None = None,
    gantt_hours: float = 24.0,
    fmt: str = "png",
    progress: Progress | None = None,
) -> str:
    """The HTML page of ``results``; plots as PNG (default) or SVG ``fmt``. A report of
    a long trace takes a while (drawing every figure): ``progress`` hears of each
    section as it starts."""
    with_jobs = [r for r in results.runs if r.records is not None]
    window = None
    if with_jobs:
        first = with_jobs[0].records or ()
        window = gantt_window(first, gantt_from, gantt_hours, results.calendar_start)
    page = _Page(results, fmt)
    queues, users = _groups_of(results, "by_queue"), _groups_of(results, "by_user")
    planned: list[tuple[str, str, Callable[[], str]]] = [
        ("summary", "Summary", lambda: _summary(page, queues, users)),
        ("waits", "Wait-time distributions", lambda: _waits(page)),
        ("slowdown", "Bounded slowdown by job size", lambda: _slowdown(page)),
        ("utilisation", "Utilisation over time", lambda: _utilisation(page)),
    ]
    if len(queues) > 1:  # one queue's waits are the summary's
        planned.append(("queues", "Wait by queue", lambda: _groups(page, "queue", "by_queue")))
    if len(users) > 1:
        planned.append(("users", "Wait by user", lambda: _groups(page, "user", "by_user")))
    planned += [
        ("logged", "Simulated against logged wait", lambda: _logged(page)),
        ("gantt", "Gantt chart", lambda: _gantt(page, window)),
    ]
    sections = []
    for done, (key, name, draw) in enumerate(planned):
        if progress is not None:
            progress(done, len(planned), name)
        sections.append((key, name, draw()))
    if progress is not None:
        progress(len(planned), len(planned), "")
    return document(results, sections)


def _groups_of(results: Results, key: str) -> set[str]:
    """Every queue (``by_queue``) or user (``by_user``) of any run's metrics."""
    return {
        str(name)
        for run in results.runs
        if isinstance(run.metrics.get(key), dict)
        for name in run.metrics[key]
    }


MAX_OVERLAID = 8
"""A figure overlays (or sets side by side) at most this many runs, the first ones (a
sweep's cells may be many more); the tables hold them all."""


@dataclass(frozen=True, slots=True)
class _Page:
    results: Results
    fmt: str

    def figure(self, draw: Callable[[Axes], None], subtitle: str, alt: str) -> str:
        data = plots.render(draw, subtitle, self.fmt)
        return img(data, self.mime, alt)

    def panels(
        self,
        draws: Sequence[Callable[[Axes], None]],
        title: str,
        alt: str,
        height: float = plots.PANEL_HEIGHT,
    ) -> str:
        """One figure of a panel per run (:func:`xce.sim.plots.render_panels`)."""
        data = plots.render_panels(
            draws, self.all_policies(), self.fmt, title=title, panel_height=height
        )
        return img(data, self.mime, alt)

    @property
    def mime(self) -> str:
        return "image/svg+xml" if self.fmt == "svg" else "image/png"

    def all_policies(self) -> str:
        names = ", ".join(name for name, _ in self.drawn(self.results.runs))
        return f"{self.results.workload}, policies {names}"

    def with_jobs(self) -> list[tuple[str, tuple[JobRecord, ...]]]:
        return [(r.policy, r.records) for r in self.results.runs if r.records is not None]

    def drawn(self, runs: Sequence[Any]) -> list[tuple[str, Any]]:
        """The runs a figure draws: the first :data:`MAX_OVERLAID` of ``runs`` (a
        ``Run`` or a ``(policy, records)`` pair each), as ``(policy, the rest)``."""
        pairs = [(r.policy, r) if isinstance(r, Run) else r for r in runs]
        return pairs[:MAX_OVERLAID]

    def cut(self, runs: Sequence[Any]) -> str:
        """A note when a figure draws fewer runs than there are."""
        if len(runs) <= MAX_OVERLAID:
            return ""
        return note(
            f"The figure draws the first {MAX_OVERLAID} of {len(runs)} runs; the table has all."
        )


_NO_JOBS = (
    "This needs per-job records (jobs.csv), which {what} does not keep: run xce simulate "
    "--out DIR for each policy and xce report DIR (or a directory of such replays)."
)


def _no_jobs(results: Results) -> str:
    what = {
        "compare": "xce compare --out of an earlier xce (now it writes compare_jobs.csv)",
        "sweep": "a sweep's results.csv without its cells' jobs (xce sweep --keep-jobs keeps "
        f"them, in {CELLS}/CELL/jobs.csv)",
    }
    return note(_NO_JOBS.format(what=what.get(results.kind, "this directory")))


def _some_without_jobs(results: Results) -> str:
    """A note naming the runs without per-job records, when others have them."""
    without = [r.policy for r in results.runs if r.records is None]
    if not without or len(without) == len(results.runs):
        return ""
    return note(f"Without per-job records (not drawn): {', '.join(without)}.")


# -- the sections ------------------------------------------------------------------------------


def _summary(page: _Page, queues: set[str], users: set[str]) -> str:
    """The metrics, a row per policy (a sweep: its results table as it is); a note
    when there is one queue or user, whose section is then left out."""
    results = page.results
    notes = "".join(
        note(f"All jobs are in one {what}, {next(iter(names))}: no section of wait by {what}.")
        for what, names in (("queue", queues), ("user", users))
        if len(names) == 1
    )
    if results.kind == "sweep":
        return _sweep_table(results.sweep) + notes
    from xce.sim.compare import COLUMNS, FAIRNESS_COLUMNS, user_fairness

    # fairness between users (xce compare's columns), when there are users to compare
    fair = FAIRNESS_COLUMNS if len(users) > 1 else ()
    headers = ["policy", *(_heading(h) for _, h in (*COLUMNS, *fair)), "jobs", "unrunnable"]
    rows: list[list[Cell]] = [
        [
            text_cell(run.policy),
            *(number_cell(run.metrics.get(k), k) for k, _ in COLUMNS),
            *(number_cell(user_fairness(run.metrics).json()[k], k) for k, _ in fair),
            number_cell(run.metrics.get("jobs")),
            number_cell(run.metrics.get("unrunnable")),
        ]
        for run in results.runs
    ]
    table = html_table(headers, rows, f"{results.workload}: one row per policy")
    if fair:
        notes += note(
            "User fairness: Jain's index over the users' mean bounded slowdowns (1: every "
            "user slowed alike; 1/users: one bears it all); worst user bsld: the highest "
            "of those means."
        )
    return table + notes


def _heading(text: str) -> str:
    """A terminal table's two-line heading on one line (``utilis-\nation``: utilisation)."""
    return text.replace("-\n", "").replace("\n", " ")


def _sweep_table(table: Sequence[Sequence[str]]) -> str:
    header, *rows = table
    cells = [
        [
            number_cell(v, k) if not v or finite(v) is not None else text_cell(v)
            for k, v in zip(header, row, strict=True)
        ]
        for row in rows
    ]
    return html_table(header, cells, f"Sweep: one row per cell ({len(rows)} cells)")


def _waits(page: _Page) -> str:
    runs = page.with_jobs()
    if runs:
        curves = [(name, _wait_array(records)) for name, records in page.drawn(runs)]
        figure = page.figure(
            lambda ax: plots.wait_cdfs(ax, curves, "Wait-time distribution (jobs that started)"),
            page.all_policies(),
            "wait CDFs",
        )
        return figure + page.cut(runs) + _some_without_jobs(page.results)
    return _embedded(page.results, "wait_cdf") or _per_run_waits(page) + _no_jobs(page.results)


def _per_run_waits(page: _Page) -> str:
    """Without per-job records (a sweep): each run's median and p95 wait from its metrics."""
    runs = {r.policy: r.metrics for r in page.results.runs}
    if not runs:
        return ""
    return page.figure(
        partial(figures.wait_by_group, runs=[("", runs)], what="run"),
        f"{page.results.workload}, every run",
        "wait by run",
    )


def _wait_array(records: Sequence[JobRecord]) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([r.wait for r in records if r.wait is not None], dtype=np.float64)


def _embedded(results: Results, stem: str) -> str:
    """The directory's own plots whose names contain ``stem`` (a comparison's)."""
    mimes = {".png": "image/png", ".svg": "image/svg+xml"}
    found = [p for p in results.plot_files if stem in p.stem]
    return "".join(img(p.read_bytes(), mimes[p.suffix], p.name) for p in found)


def _slowdown(page: _Page) -> str:
    runs = page.with_jobs()
    if not runs:
        return _embedded(page.results, "bsld") or _no_jobs(page.results)
    drawn = page.drawn(runs)
    figure = page.figure(
        lambda ax: plots.bsld_by_size(ax, drawn, page.results.workload),
        "",
        "bounded slowdown by job size",
    ) + page.cut(runs)
    rows = []
    for name, records in runs:
        per: list[list[float]] = [[] for _ in plots.SIZE_BUCKETS]
        for r in records:
            if r.bsld is not None:
                per[plots.size_bucket(r.slots or 1)].append(r.bsld)
        for (label, low, _), values in zip(plots.SIZE_BUCKETS, per, strict=True):
            stats = (
                [np.median(values), np.percentile(values, 95), np.mean(values)]
                if values
                else [None] * 3
            )
            rows.append(
                [
                    text_cell(name),
                    (label, str(low)),
                    number_cell(len(values)),
                    *(number_cell(s) for s in stats),
                ]
            )
    headers = ["policy", "job size (tasks)", "jobs", "median", "p95", "mean"]
    return figure + html_table(headers, rows, "Bounded slowdown per job size (τ = 10 s)")


def _utilisation(page: _Page) -> str:
    """The runs' utilisation over the same calendar bins, in one figure."""
    results = page.results
    runs = page.with_jobs()
    if not runs:
        return _no_jobs(results)
    slots = {r.policy: int(r.metrics.get("total_slots") or 0) for r in results.runs}
    when = "calendar time (UTC)" if results.calendar_start is not None else "simulated time"
    drawn = page.drawn(runs)
    span = figures.busy_span([records for _, records in drawn])
    draws = [
        partial(
            figures.binned_utilisation,
            records=records,
            total_slots=slots[name],
            calendar_start=results.calendar_start,
            span=span,
            policy=name if len(drawn) > 1 else "",
        )
        for name, records in drawn
    ]
    figure = page.panels(draws, "Utilisation over time", "utilisation", height=2.4)
    return note(f"Binned over {when}. {results.trace_note}".strip()) + figure + page.cut(runs)


def _groups(page: _Page, what: str, key: str) -> str:
    """Wait by queue or by user: one figure of every run's groups side by side, and a
    table of them all."""
    runs = [r for r in page.results.runs if isinstance(r.metrics.get(key), dict)]
    rows = []
    for run in runs:
        for name, g in run.metrics[key].items():
            cells = [number_cell(g.get(k), k) for k in _GROUP_COLUMNS]
            rows.append([text_cell(run.policy), text_cell(str(name)), *cells])
    drawn = [(name, run.metrics[key]) for name, run in page.drawn(runs)]
    figure = page.figure(
        partial(figures.wait_by_group, runs=drawn, what=what),
        page.all_policies(),
        f"wait by {what}",
    )
    headers = ["policy", what, "jobs", "mean wait", "median wait", "p95 wait", "mean bsld"]
    return figure + page.cut(runs) + html_table(headers, rows, f"Wait by {what}")


_GROUP_COLUMNS = ("jobs", "mean_wait_s", "median_wait_s", "p95_wait_s", "mean_bsld")


def _logged(page: _Page) -> str:
    """The replays' waits against the trace's logged waits: one figure of the jobs every
    drawn run started (so the curves compare the same jobs), and a table per run of the
    jobs it started."""
    results = page.results
    logged = results.logged
    runs = page.with_jobs()
    if not runs:
        return _no_jobs(results)
    if not logged:
        return note(f"No logged waits. {results.trace_note}".strip())
    waits = [
        (name, {r.job.id: r.wait for r in records if r.wait is not None and r.job.id in logged})
        for name, records in runs
    ]
    drawn = page.drawn(waits)
    common = sorted(set.intersection(*(set(w) for _, w in drawn)))
    figure = page.figure(
        partial(
            figures.logged_against_simulated,
            logged=np.array([logged[j] for j in common], dtype=np.float64),
            simulated=[(name, np.array([w[j] for j in common])) for name, w in drawn],
        ),
        page.all_policies(),
        "simulated against logged wait",
    )
    rows = []
    for name, w in waits:
        for label, values in (
            ("logged", np.array([logged[j] for j in w], dtype=np.float64)),
            ("simulated", np.array(list(w.values()), dtype=np.float64)),
        ):
            stats = (
                [values.mean(), np.median(values), np.percentile(values, 95)]
                if values.size
                else [None] * 3
            )
            rows.append(
                [
                    text_cell(name),
                    text_cell(label),
                    number_cell(values.size),
                    *(number_cell(v, "_s") for v in stats),
                ]
            )
    headers = ["policy", "wait", "jobs", "mean", "median", "p95"]
    return (
        figure
        + page.cut(runs)
        + html_table(headers, rows, "Each policy's started jobs' waits, as logged and as replayed")
    )


def _gantt(page: _Page, window: tuple[float, float] | None) -> str:
    """The window's jobs on hosts, a panel per run over the same time axis."""
    results = page.results
    if window is None:
        return _no_jobs(results)
    low, high = window
    start = results.calendar_start
    runs = page.with_jobs()
    draws = [
        partial(figures.gantt, records=records, window=window, calendar_start=start, policy=name)
        for name, records in page.drawn(runs)
    ]
    shown = note(f"The window: {_when(low, start)} to {_when(high, start)}.")
    return shown + page.panels(draws, "Jobs on hosts", "Gantt chart") + page.cut(runs)


def _when(seconds: float, calendar_start: float | None) -> str:
    if calendar_start is None:
        return f"{seconds:,.0f} s of simulated time"
    moment = datetime.fromtimestamp(calendar_start + seconds, UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")
