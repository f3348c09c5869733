"""The page of ``xce report`` (:func:`build_report`): its sections, each drawn from the
runs read by :mod:`xce.sim.report.read`.

Per-job sections (utilisation over time, simulated against logged wait, the Gantt chart)
need each run's jobs (a replay's ``jobs.csv``, a comparison's ``compare_jobs.csv``); a
sweep holds only each cell's metrics, and the page says so where a section cannot be
drawn.
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
from xce.sim.report.read import Results, finite

__all__ = ["build_report", "gantt_window"]


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
    return low, low + hours * HOUR


def _window_start(text: str, calendar_start: float | None) -> float:
    number = finite(text)
    if number is not None:
        return number
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


def build_report(
    results: Results,
    *,
    gantt_from: str | None = None,
    gantt_hours: float = 24.0,
    fmt: str = "png",
) -> str:
    """The HTML page of ``results``; plots as PNG (default) or SVG ``fmt``."""
    with_jobs = [r for r in results.runs if r.records is not None]
    window = None
    if with_jobs:
        first = with_jobs[0].records or ()
        window = gantt_window(first, gantt_from, gantt_hours, results.calendar_start)
    page = _Page(results, fmt)
    sections = (
        ("summary", "Summary", _summary(page)),
        ("waits", "Wait-time distributions", _waits(page)),
        ("slowdown", "Bounded slowdown by job size", _slowdown(page)),
        ("utilisation", "Utilisation over time", _utilisation(page)),
        ("groups", "Wait by queue and by user", _groups(page)),
        ("logged", "Simulated against logged wait", _logged(page)),
        ("gantt", "Gantt chart", _gantt(page, window)),
    )
    return document(results, sections)


@dataclass(frozen=True, slots=True)
class _Page:
    results: Results
    fmt: str

    def figure(self, draw: Callable[[Axes], None], subtitle: str, alt: str) -> str:
        data = plots.render(draw, subtitle, self.fmt)
        mime = "image/svg+xml" if self.fmt == "svg" else "image/png"
        return img(data, mime, alt)

    def subtitle(self, policy: str) -> str:
        return f"{self.results.workload}, policy {policy}"

    def all_policies(self) -> str:
        names = ", ".join(r.policy for r in self.results.runs)
        return f"{self.results.workload}, policies {names}"

    def per_run(
        self,
        draw: Callable[[str, tuple[JobRecord, ...]], Callable[[Axes], None]],
        what: str,
    ) -> list[str]:
        """A figure per run with jobs: ``draw(policy, records)`` draws it; its alt text
        is ``what, policy``."""
        return [
            self.figure(draw(name, records), self.subtitle(name), f"{what}, {name}")
            for name, records in self.with_jobs()
        ]

    def with_jobs(self) -> list[tuple[str, tuple[JobRecord, ...]]]:
        return [(r.policy, r.records) for r in self.results.runs if r.records is not None]


_NO_JOBS = (
    "This needs per-job records (jobs.csv), which {what} does not keep: run xce simulate "
    "--out DIR for each policy and xce report DIR (or a directory of such replays)."
)


def _no_jobs(results: Results) -> str:
    what = {
        "compare": "xce compare --out of an earlier xce (now it writes compare_jobs.csv)",
        "sweep": "a sweep's results.csv",
    }
    return note(_NO_JOBS.format(what=what.get(results.kind, "this directory")))


# -- the sections ------------------------------------------------------------------------------


def _summary(page: _Page) -> str:
    """The metrics, a row per policy (a sweep: its results table as it is)."""
    results = page.results
    if results.kind == "sweep":
        return _sweep_table(results.sweep)
    from xce.sim.compare import COLUMNS

    headers = ["policy", *(_heading(h) for _, h in COLUMNS), "jobs", "unrunnable"]
    rows: list[list[Cell]] = [
        [
            text_cell(run.policy),
            *(number_cell(run.metrics.get(k), k) for k, _ in COLUMNS),
            number_cell(run.metrics.get("jobs")),
            number_cell(run.metrics.get("unrunnable")),
        ]
        for run in results.runs
    ]
    return html_table(headers, rows, f"{results.workload}: one row per policy")


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
        curves = [(name, _wait_array(records)) for name, records in runs]
        return page.figure(
            lambda ax: plots.wait_cdfs(ax, curves, "Wait-time distribution (jobs that started)"),
            page.all_policies(),
            "wait CDFs",
        )
    return _embedded(page.results, "wait_cdf") or _per_run_waits(page) + _no_jobs(page.results)


def _per_run_waits(page: _Page) -> str:
    """Without per-job records (a sweep): each run's median and p95 wait from its metrics."""
    runs = {r.policy: r.metrics for r in page.results.runs}
    if not runs:
        return ""
    return page.figure(
        partial(figures.wait_by_group, groups=runs, what="run"), page.all_policies(), "wait by run"
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
    figure = page.figure(
        lambda ax: plots.bsld_by_size(ax, runs, page.results.workload),
        "",
        "bounded slowdown by job size",
    )
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
    results = page.results
    runs = page.with_jobs()
    if not runs:
        return _no_jobs(results)
    slots = {r.policy: int(r.metrics.get("total_slots") or 0) for r in results.runs}
    when = "calendar time (UTC)" if results.calendar_start is not None else "simulated time"
    parts = [note(f"Binned over {when}. {results.trace_note}".strip())]
    parts += page.per_run(
        lambda name, records: partial(
            figures.binned_utilisation,
            records=records,
            total_slots=slots[name],
            calendar_start=results.calendar_start,
        ),
        "utilisation",
    )
    return "".join(parts)


def _groups(page: _Page) -> str:
    parts = []
    for what, key in (("queue", "by_queue"), ("user", "by_user")):
        rows = []
        for run in page.results.runs:
            groups = run.metrics.get(key)
            if not isinstance(groups, dict):
                continue
            if len(page.results.runs) <= MAX_FIGURED:
                parts.append(
                    page.figure(
                        partial(figures.wait_by_group, groups=groups, what=what),
                        page.subtitle(run.policy),
                        f"wait by {what}, {run.policy}",
                    )
                )
            for name, g in groups.items():
                cells = [number_cell(g.get(k), k) for k in _GROUP_COLUMNS]
                rows.append([text_cell(run.policy), text_cell(str(name)), *cells])
        if rows:
            headers = ["policy", what, "jobs", "mean wait", "median wait", "p95 wait", "mean bsld"]
            parts.append(html_table(headers, rows, f"Wait by {what}"))
    if len(page.results.runs) > MAX_FIGURED:
        parts.insert(
            0, note(f"{len(page.results.runs)} runs: tables only (figures up to {MAX_FIGURED}).")
        )
    return "".join(parts) or note("The metrics hold no per-queue or per-user figures.")


MAX_FIGURED = 8
"""Wait by queue and by user is drawn for at most this many runs (a sweep's cells may be
many more); beyond, the tables alone."""

_GROUP_COLUMNS = ("jobs", "mean_wait_s", "median_wait_s", "p95_wait_s", "mean_bsld")


def _logged(page: _Page) -> str:
    results = page.results
    logged = results.logged
    runs = page.with_jobs()
    if not runs:
        return _no_jobs(results)
    if not logged:
        return note(f"No logged waits. {results.trace_note}".strip())
    parts, rows = [], []
    for name, records in runs:
        pairs = [
            (r.wait, logged[r.job.id]) for r in records if r.wait is not None and r.job.id in logged
        ]
        simulated = np.array([s for s, _ in pairs], dtype=np.float64)
        kept = np.array([w for _, w in pairs], dtype=np.float64)
        parts.append(
            page.figure(
                partial(figures.logged_against_simulated, simulated=simulated, logged=kept),
                page.subtitle(name),
                f"simulated against logged wait, {name}",
            )
        )
        for label, values in (("logged", kept), ("simulated", simulated)):
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
    return "".join(parts) + html_table(
        headers, rows, "The same jobs' waits, as logged and as replayed"
    )


def _gantt(page: _Page, window: tuple[float, float] | None) -> str:
    results = page.results
    if window is None:
        return _no_jobs(results)
    low, high = window
    start = results.calendar_start
    parts = [note(f"The window: {_when(low, start)} to {_when(high, start)}.")]
    parts += page.per_run(
        lambda _, records: partial(
            figures.gantt, records=records, window=window, calendar_start=start
        ),
        "Gantt chart",
    )
    return "".join(parts)


def _when(seconds: float, calendar_start: float | None) -> str:
    if calendar_start is None:
        return f"{seconds:,.0f} s of simulated time"
    moment = datetime.fromtimestamp(calendar_start + seconds, UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")
