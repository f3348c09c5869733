"""``xce report``: the results of replays as one self-contained HTML page.

:func:`load_results` reads a results directory — what ``xce simulate --out`` writes (a
*replay*), what ``xce compare --out`` writes (a *comparison*), a sweep's ``results.csv``,
or a directory whose subdirectories are replays — and :func:`build_report` turns it
into one HTML document: every plot embedded as a ``data:`` image, tables sortable by a
small inline script, and a Content-Security-Policy that forbids any network access, so
the page reads the same offline, years later.

Per-job sections (utilisation over time, simulated against logged wait, the Gantt chart)
need a replay's ``jobs.csv``; a comparison or a sweep holds only each policy's metrics,
and the page says so where a section cannot be drawn.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from matplotlib.axes import Axes

from xce.errors import InputError
from xce.inputs import read_input_text
from xce.sim import plots
from xce.sim.model import JobRecord, SimJob
from xce.sim.swf import MAX_TRACE_BYTES

__all__ = [
    "Results",
    "Run",
    "build_report",
    "gantt_window",
    "load_results",
]

Kind = Literal["replay", "replays", "compare", "sweep"]

_DAY = 86400.0
_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Run:
    """One policy's replay: its metrics object (``metrics.json``) and, when the
    directory has them, its per-job records (``jobs.csv``)."""

    policy: str
    metrics: dict[str, Any]
    records: tuple[JobRecord, ...] | None


@dataclass(frozen=True, slots=True)
class Results:
    """What a results directory holds, read and checked."""

    kind: Kind
    directory: Path
    workload: str
    runs: tuple[Run, ...]
    plot_files: tuple[Path, ...] = ()  # plots already there (a comparison's overlays)
    sweep: tuple[tuple[str, ...], ...] = ()  # results.csv: the header, then the rows
    calendar_start: float | None = None  # the trace's UnixStartTime
    logged: dict[str, float] | None = None  # the trace's logged wait of each job id
    trace_note: str = ""  # why there is no calendar time or logged wait


# -- reading ---------------------------------------------------------------------------


def load_results(
    directory: Path, *, trace: Path | None = None, policy: str | None = None
) -> Results:
    """Read ``directory`` (see the module docstring). ``trace``: the SWF trace replayed,
    for its ``UnixStartTime`` and logged waits (default: the one the results name, when
    it is there). ``policy``: the name of a replay's policy, which ``metrics.json`` does
    not record. A directory with none of the expected files, or a corrupt one, is an
    :class:`InputError` naming the file."""
    if not directory.is_dir():
        raise InputError(f"RESULTS {directory}: not a directory")
    kind, workload, runs, extra = _read_kind(directory, policy)
    named = Path(workload) if workload.endswith((".swf", ".swf.gz")) else None
    start, logged, note = _trace_facts(trace, named, directory)
    return Results(
        kind,
        directory,
        Path(workload).name,
        tuple(runs),
        tuple(extra.get("plots", ())),
        tuple(extra.get("sweep", ())),
        start,
        logged,
        note,
    )


def _read_kind(directory: Path, policy: str | None) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    if (directory / "results.csv").is_file():
        return _read_sweep(directory / "results.csv")
    if (directory / "compare.json").is_file():
        return _read_compare(directory)
    if (directory / "metrics.json").is_file():
        run, workload = _read_replay(directory, policy)
        return "replay", workload, [run], {}
    subs = sorted(d for d in directory.iterdir() if (d / "metrics.json").is_file())
    if subs:
        pairs = [_read_replay(d, d.name) for d in subs]
        return "replays", pairs[0][1], [run for run, _ in pairs], {}
    raise InputError(
        f"RESULTS {directory}: none of results.csv (xce sweep), compare.json (xce compare "
        "--out), metrics.json and jobs.csv (xce simulate --out), nor subdirectories of replays"
    )


def _read_json(path: Path) -> dict[str, Any]:
    text = read_input_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"not valid JSON: {err.msg}",
            source=str(path),
            line=err.lineno,
            column=err.colno,
            text=text.splitlines()[err.lineno - 1] if text.splitlines() else "",
        ) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", source=str(path))
    return data


def _read_csv(path: Path, *, whole_lines: bool = False) -> list[list[str]]:
    """The rows of a CSV file, each as long as its header; ``whole_lines``: a last line
    without its newline (a row still being appended) is left out."""
    text = read_input_text(path)
    if whole_lines:
        text = text[: text.rfind("\n") + 1]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or not rows[0]:
        raise InputError("an empty table: expected a header line", source=str(path), line=1)
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(rows[0]):
            raise InputError(
                f"{len(row)} fields where the header has {len(rows[0])}",
                source=str(path),
                line=number,
            )
    return rows


def _read_sweep(path: Path) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    """A sweep's results table (``xce sweep --out``): its rows as they are, and, when it
    has a ``metrics`` column (each cell's ``metrics.json`` object), a run per cell named
    by its ``cell`` column."""
    table = _read_csv(path, whole_lines=True)
    header = table[0]
    runs = []
    if "metrics" in header:
        at = header.index("metrics")
        workloads = (
            {row[header.index("workload")] for row in table[1:]} if "workload" in header else set()
        )
        for number, row in enumerate(table[1:], start=2):
            try:
                metrics = json.loads(row[at])
            except json.JSONDecodeError as err:
                raise InputError(
                    f"the metrics column is not valid JSON: {err.msg}",
                    source=str(path),
                    line=number,
                ) from None
            if not isinstance(metrics, dict):
                raise InputError(
                    "the metrics column is not a JSON object", source=str(path), line=number
                )
            named = dict(zip(header, row, strict=True))
            runs.append(
                Run(_cell_label(named, len(workloads) > 1) or f"row {number}", metrics, None)
            )
        table = [row[:at] + row[at + 1 :] for row in table]
    return "sweep", _sweep_workload(table), runs, {"sweep": [tuple(r) for r in table]}


def _cell_label(row: dict[str, str], workload: bool) -> str:
    """A sweep cell's name in titles: ``fcfs+easy on 3x4, seed 1, interval 60``, with the
    workload when the sweep has several (its ``cell`` id when nothing else is there)."""
    parts = [row.get("policy", "")]
    if row.get("cluster"):
        parts[0] += f" on {row['cluster']}"
    if workload and row.get("workload"):
        parts.append(Path(row["workload"]).name)
    if row.get("seed"):
        parts.append(f"seed {row['seed']}")
    if row.get("options") not in (None, "", "-"):
        parts.append(row["options"])
    if row.get("repetition") not in (None, "", "0"):
        parts.append(f"repetition {row['repetition']}")
    return ", ".join(p for p in parts if p) or row.get("cell", "")


def _sweep_workload(table: list[list[str]]) -> str:
    if "workload" not in table[0]:
        return "sweep"
    column = table[0].index("workload")
    names = sorted({Path(row[column]).name for row in table[1:]})
    return ", ".join(names) if names else "sweep"


def _read_compare(directory: Path) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    path = directory / "compare.json"
    data = _read_json(path)
    policies = data.get("policies")
    if not isinstance(data.get("workload"), str) or not isinstance(policies, list):
        raise InputError('expected "workload" (a string) and "policies" (a list)', source=str(path))
    runs = []
    for k, entry in enumerate(policies):
        if not (isinstance(entry, dict) and isinstance(entry.get("metrics"), dict)):
            raise InputError(
                "expected a policy with its metrics", source=str(path), path=f"policies[{k}]"
            )
        runs.append(Run(str(entry.get("policy", f"policy {k + 1}")), entry["metrics"], None))
    files = sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith("compare_") and p.suffix in (".png", ".svg")
    )
    return "compare", data["workload"], runs, {"plots": files}


def _read_replay(directory: Path, policy: str | None) -> tuple[Run, str]:
    """A replay's run; its policy as given, else as its metrics name it (a ``policy``
    key, which ``xce simulate`` does not write yet)."""
    metrics = _read_json(directory / "metrics.json")
    named = metrics.get("policy")
    policy = policy or (named if isinstance(named, str) else "not recorded (see --policy)")
    jobs = directory / "jobs.csv"
    if not jobs.is_file():
        raise InputError(
            f"{directory}: metrics.json without jobs.csv (xce simulate --out writes both)"
        )
    records = _records(jobs)
    trace = metrics.get("trace")
    source = trace.get("source") if isinstance(trace, dict) else None
    workload = source if isinstance(source, str) else _swf_workload(directory) or directory.name
    return Run(policy, metrics, records), workload


def _swf_workload(directory: Path) -> str | None:
    """The workload named in schedule.swf's header (``; Computer: the xce replay of W``)."""
    swf = directory / "schedule.swf"
    if not swf.is_file():
        return None
    with swf.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(";"):
                break
            if line.startswith("; Computer: the xce replay of "):
                return line.removeprefix("; Computer: the xce replay of ").strip()
    return None


_NEEDED = ("job", "submit", "start", "end", "runtime", "tasks", "queue", "user", "hosts")


def _records(path: Path) -> tuple[JobRecord, ...]:
    """The rows of a ``jobs.csv`` as records (enough of them for every figure)."""
    rows = _read_csv(path)
    header = rows[0]
    missing = [c for c in _NEEDED if c not in header]
    if missing:
        raise InputError(f"the header lacks {', '.join(missing)}", source=str(path), line=1)
    at = {c: header.index(c) for c in _NEEDED}
    out = []
    for number, row in enumerate(rows[1:], start=2):
        try:
            out.append(_record(row, at))
        except ValueError as err:
            raise InputError(f"not a number: {err}", source=str(path), line=number) from None
    return tuple(out)


def _record(row: list[str], at: dict[str, int]) -> JobRecord:
    def number(column: str) -> float | None:
        text = row[at[column]]
        if not text:
            return None
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{column} {text!r}")
        return value

    tasks = int(number("tasks") or 0)
    job = SimJob(
        row[at["job"]],
        number("submit") or 0.0,
        number("runtime") or 0.0,
        tasks or None,
        user=row[at["user"]],
        queue=row[at["queue"]],
    )
    return JobRecord(
        job, number("start"), number("end"), tuple(row[at["hosts"]].split()), slots=tasks
    )


def _trace_facts(
    given: Path | None, named: Path | None, directory: Path
) -> tuple[float | None, dict[str, float] | None, str]:
    """(UnixStartTime, logged waits by job id, a note when either is missing)."""
    path = given
    if path is None and named is not None:
        candidates = [named, directory / named.name]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            return (
                None,
                None,
                f"The trace {named} is not here: pass --trace for calendar time and logged waits.",
            )
    if path is None:
        return None, None, "Not an SWF trace: simulated time, no logged waits."
    start, logged = read_trace_facts(path)
    return start, logged or None, "" if logged else f"{path.name} logs no waits."


def read_trace_facts(path: Path) -> tuple[float | None, dict[str, float]]:
    """An SWF trace's ``UnixStartTime`` header and the logged wait (field 3) of each job
    whose wait is known, by job id as ``xce simulate`` names it."""
    text = read_input_text(path, max_bytes=MAX_TRACE_BYTES, what="trace")
    start: float | None = None
    logged: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(";"):
            key, _, value = line.lstrip(";").partition(":")
            if key.strip() == "UnixStartTime":
                start = _finite(value.split()[0] if value.split() else "")
            continue
        fields = line.split()
        wait = _finite(fields[2]) if len(fields) == 18 else None
        job = _finite(fields[0]) if len(fields) == 18 else None
        if wait is not None and wait >= 0 and job is not None:
            logged[str(int(job))] = wait
    return start, logged


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


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
    return low, low + hours * _HOUR


def _window_start(text: str, calendar_start: float | None) -> float:
    number = _finite(text)
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
    days = np.floor((starts + offset) / _DAY).astype(np.int64)
    values, counts = np.unique(days, return_counts=True)
    busiest = int(values[int(np.argmax(counts))])  # argmax: the first on a tie
    return busiest * _DAY - offset


# -- the page --------------------------------------------------------------------------------

Cell = tuple[str, str]
"""(what a table cell shows, the key it sorts by: a number's text or a string)."""


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
    return _document(results, sections)


@dataclass(frozen=True, slots=True)
class _Page:
    results: Results
    fmt: str

    def figure(self, draw: Callable[[Axes], None], subtitle: str, alt: str) -> str:
        data = plots.render(draw, subtitle, self.fmt)
        mime = "image/svg+xml" if self.fmt == "svg" else "image/png"
        return _img(data, mime, alt)

    def subtitle(self, policy: str) -> str:
        return f"{self.results.workload}, policy {policy}"

    def all_policies(self) -> str:
        names = ", ".join(r.policy for r in self.results.runs)
        return f"{self.results.workload}, policies {names}"

    def with_jobs(self) -> list[tuple[str, tuple[JobRecord, ...]]]:
        return [(r.policy, r.records) for r in self.results.runs if r.records is not None]


def _img(data: bytes, mime: str, alt: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return f'<figure><img src="data:{mime};base64,{encoded}" alt="{html.escape(alt)}"></figure>'


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


_NO_JOBS = (
    "This needs per-job records (jobs.csv), which {what} does not keep: run xce simulate "
    "--out DIR for each policy and xce report DIR (or a directory of such replays)."
)


def _no_jobs(results: Results) -> str:
    what = {"compare": "xce compare --out", "sweep": "a sweep's results.csv"}
    return _note(_NO_JOBS.format(what=what.get(results.kind, "this directory")))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], caption: str) -> str:
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-sort="{html.escape(key)}">{html.escape(shown)}</td>' for shown, key in row
        )
        + "</tr>"
        for row in rows
    )
    return (
        f'<div class="wide"><table class="sortable"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _text(value: str) -> Cell:
    return value, value


def _number(value: Any, kind: str = "") -> Cell:
    """A metric as a cell: durations (``*_s``) in a short unit, shares in %."""
    if value is None or value == "":
        return "–", ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value), str(value)
    if not math.isfinite(number):
        return str(value), ""
    if kind.endswith("_s"):
        shown = _duration(number)
    elif kind.startswith("utili"):
        shown = f"{100 * number:.1f} %"
    elif number.is_integer():
        shown = f"{int(number):,}"
    else:
        shown = f"{number:,.2f}"
    return shown, repr(number)


def _duration(seconds: float) -> str:
    for unit, size in (("d", _DAY), ("h", _HOUR), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"


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
            _text(run.policy),
            *(_number(run.metrics.get(k), k) for k, _ in COLUMNS),
            _number(run.metrics.get("jobs")),
            _number(run.metrics.get("unrunnable")),
        ]
        for run in results.runs
    ]
    return _table(headers, rows, f"{results.workload}: one row per policy")


def _heading(text: str) -> str:
    """A terminal table's two-line heading on one line (``utilis-\nation``: utilisation)."""
    return text.replace("-\n", "").replace("\n", " ")


def _sweep_table(table: Sequence[Sequence[str]]) -> str:
    header, *rows = table
    cells = [
        [
            _number(v, k) if not v or _finite(v) is not None else _text(v)
            for k, v in zip(header, row, strict=True)
        ]
        for row in rows
    ]
    return _table(header, cells, f"Sweep: one row per cell ({len(rows)} cells)")


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
        partial(plots.wait_by_group, groups=runs, what="run"), page.all_policies(), "wait by run"
    )


def _wait_array(records: Sequence[JobRecord]) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([r.wait for r in records if r.wait is not None], dtype=np.float64)


def _embedded(results: Results, stem: str) -> str:
    """The directory's own plots whose names contain ``stem`` (a comparison's)."""
    mimes = {".png": "image/png", ".svg": "image/svg+xml"}
    found = [p for p in results.plot_files if stem in p.stem]
    return "".join(_img(p.read_bytes(), mimes[p.suffix], p.name) for p in found)


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
                [_text(name), (label, str(low)), _number(len(values)), *(_number(s) for s in stats)]
            )
    headers = ["policy", "job size (tasks)", "jobs", "median", "p95", "mean"]
    return figure + _table(headers, rows, "Bounded slowdown per job size (τ = 10 s)")


def _utilisation(page: _Page) -> str:
    results = page.results
    runs = page.with_jobs()
    if not runs:
        return _no_jobs(results)
    slots = [int(r.metrics.get("total_slots") or 0) for r in results.runs if r.records is not None]
    when = "calendar time (UTC)" if results.calendar_start is not None else "simulated time"
    parts = [_note(f"Binned over {when}. {results.trace_note}".strip())]
    for (name, records), total in zip(runs, slots, strict=True):
        parts.append(
            page.figure(
                partial(
                    plots.binned_utilisation,
                    records=records,
                    total_slots=total,
                    calendar_start=results.calendar_start,
                ),
                page.subtitle(name),
                f"utilisation, {name}",
            )
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
                        partial(plots.wait_by_group, groups=groups, what=what),
                        page.subtitle(run.policy),
                        f"wait by {what}, {run.policy}",
                    )
                )
            for name, g in groups.items():
                cells = [_number(g.get(k), k) for k in _GROUP_COLUMNS]
                rows.append([_text(run.policy), _text(str(name)), *cells])
        if rows:
            headers = ["policy", what, "jobs", "mean wait", "median wait", "p95 wait", "mean bsld"]
            parts.append(_table(headers, rows, f"Wait by {what}"))
    if len(page.results.runs) > MAX_FIGURED:
        parts.insert(
            0, _note(f"{len(page.results.runs)} runs: tables only (figures up to {MAX_FIGURED}).")
        )
    return "".join(parts) or _note("The metrics hold no per-queue or per-user figures.")


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
        return _note(f"No logged waits. {results.trace_note}".strip())
    parts, rows = [], []
    for name, records in runs:
        pairs = [
            (r.wait, logged[r.job.id]) for r in records if r.wait is not None and r.job.id in logged
        ]
        simulated = np.array([s for s, _ in pairs], dtype=np.float64)
        kept = np.array([w for _, w in pairs], dtype=np.float64)
        parts.append(
            page.figure(
                partial(plots.logged_against_simulated, simulated=simulated, logged=kept),
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
                    _text(name),
                    _text(label),
                    _number(values.size),
                    *(_number(v, "_s") for v in stats),
                ]
            )
    headers = ["policy", "wait", "jobs", "mean", "median", "p95"]
    return "".join(parts) + _table(headers, rows, "The same jobs' waits, as logged and as replayed")


def _gantt(page: _Page, window: tuple[float, float] | None) -> str:
    results = page.results
    if window is None:
        return _no_jobs(results)
    low, high = window
    start = results.calendar_start
    parts = [_note(f"The window: {_when(low, start)} to {_when(high, start)}.")]
    for name, records in page.with_jobs():
        parts.append(
            page.figure(
                partial(
                    plots.gantt,
                    records=records,
                    window=window,
                    calendar_start=results.calendar_start,
                ),
                page.subtitle(name),
                f"Gantt chart, {name}",
            )
        )
    return "".join(parts)


def _when(seconds: float, calendar_start: float | None) -> str:
    if calendar_start is None:
        return f"{seconds:,.0f} s of simulated time"
    moment = datetime.fromtimestamp(calendar_start + seconds, UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


# -- the document ------------------------------------------------------------------------------

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td:first-child, td:nth-child(2) { text-align: left; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; }
.wide { overflow-x: auto; }
.note { color: #555; font-style: italic; }
"""

_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.sort, y = b.cells[index].dataset.sort;
      if (x === "" || y === "") { return (x === "") - (y === ""); }
      var nx = Number(x), ny = Number(y);
      var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def _document(results: Results, sections: Sequence[tuple[str, str, str]]) -> str:
    title = f"xce report: {results.workload}"
    what = {
        "replay": "a replay (xce simulate --out)",
        "replays": "replays, one per subdirectory",
        "compare": "a comparison (xce compare --out)",
        "sweep": "a sweep (results.csv)",
    }[results.kind]
    nav = " · ".join(f'<a href="#{key}">{html.escape(name)}</a>' for key, name, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{html.escape(name)}</h2>{content}</section>'
        for key, name, content in sections
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(f'{what}: {results.directory}')}; {len(results.runs)} "
        f"policies. Click a column heading to sort a table.</p><nav>{nav}</nav>{body}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
